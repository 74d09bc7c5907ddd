"""Walking the ack log's chain: what ``leash log verify`` checks, line by line,
on either backend (``core.acklog`` for the file, ``core.store.pgacklog``).

Each line must be one JSON object without a repeated key (``json`` keeps the
last of two, another parser may keep the first: such a line could mean one
thing here and another elsewhere), hold the head and chain keys, follow the
line before it (``seq`` one more, ``prev`` its ``hash``) and hash to its
``hash``: sha256 of ``prev`` and the canonical JSON of the line without
``hash`` and without ``mac``.

``mac`` (``core.logkey``) is HMAC-SHA256 of the line's hash under a key only
leashd's user can read. It lies outside the hashed part because it is made
from the hash (it cannot be inside what it signs), and because the chain must
stay checkable by whoever lacks the key: anyone can verify the chain, only the
key's holder can verify the macs. A line without ``mac`` hashes exactly as
before macs existed. With the key readable, a wrong mac is named, and so is a
missing one on any line written after the key existed (from its ``since``, or
from the first line whose mac verifies); without it the report says the macs
were not checked.

Failure: nothing raises; the first problem found ends the walk and is the
report's (``ok`` false, ``first_broken_line``, ``problem``).
"""
from __future__ import annotations

import json

GENESIS_HASH = "0" * 64
HEAD_KEYS = ("timestamp", "event", "source", "session_id", "reason")
CHAIN_KEYS = ("seq", "prev", "hash")
MAC_KEY = "mac"


def canonical(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def chain_hash(prev: str, record_without_hash: dict) -> str:
    import hashlib  # not needed by readers, so kept off the hook's import path

    return hashlib.sha256(prev.encode("ascii") + canonical(record_without_hash)).hexdigest()


class ChainReport:
    """The outcome of walking the hash chain."""

    def __init__(self, ok: bool = True, lines: int = 0):
        self.ok = ok
        self.lines = lines
        self.first_broken_line: int | None = None
        self.problem = ""
        self.torn_bytes = 0
        self.torn_file_bytes = 0
        self.macs = ""  # what was found of the macs: "" when there is nothing to say
        self.hashes: dict[int, str] = {}  # seq -> hash of every intact line

    def fail(self, line: int | None, problem: str) -> None:
        self.ok, self.first_broken_line, self.problem = False, line, problem

    def __repr__(self) -> str:
        return (f"ChainReport(ok={self.ok}, lines={self.lines}, first_broken_line={self.first_broken_line}, "
                f"problem={self.problem!r}, torn_bytes={self.torn_bytes}, macs={self.macs!r})")


class _Repeated(ValueError):
    pass


def _no_repeats(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for name, value in pairs:
        if name in seen:
            raise _Repeated(name)
        seen[name] = value
    return seen


def parse_strict(raw: bytes) -> tuple[dict | None, str]:
    """(the line as a dict, "") or (None, why it is not one line of the log)."""
    try:
        record = json.loads(raw, object_pairs_hook=_no_repeats)
    except _Repeated as exc:
        return None, f"the key {str(exc)!r} appears twice (a line that reads differently to other parsers)"
    except ValueError:
        return None, "not a JSON object"
    return (record, "") if isinstance(record, dict) else (None, "not a JSON object")


def hashed_part(record: dict) -> dict:
    """The line as its hash covers it: without ``hash`` and ``mac``."""
    return {name: value for name, value in record.items() if name not in ("hash", MAC_KEY)}


def check_record(record: dict, prev: str, expected_seq: int | None) -> str:
    missing = [k for k in HEAD_KEYS + CHAIN_KEYS if k not in record]
    if missing:
        return f"missing keys {', '.join(missing)}"
    if not isinstance(record["seq"], int) or isinstance(record["seq"], bool):
        return "seq is not an integer"
    if expected_seq is not None and record["seq"] != expected_seq:
        return f"seq {record['seq']} where {expected_seq} was expected (line removed or reordered)"
    if record["prev"] != prev:
        return "prev does not match the hash of the line before (line removed or reordered)"
    if chain_hash(prev, hashed_part(record)) != record["hash"]:
        return "hash does not match the line's content (line changed)"
    return ""


def check_line(raw: bytes, prev: str, expected_seq: int | None) -> str:
    """Why ``raw`` does not follow a line whose hash is ``prev`` ("" when it does)."""
    record, problem = parse_strict(raw)
    return problem or check_record(record or {}, prev, expected_seq)


class ChainWalker:
    """Feed it the log's lines in order; ``finish()`` gives the report."""

    def __init__(self, key=None, key_problem: str = ""):
        self.report = ChainReport(ok=True, lines=0)
        self.prev, self.seq = GENESIS_HASH, None
        self.key, self.key_problem = key, key_problem
        self.macs_from: int | None = key.since if key is not None else None
        self.with_mac = 0

    def feed(self, raw: bytes) -> bool:
        """Check one more line; False once the chain is broken (feed no more)."""
        number = self.report.lines = self.report.lines + 1
        record, problem = parse_strict(raw)
        if record is not None:
            problem = check_record(record, self.prev, self.seq) or self._check_mac(record)
        if problem or record is None:
            self.report.fail(number, problem)
            return False
        self.prev, self.seq = record["hash"], record["seq"] + 1
        self.report.hashes[record["seq"]] = record["hash"]
        return True

    def _check_mac(self, record: dict) -> str:
        mac = record.get(MAC_KEY)
        self.with_mac += mac is not None
        if self.key is None:
            return ""
        if mac is not None:
            if not self.key.verifies(record["hash"], mac):
                return "its mac is wrong: not written with this home's key (forged, or a host with another key)"
            if self.macs_from is None:
                self.macs_from = record["seq"]
            return ""
        if self.macs_from is not None and record["seq"] >= self.macs_from:
            return (f"it has no mac, but every line from {self.macs_from} on is written with the key "
                    "(a line added by something without it)")
        return ""

    def finish(self) -> ChainReport:
        report = self.report
        if self.key is not None:
            report.macs = f"macs checked ({self.with_mac} lines carry one)" if self.with_mac else ""
            last = max(report.hashes, default=0)
            since = self.key.since
            if report.ok and since is not None and last < since - 1:
                report.fail(report.lines + 1, f"the log ends at line {last} but it had reached line {since - 1} "
                                              "when its mac key was made (cut)")
        elif self.with_mac or self.key_problem:
            report.macs = self.key_problem or "macs not checked: no key readable"
        return report


def against(mark: dict | None, report: ChainReport, what: str) -> str:
    """Why the verified log does not hold the line ``mark`` names ("" when it does)."""
    if not mark or not isinstance(mark.get("seq"), int) or mark["seq"] <= 0:
        return ""
    seq = mark["seq"]
    if not report.hashes:
        return f"the log is empty or gone but {what} names line {seq} (deleted)"
    if seq not in report.hashes:
        return f"the log ends at line {max(report.hashes)} but {what} names line {seq} (cut)"
    if mark.get("hash") is not None and report.hashes[seq] != mark.get("hash"):
        return f"line {seq} is not the line {what} names (the log was rewritten and re-chained)"
    return ""
