"""Why a session is held: ``leash why`` in the console.

Every rule that holds the session now (``core.why``, the gate's own answer),
each with the command that lifts it. The answer is read by the app off the UI
thread and handed in; every line is agent text, shown escaped as plain text.
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from leash.core.base.text import printable


def why_lines(answer: dict) -> list[str]:
    """The answer as ``leash why`` words it: a headline, then each rule and what lifts it."""
    from leash.core.views.why import describe

    session = answer["session"]
    if not answer["held"]:
        lines = [f"{session} is free: nothing holds it now."]
    else:
        count = len(answer["rules"])
        lines = [f"{session} is held by {count} rule{'s' if count != 1 else ''}:"]
        for rule in answer["rules"]:
            text, _, lift = describe(rule).rpartition(" [")
            lines += [f"  {text}", f"      lift: {lift.rstrip(']')}"]
    for lock in answer["path_locks_elsewhere"]:
        lines.append(f"  (also in force: {lock['entity']}, which covers no file under its working directory now)")
    return lines


class WhyScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("q", "close", "Close"), Binding("i", "close", "Close")]

    def __init__(self, answer: dict):
        super().__init__()
        self.answer = answer

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="why-dialog"):
            yield Static(Text("\n".join(printable(line) for line in why_lines(self.answer))), id="why-body")
            yield Static(Text("escape closes"), id="why-hint")

    def action_close(self) -> None:
        self.dismiss(None)
