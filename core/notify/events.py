"""What a notification is about: one ``Event`` per thing a human should know.

Kinds (``NOTIFY_EVENTS`` of ``core.config``): ``approval`` (an approval
waits for an answer), ``waiting`` (a session has waited for input longer than
``[notify] waiting_after_s``), ``halt`` (a pending halt), ``warrant`` (one
finished: executed, undelivered, pardoned), ``breaker`` (a restart-loop
breaker tripped), ``offline`` (the shared store, or another host's leashd,
gone), ``budget`` (a spend cap's warn point crossed, a cap reached and its
sessions held, a meter silent while its session works); ``summary`` and ``test`` are the notifier's own.

An event's ``id`` names the occurrence, so a route sends it once: a halt's id,
an approval's id, a session's wait by the time it began. A *lasting* event
(a pending halt, a waiting approval or session, a host gone) is offered again
on every read while it holds; when it is no longer offered it is over, and
what was queued for it is dropped. ``approval`` and ``halt`` events are
*reminded*: sent again after ``[notify] remind_after_s`` while they last.

Every text field is masked (``core.halts.secrets.mask``: agents' commands may
hold secrets) and escaped (``core.text.printable``: one line, no control
characters) and bounded, once, when the event is made: whatever a route does
with it, it never sees the raw text.

Approvals come from the approvals store (``core.approvals.store``: its
``pending()`` records) or another ``ApprovalSource`` (``waiting(now=)``): each
has ``id``, ``session_id``, ``tool``, ``summary``, ``requested_at`` (seconds or
ISO-8601) and ``host``; ``approval_event`` turns one into an event.

Failure: none; the builders take what a store returns as it is (a missing
field is empty text, a time that does not parse is the reading's time).
"""
from __future__ import annotations

from typing import Iterable, Protocol

from leash.core.base.clock import human_duration, iso, parse_iso
from leash.core.base.config import SEVERITY_ORDER
from leash.core.base.text import printable

TITLE_LIMIT = 120  # characters: a phone's notification shows about this much
BODY_LIMIT = 1000
FIELD_LIMIT = 200  # session, host, id
MASK_WINDOW = 4  # mask this many times the limit: what is cut later is never shown, a secret inside it is
REMINDED_KINDS = frozenset({"approval", "halt"})
KIND_SEVERITY = {"approval": "high", "waiting": "medium", "breaker": "high", "offline": "critical", "test": "low",
                 "budget": "high"}
WARRANT_OUTCOMES = {"warrant_executed": ("executed", "high"), "warrant_undelivered": ("undelivered", "high"),
                    "warrant_pardoned": ("pardoned", "low")}


def clean(text: object, limit: int) -> str:
    """``text`` masked, escaped and at most ``limit`` characters."""
    from leash.core.base.secrets import mask

    raw = text if isinstance(text, str) else ("" if text is None else str(text))
    return printable(mask(raw[:limit * MASK_WINDOW]), limit=limit)


def severity_rank(severity: str) -> int:
    """low 0 < medium 1 < high 2 < critical 3; anything else ranks as medium."""
    return SEVERITY_ORDER.index(severity) if severity in SEVERITY_ORDER else 1


def moment(value: object, default: float) -> float:
    """Seconds since the epoch from a number or an ISO-8601 text (``default`` otherwise)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return parse_iso(value)
    except ValueError:
        return default


class Event:
    """One thing to tell (see the module's docstring); text fields are clean."""

    __slots__ = ("kind", "id", "title", "body", "session", "host", "severity", "time", "lasting")

    def __init__(self, kind: str, event_id: str, *, title: object, body: object = "", session: object = "",
                 host: object = "", severity: str = "", time: float, lasting: bool = False):
        self.kind = kind
        self.id = clean(event_id, FIELD_LIMIT)
        self.title = clean(title, TITLE_LIMIT)
        self.body = clean(body, BODY_LIMIT)
        self.session = clean(session, FIELD_LIMIT)
        self.host = clean(host, FIELD_LIMIT)
        self.severity = severity if severity in SEVERITY_ORDER else KIND_SEVERITY.get(kind, "medium")
        self.time = time
        self.lasting = lasting

    @property
    def reminded(self) -> bool:
        return self.kind in REMINDED_KINDS

    def payload(self) -> dict[str, str]:
        """The webhook's JSON object."""
        return {"event": self.kind, "title": self.title, "body": self.body, "session": self.session,
                "host": self.host, "severity": self.severity, "id": self.id, "time": iso(self.time)}

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, {self.id!r}, {self.title!r})"


class ApprovalSource(Protocol):
    """What the approvals store offers the notifier."""

    def waiting(self, *, now: float) -> Iterable[dict]:
        """The approvals waiting for an answer (see the module's docstring)."""


# ---------------------------------------------------------------- builders
def halt_event(halt, *, host: str, now: float) -> Event:
    """A pending halt (a ``HaltRecord`` or its dict)."""
    what = halt.get("condition_name") or halt.get("halt_type") or "halt"
    session = halt.get("session_id") or ""
    return Event("halt", f"halt:{halt.get('halt_id')}", title=f"{halt.get('severity')} halt: {what} in {session}",
                 body=halt.get("description") or "", session=session, host=host, severity=halt.get("severity") or "",
                 time=moment(halt.get("triggered_at"), now), lasting=True)


