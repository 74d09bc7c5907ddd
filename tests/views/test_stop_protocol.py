"""the-nexus's Stop Protocol behaviours, through `from leash.core import ...`."""
from __future__ import annotations

import json
import os

import pytest

from leash.core import HandsOffError, StopInterrupt, StopProtocol

NOW = 1_800_000_000.0


def test_default_constructor_uses_leash_home(home):
    sp = StopProtocol()
    assert sp.home == str(home)
    assert os.path.isdir(home)
    assert oct(os.stat(home).st_mode & 0o777) == oct(0o700)


def test_not_stopped_at_first(home):
    sp = StopProtocol()
    assert sp.is_stopped("sess_123") is False


def test_gate_passes_when_not_stopped(home):
    StopProtocol().pre_tool_check(session_id="sess_123")


def test_gate_raises_after_a_stop(home):
    sp = StopProtocol()
    sp.acknowledge_stop(source="ops@host", session_id="sess_123", reason="explicit halt")
    assert sp.is_stopped("sess_123")
    with pytest.raises(StopInterrupt, match="explicit halt"):
        sp.pre_tool_check(session_id="sess_123")
    sp.pre_tool_check(session_id="someone_else")  # other sessions keep working


def test_full_stop_locks_the_entity(home):
    sp = StopProtocol()
    sp.full_stop(session_id="sess_123", entity="ezra", reason="explicit halt", now=NOW)
    assert sp.is_stopped("sess_123", now=NOW)
    assert sp.is_hands_off("ezra", now=NOW)
    with pytest.raises(HandsOffError, match="ezra"):
        sp.check_hands_off("ezra", now=NOW)
    events = [line["event"] for line in sp.read_ack_log()]
    assert events == ["stop_ack", "hands_off"]


def test_ack_log_readable_with_the_four_fields(home):
    sp = StopProtocol()
    sp.acknowledge_stop("ops@host", "sess_123", "explicit halt", now=NOW)
    (line,) = sp.read_ack_log()
    assert line["timestamp"] == "2027-01-15T08:00:00.000000Z"
    assert (line["source"], line["session_id"], line["reason"]) == ("ops@host", "sess_123", "explicit halt")
    assert list(line)[:5] == ["timestamp", "event", "source", "session_id", "reason"]
    assert list(line)[-3:] == ["seq", "prev", "hash"]


def test_hands_off_expires_after_its_hours_and_is_pruned(home):
    sp = StopProtocol()
    sp.hands_off("ezra", hours=2, reason="deploy", now=NOW)
    assert sp.is_hands_off("ezra", now=NOW + 2 * 3600 - 1)
    assert not sp.is_hands_off("ezra", now=NOW + 2 * 3600)
    sp.hands_off("other", now=NOW + 3 * 3600)  # any write prunes expired locks
    assert "ezra" not in json.loads((home / "hands_off_registry.json").read_text())


def test_default_lock_is_24_hours_and_config_can_change_it(home):
    sp = StopProtocol()
    sp.hands_off("a", now=NOW)
    assert sp.is_hands_off("a", now=NOW + 24 * 3600 - 1) and not sp.is_hands_off("a", now=NOW + 24 * 3600)
    (home / "config.toml").write_text("[hands_off]\ndefault_hours = 1\n")
    sp.hands_off("b", now=NOW)
    assert not sp.is_hands_off("b", now=NOW + 3600)


def test_resume_lifts_a_stop_and_is_logged(home):
    sp = StopProtocol()
    sp.acknowledge_stop("ops", "s1", "halt")
    sp.resume("s1", "done", "ops")
    assert not sp.is_stopped("s1")
    assert [line["event"] for line in sp.read_ack_log()] == ["stop_ack", "resume"]


