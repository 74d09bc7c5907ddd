"""Where leash keeps its state, and how any string becomes a safe file name.

The home is ``--home`` when given, else ``$LEASH_HOME``, else ``~/.leash``. It is
created 0700 on first use; every file in it is written 0600 by ``core.statefile``.

Session ids, entity names and breaker names are arbitrary strings chosen by
agents and operators. Whenever one of them has to name a file or directory,
``safe_component`` turns it into a single path component that can never climb
out of the home (no ``/``, no ``..``, no NUL, no leading dot).
"""
from __future__ import annotations

import os

HOME_ENV = "LEASH_HOME"
DEFAULT_HOME = "~/.leash"
HOME_MODE = 0o700

# Names made only of these characters (first one not a dot, at most 128) are
# used as they are; anything else is percent-encoded so two different names
# never share a file.
_PLAIN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_PLAIN_MAX = 128


def resolve_home(home: str | os.PathLike | None = None) -> str:
    """The state home as an absolute path (not created)."""
    chosen = home if home not in (None, "") else os.environ.get(HOME_ENV) or DEFAULT_HOME
    return os.path.abspath(os.path.expanduser(os.fspath(chosen)))


def ensure_home(home: str | os.PathLike | None = None) -> str:
    """The state home, created 0700 when missing."""
    path = resolve_home(home)
    if not os.path.isdir(path):
        os.makedirs(path, mode=HOME_MODE, exist_ok=True)
        os.chmod(path, HOME_MODE)
    return path


def safe_component(name: str) -> str:
    """One path component for an arbitrary string; injective and never special."""
    if not isinstance(name, str) or name == "":
        raise ValueError("a name must be a non-empty string")
    if len(name) <= _PLAIN_MAX and not name.startswith(".") and set(name) <= _PLAIN_CHARS:
        return name
    from urllib.parse import quote

    encoded = quote(name, safe="", errors="surrogateescape")
    encoded = encoded.replace(".", "%2E")
    # Long names keep a readable head and a stable tail, within NAME_MAX.
    if len(encoded) > 200:
        import hashlib

        digest = hashlib.sha256(encoded.encode("ascii")).hexdigest()[:16]
        encoded = f"{encoded[:180]}~{digest}"
    return encoded
