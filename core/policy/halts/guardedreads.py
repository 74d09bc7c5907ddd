"""Reads that give an agent an operator's power in the single-user profile.

There the agent runs as the operator's Unix user, so only the gate stands
between it and these files.

Guarded (``Guarded.of(home, env)``):

* leash's serve token, ``$LEASH_HOME/serve.token`` (the browser console's key);
* the shared store's password: ``[store] password_file`` of the home's
  ``config.toml``, ``PGPASSFILE`` (the call's environment and this
  process's), ``~/.pgpass``;
* the operator socket: ``$LEASH_HOME/run/operator.sock``, ``[daemon]
  operator_socket``, ``LEASH_OPERATOR_SOCKET`` (connecting to it is the
  operator's power: any use of its path counts);
* another process's environment: ``/proc/<pid>/environ`` (and
  ``/proc/<pid>/task/<tid>/environ``) of any pid but ``self`` and
  ``thread-self`` — leash's processes may hold a store password there, and a
  pid cannot be told to be leash's without racing its reuse, so every other
  process's environment is guarded — and ``ps e`` (BSD-style ``e``: each
  process's environment).

``reads(call, guarded)`` answers what of these a ``core.toolcall.ToolCall``
reaches: any path it names in any role (the Read and Grep tools, a
command's reads, writes, redirections and code literals, an MCP tool's
paths), as written and after symbolic links; a path inside a word
(``UNIX-CONNECT:PATH``, ``--unix-socket=PATH``, ``@PATH``); a computed word
whose last part is a name only leash uses (``$D/serve.token``); a recursive
read (Grep of a directory, ``grep -r``, ``rg``, ``cp -r``, ``tar -c``,
``rsync``, ``zip -r``) of a directory that holds a guarded file. Programs that
only look at names and metadata (``ls``, ``stat``, ``test`` ...) do not count.

Nothing here reads a guarded file; only paths are compared, and findings
name the path, never content. Never raises: an unreadable ``config.toml``
only means its paths are not known.
"""
from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

SERVE_TOKEN_NAME = "serve.token"
OPERATOR_SOCKET_NAME = "operator.sock"
RUN_DIR = "run"
PGPASS_NAME = ".pgpass"
SERVE_TOKEN = "leash's serve token"
STORE_PASSWORD = "the store's password file"
OPERATOR_SOCKET = "leash's operator socket"
# Names that only leash gives its files: a computed word ending in one is taken for leash's.
LEASH_NAMES = {SERVE_TOKEN_NAME: SERVE_TOKEN, OPERATOR_SOCKET_NAME: OPERATOR_SOCKET}
LOOK_ONLY = frozenset({"ls", "stat", "test", "[", "[[", "file", "du", "tree", "realpath", "readlink", "basename",
                       "dirname", "find"})
RECURSIVE_READERS = frozenset({"rg", "ag", "ack", "tar", "bsdtar"})
_RECURSIVE_FLAGGED = frozenset({"grep", "egrep", "fgrep", "cp", "scp", "rsync", "zip"})
_RECURSIVE_FLAG = re.compile(r"^-[A-Za-z]*[rRa]|^--recursive$|^--archive$|^--dereference-recursive$")
PROC, ENVIRON = "/proc/", "/environ"
_OWN_PROCESS = frozenset({"self", "thread-self"})
_PIECES = re.compile(r"[:=,@]")
_PS_ENVIRONMENT = re.compile(r"^[A-Za-z]*e[A-Za-z]*$")
PATH_MAX = 4096
_configs: dict = {}
GUARDED_KEPT_SECONDS = 1.0
_guarded: dict = {}


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _config_paths(home: str) -> tuple[str, str]:
    """(``[store] password_file``, ``[daemon] operator_socket``) of the home's
    config.toml, read again only when the file changes; ("", "") when unreadable."""
    path = os.path.join(home, "config.toml")
    try:
        info = os.stat(path)
    except OSError:
        return "", ""
    key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _configs:
        _configs.clear()  # one home per process in practice: keep only the newest
        _configs[key] = _read_config(path)
    return _configs[key]


def _read_config(path: str) -> tuple[str, str]:
    import tomllib

    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, ValueError):
        return "", ""
    store, daemon = data.get("store"), data.get("daemon")
    password = store.get("password_file") if isinstance(store, dict) else ""
    socket = daemon.get("operator_socket") if isinstance(daemon, dict) else ""
    return (password if isinstance(password, str) else ""), (socket if isinstance(socket, str) else "")


