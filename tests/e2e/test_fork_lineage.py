"""A fork holds to its parent's stops and halts, and an unread file is not
edited, in the real Claude Code CLI (each test is headless ``claude -p`` runs in
a project wired with leash, against the loopback stand-in, on its own
LEASH_HOME).

``claude -p --resume P --fork-session`` gives the fork a new id, rewrites
``sessionId`` on every line it copies from P, and writes those copies only
after the fork's first tool call; Claude Code 2.1.197 even sends the fork's
SessionStart under P's id. What names P from the fork's first hook is Claude
Code's command line (``core.lineage``)."""
from __future__ import annotations

import json
import uuid

import pytest

from ..support.e2e.harness import LEASH, ClaudeUnavailable, ensure_claude, fallback_settings, settings_file
from ..support.e2e.standin import bash, text, tool_use

try:  # once, at collection: without Claude Code the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)

SECRET = "AKIAZ7Q3R5T2W8Y4U6PL"  # the shape of an AWS access key id, not a real one
FORK_ARGS = ("--fork-session",)


def parent_turn(agent, script: list[list[dict]] | None = None) -> str:
    """One turn of a new session P; its id."""
    parent = str(uuid.uuid4())
    run = agent.run("say hello", script or [[text("Hello."), bash("echo one")], [text("hi")]],
                    args=("--session-id", parent))
    assert run.code == 0, run
    return parent


def fork(agent, parent: str, **options):
    """``claude -p --resume P --fork-session "run the probe"``: its turn calls ``touch marker``."""
    return agent.run("run the probe", [[text("Probing."), bash("touch marker")], [text("done")]],
                     args=("--resume", parent, *FORK_ARGS), **options)


def fork_id(agent, parent: str) -> str:
    (found,) = [sid for sid, record in agent.sessions().items() if record.get("parent") == parent]
    return found


def test_a_stop_on_the_parent_holds_the_fork_from_its_first_hook(agent):
    parent = parent_turn(agent)
    agent.leash("stop", parent, "--reason", "review the parent first")

    run = fork(agent, parent)

    assert not agent.marker.exists()
    assert agent.standin.model_requests == []  # its prompt was blocked: the model never saw it
    assert "review the parent first" in run.json()["result"]
    assert run.json()["session_id"] == fork_id(agent, parent) != parent


def test_with_only_the_tool_hooks_wired_the_forks_first_call_is_held(agent):
    """PreToolUse is the first hook leash hears from the fork."""
    settings_file(agent.project).write_text(json.dumps(fallback_settings(LEASH), indent=2) + "\n")
    parent = parent_turn(agent)
    agent.leash("stop", parent, "--reason", "review the parent first")

    fork(agent, parent)

    assert not agent.marker.exists()
    result = agent.tool_results()[-1]  # the ones before are the parent's, copied into the fork
    assert "review the parent first" in result and parent in result
    assert agent.sessions()[agent.last.json()["session_id"]]["parent"] == parent


def test_a_stop_filed_while_the_fork_thinks_denies_its_call(agent):
    parent = parent_turn(agent)

    fork(agent, parent, before={0: lambda: agent.leash("stop", parent, "--reason", "review the parent first")})

    assert not agent.marker.exists()
    assert "review the parent first" in agent.tool_results()[-1]


def test_a_halt_on_the_parent_holds_the_fork(agent):
    parent = parent_turn(agent, [[bash(f"echo {SECRET} > leaked")], [text("done")]])
    assert "secrets_exposure" in agent.tool_results()[0]

    fork(agent, parent)

    assert not agent.marker.exists()
    assert "halted" in agent.tool_results()[-1]


def test_a_fork_that_names_no_session_is_linked_by_the_messages_it_copied(agent):
    """``--continue --fork-session``: no id on the command line. The fork is
    linked once Claude Code has written its copies of the parent's messages:
    before its first call in 2.1.197, after it in 2.1.332 (whose first call
    then runs)."""
    parent = parent_turn(agent)
    agent.leash("stop", parent, "--reason", "review the parent first")

    run = agent.run("go on", [[bash("echo first > first.txt")], [bash("touch marker")], [text("done")]],
                    args=("--continue", *FORK_ARGS))

    assert not agent.marker.exists()
    assert "review the parent first" in agent.tool_results()[-1]
    record = agent.sessions()[run.json()["session_id"]]
    assert (record["parent"], record["parent_by"]) == (parent, "transcript")


def test_a_blind_edit_on_the_first_call_is_halted(agent):
    target = agent.project / "app.py"
    target.write_text("def main():\n    return 1\n")
    edit = tool_use("Edit", {"file_path": str(target), "old_string": "return 1", "new_string": "return 2"})

    run = agent.run("change main", [[text("Editing."), edit], [text("done")]])

    assert target.read_text() == "def main():\n    return 1\n"
    (result,) = agent.tool_results()
    session = agent.sessions()[run.json()["session_id"]]
    if session.get("last_tool") == "Edit":  # leash's PreToolUse saw it (2.1.332 no longer refuses it itself)
        assert "modifying_unread_code (critical)" in result
        halts = agent.leash("halts", "list", "--session", run.json()["session_id"]).stdout
        assert "modifying_unread_code" in halts
    else:  # Claude Code refused it before any hook ran (2.1.197)
        assert "has not been read" in result
