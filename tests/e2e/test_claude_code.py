"""leash's hooks in the real Claude Code CLI: each test is one headless
``claude -p`` run in a project wired with leash, against the loopback stand-in
for the Messages API, on its own LEASH_HOME.

The stand-in scripts the model: a turn that calls Bash ``touch marker``, then a
turn that says "done". Whether the tool ran shows in the marker file; what leash
told the model shows in the ``tool_result`` Claude Code records in its
transcript and sends back (when the model is asked again)."""
from __future__ import annotations

import json
import uuid

import pytest

from ..support.e2e.harness import ClaudeUnavailable, ensure_claude, retarget
from ..support.e2e.standin import bash, text

try:  # once, at collection: without Claude Code the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)

SECRET = "AKIAZ7Q3R5T2W8Y4U6PL"  # the shape of an AWS access key id, not a real one


def touch_then_done() -> list[list[dict]]:
    return [[text("Creating the marker."), bash("touch marker")], [text("done")]]


def test_an_allowed_call_runs_and_its_session_is_registered(agent):
    seen_after_the_call: dict = {}
    run = agent.run("create the marker", touch_then_done(),
                    before={1: lambda: seen_after_the_call.update(agent.sessions())})

    assert run.code == 0, run
    assert agent.marker.exists()
    assert agent.standin.tool_result_texts() == ["(Bash completed with no output)"]
    session_id = run.json()["session_id"]
    assert session_id in seen_after_the_call, seen_after_the_call
    assert seen_after_the_call[session_id]["cwd"] == str(agent.project)


# The stops below are filed while the model is thinking (after the prompt was
# accepted), so it is the PreToolUse hook that meets them.
def test_a_fleet_stop_denies_the_call_with_leash_reason(agent):
    def stop_the_fleet() -> None:
        agent.leash("stop", "--all", "--reason", "maintenance window 42")

    agent.run("create the marker", touch_then_done(), before={0: stop_the_fleet})

    assert not agent.marker.exists()
    (result,) = agent.tool_results()
    assert "maintenance window 42" in result
    assert agent.standin.tool_result_texts() in ([], [result])  # sent to the model, if it is asked again


def test_a_session_stop_denies_the_call_with_leash_reason(agent):
    session_id = str(uuid.uuid4())

    def stop_the_session() -> None:
        agent.leash("stop", session_id, "--reason", "review this one first")

    run = agent.run("create the marker", touch_then_done(), before={0: stop_the_session},
                    args=("--session-id", session_id))

    assert run.json()["session_id"] == session_id
    assert not agent.marker.exists()
    (result,) = agent.tool_results()
    assert "review this one first" in result
    assert agent.standin.tool_result_texts() in ([], [result])


def test_a_secret_in_a_command_halts_the_session(agent):
    agent.run("print the key", [[bash(f"echo {SECRET} > marker")], [text("done")]])

    assert not agent.marker.exists()
    (result,) = agent.tool_results()
    assert "halt" in result.lower()
    assert "secrets_exposure" in result
    assert SECRET not in result


def test_the_stop_hook_blocks_once_while_a_reply_is_pending(agent):
    agent.leash("reply", "in", "--channel", "chat", "--key", "alice")

    run = agent.run("answer alice", [[text("first answer")], [text("second answer")], [text("third answer")]],
                    LEASH_TRIGGER_CHANNEL="chat", LEASH_TRIGGER_SESSION_KEY="alice")

    assert run.code == 0, run
    assert run.json()["result"] == "second answer"
    requests = agent.standin.model_requests
    assert len(requests) == 2  # blocked once, then stop_hook_active lets it end
    feedback = json.dumps(requests[1].body["messages"][-1])
    # 2.1.197 says "Stop hook feedback", 2.1.332 "Stop hook blocking error": either way the reason follows.
    assert "Stop hook feedback" in feedback or "Stop hook blocking error" in feedback
    assert "A reply on chat to alice is still pending" in feedback


