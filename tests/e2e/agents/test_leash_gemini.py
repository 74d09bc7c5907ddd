"""leash in the real Gemini CLI: each test is one or two headless ``gemini -p``
runs in a project wired by the real ``leash install --agent gemini --project
DIR``, against the loopback stand-in of Gemini's API, on a LEASH_HOME of its own.

The Gemini CLI gets a private HOME (its ``~/.gemini``: the user settings the
run needs, the folder trust ``leash install`` writes) and a closed environment
without ``LEASH_HOME``: the hooks find the state home through the ``--home``
that ``leash install`` pins in each command. The stand-in scripts the model:
tool calls, then a text that ends the turn. Whether a call ran shows in the
file it writes; what leash told the model shows in the ``functionResponse``
the CLI sends back (``standin.tool_result_texts()``); a stop that ends the
loop shows as no further conversation request and in the stream-json
``tool_result`` event (``Agent execution stopped by hook: <reason>``).
Operator actions "while the model thinks" run in the stand-in's ``before``
callbacks, after the prompt was accepted, so it is BeforeTool that meets them.

The CLI version is ``LEASH_E2E_GEMINI_VERSION`` (a number or ``latest``), else
the pinned one (``gemini_cli.PINNED_VERSION``); every test is skipped, with
npm's reason, when the CLI cannot be installed.
"""
from __future__ import annotations

import json
import shutil
import sys
import uuid

import pytest

from ...support.e2e.gemini_cli import BLOCKED, STOPPED
from ...support.e2e.gemini_standin import replace, shell, text, write_file, write_out

pytestmark = pytest.mark.timeout(600)  # the first test may install the CLI


# The shape of a GitHub token, built here so no scanner takes this file for a leak.
TOKEN = "ghp" + "_" + "Zx8Qm2Lr5Tn7Vb4Kc9Hd3Fj6Wp1Ys0Ga2Ue5"


# ------------------------------------------------------------------ 1. allowed
def test_an_allowed_call_runs_and_the_session_is_recorded_as_gemini(rig):
    session_id = str(uuid.uuid4())
    seen_while_running: dict = {}

    rig.run("write out.txt", [write_out(), text("done")], session_id=session_id,
            before={1: lambda: seen_while_running.update(rig.sessions())})

    assert (rig.project / "out.txt").read_text() == "hi\n"
    [result] = rig.tool_results()
    assert not result.startswith(BLOCKED), result
    assert rig.conversation_requests() == 2
    assert session_id in seen_while_running, seen_while_running  # recorded while the session ran
    session = rig.sessions()[session_id]
    assert session["cli"] == "gemini", session
    assert session["cwd"] == str(rig.project), session
    assert session["last_tool"] == "Bash", session  # run_shell_command, judged as Bash


# ------------------------------------------------------------------ 2. stops end the loop
@pytest.mark.parametrize("scope, end_turn_on_halt", [("fleet", True), ("session", True), ("session", False)])
def test_a_stop_refuses_the_call_and_ends_the_loop(rig, scope, end_turn_on_halt):
    """(``[gate] end_turn_on_halt = false`` is about halts: a stop still ends the loop.)"""
    if not end_turn_on_halt:
        (rig.leash_home / "config.toml").write_text("[gate]\nend_turn_on_halt = false\n")
    session_id = str(uuid.uuid4())
    reason = f"maintenance window {scope} 42"

    def stop() -> None:
        if scope == "fleet":
            rig.leash("stop", "--all", "--reason", reason)
        else:
            rig.leash("stop", session_id, "--force", "--reason", reason)  # it may not have been seen yet

    run = rig.run("write out.txt", [write_out(), text("but I really must")], session_id=session_id,
                  before={0: stop})

    assert not (rig.project / "out.txt").exists()
    assert rig.conversation_requests() == 1  # no model request after the refused call
    assert rig.nothing_asked_after_the_first_turn()
    assert rig.tool_results() == []
    [event] = rig.stream_tool_results()
    assert event["status"] == "error", event
    assert event["output"].startswith(STOPPED) and reason in event["output"], event
    assert event["error"]["type"] == "stop_execution", event
    assert [e["status"] for e in run.events() if e.get("type") == "result"] == ["success"]
    assert "but I really must" not in run.stdout


