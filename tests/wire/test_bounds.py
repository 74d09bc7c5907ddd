"""Bounds that fail closed: oversize hook input, halt thresholds, breaker names."""
from __future__ import annotations

import json
import sqlite3

import pytest

from leash.core.state.halts import api
from leash.core.wire.hookio import STDIN_LIMIT_BYTES

from ..support.pretooluse import assert_denied, payload


# ---------------------------------------------------------------- hook input size
def oversize_payload() -> bytes:
    head = b'{"session_id": "sess_123", "tool_name": "Bash", "tool_input": {"command": "echo '
    return head + b"a" * (STDIN_LIMIT_BYTES + 1 - len(head)) + b'"}}'


def test_oversize_input_is_denied_on_pre_tool_use(leash_proc):
    result = leash_proc("hook", "pre-tool-use", stdin=oversize_payload())
    reason = assert_denied(result, "larger than 16 MiB")
    assert "denied" in reason
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_input_at_the_limit_is_still_judged(leash):
    body = payload()
    padded = body[:-1] + b', "padding": "' + b"p" * (STDIN_LIMIT_BYTES - len(body) - 15) + b'"}'
    assert len(padded) <= STDIN_LIMIT_BYTES
    result = leash("hook", "pre-tool-use", stdin=padded)
    assert (result.code, result.out) == (0, ""), result


def test_oversize_input_on_post_tool_use_is_one_line_and_exit_1(leash):
    result = leash("hook", "post-tool-use", stdin=oversize_payload())
    assert (result.code, result.out) == (1, "")
    assert result.err.count("\n") == 1 and "larger than 16 MiB" in result.err


# ---------------------------------------------------------------- halt thresholds
@pytest.mark.parametrize("name, threshold", [
    ("three_strikes", '{"max_attempts": "five"}'),
    ("three_strikes", '{"max_attempts": -1}'),
    ("three_strikes", '{"max_attempts": 0}'),
    ("three_strikes", '{"max_attempts": 2.5}'),
    ("three_strikes", '{"max_attempts": true}'),
    ("three_strikes", '{"max_attemps": 5}'),
    ("repeated_errors", '{"similarity_threshold": 7}'),
    ("repeated_errors", '{"similarity_threshold": NaN}'),
    ("cascading_failures", '{"max_chain_length": 1}'),
    ("uncertainty_scale", '{"threshold": 0}'),
    ("uncertainty_scale", '{"threshold": "high"}'),
    ("modifying_unread_code", '{"requires_read": "no"}'),
    ("unknown_commands", '{"allow": "make"}'),
    ("supervisor_tampering", '{"supervisor_names": []}'),
    ("privilege_escalation", '{"supervisor_names": ["leash"]}'),
    ("secrets_exposure", '{"anything": 1}'),
])
def test_bad_thresholds_are_refused_and_nothing_is_stored(cli, home, name, threshold):
    before = cli("halts", "config", name, "--json").json()
    result = cli("halts", "config", name, "--threshold", threshold)
    assert result.code == 2, result
    assert result.err.count("\n") == 1 and "threshold" in result.err and result.out == ""
    assert cli("halts", "config", name, "--json").json() == before


@pytest.mark.parametrize("minutes", ["99999999999", "525601", "-5", "soon"])
def test_escalate_after_out_of_range_is_refused(cli, home, minutes):
    result = cli("halts", "config", "three_strikes", "--escalate-after", minutes)
    assert result.code == 2 and result.err.count("\n") == 1
    assert cli("halts", "config", "three_strikes", "--json").json()[0]["escalate_after_minutes"] is None


def test_good_thresholds_are_stored(cli, home):
    assert cli("halts", "config", "three_strikes", "--threshold", '{"max_attempts": 5}',
               "--escalate-after", "525600").code == 0
    assert cli("halts", "config", "unknown_commands", "--threshold", '{"allow": ["make", "terraform"]}').code == 0
    rows = {r["condition_name"]: r for r in cli("halts", "config", "--json").json()}
    assert rows["three_strikes"]["threshold"] == {"max_attempts": 5}
    assert rows["three_strikes"]["escalate_after_minutes"] == 525600
    assert rows["unknown_commands"]["threshold"] == {"allow": ["make", "terraform"]}


def test_every_default_threshold_is_valid_and_every_spec_names_a_condition():
    from leash.core.policy.halts.conditions import load_all
    from leash.core.policy.halts.thresholds import SPECS, validate
    from leash.core.state.halts.store import DEFAULT_CONDITIONS

    for name, _type, _severity, threshold in DEFAULT_CONDITIONS:
        validate(name, threshold)
    assert set(SPECS) <= set(load_all())


