"""Where leash keeps its state, and how any string becomes a safe file name.

The home is ``--home`` when given, else ``$LEASH_HOME``, else ``~/.leash``. It is
created 0700 on first use; every file in it is written 0600 by ``core.statefile``,
and every directory leash makes in it (or on the way to it) by ``private_dir``,
0700 whatever the umask. A command that only reads never creates it, and no
command creates its parent (``enter_home``): a misspelt ``--home`` is an
error, not a new empty fleet (``MissingHome``).

Failure: a home that others could write to, or that belongs to another user, is
refused (``UnsafeHome``) rather than used: whoever can write it can lift any
stop. Such a home is reported, and its mode repaired, by ``leash doctor``,
which alone looks at it with ``check=False``. A home that is a symbolic link is
resolved once and its target checked.

Session ids, entity names and breaker names are arbitrary strings chosen by
agents and operators. Whenever one of them has to name a file or directory,
``safe_component`` turns it into a single path component that can never climb
out of the home (no ``/``, no ``..``, no NUL, no leading dot).
"""
from __future__ import annotations

import os
import stat

from leash.core.base.onereading import kept
from leash.core.base.wellknown import DEFAULT_HOME, HOME_ENV  # noqa: F401 (named here for callers)

HOME_MODE = 0o700
PRIVATE_DIR_MODE = 0o700
# Mode bits that let someone other than the owner change the home's entries.
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH

# Every name leash itself uses at the top of the home. A name chosen by an
# operator or an agent (a restart-loop breaker) must never be one of them, or
# a directory would stand where a state file belongs.
RESERVED_NAMES = frozenset({
    "config.toml", "stop_ack_log.jsonl", "acklog.head", "stops.json", "hands_off_registry.json",
    "sessions.json", "halts.db", "halts_unavailable.jsonl", "replies.db", "warrants", "dogs",
    "kennel.json", "run", "serve.token", "tmux.sock", "demo-agents", "wiring.json", "budget.db",
    "budget-holds.json",
})
# Suffixes and marks of the files that go with a state file: its lock, its
# torn tail, SQLite's companions, quarantined copies and temp files.
RESERVED_SUFFIXES = (".lock", ".torn", "-wal", "-shm", "-journal")
RESERVED_MARKS = (".corrupt-", ".tmp-")

# Names made only of these characters (first one not a dot, at most 128) are
# used as they are; anything else is percent-encoded so two different names
# never share a file.
_PLAIN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_PLAIN_MAX = 128


def resolve_home(home: str | os.PathLike | None = None) -> str:
    """The state home as an absolute path (not created)."""
    chosen = home if home is not None and home != "" else os.environ.get(HOME_ENV) or DEFAULT_HOME
    return os.path.abspath(os.path.expanduser(os.fspath(chosen)))


class UnsafeHome(Exception):
    """The state home is writable by others, owned by another user, or not a
    directory; leash refuses to use it."""

    def __init__(self, path: str, problem: str, *, repairable: bool):
        hint = ("run `leash doctor --repair`" if repairable
                else "fix it by hand, or choose another home (`leash doctor`)")
        super().__init__(f"unsafe state home {path}: {problem}; {hint}")
        self.path = path
        self.problem = problem
        self.repairable = repairable


def home_problem(path: str) -> tuple[str, bool] | None:
    """What makes an existing home unsafe, and whether ``leash doctor --repair``
    can mend it (only the mode of a home one owns); None when it is safe or
    missing. A symbolic link is resolved once and its target judged."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            target = os.path.join(os.path.dirname(path), os.readlink(path))
            info = os.lstat(target)
            if stat.S_ISLNK(info.st_mode):
                return f"a symbolic link to another link ({target})", False
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return "not a directory", False
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})", False
    mode = stat.S_IMODE(info.st_mode)
    if mode & OTHERS_WRITE:
        who = "group- and world-writable" if mode & stat.S_IWOTH and mode & stat.S_IWGRP else (
            "world-writable" if mode & stat.S_IWOTH else "group-writable")
        return f"{who} (mode {mode:o}; others could lift any stop)", True
    return None


def ensure_home(home: str | os.PathLike | None = None, *, check: bool = True) -> str:
    """The state home, created 0700 when missing; raises ``UnsafeHome`` when it
    exists but is not safe to trust (``check=False``: only ``leash doctor``)."""
    path = resolve_home(home)
    if check:
        # Once per hook judgement (core.base.onereading): each store it reads asks.
        kept(("home ready", path), lambda: _ready(path))
    elif not os.path.isdir(path):
        private_dir(path)
    return path


def _ready(path: str) -> bool:
    """The home checked, and made when missing; ``UnsafeHome`` when it is not safe."""
    problem = home_problem(path)
    if problem is not None:
        raise UnsafeHome(path, problem[0], repairable=problem[1])
    if not os.path.isdir(path):
        private_dir(path)
    return True


class MissingHome(Exception):
    """The state home does not exist, and it may not be made here: the command
    only reads, or its parent directory does not exist either."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"no state home at {path}: {problem}")
        self.path = path
        self.problem = problem


def enter_home(home: str | os.PathLike | None = None, *, create: bool, check: bool = True) -> tuple[str, bool]:
    """(the state home, whether it was made now). A missing home is made
    (0700, that one directory) only when ``create`` and its parent exists;
    else ``MissingHome``, with nothing made. ``check``: as ``ensure_home``."""
    path = resolve_home(home)
    if os.path.lexists(path):
        return ensure_home(path, check=check), False
    parent = os.path.dirname(path)
    if not create:
        raise MissingHome(path, "it does not exist, and a command that only reads never creates one")
    if not os.path.isdir(parent):
        raise MissingHome(path, f"it does not exist, nor does its parent {parent} (leash creates no parents)")
    try:
        os.mkdir(path, HOME_MODE)
    except FileExistsError:  # made by another process at the same moment
        return ensure_home(path, check=check), False
    os.chmod(path, HOME_MODE)  # mkdir's mode is masked by the umask
    return path, True  # made just now, 0700: as safe as ensure_home would make it


def private_dir(path: str | os.PathLike) -> str:
    """``path`` as a directory; each missing component is created 0700 whatever
    the umask (mkdir's mode is masked by it, so it is chmod'ed after).
    Components that exist are left as they are."""
    target = os.path.abspath(os.fspath(path))
    missing: list[str] = []
    current = target
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
            continue  # made by another process at the same moment, which sets its mode
        os.chmod(directory, PRIVATE_DIR_MODE)
    return os.fspath(path)


def is_reserved_name(name: str) -> bool:
    """True when ``name`` is, or could be taken for, a file leash keeps in the home."""
    lowered = name.lower()
    return (lowered in RESERVED_NAMES or lowered.endswith(RESERVED_SUFFIXES)
            or any(mark in lowered for mark in RESERVED_MARKS)
            or any(lowered.startswith(reserved + ".") for reserved in RESERVED_NAMES))


def is_plain_name(name: object) -> bool:
    """A name that is its own file name: letters, digits, ``.``, ``_``, ``-``,
    not starting with a dot, at most 128 characters."""
    return (isinstance(name, str) and 0 < len(name) <= _PLAIN_MAX and not name.startswith(".")
            and set(name) <= _PLAIN_CHARS)


def safe_component(name: str) -> str:
    """One path component for an arbitrary string; injective and never special."""
    if not isinstance(name, str) or name == "":
        raise ValueError("a name must be a non-empty string")
    if is_plain_name(name):
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
