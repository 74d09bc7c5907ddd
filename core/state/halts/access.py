"""Access to the halt store (``halts.db``): opening it with the housekeeping
every opener does (bring it in step with the ack log, archive, sweep the
timeouts), a connection per call (``connected``) or kept for repeated reads
(``reading``), the condition config as the engine reads it, and the reads the
console and the gate share.

Failure: a database that cannot be opened or read raises
``HaltStoreUnavailable`` (the gate then fails closed); a stored condition row
that is not valid reads as its default, never as an error.
"""
from __future__ import annotations

import _thread
import json
import time

from leash.core.base.clock import iso, now_seconds
from leash.core.base.home import resolve_home
from leash.core.base.secrets import mask
from leash.core.state.halts import kept, ledger
from leash.core.state.halts.store import (
    DEFAULT_CONDITIONS,
    SEVERITIES,
    HaltStoreUnavailable,
    archive_old_events,
    exists,
    open_store,
    write,
)
from leash.core.state.halts.store import refresh_state as _refresh_state
from leash.core.state.halts.store import state_of as _state_of

TYPE_CHECKING = False  # for the type checker only: threading is imported when a reader is entered
if TYPE_CHECKING:
    import threading

CONFIG_CACHE_SECONDS = 60
TIMEOUT_REASON = "no acknowledgement before escalate_after_minutes; escalated, session paused"


_config_cache: dict[str, tuple[float, dict[str, dict]]] = {}


def _row_config(row, problems: list[str] | None = None) -> dict:
    """A stored row as the engine reads it: a threshold key or an
    ``escalate_after_minutes`` that is not valid reads as its default (noted in
    ``problems``), so one bad row never turns every check into a halt."""
    from leash.core.policy.halts.thresholds import effective, effective_escalate_after

    name = row["condition_name"]
    try:
        stored = json.loads(row["threshold"] or "{}")
    except (TypeError, ValueError):
        stored = None
    threshold, wrong = effective(name, stored)
    minutes = effective_escalate_after(row["escalate_after_minutes"])
    if minutes != row["escalate_after_minutes"]:
        wrong.append(f"{name}.escalate_after_minutes {row['escalate_after_minutes']!r} is out of range")
    if problems is not None:
        problems.extend(wrong)
    return {"condition_name": name, "halt_type": row["halt_type"], "enabled": bool(row["enabled"]),
            "severity": row["severity"], "threshold": threshold,
            "auto_escalate": bool(row["auto_escalate"]), "escalate_after_minutes": minutes}


def default_config() -> dict[str, dict]:
    return {name: {"condition_name": name, "halt_type": halt_type, "enabled": True, "severity": severity,
                   "threshold": dict(threshold), "auto_escalate": False, "escalate_after_minutes": None}
            for name, halt_type, severity, threshold in DEFAULT_CONDITIONS}


_DEFAULTS_READ: list[dict[str, dict]] = []


def default_config_read() -> dict[str, dict]:
    """The default config for the engine to read (never to change): built once
    per process, as the constant table it comes from."""
    if not _DEFAULTS_READ:
        _DEFAULTS_READ.append(default_config())
    return _DEFAULTS_READ[0]


def load_config(connection, home: str) -> dict[str, dict]:
    """Condition config, cached in memory for 60 s (the seed's refresh)."""
    cached = _config_cache.get(home)
    if cached and time.monotonic() - cached[0] < CONFIG_CACHE_SECONDS:
        return cached[1]
    rows = {r["condition_name"]: _row_config(r) for r in connection.execute("SELECT * FROM halt_conditions_config")}
    _config_cache[home] = (time.monotonic(), rows)
    return rows


def _log(connection, home: str, event: str, row, *, source: str, reason: str, now: float, **extra) -> None:
    """The halt's ack-log line, inside the open write transaction (see ``core.halts.ledger``)."""
    ledger.append(connection, home, event, row, source=source, reason=mask(reason or ""), now=now, **extra)


def sweep_timeouts(connection, home: str, *, now: float) -> int:
    """Unacknowledged halts past their deadline become ``timeout`` (escalated)."""
    stamp = iso(now)
    due = connection.execute(
        "SELECT 1 FROM halt_events WHERE acknowledged = 0 AND resolution IS NULL AND escalate_at IS NOT NULL"
        " AND escalate_at <= ? LIMIT 1", (stamp,)).fetchone()
    if not due:
        return 0
    with write(connection):
        rows = connection.execute(
            "UPDATE halt_events SET resolution = 'timeout', updated_at = ? WHERE acknowledged = 0"
            " AND resolution IS NULL AND escalate_at IS NOT NULL AND escalate_at <= ?"
            " RETURNING id, session_id, severity, condition_name, halt_type", (stamp, stamp)).fetchall()
        for session in {r["session_id"] for r in rows}:
            _refresh_state(connection, session, stamp)
        for row in rows:
            _log(connection, home, "halt_timeout", row, source="leash", now=now, reason=TIMEOUT_REASON)
    return len(rows)


def _open(home: str, now: float):
    """A connection after the housekeeping every opener does: archive (at most
    daily) and the timeout sweep."""
    connection = open_store(home, now_iso=iso(now))
    try:
        if not ledger.in_step(connection, home):
            ledger.rebuild(connection, home, now=now, problem="is out of step with the ack log")
        archive_old_events(connection, now=now)
        sweep_timeouts(connection, home, now=now)
    except Exception:
        connection.close()
        raise
    return connection


