"""The file backend's budget store: ``budget.db`` (SQLite) and ``budget-holds.json``.

``budget.db`` keeps four tables: ``spend`` (hour, session_id, model) — what a
session spent on a model in an hour, its dollars as whole nano-dollars so sums
are exact; ``counters`` (cap, bucket, period) — each cap's figure and hold;
``meters`` (session_id, source) — the meter's JSON state per source; and
``windows`` (bucket, window) — the subscription windows last reported. Every
connection sets WAL, ``busy_timeout`` and ``synchronous=FULL``; a unit
(``FileBudget.unit``) is one ``BEGIN IMMEDIATE`` transaction, so the writers of
one host take turns and a unit's writes land together or not at all.

The rows and the ``totals`` query are ``core.store.budgetrows`` (shared with
the PostgreSQL store). The gate reads ``holds()`` on every tool call while caps
are configured, so the held counters are mirrored in ``budget-holds.json``
(``{"holds": [...]}``, atomic replace + fsync, written with the new database)
and ``holds()`` never imports sqlite3. The mirror is
written inside the unit, under its own flock: BEFORE the commit when the held
set grows (the union of the old and new holds), AFTER it when it shrinks, so a
crash between the two never loses a hold (at worst a released one is still
mirrored until the next write). ``holds()``: no budget.db and no mirror: [];
a mirror that cannot be read: ``BudgetUnreadable`` (the gate fails closed);
budget.db present but the mirror missing: the held rows are read from the db
and the mirror written again.

Files are created as the home's other stores are (``halts.db``): mode 0600,
the directory made private when missing, and only by a unit: a store that is
only read creates nothing. Failure: any sqlite error or unreadable file raises
``BudgetUnreadable``; a unit that raises rolls back and writes no mirror.
"""
from __future__ import annotations

import _thread
import json
import os

from leash.core.store.budgetrows import (
    COUNTER_COLUMNS,
    COUNTER_FIELDS,
    HELD,
    SPEND_COLUMNS,
    TOKEN_FIELDS,
    counter_key,
    counter_of,
    counter_values,
    grouping,
    span,
    spend_of,
    spend_values,
    totals_rows,
    totals_sql,
    window_of,
)
from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, MeterState, SpendRecord, SpendTotal

TYPE_CHECKING = False  # sqlite3 is imported where a database is opened: holds() never needs it
if TYPE_CHECKING:
    import sqlite3
    from typing import Any, Sequence

    from leash.core.state.acklog import AckLog

DB_NAME = "budget.db"
HOLDS_NAME = "budget-holds.json"
BUSY_TIMEOUT_MS = 30_000

_MIGRATION_1 = """
CREATE TABLE spend (
    hour REAL NOT NULL, session_id TEXT NOT NULL, model TEXT NOT NULL,
    host TEXT NOT NULL DEFAULT '', entity TEXT NOT NULL DEFAULT '', cli TEXT NOT NULL DEFAULT '',
    usd_nanos INTEGER NOT NULL DEFAULT 0, estimated INTEGER NOT NULL DEFAULT 0,
    input INTEGER NOT NULL DEFAULT 0, output INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0,
    cache_read INTEGER NOT NULL DEFAULT 0, reasoning INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, session_id, model));
CREATE INDEX spend_session ON spend(session_id);
CREATE TABLE counters (
    cap TEXT NOT NULL, bucket TEXT NOT NULL, period TEXT NOT NULL, period_end REAL, unit TEXT,
    used REAL NOT NULL DEFAULT 0, estimated INTEGER NOT NULL DEFAULT 0, raised_to REAL,
    warned TEXT NOT NULL DEFAULT '[]', held_since REAL, held_use REAL, released_at REAL, released_by TEXT,
    updated_at REAL, extra TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (cap, bucket, period));
CREATE INDEX counters_held ON counters(cap) WHERE held_since IS NOT NULL AND released_at IS NULL;
CREATE TABLE meters (
    session_id TEXT NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (session_id, source));
CREATE TABLE windows (
    bucket TEXT NOT NULL, window TEXT NOT NULL, used_percent REAL, resets_at REAL, session_id TEXT, at REAL,
    PRIMARY KEY (bucket, window))
"""
MIGRATIONS = (_MIGRATION_1,)


