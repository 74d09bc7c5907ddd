"""Cap arithmetic: the period a moment falls in, how far a cap is used, which
sessions it covers. Pure functions of what the caller gives (times as unix
seconds, keyword-only ``now=``); nothing here reads a file or the clock.

A cap (``[[budget.cap]]``, read by ``core.base.budgetconfig``) is a limit on
spend over a period, counted per bucket of its scope: each session, each
entity, each host, the whole fleet, or the sessions of one account. A store
keeps one figure per (cap, bucket, period key); ``bucket`` names a session's.

Periods: ``day`` and ``week`` are calendar periods in UTC (a day from 00:00
UTC, a week from Monday 00:00 UTC, ISO weeks); ``window-5h`` and ``window-7d``
are a subscription's windows, which start with the first use after a reset and
so cannot be computed: the caller gives the reset time its CLI reported
(``reset_at``), and without one the period is not known (None); ``total`` never
resets.

What these rules cannot see: spend the meter never read (a CLI that reports no
usage, a session outside leash), a window's true start (only its reset is
reported), a reset time that is wrong, clock skew between hosts, and sessions
whose host or entity is recorded differently from the names in
``[budget.accounts]`` (they fall outside an account's caps). A limit of 0 is
reached at once: the cap allows nothing.
"""
from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from leash.core.policy.budgethold import account_named, bucket_of

DAY = 86_400.0
WEEK = 7 * DAY
WINDOW_LENGTHS = {"window-5h": 5 * 3600.0, "window-7d": WEEK}
_EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)


@dataclass(frozen=True)
class Cap:
    """One ``[[budget.cap]]`` table (``core.base.budgetconfig`` says what each key may be)."""

    name: str
    scope: str  # session | entity | host | fleet | account
    period: str  # day | week | window-5h | window-7d | total
    limit_usd: float | None = None
    limit_percent: float | None = None
    warn_at: tuple[float, ...] = (0.75, 0.95)
    resume_at_reset: bool = False
    account: str = ""
    stale_after: float = 10.0  # minutes
    on_stale: str = "warn"  # warn | hold

    @property
    def unit(self) -> str:
        """What ``used`` is counted in: "usd" or "percent" (of a subscription window)."""
        return "percent" if self.limit_percent is not None else "usd"

    @property
    def limit(self) -> float:
        return float(self.limit_percent if self.limit_percent is not None else self.limit_usd or 0.0)


def caps_of(budget: Mapping) -> tuple[Cap, ...]:
    """The caps of a validated ``[budget]`` section (``load_config(home)["budget"]``)."""
    return tuple(Cap(name=entry["name"], scope=entry["scope"], period=entry["period"],
                     limit_usd=entry.get("limit_usd"), limit_percent=entry.get("limit_percent"),
                     warn_at=tuple(entry.get("warn_at", (0.75, 0.95))),
                     resume_at_reset=bool(entry.get("resume_at_reset", False)), account=entry.get("account", ""),
                     stale_after=float(entry.get("stale_after", 10)), on_stale=entry.get("on_stale", "warn"))
                 for entry in budget.get("cap", []))


@dataclass(frozen=True)
class Period:
    """A period of a cap: ``key`` names it in a store (``2026-11-28``, ``2026-W48``,
    ``window-5h@<reset>``, ``total``); ``start`` and ``end`` in unix seconds, None when open."""

    key: str
    start: float | None
    end: float | None

    def holds(self, moment: float) -> bool:
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


def period_of(period: str, *, now: float, reset_at: float | None = None) -> Period | None:
    """The period of kind ``period`` that ``now`` falls in. ``day``/``week``: in
    UTC. A window: the one ending at ``reset_at`` (its CLI's reported reset);
    None when there is none, or ``now`` is at or past it (the window has reset
    and the next one's reset is not known yet)."""
    if period == "total":
        return Period("total", None, None)
    if period == "day":
        start = math.floor(now / DAY) * DAY
        return Period(_utc(start).strftime("%Y-%m-%d"), start, start + DAY)
    if period == "week":
        days = math.floor(now / DAY)
        start = (days - (days + _EPOCH_WEEKDAY) % 7) * DAY
        iso = _utc(start).isocalendar()
        return Period(f"{iso.year}-W{iso.week:02d}", start, start + WEEK)
    if period in WINDOW_LENGTHS:
        if reset_at is None or now >= reset_at:
            return None
        return Period(f"{period}@{int(reset_at)}", reset_at - WINDOW_LENGTHS[period], reset_at)
    raise ValueError(f"unknown period {period!r}")


