"""Who did it: the ``source`` written on every ack-log line a person causes.

``default_source()`` is ``$USER@host``; it never fails (a missing passwd entry
falls back to the numeric uid).
"""
from __future__ import annotations

import os


def default_source() -> str:
    """``$USER@host``: who did it, for the ack log."""
    import socket

    user = os.environ.get("USER") or os.environ.get("LOGNAME")
    if not user:
        import getpass

        try:
            user = getpass.getuser()
        except Exception:  # no passwd entry in some containers
            user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"