def store_bad_values(home) -> None:
    api.list_config(home=home)  # creates halts.db with the defaults
    with sqlite3.connect(home / "halts.db") as db:
        db.execute("UPDATE halt_conditions_config SET threshold = ?, escalate_after_minutes = ?"
                   " WHERE condition_name = 'three_strikes'", ('{"max_attempts": "five"}', 99999999999))
        db.execute("UPDATE halt_conditions_config SET threshold = ? WHERE condition_name = 'uncertainty_scale'",
                   ('{"threshold": -1}',))
        db.execute("UPDATE halt_conditions_config SET threshold = ? WHERE condition_name = 'cascading_failures'",
                   ('"three"',))


def test_a_bad_stored_threshold_does_not_halt_every_call(cli, leash, home):
    store_bad_values(home)
    for command in ("ls", "git status", "pytest -q"):
        result = leash("hook", "pre-tool-use", stdin=payload("sess_1", tool_input={"command": command}))
        assert (result.code, result.out) == (0, ""), result
    verdict = api.check_halt_conditions({"session_token": "sess_2", "operation_type": "bash",
                                         "proposed_changes": {"commands": ["ls"]}}, home=home, record=False)
    assert verdict["should_halt"] is False, verdict
    recorded = cli("halts", "record", "--session", "sess_3", "--type", "execution", "--severity", "high",
                   "--condition", "three_strikes", "--description", "failed three times")
    assert recorded.code == 0, recorded


def test_doctor_reports_bad_stored_thresholds_and_repair_stores_defaults(cli, home):
    store_bad_values(home)
    report = cli("doctor")
    assert "warn  halts config: three_strikes.max_attempts" in report.out
    assert "three_strikes.escalate_after_minutes" in report.out
    assert "uncertainty_scale.threshold" in report.out and "cascading_failures threshold" in report.out
    assert "fixed halts config" in cli("doctor", "--repair").out
    rows = {r["condition_name"]: r for r in cli("halts", "config", "--json").json()}
    assert rows["three_strikes"]["threshold"] == {"max_attempts": 3}
    assert rows["three_strikes"]["escalate_after_minutes"] is None
    assert rows["uncertainty_scale"]["threshold"] == {"threshold": 7}
    assert "halts config" not in cli("doctor").out


# ---------------------------------------------------------------- breaker names
@pytest.mark.parametrize("name", ["stops.json", "hands_off_registry.json", "sessions.json", "halts.db",
                                  "halts.db-wal", "stop_ack_log.jsonl", "stop_ack_log.jsonl.torn",
                                  "acklog.head", "warrants", "dogs", "kennel.json", "replies.db",
                                  "config.toml", "run", "serve.token", "stops.json.lock", "gateway.lock",
                                  "stops.json.corrupt-20260101T000000Z", "STOPS.JSON",
                                  ".hidden", "a/b", "..", "", "x" * 129, "sp ace"])
def test_breaker_names_that_are_not_plain_or_are_leash_s_own_are_refused(cli, home, name):
    result = cli("loop", "check-and-record", name)
    assert result.code == 2, result
    assert result.err.count("\n") == 1 and "breaker name" in result.err
    assert not home.exists() or all(not p.is_dir() or p.name in ("dogs", "warrants") for p in home.iterdir())


def test_a_refused_breaker_name_leaves_the_fleet_working(cli, leash, home):
    assert cli("loop", "check-and-record", "stops.json").code == 2
    assert cli("stop", "--force", "sess_123", "--reason", "held").code == 0
    assert (home / "stops.json").is_file()
    assert_denied(leash("hook", "pre-tool-use", stdin=payload("sess_123")), "held")
    assert leash("hook", "pre-tool-use", stdin=payload("sess_other")).out == ""
    assert cli("loop", "check-and-record", "gateway").code == 0
    assert cli("loop", "status", "--json").json()[0]["name"] == "gateway"


def test_doctor_repair_moves_a_directory_away_from_a_state_file(cli, leash, home):
    assert cli("stop", "--force", "sess_123", "--reason", "held").code == 0
    (home / "stops.json").unlink()
    (home / "stops.json").mkdir()
    (home / "stops.json" / "restart_loop.json").write_text('{"boots": [1]}')
    report = cli("doctor")
    assert report.code == 3 and "fail  stops.json" in report.out
    repaired = cli("doctor", "--repair")
    assert "fixed stops.json" in repaired.out, repaired
    (moved,) = home.glob("stops.json.corrupt-*")
    assert (moved / "restart_loop.json").read_text() == '{"boots": [1]}'  # nothing is deleted
    assert not (home / "stops.json").is_dir()
    assert leash("hook", "pre-tool-use", stdin=payload("sess_other")).out == ""
    assert cli("stop", "--force", "sess_456", "--reason", "again").code == 0
    assert_denied(leash("hook", "pre-tool-use", stdin=payload("sess_456")), "again")
    events = [json.loads(line)["event"] for line in (home / "stop_ack_log.jsonl").read_text().splitlines()]
    assert "state_quarantined" in events
