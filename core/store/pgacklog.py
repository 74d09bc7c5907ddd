"""``AckLogStore`` on PostgreSQL: the ``acklog`` table, one row per line.

Each row keeps the line's text exactly as the file log would write it (same
JSON, same hash chain, ``core.acklog``), so ``verify`` means the same on
either backend and a home's log can be copied line for line. Appends from
every host extend one chain under ``pg.CHAIN_LOCK``.

With the home's MAC key readable (``core.logkey``: leashd's), every line
carries ``mac`` as the file log's do, and ``verify`` checks them. ``verify``
also holds the log against each log-backed state's ``head_seq`` (the last line
its row reflects): a log that lacks that line lost rows.

Failure: a server that cannot be reached raises ``StoreOffline``; an append
that fails leaves no line. A row whose text does not parse is counted as
unreadable by ``read`` and breaks ``verify`` at its place.
"""
from __future__ import annotations

import json

from leash.core.base.logverify import ChainReport, ChainWalker, against
from leash.core.state.acklog import EVENTS, RESERVED_KEYS
from leash.core.state.logread import matches
from leash.core.store.pg import Database, chain, new_line
from leash.core.store.records import ChainAnchor, LogLine, LogLines

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Iterator

    from leash.core.base.logkey import MacKey


def database(target: Database | str) -> Database:
    return target if isinstance(target, Database) else Database(target)


class PgAckLog:
    """``AckLogStore`` over the ``acklog`` table."""

    def __init__(self, db: Database | str, *, home: str | None = None):
        """``home``: whose MAC key signs and checks the lines (none: no macs)."""
        self.db = database(db)
        self._key_path: str | None = None
        if home is not None:
            from leash.core.base.logkey import configured_path

            self._key_path = configured_path(home)

    def mac_key(self) -> tuple[MacKey | None, str]:
        """(the MAC key or None, why there is none) (``core.logkey``)."""
        if self._key_path is None:
            return None, ""
        from leash.core.base.logkey import load

        return load(self._key_path)

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
        clash = set(extra) & set(RESERVED_KEYS)
        if clash:
            raise ValueError(f"reserved ack-log keys: {sorted(clash)}")
        record = new_line(event, source=source, session_id=session_id, reason=reason, now=now, extra=extra)
        key = self.mac_key()[0]
        with self.db.transaction() as conn:
            chain(conn, record, key=key)
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

    def follow(self, *, from_start: bool = True, stop_after: float | None = None,
               poll_seconds: float = 0.25) -> Iterator[LogLine]:
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

    def verify(self, *, anchor: ChainAnchor | None = None) -> ChainReport:
        """The chain from its first line (``core.logverify``: seq, prev, hash,
        repeated keys, macs when the key is readable); then ``anchor``
        (``{"seq", "hash"}`` kept elsewhere) and each log-backed state's head
        must name a line the log holds."""
        report = self._walk()
        if not report.ok:
            return report
        marks: list[tuple[str, dict | None]] = [("the anchor", anchor.as_dict() if anchor is not None else None)]
        marks += [(f"the {store} state", {"seq": seq}) for store, seq in
                  self.db.rows("SELECT store, head_seq FROM log_state ORDER BY store")]
        for what, mark in marks:
            problem = against(mark, report, what)
            if problem and mark:
                report.fail(min(report.lines + 1, int(mark.get("seq") or 0)), problem)
                break
        return report

    def chain_problem(self) -> str:
        """Why the log cannot be replayed into a state ("" when it can)."""
        report = self._walk()
        return "" if report.ok else f"line {report.first_broken_line} of the ack log: {report.problem}"

    def _walk(self) -> ChainReport:
        walker = ChainWalker(*self.mac_key())
        for (raw,) in self.db.rows("SELECT line FROM acklog ORDER BY seq"):
            if not walker.feed(raw.encode()):
                return walker.report
        return walker.finish()

    def _lines(self, query: str, params: tuple) -> list[dict | None]:
        lines: list[dict | None] = []
        for (raw,) in self.db.rows(query, params):
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            lines.append(line if isinstance(line, dict) else None)
        return lines
