"""The ack log's head, kept beside it in ``acklog.head``.

The ack log is the source of truth for the stops, the hands-off locks, the
halt states and the approvals: each of those state files is a cache of the log lines of its
*store*. ``acklog.head`` holds::

    {"seq": 17, "hash": "<sha256>", "size": 5120,
     "stores": {"stops": {"seq": 15, "hash": "..."}, "hands_off": {...}, "halts": {...}}}

the log's last line, the log's size after it, and, for each store, the last
line that changed it. A reader checks the size against the log (one ``stat``):
a log that grew without its head (a writer died between the two) has its head
recomputed (from the recorded size on, when the line ending there is the one
the head names; else from the whole log, streamed); a log that shrank or
vanished was cut, and that is reported. A state
file records the same ``{"seq", "hash"}`` for the lines it reflects, so a reader
that finds the two disagreeing (the file was removed, emptied, replaced by an
older copy, or written without a log line) rebuilds it by replaying the log.
``leash log verify`` compares the log with the head (and with an anchor given
by the operator) to find a truncated, deleted or re-chained log.

Failure: the head is written after every append, under the ack log's lock, by
atomic replace, durably (a crash leaves the old head or the new one, and a log
one line past its head is the only trace a writer that died between the two
leaves: the head is recomputed then, when the log still holds the line the old
head named). A head that names lines the log does not have, a head that is
missing or unreadable beside a log that has lines (deleted: recomputing it
would accept whatever the log now is), and a log that grew without holding its
head's line any more are facts ``HeadMismatch`` reports and every reader of a
store fails closed on; ``leash doctor --repair`` writes the head again from the
log, saying so.
"""
from __future__ import annotations

import json
import os

from leash.core.base.onereading import forget, kept
from leash.core.base.statefile import CachedJSON, JSONObject, StateCorrupt, locked, write_json

HEAD_NAME = "acklog.head"
STOPS_STORE = "stops"
HANDS_OFF_STORE = "hands_off"
HALTS_STORE = "halts"
APPROVALS_STORE = "approvals"
# Which store each event changes; events not listed change no state file.
STORE_OF_EVENT = {
    "stop_ack": STOPS_STORE, "resume": STOPS_STORE, "fleet_stop": STOPS_STORE, "fleet_resume": STOPS_STORE,
    "hands_off": HANDS_OFF_STORE, "release": HANDS_OFF_STORE,
    "halt_recorded": HALTS_STORE, "halt_ack": HALTS_STORE, "halt_dismiss": HALTS_STORE,
    "halt_escalate": HALTS_STORE, "halt_timeout": HALTS_STORE,
    "approval_requested": APPROVALS_STORE, "approval_allowed": APPROVALS_STORE, "approval_denied": APPROVALS_STORE,
    "approval_timeout": APPROVALS_STORE, "approval_withdrawn": APPROVALS_STORE,
}


class HeadMismatch(Exception):
    """The head names a line the log does not hold: the log was cut or rewritten."""


class HeadMissing(HeadMismatch):
    """The head is gone (or unreadable) beside a log that has lines."""


def mark(line: JSONObject) -> JSONObject:
    """The ``{"seq", "hash"}`` that identifies one log line."""
    return {"seq": line["seq"], "hash": line["hash"]}


_HEADS: dict[str, "AckHead"] = {}


def _validate(data: JSONObject) -> JSONObject:
    if not isinstance(data.get("seq"), int) or not isinstance(data.get("hash"), str):
        raise StateCorrupt(HEAD_NAME, "no seq/hash")
    stores = data.get("stores", {})
    if not isinstance(stores, dict) or not all(isinstance(v, dict) for v in stores.values()):
        raise StateCorrupt(HEAD_NAME, '"stores" is not an object of objects')
    return data


def head_of(home: str | os.PathLike) -> "AckHead":
    """The one ``AckHead`` of ``home`` in this process, so its cache of the file
    is shared by every reader (a daemon asks on every hook call)."""
    path = os.path.abspath(os.fspath(home))
    head = _HEADS.get(path)
    if head is None:
        head = _HEADS.setdefault(path, AckHead(path))
    return head


