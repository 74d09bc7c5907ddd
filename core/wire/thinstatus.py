"""``leash statusline``: Claude Code's status line through leashd.

Claude Code runs the ``statusLine`` command with its status JSON on stdin
(``session_id``, ``transcript_path``, ``model``, ``cost.total_cost_usd``,
``rate_limits.five_hour|seven_day.used_percentage`` and ``resets_at``...) and
shows what it prints. ``leash install`` makes that command this one, keeping
the user's own (``--user-command CMD``): it runs first, through ``/bin/sh
-c``, with the same stdin, and what it prints is printed first, byte for byte;
then leash's line, e.g. ``leash $1.24 · 5h 42% · 7d 13% · HELD: cap daily``,
from leashd's reply to a ``status`` request on its agent socket (the same
socket, and the same check that the peer is leashd, as the thin hook:
``core.wire.thinhook``). leashd records the subscription windows and answers
the figures (``core.daemon.statusverb``).

The status JSON is data: leash's part is built from leashd's numbers and cap
names with every character that is not printable dropped, so nothing from the
JSON or the config reaches the terminal as a control sequence. The user's
command's output is the user's own and passes unchanged.

Failure: nothing here fails the status line. Without leashd (no socket,
refused, not leashd, no reply within ``DEADLINE_SECONDS``), a status that is
not a JSON object, or an error reply, leash prints no line of its own: the
user's line alone, or nothing; the exit code is 0. The user's command gets
``USER_DEADLINE_SECONDS``; past it, its process group is killed and what it
printed so far is printed.

Imports: what the thin hook imports, ``select`` and ``_signal``; no
``subprocess`` (it imports ``re``), because the status line runs often.
"""
from __future__ import annotations

import os
import select
import sys
import time

from leash.core.wire import thinhook
from leash.core.wire.hookio import HookInputError, read_stdin

STATUS_VERB = "status"
# leashd answers a status line from memory and one store write; past this the
# line is shown without leash's part rather than late.
DEADLINE_SECONDS = 0.3
DEADLINE_ENV = "LEASH_STATUSLINE_DEADLINE"
USER_DEADLINE_SECONDS = 10.0
STDIN_SECONDS = 5.0
SHELL = "/bin/sh"
SEPARATOR = " · "
NAME_LIMIT = 40  # characters of a cap or window name shown
REQUEST_LIMIT_BYTES = 1024 * 1024  # a status JSON is a few KiB; a larger one is not sent
PIPE_CHUNK_BYTES = 65536
REAP_POLL_SECONDS = 0.005
USER_COMMAND_OPTION = "--user-command"
INHERITED_OPTION = "--inherited"
HOME_OPTION = "--home"


def _option(word: str) -> tuple[str, str | None] | None:
    """(option, value given with ``=``) for a word naming one of statusline's
    options, abbreviated as argparse allows; None for anything else."""
    name, eq, value = word.partition("=")
    if not name.startswith("--") or len(name) < 3:
        return None
    known = [option for option in (USER_COMMAND_OPTION, INHERITED_OPTION, HOME_OPTION, "--help")
             if option.startswith(name)]
    exact = name if name in known else None
    chosen = exact or (known[0] if len(known) == 1 else None)
    return (chosen, value if eq else None) if chosen else None


def parse(words: list[str]) -> tuple[str | None, bool, str | None] | None:
    """(the user's command, inherited, home) of ``statusline``'s options, read
    as the full parser reads them (the last of a repeated option counts);
    None for anything else, and for help (the full parser says what is wrong,
    or prints the help)."""
    command: str | None = None
    inherited, home, rest = False, None, list(words)
    while rest:
        found = _option(rest.pop(0))
        if found is None or found[0] == "--help":
            return None
        option, value = found
        if option == INHERITED_OPTION:
            if value is not None:
                return None
            inherited = True
            continue
        if value is None:
            if not rest or (rest[0].startswith("-") and rest[0] != "-"):
                return None
            value = rest.pop(0)
        if option == USER_COMMAND_OPTION:
            command = value
        else:
            home = value
    return command, inherited, home


def main(words: list[str], *, home: str | None = None, stdin=None, stdout=None, env=os.environ) -> int | None:
    """``leash [--home DIR] statusline [OPTIONS]``: 0, or None when the
    options are not statusline's (the full parser says what is wrong)."""
    parsed = parse(words)
    if parsed is None:
        return None
    return run(home=parsed[2] or home, user_command=parsed[0], stdin=stdin, stdout=stdout, env=env)


def run(*, home: str | None, user_command: str | None, stdin=None, stdout=None, env=os.environ) -> int:
    """Print the user's line (if any) and leash's; always 0."""
    try:
        raw = read_stdin(stdin, timeout=STDIN_SECONDS)
    except HookInputError:
        raw = b""
    user = UserLine(user_command, raw, env) if user_command else None
    try:
        line = status_text(figures(raw, home=home, env=env))
    except Exception:  # leash's part never costs the user their line
        line = ""
    shown = user.collect(time.monotonic() + USER_DEADLINE_SECONDS) if user is not None else b""
    if line:
        shown += (b"\n" if shown and not shown.endswith(b"\n") else b"") + line.encode("utf-8") + b"\n"
    out = stdout if stdout is not None else sys.stdout.buffer
    try:
        out.write(shown)
        out.flush()
    except (OSError, ValueError):
        pass  # Claude Code stopped listening: nothing to tell it
    return 0