class BudgetUnreadable(Exception):
    """The budget store (budget.db, budget-holds.json, or the shared store's
    tables) cannot be read; the gate fails closed."""


def holds_of(data: object, path: str) -> list[BudgetCounterRecord]:
    """The mirror's held counters; ``BudgetUnreadable`` for any other shape."""
    rows = data.get("holds") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise BudgetUnreadable(f"{path}: not a list of held budget counters (leash doctor --repair)")
    return [BudgetCounterRecord.of(row) for row in rows]


# ---------------------------------------------------------------- the file backend
class FileBudgetUnit:
    """One ``BEGIN IMMEDIATE`` transaction on budget.db (``BudgetUnit``)."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection
        self.held_before: list[BudgetCounterRecord] | None = None  # read before the first counter write

    def meter(self, session_id: str, source: str) -> MeterState | None:
        row = self.connection.execute("SELECT state FROM meters WHERE session_id = ? AND source = ?",
                                      (session_id, source)).fetchone()
        return MeterState.of(json.loads(row[0])) if row is not None else None

    def set_meter(self, session_id: str, source: str, state: MeterState) -> None:
        self.connection.execute("INSERT OR REPLACE INTO meters (session_id, source, state) VALUES (?, ?, ?)",
                                (session_id, source, json.dumps(state.as_dict(), sort_keys=True)))

    def charge(self, spend: SpendRecord) -> None:
        added = ", ".join(f"{field} = {field} + excluded.{field}" for field in ("usd_nanos",) + TOKEN_FIELDS)
        self.connection.execute(
            f"INSERT INTO spend ({', '.join(SPEND_COLUMNS)}) VALUES ({', '.join('?' * len(SPEND_COLUMNS))})"
            f" ON CONFLICT (hour, session_id, model) DO UPDATE SET {added},"
            " estimated = MAX(estimated, excluded.estimated), host = excluded.host, entity = excluded.entity,"
            " cli = excluded.cli", spend_values(spend))

    def counter(self, cap: str, bucket: str, period: str) -> BudgetCounterRecord | None:
        row = self.connection.execute(f"SELECT {', '.join(COUNTER_COLUMNS)} FROM counters"
                                      " WHERE cap = ? AND bucket = ? AND period = ?", (cap, bucket, period)).fetchone()
        return counter_of(row) if row is not None else None

    def put_counter(self, counter: BudgetCounterRecord) -> None:
        if self.held_before is None:
            self.held_before = held_rows(self.connection)
        self.connection.execute(f"INSERT OR REPLACE INTO counters ({', '.join(COUNTER_COLUMNS)})"
                                f" VALUES ({', '.join('?' * len(COUNTER_COLUMNS))})", counter_values(counter))

    def counters(self, *, cap: str | None = None, held: bool | None = None) -> list[BudgetCounterRecord]:
        return read_counters(self.connection, cap=cap, held=held)

    def window(self, bucket: str, window: str) -> BudgetWindowRecord | None:
        row = self.connection.execute(f"SELECT {', '.join(BudgetWindowRecord.FIELDS)} FROM windows"
                                      " WHERE bucket = ? AND window = ?", (bucket, window)).fetchone()
        return window_of(row) if row is not None else None

    def put_window(self, record: BudgetWindowRecord) -> None:
        fields = BudgetWindowRecord.FIELDS
        self.connection.execute(f"INSERT OR REPLACE INTO windows ({', '.join(fields)})"
                                f" VALUES ({', '.join('?' * len(fields))})", [getattr(record, f) for f in fields])


def read_counters(connection: sqlite3.Connection, *, cap: str | None = None,
                  held: bool | None = None) -> list[BudgetCounterRecord]:
    clauses, params = [], []
    if cap is not None:
        clauses.append("cap = ?")
        params.append(cap)
    if held is not None:
        clauses.append(HELD if held else f"NOT ({HELD})")
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    rows = connection.execute(f"SELECT {', '.join(COUNTER_COLUMNS)} FROM counters{where}"
                              " ORDER BY cap, bucket, period", params).fetchall()
    return [counter_of(row) for row in rows]


def held_rows(connection: sqlite3.Connection) -> list[BudgetCounterRecord]:
    return read_counters(connection, held=True)


class _UnitScope:
    def __init__(self, store: FileBudget):
        self.store = store
        self.connection: sqlite3.Connection | None = None

    def __enter__(self) -> FileBudgetUnit:
        connection = self.connection = self.store.connect(create=True)
        assert connection is not None  # made when missing
        connection.execute("BEGIN IMMEDIATE")
        self.unit = FileBudgetUnit(connection)
        return self.unit

    def __exit__(self, kind: type[BaseException] | None, value: object, traceback: object) -> None:
        import sqlite3

        connection = self.connection
        assert connection is not None
        try:
            if kind is not None:
                connection.execute("ROLLBACK")
                return
            self.store.finish(connection, self.unit.held_before)
        except sqlite3.Error as exc:
            raise BudgetUnreadable(f"{self.store.db_path}: {exc}") from None
        finally:
            connection.close()


class FileBudget:
    """``BudgetStore`` over ``<home>/budget.db`` and ``<home>/budget-holds.json``."""

    def __init__(self, home: str, acklog: AckLog | None = None):
        from leash.core.base.statefile import CachedJSON

        self.home = os.fspath(home)
        self.db_path = os.path.join(self.home, DB_NAME)
        self.holds_path = os.path.join(self.home, HOLDS_NAME)
        self._mirror = CachedJSON(self.holds_path, lambda data: holds_of(data, self.holds_path))
        self._reading = _thread.allocate_lock()
        self._reader: tuple[int, sqlite3.Connection] | None = None  # (budget.db's inode, the kept connection)

    # ------------------------------------------------------------ opening
    def connect(self, *, create: bool = False) -> sqlite3.Connection | None:
        """A connection with the schema in place; None when there is no budget.db and ``create`` is false."""
        import sqlite3

        try:
            if not os.path.lexists(self.db_path):
                if not create:
                    return None
                from leash.core.base.home import private_dir

                private_dir(self.home)
                os.close(os.open(self.db_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            connection = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                         check_same_thread=False)
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self._into_wal(connection)
            connection.execute("PRAGMA synchronous = FULL")
            if connection.execute("PRAGMA user_version").fetchone()[0] < len(MIGRATIONS):
                self._migrate(connection)
            return connection
        except sqlite3.Error as exc:
            raise BudgetUnreadable(f"{self.db_path}: {exc}") from None
        except OSError as exc:
            raise BudgetUnreadable(f"{self.db_path}: {exc.strerror or exc}") from None

    def _into_wal(self, connection: sqlite3.Connection) -> None:
        """WAL, set by one first opener at a time: the switch takes no busy timeout, so two
        openers of a new file would fail with "database is locked"."""
        from leash.core.base.statefile import locked

        with locked(self.db_path):
            if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                connection.execute("PRAGMA journal_mode = WAL")

    def _migrate(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN IMMEDIATE")  # under the write lock: two first openers do not race
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS, 1):
                if version < number:
                    for statement in script.split(";"):
                        if statement.strip():
                            connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            if version == 0 and not os.path.lexists(self.holds_path):
                self._mirror_now(connection)  # a gate reading holds never needs to open a new database
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        for suffix in ("-wal", "-shm"):
            try:
                os.chmod(self.db_path + suffix, 0o600)
            except OSError:
                pass

    def _read(self, query: str, params: Sequence[Any] = ()) -> list:
        """Rows of a read of budget.db ([] when there is none), over the connection this store keeps
        for its reads: a reader that opened and closed budget.db each time would make its WAL file
        come and go, which a watcher of the home takes for a change of the store."""
        import sqlite3

        with self._reading:
            try:
                identity = os.stat(self.db_path).st_ino
            except FileNotFoundError:
                identity = None
            if self._reader is not None and self._reader[0] != identity:  # replaced (doctor --repair)
                self._reader[1].close()
                self._reader = None
            if self._reader is None:
                connection = self.connect() if identity is not None else None
                if identity is None or connection is None:
                    return []
                self._reader = (identity, connection)
            reader = self._reader[1]
            try:
                return reader.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                reader.close()
                self._reader = None
                raise BudgetUnreadable(f"{self.db_path}: {exc}") from None

    # ------------------------------------------------------------ the unit and the mirror
    def unit(self, *, now: float | None = None) -> _UnitScope:
        return _UnitScope(self)

    def finish(self, connection: sqlite3.Connection, held_before: list[BudgetCounterRecord] | None) -> None:
        """Commit a unit, writing the holds mirror before the commit when holds were added and after it
        when they went (under the mirror's flock, so mirror writes land in commit order)."""
        from leash.core.base.statefile import locked

        after = held_rows(connection) if held_before is not None else None
        if after is None or after == held_before:
            connection.execute("COMMIT")
            return
        assert held_before is not None
        kept = {counter_key(c) for c in after}
        with locked(self.holds_path):
            interim = None
            if kept - {counter_key(c) for c in held_before}:
                interim = after + [c for c in held_before if counter_key(c) not in kept]
                self.write_mirror(interim)
            try:
                connection.execute("COMMIT")
            except BaseException:
                if interim is not None:
                    self.write_mirror(held_before)
                raise
            if interim != after:
                self.write_mirror(after)

    def write_mirror(self, holds: list[BudgetCounterRecord]) -> None:
        from leash.core.base.statefile import write_json

        ordered = sorted(holds, key=counter_key)
        write_json(self.holds_path, {"holds": [{field: getattr(c, field) for field in COUNTER_FIELDS}
                                               | c.extra for c in ordered]})

    def holds(self) -> list[BudgetCounterRecord]:
        from leash.core.base.statefile import StateCorrupt

        try:
            mirrored = self._mirror.get(None)
        except StateCorrupt as exc:
            raise BudgetUnreadable(f"{exc} (leash doctor --repair)") from None
        except OSError as exc:
            raise BudgetUnreadable(f"{self.holds_path}: {exc.strerror or exc}") from None
        if mirrored is not None:
            return list(mirrored)
        if not os.path.lexists(self.db_path):
            return []
        return self.rebuild_mirror()

    def _mirror_now(self, connection: sqlite3.Connection) -> list[BudgetCounterRecord]:
        """Mirror the held rows as ``connection`` (holding the write lock) reads them."""
        from leash.core.base.statefile import locked

        held = held_rows(connection)
        with locked(self.holds_path):
            self.write_mirror(held)
        return held

    def rebuild_mirror(self) -> list[BudgetCounterRecord]:
        """The held rows of budget.db, mirrored again (under the write lock, so no unit's mirror is lost)."""
        import sqlite3


        connection = self.connect()
        if connection is None:
            return []
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                held = self._mirror_now(connection)
            finally:
                connection.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise BudgetUnreadable(f"{self.db_path}: {exc}") from None
        finally:
            connection.close()
        return held

    # ------------------------------------------------------------ reads
    def counters(self, *, cap: str | None = None) -> list[BudgetCounterRecord]:
        where, params = (" WHERE cap = ?", [cap]) if cap is not None else ("", [])
        return [counter_of(row) for row in self._read(
            f"SELECT {', '.join(COUNTER_COLUMNS)} FROM counters{where} ORDER BY cap, bucket, period", params)]

    def spend(self, *, since: float | None = None, until: float | None = None,
              session_id: str | None = None) -> list[SpendRecord]:
        where, params = span(since, until)
        if session_id is not None:
            where = f"{where} AND session_id = ?" if where else " WHERE session_id = ?"
            params.append(session_id)
        return [spend_of(row) for row in self._read(
            f"SELECT {', '.join(SPEND_COLUMNS)} FROM spend{where} ORDER BY hour, session_id, model", params)]

    def totals(self, by: str, *, since: float | None = None, until: float | None = None) -> list[SpendTotal]:
        grouping(by)  # ValueError first, whether or not there is a database
        where, params = span(since, until)
        return totals_rows(by, self._read(totals_sql(by, where), params))

    def windows(self) -> list[BudgetWindowRecord]:
        return [window_of(row) for row in self._read(
            f"SELECT {', '.join(BudgetWindowRecord.FIELDS)} FROM windows ORDER BY bucket, window")]

    def meters(self) -> dict[str, dict[str, MeterState]]:
        found: dict[str, dict[str, MeterState]] = {}
        for session_id, source, state in self._read("SELECT session_id, source, state FROM meters"
                                                    " ORDER BY session_id, source"):
            found.setdefault(session_id, {})[source] = MeterState.of(json.loads(state))
        return found