class AckHead:
    """``acklog.head`` of one home."""

    def __init__(self, home: str | os.PathLike):
        self.path = os.path.join(os.fspath(home), HEAD_NAME)
        self._cache = CachedJSON(self.path, _validate)
        self._judged = ("ack log head", self.path)  # one reading per judgement (core.base.onereading)

    def read(self) -> JSONObject | None:
        """The stored head; None when it is missing or unreadable."""
        try:
            return self._cache.get(missing=None)
        except (StateCorrupt, OSError):
            return None

    def advance(self, line: JSONObject, acklog) -> None:
        """Record ``line`` as ``acklog``'s last; call it holding the log's lock.
        A head that is gone beside older lines stays gone: writing it again
        here would accept whatever the log was made into (doctor says so)."""
        head = self.read()
        if head is None and line["seq"] > 1:
            return
        if head is None or head.get("seq") != line["seq"] - 1:
            head = scan(acklog, before=line["seq"])
        stores = dict(head.get("stores", {}))
        store = STORE_OF_EVENT.get(line.get("event", ""))
        if store is not None:
            stores[store] = mark(line)
        write_json(self.path, {"seq": line["seq"], "hash": line["hash"], "size": _size(acklog.path),
                               "stores": stores})
        self._cache.forget()
        forget(self._judged)

    def current(self, acklog) -> JSONObject | None:
        """The head, checked against the log's size and recomputed when the
        log grew without it (holding the old head's line); None for a home with
        no log lines and no head. Raises HeadMismatch when the log is shorter
        than its head, gone, rewritten, or its head is missing beside lines.
        Read once per hook judgement (``core.base.onereading``): every state
        file of the home is checked against the same end of the log."""
        return kept(self._judged, lambda: self._current(acklog))

    def _current(self, acklog) -> JSONObject | None:
        head, size = self.read(), _size(acklog.path)
        if (head is None and size is None) or (head is not None and head.get("size") == size):
            return head
        with locked(acklog.path):
            self._cache.forget()
            head, size = self.read(), _size(acklog.path)
            if head is not None and head.get("size") == size:
                return head
            if head is None:
                _refuse_headless(acklog)
                return None
            if head.get("seq", 0) > 0:
                if size is None:
                    raise HeadMismatch(f"the ack log is gone but its head names line {head['seq']}")
                if size < head.get("size", 0):
                    raise HeadMismatch(f"the ack log is shorter than its head (line {head['seq']}): it was cut")
            if size is None:
                return None
            grown = appended(acklog, head)
            if grown is None:  # not a log that merely grew past its head: all of it is read
                grown, held = scan_holding(acklog, mark(head) if head.get("seq", 0) > 0 else None)
                if not held:
                    raise HeadMismatch(f"the ack log grew but no longer holds the line its head names (line "
                                       f"{head['seq']}): it was rewritten")
            write_json(self.path, grown)
            self._cache.forget()
            return grown

    def store_head(self, store: str, acklog) -> JSONObject | None:
        """The last line of ``store``; None when the store has no line."""
        head = self.current(acklog)
        found = (head or {}).get("stores", {}).get(store)
        return {"seq": found.get("seq"), "hash": found.get("hash")} if isinstance(found, dict) else None

    def rewrite_from_log(self, acklog) -> JSONObject:
        """Replace the head with the one the log itself gives (``doctor
        --repair``: a head that was missing, or a cut the operator accepts)."""
        head = scan(acklog)
        write_json(self.path, head)
        self._cache.forget()
        forget(self._judged)
        return head


def _refuse_headless(acklog) -> None:
    """A log without its head: fine while it holds no line, tampering once it does."""
    lines = sum(1 for line in acklog.lines() if isinstance(line.get("seq"), int))
    if lines:
        raise HeadMissing(f"acklog.head is missing or unreadable beside a log of {lines} lines (deleted?): the "
                          "ack log cannot be held to its length — leash doctor")


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def appended(log, head: JSONObject) -> JSONObject | None:
    """The head of ``log`` read from the end ``head`` records on: the lines
    appended since, folded into it. None unless the line that ends at that
    size is the one ``head`` names (then ``scan`` reads the whole log)."""
    start = head.get("size")
    if not isinstance(head.get("seq"), int) or head["seq"] <= 0 or not isinstance(start, int) or start <= 0:
        return None
    last = log.line_ending_at(start)
    if last is None or last.get("seq") != head["seq"] or last.get("hash") != head.get("hash"):
        return None
    grown: JSONObject = {"seq": head["seq"], "hash": head["hash"], "size": _size(log.path),
                         "stores": dict(head.get("stores") or {})}
    for line in log.lines(start=start):
        if not isinstance(line.get("seq"), int) or not isinstance(line.get("hash"), str):
            continue
        grown["seq"], grown["hash"] = line["seq"], line["hash"]
        store = STORE_OF_EVENT.get(line.get("event", ""))
        if store is not None:
            grown["stores"][store] = mark(line)
    return grown


def scan(log, *, before: int | None = None) -> JSONObject:
    """The head computed by reading the whole of ``log`` (an ``AckLog``; the
    lines with seq < ``before``), streamed: no line is kept but the last of
    each store."""
    return scan_holding(log, None, before=before)[0]


def scan_holding(log, find: JSONObject | None, *, before: int | None = None) -> tuple[JSONObject, bool]:
    """(``scan``'s head, whether a line of the log is the one ``find`` names;
    True when ``find`` is None)."""
    head: JSONObject = {"seq": 0, "hash": "0" * 64, "size": _size(log.path), "stores": {}}
    held = find is None
    for line in log.lines():
        if not isinstance(line.get("seq"), int) or not isinstance(line.get("hash"), str):
            continue
        if before is not None and line["seq"] >= before:
            continue
        head["seq"], head["hash"] = line["seq"], line["hash"]
        held = held or mark(line) == find
        store = STORE_OF_EVENT.get(line.get("event", ""))
        if store is not None:
            head["stores"][store] = mark(line)
    return head, held


def anchor_head(command: list[str], line: JSONObject) -> None:
    """Hand the new head to ``[acklog] anchor_command`` (best effort, detached):
    ``{seq}`` and ``{hash}`` in its words are replaced, and the head is also
    given on stdin as one JSON line."""
    import subprocess

    words = [w.replace("{seq}", str(line["seq"])).replace("{hash}", str(line["hash"])) for w in command]
    try:
        child = subprocess.Popen(words, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        if child.stdin is not None:  # (always: stdin is a pipe)
            child.stdin.write((json.dumps(mark(line)) + "\n").encode())
            child.stdin.close()
    except (OSError, ValueError):
        return  # an anchor that cannot run must not stop the action; verify reports the gap
    import threading

    threading.Thread(target=child.wait, daemon=True).start()  # reap it without waiting for it
