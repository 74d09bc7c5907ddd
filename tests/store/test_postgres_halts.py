"""The halt store on PostgreSQL (a real server, ``postgres_cluster``); the
halt behaviours every backend keeps run in test_store_contract.py. Here: three
strikes and timeouts stored, then what only a shared database shows:
two hosts recording and acknowledging at once, the seed's real types (uuid
ids, jsonb context, enum types, its partial indexes), a unit's reads in one
snapshot, the same ack-log lines as the file backend, and an unreachable
server failing closed."""
from __future__ import annotations

import threading
import uuid

import pytest

from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.state.halts import HaltRefused, HaltStoreUnavailable
from leash.core.store.filehalts import FileHalts
from leash.core.store.pg import Database
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.pghalts import PgHalts

NOW = 1_900_000_000.0
SECRET = "ghp_R4nd0mV4lu3Xq9Lm2Pz8Kt6Wb3Yc1Nd5Fh7J"


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


class Host:
    """One host's view of the shared store: its own pool, log and halt store."""

    def __init__(self, url: str, home, name: str = "h1"):
        self.db = Database(url)
        self.acklog = PgAckLog(self.db)
        self.halts = PgHalts(self.db, self.acklog, str(home), name)

    def close(self) -> None:
        self.db.close()


@pytest.fixture
def host(url, home):
    made = Host(url, home)
    yield made
    made.close()


def _halt(halts, severity: str, session: str = "s1", **more) -> str:
    return halts.record({"session_token": session, "halt_type": "security", "severity": severity,
                         "description": f"a {severity} halt", **more}, now=NOW).halt_id


def _unread_edit(session: str) -> dict:
    """The seed's first example: a change to a file the session has not read (critical)."""
    return {"session_token": session, "current_context": {"target_files": ["src/auth.js"], "files_read": []},
            "proposed_changes": {"files_to_modify": ["src/auth.js"]}}


# ------------------------------------------------------------------ beyond the store contract (which runs here too)
def test_three_failures_stored_by_the_hooks_halt_the_fourth_try(host):
    halts = host.halts
    for second in range(3):
        halts.record_attempt("s7", "deploy", error="exit 1", now=NOW + second)
    verdict = halts.check({"session_token": "s7", "task_id": "deploy", "current_context": {"operation": "deploy"}},
                          now=NOW + 4).as_json()
    assert "three_strikes" in {r["condition_name"] for r in verdict["halt_reasons"]}
    fresh = halts.check({"session_token": "s7", "task_id": "deploy",
                         "current_context": {"operation": "deploy", "user_instructions": ["try again"]}},
                        now=NOW + 5).as_json()
    assert "three_strikes" not in {r["condition_name"] for r in fresh["halt_reasons"]}
    with halts.unit(now=NOW + 6) as unit:
        assert unit.stored_attempts("s7", "deploy") == (0, [])


def test_an_unacknowledged_halt_times_out_and_pauses_its_session(host):
    halts = host.halts
    halts.configure({"condition_name": "privilege_escalation", "escalate_after_minutes": 1}, now=NOW)
    _halt(halts, "critical", session="s8", condition_name="privilege_escalation")
    assert halts.state("s8", now=NOW + 30) == "halted"
    assert halts.state("s8", now=NOW + 61) == "paused"
    assert [line.event for line in host.acklog.read(session="s8")] == ["halt_recorded", "halt_timeout"]


# ------------------------------------------------------------------ what a shared database shows
def test_two_hosts_record_and_acknowledge_at_once(url, home):
    """Two hosts' pools writing at once: every halt recorded and acknowledged
    once, one line each in one chain; the same halt acknowledged from both at
    once is acknowledged once, the other refused."""
    hosts = [Host(url, home, "h1"), Host(url, home, "h2")]
    failures: list[BaseException] = []
    try:
        def work(host, n):
            try:
                for i in range(10):
                    halt_id = _halt(host.halts, "high", session=f"{host.halts.host}-{n}-{i}")
                    host.halts.acknowledge(halt_id, f"{host.halts.host}-{n}-{i}", "resolved", source="ops",
                                           now=NOW + 1)
            except BaseException as exc:  # reported below, not lost in the thread
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(host, n)) for host in hosts for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert failures == []
        shared = _halt(hosts[0].halts, "high", session="shared")
        outcomes: list[str] = []

        def acknowledge(host):
            try:
                host.halts.acknowledge(shared, "shared", "resolved", source=host.halts.host, now=NOW + 2)
                outcomes.append("acknowledged")
            except HaltRefused:
                outcomes.append("refused")

        racers = [threading.Thread(target=acknowledge, args=(host,)) for host in hosts]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(timeout=60)
        assert sorted(outcomes) == ["acknowledged", "refused"]
        lines = hosts[1].acklog.read()
        assert [line.event for line in lines].count("halt_recorded") == 41
        assert [line.event for line in lines].count("halt_ack") == 41
        assert hosts[0].acklog.verify().ok
        listed = hosts[1].halts.listing(HaltQuery.of({"include_acknowledged": True, "limit": 100}), now=NOW + 3)
        assert listed.total_count == 41 and listed.unacknowledged_count == 0
        with hosts[1].halts.unit(now=NOW + 3) as unit:
            assert unit.states() == {}
    finally:
        for host in hosts:
            host.close()


