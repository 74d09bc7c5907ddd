"""Loop breakers panel: name, boots in the window against the threshold, tripped."""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.panel import Column, Panel


class LoopsPanel(Panel):
    COLUMNS = (Column("name", "Breaker", keep=True),
               Column("boots", "Boots", keep=True),
               Column("window", "Window", keep=True),
               Column("tripped", "State", keep=True))

    def cells(self, row: dict, now: float) -> tuple:
        state = Text("TRIPPED", style="bold red") if row.get("tripped") else Text("ok", style="green")
        gap = f"+{row['max_gap_seconds']:g}" if row.get("max_gap_seconds") else ""
        return (row["name"], f"{row.get('in_loop', 0)}/{row.get('max_restarts', 0)}",
                f"{row.get('window_seconds', 0):g}s{gap}", state)
