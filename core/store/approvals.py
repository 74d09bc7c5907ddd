"""The approvals store: an agent's call waiting for an operator's answer, and
how each one ended (docs/approvals.md).

``ApprovalRegistry`` is the ``ApprovalStore`` of ``core.store.protocols`` over a
log-backed state: ``approvals.json`` (``core.logstate.LogBackedJSON``) in a
home, a ``log_state`` row (``core.store.pgstate.PgLogState``) in the shared
store. Every change is an ack-log line first (``approval_requested``,
``approval_allowed``, ``approval_denied``, ``approval_timeout``,
``approval_withdrawn``) carrying the approval id, session, tool, the one-line
summary (masked, ``core.approvals.summary``), who closed it (the line's
``source``) and by which path (``via``); the state is the fold of those lines
(``apply_approval_line``), so ``rm approvals.json`` loses nothing.

The calls (all times keyword-only ``now=``, seconds since the epoch):

* ``request(session_id, tool, tool_input, kind=, rule=, timeout_s=)`` opens one
  and returns its ``ApprovalRecord`` (``status`` "waiting", ``deadline`` =
  now + ``timeout_s``);
* ``answer(id, allow=, by=, via=, message=, note=)``: the first answer wins;
* ``close(id, outcome=, via=)``: "timeout" or "withdrawn", by leash (``via``
  "leash", or "pane" when Claude Code's own dialog was answered first);
* ``get(id)``: by id or a unique prefix; ``pending()``: waiting, oldest first;
  ``recent(count)``: closed ones, newest first (the last ``CLOSED_KEPT``).

In-process listeners (``listen(home, callback)``) are called after every
change a registry of that home makes in this process: leashd's waiting hooks
wake at once when the CLI or the console answers through it. Changes made by
other processes or hosts reach them through ``Backend.changes()``.

Failure: an unknown id (or prefix) raises ``UnknownApproval``; a prefix that
names several raises ``AmbiguousApproval`` (its message says "ambiguous");
answering or closing one already closed raises ``ApprovalClosed`` naming who
closed it, how and when; a state that can be read neither from its file or
row nor from the log raises ``ApprovalsUnreadable``. A failed append changes
nothing.
"""
from __future__ import annotations

import os
import threading

from leash.core.base.clock import iso, now_seconds
from leash.core.base.statefile import StateCorrupt
from leash.core.store.records import ApprovalRecord

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Callable

    from leash.core.state.acklog import AckLog
    from leash.core.state.logstate import LogBackedJSON
    from leash.core.store.pg import Database
    from leash.core.store.pgacklog import PgAckLog
    from leash.core.store.pgstate import PgLogState

APPROVALS_NAME = "approvals.json"
HEAD_KEY = "head"
WAITING = "waiting"
KINDS = ("permission", "ask")
# The paths an answer may come by; "pane" is Claude Code's own dialog, "leash" leash itself (a timeout).
VIAS = ("cli", "console", "serve", "pane", "leash")
REMOTE_VIA_PREFIX = "ntfy:"  # an answer tapped on a phone, by the route it came through (core.notify.answers)
OUTCOME_EVENTS = {"allowed": "approval_allowed", "denied": "approval_denied", "timeout": "approval_timeout",
                  "withdrawn": "approval_withdrawn"}
STATUS_OF_EVENT = {event: status for status, event in OUTCOME_EVENTS.items()}
ANSWER_EVENTS = frozenset({OUTCOME_EVENTS["allowed"], OUTCOME_EVENTS["denied"]})  # an operator's
LEASH_CLOSES = ("timeout", "withdrawn")  # the outcomes ``close`` gives; answers are an operator's
LEASH_VIAS = ("leash", "pane")  # how leash learnt an approval is over: itself, or the pane's own dialog
CLOSED_KEPT = 200  # closed approvals the state keeps for ``recent`` and ``get`` (the log keeps them all)
ID_BYTES = 6  # 12 hex digits: unique enough per fleet, short enough to type
SHOWN_MATCHES = 5  # ids an ambiguity error names


