"""The hook as a thin client of leashd: ``leash hook EVENT`` forwards Claude
Code's payload and the few environment values leash reads to the daemon's
agent socket, and prints the reply.

Which socket: ``LEASH_SOCKET`` when set, else ``<home>/run/agent.sock`` when it
exists (the home from ``--home``, ``LEASH_HOME`` or ``~/.leash``). With neither
there is no daemon to ask and the in-process hook runs, as without leashd.

Whom it trusts: before the payload is sent, the process that answers must be
leashd (``core.wire.daemontrust.vouch``).

Failure:
* the answering process is not leashd: the gating events deny saying so, the
  others fail open with one line on stderr (``failed_closed``); the payload is
  never sent to it;
* nothing heard from leashd for 2 s (``ACK_WAIT_SECONDS``: the request asks
  for acknowledgements, which leashd sends while it judges): the same, "leash
  daemon not answering" (a stopped or hung daemon);
* no reply within the deadline (``LEASH_HOOK_DEADLINE`` seconds, default 20:
  under the 25 s of ``timeout`` in the installed command and Claude Code's
  30 s): the same, naming leashd. Events an approval may hold wait longer
  than it: ``LEASH_APPROVAL_WAIT`` (``core.hooktimes``) and a margin;
* the daemon unreachable (refused, gone, the connection cut mid-call, a reply
  that is not one JSON object): with ``LEASH_SOCKET`` set (the separated
  profile, where the agent cannot read the home) the same again; without it,
  ``run`` raises ``NoDaemon`` and the in-process gate judges.

Imports: ``posix`` (not ``os``: ``core.base.bareos``), ``sys``, the C cores of
``json`` and ``socket`` (``_json``, ``_socket``), ``time``, the stdlib-only
hook IO module and the well-known names; nothing else of leash (tests check
``python -X importtime``), because every tool call pays for them. ``json`` itself imports ``re``, which alone
costs about half a bare interpreter's start; where the C cores are missing
(not CPython), ``json`` and ``socket`` are used.

Tracing: with ``LEASH_HOOK_TRACE`` naming a file, the client appends one line
of ``time.perf_counter_ns`` stamps per call (entered, imported, read,
connected, vouched, sent, replied, written) after it has answered, and leashd
started with it does the same for its side (``core.daemon.hookverb``):
``bench/hook_latency.py`` lays them out. Unset, nothing is stamped.
"""

import posix
import sys
import time

from leash.core.base import bareos
from leash.core.base.wellknown import (
    AGENT_SOCKET_ENV,
    AGENT_SOCKET_NAME,
    DEFAULT_HOME,
    HOME_ENV,
    OPERATOR_SOCKET_ENV,
    RUN_DIR,
)
from leash.core.wire.daemontrust import DAEMON_UID_ENV, NotTheDaemon, vouch
from leash.core.wire.hookio import (
    REQUEST_LIMIT_BYTES,
    TRACE_ENV,
    UNTRACED,
    HookInputError,
    HookInputTooLarge,
    Trace,
    emit,
    failed_closed,
    read_stdin,
)

# What of the agent's environment the daemon needs to judge a call: the tmux
# pane (session identity), the home directory and user (shell expansion in the
# shell reader), the project directory (path locks) and leash's own LEASH_*
# settings (entity, trigger, scope).
FORWARDED_ENV = ("TMUX", "TMUX_PANE", "TMUX_TMPDIR", "HOME", "USER", "LOGNAME", "PWD",
                 "CLAUDE_PROJECT_DIR")  # where relative path locks are anchored
FORWARDED_PREFIX = "LEASH_"
# Seconds the thin client waits for leashd's reply (tests set a short one).
DEADLINE_ENV = "LEASH_HOOK_DEADLINE"
# Under the installed command's own ``timeout`` (25 s) and Claude Code's hook
# timeout (30 s): leash, not a kill, says why the call was refused.
DEFAULT_DEADLINE_SECONDS = 20.0
MAX_DEADLINE_SECONDS = 24.0
# Events an approval may hold; its wait (``[approvals] timeout_s``, pinned in
# their command) and how much longer the client waits for leashd's answer.
APPROVAL_EVENTS = ("pre-tool-use", "permission-request", "gemini-before-tool", "codex-pre-tool-use",
                   "codex-permission-request")
