"""Approvals with the real Claude Code, headless, through a running ``leash
daemon``: the agent's call waits until an operator answers from another
process (``leash approvals allow|deny``).

* A Bash call that needs permission (``--permission-mode default``, no allow
  rule) fires PermissionRequest; the hook holds it as an approval; ``allow``
  runs the tool, ``deny --message`` refuses it and the model reads the message.
  That is 2.1.332: the pinned 2.1.197 never runs the PermissionRequest hook
  headless (``-p``): it refuses the call itself ("This command requires
  approval", or for a write "touch in ... was blocked"), so no approval is
  opened and leash changes nothing there (its PermissionRequest fires only in
  an interactive session).
* An ``[approvals] ask`` rule holds a matching call at PreToolUse even in a
  ``bypassPermissions`` run until the operator answers.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest

from leash.core.state.acklog import AckLog

from ..support.e2e.harness import LEASH, ClaudeUnavailable, claude_env, ensure_claude, leashd, run_claude, wire
from ..support.e2e.standin import StandInServer, bash, text
from ..support.waiting import eventually

try:  # once, at collection: without Claude Code the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)

# The newest version seen not to run PermissionRequest in a headless run (2.1.332 does).
SILENT_HEADLESS_UP_TO = (2, 1, 197)
HEADLESS_PERMISSION_REQUEST = tuple(int(part) for part in ensure_claude()[1].split(".")[:3]) > SILENT_HEADLESS_UP_TO
APPROVAL_OPENS_WITHIN_SECONDS = 60
TOOL = "touch marker"


@pytest.fixture
def daemon(agent):
    """``leash daemon`` on the agent's home (its hooks are thin clients of it)."""
    with leashd(agent.home) as running:
        yield running


def configure(agent, text_of_config: str) -> None:
    """A config for the agent's home, and the wiring ``leash install`` writes for it."""
    agent.home.mkdir(parents=True, exist_ok=True)
    (agent.home / "config.toml").write_text(text_of_config)
    wire(agent.project, env=dict(os.environ, LEASH_HOME=str(agent.home)))


def waiting(agent) -> list[dict]:
    done = subprocess.run([LEASH, "--home", str(agent.home), "approvals", "list", "--json"], capture_output=True,
                          text=True, timeout=60)
    return json.loads(done.stdout) if done.returncode == 0 else []


def answer_when_asked(agent, *words: str) -> dict:
    """In a thread: wait for an approval, then answer it with ``leash approvals WORDS[0] ID WORDS[1:]``."""
    said: dict = {}

    def operator() -> None:
        found = eventually(lambda: waiting(agent), APPROVAL_OPENS_WITHIN_SECONDS, interval=0.1)
        if not found:
            said["never"] = True
            return
        said["approval"] = found[0]
        said["answer"] = subprocess.run([LEASH, "--home", str(agent.home), "approvals", words[0], found[0]["id"],
                                         *words[1:]], capture_output=True, text=True, timeout=60)

    said["thread"] = threading.Thread(target=operator, daemon=True)
    said["thread"].start()
    return said


def run_with(agent, mode: str):
    with StandInServer([[text("Creating the marker."), bash(TOOL)], [text("done")]]) as standin:
        agent.standin = standin
        env = claude_env(agent.base, standin.url, LEASH_HOME=str(agent.home))
        agent.last = run_claude(agent.claude, agent.project, "create the marker", env,
                                args=("--permission-mode", mode))
    assert not agent.last.timed_out, agent.last
    return agent.last


def closing_line(agent, approval_id: str) -> dict:
    (line,) = [line for line in AckLog(agent.home).read().entries
               if line.get("approval") == approval_id and line["event"] != "approval_requested"]
    return line


@pytest.mark.skipif(HEADLESS_PERMISSION_REQUEST, reason="this Claude Code runs PermissionRequest headless")
def test_a_version_without_headless_permission_requests_refuses_by_itself(agent, daemon):
    run = run_with(agent, "default")

    assert not agent.marker.exists()
    assert [denied["tool_name"] for denied in run.json()["permission_denials"]] == ["Bash"]
    assert waiting(agent) == []
    assert not [line for line in AckLog(agent.home).read().entries if line["event"].startswith("approval_")]


needs_headless_requests = pytest.mark.skipif(not HEADLESS_PERMISSION_REQUEST,
                                             reason="this Claude Code never runs PermissionRequest headless")


@needs_headless_requests
def test_a_permission_dialog_waits_for_the_operator_and_allow_runs_the_tool(agent, daemon):
    said = answer_when_asked(agent, "allow", "--note", "looks fine")
    run = run_with(agent, "default")
    said["thread"].join(timeout=60)

    assert "never" not in said, f"no approval was opened: {run!r}"
    assert said["answer"].returncode == 0, said["answer"].stderr
    assert said["approval"]["kind"] == "permission" and said["approval"]["summary"] == f"Bash: {TOOL}"
    assert agent.marker.exists(), run
    line = closing_line(agent, said["approval"]["id"])
    assert (line["event"], line["via"], line["note"]) == ("approval_allowed", "cli", "looks fine")


@needs_headless_requests
def test_a_denied_permission_tells_the_model_the_operators_message(agent, daemon):
    said = answer_when_asked(agent, "deny", "--message", "not on a Friday")
    run = run_with(agent, "default")
    said["thread"].join(timeout=60)

    assert "never" not in said, f"no approval was opened: {run!r}"
    assert not agent.marker.exists()
    assert any("not on a Friday" in result for result in agent.tool_results()), agent.tool_results()
    assert closing_line(agent, said["approval"]["id"])["event"] == "approval_denied"


def test_an_ask_rule_holds_a_bypass_run_until_the_operator_allows(agent, daemon):
    configure(agent, '[approvals]\nask = ["Bash(touch *)"]\n')
    said = answer_when_asked(agent, "allow")
    run = run_with(agent, "bypassPermissions")
    said["thread"].join(timeout=60)

    assert "never" not in said, f"no approval was opened: {run!r}"
    assert (said["approval"]["kind"], said["approval"]["rule"]) == ("ask", "Bash(touch *)")
    assert agent.marker.exists(), run
    assert closing_line(agent, said["approval"]["id"])["event"] == "approval_allowed"
