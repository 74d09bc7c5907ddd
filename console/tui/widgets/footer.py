"""The console's footer: Textual's, laid out again only when what it shows changed.

Textual's ``Footer`` rebuilds its keys (new widgets, styled anew) each time
its screen's bindings are refreshed, once per call: a panel switch refreshes
them four or five times (the focus moves, the tab strip follows, the
dashboard asks), and a dialog's settle twice more, mostly to show what
was already shown. This one looks first, and rebuilds only if the keys it
would show (key, text, action, lit or dimmed) are not those it shows. What it shows is Textual's
footer's, unchanged; a screen whose bindings cannot be read rebuilds as
Textual's would.

Each refresh of the bindings asks for a look of its own, in the footer's own
queue (``call_later``). Textual's footer asks for its rebuild after the
refresh of whichever screen is on top instead, and a dialog that goes before
its next refresh can take such a request with it: Textual's footer is
rebuilt at the next refresh of the bindings all the same, but a first
version of this one, which asked for one look at a time, waited for the lost
one and was left blank under the dashboard now and then after a dialog.
Under a dialog it shows what Textual's shows (nothing: the bindings of a
screen that is not on top read empty), and its keys again once the
dashboard is back.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """A ``Footer`` that skips the rebuilds that would show the same keys,
    and styles each key it builds once."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._drawn: tuple | None = None  # what the last rebuild showed (None: nothing yet)

    def shows(self) -> tuple | None:
        """What a rebuild would show now: each key's binding, key display and
        whether it is lit, and the palette's; None before the bindings are ready."""
        if not self._bindings_ready:
            return None
        app = self.app
        return (self.show_command_palette, app.ENABLE_COMMAND_PALETTE, self.compact,
                tuple((key, binding.action, binding.description, binding.group, app.get_key_display(binding),
                       enabled, tooltip)
                      for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
                      if binding.show or key == app.COMMAND_PALETTE_BINDING))

    def compose(self) -> ComposeResult:
        self._drawn = self.shows()
        for widget in super().compose():
            # A binding's key is born compact and bound to the footer's
            # ``compact`` (False here): Textual's watchers add the class at its
            # mount and take it away again, styling the key anew each time (6 %
            # of the console's time through a run of dialogs). Such a key starts
            # as it would end instead; any other (the palette's) is left as is.
            # (Textual's data binding, read where it keeps it: a Textual that
            # keeps it elsewhere gets its own footer's keys, styled as before.)
            compact = getattr(type(widget), "compact", None)
            if isinstance(compact, Reactive) and "compact" in (getattr(widget, "_reactive_connect", None) or {}):
                widget.set_reactive(compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        self.call_later(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        if self.is_attached and self.shows() != self._drawn:
            await self.recompose()
