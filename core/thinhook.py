"""The hook as a thin client of leashd: ``leash hook EVENT`` forwards Claude
Code's payload and the few environment values leash reads to the daemon's
agent socket, and prints the reply.

Which socket: ``LEASH_SOCKET`` when set, else ``<home>/run/agent.sock`` when it
exists (the home from ``--home``, ``LEASH_HOME`` or ``~/.leash``). With neither
there is no daemon to ask and the in-process hook runs, as without leashd.

Failure: the daemon unreachable (refused, gone, the connection cut mid-call,
a reply that is not one JSON object):
* with ``LEASH_SOCKET`` set (the separated profile, where the agent cannot read
  the home) the hook fails closed: the gating events deny and name
  ``leash daemon``, the others fail open with one line on stderr;
* without it, ``run`` returns None and the in-process gate judges, as today.
There is no deadline of the client's own: a reply may wait on a person, and
the hook's ``timeout`` in Claude Code's settings bounds the wait.

Imports: ``os``, ``sys``, the C cores of ``json`` and ``socket`` (``_json``,
``_socket``), the stdlib-only hook IO module and the well-known names; nothing
else of leash (tests check ``python -X importtime``), because every tool call
pays for them. ``json`` itself imports ``re``, which alone costs about half a
bare interpreter's start; where the C cores are missing (not CPython), ``json``
and ``socket`` are used.
"""
from __future__ import annotations

import os
import sys

from leash.core.hookio import REQUEST_LIMIT_BYTES, HookInputError, HookInputTooLarge, emit, failed_closed, read_stdin
from leash.core.wellknown import (
    AGENT_SOCKET_ENV,
    AGENT_SOCKET_NAME,
    DEFAULT_HOME,
    HOME_ENV,
    OPERATOR_SOCKET_ENV,
    RUN_DIR,
)

# What of the agent's environment the daemon needs to judge a call: the tmux
# pane (session identity), the home directory and user (shell expansion in the
# shell reader) and leash's own LEASH_* settings (entity, trigger, scope).
FORWARDED_ENV = ("TMUX", "TMUX_PANE", "TMUX_TMPDIR", "HOME", "USER", "LOGNAME", "PWD")
FORWARDED_PREFIX = "LEASH_"
# Where the state lives and how to reach the daemon are the daemon's to know.
NOT_FORWARDED = frozenset({HOME_ENV, AGENT_SOCKET_ENV, OPERATOR_SOCKET_ENV})
RECV_CHUNK_BYTES = 65536


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


class NoDaemon(Exception):
    """No daemon to ask: the in-process hook judges. ``raw``/``input_error``
    hold stdin when it was read already (it cannot be read twice)."""

    def __init__(self, raw: bytes | None = None, input_error: HookInputError | None = None):
        super().__init__("no leash daemon")
        self.raw = raw
        self.input_error = input_error


def agent_socket(home: str | None, env=os.environ) -> tuple[str | None, bool]:
    """(path, required): the agent socket to use (None: no daemon here) and
    whether it was asked for by ``LEASH_SOCKET`` (then unreachable denies)."""
    explicit = env.get(AGENT_SOCKET_ENV)
    if explicit:
        return explicit, True
    chosen = home or env.get(HOME_ENV) or DEFAULT_HOME
    path = os.path.join(os.path.abspath(os.path.expanduser(chosen)), RUN_DIR, AGENT_SOCKET_NAME)
    return (path, False) if os.path.exists(path) else (None, False)


def forwarded_env(env=os.environ) -> dict[str, str]:
    return {name: value for name, value in env.items()
            if (name in FORWARDED_ENV or name.startswith(FORWARDED_PREFIX)) and name not in NOT_FORWARDED}


def hook_request(event: str, raw: bytes, input_error: HookInputError | None, env=os.environ) -> bytes:
    """The request line for the agent socket."""
    request: dict[str, object] = {"verb": "hook", "event": event, "env": forwarded_env(env)}
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
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path, None
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{os.path.basename(path)}", fd


def connect(conn, path: str) -> None:
    address, fd = unix_address(path)
    try:
        conn.connect(address)
    finally:
        if fd is not None:
            os.close(fd)


def ask(path: str, request: bytes) -> dict:
    """The daemon's one-line reply to ``request``; DaemonUnreachable otherwise."""
    try:
        conn = socket_core.socket(socket_core.AF_UNIX, socket_core.SOCK_STREAM)
        try:
            connect(conn, path)
            conn.sendall(request)
            chunks: list[bytes] = []
            while True:
                chunk = conn.recv(RECV_CHUNK_BYTES)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
        finally:
            conn.close()
    except OSError as exc:
        raise DaemonUnreachable(f"{exc.strerror or exc.__class__.__name__}") from None
    data = b"".join(chunks)
    if not data.endswith(b"\n"):
        raise DaemonUnreachable("the connection closed before a reply")
    try:
        reply = loads(data.decode("utf-8", "surrogatepass"))
    except (ValueError, StopIteration):
        raise DaemonUnreachable("a reply that is not JSON") from None
    if not isinstance(reply, dict):
        raise DaemonUnreachable("a reply that is not a JSON object")
    return reply


def answer_of(event: str, reply: dict) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) from the daemon's reply; an error reply is a
    hook that could not judge (gating events fail closed)."""
    out, err, code = reply.get("stdout"), reply.get("stderr"), reply.get("code")
    if isinstance(out, str) and isinstance(err, str) and isinstance(code, int) and not isinstance(code, bool):
        return out, err, code
    problem = reply.get("error") if isinstance(reply.get("error"), str) else "a reply without stdout/stderr/code"
    return failed_closed(event, f"leash: leash daemon could not answer hook {event} ({problem})")


def run(event: str, *, home: str | None = None, stdin=None, stdout=None, stderr=None, env=os.environ) -> int:
    """The hook's exit code through the daemon; NoDaemon when there is none to
    ask and the in-process hook must judge."""
    path, required = agent_socket(home, env)
    if path is None:
        raise NoDaemon()
    raw, input_error = b"", None
    try:
        raw = read_stdin(stdin)
    except HookInputError as exc:
        input_error = exc
    try:
        out, err, code = answer_of(event, ask(path, hook_request(event, raw, input_error, env)))
    except DaemonUnreachable as exc:
        if not required:
            raise NoDaemon(raw, input_error) from None
        out, err, code = failed_closed(event, f"leash: leash daemon not reachable at {path} ({exc}): start "
                                              "`leash daemon`; until then this hook cannot judge the call")
    return emit(out, err, code, stdout=stdout or sys.stdout, stderr=stderr or sys.stderr)

