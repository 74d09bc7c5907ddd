"""Reading the halt store on PostgreSQL: a unit of work whose reads see one
state, the rows turned into the shapes the file backend hands out, and the
rows the halt decision reads and writes.

A unit holds this thread's pooled connection; its reads run in one
``REPEATABLE READ, READ ONLY`` transaction (a snapshot), begun at the first
read, and so do the reads of any other store this thread makes meanwhile (a
view of the fleet sees one state). Any write on the thread (the unit's check
recording a halt, another store's write) ends the snapshot first
(``Database.before_next_write``) and runs in a transaction of its own (read
committed, so the ack log's chain is extended from its true tip); the next
read begins a new snapshot that sees it. Inside a transaction the caller
already holds, the unit reads and writes in that transaction instead.

Rows come back as the file backend's ``halts.db`` rows: ids as text, times as
ISO-8601 UTC strings (``core.clock.iso``). ``PgHaltRows`` is the halt
decision's ``HaltStorage`` over a unit: reads in its snapshot, each write in a
transaction of its own.

Failure: a database error while reading raises ``HaltStoreUnavailable`` (one
line, never the password); a check whose store fails answers the seed's
fail-safe halt instead (``core.policy.halts.decision.check``).
"""
from __future__ import annotations

import uuid
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Mapping, Sequence

from leash.core.base.clock import iso
from leash.core.policy.halts.outcomes import Acknowledgement, CheckResult, HaltQuery, NewHalt, Settled
from leash.core.state.halts.rows import note_failed_check
from leash.core.state.halts.store import SEVERITIES, HaltStoreUnavailable, state_sql
from leash.core.store.pg import StoreOffline, as_json, errors, notify, said
from leash.core.store.records_halts import HaltListing, HaltRecord

# A session's state from its halts: the file backend's query (``core.state.halts.store.state_sql``).
STATE_SQL = state_sql(mark="%s", false="false")


def at(seconds: float) -> datetime:
    """A timestamptz parameter for unix seconds."""
    return datetime.fromtimestamp(seconds, timezone.utc)


@contextmanager
def reachable() -> Iterator[None]:
    """The store's failures as ``HaltStoreUnavailable`` (the gate then fails closed)."""
    try:
        yield
    except StoreOffline as exc:
        raise HaltStoreUnavailable(str(exc)) from None
    except errors() as exc:
        raise HaltStoreUnavailable(f"PostgreSQL halt store: {said(exc)}") from None


def _plain(value: object) -> object:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return iso(value.timestamp())
    return value


def dicts(cursor: Any) -> list[dict]:
    """A cursor's rows as dicts, ids as text and times as ISO strings."""
    names = [column.name for column in cursor.description]
    return [{name: _plain(value) for name, value in zip(names, row, strict=True)}
            for row in cursor.fetchall()]


def one(cursor: Any) -> dict | None:
    rows = dicts(cursor)
    return rows[0] if rows else None


def as_uuid(text: str) -> str | None:
    """``text`` as a stored halt id could be, or None when it cannot be one."""
    try:
        return str(uuid.UUID(text)) if len(text) == 36 else None
    except ValueError:
        return None


def state_of(conn: Any, session_id: str) -> str:
    return str(conn.execute(STATE_SQL, (session_id, session_id)).fetchone()[0])


def listing(conn: Any, query: HaltQuery) -> HaltListing:
    """The page of halts ``query`` asks for; its ``as_json()`` is the seed's
    ``GetSessionHaltsOutput`` (``core.state.halts.api.get_session_halts``'s query)."""
    from leash.core.state.halts.api import halt_event, listing_filters

    (scope, params), (where, fparams) = listing_filters(query, mark="%s", false="false", as_text="::text")
    total = conn.execute(f"SELECT count(*) FROM halt_events WHERE {where}", fparams).fetchone()[0]
    rows = dicts(conn.execute(f"SELECT * FROM halt_events WHERE {where} ORDER BY severity DESC, triggered_at, id"
                              " LIMIT %s OFFSET %s", fparams + [query.limit, query.offset]))
    unacknowledged = conn.execute(f"SELECT count(*) FROM halt_events WHERE {scope} AND acknowledged = false",
                                  params).fetchone()[0]
    return HaltListing.of({"total_count": total, "halts": [halt_event(r) for r in rows],
                           "unacknowledged_count": unacknowledged})


