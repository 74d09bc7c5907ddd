"""Sessions panel: tmux sessions joined with the agent sessions the hooks saw.

A session with no tmux pane on this host (nothing to peek at) has
``NO_TMUX_MARK`` after its name; ``LEGEND`` says so on the help screen, and
the detail line says so in words."""
from __future__ import annotations

from rich.text import Text

from leash.console.widgets.panel import Column, Panel, duration
from leash.core.state.sessions import AGENT_STATUSES

STATE_STYLE = {"running": "green", "stopped": "bold red", "halted": "bold yellow", "paused": "bold magenta",
               "under warrant": "bold red", "hands-off": "cyan", "working": "green", "thinking": "green",
               "idle": "dim", "waiting for input": "bold cyan", "waiting for permission": "bold yellow",
               "waiting for approval": "bold yellow", "ended": "dim", "gone": "dim"}
NO_TMUX_MARK = " ·"
LEGEND = (("·", "after a session's name: no tmux pane of it on this host (nothing to peek at)"),)
# The Why column's floor: the core's short reasons ("pending halt", "escalated halt") whole.
WHY_FLOOR = 14
# The longest state there is (the State column sizes itself to the states it
# shows, so a state is never cut and a short one wastes no width).
STATE_WIDTH = max(len(state) for state in (*STATE_STYLE, *AGENT_STATUSES))


class SessionsPanel(Panel):
    # Short of room: the last tool goes first, then the CLI, then the age (``Column.drop``).
    COLUMNS: tuple[Column, ...] = (Column("name", "Session", keep=True),
                                   Column("state", "State", keep=True),
                                   Column("cli", "CLI", keep=True, drop=2),
                                   Column("detail", "Why", WHY_FLOOR),
                                   Column("tool", "Last tool", 6, drop=1),
                                   Column("age", "Age", keep=True, drop=3))
    FILL = "detail"

    HOST_COLUMN = Column("host", "Host", keep=True)
    HOST_FILTER = "host:"  # ``/host:web1`` shows that host's sessions only

    def show(self, rows: list[dict], now: float) -> None:
        if self._hosts_shown() or not any("host" in row for row in rows):
            super().show(rows, now)
            return
        # A shared store's fleet: the sessions of many hosts, so a column (after
        # the name) says whose. The table is laid out again with it.
        self.COLUMNS = (self.COLUMNS[0], self.HOST_COLUMN, *self.COLUMNS[1:])
        self.table.clear(columns=True)
        self.add_columns()
        self._shown, self._literals = {}, {}
        super().show(rows, now)

    def _hosts_shown(self) -> bool:
        return len(self.COLUMNS) > 1 and self.COLUMNS[1][0] == "host"

    def cells(self, row: dict, now: float) -> tuple:
        name = row["name"] + ("" if row.get("in_tmux") else NO_TMUX_MARK)
        rest = (Text(row["state"], style=STATE_STYLE.get(row["state"], "")), row.get("cli") or "",
                row.get("detail") or "",
                row.get("last_tool") or "", duration(row.get("age")))
        if self._hosts_shown():
            return (name, row.get("host") or "every", *rest)
        return (name, *rest)

    def _matches(self, cells: tuple) -> bool:
        wanted = self.filter_text.strip()
        if wanted.lower().startswith(self.HOST_FILTER) and self._hosts_shown():
            host = wanted[len(self.HOST_FILTER):].strip().lower()
            return str(cells[1]).lower() in (host, "every")
        return super()._matches(cells)
