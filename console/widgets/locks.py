"""Hands-off locks panel: entity, time left, reason."""
from __future__ import annotations

from leash.console.widgets.panel import Panel, duration


class LocksPanel(Panel):
    PANEL = "locks"
    TITLE = "Hands-off locks"
    COLUMNS = (("entity", "Entity", 22), ("left", "Left", 7), ("source", "By", 12), ("reason", "Reason", None))

    def cells(self, row: dict, now: float) -> tuple:
        left = row["expires_epoch"] - now if row.get("expires_epoch") is not None else row.get("left")
        return (row["entity"], duration(left), row.get("source", ""), row.get("reason", ""))
