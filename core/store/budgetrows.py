"""Budget rows and records, the same on both backends (``core.store.budget``'s
SQLite and ``core.store.pgbudget``'s PostgreSQL): a counter, a spend row and a
window as the columns both keep, spend in whole nano-dollars (``NANOS``: a sum
of charges is exact, the float a record carries is that sum's), and the
``totals`` query (``GROUP BY`` the key ``grouping`` names).

Failure: ``grouping`` and ``totals_sql`` raise ``ValueError`` for a grouping
they do not know; nothing else here raises on a row the stores wrote.
"""
from __future__ import annotations

import json

from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, SpendRecord, SpendTotal

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

    Row = Sequence[Any]  # one database row, as SQLite or PostgreSQL hands it

NANOS = 1_000_000_000  # spend is stored in whole nano-dollars: a sum of charges is exact

TOTALS_BY = ("session", "entity", "host", "model", "cli", "day", "hour")
TOKEN_FIELDS = ("input", "output", "cache_write", "cache_read", "reasoning", "requests")
HELD = "held_since IS NOT NULL AND released_at IS NULL"

COUNTER_FIELDS = BudgetCounterRecord.FIELDS
COUNTER_COLUMNS = COUNTER_FIELDS + ("extra",)


def counter_values(counter: BudgetCounterRecord) -> tuple:
    """The row of a counter: its fields (``warned`` as JSON), then the keys no field names."""
    values = [getattr(counter, field) for field in COUNTER_FIELDS]
    values[COUNTER_FIELDS.index("warned")] = json.dumps(list(counter.warned or []))
    values[COUNTER_FIELDS.index("estimated")] = bool(counter.estimated)
    return (*values, json.dumps(counter.extra, sort_keys=True))


def counter_of(row: Row) -> BudgetCounterRecord:
    data = dict(zip(COUNTER_COLUMNS, row, strict=True))
    extra = data.pop("extra")
    data["warned"] = json.loads(data["warned"]) if isinstance(data["warned"], str) else list(data["warned"] or [])
    data["estimated"] = bool(data["estimated"])
    return BudgetCounterRecord.of({**data, **(json.loads(extra) if isinstance(extra, str) else (extra or {}))})


def counter_key(counter: BudgetCounterRecord) -> tuple[str, str, str]:
    return counter.cap, counter.bucket, counter.period


def spend_values(spend: SpendRecord) -> tuple:
    """(hour, session_id, model, host, entity, cli, usd in nano-dollars, estimated, tokens..., requests)."""
    return (float(spend.hour), spend.session_id, spend.model or "", spend.host or "", spend.entity or "",
            spend.cli or "", round(float(spend.usd or 0) * NANOS), bool(spend.estimated),
            *(int(getattr(spend, field) or 0) for field in TOKEN_FIELDS))


def spend_of(row: Row) -> SpendRecord:
    fields = SpendRecord.FIELDS
    data = dict(zip(fields, row, strict=True))
    data["usd"] = int(data["usd"]) / NANOS
    data["estimated"] = bool(data["estimated"])
    data["hour"] = float(data["hour"])
    return SpendRecord.of(data)


def window_of(row: Row) -> BudgetWindowRecord:
    return BudgetWindowRecord.of(dict(zip(BudgetWindowRecord.FIELDS, row, strict=True)))


def grouping(by: str, *, sqlite: bool = True) -> str:
    """The SQL key of ``totals(by=...)``; ``ValueError`` for another ``by``. A day or an hour is its
    start: SQLite's CAST truncates (hours are never negative), PostgreSQL's rounds, so it floors."""
    if by not in TOTALS_BY:
        raise ValueError(f"cannot group spend by {by!r}: one of {', '.join(TOTALS_BY)}")
    if by in ("day", "hour"):
        seconds = 86_400 if by == "day" else 3_600
        whole = f"CAST(hour / {seconds} AS INTEGER)" if sqlite else f"CAST(FLOOR(hour / {seconds}) AS BIGINT)"
        return f"({whole} * {seconds})"
    return "session_id" if by == "session" else by


def totals_rows(by: str, rows: Iterable[Row]) -> list[SpendTotal]:
    """``totals`` rows of (key, nano-dollars, estimated, tokens..., requests, sessions), in their order."""
    made = []
    for key, nanos, estimated, *counts in rows:
        figures = dict(zip(TOKEN_FIELDS + ("sessions",), map(int, counts), strict=True))
        made.append(SpendTotal.of({"key": float(key) if by in ("day", "hour") else key, "usd": int(nanos) / NANOS,
                                   "estimated": bool(estimated), **figures}))
    return made


def totals_order(by: str) -> str:
    return "key" if by in ("day", "hour") else "SUM(usd_nanos) DESC, key"


def span(since: float | None, until: float | None, *, placeholder: str = "?") -> tuple[str, list]:
    """A WHERE clause on the spend's hour (``since`` <= hour < ``until``) and its parameters."""
    clauses, params = [], []
    if since is not None:
        clauses.append(f"hour >= {placeholder}")
        params.append(float(since))
    if until is not None:
        clauses.append(f"hour < {placeholder}")
        params.append(float(until))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def totals_sql(by: str, where: str, *, table: str = "spend", estimated: str = "MAX(estimated)",
               sqlite: bool = True) -> str:
    """The GROUP BY of ``totals`` (``table``, ``estimated``: the backend's spend table and "any estimated")."""
    tokens = ", ".join(f"SUM({field})" for field in TOKEN_FIELDS)
    return (f"SELECT {grouping(by, sqlite=sqlite)} AS key, SUM(usd_nanos), {estimated}, {tokens},"
            f" COUNT(DISTINCT session_id) FROM {table}{where} GROUP BY 1 ORDER BY {totals_order(by)}")


SPEND_COLUMNS = ("hour", "session_id", "model", "host", "entity", "cli", "usd_nanos", "estimated") + TOKEN_FIELDS
