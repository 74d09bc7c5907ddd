"""Sessions panel: tmux sessions joined with the agent sessions the hooks saw."""
from __future__ import annotations

from rich.text import Text

from leash.console.widgets.panel import Column, Panel, duration
from leash.core.state.sessions import AGENT_STATUSES

STATE_STYLE = {"running": "green", "stopped": "bold red", "halted": "bold yellow", "paused": "bold magenta",
               "under warrant": "bold red", "hands-off": "cyan", "working": "green", "thinking": "green",
               "idle": "dim", "waiting for input": "bold cyan", "waiting for permission": "bold yellow",
               "waiting for approval": "bold yellow", "ended": "dim", "gone": "dim"}
# The longest state there is (the State column sizes itself to the states it
# shows, so a state is never cut and a short one wastes no width).
STATE_WIDTH = max(len(state) for state in (*STATE_STYLE, *AGENT_STATUSES))


class SessionsPanel(Panel):
    COLUMNS: tuple[Column, ...] = (Column("name", "Session", keep=True),
               Column("state", "State", keep=True),
               Column("cli", "CLI", keep=True),
               Column("detail", "Why"),
               Column("tool", "Last tool", 6),
               Column("age", "Age", keep=True))
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
        name = row["name"] + ("" if row.get("in_tmux") else " ·")
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
