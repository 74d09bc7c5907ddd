"""The shared store's two roles (a real PostgreSQL): the owner role
(``[store] owner_url``) makes and migrates the schema and grants the runtime
role (``[store] url``) only what it needs, on the ack log INSERT and SELECT;
so the runtime role's credentials can neither switch the log's trigger off
nor delete, change or truncate a line. With one role for both, ``leash
doctor`` warns that it can. A forged row the runtime role may still insert
is named, and nothing is rebuilt from it; with the MAC key it fails verify."""
from __future__ import annotations

import json

import psycopg
import pytest

from leash.core.base.logkey import ensure_key
from leash.core.state.acklog import chain_hash
from leash.core.state.stop import StopStateUnreadable
from leash.core.store.pgroles import RUNTIME_GRANTS
from leash.core.store.postgres import PostgresBackend

NOW = 1_900_000_000.0
ATTEMPTS = {
    "switch the trigger off": "ALTER TABLE acklog DISABLE TRIGGER acklog_append_only",
    "delete every line": "DELETE FROM acklog",
    "change a line": "UPDATE acklog SET line = replace(line, 'victim', 'nobody')",
    "truncate the log": "TRUNCATE acklog",
    "drop the log": "DROP TABLE acklog",
}


@pytest.fixture
def roles(postgres_cluster):
    """(the runtime role's url, the owner's url) over a schema the owner owns."""
    return postgres_cluster.two_roles()


