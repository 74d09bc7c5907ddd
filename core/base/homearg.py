"""The ``--home DIR`` / ``--home=DIR`` that may lead leash's command line,
read before argparse runs: the hook entry and completion's name lookups take
their fast paths on it (no parser built, no console imported).

Failure: none; a ``--home`` without its value is no match (``None``), and the
caller falls back to the full parser, which reports it.
"""
from __future__ import annotations


def leading_home(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """(the home given, the words after it) for ``argv``; None when a leading
    ``--home`` has no value."""
    home, rest = None, list(argv)
    while rest and rest[0].startswith("--home"):
        if rest[0] == "--home" and len(rest) >= 2:
            home, rest = rest[1], rest[2:]
        elif rest[0].startswith("--home="):
            home, rest = rest[0].split("=", 1)[1], rest[1:]
        else:
            return None
    return home, rest
