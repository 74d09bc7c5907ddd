"""State is a cache of the ack log: removing, emptying, replacing or editing a
state file lifts no stop, no lock and no halt, and ``leash log verify`` /
``leash doctor`` see what was done to the log and the stores."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from leash.core.hook.gate import Gate
from leash.core.state.acklog import AckLog
from leash.core.state.halts.api import record_halt, session_state
from leash.core.views.protocol import StopProtocol

NOW = 1_800_000_000.0


def stopped_home(home) -> StopProtocol:
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "agent-1", "explicit halt", now=NOW)
    protocol.hands_off("ezra", hours=4, reason="deploy", source="ops", now=NOW)
    return protocol


@pytest.mark.parametrize("tamper", [
    lambda path: path.unlink(),
    lambda path: path.write_text("{}"),
    lambda path: path.write_text(""),
    lambda path: path.write_text('{"sessions": {}, "fleet": null}'),
    lambda path: path.write_text("not json"),
    lambda path: path.write_text(path.read_text().replace('"sessions"', '"Sessions"')),
    lambda path: path.write_text(json.dumps({**json.loads(path.read_text()), "sessions": {}, "stops": {}})),
], ids=["rm", "echo-empty-object", "truncate", "valid-but-empty", "garbage", "key-renamed", "unknown-key"])
def test_no_edit_of_stops_json_lifts_a_stop(home, tamper):
    stopped_home(home)
    tamper(home / "stops.json")
    verdict = Gate(home).check("agent-1", "Bash", {"command": "ls"}, now=NOW + 1)
    assert verdict.rule == "session_stop", verdict
    assert [e for e in AckLog(home).read().entries if e["event"] == "state_rebuilt"]


@pytest.mark.parametrize("tamper", [
    lambda path: path.unlink(),
    lambda path: path.write_text("{}"),
    lambda path: path.write_text("[]"),
], ids=["rm", "echo-empty-object", "list"])
def test_no_edit_of_the_hands_off_registry_lifts_a_lock(home, tamper):
    stopped_home(home)
    tamper(home / "hands_off_registry.json")
    assert StopProtocol(home).is_hands_off("ezra", now=NOW + 1)
    assert Gate(home).check("ezra", now=NOW + 1).rule == "hands_off"


def test_an_older_copy_put_back_is_caught_by_its_head(home):
    protocol = StopProtocol(home)
    protocol.stop_fleet("first", source="ops", now=NOW)
    before = (home / "stops.json").read_bytes()
    protocol.resume_fleet("second", source="ops", now=NOW + 1)
    protocol.acknowledge_stop("ops", "agent-2", "later", now=NOW + 2)
    (home / "stops.json").write_bytes(before)  # the fleet stopped, agent-2 not: an old, valid file
    gate = Gate(home)
    assert gate.check("agent-2", now=NOW + 3).rule == "session_stop"
    assert gate.check("agent-9", now=NOW + 3).allow


def test_a_failed_append_leaves_the_state_untouched(home, monkeypatch):
    protocol = stopped_home(home)
    before = (home / "stops.json").read_bytes()

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(AckLog, "append", refuse)
    with pytest.raises(OSError):
        protocol.resume("agent-1", source="ops", now=NOW + 1)
    with pytest.raises(OSError):
        protocol.release("ezra", source="ops", now=NOW + 1)
    monkeypatch.undo()
    assert (home / "stops.json").read_bytes() == before
    assert StopProtocol(home).is_stopped("agent-1", now=NOW + 2)
    assert StopProtocol(home).is_hands_off("ezra", now=NOW + 2)


def test_a_halt_survives_halts_db_removal_and_a_session_states_edit(home):
    stopped_home(home)
    recorded = record_halt({"session_token": "worker", "halt_type": "security", "severity": "critical",
                            "description": "left the sandbox"}, home=home, now=NOW)
    assert session_state(home, "worker", now=NOW) == "halted"
    with sqlite3.connect(home / "halts.db") as db:
        db.execute("UPDATE session_states SET state = 'active'")
    assert session_state(home, "worker", now=NOW) == "halted"
    assert Gate(home).check("worker", "Bash", {"command": "touch x"}, now=NOW).rule == "session_halted"
    for suffix in ("", "-wal", "-shm"):
        (home / f"halts.db{suffix}").unlink(missing_ok=True)
    assert Gate(home).check("worker", "Bash", {"command": "touch x"}, now=NOW).rule == "session_halted"
    with sqlite3.connect(home / "halts.db") as db:
        [(description,)] = db.execute("SELECT description FROM halt_events WHERE id = ?",
                                      (recorded["halt_id"],)).fetchall()
    assert description == "left the sandbox"


def test_doctor_finds_an_edit_that_kept_the_head_and_repair_restores_the_log(home, cli):
    stopped_home(home)
    record_halt({"session_token": "worker", "halt_type": "security", "severity": "high",
                 "description": "odd"}, home=home, now=NOW)
    stops = json.loads((home / "stops.json").read_text())
    stops["sessions"].clear()
    (home / "stops.json").write_text(json.dumps(stops))  # head kept: only a comparison can see it
    with sqlite3.connect(home / "halts.db") as db:
        db.execute("UPDATE halt_events SET acknowledged = 1, resolution = 'resolved'")
    found = cli("doctor")
    assert found.code == 3, found
    assert "stops.json" in found.out and "differs from the replay" in found.out
    assert "halts.db" in found.out and "resolved in halts.db, pending in the ack log" in found.out
    fixed = cli("doctor", "--repair")
    assert fixed.code == 0, fixed
    assert StopProtocol(home).is_stopped("agent-1")
    assert session_state(home, "worker") == "halted"
    assert cli("doctor").code == 0


def test_log_verify_finds_a_cut_a_deletion_and_a_rechained_rewrite(home, cli, tmp_path):
    stopped_home(home)
    log = home / "stop_ack_log.jsonl"
    assert cli("log", "verify").code == 0
    lines = log.read_bytes().splitlines(keepends=True)
    saved = log.read_bytes()

    log.write_bytes(b"".join(lines[:-1]))  # the last line cut off: the chain alone still holds
    cut = cli("log", "verify")
    assert cut.code == 3 and "cut" in cut.err

    log.unlink()
    gone = cli("log", "verify")
    assert gone.code == 3 and "deleted" in gone.err

    # Rewritten from scratch with a valid chain: only the head, or an anchor kept
    # outside the home, disagrees.
    log.write_bytes(saved)
    anchor = AckLog(home).tail(1)[0]
    fresh = AckLog(tmp_path / "elsewhere")
    for number in range(len(lines)):
        fresh.append("stop_ack", source="ops", session_id=f"other-{number}", now=NOW)
    shutil.copy(fresh.path, log)
    rechained = cli("log", "verify")
    assert rechained.code == 3 and "rewritten" in rechained.err, rechained
    (home / "acklog.head").unlink()
    anchored = cli("log", "verify", "--anchor", f"{anchor['seq']}:{anchor['hash']}")
    assert anchored.code == 3 and "rewritten" in anchored.err, anchored
    assert cli("log", "verify", "--anchor", "3:nothex").code == 2


def test_a_cut_log_fails_closed(home):
    stopped_home(home)
    log = home / "stop_ack_log.jsonl"
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:1]))
    (home / "hands_off_registry.json").unlink()
    verdict = Gate(home).check("someone", now=NOW + 1)
    assert not verdict.allow and "leash doctor" in verdict.reason


def test_the_anchor_command_is_handed_every_head(home, tmp_path):
    home.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "anchored"
    (home / "config.toml").write_text(
        f'[acklog]\nanchor_command = ["sh", "-c", "cat >> {target}", "anchor", "{{seq}}"]\n')
    protocol = StopProtocol(home)
    line = protocol.acknowledge_stop("ops", "a", "x", now=NOW)
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (target.exists() and target.read_text().strip()):
        time.sleep(0.02)
    assert json.loads(target.read_text().splitlines()[0]) == {"seq": 1, "hash": AckLog(home).tail(1)[0]["hash"]}
    assert line["stopped_at"]


def test_hands_off_never_shortens_a_lock_and_bad_patterns_are_refused(home, cli, tmp_path):
    assert cli("hands-off", "ezra", "--hours", "8").code == 0
    shorter = cli("hands-off", "ezra", "--hours", "1")
    assert shorter.code == 0 and "later expiry is kept" in shorter.out
    lock = StopProtocol(home).hands_off_registry.lock_of("ezra")
    assert lock["expires_at"] == json.loads(cli("status", "--json").out)["hands_off"][0]["expires_at"]
    bad = cli("hands-off", "path:src/[]x")
    assert bad.code == 2 and "not a valid glob" in bad.err
    assert Gate(home).check("anyone", "Edit", {"file_path": "src/app.py"}, cwd=str(tmp_path)).allow