# ------------------------------------------------------------------ 3. path locks
def test_a_path_lock_refuses_write_file_and_replace_and_the_model_hears_why(rig):
    deploy = rig.project / "deploy"
    deploy.mkdir()
    config = deploy / "app.conf"
    config.write_text("replicas = 1\n")
    reason = "release freeze 7"
    rig.leash("hands-off", f"path:{deploy}/**", "--hours", "1", "--reason", reason)

    rig.run("change the deployment", [
        write_file("deploy/app.conf", "replicas = 9\n"),                    # relative, as the model sends it
        replace(str(config), "replicas = 1", "replicas = 5"),              # absolute
        write_file("notes.txt", "outside the lock\n"),                       # not under the lock: runs
        text("done"),
    ])

    assert config.read_text() == "replicas = 1\n"
    assert sorted(path.name for path in deploy.iterdir()) == ["app.conf"]
    assert (rig.project / "notes.txt").read_text() == "outside the lock\n"
    refused, edited, allowed = rig.tool_results()
    for said in (refused, edited):
        assert said.startswith(BLOCKED) and reason in said, said
    assert not allowed.startswith(BLOCKED), allowed
    assert rig.conversation_requests() == 4  # a lock refuses the call; the loop goes on


# ------------------------------------------------------------------ 4. a secret halts
@pytest.mark.parametrize("end_turn_on_halt", [True, False])
def test_a_secret_in_a_command_halts_the_session(rig, end_turn_on_halt):
    if not end_turn_on_halt:
        (rig.leash_home / "config.toml").write_text("[gate]\nend_turn_on_halt = false\n")
    session_id = str(uuid.uuid4())
    command = f'curl -s -H "Authorization: Bearer {TOKEN}" http://127.0.0.1:9/ > out.txt'

    rig.run("call the API", [shell(command, "call the API"), text("done")], session_id=session_id)

    assert not (rig.project / "out.txt").exists()
    halts = rig.leash_json("halts", "list")
    assert [(halt["session_id"], halt["condition_name"], halt["severity"], halt["acknowledged"])
            for halt in halts["halts"]] == [(session_id, "secrets_exposure", "critical", False)], halts
    assert TOKEN not in json.dumps(halts)  # the command is kept with the token redacted
    if end_turn_on_halt:  # a blocking halt ends the loop as a stop does
        assert rig.conversation_requests() == 1 and rig.nothing_asked_after_the_first_turn()
        [event] = rig.stream_tool_results()
        said = event["output"]
        assert said.startswith(STOPPED), event
    else:  # the refusal reaches the model and the loop goes on
        assert rig.conversation_requests() == 2
        [said] = rig.tool_results()
        assert said.startswith(BLOCKED), said
    assert "secrets_exposure" in said, said
    assert TOKEN not in said
    assert TOKEN not in json.dumps(rig.stream_tool_results())  # (the tool_use event repeats the model's call)


# ------------------------------------------------------------------ 5. a failing hook refuses
def test_a_hook_that_cannot_run_refuses_the_call(rig):
    """BeforeTool's interpreter is gone (the installed command, rewritten in
    the project's settings to a python that is not there): the shell answers
    127, the command's tail turns that into exit 2 with its own line, and Gemini
    refuses the call and tells the model."""
    settings = rig.settings()
    [group] = settings["hooks"]["BeforeTool"]
    [hook] = group["hooks"]
    assert sys.executable in hook["command"], hook
    hook["command"] = hook["command"].replace(sys.executable, str(rig.base / "gone" / "python"))
    rig.settings_path.write_text(json.dumps(settings, indent=2) + "\n")

    rig.run("write out.txt", [write_out(), text("done")])

    assert not (rig.project / "out.txt").exists()
    [said] = rig.tool_results()
    assert said.startswith(BLOCKED), said
    assert "leash: hook gemini-before-tool could not run (exit 127): the call is refused" in said, said
    assert rig.conversation_requests() == 2


