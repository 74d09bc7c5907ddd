"""One contract for every storage backend: what a caller of ``leash.core.store``
may rely on, whichever backend holds the state (the ``backend`` fixture takes
each in turn). Add a backend by adding its name to ``BACKENDS`` and a branch to
``make_backend`` (tests/support/backends.py)."""
import os
import sys
import threading

import pytest

from leash.core.base.clock import iso, parse_iso
from leash.core.policy.halts.outcomes import CheckResult, HaltQuery
from leash.core.state.halts import HaltRefused
from leash.core.state.handsoff import HandsOffUnreadable, NotLocked
from leash.core.state.stop import NotStopped
from leash.core.store.records import ChainAnchor, LockRecord, LogLine, LoopLimits, StopRecord
from leash.core.store.records_halts import (
    AcknowledgedHalt,
    HaltConditionConfig,
    HaltConfigChange,
    HaltListing,
    HaltRecord,
)
from leash.core.store.records_warrants import DogRecord, DogState, KennelOwner, WarrantListing, WarrantRecord

from ..support.changes import changes_after

NOW = 1_900_000_000.0


# ------------------------------------------------------------------ ack log
@pytest.fixture
def acklog_store(backend):
    return backend.acklog


def rewrite_first_line(store, old: str, new: str) -> None:
    """What someone with write access to the store's medium could do."""
    if hasattr(store, "db"):  # PostgreSQL: the table's owner, who alone can lift its append-only trigger
        with store.db.owner_session() as conn, conn.transaction():
            conn.execute("ALTER TABLE acklog DISABLE TRIGGER acklog_append_only")
            conn.execute("UPDATE acklog SET line = replace(line, %s, %s) WHERE seq = 1", (old, new))
        return
    path = store.log.path
    with open(path) as handle:
        text = handle.read()
    with open(path, "w") as handle:
        handle.write(text.replace(old, new, 1))


def test_appended_lines_chain_and_verify(acklog_store):
    first = acklog_store.append("stop_ack", source="ops", session_id="s1", reason="r", now=NOW)
    second = acklog_store.append("resume", source="ops", session_id="s1", now=NOW + 1)
    assert isinstance(first, LogLine) and (first.seq, second.seq) == (1, 2)
    assert second.prev == first.hash
    assert [line.event for line in acklog_store.read()] == ["stop_ack", "resume"]
    assert [line.seq for line in acklog_store.tail(1)] == [2]
    assert [line.event for line in acklog_store.read(event="resume")] == ["resume"]
    assert [line.event for line in acklog_store.read(session="s2")] == []
    assert list(acklog_store.follow(stop_after=0.05)) == acklog_store.read()
    assert acklog_store.verify().ok
    assert acklog_store.verify(anchor=ChainAnchor.of({"seq": 2, "hash": second.hash})).ok
    assert not acklog_store.verify(anchor=ChainAnchor.of({"seq": 3, "hash": "0" * 64})).ok  # a line the log lacks


def test_verify_names_a_rewritten_line(acklog_store):
    acklog_store.append("stop_ack", source="ops", session_id="s1", reason="first", now=NOW)
    acklog_store.append("resume", source="ops", session_id="s1", now=NOW + 1)
    rewrite_first_line(acklog_store, '"first"', '"other"')
    report = acklog_store.verify()
    assert not report.ok and report.first_broken_line == 1


def test_appended_lines_are_masked_and_events_checked(acklog_store):
    line = acklog_store.append("stop_ack", source="ops", session_id="s1", now=NOW,
                               reason="token AKIAZ7Q3R5T2W8Y4U6PL leaked")
    assert "AKIAZ7Q3R5T2W8Y4U6PL" not in line.reason
    with pytest.raises(ValueError):
        acklog_store.append("no_such_event", source="ops", session_id="s1", now=NOW)
    with pytest.raises(ValueError):
        acklog_store.append("stop_ack", source="ops", session_id="s1", now=NOW, seq=7)


