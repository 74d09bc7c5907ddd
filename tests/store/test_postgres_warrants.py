"""Warrants, kennel heartbeats, breakers and the reply ledger on a real
PostgreSQL server (``postgres_cluster``). The store contract's behaviours run
on these stores in test_store_contract.py; here is what only a shared store
has: hosts (a warrant for ``HOST/NAME`` is that host's), claims under ``SKIP LOCKED`` from many
connections at once, leases that lapse into orphans and renewals that keep
them, change notices, the fail-open policies when the server cannot be
reached, and a kennel working its host's warrants end to end over real tmux."""
from __future__ import annotations

import asyncio
import os
import sys
import threading
from types import SimpleNamespace

import pytest

from leash.core.base.clock import iso
from leash.core.state.warrants import WarrantError
from leash.core.store.pg import Database, StoreOffline
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.pgsmall import PgBreakers, PgKennels, PgReplies
from leash.core.store.pgwarrants import LEASE_SECONDS, PgWarrants
from leash.core.store.records_warrants import DogRecord, KennelOwner

from ..support.waiting import wait_for

NOW = 1_900_000_000.0
OWNER = KennelOwner.of({"pid": 1, "host": "test"})


@pytest.fixture(autouse=True)
def private_tmux(monkeypatch, tmp_path):
    """Targets are bound on this test's own tmux socket (no server there unless a test starts one)."""
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmp_path / "tmux.sock"))


@pytest.fixture
def url(postgres_cluster):
    return postgres_cluster.url(postgres_cluster.fresh_schema())


@pytest.fixture
def open_stores(url, home):
    """``open_stores(host)``: one client of the shared store (its own pool), as a host's leashd holds it."""
    made = []

    def open_for(host: str = "h1"):
        db = Database(url)
        made.append(db)
        log = PgAckLog(db)
        made_here = {name: kind(db, log, str(home), host) for name, kind in
                     (("warrants", PgWarrants), ("breakers", PgBreakers), ("replies", PgReplies),
                      ("kennels", PgKennels))}
        return SimpleNamespace(db=db, acklog=log, **made_here)

    yield open_for
    for db in made:
        db.close()


@pytest.fixture
def h1(open_stores):
    return open_stores("h1")


@pytest.fixture
def h1_again(open_stores):
    """Another worker on host h1 (another process's pool)."""
    return open_stores("h1")


def events(stores, **query) -> list[str]:
    return [line.event for line in stores.acklog.read(**query)]


# ------------------------------------------------------------------ beyond the store contract (which runs here too)
def test_breakers_are_each_hosts_own(open_stores):
    web, db = open_stores("web"), open_stores("db")
    for n in range(3):
        web.breakers.record_boot("gw", window_seconds=60, now=NOW + n)
    assert web.breakers.tripped("gw", max_restarts=3, window_seconds=60, now=NOW + 3)
    assert not db.breakers.tripped("gw", max_restarts=3, window_seconds=60, now=NOW + 3) and db.breakers.names() == []


def test_a_kennel_on_a_gone_pid_is_judged_by_its_heartbeat_alone(h1):
    """No signal is sent: a pid that does not exist here may be another host's."""
    h1.kennels.beat(pid=2**22 + 17, host="h1", started_at=iso(NOW), dogs=1, now=NOW)
    assert h1.kennels.alive(now=NOW + 1).pid == 2**22 + 17


