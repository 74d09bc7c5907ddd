"""Hands-off locks panel: entity, time left, reason."""
from __future__ import annotations

from leash.console.tui.widgets.panel import Column, Panel, duration


class LocksPanel(Panel):
    COLUMNS = (Column("entity", "Entity", keep=True),
               Column("left", "Left", keep=True),
               Column("source", "By", keep=True),
               Column("reason", "Reason"))
    FILL = "reason"

    def cells(self, row: dict, now: float) -> tuple:
        left = row["expires_epoch"] - now if row.get("expires_epoch") is not None else row.get("left")
        return (row["entity"], duration(left), row.get("source", ""), row.get("reason", ""))
