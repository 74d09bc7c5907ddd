"""The few services of ``os`` the thin hook client needs, from ``posix`` alone.

Under ``-S`` nothing has imported ``os`` yet when the hook's code begins, and
importing it (``abc``, ``stat``, ``posixpath``, ``_collections_abc``) costs a
bare interpreter's start about a tenth of its time: every tool call would pay
for it. The thin client (``core.wire.thinhook``, ``core.wire.daemontrust``,
``core.wire.hookio``) calls ``posix`` for descriptors, ``stat`` and the
process, and this module for the environment and path strings.

``environ`` is ``os.environ`` itself when ``os`` is loaded already (every
process but a hook's: a test's ``monkeypatch.setenv`` is seen); in a hook it
is the process's environment decoded as ``os`` decodes it, read once at
import, which nothing in a hook changes afterwards. The path functions are
``posixpath``'s for ``str`` paths (a test holds them equal); ``~user`` and a
missing ``HOME`` are left to ``os.path.expanduser``, which imports ``os``.

Failure: as ``posix`` and ``posixpath`` fail; nothing is cached but the
environment.
"""
import posix
import sys

SEPARATOR = "/"
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def _environment():
    loaded = sys.modules.get("os")
    if loaded is not None:
        return loaded.environ
    return {key.decode(_FS_ENCODING, _FS_ERRORS): value.decode(_FS_ENCODING, _FS_ERRORS)
            for key, value in posix.environ.items()}


environ = _environment()


def fsencode(path: str) -> bytes:
    return path.encode(_FS_ENCODING, _FS_ERRORS)


def join(first: str, *rest: str) -> str:
    path = first
    for part in rest:
        if part.startswith(SEPARATOR) or not path:
            path = part
        elif path.endswith(SEPARATOR):
            path += part
        else:
            path += SEPARATOR + part
    return path


def basename(path: str) -> str:
    return path[path.rfind(SEPARATOR) + 1:]


def dirname(path: str) -> str:
    head = path[:path.rfind(SEPARATOR) + 1]
    if head and head != SEPARATOR * len(head):
        head = head.rstrip(SEPARATOR)
    return head


def normpath(path: str) -> str:
    if not path:
        return "."
    # POSIX keeps a leading "//" (implementation-defined), but not "///" or more.
    leading = 2 if path.startswith("//") and not path.startswith("///") else 1 if path.startswith(SEPARATOR) else 0
    parts: list[str] = []
    for part in path.split(SEPARATOR):
        if part in ("", "."):
            continue
        if part != ".." or (not leading and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    return SEPARATOR * leading + SEPARATOR.join(parts) or "."


def abspath(path: str) -> str:
    if not path.startswith(SEPARATOR):
        path = join(posix.getcwd(), path)
    return normpath(path)


def expanduser(path: str) -> str:
    if not path.startswith("~"):
        return path
    end = path.find(SEPARATOR, 1)
    home = environ.get("HOME") if end in (1, -1) and path[:end if end > 0 else None] == "~" else None
    if home is None:
        import os  # ~user, or no HOME: the password database, as os reads it

        return os.path.expanduser(path)
    tail = path[1:] if end > 0 else ""
    return (home.rstrip(SEPARATOR) + tail) or SEPARATOR


def exists(path: str) -> bool:
    try:
        posix.stat(path)
    except (OSError, ValueError):
        return False
    return True