APPROVAL_WAIT_ENV = "LEASH_APPROVAL_WAIT"
DEFAULT_APPROVAL_WAIT_SECONDS = 300.0
APPROVAL_MARGIN_SECONDS = 10.0
# Where the state lives, how to reach the daemon, how long to wait and where
# to trace are the daemon's to know, or this client's own.
NOT_FORWARDED = frozenset({HOME_ENV, AGENT_SOCKET_ENV, OPERATOR_SOCKET_ENV, DAEMON_UID_ENV, DEADLINE_ENV,
                           APPROVAL_WAIT_ENV, TRACE_ENV})
RECV_CHUNK_BYTES = 65536
# Acknowledgements (core.daemon.acks): a hook request carries ``"ack": "1"``;
# leashd then says "judging" at least every second while it judges, and
# "held" once the call waits for an approval. Heard nothing for this long,
# the client refuses the call: a stopped or hung leashd costs an agent 2 s,
# not the approval's five minutes. Only a held call waits its deadline.
ACK_KEY, ACK_ASKED, HELD_ACK = "ack", "1", "held"
ACK_WAIT_SECONDS = 2.0
# A full listen queue answers a connect at once (EAGAIN): retry this often.
CONNECT_RETRY_SECONDS = 0.01


try:
    import _json
    import _socket as socket_core

    class _Strict:
        """What json's C scanner reads from a decoder: plain JSON, no hooks."""

        strict, object_hook, object_pairs_hook = True, None, None
        parse_float, parse_int = float, int

        @staticmethod
        def parse_constant(name: str):
            raise ValueError(f"not JSON: {name}")

    _scan = _json.make_scanner(_Strict())  # type: ignore[arg-type]  # it reads a decoder's attributes, as these

    def loads(text: str):
        value, end = _scan(text, 0)
        if text[end:].strip():
            raise ValueError("extra data after the JSON value")
        return value

    def quoted(text: str) -> str:
        return _json.encode_basestring(text)
except ImportError:  # another Python: the modules themselves
    import json
    import socket as socket_core  # type: ignore[no-redef]

    def loads(text: str):
        return json.loads(text)

    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)


def dumps(value) -> str:
    """JSON of the request: an object of strings, and objects of strings."""
    if isinstance(value, str):
        return quoted(value)
    return "{" + ",".join(f"{quoted(key)}:{dumps(item)}" for key, item in value.items()) + "}"


class DaemonUnreachable(Exception):
    pass


class DaemonTooSlow(Exception):
    """No reply within the client's deadline: the gating events fail closed."""


class DaemonNotAnswering(DaemonTooSlow):
    """Asked for acknowledgements, the client heard nothing for
    ``ACK_WAIT_SECONDS``: leashd is stopped or hung, not judging."""


class NoDaemon(Exception):
    """No daemon to ask: the in-process hook judges. ``raw``/``input_error``
    hold stdin when it was read already (it cannot be read twice)."""

    def __init__(self, raw: bytes | None = None, input_error: HookInputError | None = None):
        super().__init__("no leash daemon")
        self.raw = raw
        self.input_error = input_error


def home_of(home: str | None, env=bareos.environ) -> str:
    """The state home's absolute path: ``--home``, ``LEASH_HOME``, ``~/.leash``."""
    chosen = home or env.get(HOME_ENV) or DEFAULT_HOME
    return bareos.abspath(bareos.expanduser(chosen))


def agent_socket(home: str | None, env=bareos.environ) -> tuple[str | None, bool]:
    """(path, required): the agent socket to use (None: no daemon here) and
    whether it was asked for by ``LEASH_SOCKET`` (then unreachable denies)."""
    explicit = env.get(AGENT_SOCKET_ENV)
    if explicit:
        return explicit, True
    path = bareos.join(home_of(home, env), RUN_DIR, AGENT_SOCKET_NAME)
    return (path, False) if bareos.exists(path) else (None, False)


def _seconds(env, name: str, most: float) -> float | None:
    """The environment's ``name`` when it is a number of seconds in (0, ``most``], else None."""
    try:
        given = float(env.get(name, ""))
    except ValueError:
        return None
    return given if 0 < given <= most else None


def deadline_seconds(env=bareos.environ, event: str = "") -> float:
    """``LEASH_HOOK_DEADLINE`` when it is a number of seconds in (0, 24];
    else, for the events an approval may hold, the approval's wait
    (``LEASH_APPROVAL_WAIT``, default 300) and a margin; else 20."""
    given = _seconds(env, DEADLINE_ENV, MAX_DEADLINE_SECONDS)
    if given is not None:
        return given
    if event in APPROVAL_EVENTS:
        wait = _seconds(env, APPROVAL_WAIT_ENV, float("inf"))
        return max((wait or DEFAULT_APPROVAL_WAIT_SECONDS) + APPROVAL_MARGIN_SECONDS, DEFAULT_DEADLINE_SECONDS)
    return DEFAULT_DEADLINE_SECONDS


