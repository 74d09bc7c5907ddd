"""``leash store copy``: a home's stores into the shared PostgreSQL store.

A single-host operator moves to the shared store by copying the home once,
with no agent running against it. The ack log's lines are copied as they are
(the same bytes: the chain is the same chain), the stops and locks are stored
as the replay of those lines, the sessions row by row, halts.db table by table
(its text ids, times and JSON become uuid, timestamptz and jsonb), and each
other store by its class's ``copy_from`` (budget.db's spend, counters, meters
and windows row by row; kennel heartbeats copy nothing: they say which kennel
is alive now, and a kennel beats again when it starts).
Everything is one transaction, and the copy's chain is verified after it,
against the home's head. The url copied into is the schema owner's
(``core.store.pgroles``): when the home names another role as its runtime
one (``LEASH_STORE_URL`` or ``[store] url``), that role is granted what it
needs in the same transaction.

Failure: a home whose log does not verify, or a database that already holds
a log, is refused with one line and nothing is written (the copy would not be
the home, or would mix two histories). A store whose PostgreSQL class cannot
copy is named in the report, never silently dropped.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from leash.core.base.logverify import ChainReport
    from leash.core.store.files import FileBackend
    from leash.core.store.pg import Connection
    from leash.core.store.postgres import PostgresBackend


class CopyRefused(Exception):
    """The copy cannot be made as asked; nothing was written."""


@dataclass
class CopyReport:
    lines: int = 0
    head: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    not_copied: list[str] = field(default_factory=list)
    granted: str = ""

    def said(self) -> list[str]:
        done = [f"ack log: {self.lines} lines copied, chain verified (head {self.head})"]
        if self.granted:
            done.append(f"runtime role {self.granted}: granted what it needs (the ack log: insert and select only)")
        done += [f"{store}: {count} copied" for store, count in self.counts.items()]
        done += [f"{store}: not copied (this leash cannot copy it to PostgreSQL)" for store in self.not_copied]
        return done


def copy_home(source: str, url: str, *, password: str | None = None, host: str = "") -> CopyReport:
    from leash.core.state.acklog import ACK_LOG_NAME
    from leash.core.store.files import FileBackend
    from leash.core.store.postgres import PG_STORES, PostgresBackend

    if not os.path.isfile(os.path.join(source, ACK_LOG_NAME)):
        raise CopyRefused(f"{source} holds no ack log: nothing to copy")
    home = FileBackend(source)
    checked = home.acklog.verify()
    if not checked.ok:
        raise CopyRefused(f"{source}: its ack log does not verify ({checked.problem}); run `leash doctor` there first")
    target = PostgresBackend(url, home=source, host=host, password=password)
    report = CopyReport()
    try:
        with target.db.transaction() as conn:
            if target.acklog.head_seq():
                raise CopyRefused("the shared store already holds an ack log: a copy would mix two histories")
            report.lines = _copy_lines(conn, home.acklog.log.path)
            states: list[Any] = [target.stops.registry.state, target.locks.registry.state]  # PgLogState's
            for state in states:
                state.adopt_log()
            report.counts["stops"] = len(target.stops.registry.snapshot()["sessions"])
            report.counts["locks"] = len(target.locks.registry.state.snapshot()[0])
            report.counts["sessions"] = _copy_sessions(conn, home)
            for name in PG_STORES:
                if name in COPIERS:
                    report.counts[name] = COPIERS[name](conn, home, target)
                elif name in COPYING_THEMSELVES:
                    store: CopiesAHome = getattr(target, name)
                    report.counts[name] = store.copy_from(home, conn=conn)
                else:
                    report.not_copied.append(name)
            report.granted = _grant_runtime(conn, source, url)
        copied = target.acklog.verify()
        if not copied.ok or _head(copied) != _head(checked):
            raise CopyRefused(f"the copy's chain does not match the home's ({copied.problem or 'another head'}); "
                              "the shared store holds it as copied: inspect it with `leash log verify`")
        seq, digest = _head(copied)
        report.head = f"line {seq}, {digest[:12]}"
    finally:
        target.close()
    return report


def _grant_runtime(conn: Connection, source: str, url: str) -> str:
    """Grant the home's runtime role (its store url's user, when another than
    ``url``'s) what it needs; the role's name, or ""."""
    from urllib.parse import urlsplit

    from leash.core.base.config import ConfigError
    from leash.core.store.pgroles import grant_runtime
    from leash.core.store.select import StoreSelectionError, store_url

    try:
        runtime = store_url(source)
    except (StoreSelectionError, ConfigError):
        return ""
    role = urlsplit(runtime).username if runtime else None
    if not role or role == urlsplit(url).username:
        return ""
    grant_runtime(conn, role)
    return role


def _copy_lines(conn: Connection, path: str) -> int:
    from leash.core.base.statefile import read_state_bytes

    data = read_state_bytes(path) or b""  # never through a symbolic link
    body = data[:data.rfind(b"\n") + 1]  # a torn tail is not part of the chain (verify said so)
    count = 0
    for raw in body.splitlines():
        text = raw.decode("ascii")
        line = json.loads(text)
        conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, %s, %s, %s)",
                     (line["seq"], line["timestamp"], line["event"], line.get("session_id", ""),
                      line.get("source", ""), text))
        count += 1
    return count


def _head(report: ChainReport) -> tuple[int, str]:
    last = max(report.hashes, default=0)
    return last, report.hashes.get(last, "")


def _copy_sessions(conn: Connection, home: FileBackend) -> int:
    from leash.core.state.sessions import last_seen_of
    from leash.core.store.pg import as_json

    records = home.sessions.registry.all()
    for session_id, record in records.items():
        conn.execute("INSERT INTO sessions (session_id, record, last_seen) VALUES (%s, %s, to_timestamp(%s))",
                     (session_id, as_json(record), last_seen_of(record)))
    return len(records)


HALT_TABLES = ("halt_events", "halt_events_archive", "halt_conditions_config", "session_states", "attempts",
               "files_read", "tracked_sessions")


def _copy_halts(conn: Connection, home: FileBackend, target: PostgresBackend) -> int:
    """halts.db's rows into the tables of the same names and columns; the
    number of halt events copied."""
    import sqlite3

    path = os.path.join(home.home, "halts.db")
    if not os.path.exists(path):
        return 0
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for table in HALT_TABLES:
            types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                      "WHERE table_name = %s AND table_schema = current_schema()",
                                      (table,)).fetchall())
            cursor = source.execute(f"SELECT * FROM {table}")  # noqa: S608 - the names are ours
            columns = [column[0] for column in cursor.description if column[0] in types]
            if table == "halt_conditions_config":  # the home's configuration replaces the defaults
                conn.execute("DELETE FROM halt_conditions_config")
            insert = (f"INSERT INTO {table} ({', '.join(columns)}) "
                      f"VALUES ({', '.join(['%s'] * len(columns))})")
            for row in cursor:
                values = dict(zip([c[0] for c in cursor.description], row, strict=True))
                conn.execute(insert, [_as_column(values[name], types[name]) for name in columns])
        return conn.execute("SELECT count(*) FROM halt_events").fetchone()[0]
    finally:
        source.close()


def _as_column(value: object, data_type: str) -> object:
    """A halts.db value as its PostgreSQL column takes it (text casts itself)."""
    if value is not None and data_type == "boolean":
        return bool(value)
    return value


def _copy_approvals(conn: Connection, home: FileBackend, target: PostgresBackend) -> int:
    """The approvals are the fold of the copied log's lines: adopted, not copied."""
    from leash.core.store.approvals import ApprovalRegistry
    from leash.core.store.pgstate import PgLogState

    approvals = target.approvals
    assert isinstance(approvals, ApprovalRegistry)  # the shared store's own, over its log_state row
    state = approvals.state
    assert isinstance(state, PgLogState)
    state.adopt_log()
    return len(state.snapshot()["waiting"])


COPIERS = {"halts": _copy_halts, "approvals": _copy_approvals}  # the stores whose own class has no copy_from
COPYING_THEMSELVES = ("warrants", "breakers", "replies", "kennels", "budget")  # their class's copy_from copies them


class CopiesAHome(Protocol):
    """A shared store that copies its part of a home into its tables, inside the copy's transaction."""

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """The rows copied."""
