"""What the operator reads of spend and caps: ``leash budget``, ``leash costs``,
the console's Budget panel, Cost column and header, ``status --json``.

* ``cap_rows``: one row per configured cap and bucket in the cap's current
  period (a held counter stays until it is released, whatever its period); a
  cap nothing has counted against yet is one row at nothing used.
* ``session_costs``: each session's dollars (``estimated`` when any part was
  priced at a provider's top rate: the table did not know the model).
* ``hourly_spend``: the fleet's dollars per hour, the last ``hours``.
* ``fleet_figures``: the header's spend today (UTC) and busiest window.
* ``cost_rows``: ``leash costs --by``.

Pure reading: every figure is the store's (``backend.budget``) and the cap
arithmetic is ``core.policy.caps``'s. Failure: ``BudgetUnreadable`` from the
store goes to the caller (the console shows it as a problem, the CLI as one
line); a cap of config.toml with no counter is never an error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from leash.core.policy.caps import Cap, caps_of, period_of

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

HOUR = 3600.0
DAY = 86_400.0
COST_GROUPS = ("session", "entity", "host", "model", "day", "cli")


@dataclass(frozen=True)
class CapRow:
    cap: str
    scope: str
    bucket: str
    period: str  # the cap's kind of period: day | week | window-5h | window-7d | total
    period_key: str  # which one: 2026-11-28, 2026-W48, window-5h@<reset>, total ("" when not known yet)
    unit: str  # usd | percent
    used: float
    limit: float  # in force: raised_to, else configured
    configured_limit: float
    estimated: bool
    fraction: float
    held: bool
    held_since: float | None
    resets_in: float | None  # seconds; None: never, or not known
    raised_to: float | None


@dataclass(frozen=True)
class Cost:
    usd: float
    estimated: bool


@dataclass(frozen=True)
class FleetFigures:
    today_usd: float
    estimated: bool
    busiest_window: tuple[str, float] | None  # ("window-5h", percent), None when no window is known


def _fraction(used: float, limit: float) -> float:
    """As ``core.policy.caps.cap_level`` counts it: a limit of 0 is reached (1.0), whatever was used."""
    return used / limit if limit > 0 else 1.0


def cap_rows(backend: Backend, config: dict, *, now: float) -> list[CapRow]:
    """Each cap's rows (see the module's docstring), in config.toml's order, its buckets by name."""
    caps = caps_of(config.get("budget") or {})
    if not caps:
        return []
    counters = backend.budget.counters()
    windows = {(w.bucket, w.window): w for w in backend.budget.windows()}
    rows: list[CapRow] = []
    for cap in caps:
        mine = [c for c in counters if c.cap == cap.name and c.unit == cap.unit
                and (c.held or c.period_end is None or float(c.period_end) > now)]
        if not mine:
            rows.append(_empty_row(cap, windows, now=now))
            continue
        for counter in sorted(mine, key=lambda c: (c.bucket, c.period)):
            limit = float(counter.raised_to) if counter.raised_to is not None else cap.limit
            used = float(counter.used or 0.0)
            end = counter.period_end
            rows.append(CapRow(cap.name, cap.scope, counter.bucket, cap.period, counter.period, cap.unit, used, limit,
                               cap.limit,
                               bool(counter.estimated), _fraction(used, limit), counter.held, counter.held_since,
                               None if end is None else max(0.0, float(end) - now), counter.raised_to))
    return rows


def _empty_row(cap: Cap, windows: dict, *, now: float) -> CapRow:
    bucket = "fleet" if cap.scope == "fleet" else cap.account if cap.scope == "account" else ""
    reset_at = None
    if cap.period.startswith("window-"):
        window = windows.get((bucket or "fleet", cap.period))
        reset_at = window.resets_at if window is not None else None
    period = period_of(cap.period, now=now, reset_at=reset_at)
    resets_in = None if period is None or period.end is None else max(0.0, period.end - now)
    return CapRow(cap.name, cap.scope, bucket, cap.period, period.key if period is not None else "", cap.unit, 0.0,
                  cap.limit,
                  cap.limit, False, _fraction(0.0, cap.limit), False, None, resets_in, None)


def session_costs(backend: Backend, *, since: float | None = None) -> dict[str, Cost]:
    """Each metered session's dollars (since ``since``, an hour's start; None: ever)."""
    return {str(row.key): Cost(float(row.usd), bool(row.estimated))
            for row in backend.budget.totals("session", since=since)}


def hourly_spend(backend: Backend, *, now: float, hours: int = 24) -> list[float]:
    """The fleet's dollars in each of the last ``hours`` hours, oldest first, this hour last (zeros included)."""
    this_hour = math.floor(now / HOUR) * HOUR
    first = this_hour - (hours - 1) * HOUR
    found = {float(row.key): float(row.usd) for row in backend.budget.totals("hour", since=first)}
    return [found.get(first + index * HOUR, 0.0) for index in range(hours)]


def fleet_figures(backend: Backend, config: dict, *, now: float) -> FleetFigures:
    """The fleet's spend today (UTC) and its busiest subscription window still open."""
    today = math.floor(now / DAY) * DAY
    rows = backend.budget.totals("day", since=today)
    usd = sum(float(row.usd) for row in rows)
    estimated = any(bool(row.estimated) for row in rows)
    open_windows = [w for w in backend.budget.windows() if w.resets_at is None or float(w.resets_at) > now]
    busiest = max(open_windows, key=lambda w: float(w.used_percent), default=None)
    return FleetFigures(usd, estimated, (busiest.window, float(busiest.used_percent)) if busiest else None)


def cost_rows(backend: Backend, *, by: str, since: float | None = None, until: float | None = None) -> list[dict]:
    """``leash costs --by``: the store's totals grouped ``by`` (``COST_GROUPS``), largest first (days: oldest first)."""
    if by not in COST_GROUPS:
        raise ValueError(f"--by must be one of {', '.join(COST_GROUPS)}, got {by!r}")
    rows = backend.budget.totals(by, since=math.floor(since / HOUR) * HOUR if since is not None else None,
                                 until=until)
    return [row.as_dict() for row in rows]
