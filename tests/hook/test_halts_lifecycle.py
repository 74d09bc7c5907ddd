"""The halt engine through its API and the `leash halts` CLI.

The seed's three usage examples, its output shapes, the auto-record rules, the
validation that changes nothing, the session state machine (active / halted /
paused, escalation, timeout), the stored three-strikes counter, list filters,
configuration, secret masking down to the bytes on disk, the fail-safe on a
broken database, the schema, archiving, and many writer processes at once.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from leash.core.base.clock import parse_iso
from leash.core.hook.gate import Gate
from leash.core.state.acklog import AckLog
from leash.core.state.halts import HaltInputError, HaltRefused, HaltStoreUnavailable
from leash.core.state.halts.api import (  # the file backend's own functions, over one home's halts.db
    acknowledge_halt,
    check_halt_conditions,
    get_session_halts,
    record_attempt,
    record_halt,
    session_state,
    stored_attempts,
    update_halt_config,
)
from leash.core.state.halts.store import MIGRATIONS, archive_old_events, open_store

from ..support.checkout import ROOT

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
REASON_KEYS = ("halt_type", "condition_name", "severity", "description")
DAY = 86_400
T0 = 1_790_000_000.0  # a fixed clock for the tests that move time

# ------------------------------------------------------------------ the seed's usage examples, verbatim
EXAMPLE_1 = {
    "session_token": "sess_abc123",
    "current_context": {
        "operation": "modify authentication logic",
        "target_files": ["src/auth.js"],
        "files_read": ["src/app.js"],
        "attempt_number": 1,
    },
    "proposed_changes": {
        "files_to_modify": ["src/auth.js"],
        "has_tests": False,
        "has_rollback_plan": False,
    },
}
EXAMPLE_2 = {
    "session_token": "sess_abc123",
    "task_id": "task_fix_bug_42",
    "current_context": {
        "operation": "fix null pointer exception",
        "attempt_number": 3,
        "previous_errors": [
            "TypeError: Cannot read property 'x' of null",
            "TypeError: Cannot read property 'x' of undefined",
        ],
    },
}
EXAMPLE_3_NOTES = "User confirmed they read the file in another session"


# ------------------------------------------------------------------ helpers
def db_path(home) -> str:
    return os.path.join(home, "halts.db")


def query(home, sql: str, params=()) -> list[tuple]:
    connection = sqlite3.connect(db_path(home))
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


def count(home, table: str = "halt_events") -> int:
    return query(home, f"SELECT count(*) FROM {table}")[0][0]


def snapshot(home) -> dict:
    """Every row that matters, to prove a refused call changed nothing."""
    tables = ("halt_events", "session_states", "attempts", "halt_conditions_config", "files_read")
    rows = {t: query(home, f"SELECT * FROM {t} ORDER BY 1, 2") for t in tables}
    log = os.path.join(home, "stop_ack_log.jsonl")
    rows["ack_log"] = open(log, "rb").read() if os.path.exists(log) else b""
    return rows


def halt(session="s", *, halt_type="execution", severity="high", description="something went wrong", **extra):
    return {"session_token": session, "halt_type": halt_type, "severity": severity, "description": description,
            **extra}


def names(result: dict) -> list[str]:
    return [r["condition_name"] for r in result["halt_reasons"]]


def log_entries(home, event: str) -> list[dict]:
    return [e for e in AckLog(home).read().entries if e["event"] == event]


# ------------------------------------------------------------------ the seed's examples
def test_example_1_code_safety_check(home):
    result = check_halt_conditions(json.loads(json.dumps(EXAMPLE_1)), home=home)
    assert result["should_halt"] is True
    assert [{k: r[k] for k in REASON_KEYS} for r in result["halt_reasons"]] == [
        {"halt_type": "code_safety", "condition_name": "modifying_unread_code", "severity": "critical",
         "description": "Attempting to modify src/auth.js which has not been read"},
        {"halt_type": "code_safety", "condition_name": "no_rollback_plan", "severity": "high",
         "description": "No rollback plan provided for changes"},
    ]
    assert result["highest_severity"] == "critical"
    assert result["context_annotations"]["files_not_read"] == ["src/auth.js"]


def test_example_2_three_strikes(home):
    result = check_halt_conditions(json.loads(json.dumps(EXAMPLE_2)), home=home)
    assert result["should_halt"] is True
    assert [{k: r[k] for k in REASON_KEYS} for r in result["halt_reasons"]] == [
        {"halt_type": "execution", "condition_name": "three_strikes", "severity": "high",
         "description": "Task has failed 3 times. Context may be contaminated."},
        {"halt_type": "execution", "condition_name": "repeated_errors", "severity": "medium",
         "description": "Similar errors across attempts suggest fundamental misunderstanding"},
    ]
    assert result["recommended_action"] == "HALT and escalate to user. Recommend fresh session."


def test_example_3_acknowledgment(home):
    recorded = record_halt(halt("sess_abc123", halt_type="code_safety", severity="critical",
                                condition_name="modifying_unread_code",
                                description="Attempting to modify src/auth.js which has not been read"), home=home)
    assert session_state(home, "sess_abc123") == "halted"
    pending = get_session_halts({"session_token": "sess_abc123"}, home=home)
    assert [h["halt_id"] for h in pending["halts"]] == [recorded["halt_id"]]
    result = acknowledge_halt({"session_token": "sess_abc123", "halt_id": recorded["halt_id"],
                               "resolution": "resolved", "resolution_notes": EXAMPLE_3_NOTES}, home=home)
    assert result["confirmed"] is True
    assert result["session_can_resume"] is True
    assert result["halt_id"] == recorded["halt_id"]
    assert session_state(home, "sess_abc123") == "active"
    assert query(home, "SELECT resolution, resolution_notes, acknowledged FROM halt_events") == [
        ("resolved", EXAMPLE_3_NOTES, 1)]


# ------------------------------------------------------------------ output shapes
def test_check_output_and_halt_reason_shapes(home):
    result = check_halt_conditions(json.loads(json.dumps(EXAMPLE_2)), home=home)
    assert set(result) == {"should_halt", "halt_reasons", "highest_severity", "recommended_action",
                           "context_annotations"}
    assert isinstance(result["should_halt"], bool) and isinstance(result["recommended_action"], str)
    assert result["highest_severity"] in ("low", "medium", "high", "critical")
    assert set(result["context_annotations"]) <= {"files_not_read", "conflicting_instructions",
                                                  "similar_previous_errors"}
    recorded, unrecorded = result["halt_reasons"]
    assert set(recorded) == {"halt_type", "condition_name", "severity", "description", "auto_recorded", "halt_id"}
    assert recorded["auto_recorded"] is True and UUID.match(recorded["halt_id"])
    assert set(unrecorded) == {"halt_type", "condition_name", "severity", "description", "auto_recorded"}
    assert unrecorded["auto_recorded"] is False
    assert query(home, "SELECT id, condition_name, auto_recorded FROM halt_events") == [
        (recorded["halt_id"], "three_strikes", 1)]
    # nothing fired: no annotations key at all
    quiet = check_halt_conditions({"session_token": "q", "current_context": {"operation": "read docs"}}, home=home)
    assert set(quiet) == {"should_halt", "halt_reasons", "highest_severity", "recommended_action"}
    assert quiet["halt_reasons"] == [] and quiet["should_halt"] is False


def test_record_ack_list_and_config_output_shapes(home):
    recorded = record_halt(halt(severity="medium"), home=home)
    assert set(recorded) <= {"halt_id", "recorded_at", "requires_acknowledgment", "escalation_triggered"}
    assert {"halt_id", "recorded_at", "requires_acknowledgment"} <= set(recorded)
    assert UUID.match(recorded["halt_id"])
    parse_iso(recorded["recorded_at"])
    assert recorded["requires_acknowledgment"] is True
    assert recorded.get("escalation_triggered", False) is False

    listed = get_session_halts({"session_token": "s"}, home=home)
    assert set(listed) == {"total_count", "halts", "unacknowledged_count"}
    assert (listed["total_count"], listed["unacknowledged_count"]) == (1, 1)
    event = listed["halts"][0]
    seed_required = {"halt_id", "halt_type", "severity", "description", "triggered_at", "acknowledged"}
    seed_optional = {"acknowledged_at", "resolution"}
    documented_extra = {"session_id", "task_id", "condition_name"}
    assert seed_required <= set(event) <= seed_required | seed_optional | documented_extra
    assert event["acknowledged"] is False and "acknowledged_at" not in event and "resolution" not in event
    assert event["halt_id"] == recorded["halt_id"] and event["triggered_at"] == recorded["recorded_at"]

    acked = acknowledge_halt({"session_token": "s", "halt_id": recorded["halt_id"], "resolution": "resolved"},
                             home=home)
    assert {"confirmed", "halt_id", "acknowledged_at", "session_can_resume"} <= set(acked)
    assert set(acked) <= {"confirmed", "halt_id", "acknowledged_at", "session_can_resume", "warnings"}
    parse_iso(acked["acknowledged_at"])
    event = get_session_halts({"session_token": "s", "include_acknowledged": True}, home=home)["halts"][0]
    assert event["acknowledged"] is True and event["resolution"] == "resolved"
    assert event["acknowledged_at"] == acked["acknowledged_at"]

    updated = update_halt_config({"condition_name": "three_strikes", "severity": "critical"}, home=home)
    assert set(updated) == {"updated", "previous_values", "current_values"}
    assert updated["updated"] is True
    assert updated["previous_values"]["severity"] == "high" and updated["current_values"]["severity"] == "critical"


# ------------------------------------------------------------------ auto-recording
def test_critical_and_high_are_recorded_by_default(home):
    result = check_halt_conditions(json.loads(json.dumps(EXAMPLE_1)), home=home)
    assert all(r["auto_recorded"] for r in result["halt_reasons"])
    stored = query(home, "SELECT condition_name, severity, auto_recorded, session_id FROM halt_events"
                         " ORDER BY condition_name")
    assert stored == [("modifying_unread_code", "critical", 1, "sess_abc123"),
                      ("no_rollback_plan", "high", 1, "sess_abc123")]


def test_high_is_not_recorded_with_record_high_false(home):
    result = check_halt_conditions(json.loads(json.dumps(EXAMPLE_1)), home=home, record_high=False)
    by_name = {r["condition_name"]: r for r in result["halt_reasons"]}
    assert by_name["modifying_unread_code"]["auto_recorded"] is True
    assert by_name["no_rollback_plan"]["auto_recorded"] is False and "halt_id" not in by_name["no_rollback_plan"]
    assert result["should_halt"] is True
    assert query(home, "SELECT condition_name FROM halt_events") == [("modifying_unread_code",)]


def test_a_single_medium_is_not_recorded_two_are(home):
    one = {"session_token": "m1", "current_context": {
        "operation": "tweak the page", "user_instructions": ["Add a TODO section to the page"]}}
    result = check_halt_conditions(one, home=home)
    assert names(result) == ["ambiguous_requirements"]
    assert result["halt_reasons"][0]["severity"] == "medium"
    assert result["should_halt"] is True and result["halt_reasons"][0]["auto_recorded"] is False
    assert not os.path.exists(db_path(home)) or count(home) == 0

    two = {"session_token": "m2", "current_context": {
        "operation": "tweak the page", "user_instructions": ["Add a TODO section to the page"],
        "previous_errors": ["TypeError: Cannot read property 'x' of null",
                            "TypeError: Cannot read property 'x' of undefined"]}}
    result = check_halt_conditions(two, home=home)
    mediums = [r for r in result["halt_reasons"] if r["severity"] == "medium"]
    assert len(mediums) == 2 and all(r["auto_recorded"] for r in mediums)
    assert sorted(query(home, "SELECT condition_name FROM halt_events WHERE session_id = 'm2'")) == [
        ("ambiguous_requirements",), ("repeated_errors",)]
    assert session_state(home, "m2") == "active"  # mediums do not halt the session


def test_low_is_never_recorded_and_does_not_halt(home):
    update_halt_config({"condition_name": "uncertainty_scale", "severity": "low"}, home=home)
    before = count(home)
    for attempt in (1, 2):
        result = check_halt_conditions({"session_token": "low", "current_context": {
            "operation": "guess", "uncertainty_score": 7, "attempt_number": attempt}}, home=home)
        assert [(r["condition_name"], r["severity"], r["auto_recorded"]) for r in result["halt_reasons"]] == [
            ("uncertainty_scale", "low", False)]
        assert result["should_halt"] is False and result["highest_severity"] == "low"
    assert count(home) == before == 0


@pytest.mark.parametrize("attempt, action", [(1, "retry"), (2, "try_alternative")])
def test_nothing_fired_recommends_retry_then_alternative(home, attempt, action):
    result = check_halt_conditions({"session_token": "s", "task_id": "t", "current_context": {
        "operation": "run the build", "attempt_number": attempt}}, home=home)
    assert result["should_halt"] is False and result["halt_reasons"] == []
    assert result["recommended_action"] == action


# ------------------------------------------------------------------ validation changes nothing
def _ack(halt_id, session="s", resolution="resolved", **extra):
    return {"session_token": session, "halt_id": halt_id, "resolution": resolution, **extra}


VALIDATION = {
    "bad halt_type": (HaltInputError, None, lambda home, hid: record_halt(halt(halt_type="vibes"), home=home)),
    "bad severity": (HaltInputError, None, lambda home, hid: record_halt(halt(severity="urgent"), home=home)),
    "description 4001": (HaltInputError, None,
                         lambda home, hid: record_halt(halt(description="d" * 4001), home=home)),
    "empty session": (HaltInputError, None, lambda home, hid: record_halt(halt(""), home=home)),
    "blank session": (HaltInputError, None, lambda home, hid: record_halt(halt("   "), home=home)),
    "ack other session": (HaltRefused, None, lambda home, hid: acknowledge_halt(_ack(hid, "other"), home=home)),
    "ack twice": (HaltRefused, lambda home, hid: acknowledge_halt(_ack(hid), home=home),
                  lambda home, hid: acknowledge_halt(_ack(hid, resolution="dismissed"), home=home)),
    "unknown halt id": (HaltRefused, None,
                        lambda home, hid: acknowledge_halt(_ack("00000000-0000-4000-8000-000000000000"), home=home)),
    "resolution timeout": (HaltInputError, None,
                           lambda home, hid: acknowledge_halt(_ack(hid, resolution="timeout"), home=home)),
    "resolution bogus": (HaltInputError, None,
                         lambda home, hid: acknowledge_halt(_ack(hid, resolution="ignored"), home=home)),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_bad_input_raises_and_changes_nothing(home, case):
    error, prepare, act = VALIDATION[case]
    halt_id = record_halt(halt(), home=home)["halt_id"]
    if prepare:
        prepare(home, halt_id)
    before = snapshot(home)
    with pytest.raises(error):
        act(home, halt_id)
    assert snapshot(home) == before
    assert count(home) == 1


def test_description_of_4000_characters_is_accepted(home):
    record_halt(halt(description="d" * 4000), home=home)
    assert query(home, "SELECT length(description) FROM halt_events") == [(4000,)]


# ------------------------------------------------------------------ lifecycle and session states
def test_record_high_halts_and_medium_does_not(home):
    assert session_state(home, "s") == "active"
    record_halt(halt("m", severity="medium"), home=home)
    assert session_state(home, "m") == "active"
    record_halt(halt("s", severity="high"), home=home)
    assert session_state(home, "s") == "halted"
    assert session_state(home, "m") == "active"


def test_ack_resolved_resumes_and_is_logged(home):
    halt_id = record_halt(halt(severity="high"), home=home)["halt_id"]
    result = acknowledge_halt(_ack(halt_id, resolution_notes="checked it"), home=home)
    assert result["session_can_resume"] is True and "warnings" not in result
    assert session_state(home, "s") == "active"
    lines = log_entries(home, "halt_ack")
    assert [line["halt_id"] for line in lines] == [halt_id]
    assert lines[0]["session_id"] == "s" and lines[0]["reason"] == "checked it"
    assert AckLog(home).verify().ok


def test_ack_of_one_halt_keeps_the_session_halted_while_another_stands(home):
    first = record_halt(halt(severity="high"), home=home)["halt_id"]
    second = record_halt(halt(severity="critical"), home=home)["halt_id"]
    result = acknowledge_halt(_ack(first), home=home)
    assert result["session_can_resume"] is False and any("halted" in w for w in result["warnings"])
    assert session_state(home, "s") == "halted"
    acknowledge_halt(_ack(second), home=home)
    assert session_state(home, "s") == "active"


def test_dismissing_a_critical_needs_continue_with_caution(home):
    halt_id = record_halt(halt(severity="critical"), home=home)["halt_id"]
    before = snapshot(home)
    with pytest.raises(HaltRefused):
        acknowledge_halt(_ack(halt_id, resolution="dismissed"), home=home)
    assert snapshot(home) == before
    assert session_state(home, "s") == "halted"
    result = acknowledge_halt(_ack(halt_id, resolution="dismissed", continue_with_caution=True), home=home)
    assert result["confirmed"] is True and result["session_can_resume"] is True
    assert result["warnings"] and "caution" in result["warnings"][0]
    assert session_state(home, "s") == "active"
    assert [line["halt_id"] for line in log_entries(home, "halt_dismiss")] == [halt_id]
    assert AckLog(home).verify().ok


def test_escalate_pauses_until_resolved(home):
    halt_id = record_halt(halt(severity="high"), home=home)["halt_id"]
    result = acknowledge_halt(_ack(halt_id, resolution="escalated"), home=home)
    assert result["session_can_resume"] is False
    assert session_state(home, "s") == "paused"
    pending = get_session_halts({"session_token": "s", "pending": True}, home=home)
    assert [(h["halt_id"], h["resolution"]) for h in pending["halts"]] == [(halt_id, "escalated")]
    assert [line["halt_id"] for line in log_entries(home, "halt_escalate")] == [halt_id]
    with pytest.raises(HaltRefused):  # escalating twice is refused
        acknowledge_halt(_ack(halt_id, resolution="escalated"), home=home)
    result = acknowledge_halt(_ack(halt_id, resolution="resolved"), home=home)
    assert result["session_can_resume"] is True
    assert session_state(home, "s") == "active"
    assert get_session_halts({"session_token": "s", "pending": True}, home=home)["total_count"] == 0
    assert [line["halt_id"] for line in log_entries(home, "halt_ack")] == [halt_id]
    assert AckLog(home).verify().ok


def test_auto_escalate_on_record_pauses_at_once(home):
    result = record_halt(halt(severity="medium", auto_escalate=True), home=home)
    assert result["escalation_triggered"] is True
    assert session_state(home, "s") == "paused"
    assert query(home, "SELECT resolution FROM halt_events") == [("escalated",)]
    assert [line["halt_id"] for line in log_entries(home, "halt_escalate")] == [result["halt_id"]]


def test_unacknowledged_halt_times_out_and_pauses(home):
    update_halt_config({"condition_name": "three_strikes", "escalate_after_minutes": 10}, home=home, now=T0)
    halt_id = record_halt(halt(condition_name="three_strikes"), home=home, now=T0)["halt_id"]
    early = get_session_halts({"session_token": "s"}, home=home, now=T0 + 599)
    assert "resolution" not in early["halts"][0]
    assert session_state(home, "s", now=T0 + 599) == "halted"
    assert log_entries(home, "halt_timeout") == []

    late = get_session_halts({"session_token": "s"}, home=home, now=T0 + 601)
    assert [(h["halt_id"], h.get("resolution")) for h in late["halts"]] == [(halt_id, "timeout")]
    assert query(home, "SELECT state FROM session_states WHERE session_id = 's'") == [("paused",)]
    assert session_state(home, "s", now=T0 + 602) == "paused"
    lines = log_entries(home, "halt_timeout")
    assert [line["halt_id"] for line in lines] == [halt_id]
    assert AckLog(home).verify().ok
    # the human it timed out to resolves it
    acknowledge_halt(_ack(halt_id), home=home, now=T0 + 700)
    assert session_state(home, "s", now=T0 + 701) == "active"


def test_a_halt_of_another_condition_does_not_time_out(home):
    update_halt_config({"condition_name": "three_strikes", "escalate_after_minutes": 10}, home=home, now=T0)
    record_halt(halt(condition_name="repeated_errors"), home=home, now=T0)
    assert session_state(home, "s", now=T0 + 6000) == "halted"


# ------------------------------------------------------------------ three strikes through stored counters
def _strikes(home, session="s", task="t", **current):
    data = {"session_token": session, "task_id": task, "current_context": {"operation": "build", **current}}
    return "three_strikes" in names(check_halt_conditions(data, home=home, record=False))


def test_stored_failures_fire_three_strikes(home):
    for expected in (1, 2):
        assert record_attempt(home, "s", "t", error="boom") == expected
    assert not _strikes(home)
    assert record_attempt(home, "s", "t", error="boom") == 3
    assert _strikes(home)
    assert not _strikes(home, task="another task")
    assert not _strikes(home, session="another session")


def test_a_success_resets_the_counter(home):
    for _ in range(3):
        record_attempt(home, "s", "t", error="boom")
    assert _strikes(home)
    assert record_attempt(home, "s", "t", error=None) == 0
    assert not _strikes(home)
    assert stored_attempts(home, "s", "t")[0] == 0


def test_try_again_resets_the_stored_counter(home):
    for _ in range(3):
        record_attempt(home, "s", "t", error="boom")
    assert stored_attempts(home, "s", "t")[0] == 3
    assert not _strikes(home, user_instructions=["That looks wrong, try again"])
    assert stored_attempts(home, "s", "t") == (0, [])
    assert not _strikes(home)


# ------------------------------------------------------------------ list filters
def test_get_session_halts_filters(home):
    ids = {}
    ids["crit"] = record_halt(halt("a", halt_type="security", severity="critical"), home=home, now=T0)["halt_id"]
    ids["high"] = record_halt(halt("a", halt_type="scope", severity="high"), home=home, now=T0 + 1)["halt_id"]
    ids["med"] = record_halt(halt("a", halt_type="execution", severity="medium"), home=home, now=T0 + 2)["halt_id"]
    ids["low"] = record_halt(halt("a", halt_type="uncertainty", severity="low"), home=home, now=T0 + 3)["halt_id"]
    ids["b"] = record_halt(halt("b", halt_type="scope", severity="high"), home=home, now=T0 + 4)["halt_id"]
    acknowledge_halt(_ack(ids["high"], "a"), home=home, now=T0 + 5)

    def get(**query_):
        return get_session_halts(query_, home=home, now=T0 + 10)

    default = get(session_token="a")
    assert [h["halt_id"] for h in default["halts"]] == [ids["crit"], ids["med"], ids["low"]]
    assert (default["total_count"], default["unacknowledged_count"]) == (3, 3)

    everything = get(session_token="a", include_acknowledged=True)
    assert [h["halt_id"] for h in everything["halts"]] == [ids["crit"], ids["high"], ids["med"], ids["low"]]
    assert (everything["total_count"], everything["unacknowledged_count"]) == (4, 3)

    scope = get(session_token="a", halt_type="scope", include_acknowledged=True)
    assert [h["halt_id"] for h in scope["halts"]] == [ids["high"]] and scope["total_count"] == 1
    assert get(session_token="a", halt_type="scope")["total_count"] == 0

    critical = get(session_token="a", severity="critical")
    assert [h["halt_id"] for h in critical["halts"]] == [ids["crit"]] and critical["total_count"] == 1

    first = get(session_token="a", limit=2)
    second = get(session_token="a", limit=2, offset=2)
    assert [h["halt_id"] for h in first["halts"]] == [ids["crit"], ids["med"]]
    assert [h["halt_id"] for h in second["halts"]] == [ids["low"]]
    assert first["total_count"] == second["total_count"] == 3
    assert get(session_token="a", offset=3)["halts"] == []

    every_session = get()
    assert {h["session_id"] for h in every_session["halts"]} == {"a", "b"}
    assert (every_session["total_count"], every_session["unacknowledged_count"]) == (4, 4)
    assert get(include_acknowledged=True)["total_count"] == 5

    assert get(session_token="nobody") == {"total_count": 0, "halts": [], "unacknowledged_count": 0}
    for bad in ({"severity": "urgent"}, {"halt_type": "vibes"}, {"limit": -1}, {"session_token": ""}):
        with pytest.raises(HaltInputError):
            get_session_halts(bad, home=home)


# ------------------------------------------------------------------ configuration
def test_update_halt_config_values_and_effect(home):
    result = update_halt_config({"condition_name": "three_strikes", "severity": "critical",
                                 "threshold": {"max_attempts": 5}}, home=home)
    assert result["updated"] is True
    assert result["previous_values"] == {"enabled": True, "severity": "high", "threshold": {"max_attempts": 3},
                                         "auto_escalate": False, "escalate_after_minutes": None}
    assert result["current_values"] == {"enabled": True, "severity": "critical", "threshold": {"max_attempts": 5},
                                         "auto_escalate": False, "escalate_after_minutes": None}
    assert query(home, "SELECT severity, threshold FROM halt_conditions_config WHERE condition_name ="
                       " 'three_strikes'") == [("critical", '{"max_attempts": 5}')]

    def fired(attempt):
        data = {"session_token": "s", "current_context": {"operation": "x", "attempt_number": attempt}}
        return [r["severity"] for r in check_halt_conditions(data, home=home, record=False)["halt_reasons"]
                if r["condition_name"] == "three_strikes"]

    assert fired(4) == [] and fired(5) == ["critical"]
    again = update_halt_config({"condition_name": "three_strikes", "severity": "critical"}, home=home)
    assert again["updated"] is False and again["previous_values"] == again["current_values"]

    update_halt_config({"condition_name": "three_strikes", "enabled": False}, home=home)
    assert fired(9) == []
    update_halt_config({"condition_name": "three_strikes", "enabled": True}, home=home)
    assert fired(9) == ["critical"]


def test_update_halt_config_refuses_bad_requests(home):
    update_halt_config({"condition_name": "three_strikes"}, home=home)  # creates the store
    before = snapshot(home)
    with pytest.raises(HaltRefused):
        update_halt_config({"condition_name": "no_such_condition", "severity": "high"}, home=home)
    for bad in ({"condition_name": "three_strikes", "severity": "urgent"},
                {"condition_name": "three_strikes", "enabled": "yes"},
                {"condition_name": "three_strikes", "escalate_after_minutes": -1},
                {"condition_name": "three_strikes", "colour": "red"}):
        with pytest.raises(HaltInputError):
            update_halt_config(bad, home=home)
    assert snapshot(home) == before


# ------------------------------------------------------------------ secrets never reach the disk
AWS_KEY = "AKIA" + "Q7WZ3K9LMB2X5V8R"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PASSWORD = "Tr0ub4dor-Horse-88"


def test_secrets_are_masked_in_the_database_and_the_ack_log(home):
    assert len(AWS_KEY) == 20 and len(GITHUB_TOKEN) == 40
    recorded = record_halt(halt(
        severity="critical", condition_name="secrets_exposure",
        description=f"agent printed {AWS_KEY} and pushed with {GITHUB_TOKEN}",
        context={"commands": [f"export AWS_ACCESS_KEY_ID={AWS_KEY}"],
                 "error_messages": [f"token {GITHUB_TOKEN} rejected"], "file_paths": ["src/.env"]},
        previous_error=f"403 for {AWS_KEY} / {GITHUB_TOKEN}"), home=home)
    acknowledge_halt(_ack(recorded["halt_id"], resolution="escalated",
                          resolution_notes=f"rotated; old password={PASSWORD} revoked"), home=home)
    description, context, previous, notes = query(
        home, "SELECT description, context, previous_error, resolution_notes FROM halt_events")[0]
    assert "[REDACTED:" in description and "[REDACTED:" in context and "[REDACTED:" in previous
    assert "[REDACTED:" in notes and "rotated" in notes
    assert json.loads(context)["file_paths"] == ["src/.env"]
    files = [db_path(home), db_path(home) + "-wal", os.path.join(home, "stop_ack_log.jsonl")]
    raw = {path: open(path, "rb").read() for path in files if os.path.exists(path)}
    assert db_path(home) in raw and os.path.join(home, "stop_ack_log.jsonl") in raw
    for path, data in raw.items():
        for secret in (AWS_KEY, GITHUB_TOKEN, PASSWORD):
            assert secret.encode() not in data, f"{secret[:6]}... found in {os.path.basename(path)}"


# ------------------------------------------------------------------ fail safe
def _break_store(home) -> bytes:
    os.makedirs(home, exist_ok=True)
    garbage = b"this is not a sqlite database \x00\xff" * 200
    with open(db_path(home), "wb") as handle:
        handle.write(garbage)
    return garbage


def test_a_broken_store_fails_safe(home):
    garbage = _break_store(home)
    result = check_halt_conditions({"session_token": "s", "current_context": {"operation": "ls"}}, home=home)
    assert result["should_halt"] is True and result["highest_severity"] == "critical"
    assert result["halt_reasons"][0]["severity"] == "critical"
    assert result["halt_reasons"][0]["description"].startswith("Halt check failed")
    assert os.path.exists(os.path.join(home, "halts_unavailable.jsonl"))

    verdict = Gate(home).check("s", "Bash", {"command": "ls"})
    assert verdict.allow is False and verdict.rule == "halts_unreadable"
    assert "leash doctor" in verdict.reason

    with pytest.raises(HaltStoreUnavailable):
        record_halt(halt(), home=home)
    with pytest.raises(HaltStoreUnavailable):
        acknowledge_halt(_ack("00000000-0000-4000-8000-000000000000"), home=home)
    with open(db_path(home), "rb") as handle:
        assert handle.read() == garbage  # the evidence is left alone


# ------------------------------------------------------------------ schema
SEED_INDEXES = ("idx_halt_events_session", "idx_halt_events_task", "idx_halt_events_type",
                "idx_halt_events_severity", "idx_halt_events_triggered", "idx_halt_events_acknowledged",
                "idx_halt_events_session_unack", "idx_halt_events_session_type")
SEED_DEFAULTS = {
    "modifying_unread_code": ("code_safety", "critical", {"requires_read": True}),
    "breaking_changes": ("code_safety", "high", {"requires_tests_pass": True}),
    "no_rollback_plan": ("code_safety", "high", {}),
    "out_of_scope": ("scope", "high", {}),
    "ambiguous_requirements": ("scope", "medium", {}),
    "conflicting_instructions": ("scope", "high", {}),
    "unauthorized_production": ("scope", "critical", {}),
    "test_production_mix": ("environment", "critical", {}),
    "credential_confusion": ("environment", "high", {}),
    "three_strikes": ("execution", "high", {"max_attempts": 3}),
    "repeated_errors": ("execution", "medium", {"similarity_threshold": 0.8}),
    "cascading_failures": ("execution", "high", {"max_chain_length": 3}),
    "secrets_exposure": ("security", "critical", {}),
    "privilege_escalation": ("security", "critical", {}),
    "uncertainty_scale": ("uncertainty", "high", {"threshold": 7}),
}


def test_schema(home):
    record_halt(halt(), home=home)
    assert query(home, "PRAGMA user_version") == [(len(MIGRATIONS),)]
    assert query(home, "PRAGMA journal_mode")[0][0].lower() == "wal"
    indexes = dict(query(home, "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
                               " AND tbl_name = 'halt_events'"))
    for name in SEED_INDEXES:
        assert name in indexes, name
    for name in ("idx_halt_events_acknowledged", "idx_halt_events_session_unack"):
        assert re.search(r"\bWHERE\s+acknowledged\s*=\s*(0|FALSE)\b", indexes[name], re.IGNORECASE), indexes[name]
    for name in ("idx_halt_events_session", "idx_halt_events_session_type"):
        assert "WHERE" not in indexes[name].upper()

    connection = sqlite3.connect(db_path(home))
    try:
        row = ("x1", "s", None, "execution", "urgent", "d", None, "t", 0, None, None, None, None, None, None,
               "c", "u", None, None, 0)
        with pytest.raises(sqlite3.IntegrityError):
            connection.execute(f"INSERT INTO halt_events VALUES ({', '.join('?' * len(row))})", row)
        bad_type = ("x2", "s", None, "vibes", "high") + row[5:]
        with pytest.raises(sqlite3.IntegrityError):
            connection.execute(f"INSERT INTO halt_events VALUES ({', '.join('?' * len(row))})", bad_type)
        good = ("x3", "s", None, "execution", "high") + row[5:]
        connection.execute(f"INSERT INTO halt_events VALUES ({', '.join('?' * len(row))})", good)
        connection.rollback()
    finally:
        connection.close()

    config = {name: (halt_type, severity, json.loads(threshold), enabled, auto, after)
              for name, halt_type, severity, threshold, enabled, auto, after in query(
                  home, "SELECT condition_name, halt_type, severity, threshold, enabled, auto_escalate,"
                        " escalate_after_minutes FROM halt_conditions_config")}
    assert len(config) == 22  # the seed's 20, supervisor_tampering and budget
    for name, (halt_type, severity, threshold) in SEED_DEFAULTS.items():
        assert config[name] == (halt_type, severity, threshold, 1, 0, None), name


# ------------------------------------------------------------------ archive
def test_archive_moves_settled_old_events_only(home):
    old, recent = T0 - 100 * DAY, T0 - 10 * DAY
    ids = {}
    for key, when in (("old_resolved", old), ("old_dismissed", old), ("old_unacked", old),
                      ("old_escalated", old), ("recent_resolved", recent)):
        ids[key] = record_halt(halt(description=key), home=home, now=when)["halt_id"]
    acknowledge_halt(_ack(ids["old_resolved"]), home=home, now=old + 60)
    acknowledge_halt(_ack(ids["old_dismissed"], resolution="dismissed"), home=home, now=old + 60)
    acknowledge_halt(_ack(ids["old_escalated"], resolution="escalated"), home=home, now=old + 60)
    acknowledge_halt(_ack(ids["recent_resolved"]), home=home, now=recent + 60)
    before = {r[0]: r for r in query(home, "SELECT * FROM halt_events")}

    connection = open_store(str(home))
    try:
        moved = archive_old_events(connection, now=T0, force=True)
    finally:
        connection.close()
    assert moved == 2
    archived = {r[0]: r for r in query(home, "SELECT * FROM halt_events_archive")}
    assert set(archived) == {ids["old_resolved"], ids["old_dismissed"]}
    assert all(archived[i] == before[i] for i in archived)  # every column kept
    assert {r[0] for r in query(home, "SELECT id FROM halt_events")} == {
        ids["old_unacked"], ids["old_escalated"], ids["recent_resolved"]}


# ------------------------------------------------------------------ many writer processes
WRITER = r"""
import sys
from leash.core.state.halts.api import record_halt
tag, rounds = sys.argv[1], int(sys.argv[2])
sys.stdin.readline()
for i in range(rounds):
    record_halt({"session_token": f"writer-{tag}", "halt_type": "execution", "severity": "high",
                 "description": f"writer {tag} halt {i}", "task_id": f"task-{i}"})