def test_every_halt_write_tells_listeners_its_session(host):
    stop = threading.Event()
    deadline = threading.Timer(20, stop.set)  # never hangs: the listener ends by then whatever arrives
    deadline.start()
    notices = host.db.listen(stop=stop, wake_seconds=0.1)
    try:
        assert next(notices) is None  # listening from here on
        halt_id = _halt(host.halts, "high", session="s1")
        host.halts.acknowledge(halt_id, "s1", "resolved", source="ops", now=NOW + 1)
        host.halts.configure({"condition_name": "three_strikes", "enabled": False}, now=NOW + 2)
        seen = []
        for notice in notices:
            if notice and notice.get("store") == "halts":
                seen.append(notice["key"])
            if len(seen) == 3:
                stop.set()
        assert seen == ["s1", "s1", ""]
    finally:
        deadline.cancel()
        stop.set()
        notices.close()  # its connection too


def test_ids_are_uuids_generated_by_leash(host):
    halt_id = _halt(host.halts, "high")
    assert uuid.UUID(halt_id).version == 4 and str(uuid.UUID(halt_id)) == halt_id
    types = dict(host.db.rows("SELECT column_name, udt_name FROM information_schema.columns"
                              " WHERE table_name = 'halt_events' AND table_schema = current_schema()"))
    assert (types["id"], types["context"], types["triggered_at"]) == ("uuid", "jsonb", "timestamptz")
    assert (types["halt_type"], types["severity"], types["resolution"]) == \
        ("halt_type", "severity_level", "halt_resolution")
    config_ids = [row[0] for row in host.db.rows("SELECT id FROM halt_conditions_config")]
    assert len(config_ids) >= 21 and all(isinstance(i, uuid.UUID) and i.version == 4 for i in config_ids)


def test_the_seeds_partial_indexes_exist(host):
    indexes = dict(host.db.rows("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'halt_events'"
                                " AND schemaname = current_schema()"))
    for name in ("idx_halt_events_acknowledged", "idx_halt_events_session_unack"):
        assert "WHERE (acknowledged = false)" in indexes[name]
    assert {"idx_halt_events_session", "idx_halt_events_task", "idx_halt_events_type", "idx_halt_events_severity",
            "idx_halt_events_triggered", "idx_halt_events_session_type"} <= set(indexes)


def test_context_round_trips_as_jsonb_and_is_masked(host):
    context = {"commands": ["deploy --prod"], "file_paths": ["src/a.py"], "attempt_number": 2,
               "nested": {"token": SECRET}}
    halt_id = _halt(host.halts, "high", context=context)
    ((kind, command, attempt, token),) = host.db.rows(
        "SELECT jsonb_typeof(context), context->'commands'->>0, (context->>'attempt_number')::int,"
        " context->'nested'->>'token' FROM halt_events WHERE id = %s", (halt_id,))
    assert (kind, command, attempt) == ("object", "deploy --prod", 2)
    assert SECRET not in token and "REDACTED" in token  # masked before it was stored
    import json

    found = json.loads(host.halts.find(halt_id).context)  # the file backend's shape: JSON text
    assert found["commands"] == ["deploy --prod"] and found["nested"]["token"] == token


def test_a_units_reads_see_one_state(url, home, host):
    """Another host's halt committed during a unit is not seen by that unit's
    reads; the next unit sees it."""
    other = Host(url, home, "h2")
    try:
        with host.halts.unit(now=NOW) as unit:
            assert unit.state("s1") == "active"
            _halt(other.halts, "high")
            assert unit.state("s1") == "active" and unit.pending() == [] and unit.states() == {}
        with host.halts.unit(now=NOW) as unit:
            assert unit.state("s1") == "halted" and len(unit.pending()) == 1
    finally:
        other.close()