# ------------------------------------------------------------------ stops
@pytest.fixture
def stops_clients(backend, second_backend):
    """Two clients of one stop store (as two processes or hosts would be)."""
    return backend, second_backend


def test_stop_and_resume(stops_clients):
    backend, second_backend = stops_clients
    record = backend.stops.stop("s1", source="ops", reason="look", now=NOW)
    assert isinstance(record, StopRecord) and (record.key, record.source, record.reason) == ("s1", "ops", "look")
    assert list(second_backend.stops.stopped()) == ["s1"]
    assert second_backend.stops.covering(["other", "s1"]) == ("session", "s1")
    assert backend.stops.resume("s1", source="ops", now=NOW + 1).key == "s1"
    assert backend.stops.stopped() == {} and backend.stops.covering(["s1"]) is None
    with pytest.raises(NotStopped):
        backend.stops.resume("s1", source="ops", now=NOW + 2)
    with pytest.raises(ValueError):
        backend.stops.stop("", source="ops", now=NOW)
    assert [line.event for line in backend.acklog.read()] == ["stop_ack", "resume"]


def test_fleet_stop_and_resume(stops_clients):
    backend, _ = stops_clients
    assert backend.stops.fleet() is None
    backend.stops.stop("s1", source="ops", now=NOW)
    backend.stops.stop_fleet(source="ops", reason="all", now=NOW)
    assert backend.stops.fleet().reason == "all"
    assert backend.stops.covering(["s2"]) == ("fleet", None)
    backend.stops.resume_fleet(source="ops", now=NOW + 1)
    assert backend.stops.fleet() is None
    assert list(backend.stops.stopped()) == ["s1"]  # stopped one by one: still stopped
    with pytest.raises(NotStopped):
        backend.stops.resume_fleet(source="ops", now=NOW + 2)


# ------------------------------------------------------------------ locks
def test_locks_expire(backend):
    lock = backend.locks.lock("ezra", hours=1, reason="hands off", source="ops", now=NOW)
    assert isinstance(lock, LockRecord) and lock.entity == "ezra"
    assert parse_iso(lock.expires_at) == NOW + 3600
    assert backend.locks.lock_of("ezra", now=NOW + 3599) is not None
    assert backend.locks.lock_of("ezra", now=NOW + 3601) is None
    assert list(backend.locks.active(now=NOW)) == ["ezra"]
    assert backend.locks.active(now=NOW + 3601) == {}
    kept = backend.locks.lock("ezra", hours=0.5, source="ops", now=NOW)
    assert parse_iso(kept.expires_at) == NOW + 3600  # never shortened
    assert backend.locks.release("ezra", source="ops", now=NOW + 1).entity == "ezra"
    with pytest.raises(NotLocked):
        backend.locks.release("ezra", source="ops", now=NOW + 2)


def test_path_locks_cover_matching_files(backend, tmp_path):
    backend.locks.lock("path:src/**/*.py", hours=2, source="ops", now=NOW)
    found = backend.locks.lock_for_path("src/a/b.py", cwd=str(tmp_path), now=NOW)
    assert found is not None and found.entity == "path:src/**/*.py"
    assert backend.locks.lock_for_path("docs/b.py", cwd=str(tmp_path), now=NOW) is None
    assert backend.locks.lock_for_path("src/a/b.py", cwd=str(tmp_path), now=NOW + 7201) is None


# ------------------------------------------------------------------ sessions
def test_sessions_observed_and_named(backend, second_backend):
    backend.sessions.observe("s1", now=NOW, tool="Bash", cwd="/w", tmux_session="agent-1")
    seen = second_backend.sessions.get("s1", now=NOW)
    assert (seen.session_id, seen.cwd, seen.tmux_session) == ("s1", "/w", "agent-1")
    backend.sessions.set_entity("s1", "ezra", now=NOW)
    assert backend.sessions.all(now=NOW)["s1"].entity == "ezra"
    assert backend.sessions.get("nobody", now=NOW) is None