"""
WRITERS, ROUNDS = 6, 60


@pytest.mark.timeout(120)
def test_concurrent_writers_lose_nothing(home):
    env = dict(os.environ, LEASH_HOME=str(home))
    workers = [subprocess.Popen([sys.executable, "-c", WRITER, str(n), str(ROUNDS)], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for n in range(WRITERS)]
    for worker in workers:  # all started: release them together
        worker.stdin.write(b"go\n")
        worker.stdin.flush()
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=110)
        results.append((worker.returncode, err.decode(errors="replace")))
    for code, err in results:
        assert "database is locked" not in err
        assert code == 0, err[-2000:]
    assert count(home) == WRITERS * ROUNDS
    assert query(home, "SELECT count(DISTINCT id) FROM halt_events") == [(WRITERS * ROUNDS,)]
    assert sorted(query(home, "SELECT session_id, count(*) FROM halt_events GROUP BY session_id")) == [
        (f"writer-{n}", ROUNDS) for n in range(WRITERS)]
    assert query(home, "PRAGMA integrity_check") == [("ok",)]
    assert query(home, "SELECT count(*) FROM session_states WHERE state = 'halted'") == [(WRITERS,)]


# ------------------------------------------------------------------ the CLI
def test_cli_list_json_is_get_session_halts_output(cli, home):
    home.mkdir(mode=0o700, exist_ok=True)  # a read-only command never creates the home
    empty = cli("halts", "list", "--json")
    assert empty.code == 0 and empty.json() == {"total_count": 0, "halts": [], "unacknowledged_count": 0}
    recorded = cli("halts", "record", "--session", "s", "--type", "scope", "--severity", "high",
                   "--description", "left the sandbox", "--json")
    assert recorded.code == 0, recorded
    halt_id = recorded.json()["halt_id"]
    listed = cli("halts", "list", "--json")
    assert listed.code == 0
    body = listed.json()
    assert set(body) == {"total_count", "halts", "unacknowledged_count"}
    assert (body["total_count"], body["unacknowledged_count"]) == (1, 1)
    assert body["halts"][0]["halt_id"] == halt_id and body["halts"][0]["description"] == "left the sandbox"
    assert cli("halts", "list", "--session", "other", "--json").json()["total_count"] == 0


def test_cli_check_reads_stdin_and_exits_3_on_halt(cli, home):
    halted = cli("halts", "check", "--json", stdin=json.dumps(EXAMPLE_1).encode())
    assert halted.code == 3, halted
    body = halted.json()
    assert body["should_halt"] is True and names(body) == ["modifying_unread_code", "no_rollback_plan"]
    assert count(home) == 2
    calm = cli("halts", "check", "--json", stdin=json.dumps(
        {"session_token": "calm", "current_context": {"operation": "read the docs", "attempt_number": 1}}).encode())
    assert calm.code == 0, calm
    assert calm.json()["should_halt"] is False and calm.json()["recommended_action"] == "retry"
    unrecorded = cli("halts", "check", "--json", "--no-record", stdin=json.dumps(EXAMPLE_1).encode())
    assert unrecorded.code == 3 and count(home) == 2
    assert cli("halts", "check", "--json", stdin=b"not json").code == 2
    assert cli("halts", "check", "--json", stdin=b'{"current_context": {}}').code == 2


def test_cli_ack_dismiss_escalate_exit_codes(cli, home):
    def record(severity):
        done = cli("halts", "record", "--session", "s", "--type", "security", "--severity", severity,
                   "--description", f"a {severity} halt", "--json")
        assert done.code == 0, done
        return done.json()["halt_id"]

    high, critical, other = record("high"), record("critical"), record("high")
    assert cli("halts", "ack", high).code == 0
    assert cli("halts", "ack", high).code == 1  # already resolved
    refused = cli("halts", "dismiss", critical)
    assert refused.code == 1 and "add --caution" in refused.err
    assert session_state(home, "s") == "halted"
    assert cli("halts", "dismiss", critical, "--caution", "--note", "accepted").code == 0
    assert cli("halts", "escalate", other).code == 0
    assert session_state(home, "s") == "paused"
    assert cli("halts", "ack", other, "--session", "someone-else").code == 1
    assert cli("halts", "ack", "00000000-0000-4000-8000-000000000000").code == 1
    assert cli("halts", "ack").code == 2
    assert cli("halts", "dismiss", critical, "--bogus-flag").code == 2
    assert cli("halts", "ack", other, "--json").json()["session_can_resume"] is True
    assert session_state(home, "s") == "active"
    events = [(e["event"], e["halt_id"]) for e in AckLog(home).read().entries if e["event"].startswith("halt_")]
    assert events == [("halt_recorded", high), ("halt_recorded", critical), ("halt_recorded", other),
                      ("halt_ack", high), ("halt_dismiss", critical), ("halt_escalate", other),
                      ("halt_ack", other)]


def test_cli_config_and_record_usage_errors(cli, home):
    bad = cli("halts", "config", "three_strikes", "--severity", "bogus")
    assert bad.code == 2 and bad.err.startswith("leash: error:")
    assert cli("halts", "config", "no_such_condition", "--severity", "high").code == 2
    changed = cli("halts", "config", "three_strikes", "--severity", "critical", "--json")
    assert changed.code == 0 and changed.json()["current_values"]["severity"] == "critical"
    assert cli("halts", "config", "three_strikes", "--escalate-after", "soon").code == 2
    record = cli("halts", "record", "--session", "s", "--type", "bogus", "--severity", "high",
                 "--description", "d")
    assert record.code == 2 and "halt_type" in record.err
    assert cli("halts", "record", "--session", "s", "--type", "scope", "--severity", "high").code == 2
    assert count(home) == 0