class Guarded:
    """The guarded files of one home and environment: path -> what it is."""

    __slots__ = ("files", "real_files", "names")

    def __init__(self, files: dict[str, str]):
        self.files = files
        self.real_files = {os.path.realpath(p): what for p, what in files.items() if len(p) <= PATH_MAX}
        self.names = {os.path.basename(p) for p in list(files) + list(self.real_files)}

    @classmethod
    def of(cls, home: str, env: Mapping[str, str], *, clock=None) -> Guarded:
        """The guarded files, kept ``GUARDED_KEPT_SECONDS`` for the same home,
        config and environment (resolving them costs a dozen lstat calls; a
        link made to one is seen within that time, and a read through a link
        made in the same command is not seen at all — see docs/halts.md)."""
        import time

        password_file, configured_socket = _config_paths(home)
        user_home = env.get("HOME") or os.path.expanduser("~")
        key = (home, password_file, configured_socket, user_home,
               *(source.get(name) or "" for source in (env, os.environ)
                 for name in ("PGPASSFILE", "LEASH_OPERATOR_SOCKET")))
        moment = (clock or time.monotonic)()
        kept = _guarded.get(key)
        if kept is not None and moment - kept[1] < GUARDED_KEPT_SECONDS:
            return kept[0]
        made = cls._made(home, env, password_file, configured_socket, user_home)
        _guarded.clear()  # one home and environment per process in practice
        _guarded[key] = (made, moment)
        return made

    @classmethod
    def _made(cls, home: str, env: Mapping[str, str], password_file: str, configured_socket: str,
              user_home: str) -> Guarded:
        found = {os.path.join(home, SERVE_TOKEN_NAME): SERVE_TOKEN,
                 os.path.join(home, RUN_DIR, OPERATOR_SOCKET_NAME): OPERATOR_SOCKET,
                 os.path.join(user_home, PGPASS_NAME): STORE_PASSWORD}
        given = [(password_file, STORE_PASSWORD), (configured_socket, OPERATOR_SOCKET)]
        for source in (env, os.environ):
            given += [(source.get("PGPASSFILE") or "", STORE_PASSWORD),
                      (source.get("LEASH_OPERATOR_SOCKET") or "", OPERATOR_SOCKET)]
        for path, what in given:
            if path and "\x00" not in path:
                found[_anchored(path, home)] = what
        return cls(found)

    def what(self, path: str, real) -> str | None:
        """What guarded file ``path`` is (``real``: the call's realpath), or None."""
        found = self.files.get(path)
        if found is None and len(path) <= PATH_MAX:
            found = self.real_files.get(real(path))
        return found

    def held_by(self, directory: str, real) -> str | None:
        """What guarded file lies under ``directory``, or None."""
        for path, what in self.files.items():
            if _under(path, directory):
                return what
        resolved = real(directory) if len(directory) <= PATH_MAX else directory
        return next((what for path, what in self.real_files.items() if _under(path, resolved)), None)


def _anchored(path: str, home: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(home, path))


def other_environ(text: str) -> bool:
    """A path (or a word) naming another process's ``/proc/<pid>/environ``:
    whatever stands for the pid (a number, a glob, ``$(pgrep leashd)``) but
    ``self`` or ``thread-self``."""
    if len(text) > PATH_MAX:
        return False
    start = text.find(PROC)
    while start != -1:
        end = text.find(ENVIRON, start + len(PROC))
        if end == -1:
            return False
        if text[start + len(PROC):end].split("/", 1)[0] not in _OWN_PROCESS:
            return True
        start = text.find(PROC, start + len(PROC))
    return False


def _target_finding(target, guarded: Guarded, real) -> str | None:
    if target.command is not None and target.command.program in LOOK_ONLY:
        return None
    if other_environ(target.path):
        return f"reads another process's environment ({target.path})"
    what = guarded.what(target.path, real)
    if what is None and target.computed:
        what = LEASH_NAMES.get(os.path.basename(target.path))
    if what is None and _reads_recursively(target):
        held = guarded.held_by(target.path, real)
        return f"reads {target.path}, which holds {held}" if held else None
    return f"reads {what} ({target.path})" if what else None


def _reads_recursively(target) -> bool:
    if target.command is None:
        return target.program == "Grep"
    program, argv = target.command.program, target.command.argv
    if program in RECURSIVE_READERS:
        return True
    return program in _RECURSIVE_FLAGGED and any(_RECURSIVE_FLAG.match(w) for w in argv[1:] if w.startswith("-"))


def _word_findings(command, guarded: Guarded, real) -> list[str]:
    """Guarded paths inside the words of ``command`` (``UNIX-CONNECT:PATH``,
    ``--unix-socket=PATH``, a computed pid in ``/proc/$(...)/environ``)."""
    if command.program in LOOK_ONLY:
        return []
    found: list[str] = []
    if command.program == "ps" and any(_PS_ENVIRONMENT.match(w) for w in command.argv[1:]):
        found.append("reads every process's environment (ps e)")
    names = guarded.names | LEASH_NAMES.keys()
    for word in command.argv[1:] + [t for _, t in command.redirects]:
        if len(word) > PATH_MAX:
            continue
        if "environ" in word and other_environ(word):
            found.append(f"reads another process's environment ({word[:120]})")
        elif any(name in word for name in names):
            found += _pieces_finding(word, command.cwd, guarded, real)
    return found


def _pieces_finding(word: str, cwd: str | None, guarded: Guarded, real) -> list[str]:
    for piece in _PIECES.split(word):
        if not piece:
            continue
        path = os.path.normpath(piece if os.path.isabs(piece) or not cwd else os.path.join(cwd, piece))
        what = guarded.what(path, real)
        if what is not None:
            return [f"reads {what} ({path})"]
    return []


def reads(call, guarded: Guarded) -> list[str]:
    """What guarded files, sockets and environments the call reads (see the module)."""
    found = [f for t in call.targets if (f := _target_finding(t, guarded, call.real))]
    for command in call.commands:
        found += _word_findings(command, guarded, call.real)
    return list(dict.fromkeys(found))