# ------------------------------------------------------------------ hosts, leases, many workers
def test_a_warrant_for_another_host_is_claimed_only_by_that_hosts_store(h1, open_stores):
    c = open_stores("c")
    warrant, filed = h1.warrants.file("c/agent-1", reason="wedged", now=NOW)
    assert filed and warrant.extra["host"] == "c" and "target_id" not in warrant.as_dict()  # bound where it runs
    mine, _ = h1.warrants.file("agent-1", reason="wedged", now=NOW + 1)  # h1's own agent-1: another session
    assert mine.id != warrant.id and h1.warrants.file("h1/agent-1", reason="x", now=NOW + 2)[0].id == mine.id
    assert c.warrants.file("agent-1", reason="again", now=NOW + 3)[0].id == warrant.id  # c's agent-1: live already
    assert c.warrants.has_pending() and h1.warrants.has_pending()
    claim = h1.warrants.claim_next(owner=OWNER, now=NOW + 4)
    assert claim.warrant.id == mine.id and h1.warrants.claim_next(owner=OWNER, now=NOW + 4) is None
    theirs = c.warrants.claim_next(owner=OWNER, now=NOW + 4)
    assert theirs.warrant.id == warrant.id and theirs.warrant.target == "c/agent-1"
    assert theirs.warrant.target_id is None  # no tmux session agent-1 on this test's host "c": already dead
    claim.release()
    theirs.release()
    assert [o.warrant.id for o in h1.warrants.claim_orphans(owner=OWNER, now=NOW + 5)] == [mine.id]
    assert [o.warrant.id for o in c.warrants.claim_orphans(owner=OWNER, now=NOW + 5)] == [warrant.id]
    assert sorted(w.id for w in h1.warrants.active()) == sorted([warrant.id, mine.id])  # listings show every host


