"""The errors every part of ``leash`` raises instead of doing what was asked,
and the exit codes the command line ends in.

``Refused``: the operation was understood but cannot be done (nothing to
resume, no such lock, an answer that came second, a key that does not apply
to the selected row). Every command raises it for a refusal, and so does
every console key; ``leash`` prints it as one line (``leash: error: ...``,
and with ``--json`` one object too) and exits with its ``exit_code``.
``UsageError`` is the refusal of bad input: exit 2.
"""
from __future__ import annotations

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_VERDICT = 0, 1, 2, 3


class Refused(Exception):
    """Understood, but not done; the message says why. Exit 1."""

    exit_code = EXIT_REFUSED


class UsageError(Refused):
    """Bad command-line input; exit 2."""

    exit_code = EXIT_USAGE
