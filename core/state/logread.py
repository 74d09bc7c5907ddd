"""Reading the ack log's file: no reader holds the whole of it.

``RawLines`` streams the complete lines from a byte offset in blocks of
``READ_BLOCK`` bytes, up to the size the file had when the iteration began;
``LineStream`` parses and filters them as they go by (``matches``) and
counts what it skipped; ``line_ending_at`` and ``torn_tail`` read backwards
from an offset and from the end. ``core.state.acklog`` reads its log through
these; ``core.store.pgacklog`` filters its rows with ``matches``.

Failure: a torn final line (no newline) is skipped and counted, a line that
is not a JSON object is skipped and counted, a missing file reads as empty;
nothing here writes.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator

from leash.core.base.clock import parse_iso
from leash.core.base.statefile import JSONObject, open_state

READ_BLOCK = 1 << 20  # bytes a streaming reader holds of the file at once (plus one line)


class LogRead:
    """Lines read from the log, with what had to be skipped."""

    def __init__(self, entries: list[JSONObject]):
        self.entries = entries
        self.torn_bytes = 0        # a final line without its newline
        self.unreadable_lines = 0  # complete lines that are not JSON objects


class RawLines:
    """The complete lines of ``path`` (bytes, without their newline), oldest
    first, from byte ``start`` (the start of a line), read ``block`` bytes at
    a time up to the size the file had when the iteration began (lines
    appended meanwhile are the next reader's). After the iteration,
    ``torn_bytes`` counts a final line without its newline."""

    def __init__(self, path: str, block: int | None = None, *, start: int = 0):
        self.path, self.block, self.start = path, block or READ_BLOCK, start
        self.torn_bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        self.torn_bytes = 0
        try:
            fd = open_state(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb", buffering=0) as handle:
            left = os.fstat(fd).st_size - self.start
            if self.start:
                handle.seek(self.start)
            pending = b""
            while left > 0:
                chunk = handle.read(min(self.block, left))
                if not chunk:
                    break
                left -= len(chunk)
                *complete, pending = (pending + chunk).split(b"\n")
                yield from complete
            self.torn_bytes = len(pending)


class LineStream:
    """The intact lines of the log, parsed and filtered as they stream by
    (``AckLog.lines``); after the iteration, ``torn_bytes`` and
    ``unreadable_lines`` say what was skipped."""

    def __init__(self, path: str, filters: dict, *, start: int = 0):
        self.raw = RawLines(path, start=start)
        self.filters = filters
        self.unreadable_lines = 0

    @property
    def torn_bytes(self) -> int:
        return self.raw.torn_bytes

    def __iter__(self) -> Iterator[JSONObject]:
        self.unreadable_lines = 0
        filtered = any(value is not None for value in self.filters.values())
        for raw in self.raw:
            record = parse_line(raw)
            if record is None:
                self.unreadable_lines += 1
            elif not filtered or matches(record, **self.filters):
                yield record


def parse_line(raw: bytes) -> JSONObject | None:
    """One line as a JSON object; None when it is not one."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def line_ending_at(path: str, offset: int) -> JSONObject | None:
    """The line whose newline is the byte just before ``offset``, read
    backwards from there; None when that byte is no newline or the line
    does not parse."""
    if offset <= 0:
        return None
    try:
        fd = open_state(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if os.pread(fd, 1, offset - 1) != b"\n":
            return None
        line, end = b"", offset - 1
        while end > 0:
            start = max(0, end - 65536)
            chunk = os.pread(fd, end - start, start)
            index = chunk.rfind(b"\n")
            line = chunk[index + 1:] + line
            if index >= 0:
                break
            end = start
        return parse_line(line)
    finally:
        os.close(fd)


def torn_tail(path: str) -> int:
    """How many bytes follow the file's last newline, read from its end."""
    try:
        fd = open_state(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0
    try:
        end = size = os.fstat(fd).st_size
        while end > 0:
            start = max(0, end - 65536)
            index = os.pread(fd, end - start, start).rfind(b"\n")
            if index >= 0:
                return size - (start + index + 1)
            end = start
        return size
    finally:
        os.close(fd)


def matches(record: JSONObject, *, session, event, since, source) -> bool:
    if session is not None and record.get("session_id") != session:
        return False
    if event is not None and record.get("event") != event:
        return False
    if source is not None and record.get("source") != source:
        return False
    if since is not None:
        try:
            if parse_iso(record.get("timestamp", "")) < since:
                return False
        except ValueError:
            return False
    return True
