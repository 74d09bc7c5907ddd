"""Warrants panel: target, state, attempt n/N, and a bar counting down the open gate."""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.panel import Column, Panel

BAR_WIDTH = 12


def countdown_bar(fraction: float | None, seconds: float | None) -> Text:
    if fraction is None:
        return Text("")
    filled = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH)
    style = "green" if fraction > 0.5 else "yellow" if fraction > 0.2 else "red"
    bar = Text("█" * filled, style=style)
    bar.append("░" * (BAR_WIDTH - filled), style="dim")
    bar.append(f" {seconds:4.0f}s" if seconds is not None and seconds >= 10 else f" {seconds or 0:4.1f}s")
    return bar


class WarrantsPanel(Panel):
    COLUMNS = (Column("target", "Target", keep=True),
               Column("state", "State", keep=True),
               Column("attempt", "Try", keep=True),
               Column("gate", "Gate", keep=True),
               Column("reason", "Reason", drop=1))  # short of room: the detail line shows it
    FILL = "reason"

    def cells(self, row: dict, now: float) -> tuple:
        fraction = seconds = None
        if row.get("deadline_epoch") is not None:
            seconds = max(0.0, row["deadline_epoch"] - now)
            fraction = seconds / max(0.001, row["gate_seconds"])
        return (row.get("target", ""), row.get("state", ""), row.get("attempt_label", ""),
                countdown_bar(fraction, seconds), row.get("reason", ""))
