"""The budget's records (``core.store.protocols_budget``): a cap's counter,
what a session spent on a model in an hour and a group of such rows, what the
spend meter kept of a source, and a subscription window.

Records as ``core.store.records`` makes them (plain, slotted, built with
``of(dict)``); failure is theirs: ``of`` never raises on a missing key.
"""
from __future__ import annotations

from leash.core.store.records import Record

TYPE_CHECKING = False  # typing is for the type checker only: the gate reads the holds on the hook path
if TYPE_CHECKING:
    from typing import Any


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