def forwarded_env(env=bareos.environ) -> dict[str, str]:
    return {name: value for name, value in env.items()
            if (name in FORWARDED_ENV or name.startswith(FORWARDED_PREFIX)) and name not in NOT_FORWARDED}


def hook_request(event: str, raw: bytes, input_error: HookInputError | None, env=bareos.environ) -> bytes:
    """The request line for the agent socket."""
    request: dict[str, object] = {"verb": "hook", "event": event, "env": forwarded_env(env), ACK_KEY: ACK_ASKED}
    if isinstance(input_error, HookInputTooLarge):
        request["input_error"] = "too_large"
    elif input_error is not None:
        request["input_error"] = str(input_error)
    else:
        # Bytes that are not UTF-8 travel as lone surrogates and come back intact.
        request["payload"] = raw.decode("utf-8", "surrogateescape")
    line = _encoded(request)
    if len(line) > REQUEST_LIMIT_BYTES:  # the daemon would cut it off: say what it is instead
        request.pop("payload", None)
        request["input_error"] = "too_large"
        line = _encoded(request)
    return line


def _encoded(request: dict) -> bytes:
    return dumps(request).encode("utf-8", "surrogatepass") + b"\n"


# sockaddr_un holds 108 bytes with its NUL: a longer path is reached through
# its directory's descriptor (/proc/self/fd/N/NAME), which Linux resolves.
SOCKET_PATH_MAX = 107


