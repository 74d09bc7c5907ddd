"""The warrants' and kennels' records (``core.store.protocols_work``): a
death warrant, the dog that works it and the state it works from, an
operator's pardon waiting for it, the listing of them all, a kennel's
heartbeat and the worker that claims warrants.

Records as ``core.store.records`` makes them (plain, slotted, built with
``of(dict)``); failure is theirs: ``of`` never raises on a missing key.
"""
from __future__ import annotations

from leash.core.store.records import Record

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any


class WarrantRecord(Record):
    """A death warrant (``warrants/<id>.json``)."""

    FIELDS = ("id", "target", "target_id", "reason", "requester", "filed_at")
    __slots__ = FIELDS
    id: str
    target: str
    target_id: str | None
    reason: str
    requester: str
    filed_at: str


class DogRecord(Record):
    """A warrant a dog works or has finished (``dogs/active/<id>.json``,
    ``dogs/completed``): the warrant it carries, where its state machine is,
    and, once complete, its outcome and epitaph."""

    FIELDS = ("id", "warrant", "state", "attempt", "started_at", "last_message_at", "next_timeout", "outcome",
              "epitaph", "completed_at")
    __slots__ = FIELDS
    id: str
    warrant: dict
    state: str
    attempt: int
    started_at: str | None
    last_message_at: str | None
    next_timeout: str | None
    outcome: str | None
    epitaph: str | None
    completed_at: str | None


class PardonRequest(Record):
    """An operator's pardon waiting for the dog that works a warrant: who
    asked (``source``), why (``reason``) and when (``at``, ISO-8601 UTC)."""

    FIELDS = ("source", "reason", "at")
    __slots__ = FIELDS
    source: str | None
    reason: str | None
    at: str | None


class DogState(Record):
    """Where the dog working a warrant is (``Claim.state``), the record it
    resumes from: the warrant it carries (``warrant``, as filed), its state
    machine's ``state`` ("received", "interrogating", "evaluating",
    "executing", "pardoned", "complete"), the ``attempt`` of ``attempts``,
    the worker holding it (``kennel``), what it sent and read of the pane
    (``last_message_at``, ``next_timeout``, ``timeout_seconds``, ``baseline``,
    ``history_seen``, ``before_tail`` digests, ``trimmed``, ``delivery`` and
    the ``undelivered`` attempts) and how it ended (``blocked_by``,
    ``final_screen``, ``kill_sent``, ``kill_error``, ``target_name``,
    ``error``, ``wait_seconds``; once sealed ``outcome``, ``epitaph``,
    ``completed_at``, ``log_source``, ``log_reason``, ``pardoned_by``).

    Unlike other records it changes: the dog sets its fields and its claim
    ``save()``s it. ``as_dict()`` is the stored dict: the keys it was read
    with, in their order, then each field set since (a field never set is
    not stored); ``update(**fields)`` takes a dict the warrant queue wrote."""

    FIELDS = ("id", "warrant", "state", "attempt", "attempts", "started_at", "kennel", "last_message_at",
              "next_timeout", "timeout_seconds", "baseline", "history_seen", "before_tail", "trimmed", "delivery",
              "undelivered", "wait_seconds", "blocked_by", "final_screen", "kill_sent", "kill_error", "target_name",
              "error", "outcome", "epitaph", "completed_at", "log_source", "log_reason", "pardoned_by")
    __slots__ = FIELDS
    id: str
    warrant: dict
    state: str
    attempt: int
    attempts: int | None
    started_at: str | None
    kennel: dict | None
    last_message_at: str | None
    next_timeout: str | None
    timeout_seconds: float | None
    baseline: int | None
    history_seen: int | None
    before_tail: list[str] | None
    trimmed: bool | None
    delivery: dict | None
    undelivered: list[dict] | None
    wait_seconds: float | None
    blocked_by: str | None
    final_screen: str | None
    kill_sent: bool | None
    kill_error: str | None
    target_name: str | None
    error: str | None
    outcome: str | None
    epitaph: str | None
    completed_at: str | None
    log_source: str | None
    log_reason: str | None
    pardoned_by: str | None

    def as_dict(self) -> dict[str, Any]:
        stored = super().as_dict()
        for field in self.FIELDS:
            if field not in stored and getattr(self, field) is not None:
                stored[field] = getattr(self, field)
        return stored

    def update(self, **fields: Any) -> None:
        """Set each of ``fields``: a field by its name, any other key kept in ``extra``."""
        for key, value in fields.items():
            if key in self.FIELDS:
                setattr(self, key, value)
            else:
                self.extra[key] = value
                self._given += (key,) if key not in self._given else ()


def found_warrant(kind: str, data: dict) -> tuple[str, WarrantRecord | DogRecord]:
    """(kind, record) of a warrant found where ``kind`` says: a pending one is
    its ``WarrantRecord``; an active or completed one, its dog's ``DogRecord``."""
    return kind, (WarrantRecord.of(data) if kind == "pending" else DogRecord.of(data))


class HeartbeatRecord(Record):
    """A kennel's heartbeat (``kennel.json``)."""

    FIELDS = ("pid", "host", "started_at", "heartbeat_at", "dogs", "working", "stopped_at")
    __slots__ = FIELDS
    pid: int
    host: str
    started_at: str
    heartbeat_at: str
    dogs: int
    working: list
    stopped_at: str | None


class KennelOwner(Record):
    """The worker that claims warrants: its kennel's process (``pid``) on
    ``host``; a dog's state names it under ``kennel`` while it is held."""

    FIELDS = ("pid", "host")
    __slots__ = FIELDS
    pid: int
    host: str


class UnreadableWarrant(Record):
    """A warrant or dog state still in place that no dog can work: its ``file``
    (a path under the home) and what is wrong with it (``problem``)."""

    FIELDS = ("file", "problem")
    __slots__ = FIELDS
    file: str
    problem: str


class WarrantListing(Record):
    """Every warrant (``WarrantStore.listing``): ``pending`` ones, the dogs
    working (``active``) and finished (``completed``) ones, the files moved
    aside as corrupt (``quarantined``, paths under the home) and those still
    in place that no dog can work (``unreadable``). ``as_dict()`` is what
    ``leash warrants list --json`` prints."""

    FIELDS = ("pending", "active", "completed", "quarantined", "unreadable")
    __slots__ = FIELDS
    NESTED = {"pending": WarrantRecord, "active": DogRecord, "completed": DogRecord, "unreadable": UnreadableWarrant}
    pending: list[WarrantRecord]
    active: list[DogRecord]
    completed: list[DogRecord]
    quarantined: list[str]
    unreadable: list[UnreadableWarrant]