class ApprovalError(Exception):
    """Base of the approvals store's errors."""


class UnknownApproval(ApprovalError, LookupError):
    """No approval has this id (or an id starting with it)."""


class AmbiguousApproval(ApprovalError, LookupError):
    """A prefix that names more than one approval."""


class ApprovalClosed(ApprovalError):
    """The approval was answered or closed already; ``str()`` says by whom, how and when."""


class ApprovalsUnreadable(ApprovalError):
    """The approval state cannot be read nor rebuilt from the ack log."""


# ------------------------------------------------------------------ the fold
def empty_approvals() -> dict:
    return {"waiting": {}, "closed": []}


APPROVALS_KEYS = frozenset({"waiting", "closed"})


def validate_approvals(data: dict) -> dict:
    """The approvals' shape; a key it does not know is corruption (rebuilt from the log)."""
    unknown = sorted(set(data) - APPROVALS_KEYS - {HEAD_KEY})
    if unknown:
        raise StateCorrupt(APPROVALS_NAME, f"unknown key {unknown[0]!r}")
    waiting, closed = data.get("waiting", {}), data.get("closed", [])
    if not isinstance(waiting, dict) or not all(isinstance(record, dict) for record in waiting.values()):
        raise StateCorrupt(APPROVALS_NAME, '"waiting" is not an object of objects')
    if not isinstance(closed, list) or not all(isinstance(record, dict) for record in closed):
        raise StateCorrupt(APPROVALS_NAME, '"closed" is not a list of objects')
    return {"waiting": dict(waiting), "closed": list(closed)}


def _opened(line: dict) -> dict:
    opened = {"id": line.get("approval"), "session_id": line.get("session_id", ""), "host": line.get("host", ""),
              "tool": line.get("tool", ""), "summary": line.get("summary", ""), "detail": line.get("detail", ""),
              "kind": line.get("kind", ""), "rule": line.get("rule", ""), "requested_at": line.get("timestamp"),
              "deadline": line.get("deadline"), "status": WAITING}
    if line.get("input_sha256"):  # what an answer from afar is bound to (older lines have none)
        opened["input_sha256"] = line["input_sha256"]
    return opened


def apply_approval_line(state: dict, line: dict, now: float | None = None) -> None:
    """Fold one ack-log line into the approvals: the writer and the replay share it."""
    event, approval_id = line.get("event"), line.get("approval")
    if not isinstance(approval_id, str):
        return
    if event == "approval_requested":
        state["waiting"].setdefault(approval_id, _opened(line))
        return
    status = STATUS_OF_EVENT.get(str(event))
    record = state["waiting"].pop(approval_id, None) if status else None
    if record is None:
        return  # closed already (the first close wins), or never opened
    record.update(status=status, closed_at=line.get("timestamp"), by=line.get("source", ""),
                  via=line.get("via", ""), message=line.get("message", ""), note=line.get("note", ""))
    state["closed"].append(record)
    del state["closed"][:-CLOSED_KEPT]


APPROVAL_FOLD: dict = {"validate": validate_approvals, "apply": apply_approval_line, "empty": empty_approvals,
                       "what": "approval state", "error": ApprovalsUnreadable}


def file_state(home: str, acklog: AckLog) -> LogBackedJSON:
    """The approvals' log-backed file in ``home`` (``acklog``: its ``AckLog``)."""
    from leash.core.state.loghead import APPROVALS_STORE
    from leash.core.state.logstate import LogBackedJSON

    return LogBackedJSON(os.path.join(home, APPROVALS_NAME), APPROVALS_STORE, acklog, head_key=HEAD_KEY,
                         **APPROVAL_FOLD)


# ------------------------------------------------------------------ listeners
_listeners: dict[str, list] = {}
_listeners_mutex = threading.Lock()


def _home_key(home: str) -> str:
    return os.path.realpath(os.fspath(home))