def test_a_write_by_another_store_inside_a_unit_starts_from_the_committed_state(url, home, host):
    """A unit's snapshot is open on this thread's connection; another host
    appends meanwhile; a write on this thread (the ack log here) still extends
    the chain from its true tip, and the unit's next read sees the new state."""
    other = Host(url, home, "h2")
    try:
        with host.halts.unit(now=NOW) as unit:
            assert unit.state("s1") == "active"  # the snapshot is open from here
            _halt(other.halts, "high")
            line = host.acklog.append("stop_ack", source="ops", session_id="s1", now=NOW)
            assert line.seq == 2 and unit.state("s1") == "halted"
        assert host.acklog.verify().ok
    finally:
        other.close()


def test_the_same_lines_as_the_file_backend(host, tmp_path):
    """Recording, escalating and dismissing a halt logs the same events with
    the same keys and values on either backend (ids and times aside)."""
    file_home = tmp_path / "file-home"
    files = FileHalts(str(file_home))

    def act(halts):
        halt_id = _halt(halts, "critical", task_id="t1", context={"commands": ["x"]})
        halts.acknowledge(halt_id, "s1", "escalated", notes="look", source="ops", now=NOW + 1)
        halts.acknowledge(halt_id, "s1", "dismissed", caution=True, source="ops", now=NOW + 2)

    act(files)
    act(host.halts)
    from leash.core.state.acklog import AckLog

    def shape(line):
        return {k: v for k, v in dict(line).items() if k not in ("halt_id", "seq", "prev", "hash")}

    file_lines = [shape(line) for line in AckLog(file_home).read().entries]
    pg_lines = [shape(line.as_dict()) for line in host.acklog.read()]
    assert pg_lines == file_lines and [line["event"] for line in pg_lines] == \
        ["halt_recorded", "halt_escalate", "halt_dismiss"]

    def listed(halts):
        answer = halts.listing(HaltQuery.of({"include_acknowledged": True}), now=NOW + 3).as_json()
        return {**answer, "halts": [{k: v for k, v in h.items() if k != "halt_id"} for h in answer["halts"]]}

    assert listed(host.halts) == listed(files) and listed(files)["total_count"] == 1
    pg_found, file_found = (halts.find(halts.listing(HaltQuery(include_acknowledged=True), now=NOW + 3).halts[0]
                                       .halt_id) for halts in (host.halts, files))
    assert set(pg_found.as_dict()) == set(file_found.as_dict())
    assert {k: v for k, v in pg_found.as_dict().items() if k not in ("id", "context")} == \
        {k: v for k, v in file_found.as_dict().items() if k not in ("id", "context")}


def test_settled_halts_older_than_ninety_days_move_to_the_archive(url, home):
    old = NOW - 100 * 86_400
    early = Host(url, home)
    try:
        halt_id = early.halts.record({"session_token": "s1", "halt_type": "scope", "severity": "high",
                                      "description": "old"}, now=old).halt_id
        early.halts.acknowledge(halt_id, "s1", "resolved", source="ops", now=old + 1)
    finally:
        early.close()
    later = Host(url, home)  # another process, a hundred days on
    try:
        assert later.db.rows("SELECT count(*) FROM halt_events") == [(1,)]
        pending = _halt(later.halts, "high", session="s2")
        with later.halts.unit(now=NOW) as unit:
            assert [h.halt_id for h in unit.pending()] == [pending]
        assert later.halts.listing(HaltQuery.of({"include_acknowledged": True}), now=NOW).total_count == 1
        assert later.db.rows("SELECT id::text FROM halt_events_archive") == [(halt_id,)]
    finally:
        later.close()


def test_an_unreachable_server_fails_closed_in_one_line(tmp_path, home):
    db = Database(f"postgresql://leash:s3cret-pw@/postgres?host={tmp_path}", migrate_schema=False)
    try:
        halts = PgHalts(db, PgAckLog(db), str(home), "h1")
        with pytest.raises(HaltStoreUnavailable) as raised:
            halts.state("s1", now=NOW)
        message = str(raised.value)
        assert "\n" not in message and "s3cret-pw" not in message and message
        with pytest.raises(HaltStoreUnavailable):
            halts.acknowledge("0" * 8 + "-0000-4000-8000-" + "0" * 12, "s1", "resolved", now=NOW)
        with pytest.raises(HaltStoreUnavailable):
            halts.record_reads("s1", ["/a"], now=NOW)
        verdict = halts.check({"session_token": "s1", "current_context": {}}, now=NOW).as_json()
        assert verdict["should_halt"] and verdict["highest_severity"] == "critical"
        assert "s3cret-pw" not in verdict["halt_reasons"][0]["description"]
    finally:
        db.close()
