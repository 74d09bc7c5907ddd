"""Typed records the stores hand out, and the ``Record`` they are made of: a
stop, a lock, a session, a restart-loop breaker and its limits, an approval, a
log line (and the lines of a read) and a change. The halts' records are
``core.store.records_halts``, the warrants' and kennels'
``core.store.records_warrants``, the budget's ``core.store.records_budget``.

Plain classes with ``__slots__`` (no ``dataclasses``, ``inspect`` or
``TypedDict``: this module is on the hook path, where each import is paid on
every tool call). Each record is built from the stored dict with ``of(dict)``
and gives it back unchanged with ``as_dict()``, so file formats never depend on
these classes. Keys a record does not name are kept in ``extra``; a field
``NESTED`` names holds records (or a list of them), made of its dicts and
given back as them. A record is read by its attributes only: it is not a
mapping (no ``get``, no ``[key]``). ``KINDS`` names every record class, for
what carries records by name (leashd's tagged JSON, ``core.store.remote``).

Each field is annotated with the type its store writes, so the type checker
reads a record's fields as they are. Failure: ``of`` never raises on a missing
key (the field is None); checking a stored dict's shape is the store's job,
not the record's.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing is for the type checker only: this module is on the hook path
if TYPE_CHECKING:
    from typing import Any, Iterable, TypeVar, overload

    _R = TypeVar("_R", bound="Record")


KINDS: dict[str, type[Record]] = {}  # every record class by its name (what tagged JSON names)


class Record:
    """Fields named by ``__slots__`` (besides ``extra``), compared by value.
    A record is read by its attributes (a key it does not name: ``extra``);
    ``as_dict()`` is the stored dict, for whatever formats or stores it."""

    __slots__ = ("extra", "_given")
    FIELDS: tuple[str, ...] = ()
    NESTED: dict[str, type[Record]] = {}  # a field holding a record (or a list of them), stored as its dict(s)

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        KINDS[cls.__name__] = cls

    def __init__(self, **values: Any):
        self._given = tuple(values)  # the stored keys, in their order: as_dict gives back exactly these
        for field in self.FIELDS:
            object.__setattr__(self, field, values.pop(field, None))
        for field, kind in self.NESTED.items():
            object.__setattr__(self, field, _nested(kind, getattr(self, field)))
        self.extra = values

    if TYPE_CHECKING:  # a stored dict gives a record, None gives None
        @overload
        @classmethod
        def of(cls: type[_R], data: dict, **more: object) -> _R: ...

        @overload
        @classmethod
        def of(cls: type[_R], data: None, **more: object) -> None: ...

        @overload
        @classmethod
        def of(cls: type[_R], data: dict | None, **more: object) -> _R | None: ...

    @classmethod
    def of(cls: type[_R], data: dict | None, **more: object) -> _R | None:
        """The record of a stored dict (None stays None); ``more`` sets fields
        the dict is filed under (a stop's ``key``) without adding them to it."""
        if data is None:
            return None
        record = cls(**data)
        for field, value in more.items():  # what the entry is filed under: named, but not stored in it
            object.__setattr__(record, field, value)
        return record

    def as_dict(self) -> dict[str, Any]:
        nested = self.NESTED
        return {key: (_stored(getattr(self, key)) if key in nested else getattr(self, key)) if key in self.FIELDS
                else self.extra[key] for key in self._given}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.as_dict() == self.as_dict() and \
            all(getattr(other, f) == getattr(self, f) for f in self.FIELDS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({shown})"


def _nested(kind: type[Record], value: Any) -> Any:
    """A ``NESTED`` field's value: its stored dict (or each of a list) as a ``kind``."""
    if isinstance(value, dict):
        return kind.of(value)
    if isinstance(value, list):
        return [kind.of(item) if isinstance(item, dict) else item for item in value]
    return value


def _stored(value: Any) -> Any:
    """A ``NESTED`` field's value as stored: its record (or each of a list) as a dict."""
    if isinstance(value, Record):
        return value.as_dict()
    if isinstance(value, list):
        return [item.as_dict() if isinstance(item, Record) else item for item in value]
    return value


class StopRecord(Record):
    """A stop on a session (``key`` its id) or on the fleet (``key`` "*")."""

    FIELDS = ("key", "stopped_at", "source", "reason", "tmux_session_id", "entity")
    __slots__ = FIELDS
    key: str
    stopped_at: str
    source: str
    reason: str
    tmux_session_id: str | None
    entity: str | None


class LockRecord(Record):
    """A hands-off lock on an entity (a name or ``path:<glob>``)."""

    FIELDS = ("entity", "locked_at", "expires_at", "reason", "source", "session_id", "tmux_session_id")
    __slots__ = FIELDS
    entity: str
    locked_at: str
    expires_at: str
    reason: str
    source: str
    session_id: str | None
    tmux_session_id: str | None


class SessionRecord(Record):
    """An agent session the hooks have seen."""

    FIELDS = ("session_id", "tmux_session", "tmux_session_id", "tmux_pane", "entity", "cwd", "last_seen",
              "last_tool", "status", "status_since", "parent", "parent_by", "agent", "cli", "transcript_path", "host",
              "wired", "agent_process")
    __slots__ = FIELDS
    session_id: str
    tmux_session: str | None
    tmux_session_id: str | None
    tmux_pane: str | None
    entity: str | None
    cwd: str | None
    last_seen: str
    last_tool: str | None
    status: str | None
    status_since: str | None
    parent: str | None
    parent_by: str | None
    agent: str | None
    cli: str | None
    transcript_path: str | None
    host: str | None
    wired: str | None  # the hooks wired when the session was last seen (words)
    agent_process: dict | None  # the agent CLI's process that ran the hooks (``core.base.agentproc``)


class BreakerRecord(Record):
    """A restart-loop breaker: its boots and the verdict."""

    FIELDS = ("name", "boots", "in_loop", "max_restarts", "window_seconds", "max_gap_seconds", "tripped")
    __slots__ = FIELDS
    name: str
    boots: list
    in_loop: int
    max_restarts: int
    window_seconds: float
    max_gap_seconds: float
    tripped: bool

class LoopLimits(Record):
    """A restart-loop breaker's limits as config.toml's ``[loop.NAME]`` sets
    them (only the keys it sets; ``loop_limits`` reads the table once):
    ``max_restarts`` boots in ``window_seconds`` trip it, boots further apart
    than ``max_gap_seconds`` (0: any) are separate runs."""

    FIELDS = ("max_restarts", "window_seconds", "max_gap_seconds")
    __slots__ = FIELDS
    max_restarts: int | None
    window_seconds: float | None
    max_gap_seconds: float | None


def loop_limits(config: dict) -> dict[str, LoopLimits]:
    """Every breaker's ``[loop.NAME]`` limits in a loaded config.toml, by name."""
    return {name: LoopLimits.of(dict(limits)) for name, limits in (config.get("loop") or {}).items()}


class ApprovalRecord(Record):
    """An agent's call waiting for an operator's answer, or how it ended
    (``core.approvals.store``). ``status``: "waiting", "allowed", "denied",
    "timeout" or "withdrawn"; ``kind``: "permission" (Claude Code's
    PermissionRequest) or "ask" (an ``[approvals] ask`` rule, named in
    ``rule``). Times are ISO-8601 UTC; ``by`` and ``via`` say who closed it
    and by which path (cli, console, serve, pane, leash)."""

    FIELDS = ("id", "session_id", "host", "tool", "summary", "detail", "kind", "rule", "requested_at", "deadline",
              "status", "closed_at", "by", "via", "message", "note", "input_sha256")
    __slots__ = FIELDS
    id: str
    session_id: str
    host: str
    tool: str
    summary: str
    detail: str
    kind: str
    rule: str
    requested_at: str
    deadline: str
    status: str
    closed_at: str | None
    by: str | None
    via: str | None
    message: str | None
    note: str | None
    input_sha256: str | None  # what an answer from afar is bound to (older approvals have none)


class LogLine(Record):
    """One ack-log line."""

    FIELDS = ("timestamp", "event", "source", "session_id", "reason", "seq", "prev", "hash")
    __slots__ = FIELDS
    timestamp: str
    event: str
    source: str
    session_id: str
    reason: str
    seq: int | None
    prev: str | None
    hash: str | None


class ChainAnchor(Record):
    """A head of the ack log written down outside the home (``[acklog]
    anchor_command``, ``leash log verify --anchor SEQ:HASH``): line ``seq`` and
    its ``hash``, which the log must still hold."""

    FIELDS = ("seq", "hash")
    __slots__ = FIELDS
    seq: int
    hash: str | None


class LogLines(list[LogLine]):
    """Lines read from the ack log (``LogLine``s, oldest first) and what the
    read had to skip: ``torn_bytes`` (a last line without its newline) and
    ``unreadable_lines`` (complete lines that are not log lines)."""

    def __init__(self, lines: Iterable[LogLine] = (), *, torn_bytes: int = 0, unreadable_lines: int = 0):
        super().__init__(lines)
        self.torn_bytes = torn_bytes
        self.unreadable_lines = unreadable_lines


class Change:
    """Something changed in ``store`` (``key`` names what, or None for "re-read it")."""

    __slots__ = ("store", "key")

    def __init__(self, store: str, key: str | None = None):
        self.store = store
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and (other.store, other.key) == (self.store, self.key)

    def __hash__(self) -> int:
        return hash((self.store, self.key))

    def __repr__(self) -> str:
        return f"Change({self.store!r}, {self.key!r})"


class StopState:
    """The whole stop state in one read: ``sessions`` (key -> ``StopRecord``),
    ``fleet`` (a ``StopRecord`` or None) and ``by_tmux_id`` (the tmux session
    id a stop was bound to when filed -> its key), so a renamed session stays
    stopped."""

    __slots__ = ("sessions", "fleet", "by_tmux_id")

    def __init__(self, sessions: dict, fleet: "StopRecord | None" = None, by_tmux_id: dict | None = None):
        self.sessions = sessions
        self.fleet = fleet
        self.by_tmux_id = by_tmux_id or {}

    @classmethod
    def of(cls, indexed: dict) -> "StopState":
        """The state of an indexed stored stop state (``core.stop.index_stops``)."""
        from leash.core.state.acklog import FLEET

        return cls({key: StopRecord.of(record, key=key) for key, record in sorted(indexed["sessions"].items())},
                   StopRecord.of(indexed["fleet"], key=FLEET), dict(indexed.get("by_tmux_id") or {}))

    def __repr__(self) -> str:
        return f"StopState(sessions={self.sessions!r}, fleet={self.fleet!r}, by_tmux_id={self.by_tmux_id!r})"
