"""Sessions panel: tmux sessions joined with the agent sessions the hooks saw.

A session with no tmux pane on this host (nothing to peek at) has
``NO_TMUX_MARK`` after its name; ``LEGEND`` says so on the help screen, and
the detail line says so in words. Once any session's spend is metered a
Cost column shows each one's (``cost_text``: ``~`` marks an estimate, blank
for a session nothing metered); short of room it goes after the last tool
and the CLI, before the age."""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.budget import ESTIMATED_MARK
from leash.console.tui.widgets.panel import Column, Panel, duration
from leash.core.state.sessions import AGENT_STATUSES

STATE_STYLE = {"running": "green", "stopped": "bold red", "halted": "bold yellow", "paused": "bold magenta",
               "under warrant": "bold red", "hands-off": "cyan", "working": "green", "thinking": "green",
               "idle": "dim", "waiting for input": "bold cyan", "waiting for permission": "bold yellow",
               "waiting for approval": "bold yellow", "ended": "dim", "gone": "dim"}
NO_TMUX_MARK = " ·"
LEGEND = (("·", "after a session's name: no tmux pane of it on this host (nothing to peek at)"),)
# The Why column's floor: the core's short reasons ("pending halt", "escalated halt") whole.
WHY_FLOOR = 14
COST_WHOLE_FROM = 100.0  # from this many dollars a session's cost is shown without cents (the column stays narrow)
# The longest state there is (the State column sizes itself to the states it
# shows, so a state is never cut and a short one wastes no width).
STATE_WIDTH = max(len(state) for state in (*STATE_STYLE, *AGENT_STATUSES))


def cost_text(cost: dict | None) -> str:
    """A session's spend, narrow: ``$1.24``, ``~$1.24`` when estimated, whole
    dollars from $100 (``$1,240``); "" when nothing of it was metered."""
    if not cost:
        return ""
    usd = cost["usd"]
    shown = f"${usd:,.0f}" if usd >= COST_WHOLE_FROM else f"${usd:,.2f}"
    return f"{ESTIMATED_MARK if cost.get('estimated') else ''}{shown}"


class SessionsPanel(Panel):
    # Short of room: the last tool goes first, then the CLI, then the cost, then the age (``Column.drop``).
    COLUMNS: tuple[Column, ...] = (Column("name", "Session", keep=True),
                                   Column("state", "State", keep=True),
                                   Column("cli", "CLI", keep=True, drop=2),
                                   Column("detail", "Why", WHY_FLOOR),
                                   Column("tool", "Last tool", 6, drop=1),
                                   Column("age", "Age", keep=True, drop=4))
    FILL = "detail"

    HOST_COLUMN = Column("host", "Host", keep=True)
    HOST_FILTER = "host:"  # ``/host:web1`` shows that host's sessions only
    # Before the age, once a session's spend is metered (a fleet that meters nothing has no Cost column).
    COST_COLUMN = Column("cost", "Cost", keep=True, drop=3)

    def show(self, rows: list[dict], now: float) -> None:
        columns = self.COLUMNS
        if not self._hosts_shown() and any("host" in row for row in rows):
            # A shared store's fleet: the sessions of many hosts, so a column (after the name) says whose.
            columns = (columns[0], self.HOST_COLUMN, *columns[1:])
        if not self._costs_shown() and any(row.get("cost") for row in rows):
            columns = (*columns[:-1], self.COST_COLUMN, columns[-1])
        if columns != self.COLUMNS:  # the table is laid out again with the new columns
            self.COLUMNS = columns
            self.table.clear(columns=True)
            self.add_columns()
            self._shown, self._literals = {}, {}
        super().show(rows, now)

    def _hosts_shown(self) -> bool:
        return len(self.COLUMNS) > 1 and self.COLUMNS[1][0] == "host"

    def _costs_shown(self) -> bool:
        return self.COST_COLUMN in self.COLUMNS

    def cells(self, row: dict, now: float) -> tuple:
        name = row["name"] + ("" if row.get("in_tmux") else NO_TMUX_MARK)
        rest: tuple = (Text(row["state"], style=STATE_STYLE.get(row["state"], "")), row.get("cli") or "",
                       row.get("detail") or "", row.get("last_tool") or "")
        if self._costs_shown():
            rest = (*rest, cost_text(row.get("cost")))
        rest = (*rest, duration(row.get("age")))
        if self._hosts_shown():
            return (name, row.get("host") or "every", *rest)
        return (name, *rest)

    def _matches(self, cells: tuple) -> bool:
        wanted = self.filter_text.strip()
        if wanted.lower().startswith(self.HOST_FILTER) and self._hosts_shown():
            host = wanted[len(self.HOST_FILTER):].strip().lower()
            return str(cells[1]).lower() in (host, "every")
        return super()._matches(cells)
