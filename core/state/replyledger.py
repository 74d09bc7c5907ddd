"""The built-in reply ledger: who spoke last in each conversation.

``replies.db`` (SQLite, WAL) keeps one row per message direction recorded with
``leash reply in|out --channel C --key K``: ``in`` when a correspondent's
message arrives, ``out`` when the agent's reply is sent. A reply is pending
when the newest row of that (channel, key) conversation is inbound — the
atlas rule, ground truth from the channel's own record, no transcript parsing.

Failure: callers on the stop hook treat any error here as "no reply pending"
(fail open); writers get the sqlite3 error.
"""
from __future__ import annotations

import os
import sqlite3

LEDGER_NAME = "replies.db"
DIRECTIONS = ("in", "out")
BUSY_TIMEOUT_MS = 5000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    channel     TEXT NOT NULL,
    key         TEXT NOT NULL,
    direction   TEXT NOT NULL CHECK (direction IN ('in', 'out')),
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages (channel, key, id DESC);
"""


def _connect(home: str, *, create: bool) -> sqlite3.Connection | None:
    """The ledger; None when it does not exist and ``create`` is false."""
    if not create and not os.path.exists(os.path.join(home, LEDGER_NAME)):
        return None
    return _open(home, create=create)


def _open(home: str, *, create: bool) -> sqlite3.Connection:
    path = os.path.join(home, LEDGER_NAME)
    if create:
        from leash.core.base.home import private_dir

        private_dir(home)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if create:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(_SCHEMA)
    return connection


def record(home: str, channel: str, key: str, direction: str, *, now: float) -> int:
    """Record one message direction; returns its row id."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'in' or 'out', got {direction!r}")
    for what, value in (("channel", channel), ("key", key)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"a reply {what} must be a non-empty string")
    connection = _open(home, create=True)
    try:
        connection.execute("BEGIN IMMEDIATE")
        cursor = connection.execute(
            "INSERT INTO messages (channel, key, direction, recorded_at) VALUES (?, ?, ?, ?)",
            (channel, key, direction, now))
        connection.execute("COMMIT")
        return cursor.lastrowid or 0  # (an INSERT always sets it)
    finally:
        connection.close()


def reply_pending(home: str, channel: str, key: str) -> bool:
    """True when the newest message of the conversation is inbound."""
    connection = _connect(home, create=False)
    if connection is None:
        return False
    try:
        row = connection.execute(
            "SELECT direction FROM messages WHERE channel = ? AND key = ? ORDER BY id DESC LIMIT 1",
            (channel, key)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False
        raise
    finally:
        connection.close()
    return row is not None and row[0] == "in"


def messages(home: str) -> list[tuple[str, str, str, float]]:
    """Every recorded direction, oldest first: (channel, key, direction, recorded_at)."""
    connection = _connect(home, create=False)
    if connection is None:
        return []
    try:
        return connection.execute("SELECT channel, key, direction, recorded_at FROM messages ORDER BY id").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        connection.close()
