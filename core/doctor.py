"""``leash doctor``: look at every piece of state, say what is wrong, mend it.

Each check yields ``Finding(level, subject, message)``: ``ok``, ``warn`` (worth
knowing, nothing is broken), ``fail`` (something is broken) or ``fixed`` (it was
broken and ``repair=True`` mended it). Repairs follow the fail-policy table and
never delete state: a corrupt ``stops.json`` is quarantined and rebuilt by
replaying the ack log (so are the hands-off locks and halts.db); a corrupt session
registry is quarantined and starts empty;
expired locks are pruned; a torn ack-log tail is moved to ``.torn``. A broken
hash chain cannot be mended (the log is append-only) and stays a failure.

The home itself comes first, and doctor is the one command that runs on an
unsafe home (``core.home.UnsafeHome``): it reports it, ``--repair`` takes the
write bits of others off a home the user owns, and the other checks wait until
the home is safe. A directory where a state file belongs, or a symbolic link
to a state file that can be rebuilt, is moved aside (quarantine naming);
links to the ack log or a database are reported, never followed.
"""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Iterator

from leash.core.acklog import ACK_LOG_NAME
from leash.core.config import ConfigError, load_config
from leash.core.finding import Finding
from leash.core.home import home_problem, is_reserved_name, resolve_home
from leash.core.protocol import StopProtocol
from leash.core.sessions import SESSIONS_NAME
from leash.core.statefile import (
    CORRUPT_MARK,
    TEMP_PREFIX,
    StateCorrupt,
    locked,
    quarantine,
    read_json,
    repair_torn_tail,
)

STALE_TEMP_SECONDS = 60


