"""The hook as a thin client of leashd: ``leash hook EVENT`` forwards Claude
Code's payload and the few environment values leash reads to the daemon's
agent socket, and prints the reply.

Which socket: ``LEASH_SOCKET`` when set, else ``<home>/run/agent.sock`` when it
exists (the home from ``--home``, ``LEASH_HOME`` or ``~/.leash``). With neither
there is no daemon to ask and the in-process hook runs, as without leashd.

Whom it trusts: before the payload is sent, the process that answers must be
leashd (``vouch``). A socket owned, and answered, by another user counts when
that user is root, the owner of the home directory or the uid pinned in
``LEASH_DAEMON_UID`` (``leash install --socket`` writes it into the command):
the hook's user cannot make a socket another user owns. A socket of the hook's
own user (the single-user profile) could be anyone's of that user, so there
the peer (``SO_PEERCRED``) must be the process that holds the flock of
``<home>/run/leashd.lock`` (``/proc/locks``), which one leashd per home holds
for its life. What this cannot tell apart: a process of the same user that
stopped the real daemon (or replaced the lock file) and took the lock itself.

Failure:
* the answering process is not leashd: the gating events deny saying so, the
  others fail open with one line on stderr (``failed_closed``); the payload is
  never sent to it;
* no reply within the deadline (``LEASH_HOOK_DEADLINE`` seconds, default 20:
  under the 25 s of ``timeout`` in the installed command and Claude Code's
  30 s): the same, naming leashd. Events an approval may hold wait longer
  than it: ``LEASH_APPROVAL_WAIT`` (``core.hooktimes``) and a margin;
* the daemon unreachable (refused, gone, the connection cut mid-call, a reply
  that is not one JSON object): with ``LEASH_SOCKET`` set (the separated
  profile, where the agent cannot read the home) the same again; without it,
  ``run`` raises ``NoDaemon`` and the in-process gate judges.

Imports: ``os``, ``sys``, the C cores of ``json`` and ``socket`` (``_json``,
``_socket``), ``time``, the stdlib-only hook IO module and the well-known
names; nothing else of leash (tests check ``python -X importtime``), because
every tool call pays for them. ``json`` itself imports ``re``, which alone
costs about half a bare interpreter's start; where the C cores are missing
(not CPython), ``json`` and ``socket`` are used.
"""
from __future__ import annotations

import os
import sys
import time

