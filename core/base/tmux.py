"""The one module that talks to tmux, through libtmux's objects.

Every other module asks this one to list sessions, capture a pane, send a
message, check that a session exists, or kill it. The server is chosen once:
an explicit socket path, else ``$LEASH_TMUX_SOCKET``, else ``[tmux] socket``
in config.toml, else tmux's default server — so every test runs on a private
server of its own. libtmux is imported here only, and only when a ``Tmux`` is
made: the hook path never loads it.

Sessions are addressed by their stable tmux ids: ``$N`` for a session, ``%N``
for a pane. An id survives ``rename-session``; a name does not. Every method
that takes a session accepts a name, a session id or a pane id; a name is
resolved here to its session id (exact equality, never tmux's prefix or
fnmatch rule, so a warrant for ``agent-1`` can never reach ``agent-10``) and
tmux is handed the id. tmux reads ``:`` and ``.`` in a target as window and
pane separators (and never puts them in a session name: it turns them into
``_``; libtmux refuses to create such a name), so a name holding either is
found by that same lookup or found missing. ``resolve(name_or_id)`` gives
``{"id", "name", "panes"}`` or None; text of the form ``$N`` or ``%N`` is read
as an id, even if some session is named so.

The listing behind every lookup asks tmux for a few fields of its own choosing
(ids, numbers, names tmux sanitises) and wraps each row in a libtmux ``Pane``:
libtmux's own listing asks for every field tmux has, and one pane whose working
directory, title or session name holds its field separator makes that whole
listing fail — a pane's content must never blind the kennel.

Failure: a server that is not running means "no sessions" (``has_session`` is
False, ``list_sessions`` is empty); other tmux errors raise ``TmuxError`` with
tmux's own message, and so does a session or pane that is not there. Whether
the server can be reached at all is ``core.base.tmuxserver``'s to say,
without libtmux.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from leash.core.base.tmuxserver import (  # noqa: F401 - named here too
    NO_SERVER,
    SOCKET_ENV,
    WRONG_SOCKET,
    default_socket,
    resolve_socket,
    server_problem,
    socket_state,
)

if TYPE_CHECKING:
    from libtmux.pane import Pane
    from libtmux.session import Session

FIELD_SEPARATOR = "\x1f"  # tmux escapes control characters in the names it keeps
SESSION_ID_PREFIX = "$"
PANE_ID_PREFIX = "%"
TARGET_SEPARATORS = ":."  # tmux splits a target at these into session, window and pane
MARKS_FORMAT = "#{history_size} #{history_limit} #{cursor_y}"
# The command a pane runs comes last: it is the one field its program names, so
# a separator inside it stays inside it.
LISTING_FIELDS = ("session_id", "session_name", "session_created", "session_attached", "window_active",
                  "pane_id", "pane_active", "pane_pid", "pane_current_command")
LISTING_FORMAT = FIELD_SEPARATOR.join(f"#{{{field}}}" for field in LISTING_FIELDS)
FLAG_PREFIX = "-"  # tmux reads an argument that starts so as flags, even after send-keys -l
# The keys leash ever sends by name (never text: a key name typed by an agent
# would be a key). Enter submits, C-a/C-e/C-u/C-y edit a readline-like line,
# BSpace takes back what the dog typed, Escape interrupts Claude Code's turn.
KEY_NAMES = frozenset({"Enter", "C-a", "C-e", "C-u", "C-y", "BSpace", "Escape"})
# The command comes last again, as in the listing.
VIEW_FIELDS = ("pane_pid", "cursor_x", "cursor_y", "pane_width", "pane_height", "pane_current_command")
VIEW_FORMAT = FIELD_SEPARATOR.join(f"#{{{field}}}" for field in VIEW_FIELDS)


class TmuxError(Exception):
    pass


class Tmux:
    """One tmux server."""

    def __init__(self, socket: str | None = None, *, home=None):
        import libtmux

        self.socket = resolve_socket(socket, home=home)
        self.server = libtmux.Server(socket_path=self.socket) if self.socket else libtmux.Server()

    # ------------------------------------------------------------ objects
    def _listing(self) -> list[Pane]:
        """Every pane on the server as a libtmux ``Pane`` carrying its session's
        id, name, created and attached and its window's active flag."""
        from libtmux.pane import Pane

        # Not ``server.panes``: its listing fails whole on one hostile pane (see above).
        lines = _checked(self.server.cmd("list-panes", "-a", "-F", LISTING_FORMAT), quiet_missing=True)
        panes = []
        for line in lines:
            values = line.split(FIELD_SEPARATOR, len(LISTING_FIELDS) - 1)
            if len(values) != len(LISTING_FIELDS):
                continue
            row = dict(zip(LISTING_FIELDS, values, strict=True))
            if is_tmux_id(row["session_id"]) and is_tmux_id(row["pane_id"]):
                panes.append(Pane(server=self.server, session_id=row["session_id"],
                                  session_name=row["session_name"], session_created=row["session_created"],
                                  session_attached=row["session_attached"], window_active=row["window_active"],
                                  pane_id=row["pane_id"], pane_active=row["pane_active"], pane_pid=row["pane_pid"],
                                  pane_current_command=row["pane_current_command"]))
        return panes

    def _panes_of(self, name_or_id: str) -> list[Pane]:
        """The panes of the session named exactly ``name_or_id``, or whose
        session or pane id it is; empty when there is none (or no server)."""
        if not isinstance(name_or_id, str) or not name_or_id:
            return []
        panes = self._listing()
        match = None
        for pane in panes:
            if name_or_id in (pane.session_id, pane.pane_id) or \
                    (pane.session_name == name_or_id and not is_tmux_id(name_or_id)):
                match = pane.session_id
        return [pane for pane in panes if pane.session_id == match]

    def _session(self, target: str) -> Session:
        """The libtmux ``Session`` that ``target`` means, by its id. A session id
        needs no lookup: tmux itself says whether it is there when it is used."""
        from libtmux.session import Session

        if is_tmux_id(target) and target.startswith(SESSION_ID_PREFIX):
            return Session(server=self.server, session_id=target)
        panes = self._panes_of(target)
        if not panes:
            raise TmuxError(f"can't find session: {target}")
        return Session(server=self.server, session_id=panes[0].session_id, session_name=panes[0].session_name)

    def _pane(self, target: str) -> Pane:
        """The pane ``target`` shows: a pane id is that pane; a session shows the
        active pane of its current window. Looked up, so it was there just now."""
        panes = self._panes_of(target)
        chosen = [p for p in panes if p.pane_id == target] or \
            [p for p in panes if p.pane_active == "1" and p.window_active == "1"] or panes
        if not chosen:
            raise TmuxError(f"can't find session: {target}")
        return chosen[0]

    def _pane_target(self, target: str) -> str:
        """A ``-t`` value, by id, for the pane ``target`` shows — for the commands
        run several to one tmux process, which libtmux's objects cannot join."""
        if is_tmux_id(target) and target.startswith(PANE_ID_PREFIX):
            return target
        if target.endswith(":") and is_tmux_id(target[:-1]) and target.startswith(SESSION_ID_PREFIX):
            return target  # already a session's active pane, as this method gives it
        return f"{self._session(target).session_id}:"

    # ------------------------------------------------------------ sessions
    def has_session(self, target: str) -> bool:
        if not isinstance(target, str) or not target:
            return False
        if is_tmux_id(target):
            return self.server.has_session(target, exact=False)  # an id is tmux's own address
        if any(c in target for c in TARGET_SEPARATORS):
            return bool(self._panes_of(target))  # libtmux refuses such a name; the lookup finds none
        return self.server.has_session(target)  # exact: ``=name``, never a prefix or a pattern

    def resolve(self, name_or_id: str) -> dict | None:
        """``{"id": "$N", "name": ..., "panes": ["%N", ...]}`` for a session
        named exactly ``name_or_id``, or whose session or pane id it is; None
        when there is none (or no server)."""
        panes = self._panes_of(name_or_id)
        if not panes:
            return None
        return {"id": panes[0].session_id, "name": panes[0].session_name, "panes": [p.pane_id for p in panes]}

    def list_sessions(self) -> list[dict]:
        """Every session with its panes: id (``$N``), name, created, attached,
        and for each pane its id, pid, current command and whether it is active."""
        sessions: dict[str, dict] = {}
        for pane in self._listing():
            session_id = pane.session_id or ""  # the listing keeps only rows with ids
            session = sessions.setdefault(session_id, {
                "id": session_id, "name": pane.session_name or "", "created": _number(pane.session_created),
                "attached": pane.session_attached not in (None, "", "0"), "panes": []})
            session["panes"].append({"id": pane.pane_id, "pid": _number(pane.pane_pid),
                                     "command": pane.pane_current_command or "",
                                     "active": pane.pane_active == "1" and pane.window_active == "1"})
        return sorted(sessions.values(), key=lambda s: s["name"])

    def new_session(self, name: str, command: str | None = None, *, width: int = 120, height: int = 30,
                    environment: dict[str, str] | None = None) -> None:
        """A detached session named exactly ``name`` (a name tmux would change —
        empty, or holding ``:`` or ``.`` — is refused), running ``command``."""
        from libtmux import exc
        from libtmux.common import session_check_name

        try:
            session_check_name(name)
        except exc.LibTmuxException as error:
            raise TmuxError(str(error)) from None
        # Not ``server.new_session``: it reads the new session back through libtmux's
        # full listing, which fails (after the session is made) when the name, the
        # command or the working directory holds its field separator.
        args = ["new-session", "-d", "-s", name, "-x", str(width), "-y", str(height)]
        for key, value in (environment or {}).items():
            args += ["-e", f"{key}={value}"]
        if command:
            args.append(command)
        _checked(self.server.cmd(*args))

    def kill(self, target: str) -> None:
        from libtmux import exc

        try:
            session = self._session(target)
        except TmuxError:
            return
        try:
            session.kill()
        except exc.LibTmuxException as error:
            if not _is_missing(str(error)):
                raise TmuxError(str(error)) from None

    def kill_server(self) -> None:
        from libtmux import exc

        try:
            self.server.kill()
        except exc.LibTmuxException:
            pass  # a server that is gone, or going, is what was asked for

    # ------------------------------------------------------------ panes
    def capture(self, name: str, lines: int = 200) -> list[str]:
        """The last ``lines`` lines of the active pane, history included, without
        the blank rows below the cursor."""
        pane = self._pane(name)
        out = pane.capture_pane(start=-max(1, lines), join_wrapped=True)
        # libtmux drops blank lines at the end and tmux's error with them: a blank
        # pane and one that ended since the lookup both come back empty.
        if not out and not self.has_session(pane.pane_id or ""):
            raise TmuxError(f"can't find pane: {pane.pane_id}")
        return _without_blank_tail(out)[-lines:]

    def recent(self, name: str, lines: int) -> list[str]:
        """The last ``lines`` rows of the pane ``name`` shows, history included,
        wrapped rows joined, in one tmux command (a session or pane id needs
        no lookup); without the blank rows below the cursor."""
        target = self._pane_target(name)
        out = _checked(self.server.cmd("capture-pane", "-p", "-J", "-t", target, "-S", f"-{max(1, lines)}"))
        return _without_blank_tail(out)[-lines:]

    def read_since(self, name: str, position: int, *, history: int) -> tuple[dict[str, int], list[str]]:
        """(``marks`` now, what the active pane shows from absolute line
        ``position`` on), in one tmux command while the pane's history is still
        the ``history`` lines the caller saw last — the usual case between two
        polls. tmux runs the two commands of one invocation back to back, so
        the marks it prints describe the pane it captures; when they say the
        history moved, a second command captures from the right place."""
        target = self._pane_target(name)
        out = _checked(self.server.cmd("display-message", "-p", "-t", target, MARKS_FORMAT, ";",
                                       "capture-pane", "-p", "-J", "-t", target, "-S", str(position - history)))
        marks = _parse_marks(out[:1])
        if marks["history"] == history:
            return marks, _without_blank_tail(out[1:])
        start = position - marks["history"]  # negative: still in the history
        return marks, _without_blank_tail(
            _checked(self.server.cmd("capture-pane", "-p", "-J", "-t", target, "-S", str(start))))

    def send_message(self, name: str, text: str) -> None:
        """Type ``text`` into the active pane (literally: ``send-keys -l``), then
        press Enter as an event of its own: an interactive agent reads a burst of
        text with its Enter as a paste and keeps the Enter as a newline. The
        caller makes ``text`` one printable line: typed literally, a newline is
        still Enter and a control character still a control key. (A warrant's
        check goes through ``core.warrants.speech``, which also confirms it.)"""
        target = self._pane_target(name)  # looked up once: a name costs a listing
        self.type_text(target, text)
        self.send_keys(target, "Enter")

    def type_text(self, name: str, text: str) -> None:
        """``text`` typed literally into the pane ``name`` shows, no Enter."""
        if text.startswith(FLAG_PREFIX):
            raise TmuxError(f"a message cannot begin with {FLAG_PREFIX!r}: tmux reads it as flags")
        _checked(self.server.cmd("send-keys", "-t", self._pane_target(name), "-l", text))

    def send_keys(self, name: str, *keys: str, repeat: int = 1) -> None:
        """Named keys (``KEY_NAMES`` only: Enter, C-u, Escape...) into the pane
        ``name`` shows, each ``repeat`` times. Never text: text is ``type_text``."""
        unknown = [key for key in keys if key not in KEY_NAMES]
        if unknown or not keys:
            raise TmuxError(f"not a key leash sends: {unknown or 'none'}")
        args = ["send-keys", "-t", self._pane_target(name)] + (["-N", str(repeat)] if repeat > 1 else [])
        _checked(self.server.cmd(*args, *keys))

    def view(self, name: str) -> dict:
        """What the pane ``name`` shows now, in one tmux command: ``command``
        (the program in the foreground), ``pid`` (the pane's first process),
        ``cursor`` (x, y), ``width``, ``height`` and ``rows``: the visible rows
        as they are drawn (not joined, so ``rows[y]`` is the cursor's row)."""
        target = self._pane_target(name)
        out = _checked(self.server.cmd("display-message", "-p", "-t", target, VIEW_FORMAT, ";",
                                       "capture-pane", "-p", "-t", target))
        values = out[0].split(FIELD_SEPARATOR, len(VIEW_FIELDS) - 1) if out else []
        if len(values) != len(VIEW_FIELDS):
            raise TmuxError(f"tmux did not describe the pane {target}")
        row = dict(zip(VIEW_FIELDS, values, strict=True))
        height = _number(row["pane_height"])
        rows = out[1:1 + height] + [""] * max(0, height - len(out[1:]))
        return {"command": row["pane_current_command"], "pid": _number(row["pane_pid"]),
                "cursor": (_number(row["cursor_x"]), _number(row["cursor_y"])),
                "width": _number(row["pane_width"]), "height": height, "rows": rows}

    def press(self, pane: str, key: str) -> None:
        """Press ``key`` (one of ``KEY_NAMES``: ``Escape``) once in pane ``pane``
        (a ``%N`` id): a key event of its own, nothing typed before or after it."""
        if not (is_tmux_id(pane) and pane.startswith(PANE_ID_PREFIX)):
            raise TmuxError(f"not a pane id: {pane!r}")
        self.send_keys(pane, key)

    def mark(self, name: str, *, tail: int = 60) -> tuple[dict[str, int], list[str]]:
        """Where the pane is (``marks``) and its last ``tail`` lines, in one tmux
        command (each command is a process to start, and a kennel sends many):
        taken just before a message is sent, so what comes after can be found."""
        target = self._pane_target(name)
        out = _checked(self.server.cmd("display-message", "-p", "-t", target, MARKS_FORMAT, ";",
                                       "capture-pane", "-p", "-J", "-t", target, "-S", f"-{max(1, tail)}"))
        return _parse_marks(out[:1]), _without_blank_tail(out[1:])


def is_tmux_id(text: str) -> bool:
    """``$N`` (a session id) or ``%N`` (a pane id)."""
    return isinstance(text, str) and len(text) > 1 and text[0] in (SESSION_ID_PREFIX, PANE_ID_PREFIX) \
        and text[1:].isdigit() and text[1:].isascii()


def _checked(result, *, quiet_missing: bool = False) -> list[str]:
    """The output of a tmux command run through ``server.cmd``; its error as a
    ``TmuxError`` (none when ``quiet_missing`` and the thing is not there)."""
    if result.returncode != 0:
        message = " ".join(result.stderr).strip() or f"tmux failed (exit {result.returncode})"
        if quiet_missing and _is_missing(message):
            return []
        raise TmuxError(message)
    return result.stdout


def _number(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


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
