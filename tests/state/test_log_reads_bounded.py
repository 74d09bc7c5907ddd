"""No reader holds the whole ack log to answer a view: on a home whose caches
are in step, ``core.fleet.view`` parses only the log's tail (never a line
more as the log grows); a view that has to rebuild a cache from the log
(stops.json gone, halts.db out of step) streams it, holding a block of it at
a time, not the log; a log that grew past its head is read from the size the
head records; and the streamed readers say what the list reader says."""
from __future__ import annotations

import json
import sqlite3
import tracemalloc

import pytest

from leash.core.base import logverify
from leash.core.base.clock import iso
from leash.core.base.home import ensure_home
from leash.core.base.statefile import write_json
from leash.core.hook.gate import Gate
from leash.core.state import logread
from leash.core.state.acklog import ACK_LOG_NAME, GENESIS_HASH, AckLog, chain_hash
from leash.core.state.halts.api import record_halt
from leash.core.state.loghead import HEAD_NAME, AckHead, head_of, scan
from leash.core.views.fleet import ACK_TAIL_LINES, view
from leash.core.views.protocol import StopProtocol

NOW = 1_800_000_000.0
FILLER = 6_000  # lines written straight into the log before the real actions


def filled_home(home, lines: int = FILLER):
    """A home whose log holds ``lines`` chained lines of no store (with the
    head a writer leaves beside them), then a stop, a lock and a halt written
    the ordinary way, so every cache is in step with the log."""
    ensure_home(home)
    prev, out = GENESIS_HASH, []
    for seq in range(1, lines + 1):
        record = {"timestamp": iso(NOW - lines + seq), "event": ("warrant_filed", "epitaph")[seq % 2],
                  "source": "ops", "session_id": f"agent-{seq % 50}", "reason": f"line {seq} " + "x" * 300,
                  "seq": seq, "prev": prev}
        record["hash"] = prev = chain_hash(prev, record)
        out.append(json.dumps(record).encode() + b"\n")
    log = home / ACK_LOG_NAME
    log.write_bytes(b"".join(out))
    write_json(home / HEAD_NAME, {"seq": lines, "hash": prev, "size": log.stat().st_size, "stores": {}})
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "agent-1", "explicit halt", now=NOW)
    protocol.hands_off("ezra", hours=4, reason="deploy", source="ops", now=NOW)
    record_halt({"session_token": "worker", "halt_type": "security", "severity": "critical",
                 "description": "left the sandbox"}, home=home, now=NOW)
    assert AckLog(home).verify().ok
    return protocol


@pytest.fixture
def parsed(monkeypatch) -> list[int]:
    """Counts every ack-log line parsed, by the readers and by the chain walk."""
    count = [0]
    lenient, strict = logread.parse_line, logverify.parse_strict

    def counted_parse(raw):
        count[0] += 1
        return lenient(raw)

    def counted_strict(raw):
        count[0] += 1
        return strict(raw)

    monkeypatch.setattr(logread, "parse_line", counted_parse)
    monkeypatch.setattr(logverify, "parse_strict", counted_strict)
    return count


def test_a_view_of_a_home_in_step_parses_only_the_tail(home, parsed):
    filled_home(home)
    head_of(home)._cache.forget()  # as a fresh process finds it
    parsed[0] = 0
    data = view(home, now=NOW + 1)
    assert not data["problems"] and data["summary"]["stopped"] == 1 and data["summary"]["locks"] == 1
    assert data["summary"]["halts"]["critical"] == 1
    assert len(data["acklog"]) == ACK_TAIL_LINES
    assert parsed[0] <= ACK_TAIL_LINES + 1, f"{parsed[0]} lines parsed of {FILLER + 3}"
    assert not (home / "stops.json.corrupt").exists()
    assert not [line for line in AckLog(home).tail(10) if line["event"] == "state_rebuilt"]


