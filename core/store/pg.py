"""The PostgreSQL side of the storage seam: one database shared by every host.

This module holds what every PostgreSQL store stands on (connections, the
versioned schema), the ack log (``PgAckLog``) and the stops (``PgStops``). Its lines are the file log's
lines, byte for byte: the same JSON, the same hash chain (``core.acklog``), so
``verify`` means the same thing on either backend and a home can be copied
line for line. The chain is extended under a transaction-scoped advisory
lock, so appends from many hosts interleave into one chain.

psycopg is imported here and only here (about 150 ms: hooks never import it;
they ask leashd).

Failure: a database that cannot be reached or written raises ``StoreOffline``
(one line naming the server, never the password); an append that fails leaves
no line, since the line and the chain tip are one transaction. ``migrate``
applies the schema versions it knows under the same advisory lock and refuses
a database whose schema is newer than this leash.
"""
from __future__ import annotations

import json

from leash.core.acklog import CHAIN_KEYS, EVENTS, GENESIS_HASH, HEAD_KEYS, ChainReport, chain_hash, check_line, matches
from leash.core.clock import iso, now_seconds
from leash.core.store.records import LogLine, LogLines

# pg_advisory_xact_lock keys: "leash" in ASCII, then what the lock guards.
SCHEMA_LOCK = 0x6C65617368_01
CHAIN_LOCK = 0x6C65617368_02

