"""The one module that talks to tmux, through libtmux.

Every other module asks this one to list sessions, capture a pane, send a
message, check that a session exists, or kill it. The server is chosen once:
an explicit socket path, else ``$LEASH_TMUX_SOCKET``, else ``[tmux] socket``
in config.toml, else tmux's default server — so every test runs on a private
server of its own.

Sessions are addressed by their stable tmux ids once known: ``$N`` for a
session, ``%N`` for a pane. An id survives ``rename-session``; a name does not.
Every method that takes a session accepts a name, a session id or a pane id.
A name is matched exactly (``=name``), never by tmux's prefix or fnmatch
rule, so a warrant for ``agent-1`` can never reach ``agent-10``. tmux reads
``:`` and ``.`` in a target as window and pane separators (and never puts them
in a session name: it turns them into ``_``), so a name holding either is
resolved to an id here or found missing, never handed to tmux as a target.
``resolve(name_or_id)`` gives ``{"id", "name", "panes"}`` or None; text of the
form ``$N`` or ``%N`` is read as an id, even if some session is named so.

Failure: a server that is not running means "no sessions" (``has_session`` is
False, ``list_sessions`` is empty); other tmux errors raise ``TmuxError`` with
tmux's own message.
"""
from __future__ import annotations

import os

SOCKET_ENV = "LEASH_TMUX_SOCKET"
FIELD_SEPARATOR = "\x1f"
SESSION_ID_PREFIX = "$"
PANE_ID_PREFIX = "%"
TARGET_SEPARATORS = ":."  # tmux splits a target at these into session, window and pane
MARKS_FORMAT = "#{history_size} #{history_limit} #{cursor_y}"


class TmuxError(Exception):
    pass


def resolve_socket(socket: str | None = None, *, home=None) -> str | None:
    if socket:
        return socket
    if os.environ.get(SOCKET_ENV):
        return os.environ[SOCKET_ENV]
    if home is not None:
        from leash.core.config import load_config

        configured = load_config(home)["tmux"]["socket"]
        if configured:
            return os.path.expanduser(configured)
    return None


