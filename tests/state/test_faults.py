"""Faults: writers killed mid-write, torn log tails, and corrupt state files.

Each corrupt-file test follows one row of the fail-policy table:

* stops.json unreadable: fail closed (every tool call denied, pointing at
  ``leash doctor``); the next write or ``leash doctor --repair`` quarantines it
  and rebuilds the stops from the ack log.
* hands_off_registry.json / sessions.json unreadable: quarantine, start empty,
  log ``state_quarantined`` once.
* ack log changed: ``verify`` names the first broken line.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from leash.core.base.home import ensure_home
from leash.core.base.statefile import read_json
from leash.core.hook.gate import Gate
from leash.core.hook.hooks import pre_tool_use
from leash.core.state.acklog import ACK_LOG_NAME, AckLog
from leash.core.state.handsoff import REGISTRY_NAME, HandsOffRegistry
from leash.core.state.sessions import SESSIONS_NAME
from leash.core.state.stop import STOPS_NAME, StopRegistry
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT

STATE_FILES = (STOPS_NAME, REGISTRY_NAME, SESSIONS_NAME)
GARBAGE = b'{not json\x00\xff "half a record'


def hook_payload(session_id: str, *, tool: str = "Bash", tool_input: dict | None = None, cwd: str = "/tmp") -> bytes:
    return json.dumps({"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input if tool_input is not None else {"command": "ls"},
                       "cwd": cwd}).encode()


def deny_reason(stdout: str) -> str:
    output = json.loads(stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == "deny"
    return output["permissionDecisionReason"]


def events(home, event: str) -> list[dict]:
    return AckLog(home).read(event=event).entries


def corrupt_copies(home, name: str) -> list:
    return sorted(home.glob(f"{name}.corrupt-*"))


def log_lines(home) -> list[bytes]:
    return (home / ACK_LOG_NAME).read_bytes().splitlines()


# ------------------------------------------------------------------ SIGKILL
# Loops over every kind of write with fresh ids until it is killed.
WRITER = r"""
import sys
from leash.core.views.protocol import StopProtocol
home, tag = sys.argv[1], sys.argv[2]
protocol = StopProtocol(home)
print("ready", flush=True)
i = 0
while True:
    sid = f"{tag}-{i}"
    protocol.acknowledge_stop("killer", sid, "kill test")
    protocol.hands_off(f"ent-{sid}", source="killer", hours=1)
    protocol.release(f"ent-{sid}", source="killer")
    protocol.sessions.observe(sid, cwd="/tmp", tool="Bash")
    i += 1