def examine(protocol: StopProtocol | str, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    """Every finding; ``protocol`` may be a home's path when the home is unsafe
    (no ``StopProtocol`` can be made for it until it is repaired)."""
    home = Path(protocol.home if isinstance(protocol, StopProtocol) else resolve_home(protocol))
    safe = True
    for finding in _check_home(home, repair, now):
        safe = safe and not (finding.subject == "home" and finding.level == "fail")
        yield finding
    if not safe:
        yield Finding("fail", "state", "not examined: leash uses no state in an unsafe home")
        return
    if (home / ACK_LOG_NAME).is_symlink():  # every store is checked against the log
        yield Finding("fail", "state", f"not examined: {ACK_LOG_NAME} cannot be read until it is a file")
        return
    if not isinstance(protocol, StopProtocol):
        protocol = StopProtocol(home)
    try:
        load_config(home)
        yield Finding("ok", "config.toml", "valid" if (home / "config.toml").exists() else "absent; defaults in use")
    except ConfigError as exc:
        yield Finding("fail", "config.toml", str(exc))
    from leash.core.storecheck import examine_logged_stores

    yield from examine_logged_stores(protocol, repair=repair, now=now)
    yield from _check_sessions(protocol, repair, now)
    yield from _check_acklog(protocol, repair)
    yield from _check_halts(protocol, repair, now)
    from leash.core.storecheck import examine_halts

    yield from examine_halts(protocol, repair=repair, now=now)
    from leash.core.install import doctor_findings

    for level, subject, message in doctor_findings():
        yield Finding(level, subject, message)
    yield from _check_halt_thresholds(protocol.home, repair, now)
    yield from _check_warrants(protocol, repair, now)
    yield from _check_leftovers(home, repair)


def _check_home(home: Path, repair: bool, now: float | None = None) -> Iterator[Finding]:
    problem = home_problem(str(home))
    fixed = False
    if problem is not None:
        text, repairable = problem
        if repair and repairable:
            os.chmod(home, 0o700)
            fixed = True
            yield Finding("fixed", "home", f"{home} was {text}; now 700")
        else:
            hint = ("leash doctor --repair makes it 700" if repairable
                    else "leash cannot mend this: fix it by hand or choose another home")
            yield Finding("fail", "home", f"{home} is {text}; every command refuses it ({hint})")
            return
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        if repair:
            os.chmod(home, 0o700)
            yield Finding("fixed", "home", f"{home} was mode {mode:o}; now 700")
        else:
            yield Finding("warn", "home", f"{home} is mode {mode:o}; others can read agent state (repair: 700)")
    elif not fixed:
        yield Finding("ok", "home", str(home))
    for entry in home.iterdir():
        if entry.is_file() and not entry.is_symlink() and not entry.name.endswith(".lock"):
            file_mode = stat.S_IMODE(entry.stat().st_mode)
            if file_mode & 0o077:
                if repair:
                    os.chmod(entry, 0o600)
                    yield Finding("fixed", entry.name, f"mode {file_mode:o}; now 600")
                else:
                    yield Finding("warn", entry.name, f"mode {file_mode:o}; expected 600")
    yield from _check_state_shapes(home, repair, now)


# State files a bad link or directory may be moved away from: each is rebuilt
# from the ack log or recreated empty. The log and the databases hold what
# nothing else does, so a link there is reported and left to the operator.
_NEVER_MOVED = {ACK_LOG_NAME, "halts.db", "replies.db", "config.toml"}
_DIRECTORIES = {"warrants", "dogs", "run"}


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
        from leash.core.acklog import AckLog

        AckLog(str(home)).append("state_quarantined", source="leash", session_id="", now=now, file=name,
                                 moved_to=os.path.basename(moved or ""), reason=reason)
    except OSError:
        pass  # the ack log itself may be what is wrong; the finding says what was done
    yield Finding("fixed", name, f"{what}; moved to {os.path.basename(moved or '')}")


def _check_sessions(protocol: StopProtocol, repair: bool, now: float | None) -> Iterator[Finding]:
    """sessions.json: a cache of what the hooks saw (stops and locks are checked
    against the ack log by ``core.storecheck``)."""
    registry = protocol.sessions
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


def _check_acklog(protocol: StopProtocol, repair: bool) -> Iterator[Finding]:
    try:
        report = protocol.acklog.verify()
    except OSError as exc:
        yield Finding("fail", ACK_LOG_NAME, f"unreadable: {exc}")
        return
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
        yield Finding("warn", ACK_LOG_NAME + ".torn",
                      f"{report.torn_file_bytes} bytes of torn tails kept for inspection")


def _check_halts(protocol: StopProtocol, repair: bool, now: float | None) -> Iterator[Finding]:
    """halts.db: integrity, schema version, the 90-day archive. A database that
    cannot be read holds every session (the gate fails safe); repair moves it
    aside (with its -wal and -shm) so a fresh one can start."""
    from leash.core.clock import now_seconds
    from leash.core.halts.store import DB_NAME, HaltStoreUnavailable, archive_old_events, db_path, exists, open_store

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
    from leash.core.statefile import quarantine

    path = db_path(home)
    moved = quarantine(path, now=now)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix) and moved:
            os.rename(path + suffix, moved + suffix)
    protocol.acklog.append("state_quarantined", source="leash", session_id="", now=now, file=DB_NAME,
                           moved_to=os.path.basename(moved or ""),
                           reason=f"{DB_NAME} unreadable ({problem}); moved aside; a new one starts empty")
    yield Finding("fixed", DB_NAME, f"was unreadable ({problem}); moved to {os.path.basename(moved or '')}")


def _check_halt_thresholds(home: str, repair: bool, now: float | None) -> Iterator[Finding]:
    """Stored condition settings the engine cannot use (it reads each as its default)."""
    from leash.core.halts.api import stored_config_problems

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


def _check_warrants(protocol: StopProtocol, repair: bool, now: float | None) -> Iterator[Finding]:
    """Warrants and dog states no dog can work: a kennel quarantines them when
    it meets them; repair does it now (a state a live dog holds is left to it)."""
    from leash.core.warrants import WarrantQueue

    queue = WarrantQueue(protocol.home, protocol.acklog)
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
