"""A config.toml that cannot be used never loosens a rule, is never silent
and never locks the operator out: the hooks keep every setting at its
strictest (the approvals floor holds every call; no tool counts as read-only
for a halted session) and say so on stderr, naming the file and the line, and
tell the agent what the operator must mend; ``leash doctor`` and ``leash
status`` show a ``config_broken`` finding; every other command runs on the
strictest settings with one warning line naming the file and the line. A
file with only an unknown key is understood: a warning, and the hooks judge
by the rest of it. The file is parsed once per process however many modules
read it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leash.core.base import config as settings
from leash.core.base.clock import parse_iso
from leash.core.hook.gate import Gate
from leash.core.hook.hooks import answer
from leash.core.state.halts import api as halts
from leash.core.store.files import FileBackend
from leash.core.views.protocol import StopProtocol

NOW = 1_800_000_000.0
BROKEN = '[gate]\nread_only_tools = []\n\n[approvals]\nask = ["Bash(git push*)"\n'  # line 5 lacks its bracket


def payload(tool: str = "Read", **tool_input) -> bytes:
    return json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input or {"file_path": "/etc/hostname"}, "cwd": "/"}).encode()


@pytest.fixture
def broken(home) -> Path:
    StopProtocol(home)
    (home / "config.toml").write_text(BROKEN)
    return home / "config.toml"


def test_every_hook_says_on_stderr_which_file_and_line_is_broken(home, broken):
    for event, raw in (("pre-tool-use", payload()), ("post-tool-use", payload()), ("post-tool-batch", payload()),
                       ("user-prompt-submit", json.dumps({"session_id": "s1", "prompt": "hi"}).encode())):
        _, err, _ = answer(event, raw, home=str(home), env={}, now=NOW)
        notes = [line for line in err.splitlines() if "config_broken" in line]
        assert len(notes) == 1, (event, err)
        assert f"{broken}:5: key 'approvals.ask'" in notes[0] and "strictest" in notes[0], notes


def test_a_valid_config_adds_nothing_to_stderr(home):
    StopProtocol(home)
    (home / "config.toml").write_text('[gate]\nread_only_tools = []\n')
    _, err, code = answer("pre-tool-use", payload(), home=str(home), env={}, now=NOW)
    assert code == 0 and "config_broken" not in err


def test_the_pre_tool_use_answer_names_the_file_and_line(home, broken):
    out, _, code = answer("pre-tool-use", payload(), home=str(home), env={}, now=NOW)
    said = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and said["permissionDecision"] == "deny"
    assert f"{broken}:5" in said["permissionDecisionReason"]


def test_a_halted_session_gets_no_read_only_tool_from_a_broken_file(home):
    """Valid, the file says no tool is read-only; broken, the gate must not fall back to the default ["Read"]."""
    StopProtocol(home)
    halts.record_halt({"session_token": "s1", "halt_type": "security", "severity": "critical",
                       "description": "x"}, home=home, now=NOW)
    (home / "config.toml").write_text('[gate]\nread_only_tools = []\n')
    valid = Gate(home).check("s1", "Read", {"file_path": "/etc/hostname"}, cwd="/", now=NOW, env={})
    assert not valid.allow and valid.rule == "session_halted"
    (home / "config.toml").write_text(BROKEN)
    gate = Gate(home)
    verdict = gate.check("s1", "Read", {"file_path": "/etc/hostname"}, cwd="/", now=NOW, env={})
    assert not verdict.allow and verdict.rule == "session_halted", verdict
    assert gate.config_problem is not None and gate.config_problem.startswith(f"{home}/config.toml:5:")


def test_the_strictest_settings_are_never_looser_than_the_defaults():
    strictest, defaults = settings.strictest_config(), settings.DEFAULTS
    assert strictest["gate"]["read_only_tools"] == []
    assert strictest["gate"]["end_turn_on_halt"] is True and strictest["halts"]["record_high"] is True
    assert strictest["approvals"]["on_timeout"] == "deny" and strictest["store"]["offline"] == "closed"
    assert defaults["gate"]["read_only_tools"] == ["Read"]  # untouched


@pytest.mark.parametrize("text", [BROKEN, '[gate]\nread_only_tools = ["Read"]\n[hands_off]\ndefault_hours = 2\n'])
def test_a_hook_call_parses_config_toml_once(home, monkeypatch, text):
    StopProtocol(home)
    (home / "config.toml").write_text(text)
    halts.record_halt({"session_token": "s1", "halt_type": "security", "severity": "critical",
                       "description": "x"}, home=home, now=NOW)  # so the halt engine reads its settings too
    parsed = []
    real = settings.parse
    monkeypatch.setattr(settings, "_PARSED", {})  # as a hook process starts: nothing parsed yet
    monkeypatch.setattr(settings, "parse", lambda path, raw, *schema: parsed.append(path) or real(path, raw, *schema))
    for event in ("pre-tool-use", "post-tool-batch"):
        answer(event, payload("Bash", command="git push"), home=str(home), env={}, now=NOW)
    assert parsed == [str(home / "config.toml")]


def test_a_changed_file_is_parsed_again(tmp_path):
    (tmp_path / "config.toml").write_text("[hands_off]\ndefault_hours = 2\n")
    assert settings.load_config(tmp_path)["hands_off"]["default_hours"] == 2
    (tmp_path / "config.toml").write_text("[hands_off]\ndefault_hours = 3\n")
    assert settings.load_config(tmp_path)["hands_off"]["default_hours"] == 3
    settings.load_config(tmp_path)["hands_off"]["default_hours"] = 99  # each caller its own copy
    assert settings.load_config(tmp_path)["hands_off"]["default_hours"] == 3


def test_doctor_reports_config_broken_and_still_examines_the_files(cli, home, broken):
    StopProtocol(home).stops.stop("s1", source="ops@test", reason="held")
    result = cli("doctor")
    assert result.code == 2, result
    lines = result.out.splitlines()
    assert any(line.startswith(f"fail  config_broken: {broken}:5: key 'approvals.ask'") for line in lines), result
    assert any(line.startswith("ok    stops.json: 1 stopped session") for line in lines), result
    found = cli("doctor", "--json").json()
    assert found["exit_code"] == 2 and found["ok"] is False
    assert [f["subject"] for f in found["findings"] if f["level"] == "fail"] == ["config_broken"]


def test_status_shows_config_broken_with_the_state(cli, home, broken):
    StopProtocol(home).stops.stop("s1", source="ops@test", reason="held")
    result = cli("status")
    assert result.code == 2, result
    assert f"config_broken: {broken}:5: key 'approvals.ask'" in result.out
    assert "s1" in result.out and "stopped sessions: 1" in result.out  # the state is still shown
    assert f"config_broken: {broken}:5" in result.err and len(result.err.strip().splitlines()) == 1
    state = cli("status", "--json").json()
    assert [p["kind"] for p in state["problems"]] == ["config_broken"]
    assert state["stopped_sessions"][0]["session_id"] == "s1"


def test_status_shows_no_state_when_the_broken_file_may_name_the_shared_store(cli, home):
    StopProtocol(home)
    (home / "config.toml").write_text('[store]\nurl = "postgresql://db/leash\n')
    result = cli("status")
    assert result.code == 2 and result.out == "", result
    assert "config_broken" in result.err and "may name the shared store" in result.err


def test_a_broken_file_that_may_name_the_shared_store_holds_every_call_and_says_why(home, leash_proc):
    StopProtocol(home)
    (home / "config.toml").write_text('[store]\nurl = "postgresql://db/leash\n')
    done = leash_proc("hook", "pre-tool-use", stdin=payload("Bash", command="ls"))
    said = json.loads(done.out)["hookSpecificOutput"]
    assert done.code == 0 and said["permissionDecision"] == "deny"
    assert said["permissionDecisionReason"].startswith(f"leash: config_broken: {home}/config.toml:2: key 'store.url'")
    assert "config_broken" in done.err


def operator_commands(home) -> list[list[str]]:
    """Every command an operator answers held calls with, on a home with a
    seen session s1 and two approvals waiting."""
    backend = FileBackend(home)
    backend.sessions.observe("s1", now=NOW, tool="Bash")
    first, second = (backend.approvals.request("s1", "Bash", {"command": "ls"}, kind="ask", rule="held",
                                               timeout_s=300) for _ in range(2))
    return [["stop", "s1", "--reason", "x"], ["stop", "--all", "--reason", "x"], ["resume", "--all"],
            ["resume", "s1"], ["hands-off", "ezra"], ["release", "ezra"], ["approvals"],
            ["approvals", "allow", first.id], ["approvals", "deny", second.id], ["log"], ["log", "verify"],
            ["halts", "list"], ["halts", "record", "--session", "s1", "--type", "security", "--severity", "low",
                                "--description", "d"],
            ["warrant", "file", "s1", "--reason", "x"], ["warrant", "list"], ["warrant", "pardon", "s1"],
            ["why", "s1"]]


def test_every_operator_command_runs_with_one_warning_naming_the_file_and_line(cli, home, broken):
    for argv in operator_commands(home):
        result = cli(*argv)
        assert result.code == 0, (argv, result)
        warnings = [line for line in result.err.splitlines() if line.startswith("leash: warning: config.toml")]
        assert len(warnings) == 1, (argv, result)
        assert warnings[0].startswith(f"leash: warning: config.toml cannot be used: {broken}:5: key 'approvals.ask'")
    approvals = FileBackend(home).approvals
    assert approvals.pending() == [] and {record.status for record in approvals.recent()} == {"allowed", "denied"}


def test_no_command_uses_a_value_of_the_broken_file(cli, home):
    StopProtocol(home)
    (home / "config.toml").write_text("[hands_off]\ndefault_hours = 2\n[tmux]\nsocket = 3\n")
    result = cli("hands-off", "ezra", "--json")
    assert result.code == 0 and f"{home}/config.toml:4: key 'tmux.socket'" in result.err, result
    lock = result.json()["lock"]  # for the default 24 hours, not the broken file's 2
    assert parse_iso(lock["expires_at"]) - parse_iso(lock["locked_at"]) == pytest.approx(24 * 3600, abs=5)


def test_a_broken_file_that_may_name_the_shared_store_refuses_in_one_line(cli, home):
    StopProtocol(home)
    (home / "config.toml").write_text('[store]\nurl = "postgresql://db/leash\n')
    result = cli("stop", "--all", "--reason", "x")
    assert result.code == 1, result
    error = [line for line in result.err.splitlines() if line.startswith("leash: error:")]
    assert len(error) == 1 and "may name the shared store" in error[0] and f"{home}/config.toml:2" in error[0]
    assert not StopProtocol(home).stops.snapshot().get("fleet")  # nothing filed in the home's files


def test_without_leashd_the_agent_is_told_what_to_mend_not_to_start_the_daemon(home, broken):
    out, _, _ = answer("pre-tool-use", payload("Bash", command="ls"), home=str(home), env={}, now=NOW)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"config.toml cannot be used: {broken}:5: key 'approvals.ask'" in reason, reason
    assert "leash doctor" in reason and "operator" in reason
    assert "start it" not in reason and "only `leash daemon`" not in reason


UNKNOWN_KEY = "[warrants]\ntimeout = 5\n[hands_off]\ndefault_hours = 2\n"


def test_an_unknown_key_is_a_warning_and_the_hooks_judge_by_the_rest(home):
    StopProtocol(home)
    (home / "config.toml").write_text(UNKNOWN_KEY)
    out, err, code = answer("pre-tool-use", payload("Bash", command="ls"), home=str(home), env={}, now=NOW)
    assert code == 0 and out.strip() == "" and "config_broken" not in err  # `ls` runs: no strictest floor
    assert Gate(home).config()["hands_off"]["default_hours"] == 2


def test_an_unknown_key_is_a_warning_on_every_command_and_a_doctor_finding(cli, home):
    StopProtocol(home)
    (home / "config.toml").write_text(UNKNOWN_KEY)
    said = f"{home}/config.toml:2: key 'warrants.timeout': unknown setting, ignored (did you mean 'timeouts'?)"
    for argv in operator_commands(home):
        result = cli(*argv)
        assert result.code == 0 and result.err.count(said) == 1, (argv, result)
        assert "cannot be used" not in result.err
    lock = cli("hands-off", "ezra", "--json").json()["lock"]  # the rest of the file is used: 2 hours
    assert parse_iso(lock["expires_at"]) - parse_iso(lock["locked_at"]) == pytest.approx(2 * 3600, abs=5)
    doctor = cli("doctor")
    assert doctor.code == 0, doctor
    assert f"warn  config_warning: {said}" in doctor.out.splitlines()
    assert "config.toml: valid" not in doctor.out and "config_broken" not in doctor.out
    status = cli("status")
    assert status.code == 0 and said in status.err, status
