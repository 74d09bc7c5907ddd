"""Every write reaches every leashd's mirror, ``leash doctor --repair``'s
included (a real PostgreSQL): a tampered ``log_state`` row that leashd took
in is mended by repair, and leashd's gate holds again at once, as ``leash
status`` says; a write no notice announced is read again at the next mark
check (once a second); a state whose head line was deleted from the log holds
everything, and nothing more is appended over the gap."""
from __future__ import annotations

import json

import pytest

from leash.core.state.stop import StopStateUnreadable
from leash.core.store import pgmirror
from leash.core.store.pg import StoreOffline, notify
from leash.core.store.postgres import PostgresBackend

from ..support.daemon import exchange, hook_request, sockets, start_daemon
from ..support.waiting import eventually

NOW = 1_900_000_000.0
NOTHING_STOPPED = '{"sessions": {}, "fleet": null}'


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


def settled(mirrored, *stopped: str) -> None:
    """The mirror has had the stop's notice and holds a value read after it."""
    assert eventually(lambda: mirrored.mirror.generations.get("stops", 0) >= 1)
    assert eventually(lambda: all(name in mirrored.stops.stopped() for name in stopped))


def tamper_stops(backend, *, announce: bool) -> None:
    """What the runtime role's credentials allow: the stored fold of the stops rewritten (and announced)."""
    with backend.db.transaction() as conn:
        conn.execute("UPDATE log_state SET state = %s WHERE store = 'stops'", (NOTHING_STOPPED,))
        if announce:
            notify(conn, "stops")


def test_doctor_repair_reaches_the_mirror_by_its_notice(url, home, tmp_path, monkeypatch):
    monkeypatch.setattr(pgmirror, "MARK_CHECK_SECONDS", 3600)  # only the notice can tell it here
    mirrored = PostgresBackend(url, home=home, host="a", mirrored=True)
    other = PostgresBackend(url, home=tmp_path / "other", host="c")
    try:
        other.stops.stop("victim", source="ops", reason="hold", now=NOW)
        settled(mirrored, "victim")
        tamper_stops(other, announce=True)
        assert eventually(lambda: mirrored.stops.stopped() == {})  # leashd took the tampered row in
        findings = [(f.level, f.subject) for f in other.examine(repair=True, now=NOW + 1)]
        assert ("fixed", "stops") in findings, findings
        assert eventually(lambda: "victim" in mirrored.stops.stopped(), seconds=5)
    finally:
        mirrored.close()
        other.close()


def test_a_write_no_notice_announced_is_read_again_at_the_next_mark_check(url, home, tmp_path):
    mirrored = PostgresBackend(url, home=home, host="a", mirrored=True)
    other = PostgresBackend(url, home=tmp_path / "other", host="c")
    try:
        assert mirrored.mirror.check_seconds == pgmirror.MARK_CHECK_SECONDS <= 1.0  # "within a second"
        other.stops.stop("victim", source="ops", reason="hold", now=NOW)
        settled(mirrored, "victim")
        seen = mirrored.mirror.stamp("stops")
        tamper_stops(other, announce=False)  # as a leash that sends no notice would write it
        assert eventually(lambda: mirrored.stops.stopped() == {}, seconds=10)
        # no notice came: the mark check found the row moved and bumped the store's generation
        epoch, generation = mirrored.mirror.stamp("stops")
        assert epoch == seen[0] and generation > seen[1]
        other.stops.stop("later", source="ops", now=NOW + 1)  # and a notice still works after it
        assert eventually(lambda: "later" in mirrored.stops.stopped())
    finally:
        mirrored.close()
        other.close()


def test_doctor_repair_reaches_a_running_leashd(url, home, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("LEASH_STORE_URL", url)
    monkeypatch.setattr(pgmirror, "MARK_CHECK_SECONDS", 3600)
    daemon = start_daemon(home)
    other = PostgresBackend(url, home=tmp_path / "other", host="c")
    call = hook_request("pre-tool-use", {"session_id": "victim", "hook_event_name": "PreToolUse",
                                         "tool_name": "Bash", "tool_input": {"command": "touch x"}, "cwd": "/"})

    def allowed() -> bool:
        (reply,) = exchange(sockets(home)[0], call)
        return reply["stdout"] == ""

    try:
        other.stops.stop("victim", source="ops", reason="hold", now=NOW)
        assert eventually(lambda: not allowed())
        tamper_stops(other, announce=True)
        assert eventually(allowed)
        repaired = cli("doctor", "--repair")
        assert "fixed stops" in repaired.out.replace(":", ""), repaired
        status = json.loads(cli("status", "--json").out)
        assert [s["session_id"] for s in status["stopped_sessions"]] == ["victim"]
        assert eventually(lambda: not allowed(), seconds=5)  # the gate agrees with status, without a restart
    finally:
        other.close()
        daemon.close()


def test_a_state_whose_line_was_deleted_holds_everything(url, home, tmp_path):
    backend = PostgresBackend(url, home=home, host="a")
    try:
        backend.stops.stop("other", source="ops", now=NOW)
        backend.stops.stop("victim", source="ops", now=NOW + 1)
        with backend.db.transaction() as conn:  # one role for both: it owns the table and can do this
            conn.execute("ALTER TABLE acklog DISABLE TRIGGER acklog_append_only")
            conn.execute("DELETE FROM acklog WHERE seq = 2")
        fresh = PostgresBackend(url, home=tmp_path / "fresh", host="c")  # nothing cached
        try:
            with pytest.raises(StopStateUnreadable, match="the ack log is shorter than its head"):
                fresh.stops.current()
            with pytest.raises(StoreOffline, match="the ack log is shorter than its head"):
                fresh.stops.stop("third", source="ops", now=NOW + 2)  # it would take line 2's place
            report = fresh.acklog.verify()
            assert not report.ok and "the stops state names line 2 (cut)" in report.problem
        finally:
            fresh.close()
    finally:
        backend.close()
