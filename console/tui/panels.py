"""Every panel of the dashboard, declared once.

A ``PanelSpec`` names a panel's key (``sessions``: its widget is
``#panel-sessions``, the view's list of that name feeds it, ``focus_sessions``
remaps its number key), its title, its short name (its tab and its number
key's description), its widget class, the slice of the view it shows, the
timer that redraws it between views and its detail line. ``PANELS`` is in the
order of the number keys (``1`` is the first); the dashboard lays them out,
the keymap binds ``1``-``8`` and ``tab`` from it, the help screen and the tab
strip name them from it.
"""
from __future__ import annotations

from typing import Callable, Literal, NamedTuple

from rich.text import Text

from leash.console.tui.widgets.acktail import AckTailPanel
from leash.console.tui.widgets.approvals import ApprovalsPanel
from leash.console.tui.widgets.budget import BudgetPanel, budget_detail
from leash.console.tui.widgets.detail import (
    approval_detail,
    halt_detail,
    lock_detail,
    log_detail,
    loop_detail,
    warrant_detail,
)
from leash.console.tui.widgets.halts import HaltsPanel
from leash.console.tui.widgets.locks import LocksPanel
from leash.console.tui.widgets.loops import LoopsPanel
from leash.console.tui.widgets.panel import Panel
from leash.console.tui.widgets.sessions import SessionsPanel
from leash.console.tui.widgets.warrants import WarrantsPanel
from leash.core.views.fleet import MAX_ROWS  # rows per panel; the title shows the full count

# Which timer redraws a panel between views: "countdown" (each 0.5 s: a gate's
# bar, an approval's time left), "ages" (each 5 s), or none.
Tick = Literal["countdown", "ages", ""]
Detail = Callable[[dict, float], str | Text]


class PanelSpec(NamedTuple):
    key: str
    title: str  # the panel's title ("Pending halts")
    short: str  # its tab and its number key's description ("Halts")
    widget: type[Panel]
    detail: Detail | None  # the selected row's detail line; None: ``core.why``'s answer (the sessions')
    tick: Tick = ""
    newest_last: bool = False  # the view's list ends with the newest: the last MAX_ROWS are shown
    across: bool = False  # across the top of the grid
    below: bool = False  # across the bottom of the grid

    def rows(self, view: dict) -> list[dict]:
        """The panel's slice of ``core.views.fleet.view``'s answer (the
        budget's: what the feed adds to it, ``widgets.budget.add_budget``)."""
        rows: list[dict] = view.get(self.key, [])
        return rows[-MAX_ROWS:] if self.newest_last else rows[:MAX_ROWS]

    def build(self) -> Panel:
        return self.widget(self.key, self.title, classes="-across" if self.across else "-below" if self.below else "")


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("sessions", "Sessions", "Sessions", SessionsPanel, None, tick="ages"),
    PanelSpec("halts", "Pending halts", "Halts", HaltsPanel, halt_detail, tick="ages"),
    PanelSpec("warrants", "Warrants", "Warrants", WarrantsPanel, warrant_detail, tick="countdown"),
    PanelSpec("locks", "Hands-off locks", "Locks", LocksPanel, lock_detail, tick="ages"),
    PanelSpec("loops", "Loop breakers", "Breakers", LoopsPanel, loop_detail),
    PanelSpec("acklog", "Ack log", "Ack log", AckTailPanel, log_detail, newest_last=True),
    PanelSpec("approvals", "Approvals", "Approvals", ApprovalsPanel, approval_detail, tick="countdown", across=True),
    PanelSpec("budget", "Budget", "Budget", BudgetPanel, budget_detail, tick="ages", below=True),
)
KEYS: tuple[str, ...] = tuple(spec.key for spec in PANELS)
BY_KEY: dict[str, PanelSpec] = {spec.key: spec for spec in PANELS}
# The grid's order: the panels across its top first (what waits for an answer), then two by two, then the
# ones across its bottom (the budget: its spend's sparkline wants the width).
GRID: tuple[PanelSpec, ...] = tuple(sorted(PANELS, key=lambda spec: (not spec.across, spec.below)))


def numbered() -> list[tuple[str, PanelSpec]]:
    """Each panel with its number key ("1" for the first)."""
    return [(str(number), spec) for number, spec in enumerate(PANELS, start=1)]
