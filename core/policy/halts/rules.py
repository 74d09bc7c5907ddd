"""The halt lifecycle's rules: a session's state derived from its halts, and
which resolutions need care.

A session is ``paused`` while one of its halts is escalated or timed out,
``halted`` while a pending halt of a blocking severity (``BLOCKING_SEVERITIES``)
is unanswered, and ``active`` otherwise. ``session_states`` caches that per
session; ``refresh_state`` recomputes it inside the caller's write
transaction. Failure: SQLite errors propagate to the caller, whose transaction
then changes nothing.
"""
from __future__ import annotations

from leash.core.policy.halts.conditions.registry import BLOCKING_SEVERITIES

_BLOCKING_IN_SQL = ", ".join(f"'{severity}'" for severity in BLOCKING_SEVERITIES)


def dismissal_needs_caution(severity: str) -> bool:
    """The seed: dismissing a critical halt requires ``continue_with_caution``."""
    return severity == "critical"


def state_of(connection, session_id: str) -> str:
    """``paused``, ``halted`` or ``active``, from the session's stored halts."""
    paused = connection.execute(
        "SELECT 1 FROM halt_events WHERE session_id = ? AND resolution IN ('escalated', 'timeout') LIMIT 1",
        (session_id,)).fetchone()
    if paused:
        return "paused"
    halted = connection.execute(
        "SELECT 1 FROM halt_events WHERE session_id = ? AND acknowledged = 0 AND resolution IS NULL"
        f" AND severity IN ({_BLOCKING_IN_SQL}) LIMIT 1", (session_id,)).fetchone()
    return "halted" if halted else "active"


def refresh_state(connection, session_id: str, stamp: str) -> str:
    """Store the session's state as ``state_of`` gives it; returns it."""
    state = state_of(connection, session_id)
    connection.execute(
        "INSERT INTO session_states (session_id, state, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(session_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at"
        " WHERE session_states.state != excluded.state", (session_id, state, stamp))
    return state


# Medium findings are recorded as halts only when at least this many fire together.
MEDIUMS_RECORDED_FROM = 2


def to_auto_record(fired, *, record_high: bool | None) -> list:
    """The findings of a halting check recorded as halts: every critical one,
    high ones when ``record_high``, medium ones when two or more fired."""
    mediums = sum(1 for f in fired if f.severity == "medium")
    return [f for f in fired if f.severity == "critical" or (f.severity == "high" and record_high)
            or (f.severity == "medium" and mediums >= MEDIUMS_RECORDED_FROM)]
