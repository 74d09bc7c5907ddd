"""What the halt decision (``core.policy.halts.decision``) hands a halt store
and answers its callers: records, not bare dicts.

* ``NewHalt`` — a halt the decision has made, every text masked, with the
  ack-log lines (``HaltLine``) that record it; a store inserts it as it is.
* ``Acknowledgement`` — what an allowed acknowledgement changes on a halt,
  with its line; ``Settled`` — what the store saw when it applied one.
* ``CheckResult`` and ``HaltReason`` — a check's answer; ``as_json()`` is
  the seed's ``CheckHaltConditionsOutput``, byte for byte as the hook prints it.
* ``HaltQuery`` — a listing's filter, read from the seed's
  ``GetSessionHaltsInput``.

Plain slotted classes: the hook path imports this module on every call, and
neither ``dataclasses`` nor ``typing`` (milliseconds each).

Failure: ``HaltInputError`` (``core.policy.halts.context``) for input that
is not valid; ``HaltRefused`` for a request the halt's state forbids;
``HaltStoreUnavailable`` is what a store raises when it cannot be read or
written (a check then answers the fail-safe halt).
"""
from __future__ import annotations

import os

from leash.core.policy.halts.context import HaltInputError as HaltInputError

HALT_TYPES = ("code_safety", "scope", "environment", "execution", "security", "uncertainty")
SEVERITIES = ("low", "medium", "high", "critical")


class HaltRefused(Exception):
    """The request is understood but the halt's state does not allow it."""


class HaltStoreUnavailable(Exception):
    """The halt store cannot be opened, read or written (the gate then fails closed)."""


def new_id() -> str:
    """A random (version 4) UUID as text, without importing uuid on the hook path."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class HaltLine:
    """One ack-log line about a halt: its event, who caused it, why, and the
    keys it carries besides the ones every halt line has (``ledger.line_fields``)."""

    __slots__ = ("event", "source", "reason", "fields")

    def __init__(self, event: str, source: str, reason: str, fields: dict | None = None):
        self.event, self.source, self.reason, self.fields = event, source, reason, fields or {}


class NewHalt:
    """A halt about to be stored: its column values (texts masked, ``context``
    a masked dict, ``escalate_at`` in seconds or None), whether it escalates at
    once, and its ack-log lines."""

    __slots__ = ("id", "session_id", "task_id", "halt_type", "severity", "description", "context", "resolution",
                 "attempt_count", "previous_error", "condition_name", "auto_recorded", "escalate", "escalate_at",
                 "lines")

    def __init__(self, *, id: str, session_id: str, task_id: str | None, halt_type: str, severity: str,  # noqa: A002
                 description: str, context: dict | None, resolution: str | None, attempt_count: int | None,
                 previous_error: str | None, condition_name: str | None, auto_recorded: bool, escalate: bool,
                 escalate_at: float | None, lines: list[HaltLine]):
        self.id, self.session_id, self.task_id, self.halt_type = id, session_id, task_id, halt_type
        self.severity, self.description, self.context, self.resolution = severity, description, context, resolution
        self.attempt_count, self.previous_error, self.condition_name = attempt_count, previous_error, condition_name
        self.auto_recorded, self.escalate, self.escalate_at, self.lines = auto_recorded, escalate, escalate_at, lines

    def row(self) -> dict:
        """The halt as a stored row names it (what its log lines read)."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "lines"}


class Acknowledgement:
    """What an allowed acknowledgement writes on its halt (``by`` and ``notes``
    masked) and the line that records it."""

    __slots__ = ("resolution", "by", "notes", "line")

    def __init__(self, resolution: str, by: str, notes: str | None, line: HaltLine):
        self.resolution, self.by, self.notes, self.line = resolution, by, notes, line


class Settled:
    """What a store saw applying an acknowledgement: the halt's row as it was,
    its session's state after, and how many of the session's halts remain unacknowledged."""

    __slots__ = ("row", "state", "remaining")

    def __init__(self, row, state: str, remaining: int):
        self.row, self.state, self.remaining = row, state, remaining