"""


def assert_state_intact(home) -> AckLog:
    for name in STATE_FILES:
        path = home / name
        if path.exists():
            assert isinstance(json.loads(path.read_bytes()), dict), name
    log = AckLog(home)
    report = log.verify()
    assert report.ok, report  # a torn tail would be skipped and counted, not a break
    read = log.read()
    assert read.unreadable_lines == 0
    # Stops are logged before they are written: a logged stop is in force for
    # every reader, which rebuilds a file that a kill left behind the log.
    stops = StopRegistry(home).snapshot()["sessions"]
    logged = {e["session_id"] for e in read.entries if e["event"] == "stop_ack"}
    assert logged <= set(stops), sorted(logged - set(stops))[:5]
    return log


@pytest.mark.timeout(120)
def test_writer_killed_at_random_moments_leaves_readable_state(home):
    ensure_home(home)
    rng = random.Random(20261121)
    kills = 12
    env = dict(os.environ, LEASH_HOME=str(home))
    for round_number in range(kills):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home), f"k{round_number}"], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert writer.stdout.readline() == b"ready\n", writer.stderr.read().decode()[-2000:]
            time.sleep(rng.uniform(0.02, 0.25))
            assert writer.poll() is None, f"writer died by itself: {writer.stderr.read().decode()[-2000:]}"
            os.kill(writer.pid, signal.SIGKILL)
            assert writer.wait(timeout=30) == -signal.SIGKILL
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
            writer.stdout.close()
            writer.stderr.close()
        assert_state_intact(home)

    before = AckLog(home).read().entries
    assert before, "the writers never got a line into the log"
    # Nothing ever had to be quarantined: no kill left a file that does not parse.
    assert not [e for e in before if e["event"] == "state_quarantined"]
    assert not list(home.glob("*.corrupt-*"))

    StopProtocol(home).acknowledge_stop("after", "after-kills", "fresh append")
    after = assert_state_intact(home).read().entries
    assert len(after) == len(before) + 1
    assert after[-1]["session_id"] == "after-kills"
    assert after[-1]["seq"] == before[-1]["seq"] + 1
    assert after[-1]["prev"] == before[-1]["hash"]
    assert (home / ACK_LOG_NAME).read_bytes().endswith(b"\n")
    assert StopProtocol(home).is_stopped("after-kills")


# ---------------------------------------------------------------- torn tail
TORN = b'{"timestamp": "20'


def write_torn_log(home) -> StopProtocol:
    protocol = StopProtocol(home)
    for name in ("a", "b", "c"):
        protocol.acknowledge_stop("op", name, f"stop {name}")
    with open(home / ACK_LOG_NAME, "ab") as handle:
        handle.write(TORN)
    return protocol


def test_torn_tail_is_skipped_then_moved_aside_by_the_next_append(home):
    protocol = write_torn_log(home)

    read = AckLog(home).read()
    assert read.torn_bytes == len(TORN)
    assert [e["session_id"] for e in read.entries] == ["a", "b", "c"]
    report = AckLog(home).verify()
    assert report.ok, report
    assert report.torn_bytes == len(TORN)
    assert report.lines == 3

    protocol.acknowledge_stop("op", "d", "after the tear")
    raw = (home / ACK_LOG_NAME).read_bytes()
    assert raw.endswith(b"\n")
    records = [json.loads(line) for line in raw.splitlines()]
    assert [r["session_id"] for r in records] == ["a", "b", "c", "d"]
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert (home / (ACK_LOG_NAME + ".torn")).read_bytes() == TORN + b"\n"
    report = AckLog(home).verify()
    assert report.ok, report
    assert report.lines == 4
    assert report.torn_bytes == 0
    assert report.torn_file_bytes == len(TORN) + 1


# BUG (console/cli/handlers.py, cmd_log): `log.path.name` is used on a str path, so
def test_log_verify_cli_reports_the_torn_file(home, leash_proc):
    protocol = write_torn_log(home)
    result = leash_proc("log", "verify")
    assert result.code == 0, result
    assert "torn tail of 17 bytes skipped" in result.out
    protocol.acknowledge_stop("op", "d", "after the tear")
    result = leash_proc("log", "verify")
    assert result.code == 0, result
    assert result.out.startswith("ok: 4 lines")
    assert f"{ACK_LOG_NAME}.torn" in result.out


# ------------------------------------------------------- stops.json corrupt
def stops_then_corrupt(home, content: bytes = GARBAGE) -> StopProtocol:
    """Two stops in force and one resumed, then stops.json overwritten."""
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("op", "kept-1", "first")
    protocol.acknowledge_stop("op", "resumed", "second")
    protocol.acknowledge_stop("op", "kept-2", "third")
    protocol.resume("resumed", source="op")
    (home / STOPS_NAME).write_bytes(content)
    return protocol


def test_corrupt_stops_file_is_rebuilt_from_the_log_by_any_reader(home, leash):
    stops_then_corrupt(home)

    result = leash("hook", "pre-tool-use", stdin=hook_payload("kept-1"))
    assert result.code == 0, result
    assert "is stopped" in deny_reason(result.out)
    gate = Gate(home)
    assert gate.check("kept-2").rule == "session_stop"
    assert gate.check("resumed").allow
    [copy] = corrupt_copies(home, STOPS_NAME)
    assert copy.read_bytes() == GARBAGE
    [line] = events(home, "state_rebuilt")
    assert line["file"] == STOPS_NAME and line["moved_to"] == copy.name
    assert AckLog(home).verify().ok


def test_doctor_reports_and_rebuilds_corrupt_stops_file(home, leash_proc):
    stops_then_corrupt(home)

    result = leash_proc("doctor")
    assert result.code == 3, result
    assert re.search(rf"^fail\s+{re.escape(STOPS_NAME)}:", result.out, re.M), result.out
    assert (home / STOPS_NAME).read_bytes() == GARBAGE  # diagnosing changes nothing

    result = leash_proc("doctor", "--repair")
    assert result.code == 0, result
    assert re.search(rf"^fixed\s+{re.escape(STOPS_NAME)}:", result.out, re.M), result.out
    [copy] = corrupt_copies(home, STOPS_NAME)
    assert copy.read_bytes() == GARBAGE
    stops = read_json(home / STOPS_NAME)
    assert set(stops["sessions"]) == {"kept-1", "kept-2"}
    assert stops["fleet"] is None
    [line] = events(home, "state_rebuilt")
    assert line["file"] == STOPS_NAME and line["moved_to"] == copy.name
    assert AckLog(home).verify().ok
    gate = Gate(home)
    assert gate.check("kept-1").rule == "session_stop"
    assert gate.check("resumed").allow
    assert leash_proc("doctor").code == 0


def test_stop_on_a_corrupt_stops_file_rebuilds_it(home, leash_proc):
    stops_then_corrupt(home)

    result = leash_proc("stop", "--force", "newsess", "--reason", "after corruption", "--source", "op")
    assert result.code == 0, result
    [copy] = corrupt_copies(home, STOPS_NAME)
    assert copy.read_bytes() == GARBAGE
    stops = read_json(home / STOPS_NAME)
    assert set(stops["sessions"]) == {"kept-1", "kept-2", "newsess"}
    [line] = events(home, "state_rebuilt")
    assert line["file"] == STOPS_NAME
    last = AckLog(home).read().entries[-1]
    assert (last["event"], last["session_id"]) == ("stop_ack", "newsess")
    assert AckLog(home).verify().ok
    gate = Gate(home)
    assert gate.check("newsess").rule == "session_stop"
    assert gate.check("kept-2").rule == "session_stop"
    assert gate.check("resumed").allow


@pytest.mark.parametrize("content", [
    b'{"sessions": []}',
    b'{"sessions": {}, "fleet": "everyone"}',
    b"[]",
    b"null",
    b'"stopped"',
    b"",
], ids=["sessions-list", "fleet-string", "list", "null", "string", "empty"])
def test_wrong_shape_stops_file_is_unreadable(home, content):
    ensure_home(home)
    (home / STOPS_NAME).write_bytes(content)
    verdict = Gate(home).check("any", "Bash", {"command": "ls"})
    assert not verdict.allow
    assert verdict.rule == "stop_unreadable"
    assert "leash doctor" in verdict.reason
    out, _, code = pre_tool_use(hook_payload("any"), home=home, env={})
    assert code == 0
    assert "leash doctor" in deny_reason(out)
    assert StopProtocol(home).is_stopped("any")


# ------------------------------------------- hands-off / sessions corrupt
def test_corrupt_hands_off_registry_is_rebuilt_once_and_keeps_its_locks(home):
    protocol = StopProtocol(home)
    protocol.hands_off("ent-old", source="op", hours=1)
    lines_before = len(log_lines(home))
    (home / REGISTRY_NAME).write_bytes(GARBAGE)

    registry = HandsOffRegistry(home)
    for _ in range(3):
        assert set(registry.active()) == {"ent-old"}
    assert set(HandsOffRegistry(home).active()) == {"ent-old"}  # a second reader finds it rebuilt
    assert Gate(home).check("ent-old").rule == "hands_off"  # a lock is never lost to a bad file

    [copy] = corrupt_copies(home, REGISTRY_NAME)
    assert copy.read_bytes() == GARBAGE
    [line] = events(home, "state_rebuilt")
    assert line["file"] == REGISTRY_NAME and line["moved_to"] == copy.name
    assert len(log_lines(home)) == lines_before + 1

    protocol.hands_off("ent-new", source="op", hours=1)
    assert set(HandsOffRegistry(home).active()) == {"ent-old", "ent-new"}
    assert set(registry.active()) == {"ent-old", "ent-new"}
    assert Gate(home).check("ent-new").rule == "hands_off"
    assert len(events(home, "state_rebuilt")) == 1
    assert AckLog(home).verify().ok


def test_corrupt_sessions_file_is_quarantined_by_the_hook(home, leash):
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("op", "stopped-sess", "halt")
    protocol.sessions.observe("old-sess", cwd="/tmp")
    (home / SESSIONS_NAME).write_bytes(GARBAGE)

    result = leash("hook", "pre-tool-use", stdin=hook_payload("fresh-sess"))
    assert result.code == 0, result
    assert result.out == ""  # allowed
    [copy] = corrupt_copies(home, SESSIONS_NAME)
    assert copy.read_bytes() == GARBAGE
    assert set(read_json(home / SESSIONS_NAME)) == {"fresh-sess"}
    [line] = events(home, "state_quarantined")
    assert line["file"] == SESSIONS_NAME and line["moved_to"] == copy.name

    # Still corrupt on the next call: a stopped session is still denied.
    (home / SESSIONS_NAME).write_bytes(GARBAGE)
    result = leash("hook", "pre-tool-use", stdin=hook_payload("stopped-sess"))
    assert result.code == 0, result
    assert "this session is stopped" in deny_reason(result.out)
    assert len(corrupt_copies(home, SESSIONS_NAME)) == 2
    assert len(events(home, "state_quarantined")) == 2
    assert AckLog(home).verify().ok


# ------------------------------------------------------------ ack log tampered
def four_lines(home) -> list[bytes]:
    protocol = StopProtocol(home)
    for n in range(1, 5):
        protocol.acknowledge_stop("op", f"s{n}", f"reason {n}")
    lines = log_lines(home)
    assert len(lines) == 4
    return lines


def rewrite_log(home, lines: list[bytes]) -> None:
    (home / ACK_LOG_NAME).write_bytes(b"".join(line + b"\n" for line in lines))


def assert_broken_at_line_2(home, leash_proc) -> None:
    report = AckLog(home).verify()
    assert not report.ok
    assert report.first_broken_line == 2, report
    result = leash_proc("log", "verify")
    assert result.code == 3, result
    assert "line 2" in result.err


def test_changed_middle_line_breaks_the_chain_there(home, leash_proc):
    lines = four_lines(home)
    record = json.loads(lines[1])
    record["reason"] = "nothing to see here"
    lines[1] = json.dumps(record).encode()
    rewrite_log(home, lines)
    assert_broken_at_line_2(home, leash_proc)
    assert "changed" in AckLog(home).verify().problem


def test_removed_middle_line_breaks_the_chain_there(home, leash_proc):
    lines = four_lines(home)
    del lines[1]
    rewrite_log(home, lines)
    assert_broken_at_line_2(home, leash_proc)


def test_swapped_lines_break_the_chain_at_the_first(home, leash_proc):
    lines = four_lines(home)
    lines[1], lines[2] = lines[2], lines[1]
    rewrite_log(home, lines)
    assert_broken_at_line_2(home, leash_proc)