def listen(home: str, callback: Callable[[], object]) -> None:
    """Call ``callback()`` after each change a registry of ``home`` makes in this process."""
    with _listeners_mutex:
        _listeners.setdefault(_home_key(home), []).append(callback)


def unlisten(home: str, callback: Callable[[], object]) -> None:
    with _listeners_mutex:
        found = _listeners.get(_home_key(home), [])
        if callback in found:
            found.remove(callback)


# The answers a registry of each home applied in this process: leashd's desk
# obeys an answer only when leashd itself applied it (its operator socket, its
# console's store verb), never one written into the home by another process.
_applied: dict[str, set[str]] = {}
APPLIED_KEPT = 10_000  # answers remembered per home (then forgotten all at once; their calls were answered)


def applied_here(home: str, approval_id: str) -> bool:
    """Whether this process answered approval ``approval_id`` of ``home``."""
    with _listeners_mutex:
        return approval_id in _applied.get(_home_key(home), ())


def _note_applied(home: str, approval_id: str) -> None:
    with _listeners_mutex:
        found = _applied.setdefault(_home_key(home), set())
        if len(found) >= APPLIED_KEPT:
            found.clear()
        found.add(approval_id)


def _changed(home: str) -> None:
    with _listeners_mutex:
        callbacks = list(_listeners.get(_home_key(home), ()))
    for callback in callbacks:
        callback()


# ------------------------------------------------------------------ the store
def _matches(state: dict, approval_id: str) -> list[dict]:
    """The records ``approval_id`` names: itself, else every id it begins."""
    records = list(state["waiting"].values()) + list(reversed(state["closed"]))
    exact = [record for record in records if record.get("id") == approval_id]
    if exact:
        return exact[:1]
    return [record for record in records if str(record.get("id", "")).startswith(approval_id)]


def find(state: dict, approval_id: str) -> dict:
    """The one record ``approval_id`` (an id or a unique prefix) names in ``state``."""
    if not isinstance(approval_id, str) or not approval_id.strip():
        raise UnknownApproval("an approval id is a non-empty string")
    found = _matches(state, approval_id.strip())
    if not found:
        raise UnknownApproval(f"no approval {approval_id!r}")
    if len(found) > 1:
        shown = ", ".join(str(record.get("id")) for record in found[:SHOWN_MATCHES])
        raise AmbiguousApproval(f"approval id {approval_id!r} is ambiguous: it begins {len(found)} ids ({shown})")
    return found[0]


def closed_message(record: dict) -> str:
    """Who closed ``record``, how and when, in one line."""
    if record.get("status") in LEASH_CLOSES:
        return (f"approval {record.get('id')} was closed ({record.get('status')}) by leash via {record.get('via')} "
                f"at {record.get('closed_at')}")
    return (f"approval {record.get('id')} was already {record.get('status')} by {record.get('by')} "
            f"via {record.get('via')} at {record.get('closed_at')}")


