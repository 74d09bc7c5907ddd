"""How ``leash`` commands speak: one line per thing said, or exact JSON.

Names, reasons and descriptions come from agents: every human-readable line
goes out through ``out``, which shows it as one line with its control
characters escaped (``core.text.printable``), so no stored text can forge a
line or drive the terminal. ``--json`` goes out through ``out_json``: exact
JSON, ASCII only (every control and non-ASCII character as ``\\uXXXX``).
"""
from __future__ import annotations

import json
import sys
from argparse import Namespace
from typing import Any, Callable

from leash.core.base.clock import human_duration, parse_iso
from leash.core.base.text import printable
from leash.core.store.records import Record


def out(text: str = "") -> None:
    """One line for a person: agent text in it is escaped and cannot break it."""
    sys.stdout.write(printable(text) + "\n")


def out_painted(*pieces: tuple[str, str | None]) -> None:
    """One line of (text, style) pieces: each escaped, then coloured when stdout is a terminal."""
    from leash.console.cli.colour import paint

    sys.stdout.write("".join(paint(printable(text), style) for text, style in pieces) + "\n")


def out_json(value: Any, *, indent: int | None = None) -> None:
    sys.stdout.write(json.dumps(value, indent=indent, ensure_ascii=True) + "\n")


def plain(value: Any) -> Any:
    """A store's record (``as_dict``) or a dict, as JSON data."""
    if isinstance(value, Record):
        return value.as_dict()
    return dict(value) if isinstance(value, dict) else value


def done(args: Namespace, code: int = 0, **fields: Any) -> int:
    """``--json``: the one object an action prints (``ok``, ``command``,
    ``exit_code`` and what happened); returns ``code``."""
    from leash.console.cli.parser import command_name

    out_json({"ok": code == 0, "command": command_name(args), "exit_code": code, **fields})
    return code


def finish(args: Namespace, said: dict[str, Any], code: int = 0) -> int:
    """``said`` as the ``--json`` object when asked for; the exit code."""
    return done(args, code, **said) if getattr(args, "json", False) else code


def ago(stamp: str, moment: float) -> str:
    try:
        seconds = moment - parse_iso(stamp)
    except ValueError:
        return "?"
    return human_duration(seconds) + (" ago" if seconds >= 0 else " from now")


def section(title: str, rows: list[Any], line: Callable[[Any], str]) -> None:
    out_painted((title, "bold"), (f": {len(rows)}", None))
    for row in rows:
        out("  " + line(row))
