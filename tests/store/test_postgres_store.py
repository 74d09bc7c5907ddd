"""The stores on PostgreSQL (a real server, ``postgres_cluster``): appends
from many connections at once make one chain; its lines are the file log's
lines; stops written from many connections are the fold of the log; the schema
is versioned; an unreachable server is one line without the password. The
behaviours every backend keeps are in test_store_contract.py."""
from __future__ import annotations

import os
import threading

import pytest

from leash.core.state.acklog import AckLog
from leash.core.store.pg import SCHEMA_VERSION, StoreOffline, connect, migrate, schema_version
from leash.core.store.pgacklog import PgAckLog

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
        raw = [row[0] for row in store.db.rows("SELECT line FROM acklog ORDER BY seq")]
    finally:
        store.close()
    home.mkdir(mode=0o700, parents=True)
    (home / "stop_ack_log.jsonl").write_text("".join(line + "\n" for line in raw))
    assert "acklog.head is missing" in AckLog(home).verify().problem  # a log without its head is not trusted
    AckLog(home).head.rewrite_from_log(AckLog(home))  # what leash doctor --repair does, saying so
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


def test_stops_from_many_connections_are_the_fold_of_the_log(url, home):
    """Stops and resumes from four backends (four hosts) at once: the stored
    stop state is exactly what replaying the log gives (the file backend's own rule)."""
    from leash.core.state.stop import apply_stop_line, empty_stops
    from leash.core.store.postgres import PostgresBackend

    backends = [PostgresBackend(url, home=home, host=f"host{n}") for n in range(4)]
    try:
        def work(n):
            stops = backends[n].stops
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
        for line in backends[0].acklog.read():
            apply_stop_line(replayed, line.as_dict())
        state = backends[1].stops.current()
        assert sorted(state.sessions) == sorted(replayed["sessions"]) and len(state.sessions) == 4 * 6
        assert state.fleet is not None and state.fleet.reason == "all"
        assert backends[2].acklog.verify().ok
    finally:
        for backend in backends:
            backend.close()


def test_one_backend_shared_by_threads_keeps_each_transaction_whole(url, home):
    """leashd's threads share one backend: full stops from eight threads at
    once each leave their stop and their lock, and nothing else."""
    from leash.core.store.postgres import PostgresBackend

    backend = PostgresBackend(url, home=home, host="h1")
    try:
        def work(n):
            for i in range(5):
                with backend.transaction(now=NOW + i) as step:
                    step.full_stop(f"s{n}-{i}", f"e{n}-{i}", hours=1, source="ops", reason="hold")

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(backend.stops.stopped(now=NOW)) == 40
        assert len(backend.locks.active(now=NOW)) == 40
        assert backend.sessions.get("s3-4").entity == "e3-4"
        assert backend.acklog.verify().ok
    finally:
        backend.close()


def test_a_session_record_round_trips_and_is_forgotten_after_its_days(url, home):
    from leash.core.store.postgres import PostgresBackend

    backend = PostgresBackend(url, home=home, host="h1")
    try:
        backend.sessions.observe("s1", now=NOW, tmux_session="agent-1", cwd="/w", tool="Bash")
        got = backend.sessions.get("s1", now=NOW)
        assert (got.tmux_session, got.cwd, got.last_tool) == ("agent-1", "/w", "Bash")
        backend.sessions.registry.rows._pruned_at = 0.0  # the next write may prune
        backend.sessions.observe("s2", now=NOW + 8 * 86400)
        assert sorted(backend.sessions.all(now=NOW + 8 * 86400)) == ["s2"]
    finally:
        backend.close()


def test_store_selection_by_environment_and_config(url, home, tmp_path):
    from leash.core.base.config import ConfigError
    from leash.core.store.select import StoreSelectionError, backend_for

    home.mkdir(mode=0o700, parents=True)
    assert backend_for(home, environ={}).name == "file"
    chosen = backend_for(home, environ={"LEASH_STORE_URL": url, "LEASH_HOST": "web1"})
    try:
        assert (chosen.name, chosen.host) == ("postgres", "web1")
    finally:
        chosen.close()
    (home / "config.toml").write_text('[store]\nurl = "postgresql://leash:hunter2@db/leash"\n')
    with pytest.raises(ConfigError) as caught:
        backend_for(home, environ={})
    assert "hunter2" not in str(caught.value) and "password" in str(caught.value)
    secret = tmp_path / "pw"
    secret.write_text("pw\n")
    secret.chmod(0o644)
    (home / "config.toml").write_text(f'[store]\nurl = "{url}"\npassword_file = "{secret}"\n')
    with pytest.raises(StoreSelectionError, match="chmod 600"):
        backend_for(home, environ={})


def older_schema(url: str) -> int:
    """A database at the schema version before this leash's, as an older leash left it."""
    from leash.core.store.pg import MIGRATIONS

    conn = connect(url)
    try:
        with conn.transaction():
            for number, migration in enumerate(MIGRATIONS[:-1], 1):
                conn.execute(migration)
                conn.execute("INSERT INTO leash_meta (key, value) VALUES ('schema_version', %s) "
                             "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(number),))
    finally:
        conn.close()
    return len(MIGRATIONS) - 1


def test_only_leashd_and_doctor_repair_upgrade_an_older_schema(url, home, cli, monkeypatch):
    from leash.core.store.postgres import PostgresBackend

    older = older_schema(url)
    with pytest.raises(StoreOffline, match="leash doctor --repair"):
        PostgresBackend(url, home=home, host="h1")  # any command: refused, nothing changed
    monkeypatch.setenv("LEASH_STORE_URL", url)
    looked = cli("doctor")
    assert looked.code == 3 and f"schema version {older}, this leash needs {SCHEMA_VERSION}" in looked.out
    assert cli("stop", "--force", "s1").code == 1
    mended = cli("doctor", "--repair")
    assert f"schema migrated from version {older} to {SCHEMA_VERSION}" in mended.out
    assert cli("stop", "--force", "s1").code == 0
    assert f"schema version {SCHEMA_VERSION}" in cli("doctor").out


def test_leashd_upgrades_an_older_schema(url, home):
    from leash.core.store.postgres import PostgresBackend

    older_schema(url)
    backend = PostgresBackend(url, home=home, host="h1", schema="upgrade")  # what leash daemon opens
    try:
        with backend.db.session() as conn:
            assert schema_version(conn) == SCHEMA_VERSION
    finally:
        backend.close()


@pytest.mark.parametrize("statement", ["UPDATE acklog SET source = 'someone else'", "DELETE FROM acklog",
                                       "TRUNCATE acklog"])
def test_the_database_refuses_to_change_or_remove_log_lines(url, statement):
    store = PgAckLog(url)
    try:
        store.append("stop_ack", source="ops", session_id="s1", now=NOW)
        with pytest.raises(StoreOffline, match="append-only"):
            with store.db.transaction() as conn:
                conn.execute(statement)
        assert [line.source for line in store.read()] == ["ops"] and store.verify().ok
    finally:
        store.close()