class ApprovalRegistry:
    """``ApprovalStore`` over a log-backed state (see the module's docstring)."""

    def __init__(self, state: LogBackedJSON | PgLogState, *, home: str, host: str):
        self.state, self.home, self.host = state, os.fspath(home), host

    def request(self, session_id: str, tool: str, tool_input: object = None, *, kind: str = "permission",
                rule: str = "", timeout_s: float, now: float | None = None) -> ApprovalRecord:
        from leash.core.policy.approvalsummary import detail, input_digest, one_line

        if not isinstance(session_id, str) or not session_id:
            raise ValueError("an approval needs a session id")
        if kind not in KINDS:
            raise ValueError(f"an approval's kind is one of {', '.join(KINDS)}, not {kind!r}")
        moment = now_seconds(now)
        approval_id = os.urandom(ID_BYTES).hex()
        summary = one_line(tool, tool_input)
        with self.state.writing(now=now) as data:
            self.state.record(data, "approval_requested", source="leash", session_id=session_id, reason=summary,
                              now=moment, approval=approval_id, host=self.host, tool=str(tool or ""),
                              summary=summary, detail=detail(tool, tool_input), kind=kind, rule=str(rule or ""),
                              deadline=iso(moment + float(timeout_s)), input_sha256=input_digest(tool, tool_input))
            record = dict(data["waiting"][approval_id])
        _changed(self.home)
        return ApprovalRecord.of(record)

    def answer(self, approval_id: str, *, allow: bool, by: str, via: str, message: str = "", note: str = "",
               now: float | None = None) -> ApprovalRecord:
        """An operator's answer; ``ApprovalClosed`` when another came first."""
        if via not in VIAS and not via.startswith(REMOTE_VIA_PREFIX):
            raise ValueError(f"an answer comes by one of {', '.join(VIAS)}, not {via!r}")
        event = OUTCOME_EVENTS["allowed" if allow else "denied"]
        return self._close(approval_id, event, by=by, via=via, message=message, note=note, now=now)

    def close(self, approval_id: str, outcome: str = "timeout", *, via: str = "leash",
              now: float | None = None) -> ApprovalRecord:
        """Leash closes a waiting approval: "timeout" or "withdrawn" (its
        caller went away, or, ``via`` "pane", Claude Code's dialog was answered)."""
        if outcome not in LEASH_CLOSES:
            raise ValueError(f"leash closes an approval as one of {', '.join(LEASH_CLOSES)}, not {outcome!r}")
        if via not in LEASH_VIAS:
            raise ValueError(f"leash closes an approval via one of {', '.join(LEASH_VIAS)}, not {via!r}")
        return self._close(approval_id, OUTCOME_EVENTS[outcome], by="leash", via=via, now=now)

    def _close(self, approval_id: str, event: str, *, by: str, via: str, message: str = "", note: str = "",
               now: float | None = None) -> ApprovalRecord:
        with self.state.writing(now=now) as data:
            record = find(data, approval_id)
            if record.get("status") != WAITING:
                raise ApprovalClosed(closed_message(record))
            self.state.record(data, event, source=by, session_id=record.get("session_id", ""),
                              reason=record.get("summary", ""), now=now, approval=record["id"],
                              tool=record.get("tool", ""), summary=record.get("summary", ""), via=via,
                              message=str(message or ""), note=str(note or ""))
            closed = dict(data["closed"][-1])
        if event in ANSWER_EVENTS:
            _note_applied(self.home, record["id"])
        _changed(self.home)
        return ApprovalRecord.of(closed)

    def get(self, approval_id: str) -> ApprovalRecord:
        return ApprovalRecord.of(dict(find(self.state.snapshot(), approval_id)))

    def pending(self, *, now: float | None = None) -> list[ApprovalRecord]:
        waiting = self.state.snapshot(now=now)["waiting"].values()
        return [ApprovalRecord.of(dict(record)) for record in
                sorted(waiting, key=lambda record: (str(record.get("requested_at")), str(record.get("id"))))]

    def recent(self, count: int = 20) -> list[ApprovalRecord]:
        closed = self.state.snapshot()["closed"]
        return [ApprovalRecord.of(dict(record)) for record in reversed(closed[-count:] if count > 0 else [])]


def file_approvals(home: str, acklog: AckLog) -> ApprovalRegistry:
    """The file backend's approvals (``acklog``: the home's ``AckLog``)."""
    from leash.core.base.config import host_name

    return ApprovalRegistry(file_state(home, acklog), home=home, host=host_name(home))


def pg_approvals(db: Database, log: PgAckLog, home: str, host: str) -> ApprovalRegistry:
    """The shared store's approvals: one ``log_state`` row, written with its line in one transaction."""
    from leash.core.state.loghead import APPROVALS_STORE
    from leash.core.store.pgstate import PgLogState

    return ApprovalRegistry(PgLogState(log, APPROVALS_STORE, **APPROVAL_FOLD), home=home, host=host)