def _utc(moment: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(moment, datetime.UTC)


@dataclass(frozen=True)
class CapLevel:
    """How far a cap is used in a period: ``fraction`` of the limit (1.0 and
    more: reached), the ``warn_at`` points crossed, ``reached``, and the
    seconds until the period resets (None: it never does, or it is not known)."""

    used: float
    fraction: float
    warned: tuple[float, ...]
    reached: bool
    resets_in: float | None
    period: Period | None


def cap_level(cap: Cap, used: float, *, now: float, reset_at: float | None = None) -> CapLevel:
    """``cap`` with ``used`` spent in the period ``now`` falls in (US dollars, or
    the window's percentage for a ``limit_percent`` cap). A limit of 0 is
    reached whatever was used."""
    if not math.isfinite(used) or used < 0:
        raise ValueError(f"used must be a finite number >= 0, got {used!r}")
    limit = cap.limit
    fraction = used / limit if limit > 0 else 1.0
    period = period_of(cap.period, now=now, reset_at=reset_at)
    resets_in = None if period is None or period.end is None else max(0.0, period.end - now)
    return CapLevel(used=used, fraction=fraction, warned=tuple(p for p in cap.warn_at if fraction >= p),
                    reached=fraction >= 1.0, resets_in=resets_in, period=period)


def warn_points_crossed(cap: Cap, before: float, after: float) -> tuple[float, ...]:
    """The ``warn_at`` points that spend going from ``before`` to ``after`` crossed
    (each notifies once: a point already behind ``before`` is not crossed again)."""
    if cap.limit <= 0:
        return ()
    return tuple(point for point in cap.warn_at if before / cap.limit < point <= after / cap.limit)


def reset_releases(cap: Cap, held: Period, *, now: float) -> bool:
    """Whether a hold placed in period ``held`` is released by its reset: only
    with ``resume_at_reset``, and only once ``now`` is past the held period's end."""
    return cap.resume_at_reset and held.end is not None and now >= held.end


def meter_stale(cap: Cap, last_reading: float | None, *, now: float, working: bool) -> bool:
    """Whether a working session's meter has been silent longer than ``stale_after``
    minutes (``last_reading``: when usage was last read; None: never). An idle session's
    silent meter is not stale: it spends nothing."""
    if not working:
        return False
    return last_reading is None or now - last_reading > cap.stale_after * 60


class Member(Protocol):
    """A session as a cap sees it (``core.state.sessions`` records: the session's id,
    its entity, its host; "" when not recorded)."""

    @property
    def session_id(self) -> str: ...
    @property
    def entity(self) -> str: ...
    @property
    def host(self) -> str: ...


@dataclass(frozen=True)
class SessionRef:
    """A plain ``Member``."""

    session_id: str
    entity: str = ""
    host: str = ""


def account_of(member: Member, accounts: Mapping[str, Mapping]) -> str:
    """The account (a name of ``[budget.accounts]``) a session is used under: the
    account listing its entity, else the one listing its host; "" when none does.
    An entity listed as ``HOST/NAME`` is that name on that host; a bare ``NAME``
    is that name on every host (``core.policy.budgethold.account_named``)."""
    return account_named(member.entity, member.host, accounts)


def bucket(cap: Cap, member: Member, accounts: Mapping[str, Mapping]) -> str | None:
    """The bucket of ``cap`` a session's spend counts in: its session id, its
    entity (``HOST/NAME``; a session with no entity counts alone, by its id),
    its host, ``fleet``, or the cap's account; None when the cap does not
    cover the session (an account cap, for a session of another account).
    The rule is ``core.policy.budgethold.bucket_of``, which the gate reads too."""
    return bucket_of(cap.scope, cap.account, session_id=member.session_id, entity=member.entity, host=member.host,
                     accounts=accounts)


def in_scope(cap: Cap, member: Member, accounts: Mapping[str, Mapping]) -> bool:
    """Whether ``cap`` covers the session at all (in some bucket)."""
    return bucket(cap, member, accounts) is not None


def members_of(cap: Cap, key: str, members: Iterable[Member], accounts: Mapping[str, Mapping]) -> list[Member]:
    """The sessions in bucket ``key`` of ``cap``: those a reached cap holds."""
    return [member for member in members if bucket(cap, member, accounts) == key]