def waiting_event(session_id: str, record, *, host: str, since: float, now: float) -> Event:
    """A session waiting for input, or for approval in Claude Code's own dialog, since ``since``."""
    name = record.get("tmux_session") or session_id
    what = "approval" if record.get("status") == "waiting for approval" else "input"
    facts = [f"session {session_id}", f"waiting for {what} for {human_duration(now - since)}"]
    facts += [f"{label} {record.get(key)}" for key, label in (("cwd", "in"), ("last_tool", "last tool"))
              if record.get(key)]
    return Event("waiting", f"waiting:{session_id}:{iso(since)}", title=f"{name} is waiting for {what}",
                 body="; ".join(facts), session=session_id, host=host, time=since, lasting=True)


def approval_event(approval: dict, *, host: str, now: float) -> Event:
    """An approval waiting for an answer (from an ``ApprovalSource``)."""
    session = approval.get("session_id") or ""
    tool = approval.get("tool") or "a tool call"
    return Event("approval", f"approval:{approval.get('id')}", title=f"{session} asks to run {tool}",
                 body=approval.get("summary") or "", session=session, host=approval.get("host") or host,
                 time=moment(approval.get("requested_at"), now), lasting=True)


def warrant_event(line, *, host: str, now: float) -> Event | None:
    """A finished warrant from its ack-log line (None for other lines)."""
    outcome, severity = WARRANT_OUTCOMES.get(line.get("event") or "", ("", ""))
    if not outcome:
        return None
    target = line.get("session_id") or ""
    return Event("warrant", f"warrant:{line.get('warrant_id')}:{outcome}", title=f"warrant on {target}: {outcome}",
                 body=line.get("reason") or "", session=target, host=_host_in(target) or host, severity=severity,
                 time=moment(line.get("timestamp"), now))


def breaker_event(line, *, host: str, now: float) -> Event:
    """A restart-loop breaker that tripped, from its ``loop_tripped`` line."""
    name = line.get("name") or "gateway"
    return Event("breaker", f"breaker:{line.get('seq')}:{str(line.get('hash') or '')[:12]}",
                 title=f"restart-loop breaker {name} tripped", body=line.get("reason") or "", host=host,
                 time=moment(line.get("timestamp"), now))


BUDGET_SEVERITY = {"budget_hold": "critical", "budget_warn": "high", "budget_stale": "high"}


def budget_event(line, *, host: str, now: float) -> Event | None:
    """A spend cap's news from its ack-log line (``core.views.metering``); None for other lines."""
    event = line.get("event") or ""
    if event not in BUDGET_SEVERITY:
        return None
    cap, bucket = line.get("cap") or "?", line.get("bucket") or "?"
    titles = {"budget_hold": f"spend cap {cap} reached: {bucket} held",
              "budget_warn": f"spend cap {cap} at {float(line.get('point') or 0):.0%} ({bucket})",
              "budget_stale": f"spend cap {cap}: {line.get('session_id') or '?'}'s meter is silent"}
    return Event("budget", f"budget:{line.get('seq')}:{str(line.get('hash') or '')[:12]}", title=titles[event],
                 body=line.get("reason") or "", session=line.get("session_id") or "", host=host,
                 severity=BUDGET_SEVERITY[event], time=moment(line.get("timestamp"), now))


def store_offline_event(*, host: str, down_seconds: float, lost_at: float, now: float) -> Event:
    return Event("offline", f"offline:store:{host}:{lost_at:.3f}", title=f"{host}: the shared store is unreachable",
                 body=f"leashd on {host} has not reached the shared store for {human_duration(down_seconds)}",
                 host=host, time=now - down_seconds, lasting=True)


def host_offline_event(beat, *, since: float, now: float) -> Event:
    """Another host's leashd whose kennel heartbeat stopped at ``since``."""
    host = beat.get("host") or "?"
    return Event("offline", f"offline:host:{host}:{beat.get('started_at')}", title=f"leashd on {host} is gone",
                 body=f"its last heartbeat was {human_duration(now - since)} ago (running since "
                      f"{beat.get('started_at')})", host=host, time=since, lasting=True)


def summary_event(events: list[Event], *, host: str, now: float, together: bool = False) -> Event:
    """One message for events a route's rate limit did not let through one by
    one (``together``: a digest of events that came at once)."""
    import hashlib

    digest = hashlib.sha256("\n".join(sorted(e.id for e in events)).encode()).hexdigest()[:16]
    worst = max((e.severity for e in events), key=severity_rank, default="medium")
    kinds: dict[str, int] = {}
    for event in events:
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
    counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    title = f"{len(events)} at once: {counted}" if together else f"{len(events)} more notifications ({counted})"
    return Event("summary", f"summary:{digest}", title=title, body="; ".join(e.title for e in events), host=host,
                 severity=worst, time=now)


def probe_event(*, host: str, now: float) -> Event:
    return Event("test", f"test:{now:.6f}", title="leash: test notification",
                 body=f"sent by `leash notify test` from {host}", host=host, time=now)


def _host_in(name: str) -> str:
    """The host of a ``HOST/NAME`` target in a shared store ("" for a bare name)."""
    return name.split("/", 1)[0] if "/" in name else ""
