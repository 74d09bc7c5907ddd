"""The stores on PostgreSQL (a real server, ``postgres_cluster``): appends
from many connections at once make one chain; its lines are the file log's
lines; stops written from many connections are the fold of the log; the schema
is versioned; an unreachable server is one line without the password. The
behaviours every backend keeps are in test_store_contract.py."""
from __future__ import annotations

import os
import threading

import pytest

from leash.core.acklog import AckLog
from leash.core.store.pg import SCHEMA_VERSION, PgAckLog, StoreOffline, connect, migrate, schema_version

NOW = 1_900_000_000.0


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


def test_appends_from_many_connections_make_one_chain(url):
    """Four hosts' worth of connections appending at once: every line once,
    seq 1..N without a gap, and the chain verifies."""
    stores = [PgAckLog(url) for _ in range(4)]
    try:
        def append_many(store, n):
            for i in range(25):
                store.append("stop_ack", source=f"host{n}", session_id=f"s{n}-{i}", now=NOW + i)

        threads = [threading.Thread(target=append_many, args=(store, n)) for n, store in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        lines = stores[0].read()
        assert [line.seq for line in lines] == list(range(1, 101))
        assert len({line.session_id for line in lines}) == 100
        assert stores[1].verify().ok and stores[1].verify().lines == 100
    finally:
        for store in stores:
            store.close()


def test_its_lines_are_the_file_logs_lines(url, home):
    """The stored text of each line, written to a home's log file, is a log
    the file backend verifies: one format, one chain, either backend."""
    store = PgAckLog(url)
    try:
        store.append("stop_ack", source="ops", session_id="s1", reason="hold", now=NOW, entity="ezra")
        store.append("resume", source="ops", session_id="s1", now=NOW + 1)
        raw = [row[0] for row in store.conn.execute("SELECT line FROM acklog ORDER BY seq").fetchall()]
    finally:
        store.close()
    home.mkdir(mode=0o700, parents=True)
    (home / "stop_ack_log.jsonl").write_text("".join(line + "\n" for line in raw))
    report = AckLog(home).verify()
    assert report.ok and report.lines == 2
    assert [line["event"] for line in AckLog(home).read().entries] == ["stop_ack", "resume"]


def test_the_schema_is_versioned_and_a_newer_one_refused(url):
    conn = connect(url)
    try:
        assert schema_version(conn) == 0
        assert migrate(conn) == SCHEMA_VERSION and migrate(conn) == SCHEMA_VERSION  # twice: nothing more
        assert schema_version(conn) == SCHEMA_VERSION
        with conn.transaction():
            conn.execute("UPDATE leash_meta SET value = '99' WHERE key = 'schema_version'")
    finally:
        conn.close()
    with pytest.raises(StoreOffline, match="schema is version 99"):
        PgAckLog(url)


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path):
    url = f"postgresql://leash:s3cret-pw@/postgres?host={tmp_path}"
    with pytest.raises(StoreOffline) as caught:
        PgAckLog(url)
    message = str(caught.value)
    assert message.startswith("PostgreSQL store unreachable") and "\n" not in message
    assert "s3cret-pw" not in message
    assert not os.listdir(tmp_path)


def test_follow_from_now_yields_only_new_lines(url):
    store = PgAckLog(url)
    try:
        store.append("stop_ack", source="ops", session_id="old", now=NOW)
        assert list(store.follow(from_start=False, stop_after=0.01)) == []
        store.append("resume", source="ops", session_id="old", now=NOW + 1)
        assert [line.event for line in store.follow(from_start=True, stop_after=0.01)] == ["stop_ack", "resume"]
    finally:
        store.close()


def test_stops_from_many_connections_are_the_fold_of_the_log(url):
    """Stops and resumes from four connections at once: the stored stop state
    is exactly what replaying the log gives (the file backend's own rule)."""
    from leash.core.stop import apply_stop_line, empty_stops
    from leash.core.store.pg import PgStops

    logs = [PgAckLog(url) for _ in range(4)]
    try:
        def work(n):
            stops = PgStops(logs[n])
            for i in range(10):
                stops.stop(f"s{n}-{i}", source=f"host{n}", reason="hold", now=NOW + i)
                if i % 3 == 0:
                    stops.resume(f"s{n}-{i}", source=f"host{n}", now=NOW + i)
            if n == 0:
                stops.stop_fleet(source="host0", reason="all", now=NOW + 20)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        replayed = empty_stops()
        for line in logs[0].read():
            apply_stop_line(replayed, line.as_dict())
        state = PgStops(logs[1]).current()
        assert sorted(state.sessions) == sorted(replayed["sessions"]) and len(state.sessions) == 4 * 6
        assert state.fleet is not None and state.fleet.reason == "all"
        assert logs[2].verify().ok
    finally:
        for log in logs:
            log.close()
