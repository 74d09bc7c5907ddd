"""Budget panel: every cap's figure per bucket, and the fleet's spend per hour.

One row per cap and bucket (``core.views.budget.cap_rows``): the cap, its
scope and bucket (``session/claude-7f3a``, ``fleet``), what is used of its
limit (``$8.20 / $10.00``; ``~`` before a figure priced without the table
knowing the model), the percentage (yellow from the cap's first warn point,
red once reached), ``HELD`` and for how long while a hold stands, and the
time left to the period's reset. Beside the title a sparkline draws the
last 24 hours' spend, one bar an hour (``core.views.budget.hourly_spend``),
after its peak and total. The detail line says the row in words, a raise
too. With no cap and nothing spent the panel is ``-idle``: the grid leaves
it out (its number key still shows it), so a fleet that meters nothing
loses no room to it.

``budget_slice`` is what the feed reads for the dashboard off the UI thread:
the rows, the hours, each session's cost (the Sessions panel's column) and
the header's figures (``core.views.budget.fleet_figures``). A budget store
that cannot be read is one problem in the header, never a crash; a home
with no caps and no spend reads as empty panels. The console computes
nothing here: every figure is the core's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Sparkline

from leash.console.tui.widgets.panel import Column, Panel, PanelTable, duration
from leash.core.base.text import printable

if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

HELD_STYLE = "bold white on red"
REACHED_STYLE = "bold red"
WARNED_STYLE = "bold yellow"
WARN_FROM = 0.75  # the default first warn point: from it a percentage shows yellow
ESTIMATED_MARK = "~"
LEGEND = ((ESTIMATED_MARK, "before a cost or a cap's use: part of it was priced without the price table knowing "
                           "the model (at its provider's top rate), so it is an estimate"),
          ("HELD", "in the Budget panel: the cap is reached and holds its sessions until it is raised (+)"))
HOURS = 24


def money(usd: float | None, estimated: bool = False) -> str:
    """``$1.24``; ``~$1.24`` when estimated; "" for nothing metered."""
    if usd is None:
        return ""
    return f"{ESTIMATED_MARK if estimated else ''}${usd:,.2f}"


def figure(value: float | None, unit: str, estimated: bool = False) -> str:
    """A cap's figure in its unit: dollars, or a window's percentage."""
    if value is None:
        return "?"
    if unit == "percent":
        return f"{value:g}%"
    return money(value, estimated)


def bucket_text(row: dict) -> str:
    """``fleet``; ``session/claude-7f3a``: the scope, and the bucket when it is not the scope itself."""
    scope, bucket = str(row.get("scope") or ""), str(row.get("bucket") or "")
    return scope if bucket in ("", scope) else f"{scope}/{bucket}"


def percent_text(row: dict) -> Text:
    fraction = row.get("fraction")
    if fraction is None:
        return Text("")
    style = REACHED_STYLE if fraction >= 1 else WARNED_STYLE if fraction >= WARN_FROM else ""
    return Text(f"{fraction * 100:.0f}%", style=style)


def held_text(row: dict, now: float) -> Text:
    if not row.get("held"):
        return Text("")
    since = row.get("held_since")
    return Text(f"HELD {duration(now - since)}" if since is not None else "HELD", style=HELD_STYLE)


def resets_text(row: dict) -> str:
    left = row.get("resets_in")
    return "never" if left is None else duration(max(0.0, left))


def budget_detail(row: dict, now: float) -> str:
    """The selected cap's row in words (the detail line)."""
    unit, estimated = row.get("unit") or "usd", bool(row.get("estimated"))
    used, limit = figure(row.get("used"), unit, estimated), figure(row.get("limit"), unit)
    said = [f"{printable(row.get('cap'))} ({printable(bucket_text(row))}, {printable(row.get('period'))}): "
            f"{used} of {limit}"]
    if row.get("fraction") is not None:
        said[0] += f" ({row['fraction'] * 100:.0f}%)"
    if estimated:
        said.append("part of it estimated (a model the price table does not know)")
    if row.get("raised_to") is not None:
        said.append(f"raised from {figure(row.get('configured_limit'), unit)} to {figure(row['raised_to'], unit)} "
                    "for this period")
    if row.get("held"):
        since = row.get("held_since")
        said.append("HELD: its sessions are paused" + (f" for {duration(now - since)}" if since is not None else "")
                    + "; + raises it")
    said.append(f"resets in {resets_text(row)}" if row.get("resets_in") is not None else "never resets")
    return "; ".join(said)


