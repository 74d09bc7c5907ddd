"""``leash store copy``: a home moved into the shared store keeps its chain
(the same lines, verified after the copy), its stops, locks and sessions; a
store already holding a log, or a home whose log is broken, is refused with
one line and nothing written."""
from __future__ import annotations

import pytest

from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store.files import FileBackend
from leash.core.store.postgres import PostgresBackend

NOW = 1_900_000_000.0


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


def filled_home(home) -> FileBackend:
    backend = FileBackend(home)
    backend.stops.stop("agent-1", source="ops", reason="look", now=NOW)
    backend.stops.stop("agent-2", source="ops", now=NOW + 1)
    backend.stops.resume("agent-2", source="ops", now=NOW + 2)
    backend.locks.lock("ezra", hours=80_000, source="ops", reason="hands off", now=NOW + 3)
    backend.sessions.observe("claude-1", now=NOW + 4, tmux_session="agent-1", cwd="/w")
    backend.halts.record({"session_token": "claude-1", "halt_type": "security", "severity": "high",
                          "description": "a secret in the diff"}, now=NOW + 5)
    return backend


def test_a_home_copied_keeps_its_chain_stops_locks_and_sessions(cli, home, url):
    source = filled_home(home)
    result = cli("store", "copy", "--from", str(home), "--to", url)
    assert result.code == 0, result.err
    assert "lines copied, chain verified" in result.out and "stops: 1 copied" in result.out
    assert "halts: 1 copied" in result.out
    copied = PostgresBackend(url, home=home, host="h1")
    try:
        assert [line.as_dict() for line in copied.acklog.read()] == [line.as_dict() for line in source.acklog.read()]
        assert copied.acklog.verify().ok
        assert list(copied.stops.stopped()) == ["agent-1"]
        assert list(copied.locks.active(now=NOW + 10)) == ["ezra"]
        assert copied.sessions.get("claude-1").tmux_session == "agent-1"
        halt = source.halts.listing(HaltQuery.of({"session_token": "claude-1"})).halts[0]
        assert copied.halts.find(halt.halt_id).description == "a secret in the diff"
        assert copied.halts.state("claude-1") == source.halts.state("claude-1")
        lines = copied.acklog.verify().lines
        copied.stops.resume("agent-1", source="ops", now=NOW + 20)  # the chain goes on from the copy
        assert copied.acklog.verify().ok and copied.acklog.verify().lines == lines + 1
    finally:
        copied.close()


def test_a_store_already_holding_a_log_is_refused(cli, home, url):
    filled_home(home)
    assert cli("store", "copy", "--from", str(home), "--to", url).code == 0
    again = cli("store", "copy", "--from", str(home), "--to", url)
    assert again.code == 1 and "already holds an ack log" in again.err and again.err.count("\n") == 1


def test_a_home_whose_log_is_broken_is_refused_and_nothing_written(cli, home, url):
    filled_home(home)
    log = home / "stop_ack_log.jsonl"
    log.write_text(log.read_text().replace('"look"', '"LOOK"'))
    result = cli("store", "copy", "--from", str(home), "--to", url)
    assert result.code == 1 and "does not verify" in result.err
    store = PostgresBackend(url, home=home, host="h1")
    try:
        assert store.acklog.read() == []
    finally:
        store.close()


def test_a_bad_target_is_a_usage_error(cli, home):
    filled_home(home)
    result = cli("store", "copy", "--from", str(home), "--to", "mysql://db/leash")
    assert result.code == 2 and "not a postgresql:// url" in result.err