def deadline_seconds(env=os.environ) -> float:
    try:
        given = float(env.get(DEADLINE_ENV, ""))
    except ValueError:
        return DEADLINE_SECONDS
    return given if 0 < given <= thinhook.MAX_DEADLINE_SECONDS else DEADLINE_SECONDS


def figures(raw: bytes, *, home: str | None, env=os.environ) -> dict | None:
    """leashd's reply to the status (None: no leashd, not JSON, too large)."""
    path, _ = thinhook.agent_socket(home, env)
    if path is None or len(raw) > REQUEST_LIMIT_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
        status = thinhook.loads(text)
    except (ValueError, StopIteration):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(status, dict):
        return None
    request = (thinhook.dumps({"verb": STATUS_VERB, "payload": text}) + "\n").encode("utf-8", "surrogatepass")
    deadline = time.monotonic() + deadline_seconds(env)
    try:
        return thinhook.ask(path, request, home=thinhook.home_of(home, env), deadline=deadline, env=env)
    except (thinhook.NotTheDaemon, thinhook.DaemonTooSlow, thinhook.DaemonUnreachable):
        return None


# ------------------------------------------------------------------ leash's line
def shown_name(value: object) -> str:
    """A name as leash's line shows it: printable characters only, cut short."""
    if not isinstance(value, str):
        return ""
    return "".join(char for char in value if char.isprintable())[:NAME_LIMIT].strip()


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def status_text(reply: object) -> str:
    """``leash $1.24 · 5h 42% · 7d 13% · HELD: cap daily`` from leashd's reply
    ({"usd", "estimated", "windows": [[name, percent]...], "held": [cap...]});
    "" for no reply or an error reply."""
    if not isinstance(reply, dict) or "error" in reply:
        return ""
    head = "leash"
    usd = _number(reply.get("usd"))
    if usd is not None:
        head += f" {'~' if reply.get('estimated') is True else ''}${usd:.2f}"
    parts = [head]
    windows = reply.get("windows")
    for item in windows if isinstance(windows, list) else ():
        if isinstance(item, list) and len(item) == 2:
            name, percent = shown_name(item[0]), _number(item[1])
            if name and percent is not None:
                parts.append(f"{name} {percent:.0f}%")
    held = reply.get("held")
    caps = [name for name in map(shown_name, held if isinstance(held, list) else ()) if name]
    if caps:
        parts.append("HELD: " + ", ".join(f"cap {name}" for name in caps))
    return SEPARATOR.join(parts)


# ------------------------------------------------------------------ the user's command
class UserLine:
    """The user's status line command, running from its construction: the
    status JSON written to its stdin, its stdout kept; ``collect`` waits for
    it to finish (or kills its process group at the deadline)."""

    def __init__(self, command: str, raw: bytes, env) -> None:
        import _signal  # type: ignore[import-not-found]  # signal's C core: ``signal`` imports enum

        self.signals = _signal
        self.chunks: list[bytes] = []
        self.pending = memoryview(raw)
        in_read, self.stdin = os.pipe()
        self.stdout, out_write = os.pipe()
        try:
            # Its own process group, to end it whole; SIGPIPE as a shell expects (Python ignores it).
            self.pid: int | None = os.posix_spawn(
                SHELL, [SHELL, "-c", command], dict(env),
                file_actions=[(os.POSIX_SPAWN_DUP2, in_read, 0), (os.POSIX_SPAWN_DUP2, out_write, 1)],
                setpgroup=0, setsigdef=(_signal.SIGPIPE,))
        except OSError:
            self.pid = None
        finally:
            os.close(in_read)
            os.close(out_write)
        os.set_blocking(self.stdin, False)
        self._feed()

    def _feed(self) -> None:
        """Write what the pipe takes now; close it once all is written."""
        if self.stdin < 0:
            return
        try:
            while self.pending:
                written = os.write(self.stdin, self.pending[:PIPE_CHUNK_BYTES])
                self.pending = self.pending[written:]
        except BlockingIOError:
            return
        except OSError:  # it stopped reading (exited): the rest is not wanted
            pass
        os.close(self.stdin)
        self.stdin = -1

    def collect(self, deadline: float) -> bytes:
        """Everything it printed, once it ended (or was ended at ``deadline``)."""
        try:
            self._pump(deadline)
        finally:
            if self.stdin >= 0:
                os.close(self.stdin)
                self.stdin = -1
            os.close(self.stdout)
            self._reap(deadline)
        return b"".join(self.chunks)

    def _pump(self, deadline: float) -> None:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            writing = [self.stdin] if self.stdin >= 0 else []
            readable, writable, _ = select.select([self.stdout], writing, [], left)
            if writable:
                self._feed()
            if readable:
                chunk = os.read(self.stdout, PIPE_CHUNK_BYTES)
                if not chunk:
                    return
                self.chunks.append(chunk)

    def _reap(self, deadline: float) -> None:
        if self.pid is None:
            return
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return
            time.sleep(REAP_POLL_SECONDS)
        try:
            os.killpg(self.pid, self.signals.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)