class HaltReason:
    """One condition that fired, as a check's answer lists it."""

    __slots__ = ("halt_type", "condition_name", "severity", "description", "auto_recorded", "halt_id")

    def __init__(self, halt_type: str, condition_name: str, severity: str, description: str, *,
                 auto_recorded: bool = False, halt_id: str | None = None):
        self.halt_type, self.condition_name, self.severity = halt_type, condition_name, severity
        self.description, self.auto_recorded, self.halt_id = description, auto_recorded, halt_id

    @classmethod
    def of(cls, data: dict) -> HaltReason:
        """A reason as ``as_json`` wrote it."""
        return cls(data["halt_type"], data["condition_name"], data["severity"], data["description"],
                   auto_recorded=bool(data.get("auto_recorded")), halt_id=data.get("halt_id"))

    def as_json(self) -> dict:
        reason = {"halt_type": self.halt_type, "condition_name": self.condition_name, "severity": self.severity,
                  "description": self.description, "auto_recorded": self.auto_recorded}
        if self.halt_id is not None:
            reason["halt_id"] = self.halt_id
        return reason


class CheckResult:
    """A check's answer: should the call halt, why, how bad, what to do."""

    __slots__ = ("should_halt", "reasons", "highest_severity", "recommended_action", "annotations")

    def __init__(self, should_halt: bool, reasons: list[HaltReason], highest_severity: str,
                 recommended_action: str, annotations: dict[str, list[str]] | None = None):
        self.should_halt, self.reasons = should_halt, reasons
        self.highest_severity, self.recommended_action = highest_severity, recommended_action
        self.annotations = annotations or {}

    @classmethod
    def of(cls, data: dict) -> CheckResult:
        """A result as ``as_json`` wrote it (what leashd's store verb sends)."""
        return cls(bool(data["should_halt"]), [HaltReason.of(reason) for reason in data["halt_reasons"]],
                   data["highest_severity"], data["recommended_action"], data.get("context_annotations"))

    def as_json(self) -> dict:
        """The seed's ``CheckHaltConditionsOutput`` (``context_annotations`` only when there are some)."""
        output = {"should_halt": self.should_halt, "halt_reasons": [r.as_json() for r in self.reasons],
                  "highest_severity": self.highest_severity, "recommended_action": self.recommended_action}
        if self.annotations:
            output["context_annotations"] = self.annotations
        return output


class HaltQuery:
    """A listing's filter: one session or every one (``session`` None), what
    waits on a human (``pending``) or what is unacknowledged (unless
    ``include_acknowledged``), of one type or severity, a page of it."""

    __slots__ = ("session", "pending", "include_acknowledged", "halt_type", "severity", "limit", "offset")

    def __init__(self, *, session: str | None = None, pending: bool = False, include_acknowledged: bool = False,
                 halt_type: str | None = None, severity: str | None = None, limit: int = 50, offset: int = 0):
        self.session, self.pending, self.include_acknowledged = session, pending, include_acknowledged
        self.halt_type, self.severity, self.limit, self.offset = halt_type, severity, limit, offset

    @classmethod
    def of(cls, data: object) -> HaltQuery:
        """The query of a valid ``GetSessionHaltsInput``; HaltInputError otherwise."""
        if not isinstance(data, dict):
            raise HaltInputError("input must be a JSON object")
        session = data.get("session_token")
        if session is not None and (not isinstance(session, str) or not session):
            raise HaltInputError("session_token must be a non-empty string")
        limit, offset = data.get("limit", 50), data.get("offset", 0)
        for key, value in (("limit", limit), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise HaltInputError(f"{key} must be a whole number >= 0")
        if data.get("halt_type") is not None and data["halt_type"] not in HALT_TYPES:
            raise HaltInputError(f"halt_type must be one of {', '.join(HALT_TYPES)}")
        if data.get("severity") is not None and data["severity"] not in SEVERITIES:
            raise HaltInputError(f"severity must be one of {', '.join(SEVERITIES)}")
        return cls(session=session, pending=bool(data.get("pending")),
                   include_acknowledged=bool(data.get("include_acknowledged")),
                   halt_type=data.get("halt_type") or None, severity=data.get("severity") or None,
                   limit=limit, offset=offset)

    def as_input(self) -> dict:
        """The seed's ``GetSessionHaltsInput`` that ``of`` reads back as this query."""
        data: dict = {"pending": self.pending, "include_acknowledged": self.include_acknowledged,
                      "limit": self.limit, "offset": self.offset}
        for key, value in (("session_token", self.session), ("halt_type", self.halt_type),
                           ("severity", self.severity)):
            if value is not None:
                data[key] = value
        return data
