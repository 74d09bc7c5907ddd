"""``AckLogStore`` on PostgreSQL: the ``acklog`` table, one row per line.

Each row keeps the line's text exactly as the file log would write it (same
JSON, same hash chain, ``core.acklog``), so ``verify`` means the same on
either backend and a home's log can be copied line for line. Appends from
every host extend one chain under ``pg.CHAIN_LOCK``.

Failure: a server that cannot be reached raises ``StoreOffline``; an append
that fails leaves no line. A row whose text does not parse is counted as
unreadable by ``read`` and breaks ``verify`` at its place.
"""
from __future__ import annotations

import json

from leash.core.acklog import CHAIN_KEYS, EVENTS, GENESIS_HASH, HEAD_KEYS, ChainReport, check_line, matches
from leash.core.store.pg import Database, chain, new_line
from leash.core.store.records import LogLine, LogLines


def database(target: Database | str) -> Database:
    return target if isinstance(target, Database) else Database(target)


class PgAckLog:
    """``AckLogStore`` over the ``acklog`` table."""

    def __init__(self, db: Database | str):
        self.db = database(db)

    def close(self) -> None:
        self.db.close()

    def append(self, event: str, *, source: str, session_id: str, reason: str = "", now: float | None = None,
               **extra: object) -> LogLine:
        return LogLine.of(self.append_line(event, source=source, session_id=session_id, reason=reason, now=now,
                                           **extra))

    def append_line(self, event: str, *, source: str, session_id: str, reason: str = "", now: float | None = None,
                    **extra: object) -> dict:
        """``append`` as the line's dict (what the log-backed states fold)."""
        if event not in EVENTS:
            raise ValueError(f"unknown ack-log event {event!r}")
        clash = set(extra) & set(HEAD_KEYS + CHAIN_KEYS)
        if clash:
            raise ValueError(f"reserved ack-log keys: {sorted(clash)}")
        record = new_line(event, source=source, session_id=session_id, reason=reason, now=now, extra=extra)
        with self.db.transaction() as conn:
            chain(conn, record)
        return record

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

    def lines_after(self, seq: int) -> list[dict]:
        """The readable lines after ``seq``, in order (a mirror catching up)."""
        return [line for line in self._lines("SELECT line FROM acklog WHERE seq > %s ORDER BY seq", (seq,))
                if line is not None]

    def tail(self, count: int) -> list[LogLine]:
        lines = self._lines("SELECT line FROM (SELECT seq, line FROM acklog ORDER BY seq DESC LIMIT %s) last "
                            "ORDER BY seq", (max(0, count),))
        return [LogLine.of(line) for line in lines if line is not None]

    def head_seq(self) -> int:
        return int(self.db.rows("SELECT coalesce(max(seq), 0) FROM acklog")[0][0])

    def follow(self, *, from_start: bool = True, stop_after: float | None = None, poll_seconds: float = 0.25):
        """Lines as they are appended (polling; leashd's LISTEN wakes its own readers)."""
        import time

        after = 0 if from_start else self.head_seq()
        deadline = None if stop_after is None else time.monotonic() + stop_after
        while True:
            for line in self.lines_after(after):
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
        for number, (raw,) in enumerate(self.db.rows("SELECT line FROM acklog ORDER BY seq"), 1):
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

    def _lines(self, query: str, params: tuple) -> list[dict | None]:
        lines: list[dict | None] = []
        for (raw,) in self.db.rows(query, params):
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            lines.append(line if isinstance(line, dict) else None)
        return lines
