"""The ack log: an append-only, hash-chained audit of every control action.

``stop_ack_log.jsonl`` holds one JSON object per line, keys in this order:
``timestamp, event, source, session_id, reason`` (the-nexus's four fields plus
the event), any extra keys, then ``seq, prev, hash``. ``hash`` is the sha256 of
``prev`` followed by the canonical JSON (sorted keys, no spaces, ASCII) of the
line without ``hash``; the first line's ``prev`` is 64 zeros. Changing, removing
or reordering any line breaks the chain from that line on, and ``verify`` names
the first line that breaks.

Failure: appends go through ``core.statefile.append_line`` (lock, torn-tail
repair, one write, fsync). Readers skip a torn tail and count it, and skip lines
that do not parse; nothing in the log is ever rewritten.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

from leash.core.clock import iso, now_seconds, parse_iso
from leash.core.home import private_dir
from leash.core.statefile import TORN_SUFFIX, JSONObject, append_line, last_lines, locked, open_state, read_state_bytes

TYPE_CHECKING = False  # for the type checker only: the head is imported when first used
if TYPE_CHECKING:
    from leash.core.loghead import AckHead

ACK_LOG_NAME = "stop_ack_log.jsonl"
GENESIS_HASH = "0" * 64
FLEET = "*"  # the session_id of fleet-wide actions

EVENTS = (
    "stop_ack", "resume", "fleet_stop", "fleet_resume", "hands_off", "release",
    "halt_ack", "halt_dismiss", "halt_escalate", "halt_timeout",
    "warrant_filed", "warrant_pardoned", "warrant_executed", "warrant_blocked", "warrant_undelivered",
    "epitaph", "loop_tripped", "loop_reset", "state_quarantined",
    "state_rebuilt", "halt_recorded", "tamper_blocked", "daemon_refused",
    "interrupt",  # a stop that also cancelled the call in flight (core.interrupt)
)
HEAD_KEYS = ("timestamp", "event", "source", "session_id", "reason")
CHAIN_KEYS = ("seq", "prev", "hash")
# How far back an append looks for the last intact line before scanning it all.
_TAIL_LOOKBACK = 64


def canonical(record: JSONObject) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def chain_hash(prev: str, record_without_hash: JSONObject) -> str:
    import hashlib  # not needed by readers, so kept off the hook's import path

    return hashlib.sha256(prev.encode("ascii") + canonical(record_without_hash)).hexdigest()


class LogRead:
    """Lines read from the log, with what had to be skipped."""

    def __init__(self, entries: list[JSONObject]):
        self.entries = entries
        self.torn_bytes = 0        # a final line without its newline
        self.unreadable_lines = 0  # complete lines that are not JSON objects


class ChainReport:
    """The outcome of walking the hash chain."""

    def __init__(self, ok: bool = True, lines: int = 0):
        self.ok = ok
        self.lines = lines
        self.first_broken_line: int | None = None
        self.problem = ""
        self.torn_bytes = 0
        self.torn_file_bytes = 0
        self.hashes: dict[int, str] = {}  # seq -> hash of every intact line

    def __repr__(self) -> str:
        return (f"ChainReport(ok={self.ok}, lines={self.lines}, first_broken_line={self.first_broken_line}, "
                f"problem={self.problem!r}, torn_bytes={self.torn_bytes})")


class AckLog:
    """The ack log of one state home."""

    def __init__(self, home: str | os.PathLike):
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, ACK_LOG_NAME)
        self._head: AckHead | None = None
        self._anchor: list[str] | None = None

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
        clash = set(extra) & set(HEAD_KEYS + CHAIN_KEYS)
        if clash:
            raise ValueError(f"reserved ack-log keys: {sorted(clash)}")
        from leash.core.halts.secrets import mask, mask_deep  # no line holds a secret, whoever wrote its text

        source, reason, extra = mask(str(source)), mask(str(reason)), {k: mask_deep(v) for k, v in extra.items()}
        stamp = iso(now_seconds(now))
        stored: JSONObject = {}

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
            stored.update(record)
            return json.dumps(record, ensure_ascii=True).encode("ascii")

        private_dir(self.home)
        with locked(self.path):
            append_line(self.path, make_line)
            self.head.advance(stored, self)
        command = self._anchor_command()
        if command:
            from leash.core.loghead import anchor_head

            anchor_head(command, stored)
        return stored

    @property
    def head(self):
        if self._head is None:
            from leash.core.loghead import head_of

            self._head = head_of(self.home)
        return self._head

    def _anchor_command(self) -> list[str]:
        """``[acklog] anchor_command`` (read once; empty when unset or unreadable)."""
        if self._anchor is None:
            self._anchor = []
            if os.path.exists(os.path.join(self.home, "config.toml")):
                from leash.core.config import ConfigError, load_config

                try:
                    self._anchor = list(load_config(self.home).get("acklog", {}).get("anchor_command") or [])
                except ConfigError:
                    pass
        return self._anchor

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
        """Walk the chain; the first line whose seq, prev or hash is wrong breaks
        it. Then hold the log against ``acklog.head`` and against ``anchor``
        (a ``{"seq", "hash"}`` kept elsewhere): a log that lacks the line they
        name was cut or deleted, one whose line differs was rewritten."""
        report = self._verify_chain()
        if report.ok:
            stored = self.head.read()
            for what, mark in (("acklog.head", stored), ("the anchor", anchor)):
                problem = against(mark, report, what)
                if problem and mark:  # (a problem always names a mark)
                    report.ok, report.problem = False, problem
                    report.first_broken_line = min(report.lines + 1, int(mark.get("seq", 0) or 0))
                    break
        return report

    def _verify_chain(self) -> ChainReport:
        report = ChainReport(ok=True, lines=0)
        try:
            report.torn_file_bytes = os.stat(self.path + TORN_SUFFIX).st_size
        except FileNotFoundError:
            pass
        data = _read_all(self.path)
        if data is None:
            return report
        body, _, tail = data.rpartition(b"\n")
        report.torn_bytes = len(tail)
        if not data.endswith(b"\n") and not body:
            return report
        prev, seq = GENESIS_HASH, None
        for number, raw in enumerate(body.split(b"\n"), 1):
            report.lines = number
            problem = check_line(raw, prev, seq)
            if problem:
                report.ok = False
                report.first_broken_line = number
                report.problem = problem
                return report
            record = json.loads(raw)
            prev, seq = record["hash"], record["seq"] + 1
            report.hashes[record["seq"]] = record["hash"]
        return report


def against(mark: JSONObject | None, report: "ChainReport", what: str) -> str:
    """Why the verified log does not hold the line ``mark`` names ("" when it does)."""
    if not mark or not isinstance(mark.get("seq"), int) or mark["seq"] <= 0:
        return ""
    seq = mark["seq"]
    if not report.hashes:
        return f"the log is empty or gone but {what} names line {seq} (deleted)"
    if seq not in report.hashes:
        return f"the log ends at line {max(report.hashes)} but {what} names line {seq} (cut)"
    if report.hashes[seq] != mark.get("hash"):
        return f"line {seq} is not the line {what} names (the log was rewritten and re-chained)"
    return ""


def _parse(raw: bytes) -> JSONObject | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def check_line(raw: bytes, prev: str, expected_seq: int | None) -> str:
    record = _parse(raw)
    if record is None:
        return "not a JSON object"
    missing = [k for k in HEAD_KEYS + CHAIN_KEYS if k not in record]
    if missing:
        return f"missing keys {', '.join(missing)}"
    if not isinstance(record["seq"], int) or isinstance(record["seq"], bool):
        return "seq is not an integer"
    if expected_seq is not None and record["seq"] != expected_seq:
        return f"seq {record['seq']} where {expected_seq} was expected (line removed or reordered)"
    if record["prev"] != prev:
        return "prev does not match the hash of the line before (line removed or reordered)"
    claimed = record.pop("hash")
    if chain_hash(prev, record) != claimed:
        return "hash does not match the line's content (line changed)"
    return ""


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
