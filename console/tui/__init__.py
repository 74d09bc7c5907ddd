"""The Textual console: the dashboard, its screens, widgets, keymap and palette.

The other front ends enter here through the two functions below, never through
the screens and widgets (a test holds the command line and ``leash serve`` to
that): ``run_console`` opens the dashboard on a backend, ``run_demo`` opens it
on a throwaway fleet. A keymap that cannot be built, or a demo home that is
taken, is a ``UsageError`` naming why, before any screen is drawn.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from leash.core.base.tmux import Tmux
    from leash.core.store.protocols import Backend, Change


def run_console(home: str | os.PathLike, *, tmux: Tmux, backend: Backend, run_kennel: bool, read_only: bool,
                changes: AsyncIterator[Change] | None) -> int:
    """The dashboard on ``backend`` until the operator quits it (exit 0)."""
    from leash.console.errors import UsageError
    from leash.console.tui.app import LeashApp
    from leash.console.tui.keymap import KeymapError

    try:
        app = LeashApp(home, tmux=tmux, run_kennel=run_kennel, read_only=read_only, backend=backend,
                       changes=changes)
    except KeymapError as exc:
        raise UsageError(str(exc)) from None
    app.run()
    return 0


def run_demo(*, keep: bool, home: str | None) -> int:
    """``leash demo``: the dashboard on a throwaway home and fleet."""
    from leash.console.errors import UsageError
    from leash.console.tui.demo import DemoHomeTaken
    from leash.console.tui.demo import run_demo as run

    try:
        return run(keep=keep, home=home)
    except DemoHomeTaken as exc:
        raise UsageError(str(exc)) from None
