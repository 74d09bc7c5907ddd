"""``leash doctor``: look at every piece of state, say what is wrong, mend it.

Each check yields ``Finding(level, subject, message)``: ``ok``, ``warn`` (worth
knowing, nothing is broken), ``fail`` (something is broken) or ``fixed`` (it was
broken and ``repair=True`` mended it). Repairs follow the fail-policy table and
never delete state: a corrupt ``stops.json`` is quarantined and rebuilt by
replaying the ack log; a corrupt registry is quarantined and starts empty;
expired locks are pruned; a torn ack-log tail is moved to ``.torn``. A broken
hash chain cannot be mended (the log is append-only) and stays a failure.
"""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Iterator, NamedTuple

from core.acklog import ACK_LOG_NAME
from core.config import ConfigError, load_config
from core.handsoff import REGISTRY_NAME
from core.sessions import SESSIONS_NAME
from core.statefile import CORRUPT_MARK, TEMP_PREFIX, StateCorrupt, locked, read_json, repair_torn_tail
from core.stop import STOPS_NAME, StopProtocol, validate_stops

STALE_TEMP_SECONDS = 60


class Finding(NamedTuple):
    level: str  # ok | warn | fail | fixed
    subject: str
    message: str


def examine(protocol: StopProtocol, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    home = Path(protocol.home)
    yield from _check_home(home, repair)
    try:
        load_config(home)
        yield Finding("ok", "config.toml", "valid" if (home / "config.toml").exists() else "absent; defaults in use")
    except ConfigError as exc:
        yield Finding("fail", "config.toml", str(exc))
    yield from _check_stops(protocol, repair, now)
    yield from _check_registry(protocol, REGISTRY_NAME, repair, now)
    yield from _check_registry(protocol, SESSIONS_NAME, repair, now)
    yield from _check_acklog(protocol, repair)
    yield from _check_halts(protocol, repair, now)
    yield from _check_leftovers(home, repair)


def _check_home(home: Path, repair: bool) -> Iterator[Finding]:
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        if repair:
            os.chmod(home, 0o700)
            yield Finding("fixed", "home", f"{home} was mode {mode:o}; now 700")
        else:
            yield Finding("warn", "home", f"{home} is mode {mode:o}; others can read agent state (repair: 700)")
    else:
        yield Finding("ok", "home", str(home))
    for entry in home.iterdir():
        if entry.is_file() and not entry.name.endswith(".lock"):
            file_mode = stat.S_IMODE(entry.stat().st_mode)
            if file_mode & 0o077:
                if repair:
                    os.chmod(entry, 0o600)
                    yield Finding("fixed", entry.name, f"mode {file_mode:o}; now 600")
                else:
                    yield Finding("warn", entry.name, f"mode {file_mode:o}; expected 600")


def _check_stops(protocol: StopProtocol, repair: bool, now: float | None) -> Iterator[Finding]:
    path = protocol.stops.path
    try:
        data = read_json(path, None)
        if data is None:
            yield Finding("ok", STOPS_NAME, "absent; nothing is stopped")
            return
        state = validate_stops(data)
    except StateCorrupt as exc:
        if repair:
            state = protocol.stops.rebuild(exc.detail, now=now)
            yield Finding("fixed", STOPS_NAME, f"was unreadable ({exc.detail}); quarantined and rebuilt from the "
                                               f"ack log: {len(state['sessions'])} stopped sessions, fleet "
                                               f"{'stopped' if state['fleet'] else 'running'}")
        else:
            yield Finding("fail", STOPS_NAME, f"unreadable ({exc.detail}); the gate denies every tool call "
                                              "until it is repaired (leash doctor --repair rebuilds it from the ack log)")
        return
    fleet = "STOPPED" if state["fleet"] else "running"
    yield Finding("ok", STOPS_NAME, f"{len(state['sessions'])} stopped sessions, fleet {fleet}")


def _check_registry(protocol: StopProtocol, name: str, repair: bool, now: float | None) -> Iterator[Finding]:
    registry = protocol.hands_off_registry if name == REGISTRY_NAME else protocol.sessions
    try:
        data = read_json(registry.path, None)
    except StateCorrupt as exc:
        if repair:
            registry.store.quarantine(exc, now=now)
            yield Finding("fixed", name, f"was unreadable ({exc.detail}); quarantined, starts empty")
        else:
            yield Finding("fail", name, f"unreadable ({exc.detail}); readers quarantine it and start empty")
        return
    if data is None:
        yield Finding("ok", name, "absent")
        return
    if name == REGISTRY_NAME:
        active = registry.active(now=now)
        expired = len(data) - len(active)
        if expired and repair:
            registry.prune(now=now)
            yield Finding("fixed", name, f"pruned {expired} expired locks; {len(active)} active")
        elif expired:
            yield Finding("warn", name, f"{len(active)} active locks, {expired} expired (ignored; repair prunes)")
        else:
            yield Finding("ok", name, f"{len(active)} active locks")
    else:
        yield Finding("ok", name, f"{len(data)} sessions seen")


def _check_acklog(protocol: StopProtocol, repair: bool) -> Iterator[Finding]:
    report = protocol.acklog.verify()
    if report.torn_bytes:
        if repair:
            with locked(protocol.acklog.path):
                moved = repair_torn_tail(protocol.acklog.path)
            yield Finding("fixed", ACK_LOG_NAME, f"torn tail of {moved} bytes moved to {ACK_LOG_NAME}.torn")
        else:
            yield Finding("warn", ACK_LOG_NAME, f"torn tail of {report.torn_bytes} bytes (skipped by readers; "
                                                "the next append or repair moves it to .torn)")
    if report.ok:
        yield Finding("ok", ACK_LOG_NAME, f"{report.lines} lines, hash chain intact")
    else:
        yield Finding("fail", ACK_LOG_NAME, f"hash chain broken at line {report.first_broken_line}: {report.problem}")
    if report.torn_file_bytes:
        yield Finding("warn", ACK_LOG_NAME + ".torn", f"{report.torn_file_bytes} bytes of torn tails kept for inspection")


def _check_halts(protocol: StopProtocol, repair: bool, now: float | None) -> Iterator[Finding]:
    """halts.db: integrity, schema version, the 90-day archive. A database that
    cannot be read holds every session (the gate fails safe); repair moves it
    aside (with its -wal and -shm) so a fresh one can start."""
    from core.clock import now_seconds
    from core.halts.store import DB_NAME, HaltStoreUnavailable, archive_old_events, db_path, exists, open_store

    home = protocol.home
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
                moved = archive_old_events(connection, now=now_seconds(now), force=True)
                pending = connection.execute("SELECT count(*) FROM halt_events WHERE acknowledged = 0").fetchone()[0]
                archived = f"; archived {moved} settled events older than 90 days" if moved else ""
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
    from core.statefile import quarantine

    path = db_path(home)
    moved = quarantine(path, now=now)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix) and moved:
            os.rename(path + suffix, moved + suffix)
    protocol.acklog.append("state_quarantined", source="leash", session_id="", now=now, file=DB_NAME,
                           moved_to=os.path.basename(moved or ""),
                           reason=f"{DB_NAME} unreadable ({problem}); moved aside; a new one starts empty")
    yield Finding("fixed", DB_NAME, f"was unreadable ({problem}); moved to {os.path.basename(moved or '')}")


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