from leash.core.base.wellknown import (
    AGENT_SOCKET_ENV,
    AGENT_SOCKET_NAME,
    DEFAULT_HOME,
    HOME_ENV,
    OPERATOR_SOCKET_ENV,
    RUN_DIR,
)
from leash.core.wire.hookio import (
    REQUEST_LIMIT_BYTES,
    HookInputError,
    HookInputTooLarge,
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
# The uid of a leashd running as another user (the separated profile), which
# ``leash install --socket`` pins in the hook command next to LEASH_SOCKET.
DAEMON_UID_ENV = "LEASH_DAEMON_UID"
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
# Where the state lives, how to reach the daemon and how long to wait are the
# daemon's to know, or this client's own.
NOT_FORWARDED = frozenset({HOME_ENV, AGENT_SOCKET_ENV, OPERATOR_SOCKET_ENV, DAEMON_UID_ENV, DEADLINE_ENV,
                           APPROVAL_WAIT_ENV})
RECV_CHUNK_BYTES = 65536
# The flock one leashd per home holds for its life (core.daemon.service).
DAEMON_LOCK_NAME = "leashd.lock"
PROC_LOCKS = "/proc/locks"
ROOT_UID = 0
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


class NotTheDaemon(Exception):
    """The process on the socket is not leashd; ``str()`` says why."""


class NoDaemon(Exception):
    """No daemon to ask: the in-process hook judges. ``raw``/``input_error``
    hold stdin when it was read already (it cannot be read twice)."""

    def __init__(self, raw: bytes | None = None, input_error: HookInputError | None = None):
        super().__init__("no leash daemon")
        self.raw = raw
        self.input_error = input_error


def home_of(home: str | None, env=os.environ) -> str:
    """The state home's absolute path: ``--home``, ``LEASH_HOME``, ``~/.leash``."""
    chosen = home or env.get(HOME_ENV) or DEFAULT_HOME
    return os.path.abspath(os.path.expanduser(chosen))


def agent_socket(home: str | None, env=os.environ) -> tuple[str | None, bool]:
    """(path, required): the agent socket to use (None: no daemon here) and
    whether it was asked for by ``LEASH_SOCKET`` (then unreachable denies)."""
    explicit = env.get(AGENT_SOCKET_ENV)
    if explicit:
        return explicit, True
    path = os.path.join(home_of(home, env), RUN_DIR, AGENT_SOCKET_NAME)
    return (path, False) if os.path.exists(path) else (None, False)


def _seconds(env, name: str, most: float) -> float | None:
    """The environment's ``name`` when it is a number of seconds in (0, ``most``], else None."""
    try:
        given = float(env.get(name, ""))
    except ValueError:
        return None
    return given if 0 < given <= most else None


def deadline_seconds(env=os.environ, event: str = "") -> float:
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


def peer_of(conn) -> tuple[int, int]:
    """(pid, uid) of the process listening on the other end (``SO_PEERCRED``)."""
    data = conn.getsockopt(socket_core.SOL_SOCKET, socket_core.SO_PEERCRED, 12)
    return int.from_bytes(data[0:4], sys.byteorder, signed=True), int.from_bytes(data[4:8], sys.byteorder)


def trusted_users(home: str, env=os.environ) -> set[int]:
    """Users other than this hook's own whose daemon it believes: root, the
    home directory's owner, the pinned ``LEASH_DAEMON_UID``."""
    trusted = {ROOT_UID}
    try:
        trusted.add(os.stat(home).st_uid)
    except OSError:
        pass  # a home this user cannot see (the separated profile): leashd's uid is pinned instead
    pinned = env.get(DAEMON_UID_ENV, "")
    if pinned.isdigit():
        trusted.add(int(pinned))
    trusted.discard(os.geteuid())  # the hook's own user could be the agent: it proves itself by the lock
    return trusted


def lock_holder(lock_path: str) -> int | None:
    """The pid holding the flock of ``lock_path`` (by its inode in
    ``/proc/locks``); None when no one does or it cannot be read. (The
    device is not compared: some file systems report another one to stat.)"""
    try:
        inode = os.stat(lock_path).st_ino
        fd = os.open(PROC_LOCKS, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, RECV_CHUNK_BYTES):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    wanted = f":{inode}".encode()
    for line in b"".join(chunks).splitlines():
        fields = line.split()  # 1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF
        if len(fields) >= 6 and fields[1] == b"FLOCK" and fields[5].endswith(wanted) and fields[4].isdigit():
            return int(fields[4])
    return None


def vouch(conn, path: str, home: str, env=os.environ) -> None:
    """``NotTheDaemon`` unless the process answering on ``conn`` is leashd."""
    pid, uid = peer_of(conn)
    try:
        owner = os.stat(path).st_uid
    except OSError:
        owner = uid  # gone since the connect: the peer alone decides
    trusted = trusted_users(home, env)
    acceptable = trusted | {os.geteuid()}
    for who, what in ((owner, "is owned by"), (uid, "is answered by")):
        if who not in acceptable:
            raise NotTheDaemon(f"{path} {what} uid {who}, neither leashd's user nor the home's owner")
    if owner in trusted and uid in trusted:
        return  # another user's socket and process: this hook's user could have made neither
    lock = os.path.join(home, RUN_DIR, DAEMON_LOCK_NAME)
    holder = lock_holder(lock)
    if holder is None:
        raise NotTheDaemon(f"no leash daemon holds {lock}, yet pid {pid} answers on {path}")
    if holder != pid:
        raise NotTheDaemon(f"pid {pid} answers on {path}, but the leash daemon of this home is pid {holder}")


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no reply in time")
    return left


def _connect_by(conn, path: str, deadline: float) -> None:
    while True:
        conn.settimeout(_remaining(deadline))
        try:
            connect(conn, path)
            return
        except BlockingIOError:  # its listen queue is full: the daemon is behind, not gone
            time.sleep(min(CONNECT_RETRY_SECONDS, _remaining(deadline)))


def ask(path: str, request: bytes, *, home: str, deadline: float, env=os.environ) -> dict:
    """The daemon's one-line reply to ``request`` by ``deadline`` (monotonic);
    ``NotTheDaemon``, ``DaemonTooSlow`` or ``DaemonUnreachable`` otherwise."""
    chunks: list[bytes] = []
    try:
        conn = socket_core.socket(socket_core.AF_UNIX, socket_core.SOCK_STREAM)
        try:
            _connect_by(conn, path, deadline)
            vouch(conn, path, home, env)
            conn.settimeout(_remaining(deadline))
            conn.sendall(request)
            while True:
                conn.settimeout(_remaining(deadline))
                chunk = conn.recv(RECV_CHUNK_BYTES)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
        finally:
            conn.close()
    except TimeoutError:
        raise DaemonTooSlow("no reply in time") from None
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
    seconds = deadline_seconds(env, event)
    deadline = time.monotonic() + seconds
    raw, input_error = b"", None
    try:
        raw = read_stdin(stdin)
    except HookInputError as exc:
        input_error = exc
    request = hook_request(event, raw, input_error, env)
    try:
        out, err, code = answer_of(event, ask(path, request, home=home_of(home, env), deadline=deadline, env=env))
    except NotTheDaemon as exc:
        out, err, code = failed_closed(event, f"leash: refused to ask the agent socket: {exc}. It is not leash's "
                                              "daemon (leashd); this hook cannot judge the call until `leash "
                                              "daemon` answers there")
    except DaemonTooSlow:
        out, err, code = failed_closed(event, f"leash: leash daemon (leashd) did not answer within {seconds:g} s at "
                                              f"{path}: this hook cannot judge the call (is leashd stopped or "
                                              "overloaded? `leash daemon` logs every call)")
    except DaemonUnreachable as exc:
        if not required:
            raise NoDaemon(raw, input_error) from None
        out, err, code = failed_closed(event, f"leash: leash daemon not reachable at {path} ({exc}): start "
                                              "`leash daemon`; until then this hook cannot judge the call")
    return emit(out, err, code, stdout=stdout or sys.stdout, stderr=stderr or sys.stderr)
