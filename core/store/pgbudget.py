"""The budget store on PostgreSQL: the tables ``budget_spend``, ``budget_counters``,
``budget_meters`` and ``budget_windows`` (the columns of the file backend's
budget.db, spend in whole nano-dollars so every sum is exact), shared by every
host.

A unit is one transaction on this thread's connection. ``counter()`` locks
the counter's row until the unit ends (``SELECT ... FOR UPDATE``); a row that
does not exist yet is first inserted as a placeholder (``written`` false,
``INSERT ... ON CONFLICT DO NOTHING``), so two hosts creating one counter take
turns instead of both starting from zero; a placeholder the unit did not write
is deleted before its commit, and every read skips placeholders. ``charge``
is ``INSERT ... ON CONFLICT DO UPDATE`` adding. ``totals`` is a GROUP BY.
A unit that wrote anything sends the change notice ``budget`` at its commit.

Failure: a database that cannot be reached or read raises
``BudgetStoreOffline``, both a ``BudgetUnreadable`` (``holds()`` never answers
"none", so the gate fails closed) and the ``StoreOffline`` every shared store
raises; a unit that raises leaves nothing written.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from leash.core.store.budget import BudgetUnreadable
from leash.core.store.budgetrows import (
    COUNTER_COLUMNS,
    HELD,
    SPEND_COLUMNS,
    TOKEN_FIELDS,
    counter_of,
    counter_values,
    span,
    spend_of,
    spend_values,
    totals_rows,
    totals_sql,
    window_of,
)
from leash.core.store.pg import Database, StoreOffline, as_json, notify
from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, MeterState, SpendRecord, SpendTotal

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Any, Iterator, Sequence

    from leash.core.store.files import FileBackend
    from leash.core.store.pg import Connection
    from leash.core.store.pgacklog import PgAckLog

TABLES = ("budget_spend", "budget_counters", "budget_meters", "budget_windows")
WINDOW_COLUMNS = ", ".join('"window"' if f == "window" else f for f in BudgetWindowRecord.FIELDS)  # a keyword
COUNTERS_SELECT = f"SELECT {', '.join(COUNTER_COLUMNS)} FROM budget_counters"


class BudgetStoreOffline(BudgetUnreadable, StoreOffline):
    """The shared budget store cannot be reached or read."""


def _counters_where(*, cap: str | None, held: bool | None) -> tuple[str, list]:
    clauses, params = ["written"], []
    if cap is not None:
        clauses.append("cap = %s")
        params.append(cap)
    if held is not None:
        clauses.append(HELD if held else f"NOT ({HELD})")
    return " WHERE " + " AND ".join(clauses), params


def _counter_params(counter: BudgetCounterRecord) -> list:
    values = list(counter_values(counter))
    values[COUNTER_COLUMNS.index("warned")] = as_json(json.loads(values[COUNTER_COLUMNS.index("warned")]))
    values[COUNTER_COLUMNS.index("extra")] = as_json(json.loads(values[COUNTER_COLUMNS.index("extra")]))
    return values


class PgBudgetUnit:
    """One transaction (``BudgetUnit``); ``conn`` is this thread's connection inside it."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.placeholders: set[tuple[str, str, str]] = set()
        self.wrote = False

    def meter(self, session_id: str, source: str) -> MeterState | None:
        row = self.conn.execute("SELECT state FROM budget_meters WHERE session_id = %s AND source = %s",
                                (session_id, source)).fetchone()
        return MeterState.of(row[0]) if row is not None else None

    def set_meter(self, session_id: str, source: str, state: MeterState) -> None:
        self.conn.execute("INSERT INTO budget_meters (session_id, source, state) VALUES (%s, %s, %s)"
                          " ON CONFLICT (session_id, source) DO UPDATE SET state = EXCLUDED.state",
                          (session_id, source, as_json(state.as_dict())))
        self.wrote = True

    def charge(self, spend: SpendRecord) -> None:
        added = ", ".join(f"{field} = budget_spend.{field} + EXCLUDED.{field}"
                          for field in ("usd_nanos",) + TOKEN_FIELDS)
        self.conn.execute(
            f"INSERT INTO budget_spend ({', '.join(SPEND_COLUMNS)}) VALUES ({', '.join(['%s'] * len(SPEND_COLUMNS))})"
            f" ON CONFLICT (hour, session_id, model) DO UPDATE SET {added},"
            " estimated = budget_spend.estimated OR EXCLUDED.estimated, host = EXCLUDED.host,"
            " entity = EXCLUDED.entity, cli = EXCLUDED.cli", spend_values(spend))
        self.wrote = True

    def counter(self, cap: str, bucket: str, period: str) -> BudgetCounterRecord | None:
        """The row, locked until the unit ends (a placeholder first when there is none)."""
        key = (cap, bucket, period)
        made = self.conn.execute("INSERT INTO budget_counters (cap, bucket, period, written) VALUES (%s, %s, %s, false)"
                                 " ON CONFLICT DO NOTHING", key).rowcount
        if made:
            self.placeholders.add(key)
        row = self.conn.execute(f"SELECT {', '.join(COUNTER_COLUMNS)}, written FROM budget_counters"
                                " WHERE cap = %s AND bucket = %s AND period = %s FOR UPDATE", key).fetchone()
        return counter_of(row[:-1]) if row is not None and row[-1] else None

    def put_counter(self, counter: BudgetCounterRecord) -> None:
        columns = ", ".join(COUNTER_COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COUNTER_COLUMNS[3:])
        self.conn.execute(f"INSERT INTO budget_counters ({columns}, written)"
                          f" VALUES ({', '.join(['%s'] * len(COUNTER_COLUMNS))}, true)"
                          f" ON CONFLICT (cap, bucket, period) DO UPDATE SET {updates}, written = true",
                          _counter_params(counter))
        self.placeholders.discard((counter.cap, counter.bucket, counter.period))
        self.wrote = True

    def counters(self, *, cap: str | None = None, held: bool | None = None) -> list[BudgetCounterRecord]:
        where, params = _counters_where(cap=cap, held=held)
        rows = self.conn.execute(f"{COUNTERS_SELECT}{where} ORDER BY cap, bucket, period", params).fetchall()
        return [counter_of(row) for row in rows]

    def window(self, bucket: str, window: str) -> BudgetWindowRecord | None:
        row = self.conn.execute(f"SELECT {WINDOW_COLUMNS} FROM budget_windows WHERE bucket = %s AND \"window\" = %s",
                                (bucket, window)).fetchone()
        return window_of(row) if row is not None else None

    def put_window(self, record: BudgetWindowRecord) -> None:
        self.conn.execute(f"INSERT INTO budget_windows ({WINDOW_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"
                          " ON CONFLICT (bucket, \"window\") DO UPDATE SET used_percent = EXCLUDED.used_percent,"
                          " resets_at = EXCLUDED.resets_at, session_id = EXCLUDED.session_id, at = EXCLUDED.at",
                          [getattr(record, field) for field in BudgetWindowRecord.FIELDS])
        self.wrote = True

    def finish(self) -> None:
        """Before the commit: the placeholders this unit made and did not write go; a write is a change."""
        for key in self.placeholders:
            self.conn.execute("DELETE FROM budget_counters WHERE cap = %s AND bucket = %s AND period = %s"
                              " AND NOT written", key)
        if self.wrote:
            notify(self.conn, "budget")


