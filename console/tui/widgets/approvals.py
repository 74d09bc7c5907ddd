"""Approvals panel: agents' calls waiting for an operator's answer, oldest first.

Columns: the session (named as the Sessions panel names it), the tool, how
long it has waited, the time left to its deadline (red within
``APPROVAL_DUE_SECONDS`` of it: then leashd answers for the operator, as
``[approvals] on_timeout`` says) and what the call would do (the store's one
masked line; last, as every panel's longest text, so it never pushes the
times out of sight). The detail line shows the whole command or diff.
"""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.panel import Column, Panel, duration
from leash.core.views.fleet import approval_due

WAITING_STYLE = "bold yellow"
DUE_STYLE = "bold white on red"  # a background: it shows on the cursor's row too


def left_text(row: dict, now: float) -> Text:
    """The time left to the deadline, coloured by urgency."""
    deadline = row.get("deadline_epoch")
    if deadline is None:
        return Text(duration(row.get("left")))
    return Text(duration(max(0.0, deadline - now)), style=DUE_STYLE if approval_due(deadline, now) else WAITING_STYLE)


class ApprovalsPanel(Panel):
    COLUMNS = (Column("session", "Session", keep=True),
               Column("tool", "Tool", keep=True),
               Column("age", "Age", keep=True),
               Column("left", "Left", keep=True),
               Column("what", "What it would do"))
    FILL = "what"

    def cells(self, row: dict, now: float) -> tuple:
        requested = row.get("requested_epoch")
        age = now - requested if requested is not None else row.get("age")
        return (row.get("session") or row.get("session_id") or "?", row.get("tool") or "?", duration(age),
                left_text(row, now), row.get("summary") or "")
