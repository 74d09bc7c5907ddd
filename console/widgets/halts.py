"""Pending halts panel: severity, type, condition, session, age, description."""
from __future__ import annotations

from rich.text import Text

from leash.console.widgets.panel import Panel, duration

SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "dim"}


class HaltsPanel(Panel):
    PANEL = "halts"
    TITLE = "Pending halts"
    COLUMNS = (("severity", "Severity", 9), ("type", "Type", 11), ("condition", "Condition", 20),
               ("session", "Session", 13), ("age", "Age", 6), ("description", "Description", None))

    def cells(self, row: dict, now: float) -> tuple:
        severity = row["severity"] + (" ⇡" if row.get("resolution") in ("escalated", "timeout") else "")
        return (Text(severity, style=SEVERITY_STYLE.get(row["severity"], "")), row["halt_type"],
                row.get("condition_name") or "-", row["session_id"],
                duration(now - row["triggered_epoch"]) if row.get("triggered_epoch") else duration(row.get("age")),
                row["description"])