def test_a_missing_leash_binary_blocks_instead_of_allowing(agent, tmp_path):
    retarget(agent.project, str(tmp_path / "gone" / "leash"))

    run = agent.run("create the marker", touch_then_done())

    assert not agent.marker.exists()
    if agent.standin.model_requests:  # the call was refused by the fail-closed PreToolUse wiring
        (result, *_) = agent.tool_results()
        assert "PreToolUse" in result and "hook error" in result
    else:  # or already the prompt, by the fail-closed UserPromptSubmit wiring
        assert "blocked by hook" in run.json()["result"]


# ------------------------------------------------- events not wired yet
def test_the_turn_ends_after_a_stop_denies_a_call(agent):
    def stop_the_fleet() -> None:
        agent.leash("stop", "--all", "--reason", "maintenance window 42")

    run = agent.run("create the marker", [[bash("touch marker")], [text("but I really must")]],
                    before={0: stop_the_fleet})

    assert not agent.marker.exists()
    assert len(agent.standin.model_requests) == 1  # no request after the deny
    assert run.json().get("terminal_reason") == "hook_stopped"


def test_a_stopped_sessions_new_prompt_never_reaches_the_model(agent):
    session_id = str(uuid.uuid4())
    # Stopped before it ever ran: nothing has seen the id yet, so the stop is filed with --force.
    agent.leash("stop", session_id, "--force", "--reason", "review this one first")

    run = agent.run("carry on", [[text("carrying on")]], args=("--session-id", session_id))

    assert agent.standin.model_requests == []
    assert "review this one first" in run.json()["result"]


def test_disabling_all_hooks_mid_session_is_blocked(agent):
    """The settings change is refused and recorded as a critical halt, so the
    turn ends there (a blocking halt ends the turn as a stop does): the next
    scripted call is never even proposed, and the session stays halted."""
    local = agent.project / ".claude" / "settings.local.json"

    def switch_hooks_off() -> None:  # an edit leash's PreToolUse never sees
        local.write_text(json.dumps({"disableAllHooks": True}))

    # The first tool call gives Claude Code's settings watcher time to notice.
    run = agent.run("create the marker", [[bash("sleep 3")], [bash("touch marker")], [text("done")]],
                    before={0: switch_hooks_off})

    assert not agent.marker.exists()
    halts = json.loads(agent.leash("halts", "list", "--json").stdout)
    assert any(h["condition_name"] == "supervisor_tampering" for h in halts["halts"]), halts
    assert run.json().get("terminal_reason") == "hook_stopped"


def test_with_leashd_the_hooks_go_through_its_agent_socket(agent):
    """leashd runs on the agent's home: every hook is a thin client of its agent
    socket, a stop filed through its operator socket denies the call, and the
    daemon's log shows it judged them."""
    from ..support.e2e.harness import leashd

    with leashd(agent.home) as daemon:
        agent.run("create the marker", touch_then_done(),
                  before={0: lambda: agent.leash("stop", "--all", "--reason", "through leashd")})
    log = daemon.log()
    assert not agent.marker.exists()
    (result,) = agent.tool_results()
    assert "through leashd" in result
    judged = [line for line in log.splitlines() if " hook " in line]
    assert any("hook_event=pre-tool-use" in line for line in judged), log
    assert any("operator verb=cli" in line for line in log.splitlines())


def test_install_writes_on_failure_where_this_claude_code_has_it(agent):
    """``leash install`` asked the Claude Code under test for its version:
    2.1.295 and later get ``onFailure: "block"`` on the gating hooks, older
    ones only the ``|| exit 2`` form (they might refuse a key they do not know)."""
    from ..support.e2e.harness import installed

    _, version = installed()
    settings = json.loads((agent.project / ".claude" / "settings.json").read_text())
    (hook,) = [h for g in settings["hooks"]["PreToolUse"] for h in g["hooks"]]
    has_it = tuple(int(p) for p in version.split(".")) >= (2, 1, 295)
    assert ("onFailure" in hook) == has_it, (version, hook)
    assert hook["command"].split(" # ")[0].endswith("|| exit 2")