class PgBudget:
    """``BudgetStore`` over the shared store's budget tables."""

    def __init__(self, db: Database, log: PgAckLog | None = None, home: str = "", host: str = ""):
        self.db = db

    @contextmanager
    def unit(self, *, now: float | None = None) -> Iterator[PgBudgetUnit]:
        try:
            with self.db.transaction() as conn:
                unit = PgBudgetUnit(conn)
                yield unit
                unit.finish()
        except StoreOffline as exc:
            raise BudgetStoreOffline(str(exc)) from None

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self.db.rows(query, tuple(params))
        except StoreOffline as exc:
            raise BudgetStoreOffline(str(exc)) from None

    def holds(self) -> list[BudgetCounterRecord]:
        where, params = _counters_where(cap=None, held=True)
        return [counter_of(row) for row in self._rows(f"{COUNTERS_SELECT}{where} ORDER BY cap, bucket, period",
                                                      params)]

    def counters(self, *, cap: str | None = None) -> list[BudgetCounterRecord]:
        where, params = _counters_where(cap=cap, held=None)
        return [counter_of(row) for row in self._rows(f"{COUNTERS_SELECT}{where} ORDER BY cap, bucket, period",
                                                      params)]

    def spend(self, *, since: float | None = None, until: float | None = None,
              session_id: str | None = None) -> list[SpendRecord]:
        where, params = span(since, until, placeholder="%s")
        if session_id is not None:
            where = f"{where} AND session_id = %s" if where else " WHERE session_id = %s"
            params.append(session_id)
        return [spend_of(row) for row in self._rows(
            f"SELECT {', '.join(SPEND_COLUMNS)} FROM budget_spend{where} ORDER BY hour, session_id, model", params)]

    def totals(self, by: str, *, since: float | None = None, until: float | None = None) -> list[SpendTotal]:
        where, params = span(since, until, placeholder="%s")
        query = totals_sql(by, where, table="budget_spend", estimated="bool_or(estimated)", sqlite=False)
        return totals_rows(by, self._rows(query, params))

    def windows(self) -> list[BudgetWindowRecord]:
        return [window_of(row) for row in self._rows(
            f"SELECT {WINDOW_COLUMNS} FROM budget_windows ORDER BY bucket, \"window\"")]

    def meters(self) -> dict[str, dict[str, MeterState]]:
        found: dict[str, dict[str, MeterState]] = {}
        for session_id, source, state in self._rows("SELECT session_id, source, state FROM budget_meters"
                                                    " ORDER BY session_id, source"):
            found.setdefault(session_id, {})[source] = MeterState.of(state)
        return found

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """A home's budget.db (spend, counters, meters, windows) into these tables; the rows copied."""
        source = home.budget
        copied = 0
        for spend in source.spend():
            conn.execute(f"INSERT INTO budget_spend ({', '.join(SPEND_COLUMNS)})"
                         f" VALUES ({', '.join(['%s'] * len(SPEND_COLUMNS))})", spend_values(spend))
            copied += 1
        for counter in source.counters():
            conn.execute(f"INSERT INTO budget_counters ({', '.join(COUNTER_COLUMNS)}, written)"
                         f" VALUES ({', '.join(['%s'] * len(COUNTER_COLUMNS))}, true)", _counter_params(counter))
            copied += 1
        for session_id, sources in source.meters().items():
            for name, state in sources.items():
                conn.execute("INSERT INTO budget_meters (session_id, source, state) VALUES (%s, %s, %s)",
                             (session_id, name, as_json(state.as_dict())))
                copied += 1
        for window in source.windows():
            conn.execute(f"INSERT INTO budget_windows ({WINDOW_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                         [getattr(window, field) for field in BudgetWindowRecord.FIELDS])
            copied += 1
        return copied
