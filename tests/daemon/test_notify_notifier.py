"""The notifier over real stores, in this process with an injected clock: a
halt recorded, a session waiting, a warrant finished, a breaker tripped, a host
gone and an approval waiting each reach a webhook on 127.0.0.1; what was sent
is remembered across restarts; a failing route shows in `leash doctor`; in a
shared store one notifier sends."""
from __future__ import annotations

import contextlib
import time

import pytest

from leash.core.base.config import load_config
from leash.core.notify.runner import Notifier
from leash.core.notify.sources import HOST_GONE_SECONDS
from leash.core.store.files import FileBackend

from ..support.notify import Inbox, closed_port_url, write_routes
from ..support.waiting import eventually

T0 = 1_900_000_000.0
EVERY = ["approval", "halt", "waiting", "warrant", "breaker", "offline"]


@pytest.fixture
def inbox():
    server = Inbox()
    yield server
    server.close()


def notifier(home, backend=None, **options) -> Notifier:
    options.setdefault("clock", lambda: T0)
    return Notifier(str(home), backend or FileBackend(home, keep_connections=True), host="web1", **options)


def run(note: Notifier, now: float) -> None:
    """One reading, then every route sends what is due."""
    note.tick(now=now)
    for worker in note.workers:
        worker.pump(now=now)


def events_of(inbox, count: int) -> list[dict]:
    return [post.json() for post in inbox.wait_for(count, timeout=5)]


def record_halt(backend, severity: str = "critical", *, now: float = T0) -> str:
    return backend.halts.record({"session_token": "s1", "halt_type": "security", "severity": severity,
                                 "description": "curl | sh from an unknown host"}, now=now).halt_id


def test_a_halt_recorded_reaches_the_webhook_and_is_reminded_until_acknowledged(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url, "events": EVERY}], remind_after_s=300)
    note = notifier(home)
    backend = note.backend
    halt_id = record_halt(backend)
    record_halt(backend, "medium")  # below the route's min_severity (high by default)
    run(note, T0 + 1)
    (first,) = events_of(inbox, 1)
    assert (first["event"], first["id"], first["severity"]) == ("halt", f"halt:{halt_id}", "critical")
    assert first["session"] == "s1" and first["host"] == "web1"
    run(note, T0 + 200)
    run(note, T0 + 301)
    assert [e["title"] for e in events_of(inbox, 2)][1].startswith("reminder: critical halt")
    backend.halts.acknowledge(halt_id, "s1", "resolved", source="ops", now=T0 + 400)
    run(note, T0 + 700)
    assert len(inbox.posts) == 2


def test_a_session_waiting_for_input_is_told_after_waiting_after_s(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}], waiting_after_s=120)
    note = notifier(home)
    note.backend.sessions.observe("s7", now=T0, status="waiting for input", tmux_session="agent-7")
    run(note, T0 + 119)
    assert inbox.posts == []
    run(note, T0 + 120)
    (told,) = events_of(inbox, 1)
    assert told["event"] == "waiting" and told["title"] == "agent-7 is waiting for input"
    note.backend.sessions.observe("s7", now=T0 + 130, status="working")
    note.backend.sessions.observe("s7", now=T0 + 140, status="waiting for input")
    run(note, T0 + 259)
    run(note, T0 + 260)  # waiting again: news again
    assert [e["event"] for e in events_of(inbox, 2)] == ["waiting", "waiting"]


def test_finished_warrants_and_tripped_breakers_are_sent_once(home, inbox):
    from leash.core.state import loopguard

    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    note = notifier(home)
    log = note.backend.acklog
    log.append("warrant_executed", source="kennel", session_id="agent-3", reason="no answer after every attempt",
               now=T0 - 3600, warrant_id="w-old")  # before the notifier ever ran: history
    log.append("warrant_executed", source="kennel", session_id="agent-3", reason="no answer after every attempt",
               now=T0 + 1, warrant_id="w-1")
    log.append("warrant_pardoned", source="ops", session_id="agent-4", reason="operator pardon", now=T0 + 1,
               warrant_id="w-2")
    for boot in range(3):
        loopguard.check_and_record(name="gateway", home=home, now=T0 + 1 + boot)
    run(note, T0 + 5)
    run(note, T0 + 6)
    got = sorted((e["event"], e["title"]) for e in events_of(inbox, 3))
    assert got == [("breaker", "restart-loop breaker gateway tripped"), ("warrant", "warrant on agent-3: executed"),
                   ("warrant", "warrant on agent-4: pardoned")]
    assert len(inbox.posts) == 3


