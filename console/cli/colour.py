"""Colour for the command line's human-readable output.

``paint(text, style)`` wraps already-escaped text in ANSI SGR codes when
colour is on: stdout is a terminal and ``NO_COLOR`` is unset or empty
(https://no-color.org). Anything else — a pipe, a file, a test capturing
output, ``NO_COLOR=1`` — gets the text unchanged, so no escape code ever
reaches non-terminal output. The text given must already have passed through
``core.text.printable``: the only control characters on the line are the
codes added here.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import TextIO

STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36",
          "alarm": "1;37;41"}
RESET = "\x1b[0m"
STATE_STYLE = {"stopped": "red", "halted": "yellow", "paused": "magenta", "under warrant": "red",
               "hands-off": "cyan", "running": "green", "working": "green", "thinking": "green", "idle": "dim",
               "waiting for input": "cyan", "waiting for permission": "yellow", "waiting for approval": "yellow",
               "ended": "dim", "gone": "dim"}


def enabled(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, style: str | None) -> str:
    """``text`` in ``style`` (names from ``STYLES``, space-separated) when colour is on."""
    if not style or not text or not enabled():
        return text
    codes = ";".join(STYLES[name] for name in style.split() if name in STYLES)
    return f"\x1b[{codes}m{text}{RESET}" if codes else text
