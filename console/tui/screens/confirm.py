"""The confirmation modal every state change goes through: an ``Operation`` asked.

What it asks and what it runs are the operation's (``console.operations``,
shared by every front end); this is only how the console asks it. It opens
with the cursor in its text field — the reason, note or message, or the
first field the action needs (a lock's entity) — so what an operator
types straight after the key that opened it is text: letters typed in a field
are never keys. From a field, Enter moves to the next one and from the last to
the confirm button (a second Enter presses it); ctrl+y confirms and ctrl+n or
escape cancels from anywhere; ``y`` and ``n`` confirm and cancel only while a
button (or a box) has the focus, never in a field. The action's own check box
(a stop's "also interrupt the call in flight") is ticked by its key (``i``)
only while no field has the focus, the "continue with caution" box only from
itself (space or Enter on it, or a click). The hint line says which keys act
where the focus is. ``check`` (the core's rule, e.g. its hours parser) may
refuse what was typed: the dialog stays open and says why on its notice line.
The result is a ``Confirmed`` or None (cancelled).

The keys are priority bindings: Textual reads them as each key arrives, in
order, before it is handed to a widget, and ``confirm`` and Enter first let
the field take every key typed before them (``drained``), so a burst
"reason, ctrl+y, more" confirms with exactly "reason". ``opened()`` is set
once the field has the focus (the dashboard waits for it before it reads the
next key: ``screens.dashboard``); ``when_closed`` callbacks run as the dialog
closes, before any later key is read.

At any size the title, the body's first line (what the action is on) and the
buttons stay on the screen: the body scrolls inside the dialog when it is
longer than the room left (a long halt description, an approval's diff) and a
line under it says how many lines are below and that page down shows them;
on a short screen the fields and buttons are drawn compact (an empty field
still shows as a field: its own background and its placeholder). Toasts are
not drawn over the dialog: while it is up, a notification shows on its notice
line instead (``show_notice``; the app routes them there).

The title and body name agent things (sessions, halt descriptions): they are
shown as plain text, never parsed as markup, each line's control characters
escaped.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Static

from leash.console.operations import FOCUS_CANCEL, FOCUS_FIELD, FOCUS_TEXT, OPTION_KEY, Confirmed, Operation
from leash.core.base.text import printable

SHORT_ROWS = 32  # below this height the dialog's fields and buttons are drawn compact
MIN_BODY_ROWS = 2  # the body keeps at least this many rows (the target's line and one more)
NOTICE_STYLES = {"warning": "bold yellow", "error": "bold red"}
DRAIN_SECONDS = 1.0  # the longest a confirm waits for its field to take the keys typed before it
CONFIRM_KEY, CANCEL_KEY = "ctrl+y", "ctrl+n"
SETTLE_SECONDS = 0.5  # after a dialog closes, the screen below takes none of its keys for this long


def plain_lines(text: str) -> Text:
    """``text`` shown literally; its own line breaks kept, every line escaped."""
    return Text("\n".join(printable(line) for line in text.split("\n")))


class Body(VerticalScroll):
    """The dialog's body, scrolled inside it; says when its size changes (``resized``)."""

    def __init__(self, *children: Widget, resized: Callable[[], None], id: str) -> None:  # noqa: A002 (Textual's name)
        super().__init__(*children, id=id)
        self.resized = resized

    def on_resize(self) -> None:
        self.resized()


class Tick(Checkbox):
    """A check box that reads as one: ``[X]`` ticked, ``[ ]`` not (Textual's draws an X either way)."""

    @property
    def _button(self) -> Content:
        return Content.assemble(("[X]" if self.value else "[ ]", self.get_visual_style("toggle--button")))


async def drained(widget: Widget | None, timeout: float = DRAIN_SECONDS) -> None:
    """Once ``widget`` has taken every key handed to it before now (they wait
    in its queue): a field then holds all that was typed before the key that
    reads it, and nothing typed after (that key's binding is a priority one,
    read before the keys after it are handed on)."""
    if widget is None:
        return
    done = asyncio.Event()
    if widget.call_later(done.set):
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except asyncio.TimeoutError:
            pass


def opening_focus(operation: Operation) -> str:
    """Where the focus starts: the field the operation names, else the other
    kind of field, else (no field at all) the Cancel button."""
    if operation.focus == FOCUS_FIELD and operation.fields:
        return FOCUS_FIELD
    if operation.text_label:
        return FOCUS_TEXT
    return FOCUS_FIELD if operation.fields else FOCUS_CANCEL


def text_placeholder(label: str) -> str:
    return "type it here (optional)" if "optional" in label.lower() else "type it here (required)"


