"""A hook's input and output: its command line (``hook_call``: ``[--home DIR]
hook EVENT``, read before argparse), stdin read with a time and size limit,
the JSON payload parsed, and the deny answer pre-tool-use prints.

A traced call (``LEASH_HOOK_TRACE`` naming a file: ``Trace``) appends its
``time.perf_counter_ns`` stamps there, the thin client's and leashd's
(``core.wire.thinhook``, ``core.daemon.hookverb``).

Failure: everything wrong with the input is a ``HookInputError`` (one line to
show); more than ``STDIN_LIMIT_BYTES`` is ``HookInputTooLarge``, on which
pre-tool-use denies. This module is on the hook path, the thin client's too:
standard library only, and ``json`` (which imports ``re``) only inside the
functions that need it.
"""

import posix
import sys
import time

TYPE_CHECKING = False  # for the type checker only: the thin client imports this module
if TYPE_CHECKING:
    from leash.core.base.statefile import JSONObject

STDIN_TIMEOUT_SECONDS = 5.0
# Claude Code's payloads (a tool's input and response) stay far below this;
# anything larger is refused on pre-tool-use rather than judged in part.
STDIN_LIMIT_BYTES = 16 * 1024 * 1024
# A thin hook's request to leashd carries the payload as UTF-8 JSON: twice the
# stdin limit covers the escaping of quotes and control bytes.
REQUEST_LIMIT_BYTES = 2 * STDIN_LIMIT_BYTES
READ_CHUNK_BYTES = 65536


# The file a traced call appends its stamps to (the module's docstring).
TRACE_ENV = "LEASH_HOOK_TRACE"


class Trace:
    """The stamps of one traced call (``LEASH_HOOK_TRACE``); does nothing
    when ``path`` is empty. ``write`` appends ``client PID NAME NS ...``."""

    __slots__ = ("path", "marks")

    def __init__(self, path: str | None, *, entered_ns: int | None = None):
        self.path = path or ""
        self.marks: list[tuple[str, int]] = [("entered", entered_ns)] if self.path and entered_ns else []

    def mark(self, name: str) -> None:
        if self.path:
            self.marks.append((name, time.perf_counter_ns()))

    def write(self, side: str, pid: int) -> None:
        if not self.path:
            return
        words = " ".join(f"{name} {ns}" for name, ns in self.marks)
        try:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(f"{side} {pid} {words}\n")
        except OSError:
            pass  # a trace that cannot be written changes no answer


UNTRACED = Trace(None)


