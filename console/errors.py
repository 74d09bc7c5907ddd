"""Errors of the command line that every part of it raises: ``UsageError``
(bad input, exit 2), and the exit codes they end in."""
from __future__ import annotations

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_VERDICT = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input; exit 2."""
