"""Typed records the stores hand out: a stop, a lock, a session, a halt, a
warrant, a pardon request, a breaker, an approval, a budget counter, a spend
row and a group of them, a subscription window, a kennel heartbeat, a log
line (and the lines of a read) and a change.

Plain classes with ``__slots__`` (no ``dataclasses``, ``inspect`` or
``TypedDict``: this module is on the hook path, where each import is paid on
every tool call). Each record is built from the stored dict with ``of(dict)``
and gives it back unchanged with ``as_dict()``, so file formats never depend on
these classes. Keys a record does not name are kept in ``extra``. A record is
read by its attributes only: it is not a mapping (no ``get``, no ``[key]``).

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


class Record:
    """Fields named by ``__slots__`` (besides ``extra``), compared by value.
    A record is read by its attributes (a key it does not name: ``extra``);
    ``as_dict()`` is the stored dict, for whatever formats or stores it."""

    __slots__ = ("extra", "_given")
    FIELDS: tuple[str, ...] = ()

    def __init__(self, **values: Any):
        self._given = tuple(values)  # the stored keys, in their order: as_dict gives back exactly these
        for field in self.FIELDS:
            object.__setattr__(self, field, values.pop(field, None))
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
        return {key: getattr(self, key) if key in self.FIELDS else self.extra[key] for key in self._given}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.as_dict() == self.as_dict() and \
            all(getattr(other, f) == getattr(self, f) for f in self.FIELDS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({shown})"


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


class HaltRecord(Record):
    """One halt event (halts.db's ``halt_events`` row, as the API returns it)."""

    FIELDS = ("halt_id", "session_id", "task_id", "halt_type", "severity", "description", "condition_name",
              "acknowledged", "resolution", "triggered_at")
    __slots__ = FIELDS
    halt_id: str
    session_id: str
    task_id: str | None
    halt_type: str
    severity: str
    description: str
    condition_name: str
    acknowledged: bool
    resolution: str | None
    triggered_at: str


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


class HaltEventRecord(Record):
    """One stored halt, every column (``halts.db``'s ``halt_events`` row, the
    shared store's the same): what ``HaltStore.find`` gives."""

    FIELDS = ("id", "session_id", "task_id", "halt_type", "severity", "description", "context", "triggered_at",
              "acknowledged", "acknowledged_at", "acknowledged_by", "resolution", "resolution_notes",
              "attempt_count", "previous_error", "condition_name", "escalate_at", "auto_recorded")
    __slots__ = FIELDS
    id: str
    session_id: str
    task_id: str | None
    halt_type: str
    severity: str
    description: str
    context: Any
    triggered_at: str
    acknowledged: bool
    acknowledged_at: str | None
    acknowledged_by: str | None
    resolution: str | None
    resolution_notes: str | None
    attempt_count: int | None
    previous_error: str | None
    condition_name: str
    escalate_at: str | None
    auto_recorded: bool | None


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


class BudgetCounterRecord(Record):
    """One cap's figure for one bucket and one period (``core.views.metering``):
    ``cap`` its name, ``bucket`` the session id, ``HOST/entity``, host,
    ``fleet`` or account it counts (``core.policy.caps.bucket``), ``period``
    the period's key (``core.policy.caps.Period.key``) and ``period_end`` its
    end (unix seconds; None: never). ``unit`` "usd" or "percent"; ``used``
    the spend (or the window's reported percentage); ``estimated`` when any
    of it was priced without the table knowing the model; ``raised_to`` the
    limit an operator raised it to for this period (None: the configured
    limit); ``warned`` the ``warn_at`` points already notified. A hold:
    ``held_since`` set (unix seconds) and ``released_at`` None; ``held_use``
    the figure it was placed at; ``released_by`` "raise", "reset" or the
    operator's ``source``. ``updated_at``: the last write (unix seconds)."""

    FIELDS = ("cap", "bucket", "period", "period_end", "unit", "used", "estimated", "raised_to", "warned",
              "held_since", "held_use", "released_at", "released_by", "updated_at")
    __slots__ = FIELDS
    cap: str
    bucket: str
    period: str
    period_end: float | None
    unit: str
    used: float
    estimated: bool
    raised_to: float | None
    warned: list[float]
    held_since: float | None
    held_use: float | None
    released_at: float | None
    released_by: str | None
    updated_at: float

    @property
    def held(self) -> bool:
        return self.held_since is not None and self.released_at is None


class SpendRecord(Record):
    """What one session spent on one model in one hour (``hour``: the hour's
    start, unix seconds, UTC): ``usd`` (a float of the ``Decimal`` priced),
    the tokens of each kind, ``requests`` counted, ``estimated`` when any of
    it was priced at a provider's top rate. ``host``, ``entity`` and ``cli``
    are the session's when the spend was read (what ``leash costs --by``
    groups)."""

    FIELDS = ("hour", "session_id", "model", "host", "entity", "cli", "usd", "estimated", "input", "output",
              "cache_write", "cache_read", "reasoning", "requests")
    __slots__ = FIELDS
    hour: float
    session_id: str
    model: str
    host: str
    entity: str
    cli: str
    usd: float
    estimated: bool
    input: int
    output: int
    cache_write: int
    cache_read: int
    reasoning: int
    requests: int


class SpendTotal(Record):
    """One group of ``BudgetStore.totals``: ``key`` the session id, entity,
    host, model or cli its spend is grouped by (for ``day`` and ``hour``: the
    UTC day's or hour's start, unix seconds), its dollars (``usd``;
    ``estimated`` when any of it was priced at a provider's top rate), the
    tokens of each kind, ``requests`` and the distinct ``sessions``."""

    FIELDS = ("key", "usd", "estimated", "input", "output", "cache_write", "cache_read", "reasoning", "requests",
              "sessions")
    __slots__ = FIELDS
    key: str | float
    usd: float
    estimated: bool
    input: int
    output: int
    cache_write: int
    cache_read: int
    reasoning: int
    requests: int
    sessions: int


class MeterState(Record):
    """What the spend meter kept of one source of a session (``core.state.budgetmeter``
    writes it, ``core.views.spendmeter`` keeps it): the file's ``cursor``, the usage
    ``seen`` and ``charged`` there (a Gemini source: the response ``keys`` counted),
    the lines ``skipped``, the ``cli`` it was read as, when it was read (``read_at``)
    and last found usage (``found_at``, unix seconds). A cap's silence note
    (source ``stale:CAP``) holds only ``at``: when it was said."""

    FIELDS = ("cursor", "seen", "charged", "keys", "skipped", "cli", "read_at", "found_at", "at")
    __slots__ = FIELDS
    cursor: Any
    seen: dict | None
    charged: dict | None
    keys: list | None
    skipped: int | None
    cli: str | None
    read_at: float | None
    found_at: float | None
    at: float | None


class BudgetWindowRecord(Record):
    """A subscription window as an agent CLI last reported it (Claude Code's
    status line ``rate_limits``): ``bucket`` the account (or ``fleet``) it is
    the login of, ``window`` "window-5h" or "window-7d", ``used_percent``,
    ``resets_at`` (unix seconds), ``session_id`` that reported it, ``at``
    when (unix seconds)."""

    FIELDS = ("bucket", "window", "used_percent", "resets_at", "session_id", "at")
    __slots__ = FIELDS
    bucket: str
    window: str
    used_percent: float
    resets_at: float | None
    session_id: str
    at: float


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
