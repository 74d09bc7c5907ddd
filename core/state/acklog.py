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

Failure: appends go through ``core.statefile.append_line`` (lock, torn-tail
repair, one write, fsync). Readers skip a torn tail and count it, and skip lines
that do not parse; nothing in the log is ever rewritten. ``verify`` fails on a
log its head (``acklog.head``), a state file or an anchor says was longer or
other, and on a missing head beside a log that has lines.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

from leash.core.base.clock import iso, now_seconds, parse_iso
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
    read_state_bytes,
)

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
)
RESERVED_KEYS = HEAD_KEYS + CHAIN_KEYS + (MAC_KEY,)  # no extra key of a line may take these names
# State files that record the last line they reflect: (file, the key it is under).
STATE_MARKS = (("stops.json", "head"), ("hands_off_registry.json", "@head"), ("approvals.json", "head"))
# How far back an append looks for the last intact line before scanning it all.
_TAIL_LOOKBACK = 64


class LogRead:
    """Lines read from the log, with what had to be skipped."""

    def __init__(self, entries: list[JSONObject]):
        self.entries = entries
        self.torn_bytes = 0        # a final line without its newline
        self.unreadable_lines = 0  # complete lines that are not JSON objects


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
            record = _parse(raw)
            if record is not None and isinstance(record.get("hash"), str) and isinstance(record.get("seq"), int):
                return record["hash"], record["seq"] + 1
        last = None
        for raw in _complete_lines(self.path):
            record = _parse(raw)
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
        """Every intact line, filtered; torn and unreadable lines are counted."""
        result = LogRead(entries=[])
        data = _read_all(self.path)
        if data is None:
            return result
        body, _, tail = data.rpartition(b"\n")
        if tail:
            result.torn_bytes = len(tail)
        if not body and not data.endswith(b"\n"):
            return result
        for raw in body.split(b"\n"):
            record = _parse(raw)
            if record is None:
                result.unreadable_lines += 1
                continue
            if matches(record, session=session, event=event, since=since, source=source):
                result.entries.append(record)
        return result

    def tail(self, count: int) -> list[JSONObject]:
        """The last ``count`` intact lines, oldest first, without reading it all."""
        records = (_parse(raw) for raw in last_lines(self.path, count))
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
                    chunk = handle.read()
            except FileNotFoundError:
                chunk = b""
            if chunk:
                position += len(chunk)
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    record = _parse(raw)
                    if record is None:
                        continue
                    if matches(record, session=session, event=event, since=since, source=source):
                        yield record
            else:
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
        chain that does not verify, or a line whose mac is wrong or missing."""
        report = self._verify_chain()
        return "" if report.ok else f"line {report.first_broken_line} of the ack log: {report.problem}"

    def _verify_chain(self) -> ChainReport:
        from leash.core.base.logverify import ChainWalker

        walker = ChainWalker(*self.mac_key())
        report = walker.report
        try:
            report.torn_file_bytes = os.stat(self.path + TORN_SUFFIX).st_size
        except FileNotFoundError:
            pass
        data = _read_all(self.path)
        if data is None:
            return walker.finish()
        body, _, tail = data.rpartition(b"\n")
        report.torn_bytes = len(tail)
        if data.endswith(b"\n") or body:
            for raw in body.split(b"\n"):
                if not walker.feed(raw):
                    return report
        return walker.finish()


def _parse(raw: bytes) -> JSONObject | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


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


def _read_all(path: str) -> bytes | None:
    return read_state_bytes(path)  # never through a symbolic link


def _complete_lines(path: str) -> Iterator[bytes]:
    data = _read_all(path)
    if data is None:
        return
    body, _, _ = data.rpartition(b"\n")
    if body or data.endswith(b"\n"):
        yield from body.split(b"\n")
