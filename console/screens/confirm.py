"""The confirmation modal every state change goes through.

``y`` confirms, ``n`` or ``escape`` cancels, and the Cancel button has focus
first, so a stray Enter cancels; a modal whose text is what it asks for (an
approval's deny message) gives its text field the focus first instead. Enter
in a text field moves to the next field and never confirms, so a typed note
cannot confirm by accident (the dialog says so); ``y`` and ``n`` typed there
are letters of the text. A reason or note can be typed; an extra
field (hours, an entity) and a "continue with caution" check box appear when
the action needs them, and so does an option of the action's own (a stop's
"also interrupt the call in flight"), a check box its key (``i``) ticks while
no text field has focus. The result is a ``Confirmed`` or None (cancelled).

The title and body name agent things (sessions, halt descriptions): they are
shown as plain text, never parsed as markup, each line's control characters
escaped.
"""
from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

from leash.core.base.text import printable


def plain_lines(text: str) -> Text:
    """``text`` shown literally; its own line breaks kept, every line escaped."""
    return Text("\n".join(printable(line) for line in text.split("\n")))


class Confirmed(NamedTuple):
    text: str = ""
    extra: str = ""
    caution: bool = False
    option: bool = False  # the action's own check box, ticked


class ConfirmScreen(ModalScreen[Confirmed | None]):
    BINDINGS = [
        Binding("y", "confirm", "Confirm"),
        Binding("n", "cancel", "Cancel"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, title: str, body: str, *, text_label: str | None = "Reason (optional)",
                 extra_label: str | None = None, extra_value: str = "", caution: bool = False,
                 confirm_label: str = "Confirm", option_label: str | None = None, option_key: str = "",
                 focus_text: bool = False):
        """``focus_text``: the text field has the focus first (else the Cancel button)."""
        super().__init__()
        self.focus_text = focus_text and bool(text_label)
        self.option_label = option_label
        self.option_key = option_key
        self.title_text = title
        self.body = body
        self.text_label = text_label
        self.extra_label = extra_label
        self.extra_value = extra_value
        self.caution = caution
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(Text(printable(self.title_text)), id="confirm-title")
            yield Static(plain_lines(self.body), id="confirm-body")
            if self.extra_label:
                yield Label(self.extra_label, classes="confirm-label")
                yield Input(value=self.extra_value, id="confirm-extra")
            if self.text_label:
                yield Label(self.text_label, classes="confirm-label")
                yield Input(id="confirm-text")
            if self.caution:
                yield Checkbox("Continue with caution (I accept the risk)", id="confirm-caution")
            if self.option_label:
                yield Checkbox(self.option_label, id="confirm-option")
            if self.text_label or self.extra_label:
                yield Label("Enter moves to the next field; y or the Confirm button confirms.", id="confirm-hint")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel (n)", id="confirm-cancel", variant="default")
                yield Button(f"{self.confirm_label} (y)", id="confirm-ok", variant="error")

    def on_mount(self) -> None:
        if self.focus_text:
            self.query_one("#confirm-text", Input).focus()
        else:
            self.query_one("#confirm-cancel", Button).focus()

    def _value(self, selector: str) -> str:
        found = self.query(selector)
        return found.first(Input).value.strip() if found else ""

    def action_confirm(self) -> None:
        caution = bool(self.query("#confirm-caution")) and self.query_one("#confirm-caution", Checkbox).value
        if self.caution and not caution:
            self.notify("A critical halt is dismissed only with 'continue with caution' ticked.",
                        severity="warning")
            return
        option = bool(self.query("#confirm-option")) and self.query_one("#confirm-option", Checkbox).value
        self.dismiss(Confirmed(self._value("#confirm-text"), self._value("#confirm-extra"), caution, option))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_key(self, event) -> None:
        """The option's key ticks its box (a text field with focus keeps its letters)."""
        if self.option_label and self.option_key and event.key == self.option_key:
            self.query_one("#confirm-option", Checkbox).toggle()
            event.stop()

    @on(Button.Pressed, "#confirm-ok")
    def _ok(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#confirm-cancel")
    def _cancel(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.focus_next()
