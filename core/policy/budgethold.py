"""Which reached spend cap holds a session, and what the agent is told.

A cap that is reached (``core.views.metering``) leaves a held counter in the
budget store: one per (cap, bucket, period). The gate reads the held counters
(``backend.budget.holds()``) and asks ``covering`` whether one of them covers
the session it judges: the counter's cap is still configured and the
session's bucket of that cap (``bucket_of``: its session id, its
``HOST/entity``, its host, ``fleet``, or the cap's account) is the counter's.
A session continued from another (a fork or a resume: its ``lineage``) is
held by a session cap on any of them, as stops and halts hold it.

``refusal`` is the deny's text: the figure, the cap, and the command that
lifts it. ``halt_context`` is what the ``budget`` halt records.

The bucket rules are defined here, once: ``core.policy.caps.bucket`` (what
the meter charges) is these functions. Pure and on the hook path: it imports
nothing but the standard library's ``time`` (no dataclasses, no typing), reads
no file and no clock. What it cannot see: a cap removed from config.toml holds
nobody (the operator removed it), and a session whose host or entity is
recorded differently from the names in ``[budget.accounts]`` falls outside an
account's caps.
"""
from __future__ import annotations

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

WINDOW_NAMES = {"window-5h": "5-hour window", "window-7d": "7-day window"}


# ------------------------------------------------------------------ buckets
def account_named(entity: str, host: str, accounts: Mapping[str, Mapping]) -> str:
    """The account (a name of ``[budget.accounts]``) a session of ``entity`` on
    ``host`` is used under: the account listing its entity, else the one
    listing its host; "" when none does. An entity listed as ``HOST/NAME`` is
    that name on that host; a bare ``NAME`` is that name on every host."""
    for name, account in accounts.items():
        if any(entity_is(listed, entity, host) for listed in account.get("entities", ())):
            return name
    for name, account in accounts.items():
        if host and host in account.get("hosts", ()):
            return name
    return ""


def entity_is(listed: str, entity: str, host: str) -> bool:
    """Whether ``listed`` (``HOST/NAME`` or a bare ``NAME``) names ``entity`` on ``host``."""
    if not entity:
        return False
    entity_host, _, bare = entity.rpartition("/")
    entity_host = entity_host or host
    if "/" in listed:
        return listed == f"{entity_host}/{bare}"
    return listed == bare


def bucket_of(scope: str, account: str, *, session_id: str, entity: str, host: str,
              accounts: Mapping[str, Mapping]) -> str | None:
    """The bucket of a cap of ``scope`` (and, for scope ``account``, ``account``)
    a session's spend counts in: its session id, its entity (``HOST/NAME``; a
    session with no entity counts alone, by its id), its host, ``fleet``, or
    the cap's account; None when the cap does not cover the session (an
    account cap, for a session of another account). ``ValueError`` for a
    scope that is none of these."""
    if scope == "session":
        return session_id
    if scope == "entity":
        if not entity:
            return session_id
        return entity if "/" in entity or not host else f"{host}/{entity}"
    if scope == "host":
        return host
    if scope == "fleet":
        return "fleet"
    if scope == "account":
        return account if account_named(entity, host, accounts) == account else None
    raise ValueError(f"unknown scope {scope!r}")


# ------------------------------------------------------------------ holds
def covering(holds: Iterable, caps: Iterable[Mapping], accounts: Mapping[str, Mapping], *,
             session_ids: Iterable[str], entity: str, host: str):
    """(the held counter, its cap's ``[[budget.cap]]`` table) of the first hold
    that covers the session, or None. ``holds``: ``BudgetCounterRecord``s that
    are held; ``caps``: ``config["budget"]["cap"]``; ``session_ids``: the
    session's id, then the sessions it continues."""
    if not holds:
        return None
    by_name = {cap.get("name"): cap for cap in caps}
    ids = list(session_ids)
    for hold in holds:
        cap = by_name.get(hold.cap)
        if cap is None or not hold.held:
            continue  # a cap no longer configured holds nobody
        scope, account = cap.get("scope", ""), cap.get("account", "")
        for session_id in ids:
            try:
                found = bucket_of(scope, account, session_id=session_id, entity=entity, host=host,
                                  accounts=accounts)
            except ValueError:
                found = None
            if found is not None and found == hold.bucket:
                return hold, cap
    return None


def limit_of(hold, cap: Mapping) -> float:
    """The limit the hold was reached against: the operator's raise for this
    period, else the configured one."""
    if hold.raised_to is not None:
        return float(hold.raised_to)
    limit = cap.get("limit_percent") if cap.get("limit_percent") is not None else cap.get("limit_usd")
    return float(limit or 0.0)


def is_percent(hold, cap: Mapping) -> bool:
    return hold.unit == "percent" or (hold.unit is None and cap.get("limit_percent") is not None)


def used_of(hold) -> float:
    """The figure the hold shows: the use now, else the one it was placed at."""
    used = hold.used if hold.used is not None else hold.held_use
    return float(used or 0.0)


def figure(hold, cap: Mapping) -> str:
    """``$10.42 of $10.00 spent`` or ``87% of the 5-hour window, cap 80%``."""
    used, limit = used_of(hold), limit_of(hold, cap)
    if is_percent(hold, cap):
        window = WINDOW_NAMES.get(str(cap.get("period", "")), "window")
        return f"{used:.0f}% of the {window}, cap {limit:g}%"
    estimated = " (estimated)" if hold.estimated else ""
    return f"${used:,.2f}{estimated} of ${limit:,.2f} spent"


def where(hold, cap: Mapping) -> str:
    """The bucket and period the hold counts, as an operator reads them:
    ``fleet, 2026-11-28``; a window's period by its reset."""
    scope = cap.get("scope", "")
    bucket = {"session": "this session", "account": f"account {hold.bucket}"}.get(scope, hold.bucket)
    period = str(hold.period or "")
    if period.startswith("window-"):
        period = f"resets {_utc(hold.period_end)}" if hold.period_end is not None else "window"
    return f"{bucket}, {period}" if period else bucket


def _utc(moment: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(moment))


def refusal(hold, cap: Mapping) -> str:
    """The deny's text: the figure, the cap, and how it is lifted."""
    amount = "PERCENT" if is_percent(hold, cap) else "AMOUNT"
    return (f"leash: budget cap {hold.cap!r} is reached: {figure(hold, cap)} ({where(hold, cap)}). "
            f"This session is held until an operator raises the cap (leash budget raise {hold.cap} "
            f"--to {amount} --reason ...). Do not retry.")


def halt_context(hold, cap: Mapping) -> dict:
    """The ``budget`` halt's context: which cap, bucket and period, and the figures."""
    return {"cap": hold.cap, "bucket": hold.bucket, "period": hold.period, "used": used_of(hold),
            "limit": limit_of(hold, cap), "unit": "percent" if is_percent(hold, cap) else "usd"}


def halt_description(hold, cap: Mapping) -> str:
    return f"Budget cap {hold.cap!r} is reached: {figure(hold, cap)} ({where(hold, cap)})"
