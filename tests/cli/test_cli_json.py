"""``--json`` on ``leash doctor`` and every action: one JSON object on
stdout — ``ok``, ``command``, ``exit_code`` and what happened — or, on an
error, ``ok`` false, the ``error`` and the same exit code as without it."""
from __future__ import annotations

import json

import pytest

from leash.core.state.halts import api as halts
from leash.core.store.files import FileBackend


def one_object(result, code: int) -> dict:
    assert result.code == code, result
    lines = result.out.strip().splitlines()
    value = json.loads(result.out)
    assert isinstance(value, dict), result
    assert value["exit_code"] == code and value["ok"] is (code == 0), value
    assert len(lines) == 1 or result.out.strip().startswith("{\n"), result  # one object, compact or indented
    return value


def test_stop_resume_and_the_fleet(cli):
    stopped = one_object(cli("stop", "--force", "s1", "--reason", "look first", "--json"), 0)
    assert stopped["command"] == "stop" and stopped["action"] == "stop" and stopped["session"] == "s1"
    assert stopped["stop"]["reason"] == "look first" and "stopped_at" in stopped["stop"]
    assert "nothing answers" in stopped["warning"]  # the stderr warning is in the object too
    full = one_object(cli("stop", "--force", "s2", "--entity", "ezra", "--hours", "2", "--json"), 0)
    assert full["action"] == "full_stop" and full["entity"] == "ezra" and "expires_at" in full["lock"]
    fleet = one_object(cli("stop", "--all", "--reason", "window", "--json"), 0)
    assert fleet["action"] == "fleet_stop" and fleet["stop"]["reason"] == "window"
    lifted = one_object(cli("resume", "--all", "--json"), 0)
    assert lifted["action"] == "fleet_resume" and lifted["still_stopped"] == ["s1", "s2"]
    resumed = one_object(cli("resume", "s1", "--json"), 0)
    assert resumed["command"] == "resume" and resumed["session"] == "s1"


def test_an_error_is_an_object_with_the_exit_code_unchanged(cli):
    plain = cli("resume", "nobody")
    refused = one_object(cli("resume", "nobody", "--json"), plain.code)
    assert plain.code == 1 and refused["command"] == "resume"
    assert refused["error"] == "session 'nobody' is not stopped"
    assert refused["error"] in cli("resume", "nobody", "--json").err  # stderr keeps its one line
    usage = one_object(cli("stop", "--force", "s1", "--json", "--hours", "2"), 2)
    assert "--entity" in usage["error"]
    unparsed = one_object(cli("stop", "--force", "s1", "--json", "--bogus"), 2)
    assert unparsed["command"] == "stop" and "--bogus" in unparsed["error"]


def test_hands_off_and_release(cli):
    locked = one_object(cli("hands-off", "ezra", "--hours", "1", "--reason", "migrating", "--json"), 0)
    assert locked["command"] == "hands-off" and locked["entity"] == "ezra" and locked["lock"]["reason"] == "migrating"
    released = one_object(cli("release", "ezra", "--json"), 0)
    assert released["action"] == "release" and released["entity"] == "ezra"
    again = one_object(cli("release", "ezra", "--json"), 1)
    assert "not hands-off" in again["error"]


def test_warrant_file_and_pardon(cli):
    filed = one_object(cli("warrant", "file", "agent-7", "--reason", "silent", "--json"), 0)
    assert filed["command"] == "warrant file" and filed["created"] is True and filed["kennel_running"] is False
    warrant_id = filed["warrant"]["id"]
    pardoned = one_object(cli("warrant", "pardon", warrant_id, "--json"), 0)
    assert pardoned["command"] == "warrant pardon" and pardoned["id"] == warrant_id and pardoned["pardoned"] is True
    assert one_object(cli("warrant", "pardon", "nobody", "--json"), 1)["error"] == "no warrant nobody"


def test_halts_ack_and_dismiss(cli, home):
    halt = halts.record_halt({"session_token": "s1", "halt_type": "security", "severity": "high",
                              "description": "x"}, home=home)["halt_id"]
    acked = one_object(cli("halts", "ack", halt, "--json"), 0)
    assert acked["command"] == "halts ack" and acked["session_can_resume"] is True  # the seed's keys stay
    assert one_object(cli("halts", "dismiss", "0" * 36, "--json"), 1)["command"] == "halts dismiss"


@pytest.mark.parametrize("verb, status", [("allow", "allowed"), ("deny", "denied")])
def test_approvals_allow_and_deny(cli, home, verb, status):
    opened = FileBackend(home).approvals.request("s1", "Bash", {"command": "git push"}, timeout_s=60)
    answered = one_object(cli("approvals", verb, opened.id, "--json"), 0)
    assert answered["command"] == f"approvals {verb}" and answered["approval"]["status"] == status
    second = one_object(cli("approvals", verb, opened.id, "--json"), 1)
    assert second["command"] == f"approvals {verb}"


def test_loop_check_and_reset(cli):
    checked = one_object(cli("loop", "check-and-record", "gw", "--max", "1", "--json"), 3)
    assert checked["tripped"] is True and checked["command"] == "loop check-and-record"
    assert one_object(cli("loop", "reset", "gw", "--json"), 0)["action"] == "loop_reset"


def test_doctor(cli, home):
    cli("stop", "--force", "s1")
    found = one_object(cli("doctor", "--json"), 0)
    assert found["command"] == "doctor" and found["problems"] == 0 and found["repair"] is False
    assert {"level", "subject", "message"} == set(found["findings"][0])
    assert any(f["subject"] == "stops.json" and f["level"] == "ok" for f in found["findings"])
    (home / "stops.json").write_text("{not json")
    broken = one_object(cli("doctor", "--json"), 3)
    assert broken["problems"] >= 1 and any(f["level"] == "fail" for f in broken["findings"])
