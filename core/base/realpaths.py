"""``os.path.realpath``, asked of the kernel when the path exists.

The tampering rule and the path locks resolve the paths of every tool call
(``core.policy.toolcall.ToolCall.real``). Python's ``realpath`` walks the
path itself, one ``lstat`` (and a ``readlink`` for each link) per part, in
Python: a home four folders deep and a file six deep cost leashd twenty
``lstat`` calls and most of a tenth of its time per call. A path that exists
is opened instead (``O_PATH``: no permission on the file itself is needed,
nothing is read) and the kernel says where the descriptor leads
(``/proc/self/fd/N``): the same answer, with links, ``..`` and ``.``
resolved as the kernel resolves them when the agent's program opens the
path, in three calls.

A path whose last parts do not exist (a file a call creates) is its nearest
folder that does, asked of the kernel, with those names after it as
written, as ``os.path.realpath`` leaves them. What is left to
``os.path.realpath`` itself: one that cannot be opened (a folder without
search permission, a loop of links, a dangling link, a file where a folder
is named), ``..`` after a missing part, one whose file was deleted while it
was open, and any system without ``O_PATH``. Both resolve what exists at the moment they look;
a link changed after that is the caller's race either way.

Failure: never raises for a path ``os.path.realpath`` answers.
"""
from __future__ import annotations

import os

_PROC_FD = "/proc/self/fd/"
_DELETED = " (deleted)"
# O_PATH is Linux's (2.6.39); elsewhere every path goes to os.path.realpath.
_O_PATH = getattr(os, "O_PATH", 0)
_OPEN_FLAGS = _O_PATH | getattr(os, "O_CLOEXEC", 0)


def realpath(path: str) -> str:
    """``os.path.realpath(path)`` (non-strict), in three system calls when
    ``path`` exists and can be opened, and a few more for each missing part at
    its end (a file the call would create)."""
    if not _O_PATH or not path:
        return os.path.realpath(path)
    missing: list[str] = []  # the names at the end that do not exist, last first
    head = path
    while True:
        try:
            fd = os.open(head, _OPEN_FLAGS)
        except FileNotFoundError:
            head, name = _split_missing(head)
            if name is None:
                return os.path.realpath(path)
            missing.append(name)
            continue
        except (OSError, ValueError):  # a loop, no search permission, not a folder, a NUL
            return os.path.realpath(path)
        break
    try:
        found = os.readlink(f"{_PROC_FD}{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)
    if not found.startswith("/") or found.endswith(_DELETED):  # another namespace's root, or gone
        return os.path.realpath(path)
    return os.path.join(found, *reversed(missing)) if missing else found


def _split_missing(path: str) -> tuple[str, str | None]:
    """(its folder, its name) for a path whose last part does not exist as
    anything, not even a dangling link (which ``realpath`` would follow);
    a name of ``..`` or ``.`` (resolved lexically after a missing part) or a
    path that is one part gives (path, None): all of it is left to
    ``os.path.realpath``."""
    head, name = os.path.split(path)
    if name in ("", ".", "..") or not head and not name:
        return path, None
    try:
        os.lstat(path)
    except FileNotFoundError:
        return head or ".", name
    except (OSError, ValueError):
        return path, None
    return path, None  # there after all: a dangling link, or made meanwhile