# ------------------------------------------------------------------ halts
def _halt(backend, severity: str, session: str = "s1") -> str:
    return backend.halts.record({"session_token": session, "halt_type": "security", "severity": severity,
                                 "description": f"a {severity} halt"}, now=NOW).halt_id


def test_halt_lifecycle(backend):
    assert backend.halts.state("s1", now=NOW) == "active"
    high = _halt(backend, "high")
    critical = _halt(backend, "critical")
    with backend.halts.unit(now=NOW) as unit:
        assert unit.state("s1") == "halted" and unit.states() == {"s1": "halted"}
        assert {h.halt_id for h in unit.pending()} == {high, critical}
        assert unit.pending_counts()["critical"] == 1
    backend.halts.acknowledge(high, "s1", "resolved", source="ops", now=NOW + 1)
    with pytest.raises(HaltRefused):
        backend.halts.acknowledge(critical, "s1", "dismissed", now=NOW + 2)
    with pytest.raises(HaltRefused):
        backend.halts.acknowledge(high, "other-session", "resolved", now=NOW + 2)
    result = backend.halts.acknowledge(critical, "s1", "dismissed", caution=True, notes="checked", now=NOW + 3)
    assert isinstance(result, AcknowledgedHalt) and result.session_can_resume and result.warnings
    assert backend.halts.state("s1", now=NOW + 4) == "active"
    with backend.halts.unit(now=NOW + 4) as unit:
        assert unit.pending() == [] and unit.states() == {}
    events = [line.event for line in backend.acklog.read()]
    assert events.count("halt_recorded") == 2 and "halt_ack" in events and "halt_dismiss" in events


# ------------------------------------------------------------------ warrants
OWNER = KennelOwner.of({"pid": 1, "host": "contract"})


def test_warrant_claim_renew_release_complete(backend, second_backend):
    warrant, filed = backend.warrants.file("agent-9", reason="wedged", now=NOW)
    assert filed and isinstance(warrant, WarrantRecord) and warrant.target == "agent-9"
    again, filed_again = backend.warrants.file("agent-9", reason="again", now=NOW)
    assert not filed_again and again.id == warrant.id
    claim = backend.warrants.claim_next(owner=OWNER, now=NOW)
    assert claim.warrant.id == warrant.id and claim.renew(now=NOW + 1)
    assert second_backend.warrants.claim_next(owner=OWNER, now=NOW) is None
    assert second_backend.warrants.claim_orphans(owner=OWNER, now=NOW) == []  # held: not an orphan
    claim.release()
    claim.release()  # harmless
    assert not claim.renew(now=NOW + 2)
    orphans = second_backend.warrants.claim_orphans(owner=OWNER, now=NOW + 3)
    assert [o.warrant.id for o in orphans] == [warrant.id]
    done = orphans[0].complete("pardoned", by="ops", note="it answered", now=NOW + 4)
    assert done.outcome == "pardoned" and not orphans[0].held
    assert backend.warrants.active() == [] and [c.id for c in backend.warrants.completed()] == [warrant.id]
    assert "epitaph" in [line.event for line in backend.acklog.read()]


