"""leashd's mirror of the shared store (a real PostgreSQL): reads come from
memory while LISTEN says nothing changed; a change from another host is seen
at its notice; with the server gone, the last values are answered for the
grace period, then the offline policy decides (closed: every read raises, so
the gate denies; last-known: the last values); the server back, it re-reads."""
from __future__ import annotations

import time

import pytest

from leash.core.state.stop import StopStateUnreadable
from leash.core.store.pg import notify
from leash.core.store.postgres import PostgresBackend

from ..support.waiting import eventually

NOW = 1_900_000_000.0


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


def test_reads_come_from_memory_until_a_notice_says_otherwise(url, home, tmp_path, monkeypatch):
    from leash.core.store import pgmirror

    monkeypatch.setattr(pgmirror, "MARK_CHECK_SECONDS", 3600)  # its check of writes without a notice: not here
    mirrored = PostgresBackend(url, home=home, host="a", mirrored=True)
    other = PostgresBackend(url, home=tmp_path / "other", host="c")
    try:
        other.stops.stop("s1", source="ops", now=NOW)
        assert eventually(lambda: mirrored.mirror.generations.get("stops", 0) >= 1)  # its notice came
        assert list(mirrored.stops.stopped()) == ["s1"]
        with other.db.transaction() as conn:  # a change no notice announces: memory does not see it
            conn.execute("""UPDATE log_state SET state = '{"sessions": {}, "fleet": null}' WHERE store = 'stops'""")
        time.sleep(0.3)
        assert list(mirrored.stops.stopped()) == ["s1"]
        with other.db.session() as conn:
            notify(conn, "stops")
        assert eventually(lambda: mirrored.stops.stopped() == {})
    finally:
        mirrored.close()
        other.close()


def test_a_session_change_elsewhere_is_seen_by_its_key(url, home, tmp_path):
    mirrored = PostgresBackend(url, home=home, host="a", mirrored=True)
    other = PostgresBackend(url, home=tmp_path / "other", host="c")
    try:
        assert mirrored.sessions.get("claude-1") is None
        other.sessions.observe("claude-1", now=NOW, tmux_session="c/agent-1")
        assert eventually(lambda: mirrored.sessions.get("claude-1") is not None)
        assert mirrored.sessions.get("claude-1").tmux_session == "c/agent-1"
    finally:
        mirrored.close()
        other.close()


@pytest.mark.parametrize("policy", ["closed", "last-known"])
def test_offline_the_last_values_for_the_grace_then_the_policy(policy, home):
    """A server of its own: this test stops it and starts it again."""
    from ..support.postgres import Cluster, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    cluster = Cluster()
    backend = None
    try:
        backend = PostgresBackend(cluster.url(), home=home, host="a", mirrored=True, offline_grace_s=10,
                                  offline=policy)
        backend.stops.stop("s1", source="ops", now=NOW)
        assert list(backend.stops.stopped()) == ["s1"]
        moment = [1000.0]
        backend.mirror.clock = lambda: moment[0]
        cluster.pause()
        assert eventually(lambda: not backend.mirror.reachable())
        assert list(backend.stops.stopped()) == ["s1"]  # within the grace: the last values
        moment[0] += 11
        if policy == "closed":
            with pytest.raises(StopStateUnreadable, match="unreachable for 11 s"):
                backend.stops.current()
        else:
            assert list(backend.stops.stopped()) == ["s1"]
        cluster.resume()
        assert eventually(backend.mirror.reachable, seconds=20)
        backend.stops.resume("s1", source="ops", now=NOW + 1)
        assert backend.stops.stopped() == {}
    finally:
        if backend is not None:
            backend.close()
        cluster.stop()
