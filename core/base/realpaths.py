"""``os.path.realpath``, asked of the kernel when the path exists.

The tampering rule and the path locks resolve the paths of every tool call
(``core.policy.toolcall.ToolCall.real``). Python's ``realpath`` walks the
path itself, one ``lstat`` (and a ``readlink`` for each link) per part, in
Python: 9 µs for a path four parts deep, 18 µs for one six deep, on every
call. A path that exists is opened instead (``O_PATH``: no permission on
the file itself is needed, nothing is read) and the kernel says where the
descriptor leads (``/proc/self/fd/N``): the same answer, with links, ``..``
and ``.`` resolved as the kernel resolves them when the agent's program
opens the path, in three calls (6.5 µs, however deep).

Everything else is left to ``os.path.realpath``, one failed ``open`` later
(about 3 µs): a path that does not exist (a file a call would create: its
folder resolved, its name kept as written), one that cannot be opened (a
folder without search permission, a loop of links, a dangling link, a file
where a folder is named), one whose file was deleted while it was open, and
any system without ``O_PATH``. Both resolve what exists at the moment they
look; a link changed after that is the caller's race either way.

Failure: raises only what ``os.path.realpath`` raises (``ValueError`` for a NUL).
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
    ``path`` exists and can be opened."""
    if not _O_PATH or not path:
        return os.path.realpath(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError):  # missing, a loop, no search permission, not a folder, a NUL
        return os.path.realpath(path)
    try:
        found = os.readlink(f"{_PROC_FD}{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)
    if not found.startswith("/") or found.endswith(_DELETED):  # another namespace's root, or gone
        return os.path.realpath(path)
    return found
