"""Ack-log tail panel: the newest control actions, newest last."""
from __future__ import annotations

from console.widgets.panel import Panel

EVENT_STYLE = {"stop_ack": "red", "fleet_stop": "bold red", "resume": "green", "fleet_resume": "green"}


class AckTailPanel(Panel):
    PANEL = "acklog"
    TITLE = "Ack log"
    COLUMNS = (("seq", "#", 5), ("time", "Time", 8), ("event", "Event", 15), ("source", "Source", 12),
               ("session", "Session", 13), ("reason", "Reason", None))

    def cells(self, row: dict, now: float) -> tuple:
        stamp = row.get("timestamp", "")
        return (str(row.get("seq", "")), stamp[11:19], row.get("event", ""), row.get("source", ""),
                row.get("session_id") or "-", row.get("reason") or "")
