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

    def cells(self, row: dict, now: float) -> tuple:
        name = row["name"] + ("" if row.get("in_tmux") else " ·")
        return (name, Text(row["state"], style=STATE_STYLE.get(row["state"], "")), row.get("detail") or "",
                row.get("last_tool") or "", duration(row.get("age")))