class ConfirmScreen(ModalScreen[Confirmed | None]):
    # Every key that acts on the dialog (not on a field's text) is read as it
    # arrives, in order; those that move or read what was typed drain first.
    BINDINGS = [
        Binding(CONFIRM_KEY, "confirm", "Confirm", priority=True),
        Binding(f"{CANCEL_KEY},escape", "cancel", "Cancel", priority=True),
        Binding("enter", "enter", "Next field / press", priority=True),
        Binding("tab", "move(1)", "Next", priority=True),
        Binding("shift+tab", "move(-1)", "Previous", priority=True),
        Binding("space", "tick", "Tick", priority=True),  # on a box only (check_action)
        Binding("y", "button_confirm", "Confirm", priority=True),  # these two: outside a field only
        Binding("n", "button_cancel", "Cancel", priority=True),
        Binding(OPTION_KEY, "tick_option", "Tick", show=False, priority=True),  # a dialog with its own box only
    ]

    def __init__(self, operation: Operation) -> None:
        """The dialog that confirms ``operation``: its text field has the focus
        first (``FOCUS_TEXT``) or its first field (``FOCUS_FIELD``); the Cancel
        button only in a dialog without a field."""
        super().__init__()
        self.operation = operation
        self.fields = operation.fields
        self.focus_first = opening_focus(operation)  # a dialog with a field never opens on a button
        self._opened = asyncio.Event()
        self._when_closed: list[Callable[[], None]] = []
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(Text(printable(self.operation.title)), id="confirm-title")
            with Body(id="confirm-scroll", resized=self._show_more):
                yield Static(plain_lines(self.operation.body), id="confirm-body")
            yield Static("", id="confirm-more")
            for field in self.fields:
                yield Label(field.label, classes="confirm-label")
                yield Input(value=field.value, placeholder=field.placeholder or text_placeholder(field.label),
                            id=f"confirm-{field.name}", classes="confirm-field")
            if self.operation.text_label:
                yield Label(self.operation.text_label, classes="confirm-label")
                yield Input(placeholder=text_placeholder(self.operation.text_label), id="confirm-text",
                            classes="confirm-field")
            if self.operation.caution:
                yield Tick("Continue with caution (I accept the risk)", id="confirm-caution")
            if self.operation.option:
                yield Tick(self.operation.option, id="confirm-option")
            yield Label("", id="confirm-hint")
            yield Static("", id="confirm-notice")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel (esc)", id="confirm-cancel", variant="default")
                yield Button(f"{self.operation.confirm_label} ({CONFIRM_KEY})", id="confirm-ok", variant="error")

    def on_mount(self) -> None:
        self.query_one("#confirm-scroll").can_focus = False  # the keys scroll it from anywhere (below)
        self.watch(self.query_one("#confirm-scroll"), "scroll_y", self._show_more, init=False)
        self._compact()
        first = {FOCUS_TEXT: "#confirm-text", FOCUS_FIELD: ".confirm-field"}.get(self.focus_first, "#confirm-cancel")
        # Screen.set_focus, not Widget.focus: the focus is set now, not after the app's
        # queue, so a key read next (the dashboard waits for opened()) lands in the field.
        self.set_focus(self.query(first).first())
        self._show_hint()
        self._opened.set()
        self.call_after_refresh(self._fit)

    async def opened(self, timeout: float) -> None:
        """Once the dialog is up with its first field focused (or ``timeout`` seconds)."""
        try:
            await asyncio.wait_for(self._opened.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def when_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` as the dialog closes, confirmed or not."""
        self._when_closed.append(callback)

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
        dialog, scroll = self.query_one_optional("#confirm-dialog"), self.query_one_optional("#confirm-scroll")
        if dialog is None or scroll is None or self._answered:  # (closing: its widgets may be gone)
            return
        rest = dialog.outer_size.height - scroll.outer_size.height
        room = max(MIN_BODY_ROWS, self.size.height - rest)
        if scroll.styles.max_height is None or scroll.styles.max_height.value != room:
            scroll.styles.max_height = room
            self.call_after_refresh(self._fit)  # the line below the body may come or go
        self._show_more()  # (and again as the body takes its new height: Body.on_resize)

    def _show_more(self) -> None:
        """Under a body that does not fit: how many of its lines are below, and how to see them."""
        scroll = self.query_one_optional("#confirm-scroll", VerticalScroll)
        more = self.query_one_optional("#confirm-more", Static)
        if scroll is None or more is None or self._answered:
            return
        below = max(0, scroll.virtual_size.height - scroll.size.height - round(scroll.scroll_y))
        overflows = scroll.virtual_size.height > scroll.size.height > 0
        more.update(Text(f"↓ {below} more line{'s' if below != 1 else ''} below: page down shows them"
                         if below else "↑ page up: the lines above", style="italic"))
        if more.has_class("shown") != overflows:
            more.set_class(overflows, "shown")
            self.call_after_refresh(self._fit)

    def _show_hint(self) -> None:
        """What the keys do where the focus is now."""
        hint = self.query_one("#confirm-hint", Label)
        focused, label = self.focused, self.operation.confirm_label
        if isinstance(focused, Input):
            fields = list(self.query(".confirm-field"))
            step = f"⏎ to the {label} button" if focused is fields[-1] else "⏎ next field"
            text = f"{step} · {CONFIRM_KEY} {label} · esc cancel"
        else:
            tick = f" · {OPTION_KEY} ticks the box" if self.operation.option else ""
            text = f"y or {CONFIRM_KEY} {label} · n or esc cancel · tab moves{tick}"
        hint.update(Text(text, no_wrap=True, overflow="ellipsis"))

    def on_descendant_focus(self) -> None:
        if self.is_attached:
            self._show_hint()

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

    # ------------------------------------------------------------ the keys
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter acts here only in a field (elsewhere it is the widget's: a button
        presses, a box ticks); ``y``, ``n`` and the option's key only outside a
        field (on a button or a box). Anywhere else the key is the widget's: a letter in
        a field is text."""
        focused = self.focused
        if action == "tick":
            return isinstance(focused, Checkbox)
        if action == "tick_option" and not self.operation.option:
            return False
        if action in ("button_confirm", "button_cancel", "tick_option"):
            return focused is not None and not isinstance(focused, Input)
        return True

    async def _drained(self) -> None:
        await drained(self.focused)

    async def action_enter(self) -> None:
        """Enter: in a field, the next field (from the last, the confirm button);
        on a button, press it; on a box, tick it."""
        await self._drained()
        focused = self.focused
        if not self.is_attached or focused is None:
            return
        if isinstance(focused, Input):
            fields = list(self.query(".confirm-field"))
            index = fields.index(focused) if focused in fields else len(fields)
            self.set_focus(fields[index + 1] if index + 1 < len(fields) else self.query_one("#confirm-ok", Button))
        elif focused.id == "confirm-ok":
            await self.action_confirm()
        elif focused.id == "confirm-cancel":
            self.action_cancel()
        elif isinstance(focused, Checkbox):
            focused.toggle()

    async def action_move(self, step: int) -> None:
        """Tab and shift+tab, once the field has taken what was typed before them."""
        await self._drained()
        if self.is_attached:
            (self.focus_next if step > 0 else self.focus_previous)()

    def action_tick(self) -> None:
        focused = self.focused
        if isinstance(focused, Checkbox):
            focused.toggle()

    async def action_confirm(self) -> None:
        await self._drained()
        if not self.is_attached or self._answered:
            return
        caution = bool(self.query("#confirm-caution")) and self.query_one("#confirm-caution", Checkbox).value
        if self.operation.caution and not caution:
            self.show_notice("A critical halt is dismissed only with 'continue with caution' ticked.", "warning")
            return
        option = bool(self.query("#confirm-option")) and self.query_one("#confirm-option", Checkbox).value
        values = tuple((field.name, self._value(f"#confirm-{field.name}")) for field in self.fields)
        confirmed = Confirmed(self._value("#confirm-text"), caution, option, values)
        problem = self.operation.check(confirmed) if self.operation.check is not None else None
        if problem:
            self.show_notice(problem, "warning")
            return
        self._close(confirmed)

    async def action_button_confirm(self) -> None:
        await self.action_confirm()

    def action_cancel(self) -> None:
        if self.is_attached and not self._answered:
            self._close(None)

    def action_button_cancel(self) -> None:
        self.action_cancel()

    def action_tick_option(self) -> None:
        self.query_one("#confirm-option", Checkbox).toggle()

    def _value(self, selector: str) -> str:
        found = self.query(selector)
        return found.first(Input).value.strip() if found else ""

    def _close(self, result: Confirmed | None) -> None:
        self._answered = True
        for callback in self._when_closed:
            callback()
        self.dismiss(result)

    def on_key(self, event: events.Key) -> None:
        """Page up and down scroll a long body from anywhere."""
        if event.key in ("pageup", "pagedown"):
            scroll = self.query_one("#confirm-scroll", VerticalScroll)
            (scroll.scroll_page_up if event.key == "pageup" else scroll.scroll_page_down)(animate=False)
            event.stop()

    @on(Button.Pressed, "#confirm-ok")
    async def _ok(self) -> None:
        await self.action_confirm()

    @on(Button.Pressed, "#confirm-cancel")
    def _cancel(self) -> None:
        self.action_cancel()