def spend_line(hours: list[float]) -> str:
    """What the sparkline draws, in figures."""
    if not hours or not any(hours):
        return f"· spend per hour, last {HOURS} h: nothing metered"
    return f"· spend per hour, last {len(hours)} h: peak {money(max(hours))}/h, total {money(sum(hours))}"


class BudgetPanel(Panel):
    COLUMNS: tuple[Column, ...] = (Column("cap", "Cap", keep=True),
                                   Column("bucket", "Bucket", keep=True),
                                   Column("used", "Used / limit", keep=True),
                                   Column("percent", "%", keep=True),
                                   Column("held", "Held", keep=True, drop=2),
                                   Column("resets", "Resets in", keep=True, drop=1))
    FILL = "bucket"

    def compose(self) -> ComposeResult:
        with Horizontal(id="budget-heading"):  # the title, the spend's figures and its sparkline: one line
            yield Label(self.panel_title, classes="panel-title", id=f"title-{self.key}")
            yield Label(spend_line([]), id="budget-spend-line")
            yield Sparkline([], id="budget-sparkline")
        yield PanelTable(self.key, id=f"table-{self.key}")

    def show(self, rows: list[dict], now: float) -> None:
        super().show(rows, now)
        self._show_idle()

    def _show_idle(self) -> None:
        """No cap and nothing spent: ``-idle`` (the grid leaves the panel out until its key shows it)."""
        self.set_class(not self.rows and not any(getattr(self, "_hours", [])), "-idle")

    def cells(self, row: dict, now: float) -> tuple:
        unit, estimated = row.get("unit") or "usd", bool(row.get("estimated"))
        used = f"{figure(row.get('used'), unit, estimated)} / {figure(row.get('limit'), unit)}"
        return (row.get("cap") or "?", bucket_text(row), used, percent_text(row), held_text(row, now),
                resets_text(row))

    def show_hours(self, hours: list[float]) -> None:
        """The sparkline of the last hours' spend (oldest first), and its figures."""
        self._hours = list(hours)
        self._show_idle()
        line = spend_line(hours)
        label = self.query_one("#budget-spend-line", Label)
        if getattr(self, "_spend_line", None) != line:
            self._spend_line = line
            label.update(Text(line))
        sparkline = self.query_one(Sparkline)
        if list(sparkline.data or []) != list(hours):
            sparkline.data = list(hours)


def session_cost(row: dict, costs: dict[str, Any]) -> dict | None:
    """A Sessions row's cost: the sum of its agent sessions' (``usd``,
    ``estimated`` when any is), None when none of them was metered."""
    found = [costs[agent] for agent in dict.fromkeys(row.get("agents") or []) if agent in costs]
    if not found:
        return None
    return {"usd": sum(cost.usd for cost in found), "estimated": any(cost.estimated for cost in found)}


def add_budget(view: dict, backend: Backend, *, now: float) -> None:
    """Add what the dashboard shows of the budget to ``view``
    (``core.views.fleet.view``'s answer), read now: ``budget`` (the rows),
    ``spend_hours`` (the last ``HOURS``' spend), ``summary["spend"]`` (the
    header's figures: ``today_usd``, ``estimated``, ``busiest_window``) and
    ``cost`` on each session row that was metered (a home with no caps and
    no spend: no header figures). A budget that cannot be read is one of
    the view's ``problems`` (and empty rows)."""
    view.update(budget=[], spend_hours=[])
    if getattr(backend, "budget", None) is None:  # a backend that offers no budget (a daemon's, older)
        return
    try:
        from dataclasses import asdict

        from leash.core.base.config import load_config
        from leash.core.views.budget import cap_rows, fleet_figures, hourly_spend, session_costs

        config = load_config(backend.home)
        rows = [asdict(row) for row in cap_rows(backend, config, now=now)]
        hours = [float(value) for value in hourly_spend(backend, now=now, hours=HOURS)]
        figures = asdict(fleet_figures(backend, config, now=now))
        costs = session_costs(backend)
    except Exception as exc:  # never let an unreadable budget take the console down
        view["problems"] = [*view.get("problems", []), f"budget unreadable ({exc})"]
        return
    for row in rows:
        row["key"] = f"cap:{row.get('cap')}:{row.get('bucket')}"
    for session in view.get("sessions", []):
        cost = session_cost(session, costs)
        if cost is not None:
            session["cost"] = cost
    view.update(budget=rows, spend_hours=hours)
    if rows or any(hours) or figures.get("today_usd"):  # a home that meters nothing says nothing of it
        view.setdefault("summary", {})["spend"] = figures
