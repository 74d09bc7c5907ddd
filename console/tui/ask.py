"""``Ask``: what a console key asks in its dialog and does once confirmed.

Its own module so that a dialog of its own (``screens.budgetraise``) and the
operations that open it (``app_operations``) both read it without importing
each other. Nothing here fails.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from leash.console.operations import FOCUS_TEXT
from leash.console.tui.screens.confirm import Confirmed, Field


class Ask(NamedTuple):
    """What a key asks in its dialog and does once confirmed (an ``Operation``
    with fields of its own and a ``check``, the core's rule refusing what was
    typed while the dialog is still open)."""
    title: str
    body: str
    run: Callable[[Confirmed], str]  # the message shown when it is done
    text_label: str | None = "Reason (optional)"
    fields: tuple[Field, ...] = ()
    caution: bool = False
    confirm_label: str = "Confirm"
    option_label: str | None = None
    option_key: str = ""
    focus: str = FOCUS_TEXT  # FOCUS_TEXT (the reason) or FOCUS_FIELD (the first field) has the focus first
    check: Callable[[Confirmed], str | None] | None = None