class PgHaltUnit:
    """``HaltUnit`` on PostgreSQL (see the module's docstring)."""

    def __init__(self, halts: Any, conn: Any, now: float, *, owns_snapshot: bool):
        self.halts, self.now = halts, now
        self._conn = conn
        self._owns_snapshot = owns_snapshot
        self._snapshot: ExitStack | None = None

    # ------------------------------------------------------------ the snapshot
    def reads(self) -> Any:
        """The connection, inside this unit's snapshot (begun here when none is open)."""
        if not self._owns_snapshot or self._snapshot is not None:
            return self._conn
        stack = ExitStack()
        conn = stack.enter_context(self.halts.db.snapshot())
        self._snapshot = stack
        self.halts.db.before_next_write(self.settle)  # any store's write on this thread ends it first
        return conn

    def settle(self, *exc_info: Any) -> None:
        """End the snapshot (before a write, and at the end of the unit)."""
        stack, self._snapshot = self._snapshot, None
        if stack is not None:
            self.halts.db.before_next_write(None)
            stack.__exit__(*(exc_info or (None, None, None)))

    # ------------------------------------------------------------ HaltUnit
    def state(self, session_id: str) -> str:
        with reachable():
            return state_of(self.reads(), session_id)

    def states(self) -> dict[str, str]:
        with reachable():
            rows = self.reads().execute("SELECT session_id, state::text FROM session_states"
                                        " WHERE state <> 'active' ORDER BY session_id").fetchall()
        return {session: state for session, state in rows}

    def pending(self, *, session_id: str | None = None, limit: int = 50) -> list[HaltRecord]:
        query = HaltQuery(session=session_id or None, pending=True, limit=limit)
        return self.listing_of(query).halts

    def listing_of(self, query: HaltQuery) -> HaltListing:
        with reachable():
            return listing(self.reads(), query)

    def pending_counts(self) -> dict[str, int]:
        counts = {severity: 0 for severity in SEVERITIES}
        with reachable():
            for severity, count in self.reads().execute(
                    "SELECT severity::text, count(*) FROM halt_events WHERE acknowledged = false"
                    " OR resolution = 'escalated' GROUP BY severity").fetchall():
                counts[severity] = count
        return counts

    def files_read(self, session_id: str) -> list[str] | None:
        with reachable():
            conn = self.reads()
            if conn.execute("SELECT 1 FROM tracked_sessions WHERE session_id = %s", (session_id,)).fetchone() is None:
                return None
            return [path for (path,) in conn.execute("SELECT path FROM files_read WHERE session_id = %s"
                                                     " ORDER BY path", (session_id,)).fetchall()]

    def stored_attempts(self, session_id: str, task_id: str) -> tuple[int, list[str]]:
        with reachable():
            row = self.reads().execute("SELECT count, recent_errors FROM attempts WHERE session_id = %s"
                                       " AND task_id = %s", (session_id, task_id)).fetchone()
        return (row[0], list(row[1])) if row else (0, [])

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None) -> CheckResult:
        """The decision's check (``core.policy.halts.decision``) over this unit's reads."""
        from leash.core.policy.halts import decision

        ctx = decision.check_input(data)
        return decision.check(PgHaltRows(self.halts, self, self.now), ctx, record=record, record_high=record_high,
                              now=self.now)


