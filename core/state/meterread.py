"""Reading what an agent spent from one file, a little more each time.

``read_new(path, cursor, cli=...)`` reads ``path`` from where ``cursor`` (a
``MeterCursor``, None the first time) stopped and returns a ``MeterRead``:
the spend of the lines added since (``usages``, ``TokenUsage`` deltas from
``core.policy.usagelines``), the cursor to pass next time (keep it with the
file's totals: it is JSON, ``to_json``/``from_json``), how many lines could
not be read (``skipped_lines``, for the caller to report), and ``reset``.
``reset`` is True when the read started at the file's first byte: the file
is new to the cursor, or it was truncated, replaced (another inode) or
rewritten (its first bytes, or the bytes before the cursor, changed). Then
``usages`` is the file's whole spend so far: the caller replaces what it
held for this file with it instead of adding to it, so nothing is counted
twice. ``more`` says the read stopped at ``max_read_bytes`` with more of the
file to read: call again (each call's memory and time stay bounded).

``cli`` is ``claude`` (a transcript, and each of its subagents' transcripts,
``claude_code_files``), ``codex`` (a rollout file) or ``gemini`` (a file of
``AfterModel`` payloads, one per line). What each can and cannot see is in
``core.policy.usagelines``. Claude Code's lines are counted once per key
(the message): the cursor keeps the last ``MAX_SEEN`` keys as 48-bit hashes
(a duplicate of a message older than that would count again; Claude Code
writes its duplicates together), and the figures of the last ``RECENT`` ones,
so that a repeated line with larger figures (a growing ``output_tokens``)
adds only what it adds. Keys are per file: a message copied into another
file (a forked session) is that file's caller's to recognise, by key.
Codex's running totals become spend against the last total the cursor kept.
Each read copies the cursor's keys and makes them a set: a fixed cost that
grows with them, under a millisecond at ``MAX_SEEN`` (``bench/budget.py``).

Lines: only complete lines are read; a last line without its newline yet is
left for the next read. A line is parsed only when it holds its CLI's marker
(``"usage"``, ``"token_count"``/``"turn_context"``, ``"usageMetadata"``): a
line without it cannot be a usage line. A line that does not parse, one
shaped like a usage line whose counts are not counts, one that is no JSON
object (it does not start with ``{`` and end with ``}``), and one longer
than ``max_line_bytes`` (passed over a block at a time, never held whole)
are skipped and counted. Blank lines are nothing. The file is read in
``BLOCK_BYTES`` blocks: memory is a block, the longest line kept and the
spend found, whatever the file's size.

Failure: a file that does not exist is an empty read (``missing``), its
cursor unchanged; any other ``OSError`` is raised. The cursor given is never
changed: the new one is returned. A cursor that cannot be read
(``from_json`` of anything else) is a fresh one: the next read is whole,
with ``reset``. What no reader can see: a file rewritten to the same size
with its first bytes and the bytes before the cursor unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from leash.core.policy.usagelines import (
    CLAUDE_CODE_CLI,
    CODEX_CLI,
    COUNTS,
    GEMINI_CLI,
    MALFORMED,
    TokenUsage,
    claude_code_usage,
    codex_delta,
    codex_model,
    codex_totals,
    gemini_usage,
)

BLOCK_BYTES = 1 << 20
MAX_LINE_BYTES = 4 << 20
MAX_READ_BYTES = 256 << 20
HEAD_BYTES = 4096   # the first bytes, whose digest tells a rewritten file
TAIL_BYTES = 256    # the bytes before the cursor, likewise
MAX_SEEN = 20_000
RECENT = 16
KEY_HEX = 12
MARKERS = {CLAUDE_CODE_CLI: (b'"usage"',), CODEX_CLI: (b'"token_count"', b'"turn_context"'),
           GEMINI_CLI: (b'"usageMetadata"',)}
KEYED_READERS = {CLAUDE_CODE_CLI: claude_code_usage, GEMINI_CLI: gemini_usage}


@dataclass
class MeterCursor:
    """Where a file was read to, and what was counted from it."""
    device: int = 0
    inode: int = 0
    offset: int = 0            # the first byte not read yet
    size: int = 0              # the file's size when read
    head: str = ""             # digest of the first head_bytes bytes
    head_bytes: int = 0
    tail: str = ""             # digest of the TAIL_BYTES bytes before offset
    in_long_line: bool = False  # offset is inside a line too long to read
    seen: list[str] = field(default_factory=list)               # key hashes counted, oldest first
    recent: dict[str, list[int]] = field(default_factory=dict)  # key hash -> counts counted (COUNTS order)
    codex_totals: list[int] | None = None
    codex_model: str = ""

    def to_json(self) -> dict:
        return {"device": self.device, "inode": self.inode, "offset": self.offset, "size": self.size,
                "head": self.head, "head_bytes": self.head_bytes, "tail": self.tail,
                "in_long_line": self.in_long_line, "seen": list(self.seen),
                "recent": {key: list(counts) for key, counts in self.recent.items()},
                "codex_totals": None if self.codex_totals is None else list(self.codex_totals),
                "codex_model": self.codex_model}

    @classmethod
    def from_json(cls, value: object) -> MeterCursor:
        """The cursor ``to_json`` wrote; a fresh one for anything else."""
        try:
            return cls._from_json(value)
        except (KeyError, TypeError, AttributeError):
            return cls()

    @classmethod
    def _from_json(cls, value: object) -> MeterCursor:
        if not isinstance(value, dict):
            raise TypeError(value)
        device, inode, offset, size, head_bytes = (_natural(value[name]) for name in (
            "device", "inode", "offset", "size", "head_bytes"))
        cursor = cls(device=device, inode=inode, offset=offset, size=size, head=_string(value["head"]),
                     head_bytes=head_bytes, tail=_string(value["tail"]), in_long_line=value["in_long_line"] is True,
                     codex_model=_string(value["codex_model"]))
        cursor.seen = [_string(key) for key in value["seen"]][-MAX_SEEN:]
        cursor.recent = {_string(key): _counts(counts) for key, counts in value["recent"].items()}
        totals = value["codex_totals"]
        cursor.codex_totals = None if totals is None else _counts(totals)
        return cursor


def _natural(value: object) -> int:
    if type(value) is not int or value < 0:
        raise TypeError(value)
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _counts(value: object) -> list[int]:
    if not isinstance(value, list) or len(value) != len(COUNTS):
        raise TypeError(value)
    return [_natural(n) for n in value]


@dataclass(frozen=True)
class MeterRead:
    usages: list[TokenUsage]
    cursor: MeterCursor
    skipped_lines: int = 0
    reset: bool = False
    more: bool = False
    bytes_read: int = 0
    missing: bool = False


def claude_code_files(transcript_path: str | os.PathLike[str]) -> list[Path]:
    """A Claude Code session's transcripts: its own, then each subagent's
    (``<transcript without .jsonl>/subagents/agent-*.jsonl``), in name order."""
    path = Path(transcript_path)
    return [path] + sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))


def read_new(path: str | os.PathLike[str], cursor: MeterCursor | None = None, *, cli: str,
             max_line_bytes: int = MAX_LINE_BYTES, max_read_bytes: int = MAX_READ_BYTES) -> MeterRead:
    """The spend ``path`` gained since ``cursor`` (see the module's docstring)."""
    if cli not in MARKERS:
        raise ValueError(f"no usage reader for {cli!r} (known: {', '.join(MARKERS)})")
    given = cursor if cursor is not None else MeterCursor()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return MeterRead([], given, missing=True)
    try:
        status = os.fstat(fd)
        own = _resumed(fd, given, status) or MeterCursor(device=status.st_dev, inode=status.st_ino)
        reader = _Reader(fd, own, cli, max_line_bytes)
        end = min(status.st_size, own.offset + max(max_read_bytes, max_line_bytes + 1))
        start = own.offset
        reader.read(end)
        _mark_edges(fd, own, status.st_size)
        return MeterRead(reader.usages, own, reader.skipped, reset=start == 0, more=end < status.st_size,
                         bytes_read=end - start)
    finally:
        os.close(fd)


def _resumed(fd: int, cursor: MeterCursor, status: os.stat_result) -> MeterCursor | None:
    """A copy of ``cursor`` to read on from, or None when the file must be read
    from its start (another file, or this one cut or rewritten)."""
    if (cursor.device, cursor.inode) != (status.st_dev, status.st_ino) or cursor.offset == 0:
        return None
    if status.st_size < max(cursor.offset, cursor.size):
        return None
    if cursor.head != _digest(fd, 0, cursor.head_bytes):
        return None
    if cursor.tail != _digest(fd, max(cursor.offset - TAIL_BYTES, 0), min(cursor.offset, TAIL_BYTES)):
        return None
    return replace(cursor, seen=list(cursor.seen), recent={key: list(c) for key, c in cursor.recent.items()},
                   codex_totals=None if cursor.codex_totals is None else list(cursor.codex_totals))


def _mark_edges(fd: int, cursor: MeterCursor, size: int) -> None:
    cursor.size = size
    cursor.head_bytes = min(size, HEAD_BYTES)
    cursor.head = _digest(fd, 0, cursor.head_bytes)
    cursor.tail = _digest(fd, max(cursor.offset - TAIL_BYTES, 0), min(cursor.offset, TAIL_BYTES))


def _digest(fd: int, start: int, length: int) -> str:
    return hashlib.blake2b(os.pread(fd, length, start) if length else b"", digest_size=8).hexdigest()


class _Reader:
    """One read's pass over the file's new lines, updating ``cursor``."""

    def __init__(self, fd: int, cursor: MeterCursor, cli: str, max_line_bytes: int) -> None:
        self.fd, self.cursor, self.cli, self.max_line_bytes = fd, cursor, cli, max_line_bytes
        self.markers = MARKERS[cli]
        self.usages: list[TokenUsage] = []
        self.skipped = 0
        self.seen = set(cursor.seen)

    def read(self, end: int) -> None:
        """Every complete line from the cursor's offset up to ``end``."""
        cursor = self.cursor
        position = cursor.offset
        discarding = cursor.in_long_line  # inside a line too long to keep: drop up to its newline
        pending = bytearray()
        line_start = position
        os.lseek(self.fd, position, os.SEEK_SET)
        while position < end:
            block = os.read(self.fd, min(BLOCK_BYTES, end - position))
            if not block:
                break
            index = 0
            while True:
                newline = block.find(b"\n", index)
                piece = block[index:] if newline < 0 else block[index:newline]
                if discarding:
                    pass
                elif len(pending) + len(piece) > self.max_line_bytes:
                    discarding = True
                    pending = bytearray()
                elif newline < 0:
                    pending += piece
                else:
                    self.line(bytes(pending + piece) if pending else piece)
                    pending = bytearray()
                if newline < 0:
                    break
                if discarding:
                    self.skipped += 1
                    discarding = False
                index = newline + 1
                line_start = position + index
            position += len(block)
        cursor.in_long_line = discarding
        cursor.offset = position if discarding else line_start

    def line(self, raw: bytes) -> None:
        text = raw.strip()
        if not text:
            return
        if not (text.startswith(b"{") and text.endswith(b"}")):
            self.skipped += 1
            return
        if not any(marker in text for marker in self.markers):
            return
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            self.skipped += 1
            return
        if self.cli == CODEX_CLI:
            self.codex(value)
            return
        reading = KEYED_READERS[self.cli](value)
        if reading is MALFORMED:
            self.skipped += 1
        elif isinstance(reading, TokenUsage):
            self.count_once(reading)

    def codex(self, value: object) -> None:
        cursor = self.cursor
        model = codex_model(value)
        if model is not None:
            cursor.codex_model = model
            return
        totals = codex_totals(value)
        if totals is MALFORMED:
            self.skipped += 1
        elif isinstance(totals, TokenUsage):
            before = None if cursor.codex_totals is None else totals.with_counts(cursor.codex_totals)
            spent = codex_delta(before, totals)
            cursor.codex_totals = totals.counts()
            if any(spent.counts()):
                self.usages.append(replace(spent, model=cursor.codex_model))

    def count_once(self, usage: TokenUsage) -> None:
        """``usage`` unless its key was counted; what it adds beyond the figures
        counted for a recent key."""
        if not usage.key:
            self.usages.append(usage)
            return
        cursor, key = self.cursor, hashlib.blake2b(usage.key.encode(), digest_size=8).hexdigest()[:KEY_HEX]
        counts = usage.counts()
        counted = cursor.recent.pop(key, None)
        if counted is not None:
            more = [max(new - old, 0) for new, old in zip(counts, counted, strict=True)]
            cursor.recent[key] = [max(new, old) for new, old in zip(counts, counted, strict=True)]
            if any(more):
                self.usages.append(usage.with_counts(more))
            return
        if key in self.seen:
            return
        self.usages.append(usage)
        self.seen.add(key)
        cursor.seen.append(key)
        if len(cursor.seen) > MAX_SEEN:
            self.seen.discard(cursor.seen.pop(0))
        cursor.recent[key] = counts
        if len(cursor.recent) > RECENT:
            del cursor.recent[next(iter(cursor.recent))]
