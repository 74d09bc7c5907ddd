"""What the hooks record as evidence for the halt conditions: the files a
session has read (its PostToolUse hook reports them) and the failed attempts
at each task, with their last errors (masked).

Failure: a store that cannot be opened raises ``HaltStoreUnavailable``;
``files_read`` is None for a session whose hook never reported, which the
conditions read as "no evidence either way", never as "read nothing".
"""
from __future__ import annotations

import json

from leash.core.base.clock import iso, now_seconds
from leash.core.base.home import ensure_home, resolve_home
from leash.core.base.secrets import mask
from leash.core.state.halts import kept
from leash.core.state.halts.access import connected
from leash.core.state.halts.store import exists, open_store, write

RECENT_ERRORS_KEPT = 5
ERROR_KEPT_CHARS = 2000  # the end of an error: where the message that matters usually is


def _stored_attempts(connection, session_id: str, task_id: str) -> tuple[int, list[str]]:
    def read() -> tuple[int, tuple[str, ...]]:
        row = connection.execute("SELECT count, recent_errors FROM attempts WHERE session_id = ? AND task_id = ?",
                                 (session_id, task_id)).fetchone()
        return (row["count"], tuple(json.loads(row["recent_errors"]))) if row else (0, ())

    count, errors = kept.answer(connection, ("attempts", session_id, task_id), read)
    return count, list(errors)


def record_files_read(home, session_id: str, paths: list[str], *, now: float | None = None) -> None:
    """Note files the session has read, and that its PostToolUse hook reports."""
    stamp = iso(now_seconds(now))
    connection = open_store(ensure_home(home), now_iso=stamp)
    try:
        with write(connection):
            connection.execute("INSERT OR IGNORE INTO tracked_sessions (session_id, since) VALUES (?, ?)",
                               (session_id, stamp))
            connection.executemany(
                "INSERT INTO files_read (session_id, path, read_at) VALUES (?, ?, ?)"
                " ON CONFLICT(session_id, path) DO UPDATE SET read_at = excluded.read_at",
                [(session_id, p, stamp) for p in paths])
    finally:
        connection.close()


def files_read(home, session_id: str, *, connection=None) -> list[str] | None:
    """Files the session has read; None when its PostToolUse hook never reported
    (then there is no evidence either way)."""
    if connection is None:
        with connected(home) as db:
            return files_read(home, session_id, connection=db) if db is not None else None
    def read() -> tuple[str, ...] | None:
        if connection.execute("SELECT 1 FROM tracked_sessions WHERE session_id = ?",
                              (session_id,)).fetchone() is None:
            return None
        return tuple(r[0] for r in connection.execute("SELECT path FROM files_read WHERE session_id = ?",
                                                       (session_id,)))

    paths = kept.answer(connection, ("files_read", session_id), read)
    return None if paths is None else list(paths)


def record_attempt(home, session_id: str, task_id: str, *, error: str | None, now: float | None = None) -> int:
    """A failure (``error``) increments the task's counter and keeps the error;
    a success (``error=None``) resets it. Returns the new count."""
    stamp = iso(now_seconds(now))
    connection = open_store(ensure_home(home), now_iso=stamp)
    try:
        with write(connection):
            count, errors = next_attempts(*_stored_attempts(connection, session_id, task_id), error=error)
            connection.execute(
                "INSERT INTO attempts (session_id, task_id, count, last_error, recent_errors, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id, task_id) DO UPDATE SET count = excluded.count,"
                " last_error = excluded.last_error, recent_errors = excluded.recent_errors,"
                " updated_at = excluded.updated_at",
                (session_id, task_id, count, errors[-1] if errors else None, json.dumps(errors), stamp))
        return count
    finally:
        connection.close()


def next_attempts(count: int, errors: list[str], *, error: str | None) -> tuple[int, list[str]]:
    """The task's failures in a row and its recent errors after an attempt:
    a failure (``error``) counts and keeps the error (masked), a success resets."""
    if error is None:
        return 0, []
    return count + 1, (errors + [mask(error)[-ERROR_KEPT_CHARS:]])[-RECENT_ERRORS_KEPT:]


def stored_attempts(home, session_id: str, task_id: str) -> tuple[int, list[str]]:
    home = resolve_home(home)
    if not exists(home):
        return 0, []
    connection = open_store(home, create=False)
    try:
        return _stored_attempts(connection, session_id, task_id)
    finally:
        connection.close()
