"""``leash budget`` and ``leash costs``: spend caps and what agents spent, from the command line.

``leash budget [--json]`` lists each cap per bucket (``core.views.budget.cap_rows``):
its use of its limit, ``~`` when part of it is estimated, HELD, the time to its
reset. ``leash budget raise CAP --to X --reason R [--bucket B]`` is the
operator's acknowledgement of a reached cap (``core.views.metering.raise_cap``):
logged ``budget_raised``, the hold lifted. ``leash costs [--by KEY] [--since T]
[--json]`` groups the metered spend; ``leash costs --prices`` names the price
table (genai-prices, its version and date) and the overrides in force.

Failure: a raise the core refuses (unknown cap, a limit not above the use, no
reason) exits 1 with its one line; a bad option exits 2 (the parser). A budget
store that cannot be read exits 1 naming it. Through leashd (the separated
profile) these run in the daemon, as every command that reads the stores.
"""
from __future__ import annotations

import json
import sys
from argparse import Namespace

from leash.console.errors import Refused
from leash.core.base.text import printable

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import ArgumentParser, _SubParsersAction
    from typing import Callable

    from leash.core.store.protocols import Backend
    from leash.core.views.budget import CapRow

COST_GROUPS = ("session", "entity", "host", "model", "day", "cli")


def add_parsers(sub: _SubParsersAction, common: ArgumentParser, acting: ArgumentParser,
                parser_class: type[ArgumentParser], positive: Callable[[str], float],
                since: Callable[[str], float]) -> None:
    p = sub.add_parser("budget", parents=[common], help="spend caps: use, holds, time to reset; 'raise' lifts a hold")
    p.add_argument("--json", action="store_true", help="the caps' rows as JSON")
    actions = p.add_subparsers(dest="budget_command", metavar="ACTION", parser_class=parser_class)
    q = actions.add_parser("list", parents=[common], help="each cap per bucket (the default)")
    q.add_argument("--json", action="store_true", help="the caps' rows as JSON")
    q = actions.add_parser("raise", parents=[acting], help="raise a cap for its current period; its holds lift")
    q.add_argument("cap", metavar="CAP", help="the cap's name in [[budget.cap]]")
    q.add_argument("--to", type=positive, required=True, metavar="X",
                   help="the new limit: dollars, or percent of the window for a limit_percent cap")
    q.add_argument("--reason", required=True, help="why, for the ack log")
    q.add_argument("--bucket", default=None, help="only this bucket (a session, HOST/entity, host, account)")
    q.add_argument("--json", action="store_true", help="the raised counters as JSON")
    p = sub.add_parser("costs", parents=[common], help="what agents spent, grouped; --prices: the price table")
    p.add_argument("--by", choices=COST_GROUPS, default="session", help="group by (default session)")
    p.add_argument("--since", type=since, default=None, metavar="WHEN", help="only spend from this time (ISO-8601)")
    p.add_argument("--json", action="store_true", help="the rows as JSON")
    p.add_argument("--prices", action="store_true", help="the price table's package, version and date, and overrides")


def _out(text: str) -> None:
    sys.stdout.write(printable(text) + "\n")


def money(usd: float, estimated: bool = False) -> str:
    """``$0.0284`` under a dollar, ``$12.40`` above; ``~`` first when estimated."""
    return f"{'~' if estimated else ''}${usd:,.4f}" if usd < 1 else f"{'~' if estimated else ''}${usd:,.2f}"


def figure(value: float, unit: str, estimated: bool = False) -> str:
    return f"{value:g}%" if unit == "percent" else money(value, estimated)


def _resets(row: CapRow) -> str:
    """When the row's period resets: a ``total`` never does; a subscription
    window's reset is known once its CLI reported the window."""
    from leash.core.base.clock import human_duration

    if row.resets_in is not None:
        return f"resets in {human_duration(row.resets_in)}"
    return "never resets" if row.period == "total" else "reset not known yet (no window reported)"


def _config(backend: Backend) -> dict:
    from leash.core.base.config import load_config

    return load_config(backend.home)


def run_budget(backend: Backend, args: Namespace) -> int:
    from leash.core.base.clock import now_seconds
    from leash.core.store.budget import BudgetUnreadable

    try:
        if args.budget_command == "raise":
            return _raise(backend, args, now=now_seconds())
        return _list(backend, args, now=now_seconds())
    except BudgetUnreadable as exc:
        raise Refused(f"budget store unreadable: {exc}") from None