def test_a_view_that_rebuilds_a_cache_streams_the_log(home, monkeypatch):
    filled_home(home)
    view(home, now=NOW + 1)  # every module a view imports is imported before memory is traced
    (home / "stops.json").unlink()
    with sqlite3.connect(home / "halts.db") as db:
        db.execute("DELETE FROM meta WHERE key = 'acklog_head'")  # out of step: rebuilt from the log
    monkeypatch.setattr(logread, "READ_BLOCK", 64 * 1024)
    size = (home / ACK_LOG_NAME).stat().st_size
    tracemalloc.start()
    try:
        data = view(home, now=NOW + 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not data["problems"] and data["summary"]["stopped"] == 1
    assert data["summary"]["halts"]["critical"] == 1
    rebuilt = {line["file"] for line in AckLog(home).read(event="state_rebuilt").entries}
    assert rebuilt == {"stops.json", "halts.db"}
    # The log read into memory would be its size in bytes and several times that in parsed lines.
    assert peak < size / 3, f"peak {peak} bytes traced while rebuilding from a log of {size} bytes"


def test_the_streamed_readers_agree_with_the_list_reader(home):
    filled_home(home, lines=500)
    with open(home / ACK_LOG_NAME, "ab") as handle:
        handle.write(b"not json\n{\"torn")  # one unreadable line and a torn tail
    log = AckLog(home)
    listed, streamed = log.read(), log.lines()
    assert list(streamed) == listed.entries and len(listed.entries) == 503
    assert (streamed.torn_bytes, streamed.unreadable_lines) == (listed.torn_bytes, listed.unreadable_lines) == (6, 1)
    assert list(log.lines(event="stop_ack")) == log.read(event="stop_ack").entries != []
    small = logread.RawLines(log.path, block=7)  # lines longer than a block are whole all the same
    assert [json.loads(raw)["seq"] for raw in list(small)[:503]] == list(range(1, 504))
    assert scan(log)["seq"] == 503
    report = log.verify()
    assert not report.ok and report.first_broken_line == 504 and report.torn_bytes == 6
    assert log.chain_problem().startswith("line 504 of the ack log")


def test_a_log_that_grew_past_its_head_is_read_from_the_size_the_head_records(home, parsed, monkeypatch):
    protocol = filled_home(home)
    monkeypatch.setattr(AckHead, "advance", lambda self, line, log: None)  # a writer that died before the head
    protocol.acknowledge_stop("ops", "agent-2", "second", now=NOW + 1)
    monkeypatch.undo()
    head_of(home)._cache.forget()
    parsed[0] = 0
    data = view(home, now=NOW + 2)
    assert not data["problems"] and data["summary"]["stopped"] == 2
    assert parsed[0] <= ACK_TAIL_LINES + 2, f"{parsed[0]} lines parsed of {FILLER + 4}"
    assert head_of(home).read()["seq"] == FILLER + 4 == AckLog(home).tail(1)[0]["seq"]
    assert AckLog(home).verify().ok


def test_a_log_rewritten_under_its_head_and_grown_is_still_refused(home):
    filled_home(home)
    log = home / ACK_LOG_NAME
    *body, last = log.read_bytes().splitlines(keepends=True)
    record = json.loads(last)
    rechained = record["hash"].translate(str.maketrans("0123456789abcdef", "123456789abcdef0"))
    changed = last.replace(record["hash"].encode(), rechained.encode())  # the line the head names, re-hashed
    assert len(changed) == len(last) and changed != last
    extra = json.loads(changed)
    extra.update(seq=extra["seq"] + 1, prev=extra["hash"])
    log.write_bytes(b"".join(body) + changed + json.dumps(extra).encode() + b"\n")
    head_of(home)._cache.forget()
    with pytest.raises(Exception, match="no longer holds the line its head names .*it was rewritten"):
        view(home, now=NOW + 1)
    assert not Gate(home).check("agent-9", "Bash", {"command": "ls"}, now=NOW + 1).allow
