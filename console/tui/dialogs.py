"""The console's side of an operation: the dialog that asks it and the message that says how it went.

What each key asks and does is ``console.operations`` (an ``Operation``,
shared by every front end). The app opens ``confirm_screen(operation)``
(``screens.confirm``), runs a confirmed operation off the UI thread and
says how it went with an ``OperationDone`` message: a ``Refused`` is a
warning, any other failure an error. Nothing here fails.
"""
from __future__ import annotations

from textual.message import Message
from textual.notifications import SeverityLevel

from leash.console.operations import Operation
from leash.console.tui.screens.confirm import ConfirmScreen


class OperationDone(Message):
    """A confirmed operation has run: what to say (``severity`` "warning" for a refusal, "error" for a failure)."""

    def __init__(self, said: str, severity: SeverityLevel = "information") -> None:
        super().__init__()
        self.said, self.severity = said, severity


def confirm_screen(operation: Operation) -> ConfirmScreen:
    """The dialog that confirms ``operation``."""
    return ConfirmScreen(operation)