class Tmux:
    """One tmux server."""

    def __init__(self, socket: str | None = None, *, home=None):
        import libtmux

        self.socket = resolve_socket(socket, home=home)
        self.server = libtmux.Server(socket_path=self.socket) if self.socket else libtmux.Server()

    # ------------------------------------------------------------ plumbing
    def _run(self, *args: str, quiet_missing: bool = False) -> list[str]:
        result = self.server.cmd(*args)
        if result.returncode != 0:
            message = " ".join(result.stderr).strip() or f"tmux {args[0]} failed"
            if quiet_missing and _is_missing(message):
                return []
            raise TmuxError(message)
        return result.stdout

    def _session_target(self, target: str) -> str:
        """A ``-t`` value that means this session and nothing else."""
        if is_tmux_id(target):
            return target
        if any(c in target for c in TARGET_SEPARATORS):
            found = self.resolve(target)
            if found is None:
                raise TmuxError(f"can't find session: {target}")
            return found["id"]
        return f"={target}"

    def _target(self, target: str) -> str:
        """A ``-t`` value for the session's active pane."""
        session = self._session_target(target)
        return session if session.startswith(PANE_ID_PREFIX) else f"{session}:"

    # ------------------------------------------------------------ sessions
    def has_session(self, target: str) -> bool:
        try:
            session = self._session_target(target)
        except TmuxError:
            return False
        result = self.server.cmd("has-session", "-t", session)
        return result.returncode == 0

    def resolve(self, name_or_id: str) -> dict | None:
        """``{"id": "$N", "name": ..., "panes": ["%N", ...]}`` for a session
        named exactly ``name_or_id``, or whose session or pane id it is; None
        when there is none (or no server)."""
        if not isinstance(name_or_id, str) or not name_or_id:
            return None
        fields = ["#{session_id}", "#{session_name}", "#{pane_id}"]
        lines = self._run("list-panes", "-a", "-F", FIELD_SEPARATOR.join(fields), quiet_missing=True)
        found: dict[str, dict] = {}
        match = None
        for line in lines:
            parts = line.split(FIELD_SEPARATOR)
            if len(parts) != len(fields):
                continue
            session_id, name, pane_id = parts
            session = found.setdefault(session_id, {"id": session_id, "name": name, "panes": []})
            session["panes"].append(pane_id)
            if name_or_id in (session_id, pane_id) or (name == name_or_id and not is_tmux_id(name_or_id)):
                match = session_id
        return found[match] if match is not None else None

    def list_sessions(self) -> list[dict]:
        """Every session with its panes: id (``$N``), name, created, attached,
        and for each pane its id, pid, current command and whether it is active."""
        fields = ["#{session_id}", "#{session_name}", "#{session_created}", "#{session_attached}", "#{pane_id}",
                  "#{pane_pid}", "#{pane_current_command}", "#{pane_active}", "#{window_active}"]
        try:
            lines = self._run("list-panes", "-a", "-F", FIELD_SEPARATOR.join(fields), quiet_missing=True)
        except TmuxError as exc:
            if _is_missing(str(exc)):
                return []
            raise
        sessions: dict[str, dict] = {}
        for line in lines:
            parts = line.split(FIELD_SEPARATOR)
            if len(parts) != len(fields):
                continue
            session_id, name, created, attached, pane_id, pid, command, active, window_active = parts
            session = sessions.setdefault(session_id, {"id": session_id, "name": name, "created": int(created or 0),
                                                       "attached": attached not in ("", "0"), "panes": []})
            session["panes"].append({"id": pane_id, "pid": int(pid or 0), "command": command,
                                     "active": active == "1" and window_active == "1"})
        return sorted(sessions.values(), key=lambda s: s["name"])

    def new_session(self, name: str, command: str | None = None, *, width: int = 120, height: int = 30,
                    environment: dict[str, str] | None = None) -> None:
        args = ["new-session", "-d", "-s", name, "-x", str(width), "-y", str(height)]
        for key, value in (environment or {}).items():
            args += ["-e", f"{key}={value}"]
        if command:
            args.append(command)
        self._run(*args)

    def kill(self, target: str) -> None:
        try:
            session = self._session_target(target)
        except TmuxError:
            return
        self._run("kill-session", "-t", session, quiet_missing=True)

    def kill_server(self) -> None:
        self.server.cmd("kill-server")

    # ------------------------------------------------------------ panes
    def capture(self, name: str, lines: int = 200) -> list[str]:
        """The last ``lines`` lines of the active pane, history included, without
        the blank rows below the cursor."""
        out = self._run("capture-pane", "-p", "-J", "-t", self._target(name), "-S", f"-{max(1, lines)}")
        return _without_blank_tail(out)[-lines:]

    def read_since(self, name: str, position: int, *, history: int) -> tuple[dict[str, int], list[str]]:
        """(``marks`` now, what the active pane shows from absolute line
        ``position`` on), in one tmux command while the pane's history is still
        the ``history`` lines the caller saw last — the usual case between two
        polls. tmux runs the two commands of one invocation back to back, so
        the marks it prints describe the pane it captures; when they say the
        history moved, a second command captures from the right place."""
        target = self._target(name)
        out = self._run("display-message", "-p", "-t", target, MARKS_FORMAT, ";",
                        "capture-pane", "-p", "-J", "-t", target, "-S", str(position - history))
        marks = _parse_marks(out[:1])
        if marks["history"] == history:
            return marks, _without_blank_tail(out[1:])
        start = position - marks["history"]  # negative: still in the history
        return marks, _without_blank_tail(self._run("capture-pane", "-p", "-J", "-t", target, "-S", str(start)))

    def send_message(self, name: str, text: str) -> None:
        """Type ``text`` into the active pane (literally) and press Enter. The
        caller makes ``text`` one printable line: typed literally, a newline
        is still Enter and a control character still a control key."""
        target = self._target(name)
        self._run("send-keys", "-t", target, "-l", text, ";", "send-keys", "-t", target, "Enter")

    def interrogate(self, name: str, text: str, *, tail: int = 60) -> tuple[dict[str, int], list[str]]:
        """Note where the pane is, keep its last ``tail`` lines, then send
        ``text`` — in one tmux command (each command is a process to start, and
        a kennel sends many). Returns (``marks`` as before sending, the tail)."""
        target = self._target(name)
        out = self._run("display-message", "-p", "-t", target, MARKS_FORMAT, ";",
                        "capture-pane", "-p", "-J", "-t", target, "-S", f"-{max(1, tail)}", ";",
                        "send-keys", "-t", target, "-l", text, ";", "send-keys", "-t", target, "Enter")
        return _parse_marks(out[:1]), _without_blank_tail(out[1:])


def is_tmux_id(text: str) -> bool:
    """``$N`` (a session id) or ``%N`` (a pane id)."""
    return len(text) > 1 and text[0] in (SESSION_ID_PREFIX, PANE_ID_PREFIX) and text[1:].isdigit() \
        and text[1:].isascii()


def _parse_marks(out: list[str]) -> dict[str, int]:
    """``history`` (lines in the pane's history), ``limit`` (its history-limit)
    and ``position`` (absolute index of the cursor line: what the pane shows
    from there on is new). The history only grows — until it reaches the
    limit, when tmux drops the oldest tenth at once (or someone clears it)."""
    parts = out[0].split() if out else []
    history, limit, row = (int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) \
        else (0, 0, 0)
    return {"history": history, "limit": limit, "position": history + row}


def _without_blank_tail(lines: list[str]) -> list[str]:
    """The lines without the empty rows below the cursor."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]


def _is_missing(message: str) -> bool:
    lowered = message.lower()
    return any(p in lowered for p in ("no server running", "can't find session", "error connecting",
                                      "no such file or directory", "can't find pane", "can't find window"))