def test_fleet_stop_stops_everyone_and_resume_keeps_single_stops(home):
    sp = StopProtocol()
    sp.acknowledge_stop("ops", "s1", "own reason")
    sp.stop_fleet("maintenance", "ops")
    assert sp.is_stopped("s1") and sp.is_stopped("never-seen")
    with pytest.raises(StopInterrupt, match="whole fleet"):
        sp.pre_tool_check("never-seen")
    sp.resume_fleet("over", "ops")
    assert not sp.is_stopped("never-seen")
    assert sp.is_stopped("s1")
    assert [line["session_id"] for line in sp.read_ack_log() if line["event"].startswith("fleet")] == ["*", "*"]


def test_release_removes_the_lock(home):
    sp = StopProtocol()
    sp.hands_off("ezra")
    sp.release("ezra", "done")
    assert not sp.is_hands_off("ezra")
    assert [line["event"] for line in sp.read_ack_log()] == ["hands_off", "release"]


def test_stop_by_tmux_session_name(home):
    sp = StopProtocol()
    sp.sessions.observe("claude-abc", tmux_session="agent-3", tmux_pane="%1")
    sp.acknowledge_stop("ops", "agent-3", "stop the tmux session")
    assert sp.is_stopped("claude-abc")
    with pytest.raises(StopInterrupt, match="tmux session 'agent-3'"):
        sp.pre_tool_check("claude-abc")


def test_a_locked_entity_holds_its_sessions(home):
    sp = StopProtocol()
    sp.sessions.observe("s1", entity="ezra")
    sp.hands_off("ezra", reason="ezra is being migrated")
    with pytest.raises(StopInterrupt, match="hands-off"):
        sp.pre_tool_check("s1")


def test_path_lock_blocks_edits_and_shell_commands_under_it(home, tmp_path):
    sp = StopProtocol()
    sp.hands_off("path:src/auth/**", reason="auth rewrite")
    cwd = str(tmp_path)
    with pytest.raises(StopInterrupt, match="src/auth"):
        sp.pre_tool_check("s1", "Edit", {"file_path": f"{cwd}/src/auth/login.py"}, cwd=cwd)
    with pytest.raises(StopInterrupt):
        sp.pre_tool_check("s1", "Bash", {"command": "rm -rf src/auth"}, cwd=cwd)
    sp.pre_tool_check("s1", "Edit", {"file_path": f"{cwd}/src/billing/pay.py"}, cwd=cwd)
    sp.pre_tool_check("s1", "Read", {"file_path": f"{cwd}/src/auth/login.py"}, cwd=cwd)
    sp.pre_tool_check("s1", "Bash", {"command": "echo src/authority.txt"}, cwd=cwd)


def test_absolute_path_lock(home):
    sp = StopProtocol()
    sp.hands_off("path:/etc/**")
    with pytest.raises(StopInterrupt):
        sp.pre_tool_check("s1", "Write", {"file_path": "/etc/hosts", "content": ""}, cwd="/home/x")
    sp.pre_tool_check("s1", "Write", {"file_path": "/home/x/etc/hosts", "content": ""}, cwd="/home/x")


def test_bad_input_changes_nothing(home):
    sp = StopProtocol()
    sp.hands_off("ezra", hours=1)
    before = (home / "hands_off_registry.json").read_bytes()
    for hours in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            sp.hands_off("other", hours=hours)
    with pytest.raises(ValueError):
        sp.hands_off("path:")
    with pytest.raises(ValueError):
        sp.acknowledge_stop("ops", "", "empty id")
    assert (home / "hands_off_registry.json").read_bytes() == before
    assert len(sp.read_ack_log()) == 1


def test_a_stop_record_that_is_not_an_object_is_rebuilt_from_the_log(home):
    sp = StopProtocol()
    sp.acknowledge_stop("ops", "a", "logged", now=NOW)
    (home / "stops.json").write_text('{"sessions": {"a": "oops"}, "fleet": null}')
    assert sp.is_stopped("a") and not sp.is_stopped("b")
    assert list(home.glob("stops.json.corrupt-*"))
    assert sp.read_ack_log()[-1]["event"] == "state_rebuilt"