def test_four_workers_claiming_at_once_never_share_a_warrant(open_stores):
    workers = [open_stores("h1") for _ in range(4)]
    filed = {workers[0].warrants.file(f"agent-{n}", reason="wedged", now=NOW + n)[0].id for n in range(24)}
    taken: list[list] = [[] for _ in workers]
    start = threading.Barrier(len(workers))

    def drain(n):
        start.wait()
        while (claim := workers[n].warrants.claim_next(owner=KennelOwner.of({"pid": n}), now=NOW + 30)) is not None:
            taken[n].append(claim.warrant.id)

    threads = [threading.Thread(target=drain, args=(n,)) for n in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    ids = [warrant_id for claims in taken for warrant_id in claims]
    assert len(ids) == len(set(ids)) == len(filed) and set(ids) == filed
    assert not workers[0].warrants.has_pending() and len(workers[0].warrants.active()) == len(filed)


def test_a_lapsed_lease_makes_an_orphan_another_worker_resumes(h1, h1_again):
    warrant, _ = h1.warrants.file("agent-7", reason="wedged", now=NOW)
    stalled = h1.warrants.claim_next(owner=KennelOwner.of({"pid": 1}), now=NOW)
    stalled.state.update(state="interrogating", attempt=2, next_timeout=iso(NOW + 120))
    stalled.save()
    assert h1_again.warrants.claim_orphans(owner=KennelOwner.of({"pid": 2}), now=NOW + LEASE_SECONDS - 1) == []
    (resumed,) = h1_again.warrants.claim_orphans(owner=KennelOwner.of({"pid": 2}), now=NOW + LEASE_SECONDS + 1)
    assert (resumed.state.state, resumed.state.attempt, resumed.state.next_timeout) == (
        "interrogating", 2, iso(NOW + 120))
    assert resumed.state.kennel == {"pid": 2}
    # the stalled worker has lost it: it cannot renew, save or complete it
    assert not stalled.renew(now=NOW + LEASE_SECONDS + 2)
    with pytest.raises(WarrantError):
        stalled.save()
    with pytest.raises(WarrantError):
        stalled.complete("executed", now=NOW + LEASE_SECONDS + 2, timeouts=(1, 2, 3))
    assert resumed.renew(now=NOW + LEASE_SECONDS + 3)
    assert resumed.complete("pardoned", by="ops", now=NOW + LEASE_SECONDS + 4).outcome == "pardoned"
    assert events(h1) == ["warrant_filed", "warrant_pardoned", "epitaph"]


def test_a_renewed_lease_keeps_the_warrant(h1, h1_again):
    h1.warrants.file("agent-8", reason="wedged", now=NOW)
    claim = h1.warrants.claim_next(owner=OWNER, now=NOW)
    for beat in range(1, 4):
        assert claim.renew(now=NOW + beat * LEASE_SECONDS * 0.9)
    last_renewal = NOW + 3 * LEASE_SECONDS * 0.9
    assert h1_again.warrants.claim_orphans(owner=OWNER, now=last_renewal + LEASE_SECONDS - 1) == []
    assert len(h1_again.warrants.claim_orphans(owner=OWNER, now=last_renewal + LEASE_SECONDS + 1)) == 1


def test_an_idle_active_warrant_is_pardoned_at_once(h1, h1_again):
    """Its worker's lease lapsed: no one would hear a request, so the pardoner closes it."""
    warrant, _ = h1.warrants.file("agent-4", reason="wedged", now=NOW)
    h1.warrants.claim_next(owner=OWNER, now=NOW)
    outcome, record = h1_again.warrants.pardon(warrant.id, source="ops", reason="mine", now=NOW + LEASE_SECONDS + 1)
    assert outcome == "pardoned" and record.outcome == "pardoned"
    assert h1.warrants.find(warrant.id)[0] == "completed" and h1.warrants.claim_orphans(owner=OWNER, now=NOW + 99) == []


def test_ids_sort_in_filing_order(h1):
    ids = [h1.warrants.file(f"agent-{n}", reason="wedged", now=NOW + n / 100)[0].id for n in range(5)]
    assert sorted(ids) == ids == [w.id for w in h1.warrants.pending()]
    assert [c.warrant.id for c in iter(lambda: h1.warrants.claim_next(owner=OWNER, now=NOW + 1), None)] == ids


def test_bad_targets_are_refused(h1):
    for bad in ("", "c/", "/agent-1", "agent\x1b[2J", "x" * 200):
        with pytest.raises(ValueError):
            h1.warrants.file(bad, reason="wedged", now=NOW)
    with pytest.raises(ValueError):
        h1.warrants.file("agent-1", reason=" ", now=NOW)
    assert h1.warrants.listing().pending == [] and events(h1) == []


def test_writes_tell_listeners(h1):
    stop = threading.Event()
    notices = h1.db.listen(stop=stop, wake_seconds=0.1)
    assert next(notices) is None  # listening from here on
    warrant, _ = h1.warrants.file("agent-1", reason="wedged", now=NOW)
    h1.breakers.record_boot("gw", window_seconds=60, now=NOW)
    h1.replies.record("chat", "t", "in", now=NOW)
    h1.kennels.beat(pid=1, host="h1", started_at=iso(NOW), dogs=1, now=NOW)
    wanted = {("warrants", warrant.id), ("breakers", "gw"), ("kennels", "h1")}
    seen: set = set()
    give_up = threading.Timer(10, stop.set)  # the listener ends when it is set, notices or not
    give_up.start()
    try:
        for notice in notices:
            if notice is not None:
                seen.add((notice["store"], notice["key"]))
            if wanted <= seen and "replies" in {store for store, _ in seen}:
                stop.set()
    finally:
        give_up.cancel()
    assert wanted <= seen and "replies" in {store for store, _ in seen}


# ------------------------------------------------------------------ an unreachable server
def test_an_unreachable_server_fails_as_the_file_backend_does(tmp_path, home):
    db = Database(f"postgresql://leash@/leash?host={tmp_path}", migrate_schema=False)
    log = PgAckLog(db)
    warrants, breakers = PgWarrants(db, log, str(home), "h1"), PgBreakers(db, log, str(home), "h1")
    kennels, replies = PgKennels(db, log, str(home), "h1"), PgReplies(db, log, str(home), "h1")
    assert not breakers.tripped("gw", max_restarts=1, window_seconds=60, now=NOW)  # fail open
    assert breakers.record_boot("gw", window_seconds=60, now=NOW) == [NOW]  # best effort
    assert not breakers.check_and_record("gw", max_restarts=3, window_seconds=60, now=NOW)
    assert kennels.alive(now=NOW) is None
    for call in (warrants.has_pending, warrants.listing, lambda: warrants.file("a", reason="r", now=NOW),
                 lambda: warrants.claim_next(owner=OWNER, now=NOW), lambda: replies.pending("chat", "t"),
                 lambda: kennels.beat(pid=1, host="h1", started_at=iso(NOW), dogs=1, now=NOW)):
        with pytest.raises(StoreOffline):
            call()
    db.close()


# ------------------------------------------------------------------ a kennel over the shared store


def test_a_kennel_works_its_hosts_warrants_on_the_shared_store(url, home, tmux, tmp_path, open_stores):
    """Host c's kennel executes a silent session and pardons an answering one,
    both filed from host h1; h1's own warrant is left to h1."""
    from leash.core.store.postgres import PostgresBackend
    from leash.core.warrants.kennel import Kennel

    answering = tmp_path / "answering.py"
    answering.write_text("import sys\nprint('ready', flush=True)\nfor line in sys.stdin:\n"
                         "    if 'HEALTH CHECK' in line:\n        print('ALIVE', flush=True)\n")
    tmux.new_session("mute", "echo ready; exec cat > /dev/null")
    tmux.new_session("good", f"{sys.executable} {answering}")
    wait_for(lambda: all(any("ready" in line for line in tmux.capture(n)) for n in ("mute", "good")),
             what="the panes to start")
    h1 = open_stores("h1")
    mute, _ = h1.warrants.file("c/mute", reason="no output", requester="deacon")
    good, _ = h1.warrants.file("c/good", reason="no output", requester="deacon")
    left, _ = h1.warrants.file("mute", reason="h1's own", requester="deacon")
    backend = PostgresBackend(url, home=home, host="c")
    try:
        kennel = Kennel(backend=backend, tmux=tmux, timeouts=[0.3, 0.3, 0.3], poll_seconds=0.05, until_idle=True,
                        handle_signals=False)
        done = {state["warrant"]["id"]: state for state in asyncio.run(kennel.run())}
    finally:
        backend.close()
    assert (done[mute.id]["outcome"], done[mute.id]["attempt"]) == ("executed", 3) and not tmux.has_session("mute")
    assert done[good.id]["outcome"] == "pardoned" and tmux.has_session("good")
    assert set(done) == {mute.id, good.id} and h1.warrants.find(left.id)[0] == "pending"
    assert [c.id for c in h1.warrants.completed()] == [mute.id, good.id]
    assert events(h1, event="epitaph") == ["epitaph", "epitaph"] and h1.acklog.verify().ok
    assert h1.kennels.alive() is None  # c's kennel stopped cleanly, and it was never h1's


@pytest.mark.parametrize("protection", ["an agent inside it", "a lock bound to it before a rename"])
def test_a_hands_off_target_survives_on_the_shared_store(url, home, tmux, protection):
    """The shared store keeps this host's tmux names and ids as HOST/NAME: the
    kennel's hands-off check must see them so, or it kills what is locked."""
    from leash.core.store.postgres import PostgresBackend
    from leash.core.warrants.kennel import Kennel

    tmux.new_session("mute", "echo ready; exec cat > /dev/null")
    backend = PostgresBackend(url, home=home, host="c")
    try:
        bound = tmux.resolve("mute")["id"]
        if protection == "an agent inside it":
            backend.sessions.observe("agent-s1", tmux_session="c/mute", tmux_session_id=f"c/{bound}", entity="ezra")
            backend.locks.lock("ezra", hours=1, source="ops")
            target = "mute"
        else:
            backend.locks.lock("mute", hours=1, source="ops")
            tmux.server.cmd("rename-session", "-t", bound, "renamed")
            target = "renamed"
        warrant, _ = backend.warrants.file(target, reason="no output", requester="deacon")
        kennel = Kennel(backend=backend, tmux=tmux, timeouts=[0.1, 0.1, 0.1], poll_seconds=0.05, until_idle=True,
                        handle_signals=False)
        (done,) = asyncio.run(kennel.run())
    finally:
        backend.close()
    assert done["outcome"] == "blocked_hands_off" and tmux.has_session(bound)


def test_a_kennel_until_idle_does_not_wait_for_another_hosts_dogs(url, home, tmux, open_stores):
    from leash.core.store.postgres import PostgresBackend
    from leash.core.warrants.kennel import Kennel

    web = open_stores("web")
    web.warrants.file("web/agent-1", reason="wedged")
    assert web.warrants.claim_next(owner=OWNER) is not None  # web's dog is working it
    backend = PostgresBackend(url, home=home, host="c")
    try:
        kennel = Kennel(backend=backend, tmux=tmux, timeouts=[0.1], poll_seconds=0.05, until_idle=True,
                        handle_signals=False)
        gave_up = threading.Event()

        def give_up():  # only a kennel that waits for web's dog is still running then
            gave_up.set()
            kennel.request_stop()

        timer = threading.Timer(8, give_up)
        timer.start()
        try:
            assert asyncio.run(kennel.run()) == []
        finally:
            timer.cancel()
        assert not gave_up.is_set(), "c's kennel waited for web's dog"
    finally:
        backend.close()


# ------------------------------------------------------------------ a home copied in
def test_a_home_copied_brings_its_warrants_breakers_and_replies(home, url):
    from leash.core.store.copy import copy_home
    from leash.core.store.files import FileBackend
    from leash.core.store.postgres import PostgresBackend

    source = FileBackend(home)
    finished, _ = source.warrants.file("agent-1", reason="old", now=NOW)
    source.warrants.pardon(finished.id, source="ops", now=NOW + 1)
    working, _ = source.warrants.file("agent-2", reason="wedged", now=NOW + 2)
    waiting, _ = source.warrants.file("agent-3", reason="wedged", now=NOW + 3)
    claim = source.warrants.claim_next(owner=OWNER, now=NOW + 4)
    claim.state.update(state="interrogating", attempt=2)
    claim.save()
    assert source.warrants.pardon(working.id, source="ops", reason="mine", now=NOW + 5)[0] == "requested"
    claim.release()  # its kennel died
    for n in range(2):
        source.breakers.record_boot("gw", window_seconds=60, now=NOW + n)
    source.replies.record("chat", "t1", "in", now=NOW)
    report = copy_home(str(home), url, host="h1")
    assert {name: report.counts[name] for name in ("warrants", "breakers", "replies", "kennels")} == {
        "warrants": 3, "breakers": 1, "replies": 1, "kennels": 0}
    copied = PostgresBackend(url, home=home, host="h1")
    try:
        copied_dog = {**source.warrants.find(finished.id)[1].as_dict(), "warrant": {**finished.as_dict(), "host": "h1"}}
        assert copied.warrants.find(finished.id) == ("completed", DogRecord.of(copied_dog))
        assert [w.id for w in copied.warrants.pending()] == [waiting.id]
        assert copied.warrants.file("agent-3", reason="again", now=NOW + 6)[0].id == waiting.id  # still live
        (orphan,) = copied.warrants.claim_orphans(owner=OWNER, now=NOW + 6)  # this host's kennel resumes it
        assert (orphan.id, orphan.state.attempt, orphan.pardon_request().reason) == (working.id, 2, "mine")
        assert orphan.complete("pardoned", by="ops", note="mine", now=NOW + 7).outcome == "pardoned"
        assert copied.breakers.describe("gw", now=NOW + 2).in_loop == 2
        assert copied.replies.pending("chat", "t1")
        assert copied.acklog.verify().ok
    finally:
        copied.close()


def test_a_worker_of_this_machine_that_is_gone_leaves_an_orphan_at_once(h1, h1_again):
    """A kennel restarted on the same machine resumes its dead predecessor's
    dogs without waiting out the lease; a live worker's claim is left alone."""
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    h1.warrants.file("agent-9", reason="wedged", now=NOW)
    h1.warrants.file("agent-10", reason="wedged", now=NOW)
    dead = h1.warrants.claim_next(owner=KennelOwner.of({"pid": gone.pid, "host": socket.gethostname()}), now=NOW)
    alive = h1.warrants.claim_next(owner=KennelOwner.of({"pid": os.getppid(), "host": socket.gethostname()}), now=NOW)
    assert dead is not None and alive is not None
    taken = h1_again.warrants.claim_orphans(owner=KennelOwner.of({"pid": 2, "host": socket.gethostname()}), now=NOW + 1)
    assert [claim.warrant.target for claim in taken] == ["agent-9"]