def test_two_claimers_never_share_a_warrant(backend, second_backend):
    filed = {backend.warrants.file(f"agent-{n}", reason="wedged", now=NOW + n)[0].id for n in range(8)}
    taken: dict[str, list] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def drain(name, store):
        start.wait()
        while (claim := store.warrants.claim_next(owner=OWNER, now=NOW + 10)) is not None:
            taken[name].append(claim)

    threads = [threading.Thread(target=drain, args=(n, b)) for n, b in (("a", backend), ("b", second_backend))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    ids = [c.warrant.id for claims in taken.values() for c in claims]
    assert sorted(ids) == sorted(filed)  # every warrant claimed exactly once
    for claim in taken["a"] + taken["b"]:
        claim.release()


# ------------------------------------------------------------------ breakers
def test_breaker_trips_and_resets(backend):
    for n in range(3):
        backend.breakers.record_boot("gw", window_seconds=60, now=NOW + n)
    assert backend.breakers.tripped("gw", max_restarts=3, window_seconds=60, now=NOW + 3)
    assert not backend.breakers.tripped("gw", max_restarts=3, window_seconds=60, now=NOW + 120)
    assert backend.breakers.names() == ["gw"]
    described = backend.breakers.describe("gw", limits=LoopLimits.of({"max_restarts": 3}), now=NOW + 3)
    assert described.tripped and described.in_loop == 3
    assert backend.breakers.reset("gw", source="ops", reason="false alarm", now=NOW + 4)
    assert not backend.breakers.tripped("gw", max_restarts=1, window_seconds=60, now=NOW + 4)
    assert "loop_reset" in [line.event for line in backend.acklog.read()]


# ------------------------------------------------------------------ replies
def test_replies_pending_until_answered(backend):
    assert not backend.replies.pending("chat", "thread-1")
    backend.replies.record("chat", "thread-1", "in", now=NOW)
    assert backend.replies.pending("chat", "thread-1")
    backend.replies.record("chat", "thread-1", "out", now=NOW + 1)
    assert not backend.replies.pending("chat", "thread-1")
    with pytest.raises(ValueError):
        backend.replies.record("chat", "thread-1", "sideways", now=NOW)


# ------------------------------------------------------------------ kennels
def test_kennel_alive_while_its_heartbeat_is_fresh(backend):
    assert backend.kennels.alive(now=NOW) is None
    beat = backend.kennels.beat(pid=os.getpid(), host="elsewhere", started_at=iso(NOW), dogs=2, now=NOW)
    assert beat.heartbeat_at == iso(NOW)
    assert backend.kennels.alive(now=NOW + 1).dogs == 2
    assert backend.kennels.alive(now=NOW + 60) is None  # stale
    backend.kennels.beat(pid=os.getpid(), host="elsewhere", started_at=iso(NOW), dogs=2, stopped=True, now=NOW + 61)
    assert backend.kennels.alive(now=NOW + 61) is None  # stopped cleanly


# ------------------------------------------------------------------ transaction
def test_full_stop_in_one_transaction(backend):
    with backend.transaction(now=NOW) as step:
        step.stop("s1", source="ops", reason="full")
        step.lock("ezra", hours=1, source="ops", reason="full", session_id="s1")
        step.set_entity("s1", "ezra")
    assert list(backend.stops.stopped()) == ["s1"] and list(backend.locks.active(now=NOW)) == ["ezra"]
    assert backend.sessions.get("s1", now=NOW).entity == "ezra"
    stopped, locked = step.results  # the records written, in the order written
    assert isinstance(stopped, StopRecord) and stopped.key == "s1" and stopped.reason == "full"
    assert isinstance(locked, LockRecord) and locked.entity == "ezra" and locked.session_id == "s1"


def test_a_failing_transaction_leaves_neither_stop_nor_lock(backend):
    with pytest.raises(RuntimeError):
        with backend.transaction(now=NOW) as step:
            step.stop("s1", source="ops")
            step.lock("ezra", hours=1, source="ops")
            raise RuntimeError("after the stop")
    assert backend.stops.stopped() == {} and backend.locks.active(now=NOW) == {}
    with pytest.raises(ValueError):
        with backend.transaction(now=NOW) as step:
            step.stop("s1", source="ops")
            step.lock("ezra", hours=-1, source="ops")
    assert backend.stops.stopped() == {} and backend.locks.active(now=NOW) == {}
    assert backend.acklog.read() == []


def test_a_write_failing_while_applied_undoes_the_stop(backend):
    failure: type[Exception] = Exception  # how a write is made to fail, and what it raises, is the backend's own
    if backend.name == "file":  # the lock's state file cannot be written: a directory stands in its place
        os.mkdir(os.path.join(backend.home, "hands_off_registry.json"))
        failure = HandsOffUnreadable
    else:  # the locks' row cannot be written
        from leash.core.store.pg import StoreOffline

        with backend.db.owner_session() as conn, conn.transaction():  # the table's owner may alter it
            conn.execute("ALTER TABLE log_state ADD CONSTRAINT no_locks CHECK (store <> 'hands_off')")
        failure = StoreOffline
    with pytest.raises(failure):
        with backend.transaction(now=NOW) as step:
            step.stop("s1", source="ops")
            step.lock("ezra", hours=1, source="ops")
    assert backend.stops.stopped() == {}


# ------------------------------------------------------------------ changes
STOP_ELSEWHERE = ("import sys; from leash.core.store.select import backend_for; "
                  "backend_for(sys.argv[1]).stops.stop('far', source='other', reason='elsewhere')")


def test_a_stop_made_elsewhere_shows_up_in_changes(backend):
    seen = changes_after(backend, STOP_ELSEWHERE, "stops")
    assert {"stops", "acklog"} <= {change.store for change in seen}
    assert list(backend.stops.stopped()) == ["far"]


def test_examine_finds_a_tampered_store(backend):
    backend.stops.stop("s1", source="ops", now=NOW)
    assert all(f.level != "fail" for f in backend.examine()
               if f.subject in ("stops.json", "stop_ack_log.jsonl", "stops", "acklog"))
    if backend.name == "file":
        with open(os.path.join(backend.home, "stops.json"), "w") as handle:
            handle.write("{}")
    else:  # what the schema's owner could do (the runtime role cannot: log_state_guard)
        with backend.db.owner_session() as conn, conn.transaction():
            conn.execute("""UPDATE log_state SET state = '{"sessions": {}, "fleet": null}' WHERE store = 'stops'""")
        assert backend.stops.stopped() == {}
    findings = list(backend.examine(repair=True, now=NOW + 1))
    assert any(f.level != "ok" for f in findings)
    assert list(backend.stops.stopped()) == ["s1"]


def test_a_full_stop_refused_for_its_lock_leaves_no_stop(home):
    from leash.core.views.protocol import StopProtocol

    protocol = StopProtocol(home)
    with pytest.raises(ValueError):
        protocol.full_stop("s1", "ezra", hours=10 ** 9, source="ops", now=NOW)
    assert protocol.stops.snapshot()["sessions"] == {}
    assert protocol.read_ack_log() == []
    done = protocol.full_stop("s1", "ezra", hours=1, source="ops", now=NOW)
    assert done["stop"]["source"] == "ops" and done["hands_off"]["session_id"] == "s1"
    assert protocol.sessions.get("s1", now=NOW)["entity"] == "ezra"


def test_the_hook_path_stores_import_nothing_costly():
    import subprocess

    probe = ("import sys; import leash.core.store.filestores, leash.core.store.transaction, leash.core.store.records; "
             "print(sorted(m for m in ('dataclasses', 'inspect', 'typing', 'watchfiles') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"


# ------------------------------------------------------------------ what the console and the CLI call
def _unread_edit(session: str) -> dict:
    """The seed's first example: a change to a file the session has not read (critical)."""
    return {"session_token": session, "current_context": {"target_files": ["src/auth.js"], "files_read": []},
            "proposed_changes": {"files_to_modify": ["src/auth.js"]}}


def test_halts_listed_checked_found_and_configured(backend):
    high = _halt(backend, "high")
    listed = backend.halts.listing(HaltQuery.of({"session_token": "s1", "pending": True}), now=NOW)
    assert isinstance(listed, HaltListing) and all(isinstance(h, HaltRecord) for h in listed.halts)
    assert [h.halt_id for h in listed.halts] == [high] and listed.unacknowledged_count == 1
    assert backend.halts.listing(HaltQuery.of({"session_token": "nobody"}), now=NOW).total_count == 0
    assert backend.halts.find(high).session_id == "s1" and backend.halts.find(high[:8]).id == high
    assert backend.halts.find("0" * 36) is None
    verdict = backend.halts.check(_unread_edit("s2"), now=NOW)
    assert verdict.should_halt and any(reason.halt_id for reason in verdict.reasons)
    assert backend.halts.state("s2", now=NOW) == "halted"
    unrecorded = backend.halts.check(_unread_edit("s3"), record=False, now=NOW)
    assert unrecorded.should_halt and backend.halts.state("s3", now=NOW) == "active"
    rows = {row.condition_name: row for row in backend.halts.config()}
    assert isinstance(rows["three_strikes"], HaltConditionConfig) and rows["three_strikes"].enabled is True
    changed = backend.halts.configure({"condition_name": "three_strikes", "enabled": False}, now=NOW)
    assert isinstance(changed, HaltConfigChange) and changed.updated
    assert (changed.previous_values.enabled, changed.current_values.enabled) == (True, False)
    assert not {row.condition_name: row for row in backend.halts.config()}["three_strikes"].enabled


def test_warrants_found_listed_and_pardoned(backend):
    from leash.core.state.warrants import WarrantError

    first, _ = backend.warrants.file("agent-1", reason="wedged", now=NOW)
    second, _ = backend.warrants.file("agent-2", reason="wedged", now=NOW + 1)
    assert backend.warrants.find(first.id) == ("pending", first)
    assert backend.warrants.live_for("agent-2").id == second.id and backend.warrants.live_for("agent-3") is None
    outcome, record = backend.warrants.pardon(first.id, source="ops", reason="it answered", now=NOW + 2)
    assert outcome == "pardoned" and record.outcome == "pardoned"
    assert backend.warrants.find(first.id)[0] == "completed"
    listing = backend.warrants.listing()
    assert isinstance(listing, WarrantListing) and listing.pending == [second]
    assert [d.id for d in listing.completed] == [first.id] and listing.active == []
    assert isinstance(listing.completed[0], DogRecord) and listing.completed[0].outcome == "pardoned"
    with pytest.raises(WarrantError):
        backend.warrants.pardon(first.id, source="ops", now=NOW + 3)
    with pytest.raises(WarrantError):
        backend.warrants.pardon("no-such-warrant", source="ops", now=NOW + 3)
    assert "warrant_pardoned" in [line.event for line in backend.acklog.read()]


def test_breaker_checked_and_recorded_in_one_call(backend):
    verdicts = [backend.breakers.check_and_record("gw", max_restarts=3, window_seconds=60, source="ops",
                                                  now=NOW + n) for n in range(3)]
    assert verdicts == [False, False, True]
    assert "loop_tripped" in [line.event for line in backend.acklog.read()]


def test_a_breaker_is_described_by_the_limits_its_supervisor_passed(backend):
    for n in range(3):
        backend.breakers.check_and_record("nightly", max_restarts=5, window_seconds=300, max_gap_seconds=30,
                                          now=NOW + 100 * n)
    described = backend.breakers.describe("nightly", limits=LoopLimits.of({"window_seconds": 60}), now=NOW + 200)
    assert (described.window_seconds, described.max_restarts, described.max_gap_seconds) == (300, 5, 30)
    assert described.in_loop == 3 and not described.tripped
    # a boot recorded without a verdict keeps the threshold passed before it
    backend.breakers.record_boot("nightly", window_seconds=600, now=NOW + 250)
    described = backend.breakers.describe("nightly", now=NOW + 250)
    assert (described.window_seconds, described.max_restarts) == (600, 5)
    # a breaker no supervisor has passed limits to reads config.toml's
    assert backend.breakers.describe("other", limits=LoopLimits.of({"window_seconds": 90}),
                                     now=NOW).window_seconds == 90


def test_full_stop_step_keeps_a_path_pattern_off_the_session(backend):
    backend.sessions.observe("s1", now=NOW, tool="Bash")
    with backend.transaction(now=NOW) as step:
        step.full_stop("s1", "path:src/**", hours=1, source="ops", reason="freeze")
    assert list(backend.stops.stopped()) == ["s1"] and list(backend.locks.active(now=NOW)) == ["path:src/**"]
    assert not backend.sessions.get("s1", now=NOW).entity
    with backend.transaction(now=NOW) as step:
        step.full_stop("s2", "ezra", hours=1, source="ops")
    assert backend.sessions.get("s2", now=NOW).entity == "ezra"
    assert backend.locks.lock_of("ezra", now=NOW).session_id == "s2"


# ------------------------------------------------------------ what the fleet view, why, doctor and the kennel read
def test_stop_state_in_one_read(backend):
    assert backend.stops.current(now=NOW).sessions == {} and backend.stops.current(now=NOW).fleet is None
    backend.stops.stop("s1", source="ops", reason="look", now=NOW, tmux_session_id="$4")
    backend.stops.stop_fleet(source="ops", reason="all", now=NOW)
    state = backend.stops.current(now=NOW)
    assert list(state.sessions) == ["s1"] and state.sessions["s1"].reason == "look"
    assert state.fleet.reason == "all" and state.by_tmux_id == {"$4": "s1"}


def test_a_lock_covers_a_name_or_its_bound_tmux_id(backend, tmp_path):
    backend.locks.lock("agent-1", hours=1, source="ops", now=NOW, tmux_session_id="$7")
    assert backend.locks.covering(["other", "agent-1"], now=NOW).entity == "agent-1"
    assert backend.locks.covering(["renamed"], tmux_session_id="$7", now=NOW).entity == "agent-1"
    assert backend.locks.covering(["renamed"], tmux_session_id="$8", now=NOW) is None
    assert backend.locks.covering(["agent-1"], now=NOW + 3601) is None
    backend.locks.lock("path:src/deep/**", hours=1, source="ops", now=NOW)
    assert backend.locks.lock_for_path("src", cwd=str(tmp_path), now=NOW) is None
    found = backend.locks.lock_for_path("src", cwd=str(tmp_path), now=NOW, subtree=True)
    assert found is not None and found.entity == "path:src/deep/**"


def test_a_session_knows_its_ancestors(backend):
    backend.sessions.observe("first", now=NOW, tool="Bash")
    backend.sessions.observe("second", now=NOW + 1, tool="Bash", parent="first")
    backend.sessions.observe("third", now=NOW + 2, tool="Bash", parent="second")
    assert backend.sessions.lineage("third", now=NOW + 3) == ["second", "first"]
    assert backend.sessions.lineage("first", now=NOW + 3) == []


def test_a_kept_halt_reader_sees_new_halts(backend):
    with backend.halts.reading(now=NOW) as unit:
        assert unit.states() == {} and unit.pending() == []
    high = _halt(backend, "high")
    for _ in range(2):  # a reader kept between units still sees what is written meanwhile
        with backend.halts.reading(now=NOW) as unit:
            assert unit.state("s1") == "halted" and [h.halt_id for h in unit.pending(limit=5)] == [high]
            assert unit.pending_counts()["high"] == 1
        backend.halts.acknowledge(high, "s1", "resolved", source="ops", now=NOW + 1)
        high = _halt(backend, "high")


def test_a_claim_saves_its_state_and_hears_a_pardon(backend, second_backend):
    warrant, _ = backend.warrants.file("agent-5", reason="wedged", now=NOW)
    assert backend.warrants.has_pending()
    claim = backend.warrants.claim_next(owner=OWNER, now=NOW)
    assert not backend.warrants.has_pending() and claim.pardon_request() is None
    assert isinstance(claim.state, DogState)
    assert (claim.state.state, claim.state.kennel) == ("received", OWNER.as_dict())
    claim.state.update(state="interrogating", attempt=2)
    claim.state.next_timeout = iso(NOW + 60)  # a field the claimed state did not hold yet
    claim.save()
    assert [(d.state, d.attempt, d.next_timeout) for d in second_backend.warrants.active()] == \
        [("interrogating", 2, iso(NOW + 60))]
    assert second_backend.warrants.pardon(warrant.id, source="ops", reason="mine", now=NOW + 1)[0] == "requested"
    assert claim.pardon_request().source == "ops"
    done = claim.complete("pardoned", by="ops", note="mine", now=NOW + 2, timeouts=(1, 2, 3))
    assert done.outcome == "pardoned" and backend.warrants.active() == []
    assert (claim.state.state, claim.state.outcome, claim.state.pardoned_by) == ("complete", "pardoned", "ops")
    backend.warrants.tidy()
    assert [c.id for c in backend.warrants.completed()] == [warrant.id]


def test_a_claim_sealed_by_a_dead_worker_completes_once(backend, second_backend):
    warrant, _ = backend.warrants.file("agent-6", reason="wedged", now=NOW)
    claim = backend.warrants.claim_next(owner=OWNER, now=NOW)
    claim.state.update(state="complete", outcome="already_dead", epitaph="EPITAPH: agent-6", completed_at=iso(NOW))
    claim.save()
    backend.acklog.append("epitaph", source="kennel", session_id="agent-6", reason="EPITAPH: agent-6", now=NOW,
                          warrant_id=warrant.id, outcome="already_dead")
    claim.release()  # the worker dies here
    (orphan,) = second_backend.warrants.claim_orphans(owner=OWNER, now=NOW + 1)
    assert orphan.complete("already_dead", now=NOW + 2).outcome == "already_dead"
    assert [c.id for c in backend.warrants.completed()] == [warrant.id]
    assert [line.event for line in backend.acklog.read(event="epitaph")] == ["epitaph"]


def test_a_read_counts_what_it_could_not_read(backend):
    backend.acklog.append("stop_ack", source="ops", session_id="s1", now=NOW)
    clean = backend.acklog.read()
    assert (clean.torn_bytes, clean.unreadable_lines) == (0, 0)
    if backend.name != "file":
        return
    with open(os.path.join(backend.home, "stop_ack_log.jsonl"), "a") as handle:
        handle.write("not a log line\n{\"torn")
    read = backend.acklog.read()
    assert [line.seq for line in read] == [1] and (read.torn_bytes, read.unreadable_lines) == (len('{"torn'), 1)


def test_a_halt_unit_checks_and_reads_evidence_in_one_state(backend):
    with backend.halts.unit(now=NOW) as unit:
        assert unit.files_read("s4") is None  # never reported: no evidence either way
        quiet = unit.check({"session_token": "s4", "current_context": {"target_files": []}})
        assert isinstance(quiet, CheckResult) and not quiet.should_halt
    _halt(backend, "low", session="s9")  # the store exists from here on
    with backend.halts.unit(now=NOW) as unit:
        verdict = unit.check(_unread_edit("s4"))
        assert verdict.should_halt and unit.state("s4") == "halted"
        assert unit.check(_unread_edit("s5"), record=False).should_halt and unit.state("s5") == "active"


def test_reads_and_attempts_are_evidence_the_halt_unit_sees(backend):
    backend.halts.record_reads("s6", ["/src/app.py"], now=NOW)
    assert backend.halts.record_attempt("s6", "make test", error="exit 1", now=NOW) == 1
    assert backend.halts.record_attempt("s6", "make test", error="exit 1", now=NOW + 1) == 2
    assert backend.halts.record_attempt("s6", "make test", error=None, now=NOW + 2) == 0  # a success resets
    with backend.halts.unit(now=NOW + 3) as unit:
        assert "/src/app.py" in (unit.files_read("s6") or [])