def leading_home(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """(the home given, the words after it) for the ``--home DIR`` /
    ``--home=DIR`` that may lead leash's command line, read before argparse
    (the hook entry and completion's name lookups take fast paths on it);
    None when a leading ``--home`` has no value (the full parser reports it)."""
    home, rest = None, list(argv)
    while rest and rest[0].startswith("--home"):
        if rest[0] == "--home" and len(rest) >= 2:
            home, rest = rest[1], rest[2:]
        elif rest[0].startswith("--home="):
            home, rest = rest[0].split("=", 1)[1], rest[1:]
        else:
            return None
    return home, rest


# The installed command's own deadline: ``ENTRY --deadline SECONDS [--home DIR]
# hook EVENT`` (``core.hook.install``).
DEADLINE_FLAG = "--deadline"


def armed(argv: list[str]) -> list[str] | None:
    """``argv`` without its leading ``--deadline SECONDS``, once the process
    is set to end by ``SIGALRM`` when they have passed: the kernel ends it
    there whatever it is doing (its default action, restored first in case
    the parent ignored the signal), and the command's ``|| exit 2`` makes
    that a refusal, as ``timeout`` did in the command before. The process's
    own deadline costs no process of its own (``timeout`` cost each tool call
    a start of its own); what it cannot do that ``timeout`` did is end the
    children the hook left behind, and the hook starts none that outlive it.
    None: a deadline that is not a number of seconds above 0 (the caller
    says so and refuses). ``argv`` as it is without the flag."""
    if argv[:1] != [DEADLINE_FLAG]:
        return argv
    try:
        seconds = float(argv[1]) if len(argv) > 1 else 0.0
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        return None
    import _signal  # type: ignore[import-not-found]  # signal's C core: ``signal`` imports enum

    _signal.signal(_signal.SIGALRM, _signal.SIG_DFL)
    _signal.setitimer(_signal.ITIMER_REAL, seconds)
    return argv[2:]


def hook_call(argv: list[str]) -> tuple[str | None, str] | None:
    """``(home, event)`` when ``argv`` is ``[--home DIR | --home=DIR] hook EVENT``."""
    found = leading_home(argv)
    if found is None:
        return None
    home, rest = found
    if len(rest) == 2 and rest[0] == "hook" and not rest[1].startswith("-"):
        return home, rest[1]
    return None


class HookInputError(Exception):
    pass


class HookInputTooLarge(HookInputError):
    """More than ``STDIN_LIMIT_BYTES`` on stdin: pre-tool-use denies."""

    def __init__(self) -> None:
        super().__init__(f"hook input larger than {STDIN_LIMIT_BYTES // (1024 * 1024)} MiB")


def read_stdin(stream=None, *, timeout: float = STDIN_TIMEOUT_SECONDS) -> bytes:
    """All of stdin, or HookInputError when nothing complete arrives in time."""
    stream = stream if stream is not None else sys.stdin.buffer
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        raw = stream.read(STDIN_LIMIT_BYTES + 1)
        if len(raw) > STDIN_LIMIT_BYTES:
            raise HookInputTooLarge() from None  # a stream without a descriptor is read whole; nothing failed
        return raw
    received = _Received()
    # Claude Code has written the whole payload by the time the hook's code
    # begins, as a rule: a pipe (or a file) is read without waiting, and only
    # the rest, if any, is waited for (``select``, a module of its own to load).
    if _pipe_or_file(fd) and _read_ready(fd, received):
        return received.whole()
    return _read_waiting(fd, received, timeout)


# The type bits of st_mode, a FIFO's and a regular file's (stat.S_IFMT,
# S_IFIFO, S_IFREG; ``stat`` is not loaded for them).
_FILE_TYPE_MASK, _FIFO_TYPE, _REGULAR_TYPE = 0o170000, 0o010000, 0o100000


def _pipe_or_file(fd: int) -> bool:
    """A terminal or a socket is waited on from the start: a non-blocking
    read there would change the descriptor for whoever shares it."""
    try:
        return posix.fstat(fd).st_mode & _FILE_TYPE_MASK in (_FIFO_TYPE, _REGULAR_TYPE)
    except OSError:
        return False


class _Received:
    """stdin's chunks so far; ``HookInputTooLarge`` past the limit."""

    __slots__ = ("chunks", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def keep(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.size > STDIN_LIMIT_BYTES:
            raise HookInputTooLarge()

    def whole(self) -> bytes:
        return b"".join(self.chunks)


def _read_ready(fd: int, received: _Received) -> bool:
    """Read the pipe without blocking until its end (True) or until it is
    empty with its writer still there (False: the rest is to wait for)."""
    was_blocking = posix.get_blocking(fd)
    posix.set_blocking(fd, False)
    try:
        while True:
            try:
                chunk = posix.read(fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                return False
            if not chunk:
                return True
            received.keep(chunk)
    finally:
        if was_blocking:
            posix.set_blocking(fd, True)


def _read_waiting(fd: int, received: _Received, timeout: float) -> bytes:
    import select

    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HookInputError(f"no complete hook input on stdin within {timeout:g} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = posix.read(fd, READ_CHUNK_BYTES)
        if not chunk:
            return received.whole()
        received.keep(chunk)


def parse_payload(raw: bytes, *, need_session: bool = True) -> "JSONObject":
    import json  # json imports re: not at the top, where the thin hook client would pay for it

    if not raw.strip():
        raise HookInputError("empty hook input (expected Claude Code's JSON on stdin)")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"hook input is not JSON ({exc.__class__.__name__}: {str(exc)[:80]})") from None
    if not isinstance(payload, dict):
        raise HookInputError("hook input must be a JSON object")
    session_id = payload.get("session_id")
    if need_session and (not isinstance(session_id, str) or not session_id):
        raise HookInputError("hook input has no session_id")
    return payload


def failed_closed(event: str, message: str) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of a hook that could not establish that the
    call is allowed: an event that can refuse refuses, in its CLI's own form
    (``core.wire.hookevents``); the others fail open with the message on stderr."""
    from leash.core.wire.hookevents import BY_VERB, refusal_output

    refused = refusal_output(event, message)
    if refused is not None:
        return refused
    spec = BY_VERB.get(event)
    judged_as = spec.judged_as if spec is not None else event
    return "", message + "\n", 1 if judged_as in ("post-tool-use", "post-tool-use-failure") else 0


def emit(out: str, err: str, code: int, *, stdout, stderr) -> int:
    """Print a hook's answer (stderr first, then stdout, flushed); its exit code."""
    if err:
        stderr.write(err)
    if out:
        stdout.write(out)
    stdout.flush()
    return code


def deny_output(reason: str) -> str:
    import json

    return json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