class connected:
    """``with connected(home, now) as db:`` — one connection for several calls
    (the hook makes three); closed at the end. None when there is no halts.db."""

    def __init__(self, home, now: float | None = None, *, create: bool = False):
        self.home = resolve_home(home)
        self.now = now_seconds(now)
        self.create = create
        self.connection = None

    def __enter__(self):
        if self.create or exists(self.home) or ledger.log_head(self.home) is not None:
            try:
                self.connection = _open(self.home, self.now)
            except HaltStoreUnavailable:
                raise
            except Exception as exc:  # sqlite errors during housekeeping
                raise HaltStoreUnavailable(str(exc)) from None
        return self.connection

    def __exit__(self, *exc_info) -> None:
        if self.connection is not None:
            self.connection.close()


def session_state(home, session_id: str, *, now: float | None = None, connection=None) -> str:
    """active / halted / paused; ``active`` when there is no halts.db at all.
    Raises HaltStoreUnavailable when the database cannot be read."""
    if connection is None:
        with connected(home, now) as db:
            return session_state(home, session_id, now=now, connection=db) if db is not None else "active"
    try:
        # From the halts themselves, never from the derived session_states table.
        return kept.answer(connection, ("state", session_id), lambda: _state_of(connection, session_id))
    except Exception as exc:
        raise HaltStoreUnavailable(str(exc)) from None


def pending_counts(connection) -> dict[str, int]:
    """Halts waiting on a human (unacknowledged or escalated), by severity."""
    counts = {s: 0 for s in SEVERITIES}
    for severity, count in connection.execute(
            "SELECT severity, count(*) FROM halt_events WHERE acknowledged = 0 OR resolution = 'escalated'"
            " GROUP BY severity"):
        counts[severity] = count
    return counts


def session_states(connection) -> dict[str, str]:
    """Every session that is not active: session id -> halted | paused."""
    return {r[0]: r[1] for r in connection.execute("SELECT session_id, state FROM session_states"
                                                   " WHERE state != 'active'")}


_readers: dict[str, tuple] = {}  # home -> (connection, its lock, the file's identity when opened, its kept view)
_readers_guard = _thread.allocate_lock()  # (not threading: off the hook path's imports)


def _identity(stat_result) -> tuple[int, int]:
    return stat_result.st_dev, stat_result.st_ino


def _housekeep(connection, home: str, *, now: float) -> None:
    """In step with the ack log, then the timeout sweep: what every reader of a
    kept connection does first, asking the database only what its view
    (``core.halts.kept``) cannot answer. The log's head is read every time."""
    if kept.answer(connection, ("recorded_head",), lambda: ledger.recorded_head(connection)) \
            != ledger.log_head(home):  # edited since: the log's truth first
        ledger.rebuild(connection, home, now=now, problem="is out of step with the ack log")
    due = kept.answer(connection, ("first_due",), lambda: first_due(connection))
    if due is not None and due <= iso(now):
        sweep_timeouts(connection, home, now=now)


def first_due(connection) -> str | None:
    """The earliest deadline of an unacknowledged halt (what ``sweep_timeouts`` looks for)."""
    row = connection.execute("SELECT min(escalate_at) FROM halt_events WHERE acknowledged = 0"
                             " AND resolution IS NULL AND escalate_at IS NOT NULL").fetchone()
    return row[0] if row else None


class reading:
    """``with reading(home, now) as db:`` — a connection this process keeps open
    for its repeated reads (the console). Keeping one open keeps the WAL file in
    place, so reading never creates or deletes files that a watcher of the home
    would take for a change. None when there is no halts.db."""

    def __init__(self, home, now: float | None = None):
        self.home = resolve_home(home)
        self.now = now_seconds(now)
        self.lock: threading.Lock | None = None

    def __enter__(self):
        import os
        import threading

        from leash.core.state.halts.store import db_path

        try:
            found = os.stat(db_path(self.home))
        except FileNotFoundError:
            found = None
        if found is None and ledger.log_head(self.home) is None:
            return None  # no halt ever: nothing to read (and no file to create)
        with _readers_guard:
            entry = _readers.get(self.home)
            identity = _identity(found) if found is not None else None  # None: deleted, opened again below
            if entry is None or entry[2] != identity:
                if entry is not None:  # replaced or deleted under the kept connection: never read a ghost
                    kept.unregister(entry[0])
                    entry[0].close()
                connection = open_store(self.home, create=True, now_iso=iso(self.now))
                found = os.stat(db_path(self.home))
                entry = (connection, threading.Lock(), _identity(found), kept.register(connection))
                _readers[self.home] = entry
        connection, self.lock, _, view = entry
        self.lock.acquire()
        try:
            view.revalidate(kept.identity_of(found))
            _housekeep(connection, self.home, now=self.now)
        except Exception as exc:
            view.forget()
            self.lock.release()
            self.lock = None
            with _readers_guard:
                if _readers.get(self.home) is entry:
                    kept.unregister(entry[0])
                    _readers.pop(self.home, None)
            raise HaltStoreUnavailable(str(exc)) from None
        return connection

    def __exit__(self, *exc_info) -> None:
        if self.lock is not None:
            self.lock.release()


def find_halt(halt_id: str, *, home=None) -> dict | None:
    """One halt event by id (every column), or None."""
    home = resolve_home(home)
    if not exists(home):
        return None
    connection = open_store(home, create=False)
    try:
        row = connection.execute("SELECT * FROM halt_events WHERE id = ?", (halt_id,)).fetchone()
        if row is None:
            matches = connection.execute("SELECT * FROM halt_events WHERE id LIKE ? LIMIT 2",
                                         (halt_id.replace("%", "") + "%",)).fetchall()
            row = matches[0] if len(matches) == 1 and len(halt_id) >= 6 else None
        return dict(row) if row else None
    finally:
        connection.close()
