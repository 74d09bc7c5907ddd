"""The file backend's ``examine`` (``leash doctor``'s look at its stores):
each file and database of the home, and each cache of the ack log against it.

Findings are ``leash.core.base.finding.Finding``; repairs follow the fail-policy
table and never delete state: a directory or a link where a state file belongs
is moved aside (quarantine naming) so the state can be rebuilt, the stops and
locks are rebuilt from the ack log (``core.storecheck``), a corrupt session
registry is quarantined and starts empty, a torn ack-log tail moves to
``.torn``, an unreadable halts.db is moved aside, warrants no dog can work are
quarantined, temp files left by dead writers are removed. Links to the ack log
or a database are reported, never followed.

Failure: while the ack log is not a file nothing else is examined (every store
is checked against it); a broken hash chain cannot be mended and stays a
failure.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from leash.core.base.finding import Finding
from leash.core.base.home import is_reserved_name
from leash.core.base.statefile import (
    CORRUPT_MARK,
    TEMP_PREFIX,
    StateCorrupt,
    locked,
    quarantine,
    read_json,
    repair_torn_tail,
)
from leash.core.state.acklog import ACK_LOG_NAME
from leash.core.state.sessions import SESSIONS_NAME

if TYPE_CHECKING:
    from leash.core.store.protocols_budget import ApprovalStore, BudgetStore
    from leash.core.store.protocols_work import WarrantStore


class FileHome(Protocol):
    """What these checks read of the file backend (``core.store.files.FileBackend``:
    named here, not imported, as it imports this module to examine itself)."""

    @property
    def home(self) -> str: ...

    @property
    def acklog(self) -> Any: ...  # its FileAckLog (``log``: the home's AckLog)

    @property
    def stops(self) -> Any: ...  # the registries' stores (``registry``: the home's registry)

    @property
    def locks(self) -> Any: ...

    @property
    def sessions(self) -> Any: ...

    @property
    def approvals(self) -> ApprovalStore: ...

    @property
    def warrants(self) -> WarrantStore: ...

    @property
    def budget(self) -> BudgetStore: ...


STALE_TEMP_SECONDS = 60

# State files a bad link or directory may be moved away from: each is rebuilt
# from the ack log or recreated empty. The log and the databases hold what
# nothing else does, so a link there is reported and left to the operator.
_NEVER_MOVED = {ACK_LOG_NAME, "halts.db", "replies.db", "budget.db", "config.toml"}
_DIRECTORIES = {"warrants", "dogs", "run"}


def examine(backend: FileHome, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    """Every finding on the stores of ``backend`` (a ``FileBackend``)."""
    from leash.core.state.storecheck import examine_approvals, examine_halts, examine_logged_stores

    home = Path(backend.home)
    yield from _check_state_shapes(home, repair, now)
    if (home / ACK_LOG_NAME).is_symlink():  # every store is checked against the log
        yield Finding("fail", "state", f"not examined: {ACK_LOG_NAME} cannot be read until it is a file")
        return
    yield from examine_logged_stores(backend.acklog.log, backend.stops.registry, backend.locks.registry,
                                     repair=repair, now=now)
    from leash.core.store.approvals import ApprovalRegistry

    approvals = backend.approvals
    assert isinstance(approvals, ApprovalRegistry)  # the file backend's own, held over its log-backed file
    from leash.core.state.logstate import LogBackedJSON

    assert isinstance(approvals.state, LogBackedJSON)
    yield from examine_approvals(approvals.state, repair=repair, now=now)
    yield from _check_sessions(backend, repair, now)
    yield from _check_acklog(backend, repair)
    yield from _check_halts(backend, repair, now)
    yield from examine_halts(backend.home, repair=repair, now=now)
    yield from _check_halt_thresholds(backend.home, repair, now)
    yield from _check_warrants(backend, repair, now)
    yield from _check_budget(backend, repair)
    yield from _check_leftovers(home, repair)


def _check_state_shapes(home: Path, repair: bool, now: float | None) -> Iterator[Finding]:
    """A directory where a state file belongs (it wedges every reader), and
    state files that are symbolic links (leash never follows one)."""
    for entry in sorted(home.iterdir()):
        name = entry.name
        if not is_reserved_name(name) or CORRUPT_MARK in name or name.startswith(TEMP_PREFIX):
            continue
        if entry.is_symlink():
            if name == "config.toml":
                continue  # settings, read as they are; leash never writes them
            if name in _NEVER_MOVED or name.startswith(tuple(n + "-" for n in _NEVER_MOVED)):
                yield Finding("fail", name, f"a symbolic link (to {os.readlink(entry)}); leash neither reads nor "
                                            "writes through it: put the file itself in the home")
                continue
            yield from _move_aside(home, name, "a symbolic link", repair, now)
        elif entry.is_dir() and name not in _DIRECTORIES:
            yield from _move_aside(home, name, "a directory where a state file belongs", repair, now)


def _move_aside(home: Path, name: str, what: str, repair: bool, now: float | None) -> Iterator[Finding]:
    if not repair:
        yield Finding("fail", name, f"{what}; every reader of it fails (leash doctor --repair moves it aside)")
        return
    moved = quarantine(home / name, now=now)
    reason = f"{name} was {what}; moved aside so the state can be rebuilt"
    try:
        from leash.core.state.acklog import AckLog

        AckLog(str(home)).append("state_quarantined", source="leash", session_id="", now=now, file=name,
                                 moved_to=os.path.basename(moved or ""), reason=reason)
    except OSError:
        pass  # the ack log itself may be what is wrong; the finding says what was done
    yield Finding("fixed", name, f"{what}; moved to {os.path.basename(moved or '')}")


def _check_sessions(backend: FileHome, repair: bool, now: float | None) -> Iterator[Finding]:
    """sessions.json: a cache of what the hooks saw (stops and locks are checked
    against the ack log by ``core.storecheck``)."""
    registry = backend.sessions.registry
    try:
        data = read_json(registry.path, None)
    except StateCorrupt as exc:
        if repair:
            registry.store.quarantine(exc, now=now)
            yield Finding("fixed", SESSIONS_NAME, f"was unreadable ({exc.detail}); quarantined, starts empty")
        else:
            yield Finding("fail", SESSIONS_NAME, f"unreadable ({exc.detail}); readers quarantine it and start empty")
        return
    yield Finding("ok", SESSIONS_NAME, "absent" if data is None else f"{len(data)} sessions seen")


def _check_acklog(backend: FileHome, repair: bool) -> Iterator[Finding]:
    try:
        report = backend.acklog.verify()
    except OSError as exc:
        yield Finding("fail", ACK_LOG_NAME, f"unreadable: {exc}")
        return
    if report.torn_bytes:
        if repair:
            with locked(backend.acklog.log.path):
                moved = repair_torn_tail(backend.acklog.log.path)
            yield Finding("fixed", ACK_LOG_NAME, f"torn tail of {moved} bytes moved to {ACK_LOG_NAME}.torn")
        else:
            yield Finding("warn", ACK_LOG_NAME, f"torn tail of {report.torn_bytes} bytes (skipped by readers; "
                                                "the next append or repair moves it to .torn)")
    if report.ok:
        yield Finding("ok", ACK_LOG_NAME, f"{report.lines} lines, hash chain intact")
    elif report.first_broken_line is None:
        yield Finding("fail", ACK_LOG_NAME, report.problem)
    else:
        yield Finding("fail", ACK_LOG_NAME, f"hash chain broken at line {report.first_broken_line}: {report.problem}")
    if report.macs:
        checked = report.macs.startswith("macs checked")
        yield Finding("ok" if checked else "warn", ACK_LOG_NAME, report.macs)
    if report.torn_file_bytes:
        yield Finding("warn", ACK_LOG_NAME + ".torn",
                      f"{report.torn_file_bytes} bytes of torn tails kept for inspection")


def _check_halts(backend: FileHome, repair: bool, now: float | None) -> Iterator[Finding]:
    """halts.db: integrity, schema version, the 90-day archive. A database that
    cannot be read holds every session (the gate fails safe); repair moves it
    aside (with its -wal and -shm) so a fresh one can start."""
    from leash.core.base.clock import now_seconds
    from leash.core.state.halts.store import (
        DB_NAME,
        HaltStoreUnavailable,
        archive_old_events,
        db_path,
        exists,
        open_store,
    )

    home = backend.home
    if not exists(home):
        yield Finding("ok", DB_NAME, "absent; no halt has been recorded")
        return
    problem = ""
    try:
        connection = open_store(home, create=False)
        try:
            verdict = connection.execute("PRAGMA integrity_check").fetchone()[0]
            if verdict != "ok":
                problem = f"integrity check: {verdict}"
            else:
                archived_count = archive_old_events(connection, now=now_seconds(now), force=True)
                pending = connection.execute("SELECT count(*) FROM halt_events WHERE acknowledged = 0").fetchone()[0]
                archived = (f"; archived {archived_count} settled events older than 90 days"
                            if archived_count else "")
                yield Finding("ok", DB_NAME, f"{pending} unacknowledged halts{archived}")
        finally:
            connection.close()
    except (HaltStoreUnavailable, Exception) as exc:  # noqa: B014 - any sqlite failure is a finding
        problem = str(exc)
    if not problem:
        return
    if not repair:
        yield Finding("fail", DB_NAME, f"unreadable ({problem}); the gate holds every session until it is repaired "
                                       "(leash doctor --repair moves it aside; its halts are then no longer "
                                       "enforced)")
        return
    path = db_path(home)
    moved = quarantine(path, now=now)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix) and moved:
            os.rename(path + suffix, moved + suffix)
    backend.acklog.append("state_quarantined", source="leash", session_id="", now=now, file=DB_NAME,
                          moved_to=os.path.basename(moved or ""),
                          reason=f"{DB_NAME} unreadable ({problem}); moved aside; a new one starts empty")
    yield Finding("fixed", DB_NAME, f"was unreadable ({problem}); moved to {os.path.basename(moved or '')}")


def _check_halt_thresholds(home: str, repair: bool, now: float | None) -> Iterator[Finding]:
    """Stored condition settings the engine cannot use (it reads each as its default)."""
    from leash.core.state.halts.api import stored_config_problems

    try:
        problems = stored_config_problems(home=home, repair=repair, now=now)
    except Exception:  # noqa: BLE001 - an unreadable halts.db is _check_halts' finding
        return
    for problem in problems:
        if repair:
            yield Finding("fixed", "halts config", f"{problem}: the default is stored now")
        else:
            yield Finding("warn", "halts config", f"{problem}: the engine uses the default "
                                                  "(leash doctor --repair stores it)")


def _check_warrants(backend: FileHome, repair: bool, now: float | None) -> Iterator[Finding]:
    """Warrants and dog states no dog can work: a kennel quarantines them when
    it meets them; repair does it now (a state a live dog holds is left to it)."""
    from leash.core.store.filestores import FileWarrants

    warrants = backend.warrants
    assert isinstance(warrants, FileWarrants)  # the file backend's own
    queue = warrants.queue
    unreadable = queue.unreadable()
    moved = queue.quarantine_unreadable(now=now) if repair and unreadable else []
    for path, problem in unreadable:
        if any(os.path.basename(m).startswith(os.path.basename(path) + CORRUPT_MARK) for m in moved):
            yield Finding("fixed", path, f"was unreadable ({problem}); quarantined, its warrant is not worked")
        else:
            yield Finding("fail", path, f"unreadable ({problem}); no dog works it and nothing is killed for it "
                                        "(the kennel or leash doctor --repair quarantines it)")
    quarantined = queue.quarantined()
    kept = f"; {len(quarantined)} quarantined copies kept (listed below)" if quarantined else ""
    yield Finding("ok", "warrants", f"{len(queue.pending())} pending, {len(queue.active())} active{kept}")


def _check_budget(backend: FileHome, repair: bool) -> Iterator[Finding]:
    """budget.db (integrity) and budget-holds.json against its held rows: the
    gate reads only the mirror, so a mirror out of step holds sessions no cap
    holds, or lets through one a cap holds; repair writes it again from the
    database. An unreadable budget.db is left to the operator (its spend and
    holds are nowhere else; the gate still reads the mirror)."""
    from leash.core.store.budget import DB_NAME, HOLDS_NAME, BudgetUnreadable, FileBudget, held_rows
    from leash.core.store.budgetrows import counter_key

    store = backend.budget
    assert isinstance(store, FileBudget)  # the file backend's own
    try:
        connection = store.connect()
    except BudgetUnreadable as exc:
        yield Finding("fail", DB_NAME, f"unreadable ({exc}); spend is not metered and caps are not counted "
                                       "until it is moved aside or restored (the holds mirrored stay enforced)")
        return
    if connection is None:
        yield Finding("ok", DB_NAME, "absent; nothing has been metered")
        held = []
    else:
        try:
            verdict = connection.execute("PRAGMA integrity_check").fetchone()[0]
            held = held_rows(connection) if verdict == "ok" else []
            counted = connection.execute("SELECT count(*) FROM counters").fetchone()[0]
        except Exception as exc:  # noqa: BLE001 - any sqlite failure is a finding
            verdict = str(exc)
        finally:
            connection.close()
        if verdict != "ok":
            yield Finding("fail", DB_NAME, f"unreadable ({verdict}); spend is not metered and caps are not counted "
                                           "until it is moved aside or restored (the holds mirrored stay enforced)")
            return
        yield Finding("ok", DB_NAME, f"{counted} cap counters, {len(held)} held")
    try:
        mirrored = read_json(store.holds_path, None)
        problem = "" if mirrored is not None else "missing"
        keys = [counter_key(c) for c in store.holds()] if mirrored is not None else []
    except (StateCorrupt, BudgetUnreadable, OSError) as exc:
        problem, keys = f"unreadable ({exc})", []
    if not problem and keys != [counter_key(c) for c in held]:
        problem = f"out of step with {DB_NAME} (mirrors {len(keys)} holds, the database holds {len(held)})"
    if not problem or (problem == "missing" and connection is None):
        yield Finding("ok", HOLDS_NAME, f"{len(keys)} holds, as {DB_NAME} holds them")
    elif repair:
        if connection is None:
            store.write_mirror([])
        else:
            store.rebuild_mirror()
        yield Finding("fixed", HOLDS_NAME, f"was {problem}; written again from {DB_NAME}")
    else:
        yield Finding("warn" if problem == "missing" else "fail", HOLDS_NAME,
                      f"{problem}; the gate reads the holds only there (leash doctor --repair writes it again "
                      f"from {DB_NAME})")


def _check_leftovers(home: Path, repair: bool) -> Iterator[Finding]:
    cutoff = time.time() - STALE_TEMP_SECONDS
    for entry in sorted(home.rglob(TEMP_PREFIX + "*")):
        if entry.is_file() and entry.stat().st_mtime < cutoff:
            if repair:
                entry.unlink()
                yield Finding("fixed", entry.name, "removed a temp file left by a writer that died before its rename")
            else:
                yield Finding("warn", entry.name, "temp file left by a writer that died (repair removes it)")
    for entry in sorted(home.rglob(f"*{CORRUPT_MARK}*")):
        yield Finding("warn", entry.name, "quarantined copy of a corrupt file, kept for inspection")