# Each entry is one schema version, applied in order; never edit a released one.
MIGRATIONS = (
    """
    CREATE TABLE leash_meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE acklog (
        seq        bigint PRIMARY KEY,
        ts         text   NOT NULL,
        event      text   NOT NULL,
        session_id text   NOT NULL,
        source     text   NOT NULL,
        line       text   NOT NULL
    );
    CREATE INDEX acklog_session ON acklog (session_id, seq);
    CREATE INDEX acklog_event ON acklog (event, seq);
    """,
    """
    CREATE TABLE stop_state (
        id       integer PRIMARY KEY CHECK (id = 1),
        state    text    NOT NULL,
        head_seq bigint  NOT NULL
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreOffline(Exception):
    """The database cannot be reached or used."""


def connect(url: str):
    """A connection to ``url``; StoreOffline otherwise. Autocommit: every write
    is an explicit ``transaction()`` block, and a read outside one leaves no
    transaction open behind it."""
    import psycopg

    try:
        return psycopg.connect(url, connect_timeout=5, autocommit=True)
    except psycopg.Error as exc:
        raise StoreOffline(f"PostgreSQL store unreachable: {_said(exc)}") from None


def schema_version(conn) -> int:
    row = conn.execute("SELECT to_regclass('leash_meta')").fetchone()
    if row is None or row[0] is None:
        return 0
    found = conn.execute("SELECT value FROM leash_meta WHERE key = 'schema_version'").fetchone()
    return int(found[0]) if found else 0


def migrate(conn) -> int:
    """Bring the schema to ``SCHEMA_VERSION``; the version it is at after."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreOffline(f"the database's schema is version {version}; this leash knows {SCHEMA_VERSION}")
        for number in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[number - 1])
            conn.execute("INSERT INTO leash_meta (key, value) VALUES ('schema_version', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(number),))
    return SCHEMA_VERSION


def new_line(event: str, *, source: str, session_id: str, reason: str, now: float | None, extra: dict) -> dict:
    """A log line's head and extras, masked (no line holds a secret, whoever
    wrote its text); ``chain`` adds its place in the chain."""
    from leash.core.halts.secrets import mask, mask_deep

    record: dict = {"timestamp": iso(now_seconds(now)), "event": event, "source": mask(str(source)),
                    "session_id": str(session_id), "reason": mask(str(reason))}
    record.update({key: mask_deep(value) for key, value in extra.items()})
    return record


def chain(conn, record: dict) -> None:
    """Append ``record`` (its head keys and extras set) as the log's next line,
    inside the caller's transaction: the chain lock is held until it ends, so
    whatever the transaction also writes commits with the line or not at all."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))
    tip = conn.execute("SELECT seq, line FROM acklog ORDER BY seq DESC LIMIT 1").fetchone()
    record["seq"] = tip[0] + 1 if tip else 1
    record["prev"] = json.loads(tip[1])["hash"] if tip else GENESIS_HASH
    record["hash"] = chain_hash(record["prev"], record)
    conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, %s, %s, %s)",
                 (record["seq"], record["timestamp"], record["event"], record["session_id"], record["source"],
                  json.dumps(record, ensure_ascii=True)))


class PgAckLog:
    """``AckLogStore`` over the ``acklog`` table."""

    def __init__(self, url: str):
        self.url = url
        self.conn = connect(url)
        migrate(self.conn)

    def close(self) -> None:
        self.conn.close()

    def append(self, event: str, *, source: str, session_id: str, reason: str = "", now: float | None = None,
               **extra: object) -> LogLine:
        if event not in EVENTS:
            raise ValueError(f"unknown ack-log event {event!r}")
        clash = set(extra) & set(HEAD_KEYS + CHAIN_KEYS)
        if clash:
            raise ValueError(f"reserved ack-log keys: {sorted(clash)}")
        record = new_line(event, source=source, session_id=session_id, reason=reason, now=now, extra=extra)
        try:
            with self.conn.transaction():
                chain(self.conn, record)
        except _errors() as exc:
            raise StoreOffline(f"PostgreSQL store: the line was not appended: {_said(exc)}") from None
        return LogLine.of(record)

    def read(self, *, session: str | None = None, event: str | None = None, since: float | None = None,
             source: str | None = None) -> LogLines:
        found, unreadable = [], 0
        for line in self._lines("SELECT line FROM acklog WHERE (%s::text IS NULL OR session_id = %s) "
                                "AND (%s::text IS NULL OR event = %s) ORDER BY seq",
                                (session, session, event, event)):
            if line is None:
                unreadable += 1
            elif matches(line, session=session, event=event, since=since, source=source):
                found.append(LogLine.of(line))
        return LogLines(found, unreadable_lines=unreadable)

    def tail(self, count: int) -> list[LogLine]:
        lines = self._lines("SELECT line FROM (SELECT seq, line FROM acklog ORDER BY seq DESC LIMIT %s) last "
                            "ORDER BY seq", (max(0, count),))
        return [LogLine.of(line) for line in lines if line is not None]

    def follow(self, *, from_start: bool = True, stop_after: float | None = None, poll_seconds: float = 0.25):
        """Lines as they are appended (polling; leashd's LISTEN wakes its own readers)."""
        import time

        after = 0 if from_start else int(self._raw("SELECT coalesce(max(seq), 0)::text FROM acklog", ())[0])
        deadline = None if stop_after is None else time.monotonic() + stop_after
        while True:
            for line in self._lines("SELECT line FROM acklog WHERE seq > %s ORDER BY seq", (after,)):
                if line is not None:
                    after = line["seq"]
                    yield LogLine.of(line)
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(poll_seconds)

    def verify(self, *, anchor: dict | None = None) -> ChainReport:
        """The chain from its first line: a line whose seq, prev or hash is wrong
        breaks it; ``anchor`` (``{"seq", "hash"}`` kept elsewhere) must name a line
        the log holds."""
        from leash.core.acklog import against

        report = ChainReport(ok=True, lines=0)
        prev, seq = GENESIS_HASH, None
        for number, raw in enumerate(self._raw("SELECT line FROM acklog ORDER BY seq", ()), 1):
            report.lines = number
            problem = check_line(raw.encode(), prev, seq)
            if problem:
                report.ok, report.first_broken_line, report.problem = False, number, problem
                return report
            record = json.loads(raw)
            prev, seq = record["hash"], record["seq"] + 1
            report.hashes[record["seq"]] = record["hash"]
        problem = against(anchor, report, "the anchor")
        if problem:
            report.ok, report.problem = False, problem
        return report

    def _raw(self, query: str, params: tuple):
        try:
            with self.conn.transaction():
                rows = self.conn.execute(query, params).fetchall()
        except _errors() as exc:
            raise StoreOffline(f"PostgreSQL store: {_said(exc)}") from None
        return [row[0] for row in rows]

    def _lines(self, query: str, params: tuple) -> list[dict | None]:
        lines: list[dict | None] = []
        for raw in self._raw(query, params):
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            lines.append(line if isinstance(line, dict) else None)
        return lines


def _errors():
    import psycopg

    return (psycopg.Error,)


def _said(exc: Exception) -> str:
    """One line about a database error (psycopg's messages never carry the password)."""
    return " ".join(str(exc).split())[:300] or exc.__class__.__name__


class PgStops:
    """``StopStore`` on PostgreSQL: the stop state is the fold of the log's stop
    lines (``core.stop.apply_stop_line``, the file registry's own rule), kept
    in ``stop_state`` and written in the transaction that appends the line, so
    the two never disagree. A stop filed here binds no tmux session id (that
    comes with hosts: a tmux session lives on one host's server)."""

    def __init__(self, log: PgAckLog):
        self.log = log
        self.conn = log.conn

    def stop(self, session_id: str, *, source: str, reason: str = "", now: float | None = None,
             **extra: object):
        from leash.core.stop import require_name

        require_name(session_id, "session id")
        self._write("stop_ack", session_id, source=source, reason=reason, now=now,
                    extra={k: v for k, v in extra.items() if v not in (None, "")})
        return self.current().sessions[session_id]

    def resume(self, session_id: str, *, source: str, reason: str = "", now: float | None = None):
        from leash.core.stop import NotStopped

        def check(state: dict) -> None:
            if session_id not in state["sessions"]:
                raise NotStopped(f"session {session_id!r} is not stopped")

        held = self.current().sessions.get(session_id)
        self._write("resume", session_id, source=source, reason=reason, now=now, check=check)
        return held

    def stop_fleet(self, *, source: str, reason: str = "", now: float | None = None):
        from leash.core.acklog import FLEET

        self._write("fleet_stop", FLEET, source=source, reason=reason, now=now)
        return self.current().fleet

    def resume_fleet(self, *, source: str, reason: str = "", now: float | None = None):
        from leash.core.acklog import FLEET
        from leash.core.stop import NotStopped

        def check(state: dict) -> None:
            if state["fleet"] is None:
                raise NotStopped("the fleet is not stopped")

        held = self.current().fleet
        self._write("fleet_resume", FLEET, source=source, reason=reason, now=now, check=check)
        return held

    def stopped(self, *, now: float | None = None) -> dict:
        return dict(self.current(now=now).sessions)

    def fleet(self, *, now: float | None = None):
        return self.current(now=now).fleet

    def covering(self, names: list[str], *, tmux_session_id: str = ""):
        from leash.core.stop import covering_stop, index_stops

        return covering_stop(index_stops(self._state(lock=False)), names, tmux_session_id=tmux_session_id)

    def current(self, *, now: float | None = None):
        from leash.core.stop import index_stops
        from leash.core.store.records import StopState

        return StopState.of(index_stops(self._state(lock=False)))

    # ------------------------------------------------------------ inside
    def _state(self, *, lock: bool) -> dict:
        from leash.core.stop import empty_stops

        query = "SELECT state FROM stop_state WHERE id = 1" + (" FOR UPDATE" if lock else "")
        try:
            row = self.conn.execute(query).fetchone()
        except _errors() as exc:
            from leash.core.stop import StopStateUnreadable

            raise StopStateUnreadable(f"PostgreSQL store: {_said(exc)}") from None
        return json.loads(row[0]) if row else empty_stops()

    def _write(self, event: str, session_id: str, *, source: str, reason: str, now: float | None,
               extra: dict | None = None, check=None) -> dict:
        from leash.core.stop import apply_stop_line

        record = new_line(event, source=source, session_id=session_id, reason=reason, now=now, extra=extra or {})
        try:
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))  # one writer at a time
                state = self._state(lock=True)
                if check is not None:
                    check(state)
                chain(self.conn, record)
                apply_stop_line(state, record)
                self.conn.execute("INSERT INTO stop_state (id, state, head_seq) VALUES (1, %s, %s) ON CONFLICT (id) "
                                  "DO UPDATE SET state = EXCLUDED.state, head_seq = EXCLUDED.head_seq",
                                  (json.dumps(state), record["seq"]))
        except _errors() as exc:
            raise StoreOffline(f"PostgreSQL store: nothing was written: {_said(exc)}") from None
        return record
