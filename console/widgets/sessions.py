"""Sessions panel: tmux sessions joined with the agent sessions the hooks saw."""
from __future__ import annotations

from rich.text import Text

from leash.console.widgets.panel import Panel, duration

STATE_STYLE = {"running": "green", "stopped": "bold red", "halted": "bold yellow", "paused": "bold magenta",
               "under warrant": "bold red", "hands-off": "cyan"}


class SessionsPanel(Panel):
    PANEL = "sessions"
    TITLE = "Sessions"
    COLUMNS = (("name", "Session", 18), ("state", "State", 13), ("detail", "Why", 18), ("tool", "Last tool", 9),
               ("age", "Age", 6))

    HOST_COLUMN = ("host", "Host", 8)
    HOST_FILTER = "host:"  # ``/host:web1`` shows that host's sessions only

    def show(self, rows: list[dict], now: float) -> None:
        if self.COLUMNS[-1][0] == "host" or not any("host" in row for row in rows):
            super().show(rows, now)
            return
        # A shared store's fleet: the sessions of many hosts, so a column says whose.
        self.COLUMNS = (*self.COLUMNS, self.HOST_COLUMN)
        self.table.clear()
        self.table.add_column(self.HOST_COLUMN[1], key=self.HOST_COLUMN[0], width=self.HOST_COLUMN[2])
        self._shown, self._literals = {}, {}
        super().show(rows, now)

    def cells(self, row: dict, now: float) -> tuple:
        name = row["name"] + ("" if row.get("in_tmux") else " ·")
        cells = (name, Text(row["state"], style=STATE_STYLE.get(row["state"], "")), row.get("detail") or "",
                 row.get("last_tool") or "", duration(row.get("age")))
        return (*cells, row.get("host") or "every host") if len(self.COLUMNS) > len(cells) else cells

    def _matches(self, cells: tuple) -> bool:
        wanted = self.filter_text.strip()
        if wanted.lower().startswith(self.HOST_FILTER) and len(cells) == len(self.COLUMNS) and \
                self.COLUMNS[-1][0] == "host":
            host = wanted[len(self.HOST_FILTER):].strip().lower()
            return str(cells[-1]).lower() in (host, "every host")
        return super()._matches(cells)