class PgHaltRows:
    """``HaltStorage`` (``core.policy.halts.storage``) over the database: the
    rows the decision reads, in ``unit``'s snapshot when there is one, and the
    rows it hands back, each write in a transaction of its own holding the ack
    log's chain lock, with a ``halts`` notice keyed by the session. Decides nothing."""

    def __init__(self, halts: Any, unit: PgHaltUnit | None, now: float):
        self.halts, self.unit, self.now = halts, unit, now
        self.home = halts.home

    def condition_config(self) -> dict[str, dict]:
        with reachable():
            return self.halts._config()

    def stored_attempts(self, session_id: str, task_id: str) -> tuple[int, list[str]]:
        if self.unit is not None:
            return self.unit.stored_attempts(session_id, task_id)
        with reachable(), self.halts.db.session() as conn:
            row = conn.execute("SELECT count, recent_errors FROM attempts WHERE session_id = %s AND task_id = %s",
                               (session_id, task_id)).fetchone()
        return (row[0], list(row[1])) if row else (0, [])

    def _settle_unit(self) -> None:
        if self.unit is not None:
            self.unit.settle()  # a write ends the unit's snapshot first

    def reset_attempts(self, session_id: str, task_id: str, *, now: float) -> None:
        self._settle_unit()
        with reachable(), self.halts.db.transaction() as conn:
            conn.execute("UPDATE attempts SET count = 0, recent_errors = '[]', updated_at = %s"
                         " WHERE session_id = %s AND task_id = %s", (at(now), session_id, task_id))

    def insert(self, halts: Sequence[NewHalt], *, now: float) -> None:
        self._settle_unit()
        stamp = at(now)
        with reachable(), self.halts._writing() as conn:
            for halt in halts:
                conn.execute(
                    "INSERT INTO halt_events (id, session_id, task_id, halt_type, severity, description, context,"
                    " triggered_at, acknowledged, resolution, attempt_count, previous_error, created_at,"
                    " updated_at, condition_name, escalate_at, auto_recorded)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, false, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (halt.id, halt.session_id, halt.task_id, halt.halt_type, halt.severity, halt.description,
                     as_json(halt.context) if halt.context is not None else None, stamp, halt.resolution,
                     halt.attempt_count, halt.previous_error, stamp, stamp, halt.condition_name,
                     at(halt.escalate_at) if halt.escalate_at is not None else None, halt.auto_recorded))
                self.halts._refresh(conn, halt.session_id, now)
                row = halt.row()
                for line in halt.lines:
                    self.halts._log(conn, line.event, row, source=line.source, reason=line.reason, now=now,
                                    **line.fields)
                notify(conn, "halts", halt.session_id)

    def settle(self, halt_id: str, allowed: Callable[[Mapping | None], Acknowledgement], *,
               now: float) -> Settled:
        self._settle_unit()
        stamp = at(now)
        with reachable(), self.halts._writing() as conn:
            row = self.halts._halt(conn, halt_id, lock=True)
            change = allowed(row)
            assert row is not None  # ``allowed`` refuses a halt that is not there
            conn.execute("UPDATE halt_events SET acknowledged = true, acknowledged_at = %s, acknowledged_by = %s,"
                         " resolution = %s, resolution_notes = %s, updated_at = %s WHERE id = %s",
                         (stamp, change.by, change.resolution, change.notes, stamp, row["id"]))
            state = self.halts._refresh(conn, row["session_id"], now)
            remaining = conn.execute("SELECT count(*) FROM halt_events WHERE session_id = %s"
                                     " AND acknowledged = false", (row["session_id"],)).fetchone()[0]
            self.halts._log(conn, change.line.event, row, source=change.line.source, reason=change.line.reason,
                            now=now, **change.line.fields)
            notify(conn, "halts", row["session_id"])
        return Settled(row, state, remaining)

    def note_failed_check(self, session_id: str | None, problem: str, *, now: float) -> None:
        note_failed_check(self.home, session_id, problem, now=now)

class UnitScope:
    """``with PgHalts.unit(now=) as unit:`` one connection for the unit, the
    store's housekeeping first (timeouts swept, old halts archived)."""

    def __init__(self, halts: Any, now: float):
        self.halts, self.now = halts, now
        self.unit: PgHaltUnit | None = None
        self._held = ExitStack()

    def __enter__(self) -> PgHaltUnit:
        try:
            with reachable():
                conn = self._held.enter_context(self.halts.db.session())
                self.halts.housekeep(now=self.now)
                idle = conn.info.transaction_status.name == "IDLE"
                self.unit = PgHaltUnit(self.halts, conn, self.now, owns_snapshot=idle)
        except BaseException:
            self._held.close()
            raise
        return self.unit

    def __exit__(self, *exc_info: Any) -> None:
        with reachable():
            try:
                if self.unit is not None:
                    self.unit.settle(*exc_info)
            finally:
                self._held.__exit__(*exc_info)
