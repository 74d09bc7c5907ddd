"""The ack log: an append-only, hash-chained audit of every control action.

``stop_ack_log.jsonl`` holds one JSON object per line, keys in this order:
``timestamp, event, source, session_id, reason`` (the-nexus's four fields plus
the event), any extra keys, then ``seq, prev, hash``. ``hash`` is the sha256 of
``prev`` followed by the canonical JSON (sorted keys, no spaces, ASCII) of the
line without ``hash``; the first line's ``prev`` is 64 zeros. Changing, removing
or reordering any line breaks the chain from that line on, and ``verify`` names
the first line that breaks.

A process that can read the home's MAC key (``core.logkey``; in the separated
profile only leashd) adds ``mac`` after ``hash``: HMAC-SHA256 of the hash,
outside the hashed part (``core.logverify`` says why), so a line added by
anyone without the key is named by ``verify``.

Reading: no reader holds the whole file. ``lines()`` streams the intact
lines in blocks (``core.state.logread``: what a replay, a scan for the head and
the chain walk use), ``tail()`` reads from the end, and ``read()`` is the list
of them for a caller that asks for one (``leash log``, the tests).

Failure: appends go through ``core.statefile.append_line`` (lock, torn-tail
repair, one write, fsync). Readers skip a torn tail and count it, and skip lines
that do not parse; nothing in the log is ever rewritten. ``verify`` fails on a
log its head (``acklog.head``), a state file or an anchor says was longer or
other, and on a missing head beside a log that has lines.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator

from leash.core.base.clock import iso, now_seconds
from leash.core.base.home import private_dir
from leash.core.base.logverify import (  # noqa: F401 - canonical, chain_hash: named here too
    CHAIN_KEYS,
    GENESIS_HASH,
    HEAD_KEYS,
    MAC_KEY,
    ChainReport,
    against,
    canonical,
    chain_hash,
)
from leash.core.base.statefile import (
    TORN_SUFFIX,
    JSONObject,
    append_line,
    last_lines,
    locked,
    open_state,
)
from leash.core.state import logread
from leash.core.state.logread import LineStream, LogRead

TYPE_CHECKING = False  # for the type checker only: the head is imported when first used
if TYPE_CHECKING:
    from leash.core.state.loghead import AckHead

ACK_LOG_NAME = "stop_ack_log.jsonl"
FLEET = "*"  # the session_id of fleet-wide actions

EVENTS = (
    "stop_ack", "resume", "fleet_stop", "fleet_resume", "hands_off", "release",
    "halt_ack", "halt_dismiss", "halt_escalate", "halt_timeout",
    "warrant_filed", "warrant_pardoned", "warrant_executed", "warrant_blocked", "warrant_undelivered",
    "epitaph", "loop_tripped", "loop_reset", "state_quarantined",
    "state_rebuilt", "halt_recorded", "tamper_blocked", "daemon_refused",
    "interrupt",  # a stop that also cancelled the call in flight (core.interrupt)
    "operator_refused",  # an operator request from below an agent's process (core.daemon.agents)
    # An agent's call waiting for an operator, and how it ended (core.approvals.store).
    "approval_requested", "approval_allowed", "approval_denied", "approval_timeout", "approval_withdrawn",
    "approval_answer_refused",
    # Spend caps (core.views.metering): a warn point crossed, a hold, a raise, a window's reset, a silent meter.
    "budget_warn", "budget_hold", "budget_raised", "budget_reset", "budget_stale",
)
RESERVED_KEYS = HEAD_KEYS + CHAIN_KEYS + (MAC_KEY,)  # no extra key of a line may take these names
# State files that record the last line they reflect: (file, the key it is under).
STATE_MARKS = (("stops.json", "head"), ("hands_off_registry.json", "@head"), ("approvals.json", "head"))
# How far back an append looks for the last intact line before scanning it all.
_TAIL_LOOKBACK = 64



# The seqs each log's lines were appended with by this process: leashd tells
# the lines it wrote from lines another process wrote into its home
# (``core.daemon.tamperwatch``).
_WRITTEN_HERE: dict[str, set[int]] = {}
WRITTEN_KEPT = 100_000  # seqs remembered per log (then forgotten all at once: they were judged)
_written_mutex = threading.Lock()


def _note_written(path: str, seq: int) -> None:
    with _written_mutex:
        found = _WRITTEN_HERE.setdefault(os.path.realpath(path), set())
        if len(found) >= WRITTEN_KEPT:
            found.clear()
        found.add(seq)


def written_here(path: str, seq: int) -> bool:
    """Whether this process appended line ``seq`` of the log at ``path``."""
    with _written_mutex:
        return seq in _WRITTEN_HERE.get(os.path.realpath(path), ())

class AckLog:
    """The ack log of one state home."""

    def __init__(self, home: str | os.PathLike):
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, ACK_LOG_NAME)
        self._head: AckHead | None = None
        self._anchor: list[str] | None = None
        self._key_path: str | None = None

    # ------------------------------------------------------------ writing
    def append(
        self,
        event: str,
        *,
        source: str,
        session_id: str,
        reason: str = "",
        now: float | None = None,
        **extra: object,
    ) -> JSONObject:
        """Append one action; returns the stored line as a dict."""
        if event not in EVENTS:
            raise ValueError(f"unknown ack-log event {event!r}")
        clash = set(extra) & set(RESERVED_KEYS)
        if clash:
            raise ValueError(f"reserved ack-log keys: {sorted(clash)}")
        from leash.core.base.secrets import mask, mask_deep  # no line holds a secret, whoever wrote its text

        source, reason, extra = mask(str(source)), mask(str(reason)), {k: mask_deep(v) for k, v in extra.items()}
        stamp = iso(now_seconds(now))
        stored: JSONObject = {}
        key = self.mac_key()[0]

        def make_line() -> bytes:
            prev, seq = self._chain_tip()
            record: JSONObject = {
                "timestamp": stamp,
                "event": event,
                "source": str(source),
                "session_id": str(session_id),
                "reason": str(reason),
            }
            record.update(extra)
            record["seq"] = seq
            record["prev"] = prev
            record["hash"] = chain_hash(prev, record)
            if key is not None:
                record[MAC_KEY] = key.sign(record["hash"])
            stored.update(record)
            return json.dumps(record, ensure_ascii=True).encode("ascii")

        private_dir(self.home)
        with locked(self.path):
            append_line(self.path, make_line)
            self.head.advance(stored, self)
        _note_written(self.path, stored["seq"])
        command = self._anchor_command()
        if command:
            from leash.core.state.loghead import anchor_head

            anchor_head(command, stored)
        return stored

    @property
    def head(self):
        if self._head is None:
            from leash.core.state.loghead import head_of

            self._head = head_of(self.home)
        return self._head

    def mac_key(self):
        """(the home's MAC key or None, why there is none) (``core.logkey``;
        its file named once, its content read again only when it changes)."""
        from leash.core.base import logkey

        if self._key_path is None:
            self._key_path = logkey.configured_path(self.home)
        return logkey.load(self._key_path)

    def _anchor_command(self) -> list[str]:
        """``[acklog] anchor_command`` (read once; empty when unset or unreadable)."""
        if self._anchor is None:
            self._anchor = []
            if os.path.exists(os.path.join(self.home, "config.toml")):
                from leash.core.base.config import ConfigError, load_config

                try:
                    self._anchor = list(load_config(self.home).get("acklog", {}).get("anchor_command") or [])
                except ConfigError:
                    pass
        return self._anchor

    def next_seq(self) -> int:
        """The seq the next line will have."""
        with locked(self.path):
            return self._chain_tip()[1]

    def _chain_tip(self) -> tuple[str, int]:
        """(hash, next seq) of the last intact line; genesis for an empty log."""
        for raw in reversed(last_lines(self.path, _TAIL_LOOKBACK)):
            record = logread.parse_line(raw)
            if record is not None and isinstance(record.get("hash"), str) and isinstance(record.get("seq"), int):
                return record["hash"], record["seq"] + 1
        last = None
        for raw in logread.RawLines(self.path):
            record = logread.parse_line(raw)
            if record is not None and isinstance(record.get("hash"), str) and isinstance(record.get("seq"), int):
                last = record
        if last is None:
            return GENESIS_HASH, 1
        return last["hash"], last["seq"] + 1

    # ------------------------------------------------------------ reading
    def read(
        self,
        *,
        session: str | None = None,
        event: str | None = None,
        since: float | None = None,
        source: str | None = None,
    ) -> LogRead:
        """Every intact line, filtered, as a list; torn and unreadable lines are
        counted. A reader that goes through the lines once wants ``lines``."""
        stream = self.lines(session=session, event=event, since=since, source=source)
        result = LogRead(entries=list(stream))
        result.torn_bytes, result.unreadable_lines = stream.torn_bytes, stream.unreadable_lines
        return result

    def lines(
        self,
        *,
        session: str | None = None,
        event: str | None = None,
        since: float | None = None,
        source: str | None = None,
        start: int = 0,
    ) -> LineStream:
        """Every intact line, filtered, streamed from the file (``logread.READ_BLOCK``
        bytes of it held at a time; from byte ``start``, the start of a line);
        iterate it again to read it again."""
        return LineStream(self.path, {"session": session, "event": event, "since": since, "source": source},
                          start=start)

    def line_ending_at(self, offset: int) -> JSONObject | None:
        """The line whose newline is the byte just before ``offset``, read
        backwards from there; None when that byte is no newline or the line
        does not parse."""
        return logread.line_ending_at(self.path, offset)

    def tail(self, count: int) -> list[JSONObject]:
        """The last ``count`` intact lines, oldest first, without reading it all."""
        records = (logread.parse_line(raw) for raw in last_lines(self.path, count))
        return [r for r in records if r is not None]

    def follow(
        self,
        *,
        session: str | None = None,
        event: str | None = None,
        since: float | None = None,
        source: str | None = None,
        poll_seconds: float = 0.25,
        from_start: bool = True,
        stop_after: float | None = None,
    ) -> Iterator[JSONObject]:
        """Yield lines as they are appended (``tail -f``); complete lines only."""
        position = 0
        if not from_start:
            try:
                position = os.stat(self.path).st_size
            except FileNotFoundError:
                position = 0
        pending = b""
        deadline = None if stop_after is None else time.monotonic() + stop_after
        while deadline is None or time.monotonic() < deadline:
            try:
                with os.fdopen(open_state(self.path, os.O_RDONLY), "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    if size < position:  # a torn tail was cut off
                        position, pending = size, b""
                    handle.seek(position)
                    chunk = handle.read(logread.READ_BLOCK)  # the rest on the next turn, without a pause
            except FileNotFoundError:
                chunk = b""
            if chunk:
                position += len(chunk)
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    record = logread.parse_line(raw)
                    if record is None:
                        continue
                    if logread.matches(record, session=session, event=event, since=since, source=source):
                        yield record
            if len(chunk) < logread.READ_BLOCK:
                time.sleep(poll_seconds)

    # ------------------------------------------------------------ verifying
    def verify(self, *, anchor: JSONObject | None = None) -> ChainReport:
        """Walk the chain (``core.logverify``: seq, prev, hash, repeated keys,
        and the macs when the key is readable); the first line that is wrong
        breaks it. Then hold the log against ``acklog.head``, the state files'
        heads and ``anchor`` (a ``{"seq", "hash"}`` kept elsewhere): a log that
        lacks the line they name was cut or deleted, one whose line differs was
        rewritten; a head missing beside a log that has lines was deleted."""
        report = self._verify_chain()
        if not report.ok:
            return report
        stored = self.head.read()
        for what, mark in (("acklog.head", stored), ("the anchor", anchor), *self._state_marks()):
            problem = against(mark, report, what)
            if problem and mark:  # (a problem always names a mark)
                report.fail(min(report.lines + 1, int(mark.get("seq", 0) or 0)), problem)
                return report
        if stored is None and report.hashes:
            report.fail(None, f"acklog.head is missing beside a log of {len(report.hashes)} lines (deleted?): "
                              "nothing holds the log to its length (leash doctor --repair writes it again "
                              "from the log as it is)")
        return report

    def _state_marks(self) -> list[tuple[str, JSONObject | None]]:
        """The last line each state file says it reflects."""
        from leash.core.base.statefile import StateCorrupt, read_json

        marks: list[tuple[str, JSONObject | None]] = []
        for name, head_key in STATE_MARKS:
            try:
                raw = read_json(os.path.join(self.home, name), None)
            except (StateCorrupt, OSError):
                continue  # an unreadable state file is the readers' and doctor's business
            found = raw.get(head_key) if isinstance(raw, dict) else None
            marks.append((name, found if isinstance(found, dict) else None))
        return marks

    def chain_problem(self) -> str:
        """Why the log cannot be replayed into a state ("" when it can): a
        chain that does not verify, or a line whose mac is wrong or missing.
        The same walk as ``verify``, streamed, keeping no hash but the last."""
        report = self._verify_chain(keep_hashes=False)
        return "" if report.ok else f"line {report.first_broken_line} of the ack log: {report.problem}"

    def _verify_chain(self, *, keep_hashes: bool = True) -> ChainReport:
        from leash.core.base.logverify import ChainWalker

        walker = ChainWalker(*self.mac_key())
        report = walker.report
        if not keep_hashes:
            report.hashes = _LastHash()
        try:
            report.torn_file_bytes = os.stat(self.path + TORN_SUFFIX).st_size
        except FileNotFoundError:
            pass
        lines = logread.RawLines(self.path)
        for raw in lines:
            if not walker.feed(raw):
                report.torn_bytes = logread.torn_tail(self.path)
                return report
        report.torn_bytes = lines.torn_bytes
        return walker.finish()


class _LastHash(dict):
    """``ChainReport.hashes`` for a walk that needs only the last line's (``seq -> hash``)."""

    def __setitem__(self, seq, line_hash) -> None:
        self.clear()
        super().__setitem__(seq, line_hash)
