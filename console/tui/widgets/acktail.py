"""Ack-log tail panel: the newest control actions, newest last, scrolled to them.

Like the log screen's follow mode: while the cursor is on the newest line (or
nowhere yet), a new line moves it down to the new newest, so the panel shows
the end of the log at any height; a cursor moved up stays where it was put.
"""
from __future__ import annotations

from leash.console.tui.widgets.panel import Column, Panel

EVENT_STYLE = {"stop_ack": "red", "fleet_stop": "bold red", "resume": "green", "fleet_resume": "green",
               "interrupt": "bold red"}


class AckTailPanel(Panel):
    COLUMNS = (Column("seq", "#", keep=True),
               Column("time", "Time", keep=True),
               Column("event", "Event", keep=True),
               Column("source", "Source", drop=1),  # short of room: the detail line names it
               Column("session", "Session"),
               Column("reason", "Reason"))
    FILL = "reason"

    def show(self, rows: list[dict], now: float) -> None:
        table = self.table
        following = not table.row_count or table.cursor_row >= table.row_count - 1
        super().show(rows, now)
        if following and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)

    def cells(self, row: dict, now: float) -> tuple:
        stamp = row.get("timestamp", "")
        return (str(row.get("seq", "")), stamp[11:19], row.get("event", ""), row.get("source", ""),
                row.get("session_id") or "-", row.get("reason") or "")