def unix_address(path: str) -> tuple[str, int | None]:
    """(address to bind or connect, directory descriptor to close after)."""
    if len(bareos.fsencode(path)) <= SOCKET_PATH_MAX:
        return path, None
    fd = posix.open(bareos.dirname(path) or ".", posix.O_RDONLY | posix.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{bareos.basename(path)}", fd


def connect(conn, path: str) -> None:
    address, fd = unix_address(path)
    try:
        conn.connect(address)
    finally:
        if fd is not None:
            posix.close(fd)


class _Clock:
    """The two limits of one call: the overall ``deadline`` and, when the
    request asked for acknowledgements, the ``silence`` by which leashd must
    say something (pushed on by each "judging", lifted by "held")."""

    __slots__ = ("deadline", "silence")

    def __init__(self, deadline: float, *, acknowledged: bool):
        self.deadline = deadline
        self.silence = time.monotonic() + ACK_WAIT_SECONDS if acknowledged else float("inf")

    def remaining(self) -> float:
        now = time.monotonic()
        if now >= self.silence and self.silence < self.deadline:
            raise DaemonNotAnswering(f"no acknowledgement within {ACK_WAIT_SECONDS:g} s")
        if now >= self.deadline:
            raise DaemonTooSlow("no reply in time")
        return min(self.deadline, self.silence) - now

    def heard(self, ack: object) -> None:
        """leashd acknowledged: it is judging (wait on), or holding the call
        for an approval (wait to the deadline)."""
        self.silence = float("inf") if ack == HELD_ACK else time.monotonic() + ACK_WAIT_SECONDS


def _connect_by(conn, path: str, clock: _Clock) -> None:
    while True:
        conn.settimeout(clock.remaining())
        try:
            connect(conn, path)
            return
        except BlockingIOError:  # its listen queue is full: the daemon is behind, not gone
            time.sleep(min(CONNECT_RETRY_SECONDS, clock.remaining()))


def _reply_of(line: bytes) -> dict:
    try:
        reply = loads(line.decode("utf-8", "surrogatepass"))
    except (ValueError, StopIteration):
        raise DaemonUnreachable("a reply that is not JSON") from None
    if not isinstance(reply, dict):
        raise DaemonUnreachable("a reply that is not a JSON object")
    return reply


def _read_reply(conn, clock: _Clock) -> dict:
    """The first line that is not an acknowledgement."""
    pending = b""
    while True:
        newline = pending.find(b"\n")
        if newline >= 0:
            reply = _reply_of(pending[:newline])
            pending = pending[newline + 1:]
            if ACK_KEY not in reply:
                return reply
            clock.heard(reply[ACK_KEY])
            continue
        try:
            conn.settimeout(clock.remaining())
            chunk = conn.recv(RECV_CHUNK_BYTES)
        except TimeoutError:
            clock.remaining()  # raises the limit that was reached
            raise
        if not chunk:
            raise DaemonUnreachable("the connection closed before a reply")
        pending += chunk


def ask(path: str, request: bytes, *, home: str, deadline: float, env=bareos.environ, acknowledged: bool = False,
        trace: Trace = UNTRACED) -> dict:
    """The daemon's one-line reply to ``request`` by ``deadline`` (monotonic);
    ``NotTheDaemon``, ``DaemonTooSlow`` (``DaemonNotAnswering`` when the
    request asked for acknowledgements and none came in time) or
    ``DaemonUnreachable`` otherwise."""
    clock = _Clock(deadline, acknowledged=acknowledged)
    try:
        conn = socket_core.socket(socket_core.AF_UNIX, socket_core.SOCK_STREAM)
        try:
            _connect_by(conn, path, clock)
            trace.mark("connected")
            vouch(conn, path, home, env)
            trace.mark("vouched")
            conn.settimeout(clock.remaining())
            conn.sendall(request)
            trace.mark("sent")
            reply = _read_reply(conn, clock)
            trace.mark("replied")
            return reply
        finally:
            conn.close()
    except TimeoutError:
        clock.remaining()
        raise DaemonTooSlow("no reply in time") from None
    except OSError as exc:
        raise DaemonUnreachable(f"{exc.strerror or exc.__class__.__name__}") from None


def answer_of(event: str, reply: dict) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) from the daemon's reply; an error reply is a
    hook that could not judge (gating events fail closed)."""
    out, err, code = reply.get("stdout"), reply.get("stderr"), reply.get("code")
    if isinstance(out, str) and isinstance(err, str) and isinstance(code, int) and not isinstance(code, bool):
        return out, err, code
    problem = reply.get("error") if isinstance(reply.get("error"), str) else "a reply without stdout/stderr/code"
    return failed_closed(event, f"leash: leash daemon could not answer hook {event} ({problem})")


def run(event: str, *, home: str | None = None, stdin=None, stdout=None, stderr=None, env=bareos.environ,
        entered_ns: int | None = None) -> int:
    """The hook's exit code through the daemon; NoDaemon when there is none to
    ask and the in-process hook must judge. ``entered_ns``: when the hook's
    process began its own code (its trace's first stamp)."""
    path, required = agent_socket(home, env)
    if path is None:
        raise NoDaemon()
    trace = Trace(env.get(TRACE_ENV), entered_ns=entered_ns)
    trace.mark("imported")
    seconds = deadline_seconds(env, event)
    deadline = time.monotonic() + seconds
    raw, input_error = b"", None
    try:
        raw = read_stdin(stdin)
    except HookInputError as exc:
        input_error = exc
    trace.mark("read")
    request = hook_request(event, raw, input_error, env)
    try:
        out, err, code = answer_of(event, ask(path, request, home=home_of(home, env), deadline=deadline, env=env,
                                              acknowledged=True, trace=trace))
    except NotTheDaemon as exc:
        out, err, code = failed_closed(event, f"leash: refused to ask the agent socket: {exc}. It is not leash's "
                                              "daemon (leashd); this hook cannot judge the call until `leash "
                                              "daemon` answers there")
    except DaemonNotAnswering:
        out, err, code = failed_closed(event, f"leash: leash daemon not answering at {path}: no acknowledgement "
                                              f"within {ACK_WAIT_SECONDS:g} s, so this call is refused (is leashd "
                                              "stopped or hung? the operator can check `leash daemon`'s log)")
    except DaemonTooSlow:
        out, err, code = failed_closed(event, f"leash: leash daemon (leashd) did not answer within {seconds:g} s at "
                                              f"{path}: this hook cannot judge the call (is leashd stopped or "
                                              "overloaded? `leash daemon` logs every call)")
    except DaemonUnreachable as exc:
        if not required:
            raise NoDaemon(raw, input_error) from None
        out, err, code = failed_closed(event, f"leash: leash daemon not reachable at {path} ({exc}): start "
                                              "`leash daemon`; until then this hook cannot judge the call")
    code = emit(out, err, code, stdout=stdout or sys.stdout, stderr=stderr or sys.stderr)
    trace.mark("written")
    trace.write("client", posix.getpid())
    return code