@pytest.fixture
def one_role(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


def stopped(url: str, home, **options) -> PostgresBackend:
    backend = PostgresBackend(url, home=home, host="a", **options)
    backend.stops.stop("victim", source="ops", reason="hold", now=NOW)
    return backend


def findings(backend, *, repair: bool = False) -> list[tuple[str, str, str]]:
    return [(f.level, f.subject, f.message) for f in backend.examine(repair=repair, now=NOW + 1)]


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_the_runtime_roles_credentials_cannot_rewrite_the_log(roles, home, attempt):
    runtime, owner = roles
    backend = stopped(runtime, home, owner_url=owner)
    try:
        with psycopg.connect(runtime, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(ATTEMPTS[attempt])
        report = backend.acklog.verify()
        assert report.ok and report.lines == 1
        assert list(backend.stops.stopped()) == ["victim"]
    finally:
        backend.close()


def test_with_two_roles_doctor_says_the_runtime_role_may_only_insert_and_select(roles, home):
    runtime, owner = roles
    backend = stopped(runtime, home, owner_url=owner)
    try:
        said = findings(backend)
        assert ("ok", "store", f"the runtime role {runtime.split('@')[0].split('//')[1]} may only insert and "
                               "select the ack log") in said, said
        assert not [f for f in said if f[0] in ("warn", "fail") and f[1] in ("store", "acklog")], said
        with psycopg.connect(owner, autocommit=True) as conn:  # the owner owns every table, the runtime role none
            owners = {row[0] for row in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = "
                                                     "current_schema()")}
        assert owners == {owner.split("@")[0].split("//")[1]}
    finally:
        backend.close()


def test_with_one_role_doctor_warns_that_it_can_switch_the_trigger_off(one_role, home, tmp_path):
    backend = stopped(one_role, home)
    named_twice = stopped(one_role, tmp_path / "other", owner_url=one_role)  # the same url: still one role
    try:
        for said in (findings(backend), findings(named_twice)):
            warned = [f for f in said if f[0] == "warn" and f[1] == "store"]
            assert warned and "can switch the log's trigger off" in warned[0][2], said
            assert "owner_url" in warned[0][2]
    finally:
        backend.close()
        named_twice.close()


def test_a_trigger_switched_off_is_a_failure_that_repair_mends(one_role, home):
    backend = stopped(one_role, home)
    try:
        with backend.db.transaction() as conn:
            conn.execute("ALTER TABLE acklog DISABLE TRIGGER acklog_append_only")
        assert ("fail", "store") in [f[:2] for f in findings(backend)]
        assert any(f[0] == "fixed" and "switched on again" in f[2] for f in findings(backend, repair=True))
        with pytest.raises(Exception, match="append-only"):
            with backend.db.transaction() as conn:
                conn.execute("DELETE FROM acklog")
    finally:
        backend.close()


def test_doctor_repair_grants_what_the_runtime_role_lacks(roles, home):
    runtime, owner = roles
    stopped(runtime, home, owner_url=owner).close()
    with psycopg.connect(owner, autocommit=True) as conn:
        role = runtime.split("@")[0].split("//")[1]
        conn.execute(f"REVOKE INSERT ON acklog FROM {role}")
        conn.execute(f"GRANT UPDATE ON acklog TO {role}")
    looking = PostgresBackend(runtime, home=home, host="a", owner_url=owner, schema="as-is")
    try:
        said = findings(looking)
        assert any(f[0] == "fail" and "may UPDATE the ack log" in f[2] for f in said), said
        assert any(f[0] == "fail" and "lacks acklog INSERT" in f[2] for f in said), said
        assert any(f[0] == "fixed" and "granted the runtime role" in f[2] for f in findings(looking, repair=True))
        assert ("ok", "store") in [f[:2] for f in findings(looking) if "may only insert" in f[2]]
    finally:
        looking.close()


def test_every_table_of_the_schema_has_its_grant(roles, home):
    runtime, owner = roles
    backend = PostgresBackend(runtime, home=home, host="a", owner_url=owner)
    try:
        tables = {row[0] for row in backend.db.rows("SELECT tablename FROM pg_tables WHERE schemaname = "
                                                    "current_schema()")}
        assert tables == set(RUNTIME_GRANTS)
        assert RUNTIME_GRANTS["acklog"] == ("SELECT", "INSERT")
    finally:
        backend.close()


def test_the_owners_url_comes_from_the_environment_or_the_config(roles, home, monkeypatch):
    from leash.core.store.select import backend_for, owner_url

    runtime, owner = roles
    home.mkdir(mode=0o700, parents=True)
    (home / "config.toml").write_text(f'[store]\nurl = "{runtime}"\nowner_url = "{owner}"\n')
    assert owner_url(str(home)) == owner
    backend = backend_for(str(home))  # an empty schema: made by the owner, the runtime role granted
    try:
        backend.stops.stop("victim", source="ops", now=NOW)
        assert backend.db.owner_url == owner
    finally:
        backend.close()
    monkeypatch.setenv("LEASH_STORE_OWNER_URL", runtime)
    assert owner_url(str(home)) == runtime


def test_without_the_owners_url_the_runtime_role_is_told_to_give_it(roles, home):
    from leash.core.store.pg import StoreOffline

    runtime, _ = roles
    with pytest.raises(StoreOffline, match="give the owner's url in \\[store\\] owner_url"):
        PostgresBackend(runtime, home=home, host="a")  # it may not create the schema


def test_store_copy_grants_the_homes_runtime_role(roles, home, tmp_path, monkeypatch):
    from leash.core.store.copy import copy_home
    from leash.core.views.protocol import StopProtocol

    runtime, owner = roles
    StopProtocol(home).acknowledge_stop("ops", "victim", "hold", now=NOW)
    monkeypatch.setenv("LEASH_STORE_URL", runtime)  # the role this home's leashd will run as
    report = copy_home(str(home), owner)
    assert report.granted and any("granted" in line for line in report.said())
    backend = PostgresBackend(runtime, home=tmp_path / "host", host="a")  # no owner_url needed now
    try:
        assert list(backend.stops.stopped()) == ["victim"]
    finally:
        backend.close()


def test_a_row_the_runtime_role_forges_is_named_and_rebuilds_nothing(roles, home):
    runtime, owner = roles
    backend = stopped(runtime, home, owner_url=owner)
    try:
        with psycopg.connect(runtime, autocommit=True) as conn:
            last = json.loads(conn.execute("SELECT line FROM acklog ORDER BY seq DESC LIMIT 1").fetchone()[0])
            line = {"timestamp": "2030-03-17T17:46:41.000000Z", "event": "resume", "source": "ops",
                    "session_id": "victim", "reason": "", "seq": last["seq"] + 1, "prev": last["hash"]}
            line["hash"] = chain_hash(line["prev"], line)
            conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, %s, "
                         "%s, %s)", (line["seq"], line["timestamp"], "resume", "victim", "ops", json.dumps(line)))
        said = findings(backend, repair=True)
        assert any(f[:2] == ("fail", "acklog") and "never applied: not written by leash" in f[2] for f in said), said
        assert any(f[:2] == ("fail", "stops") and "not rebuilt" in f[2] for f in said), said
        assert list(backend.stops.stopped()) == ["victim"]
    finally:
        backend.close()


