"""Errors of the command line that every part of it raises: ``UsageError``
(bad input, exit 2)."""
from __future__ import annotations


class UsageError(Exception):
    """Bad command-line input; exit 2."""
