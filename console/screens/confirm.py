"""The confirmation modal every state change goes through.

``y`` confirms, ``n`` or ``escape`` cancels, and the Cancel button has focus
first, so a stray Enter cancels; a modal whose text is what it asks for (an
approval's deny message, the entity to lock) gives that field the focus first
instead. Enter in a text field moves to the next field and never confirms, so
a typed note cannot confirm by accident (the dialog says so); ``y`` and ``n``
typed there are letters of the text. A reason or note can be typed; extra
fields (hours, an entity) and a "continue with caution" check box appear when
the action needs them, and so does an option of the action's own (a stop's
"also interrupt the call in flight"), a check box its key (``i``) ticks while
no text field has focus. ``check`` (the core's rule, e.g. its hours parser)
may refuse what was typed: the dialog stays open and says why on its notice
line. The result is a ``Confirmed`` or None (cancelled).

At any size the title, the body's first line (what the action is on) and the
buttons stay on the screen: the body scrolls inside the dialog when it is
longer than the room left (a long halt description), and on a short screen
the fields and buttons are drawn compact. Toasts are not drawn over the
dialog: while it is up, a notification shows on its notice line instead
(``show_notice``; the app routes them there), and the toasts come back with
the main screen.

The title and body name agent things (sessions, halt descriptions): they are
shown as plain text, never parsed as markup, each line's control characters
escaped.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

from leash.core.base.text import printable

SHORT_ROWS = 32  # below this height the dialog's fields and buttons are drawn compact
MIN_BODY_ROWS = 2  # the body keeps at least this many rows (the target's line and one more)
FOCUS_CANCEL, FOCUS_TEXT, FOCUS_FIELD = "cancel", "text", "field"
NOTICE_STYLES = {"warning": "bold yellow", "error": "bold red"}


def plain_lines(text: str) -> Text:
    """``text`` shown literally; its own line breaks kept, every line escaped."""
    return Text("\n".join(printable(line) for line in text.split("\n")))


class Field(NamedTuple):
    """A text field of the dialog besides the reason: its label, first value and name
    (its widget is ``#confirm-<name>``; ``Confirmed.value(name)`` reads it)."""
    label: str
    value: str = ""
    name: str = "extra"


class Confirmed(NamedTuple):
    text: str = ""
    extra: str = ""  # the first field's value
    caution: bool = False
    option: bool = False  # the action's own check box, ticked
    values: tuple[tuple[str, str], ...] = ()  # (name, value) of every field

    def value(self, name: str) -> str:
        return dict(self.values).get(name, "")


class ConfirmScreen(ModalScreen[Confirmed | None]):
    BINDINGS = [
        Binding("y", "confirm", "Confirm"),
        Binding("n", "cancel", "Cancel"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, title: str, body: str, *, text_label: str | None = "Reason (optional)",
                 extra_label: str | None = None, extra_value: str = "", caution: bool = False,
                 confirm_label: str = "Confirm", option_label: str | None = None, option_key: str = "",
                 focus_text: bool = False, fields: tuple[Field, ...] = (), focus: str = "",
                 check: Callable[[Confirmed], str | None] | None = None):
        """``fields``: the extra text fields (``extra_label``/``extra_value``: one,
        named ``extra``). ``focus``: what has the focus first: ``cancel`` (the
        default), ``text`` (the reason; ``focus_text`` says the same) or ``field``
        (the first field). ``check``: what refuses a confirmation, as a one-line
        problem (None: fine)."""
        super().__init__()
        self.fields = tuple(fields) or ((Field(extra_label, extra_value),) if extra_label else ())
        focus = focus or (FOCUS_TEXT if focus_text else FOCUS_CANCEL)
        if focus == FOCUS_TEXT and not text_label or focus == FOCUS_FIELD and not self.fields:
            focus = FOCUS_CANCEL
        self.focus_first = focus
        self.option_label = option_label
        self.option_key = option_key
        self.title_text = title
        self.body = body
        self.text_label = text_label
        self.caution = caution
        self.confirm_label = confirm_label
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(Text(printable(self.title_text)), id="confirm-title")
            with VerticalScroll(id="confirm-scroll"):
                yield Static(plain_lines(self.body), id="confirm-body")
            for field in self.fields:
                yield Label(field.label, classes="confirm-label")
                yield Input(value=field.value, id=f"confirm-{field.name}", classes="confirm-field")
            if self.text_label:
                yield Label(self.text_label, classes="confirm-label")
                yield Input(id="confirm-text")
            if self.caution:
                yield Checkbox("Continue with caution (I accept the risk)", id="confirm-caution")
            if self.option_label:
                yield Checkbox(self.option_label, id="confirm-option")
            if self.text_label or self.fields:
                yield Label("Enter moves to the next field; y or the Confirm button confirms.", id="confirm-hint")
            yield Static("", id="confirm-notice")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel (n)", id="confirm-cancel", variant="default")
                yield Button(f"{self.confirm_label} (y)", id="confirm-ok", variant="error")

    def on_mount(self) -> None:
        self.query_one("#confirm-scroll").can_focus = False  # the keys scroll it from anywhere (below)
        self._compact()
        if self.focus_first == FOCUS_TEXT:
            self.query_one("#confirm-text", Input).focus()
        elif self.focus_first == FOCUS_FIELD:
            self.query_one(f"#confirm-{self.fields[0].name}", Input).focus()
        else:
            self.query_one("#confirm-cancel", Button).focus()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self._compact()
        self.call_after_refresh(self._fit)

    def _compact(self) -> None:
        """Fields, check boxes and buttons one row high on a short screen."""
        short = self.size.height < SHORT_ROWS
        self.set_class(short, "-short")
        for widget in self.query("#confirm-dialog Input, #confirm-dialog Checkbox, #confirm-dialog Button"):
            if isinstance(widget, (Input, Checkbox, Button)):
                widget.compact = short

    def _fit(self) -> None:
        """The body scrolls in the room the rest of the dialog leaves on the screen."""
        if not self.is_attached:
            return
        dialog, scroll = self.query_one("#confirm-dialog"), self.query_one("#confirm-scroll")
        rest = dialog.outer_size.height - scroll.outer_size.height
        room = max(MIN_BODY_ROWS, self.size.height - rest)
        if scroll.styles.max_height is None or scroll.styles.max_height.value != room:
            scroll.styles.max_height = room

    def show_notice(self, text: str, severity: str = "information") -> None:
        """One line inside the dialog, above its buttons: why a confirmation was
        refused, or a notification raised while the dialog is up."""
        if not self.is_attached:
            return
        notice = self.query_one("#confirm-notice", Static)
        notice.update(Text(printable(text), style=NOTICE_STYLES.get(severity, ""), no_wrap=True,
                           overflow="ellipsis"))
        if not notice.has_class("shown"):
            notice.add_class("shown")
            self.call_after_refresh(self._fit)

    def _value(self, selector: str) -> str:
        found = self.query(selector)
        return found.first(Input).value.strip() if found else ""

    def action_confirm(self) -> None:
        caution = bool(self.query("#confirm-caution")) and self.query_one("#confirm-caution", Checkbox).value
        if self.caution and not caution:
            self.show_notice("A critical halt is dismissed only with 'continue with caution' ticked.", "warning")
            return
        option = bool(self.query("#confirm-option")) and self.query_one("#confirm-option", Checkbox).value
        values = tuple((field.name, self._value(f"#confirm-{field.name}")) for field in self.fields)
        confirmed = Confirmed(self._value("#confirm-text"), values[0][1] if values else "", caution, option, values)
        problem = self.check(confirmed) if self.check is not None else None
        if problem:
            self.show_notice(problem, "warning")
            return
        self.dismiss(confirmed)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_key(self, event) -> None:
        """The option's key ticks its box (a text field with focus keeps its
        letters); page up and down scroll a long body."""
        if self.option_label and self.option_key and event.key == self.option_key:
            self.query_one("#confirm-option", Checkbox).toggle()
            event.stop()
        elif event.key in ("pageup", "pagedown"):
            scroll = self.query_one("#confirm-scroll", VerticalScroll)
            (scroll.scroll_page_up if event.key == "pageup" else scroll.scroll_page_down)(animate=False)
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