def test_with_the_key_a_forged_row_fails_verify(one_role, home):
    home.mkdir(mode=0o700, parents=True)
    ensure_key(str(home), next_seq=1)
    backend = stopped(one_role, home)
    try:
        [row] = [json.loads(raw) for (raw,) in backend.db.rows("SELECT line FROM acklog")]
        assert backend.acklog.mac_key()[0].verifies(row["hash"], row["mac"])
        assert "macs checked" in backend.acklog.verify().macs
        line = {"timestamp": "2030-03-17T17:46:41.000000Z", "event": "resume", "source": "ops",
                "session_id": "victim", "reason": "", "seq": 2, "prev": row["hash"]}
        line["hash"] = chain_hash(line["prev"], line)
        with backend.db.transaction() as conn:
            conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (2, %s, 'resume', "
                         "'victim', 'ops', %s)", (line["timestamp"], json.dumps(line)))
        report = backend.acklog.verify()
        assert not report.ok and report.first_broken_line == 2 and "has no mac" in report.problem
        with backend.db.transaction() as conn:  # the stops' row made to match: it names the forged line
            conn.execute("""UPDATE log_state SET state = '{"sessions": {}, "fleet": null}', head_seq = 2 """
                         "WHERE store = 'stops'")
        unsigned = "names line 2, which is not signed with this host's key \\(it has no mac"
        with pytest.raises(StopStateUnreadable, match=unsigned):
            backend.stops.current()  # not "nothing stopped": every call is held until doctor has looked
    finally:
        backend.close()


STATE_ATTEMPTS = {
    "lift the stop with no line": """UPDATE log_state SET state = '{"sessions": {}, "fleet": null}'
                                     WHERE store = 'stops'""",
    "a line about one session, a row without another's stop": None,  # built below: it needs the log's tip
    "drop a lock that has not expired": "UPDATE log_state SET state = state - 'ezra' WHERE store = 'hands_off'",
}


@pytest.mark.parametrize("attempt", list(STATE_ATTEMPTS))
def test_the_runtime_role_cannot_write_a_state_the_log_does_not_say(roles, home, attempt):
    """The runtime role's credentials (what every host holds) cannot lift a
    stop or a lock by writing ``log_state``: a row changes only with its
    ack-log line and only as that line says (the schema's ``log_state_guard``)."""
    runtime, owner = roles
    backend = stopped(runtime, home, owner_url=owner)
    try:
        backend.locks.lock("ezra", hours=4, source="ops", reason="deploy")
        with psycopg.connect(runtime) as conn:
            with pytest.raises(psycopg.errors.RaiseException):
                if STATE_ATTEMPTS[attempt] is not None:
                    conn.execute(STATE_ATTEMPTS[attempt])
                else:
                    last = json.loads(conn.execute("SELECT line FROM acklog ORDER BY seq DESC LIMIT 1").fetchone()[0])
                    line = {"timestamp": "2030-03-17T17:46:41.000000Z", "event": "stop_ack", "source": "ops",
                            "session_id": "other", "reason": "", "seq": last["seq"] + 1, "prev": last["hash"]}
                    line["hash"] = chain_hash(line["prev"], line)
                    conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, "
                                 "%s, %s, %s)", (line["seq"], line["timestamp"], "stop_ack", "other", "ops",
                                                 json.dumps(line)))
                    forged = {"sessions": {"other": {"stopped_at": line["timestamp"], "source": "ops"}}, "fleet": None}
                    conn.execute("UPDATE log_state SET state = %s, head_seq = %s WHERE store = 'stops'",
                                 (json.dumps(forged), line["seq"]))
            conn.rollback()
        assert list(backend.stops.stopped()) == ["victim"] and backend.locks.lock_of("ezra") is not None
        assert backend.acklog.verify().ok
    finally:
        backend.close()