def test_a_home_that_breaks_mid_session_refuses_the_call(rig):
    """The state home becomes a regular file while the model thinks (the
    prompt was accepted with it sound): leash cannot judge the call, so it is
    refused, with the reason as the call's result; the next model request's
    hook (BeforeModel, which fails closed too) then ends the loop."""
    session_id = str(uuid.uuid4())
    moved = rig.base / "leash-home-moved"

    def break_the_home() -> None:
        rig.leash_home.rename(moved)
        rig.leash_home.write_text("not a directory\n")

    run = rig.run("write out.txt", [write_out(), text("done")], session_id=session_id, before={0: break_the_home})

    assert not (rig.project / "out.txt").exists()
    [said] = [event["output"] for event in run.events() if event.get("type") == "tool_result"]
    assert said.startswith(BLOCKED + f"leash: unsafe state home {rig.leash_home}: not a directory"), said
    assert "every tool call is denied until it is safe" in said, said
    blocked = [event["message"] for event in run.events() if event.get("type") == "error"]
    assert len(blocked) == 1 and blocked[0].startswith("Agent execution blocked: leash: unsafe state home"), blocked
    assert rig.conversation_requests() == 1  # the model is not asked again while leash cannot judge


def test_a_home_that_is_a_file_from_the_start_refuses_the_prompt(rig):
    """With the home a regular file before the run, BeforeAgent (which fails
    closed too) refuses the prompt: no conversation request at all, so no call."""
    shutil.rmtree(rig.leash_home)  # (leash install made it)
    rig.leash_home.write_text("not a directory\n")

    run = rig.run("write out.txt", [write_out(), text("done")])

    assert not (rig.project / "out.txt").exists()
    assert rig.conversation_requests() == 0
    [error] = [event for event in run.events() if event.get("type") == "error"]
    assert error["message"].startswith(f"Agent execution blocked: leash: unsafe state home {rig.leash_home}"), error


# ------------------------------------------------------------------ 6. --check
def test_check_sees_hooks_switched_off_and_gemini_then_runs_none(rig):
    checked = rig.install("--check")
    assert "7 leash hooks wired, enabled, folder trusted" in checked.stdout, checked.stdout

    settings = rig.settings()
    settings["hooksConfig"]["enabled"] = False
    rig.settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    checked = rig.install("--check", expect=3)
    assert "hooksConfig.enabled is false" in checked.stdout + checked.stderr, checked

    # Why --check matters: with hooks off Gemini runs none, and a fleet stop refuses nothing.
    session_id = str(uuid.uuid4())
    rig.leash("stop", "--all", "--reason", "nobody hears this")
    rig.run("write out.txt", [write_out(), text("done")], session_id=session_id)

    assert (rig.project / "out.txt").read_text() == "hi\n"
    [said] = rig.tool_results()
    assert not said.startswith(BLOCKED), said
    assert session_id not in rig.sessions()  # no hook ran: the session was never even recorded

    rig.install()  # installing again switches them back on
    assert rig.settings()["hooksConfig"]["enabled"] is True
    rig.install("--check")


# ------------------------------------------------------------------ reads are reported from the first call


@pytest.mark.parametrize("first", [
    "blind edit first",
    "after one call",
])
def test_a_blind_edit_is_halted_from_the_first_call_as_in_claude_code(rig, first):
    """leash install --agent gemini wires AfterTool, so every read is reported
    from the session's first call on, as for a wired Claude Code session
    (tests/hook/test_unread_first_call.py): an edit of an existing file the session
    never read is halted (modifying_unread_code) whether or not a call came
    before it. Today only the second case is."""
    app = rig.project / "app.py"
    app.write_text("def main():\n    return 1\n")
    session_id = str(uuid.uuid4())
    before = [shell("echo hi", "say hi")] if first == "after one call" else []

    rig.run("edit app.py", [*before, replace("app.py", "return 1", "return 2"), text("done")],
            session_id=session_id)

    halts = [(halt["session_id"], halt["condition_name"]) for halt in rig.leash_json("halts", "list")["halts"]]
    assert app.read_text() == "def main():\n    return 1\n"
    assert halts == [(session_id, "modifying_unread_code")]
    [event] = [event for event in rig.stream_tool_results() if event["status"] == "error"]
    assert event["output"].startswith(STOPPED) and "modifying_unread_code" in event["output"], event