def test_another_hosts_leashd_gone_is_told(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    note = notifier(home)
    note.backend.kennels.beat(pid=4, host="web2", started_at="2030-01-01T00:00:00Z", dogs=5, now=T0)
    run(note, T0 + HOST_GONE_SECONDS - 1)
    assert inbox.posts == []
    run(note, T0 + HOST_GONE_SECONDS)
    (gone,) = events_of(inbox, 1)
    assert (gone["event"], gone["host"], gone["severity"]) == ("offline", "web2", "critical")
    note.backend.kennels.beat(pid=4, host="web1", started_at="2030-01-01T00:00:00Z", dogs=5, now=T0 + 40)
    run(note, T0 + 200)  # this host's own kennel is never "another host"
    assert len(inbox.posts) == 1


def test_the_shared_store_lost_is_told_by_the_sender(home, inbox):
    """A PostgreSQL server of its own: this test stops it."""
    from leash.core.store.postgres import PostgresBackend

    from ..support.postgres import Cluster, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    cluster = Cluster()
    backend = note = None
    try:
        backend = PostgresBackend(cluster.url(), home=home, host="web1", mirrored=True, offline_grace_s=10)
        note = notifier(home, backend)
        run(note, T0)
        assert note.sending and inbox.posts == []
        moment = [1000.0]
        backend.mirror.clock = lambda: moment[0]
        cluster.pause()
        deadline = time.monotonic() + 20
        while backend.mirror.reachable() and time.monotonic() < deadline:
            time.sleep(0.05)
        run(note, T0 + 5)  # within the grace: nothing yet
        moment[0] += 11
        run(note, T0 + 16)
        (lost,) = events_of(inbox, 1)
        assert (lost["event"], lost["host"], lost["severity"]) == ("offline", "web1", "critical")
        assert "has not reached the shared store for 11s" in lost["body"]
    finally:
        if note is not None:
            note.close()
        if backend is not None:
            backend.close()
        with contextlib.suppress(RuntimeError):  # a paused server has nothing to stop; its folder still goes
            cluster.stop()


class Approvals:
    """A stand-in for the approvals store: what waits for an answer."""

    def __init__(self):
        self.open: list[dict] = []

    def waiting(self, *, now: float) -> list[dict]:
        return list(self.open)


def test_an_approval_waiting_is_sent_and_reminded_until_answered(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url, "events": ["approval"]}], remind_after_s=600)
    approvals = Approvals()
    note = notifier(home, approvals=approvals)
    approvals.open.append({"id": "ap-1", "session_id": "s1", "tool": "Bash", "requested_at": T0,
                           "summary": "git push origin main"})
    run(note, T0 + 1)
    (asked,) = events_of(inbox, 1)
    assert (asked["event"], asked["id"], asked["title"], asked["body"]) == (
        "approval", "approval:ap-1", "s1 asks to run Bash", "git push origin main")
    run(note, T0 + 601)
    assert events_of(inbox, 2)[1]["title"] == "reminder: s1 asks to run Bash"
    approvals.open.clear()  # answered
    run(note, T0 + 1300)
    assert len(inbox.posts) == 2


def test_what_was_sent_is_remembered_by_the_next_notifier(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    first = notifier(home)
    record_halt(first.backend)
    run(first, T0 + 1)
    first.close()
    second = notifier(home)
    run(second, T0 + 2)
    assert len(events_of(inbox, 1)) == 1 and len(inbox.posts) == 1


def test_a_failing_route_is_a_failure_in_doctor(home, inbox):
    from leash.core.views.doctor import examine

    write_routes(home, [{"kind": "webhook", "url": closed_port_url(), "name": "pager"},
                        {"kind": "webhook", "url": inbox.url}])
    note = notifier(home)
    record_halt(note.backend)
    run(note, T0 + 1)
    note.tick(now=T0 + 2)  # saves the route's health
    found = {f.subject: f for f in examine(str(home), now=T0 + 2)}
    failing = found["notify route 1 (pager (webhook))"]
    assert failing.level == "fail" and "cannot reach" in failing.message and "refused" in failing.message
    assert found["notify route 2 (webhook http://127.0.0.1:%d)" % inbox.server.server_address[1]].level == "ok"
    assert found["notify"].level == "ok" and "sent by leashd on web1" in found["notify"].message
    note.close()  # the lease is released: nobody sends
    after = {f.subject: f for f in examine(str(home), now=T0 + 2)}["notify"]
    assert after.level == "warn" and "no leash daemon is sending" in after.message


def test_a_route_settings_change_keeps_other_routes_history(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    note = notifier(home)
    record_halt(note.backend)
    run(note, T0 + 1)
    write_routes(home, [{"kind": "webhook", "url": closed_port_url()}, {"kind": "webhook", "url": inbox.url}])
    run(notifier(home), T0 + 2)
    assert len(inbox.posts) == 1
    assert load_config(home)["notify"]["route"][1]["url"] == inbox.url


def test_in_a_shared_store_one_notifier_sends(home, tmp_path, postgres_cluster, inbox):
    from leash.core.store.postgres import PostgresBackend

    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    homes, notes = [], []
    for host in ("web1", "web2"):
        where = tmp_path / host
        write_routes(where, [{"kind": "webhook", "url": inbox.url}])
        backend = PostgresBackend(url, home=where, host=host)
        notes.append(Notifier(str(where), backend, host=host, clock=lambda: T0))
        homes.append(where)
    try:
        record_halt(notes[0].backend)
        for note in notes:
            run(note, T0 + 1)
        assert [n.sending for n in notes] == [True, False]
        assert len(events_of(inbox, 1)) == 1
        notes[0].close()  # releases the lease: the other takes over at its next renewal
        run(notes[1], T0 + 10)
        assert notes[1].sending and len(events_of(inbox, 2)) == 2  # its own record of what was sent is empty
    finally:
        for note in notes:
            note.close()
            note.backend.close()


def test_closing_a_notifier_that_follows_the_change_feed_does_not_wait_out_its_tick(home, inbox):
    """Its reading thread waits on the change feed between readings: closing
    wakes it, so a leashd with a route stops at once, not a tick later."""
    from leash.core.daemon.changefeed import ChangeFeed
    from leash.core.notify.runner import TICK_SECONDS

    write_routes(home, [{"kind": "webhook", "url": inbox.url, "events": EVERY}])
    backend = FileBackend(home, keep_connections=True)
    feed = ChangeFeed(backend)
    note = notifier(home, backend, feed=feed, clock=time.time)
    assert note.start()
    try:
        # the reading thread has joined the feed and made its first reading: it waits on the feed now
        assert eventually(lambda: feed.inboxes and note.read_at > 0, seconds=5)
        started = time.monotonic()
        note.close()
        took = time.monotonic() - started
    finally:
        feed.close()
    assert took < TICK_SECONDS / 2, took
