"""`leash hook pre-tool-use` speaks Claude Code's PreToolUse protocol. The hook's
entry runs in-process; a few cases run the whole process (exit status, what
reaches stdout and stderr, the command line's ``--home``)."""
from __future__ import annotations

import subprocess

import pytest

from leash.core import StopProtocol

from ..support.pretooluse import assert_denied, payload


def test_allow_prints_nothing_and_exits_zero(leash_proc):
    result = leash_proc("hook", "pre-tool-use", stdin=payload())
    assert (result.code, result.out, result.err) == (0, "", "")


def test_deny_after_a_stop(leash_proc, cli):
    assert cli("stop", "--force", "sess_123", "--reason", "explicit halt").code == 0
    result = leash_proc("hook", "pre-tool-use", stdin=payload())
    assert_denied(result, "explicit halt", "stopped")
    # the deny is exactly one JSON document on one line
    assert result.out.count("\n") == 1


def test_fleet_stop_denies_every_session(leash, cli):
    cli("stop", "--all", "--reason", "maintenance window")
    for session in ("a", "b", "never-seen-before"):
        assert_denied(leash("hook", "pre-tool-use", stdin=payload(session)), "maintenance window")
    cli("resume", "--all")
    assert leash("hook", "pre-tool-use", stdin=payload("a")).out == ""


@pytest.mark.parametrize("garbage", [b"", b"not json at all", b"[1, 2]", b'{"tool_name": "Bash"}',
                                     b'{"session_id": 7}', b"\xff\xfe", b'{"session_id": "x"'])
def test_garbage_input_is_one_line_on_stderr_and_no_traceback(leash, garbage):
    result = leash("hook", "pre-tool-use", stdin=garbage)
    assert result.code == 1
    assert result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("leash: ")
    assert "Traceback" not in result.err


def test_garbage_input_to_the_process_is_one_line_on_stderr_and_no_traceback(leash_proc):
    result = leash_proc("hook", "pre-tool-use", stdin=b'{"session_id": "x"')
    assert (result.code, result.out) == (1, "")
    assert result.err.count("\n") == 1 and result.err.startswith("leash: ")


def test_garbage_input_still_denied_while_the_fleet_is_stopped(leash, cli):
    cli("stop", "--all", "--reason", "everyone stops")
    result = leash("hook", "pre-tool-use", stdin=b"garbage")
    assert_denied(result, "everyone stops")
    assert result.err.startswith("leash: ") and "Traceback" not in result.err


def test_unreadable_stop_state_fails_closed(leash, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "stops.json").write_text("{torn")
    reason = assert_denied(leash("hook", "pre-tool-use", stdin=payload()), "leash doctor")
    assert "unreadable" in reason


def test_hook_registers_the_session(leash, home):
    leash("hook", "pre-tool-use", stdin=payload("s1", cwd="/work/x"), env={"LEASH_ENTITY": "ezra"})
    record = StopProtocol(home).sessions.get("s1")
    assert record["cwd"] == "/work/x" and record["entity"] == "ezra" and record["last_tool"] == "Bash"


def test_hands_off_path_denies_an_edit(leash, cli, tmp_path):
    cli("hands-off", "path:src/auth/**", "--reason", "auth rewrite")
    edit = payload(tool="Edit", tool_input={"file_path": f"{tmp_path}/src/auth/a.py", "old_string": "x",
                                            "new_string": "y"}, cwd=str(tmp_path))
    assert_denied(leash("hook", "pre-tool-use", stdin=edit), "auth rewrite", "path:src/auth/**")
    other = payload(tool="Edit", tool_input={"file_path": f"{tmp_path}/src/ui/a.py"}, cwd=str(tmp_path))
    assert leash("hook", "pre-tool-use", stdin=other).out == ""


def test_home_flag_before_hook(leash_proc, tmp_path):
    other_home = tmp_path / "elsewhere"
    StopProtocol(other_home).acknowledge_stop("ops", "sess_123", "elsewhere")
    assert_denied(leash_proc("--home", str(other_home), "hook", "pre-tool-use", stdin=payload()), "elsewhere")
    assert leash_proc("hook", "pre-tool-use", stdin=payload()).out == ""


def test_stop_by_tmux_session_name_through_a_real_pane(leash, cli, tmux_socket, home):
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "agent-3", "-x", "80", "-y", "20"],
                   check=True)
    pane = subprocess.run(["tmux", "-S", str(tmux_socket), "display-message", "-p", "-t", "agent-3",
                           "#{pane_id}"], capture_output=True, text=True, check=True).stdout.strip()
    env = {"TMUX": f"{tmux_socket},0,0", "TMUX_PANE": pane}
    assert leash("hook", "pre-tool-use", stdin=payload("claude-xyz"), env=env).out == ""
    assert StopProtocol(home).sessions.get("claude-xyz")["tmux_session"] == "agent-3"
    cli("stop", "--force", "agent-3", "--reason", "stopped from tmux's name")
    assert_denied(leash("hook", "pre-tool-use", stdin=payload("claude-xyz"), env=env),
                  "tmux session 'agent-3'", "stopped from tmux's name")
