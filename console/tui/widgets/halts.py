"""Pending halts panel: severity, type, condition, session, age, description.

The session is named as the Sessions panel names it (the core's ``session``:
the tmux session its agent is in, else the agent's id)."""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.panel import Column, Panel, duration

SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "dim"}


class HaltsPanel(Panel):
    # Short of room: the description goes first (the detail line shows it), then the age.
    COLUMNS = (Column("severity", "Severity", keep=True),
               Column("type", "Type", keep=True),
               Column("condition", "Condition", keep=True),
               Column("session", "Session", keep=True),
               Column("age", "Age", keep=True, drop=2),
               Column("description", "Description", drop=1))
    FILL = "description"

    def cells(self, row: dict, now: float) -> tuple:
        severity = row["severity"] + (" ⇡" if row.get("resolution") in ("escalated", "timeout") else "")
        return (Text(severity, style=SEVERITY_STYLE.get(row["severity"], "")), row["halt_type"],
                row.get("condition_name") or "-", row.get("session") or row["session_id"],
                duration(now - row["triggered_epoch"]) if row.get("triggered_epoch") else duration(row.get("age")),
                row["description"])