def _list(backend: Backend, args: Namespace, *, now: float) -> int:
    from dataclasses import asdict

    from leash.core.views.budget import cap_rows

    rows = cap_rows(backend, _config(backend), now=now)
    if args.json:
        sys.stdout.write(json.dumps([asdict(row) for row in rows], ensure_ascii=True, default=str) + "\n")
        return 0
    if not rows:
        _out("no spend cap is configured ([[budget.cap]] in config.toml; see docs/budgets.md)")
    for row in rows:
        used = figure(row.used, row.unit, row.estimated)
        limit = figure(row.limit, row.unit) + (" (raised)" if row.raised_to is not None else "")
        held = "  HELD" if row.held else ""
        percent = "" if row.fraction == float("inf") else f" {row.fraction * 100:.0f}%"
        _out(f"{row.cap}  {row.scope}:{row.bucket or '-'}  {row.period_key or row.period}  {used} of {limit}"
             f"{percent}{held}  {_resets(row)}")
    if not _daemon_running(backend):
        _out("note: leashd is not running here: nothing is being metered (leash daemon)")
    return 0


def _daemon_running(backend: Backend) -> bool:
    """Whether a leashd holds the home's lock (``/proc/locks``): a socket file
    can outlive its daemon, and in the separated profile the sockets may be
    elsewhere, but one leashd per home holds ``<home>/run/leashd.lock`` for its
    life (and these commands run inside it there)."""
    import os

    from leash.core.base.wellknown import RUN_DIR
    from leash.core.wire.daemontrust import DAEMON_LOCK_NAME, lock_holder

    return lock_holder(os.path.join(backend.home, RUN_DIR, DAEMON_LOCK_NAME)) is not None


def _raise(backend: Backend, args: Namespace, *, now: float) -> int:
    from leash.core.views.metering import raise_cap

    try:
        raised = raise_cap(backend, args.cap, to=args.to, reason=args.reason, source=args.source,
                           config=_config(backend), now=now, bucket=args.bucket)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    if args.json:
        sys.stdout.write(json.dumps([r.as_dict() for r in raised], ensure_ascii=True) + "\n")
        return 0
    for record in raised:
        lifted = "; its hold lifted" if record.released_by == "raise" and record.released_at == now else ""
        _out(f"raised {record.cap} ({record.bucket}, {record.period}) to {figure(float(args.to), record.unit)}"
             f"{lifted}")
    return 0


def run_costs(backend: Backend, args: Namespace) -> int:
    from leash.core.store.budget import BudgetUnreadable

    if args.prices:
        return _prices(backend, args)
    from leash.core.views.budget import cost_rows

    try:
        rows = cost_rows(backend, by=args.by, since=args.since)
    except BudgetUnreadable as exc:
        raise Refused(f"budget store unreadable: {exc}") from None
    if args.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=True) + "\n")
        return 0
    if not rows:
        _out("nothing metered" + (" since then" if args.since is not None else "")
             + ("" if _daemon_running(backend) else " (leashd meters spend: leash daemon)"))
        return 0
    for row in rows:
        key = _day(row["key"]) if args.by == "day" else str(row["key"] or "-")
        tokens = row["input"] + row["output"] + row["cache_write"] + row["cache_read"]
        _out(f"{key}  {money(float(row['usd']), bool(row['estimated']))}  {row['requests']} requests  "
             f"{tokens:,} tokens")
    total = sum(float(row["usd"]) for row in rows)
    _out(f"total  {money(total, any(bool(row['estimated']) for row in rows))}")
    return 0


def _day(key: object) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(float(key), datetime.UTC).strftime("%Y-%m-%d")  # type: ignore[arg-type]


def _prices(backend: Backend, args: Namespace) -> int:
    from leash.core.policy.prices import PACKAGE, table_date, table_version

    overrides = (_config(backend).get("budget") or {}).get("prices") or {}
    named = table_version()  # "genai-prices 0.2.3"
    said = {"package": PACKAGE, "version": named.removeprefix(f"{PACKAGE} "), "date": table_date(),
            "overrides": overrides}
    if args.json:
        sys.stdout.write(json.dumps(said, ensure_ascii=True) + "\n")
        return 0
    _out(f"prices: {named}, table of {said['date']} (shipped with the package; never fetched)")
    for model, rates in sorted(overrides.items()):
        _out(f"override {model}: " + ", ".join(f"{k} ${v}/M" for k, v in sorted(rates.items())))
    return 0
