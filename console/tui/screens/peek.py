"""Peek at a session's pane: its last lines, refreshed every second.

The newest line is at the bottom and the view follows it, whatever the
screen's height; scrolled up (arrows, page up), it stays put until scrolled
back to the end.

The pane's lines and the session's name are the agent's text: shown as plain
text, never parsed as markup, control characters escaped.
"""
from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from leash.core.base.text import printable

PEEK_LINES = 60
Capture = Callable[[str, int], list[str]]  # (session, lines) -> the pane's newest lines


class PeekScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("enter", "close", "Close"), Binding("q", "close", "Close")]

    class PaneRead(Message):
        """The pane's lines as shown (escaped), or why they could not be read."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, session: str, capture: Capture) -> None:
        super().__init__()
        self.session = session
        self.capture = capture

    def compose(self) -> ComposeResult:
        with Vertical(id="peek-dialog"):
            yield Label(Text(f"Pane of {printable(self.session)} (escape closes)"), id="peek-title")
            with VerticalScroll(id="peek-scroll"):
                yield Static("", id="peek-body")

    def on_mount(self) -> None:
        self.load()
        self.set_interval(1.0, self.load)

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        try:
            lines = self.capture(self.session, PEEK_LINES)
            text = "\n".join(map(printable, lines)) if lines else "(the pane is empty)"
        except Exception as exc:
            text = printable(f"(cannot read the pane: {exc})")
        self.post_message(self.PaneRead(text))

    @on(PaneRead)
    def _show(self, message: PeekScreen.PaneRead) -> None:
        if not self.is_attached:
            return
        scroll = self.query_one("#peek-scroll", VerticalScroll)
        following = scroll.scroll_y >= scroll.max_scroll_y
        self.query_one("#peek-body", Static).update(Text(message.text))
        if following:
            scroll.call_after_refresh(scroll.scroll_end, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
