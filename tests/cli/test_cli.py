"""The `leash` command line: exit codes, one-line errors, output shapes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from leash.core import StopProtocol
from leash.core.base.clock import parse_iso
from leash.core.base.home import safe_component
from leash.core.state.acklog import AckLog

from ..support.checkout import ROOT, leash_argv


def one_line_error(result, code):
    assert result.code == code, result
    assert result.err.count("\n") == 1 and result.err.startswith("leash: "), result.err
    assert "Traceback" not in result.err


def test_stop_resume_round_trip(cli, home):
    assert cli("stop", "--force", "s1", "--reason", "why", "--source", "alice@box").code == 0
    assert StopProtocol(home).is_stopped("s1")
    line = AckLog(home).read().entries[-1]
    assert (line["event"], line["source"], line["reason"]) == ("stop_ack", "alice@box", "why")
    assert cli("resume", "s1").code == 0
    assert not StopProtocol(home).is_stopped("s1")


def test_default_source_is_user_at_host(cli, home, monkeypatch):
    monkeypatch.setenv("USER", "carol")
    cli("stop", "--force", "s1")
    import socket

    assert AckLog(home).read().entries[-1]["source"] == f"carol@{socket.gethostname()}"


def test_full_stop_with_entity_and_hours(cli, home):
    result = cli("stop", "--force", "s1", "--entity", "ezra", "--hours", "2", "--reason", "r")
    assert result.code == 0 and "ezra" in result.out
    lock = StopProtocol(home).hands_off_registry.lock_of("ezra")
    assert lock["session_id"] == "s1"
    assert [line["event"] for line in AckLog(home).read().entries] == ["stop_ack", "hands_off"]


@pytest.mark.parametrize("args", [
    ("stop",), ("stop", "--all"), ("stop", "s", "--all", "--reason", "r"), ("stop", "s", "--hours", "3"),
    ("stop", "s", "--entity", "e", "--hours", "x"), ("hands-off", "e", "--hours", "-2"),
    ("hands-off", "path:"), ("hands-off", " "), ("resume",), ("log", "--since", "yesterday"), ("log", "bogus"),
    ("frobnicate",), ("status", "--nope"),
])
def test_usage_errors_exit_2_with_one_line(cli, args):
    one_line_error(cli(*args), 2)


def test_refusals_exit_1(cli):
    one_line_error(cli("resume", "not-stopped"), 1)
    one_line_error(cli("resume", "--all"), 1)
    one_line_error(cli("release", "nothing-locked"), 1)


def test_refusal_changes_nothing(cli, home):
    cli("stop", "--force", "s1")
    before = {p.name: p.read_bytes() for p in home.iterdir() if p.is_file() and not p.name.endswith(".lock")}
    cli("resume", "other")
    cli("hands-off", "x", "--hours", "0")
    after = {p.name: p.read_bytes() for p in home.iterdir() if p.is_file() and not p.name.endswith(".lock")}
    assert before == after


def test_status_json_shape(cli, home):
    cli("stop", "--force", "s1", "--reason", "r1")
    cli("stop", "--all", "--reason", "fleet")
    cli("hands-off", "ezra", "--reason", "r2")
    StopProtocol(home).sessions.observe("s1", tmux_session="agent-1", cwd="/w")
    state = cli("status", "--json").json()
    assert set(state) == {"fleet_stopped", "stopped_sessions", "hands_off", "pending_halts", "warrants", "loops",
                          "sessions", "host", "budget"}
    assert isinstance(state.pop("host"), str)
    assert state.pop("budget") == {"today_usd": 0, "estimated": False, "windows": [], "caps": [], "held": []}
    assert all(isinstance(v, list) for v in state.values())
    assert state["sessions"][0]["host"]  # a home of one host: every session is this host's
    assert state["fleet_stopped"][0]["reason"] == "fleet"
    assert state["stopped_sessions"] == [{"session_id": "s1", **StopProtocol(home).stops.snapshot()["sessions"]["s1"]}]
    (lock,) = state["hands_off"]
    assert set(lock) == {"entity", "locked_at", "expires_at", "reason", "source", "session_id"}
    (session,) = state["sessions"]
    assert session["session_id"] == "s1" and session["tmux_session"] == "agent-1"


def test_status_human(cli):
    cli("stop", "--force", "s1", "--reason", "because")
    out = cli("status").out
    assert "fleet: running" in out and "s1" in out and "because" in out


def test_log_filters_and_json(cli, home):
    cli("stop", "--force", "a", "--reason", "r", "--source", "x@h", )
    cli("stop", "--force", "b", "--source", "y@h")
    cli("resume", "a", "--source", "x@h")
    lines = [json.loads(line) for line in cli("log", "--json").out.splitlines()]
    assert [line["event"] for line in lines] == ["stop_ack", "stop_ack", "resume"]
    assert lines == AckLog(home).read().entries
    only_a = cli("log", "--json", "--session", "a").out.splitlines()
    assert [json.loads(line)["session_id"] for line in only_a] == ["a", "a"]
    assert len(cli("log", "--event", "resume").out.splitlines()) == 1
    assert len(cli("log", "--source", "y@h").out.splitlines()) == 1
    assert cli("log", "--since", "2999-01-01T00:00:00Z").out == ""
    assert len(cli("log", "--since", "2000-01-01").out.splitlines()) == 3


def test_log_follow_prints_new_lines(home, cli):
    cli("stop", "--force", "first")
    env = dict(os.environ)
    follower = subprocess.Popen(leash_argv() + ["log", "--follow", "--json"], stdout=subprocess.PIPE, cwd=ROOT,
                                env=env)
    try:
        assert json.loads(follower.stdout.readline())["session_id"] == "first"
        cli("stop", "--force", "second")
        assert json.loads(follower.stdout.readline())["session_id"] == "second"
    finally:
        follower.kill()
        follower.wait()


def test_log_verify(cli, home):
    for i in range(4):
        cli("stop", "--force", f"s{i}")
    result = cli("log", "verify")
    assert result.code == 0 and "4 lines" in result.out
    path = home / "stop_ack_log.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    record["reason"] = "rewritten history"
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    result = cli("log", "verify")
    assert result.code == 3 and "line 3" in result.err


@pytest.mark.parametrize("name", ["../../outside", "/etc/passwd", "..", ".", "a/b/../../c", "\u00e9t\u00e9 ~$x",
                                  "x" * 5000, "line\nbreak", "tab\there"])
def test_any_string_is_a_session_id_or_entity_and_never_a_path(cli, home, tmp_path, name):
    assert cli("stop", "--force", name, "--entity", name, "--reason", "odd").code == 0
    sp = StopProtocol(home)
    assert sp.is_stopped(name) and sp.is_hands_off(name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leash-home"]
    assert AckLog(home).verify().ok


@pytest.mark.parametrize("name", ["gateway", "../x", "..", ".", ".hidden", "a/b", "x" * 400, "%41", "A"])
def test_safe_component_is_one_harmless_component(name):
    part = safe_component(name)
    assert "/" not in part and part not in (".", "..") and not part.startswith(".") and len(part) <= 255


def test_safe_component_is_injective():
    names = ["a/b", "a%2Fb", "a_b", "..", "%2E%2E", ".a", "%2Ea"]
    assert len({safe_component(n) for n in names}) == len(names)


def test_bad_config_is_one_warning_line_with_file_line_and_key_and_none_of_its_values(cli, home):
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[hands_off]\ndefault_hours = 2\n[warrants]\ndogs = 0\n")
    result = cli("hands-off", "ezra", "--json")
    assert result.code == 0 and result.err.count("\n") == 1 and result.err.startswith("leash: warning: "), result
    assert f"{home}/config.toml:4" in result.err and "warrants.dogs" in result.err
    lock = result.json()["lock"]  # for the default 24 hours, not the broken file's 2
    assert parse_iso(lock["expires_at"]) - parse_iso(lock["locked_at"]) == pytest.approx(24 * 3600, abs=5)


def test_bad_config_checks_halts_on_the_strictest_settings(cli, home):
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[halts]\nrecord_high = false\n[hands_off]\ndefault_hours = \"soon\"\n")
    unread_edit = {"session_token": "s1", "current_context": {"target_files": ["src/auth.js"], "files_read": []},
                   "proposed_changes": {"files_to_modify": ["src/auth.js"], "has_rollback_plan": False}}
    result = cli("halts", "check", "--json", stdin=json.dumps(unread_edit).encode())
    assert "hands_off.default_hours" in result.err and result.err.count("\n") == 1, result
    (high,) = [reason for reason in json.loads(result.out)["halt_reasons"] if reason["severity"] == "high"]
    assert high["auto_recorded"] is True, result  # the broken file's record_high = false is not used


def test_console_script_is_installed():
    script = os.path.join(os.path.dirname(sys.executable), "leash")
    done = subprocess.run([script, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "hands-off" in done.stdout


def test_doctor_on_a_healthy_home(cli):
    cli("stop", "--force", "s1")
    result = cli("doctor")
    assert result.code == 0 and "hash chain intact" in result.out


def test_doctor_prunes_expired_locks(cli, home):
    StopProtocol(home).hands_off("old", hours=1, now=time.time() - 7200)
    assert "expired" in cli("doctor").out
    assert "pruned 1 expired" in cli("doctor", "--repair").out
