"""The CLI over leashd's operator socket.

Client side (``forward``): when a daemon runs for the home, a subcommand that
acts on state is sent to it as ``{"verb": "cli", "argv": [...]}`` and its
output streamed back line by line (``{"out": text}``, ``{"err": text}``, then
``{"exit": code}``): the same output and exit code as run here. The socket is
``LEASH_OPERATOR_SOCKET``, else ``[daemon] operator_socket`` of the home's
``config.toml``, else ``<home>/run/operator.sock``.

Daemon side (``cli_verb``): the subcommand runs in the daemon with the peer's
user as ``source`` (``--source`` from the client is not believed) and the
daemon's own home (``--home`` from the client is ignored). Output is routed to
the requesting connection by thread (``ThreadRoutedStream``), so requests run
concurrently.

Failure: ``LEASH_OPERATOR_SOCKET`` set and the daemon unreachable is an error
(exit 1) naming the socket: the operator asked for the daemon, and in the
separated profile the home is not theirs to read. A socket found only by its
default path that refuses connections is stale and the CLI acts on the home
directly. A connection cut mid-answer is an error (exit 1).
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading

# What runs where the operator is, never in the daemon: the console and the
# programs that hold a terminal or run long, and what acts on the caller's own
# files (Claude Code settings) or is the daemon.
LOCAL_COMMANDS = frozenset({"console", "demo", "serve", "kennel", "install", "hook", "daemon", "completion"})
SOCKET_ENV = "LEASH_OPERATOR_SOCKET"


class DaemonUnreachable(Exception):
    pass


def operator_socket(home: str | None) -> tuple[str | None, bool]:
    """(path, required): the operator socket to use (None: act on the home)."""
    from leash.core.config import ConfigError, load_config
    from leash.core.home import resolve_home
    from leash.core.wellknown import OPERATOR_SOCKET_NAME, RUN_DIR

    explicit = os.environ.get(SOCKET_ENV)
    if explicit:
        return explicit, True
    resolved = resolve_home(home)
    try:
        configured = load_config(resolved)["daemon"]["operator_socket"]
    except (ConfigError, OSError):
        configured = ""
    path = configured or os.path.join(resolved, RUN_DIR, OPERATOR_SOCKET_NAME)
    return (path, False) if os.path.exists(path) else (None, False)


def forward(argv: list[str], path: str, *, required: bool) -> int | None:
    """The exit code of ``argv`` run by the daemon, with its output printed
    here; None when a stale default socket means acting on the home directly."""
    from leash.core.thinhook import connect

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connect(conn, path)
    except OSError as exc:
        conn.close()
        if not required:
            return None
        raise DaemonUnreachable(f"leash daemon not reachable at {path} ({exc.strerror}): start `leash daemon` "
                                f"or unset {SOCKET_ENV}") from None
    request = {"verb": "cli", "argv": argv, "tty": sys.stdout.isatty()}
    with conn, conn.makefile("rb") as replies:
        conn.sendall(json.dumps(request).encode() + b"\n")
        for line in replies:
            reply = json.loads(line)
            if "out" in reply:
                sys.stdout.write(reply["out"])
                sys.stdout.flush()
            elif "err" in reply:
                sys.stderr.write(reply["err"])
            elif "exit" in reply:
                return int(reply["exit"])
            elif "error" in reply:
                raise DaemonUnreachable(f"leash daemon: {reply['error']}")
    raise DaemonUnreachable("leash daemon closed the connection before the command finished")


def answers(path: str, *, timeout: float = 2.0) -> bool:
    """True when a daemon answers ``ping`` on the operator socket at ``path``."""
    from leash.core.thinhook import connect

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            connect(conn, path)
            conn.sendall(b'{"verb": "ping"}\n')
            with conn.makefile("rb") as replies:
                return bool(json.loads(replies.readline() or b"{}").get("ok"))
    except (OSError, ValueError):
        return False


RESUBSCRIBE_SECONDS = 2.0


async def live_changes(path: str):
    """The console's live updates from the daemon's ``subscribe`` stream, as
    ``Change`` records. While the daemon is away it asks for a full re-read
    every ``RESUBSCRIBE_SECONDS`` and subscribes again when it is back."""
    import asyncio

    from leash.core.store.records import Change
    from leash.core.thinhook import connect

    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connect(conn, path)
            conn.setblocking(False)
            reader, writer = await asyncio.open_unix_connection(sock=conn)
        except OSError:
            conn.close()
            yield Change("*")
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
            continue
        try:
            writer.write(b'{"verb": "subscribe"}\n')
            await writer.drain()
            yield Change("*")  # what changed while not subscribed
            while line := await reader.readline():
                change = json.loads(line).get("change")
                if isinstance(change, dict) and isinstance(change.get("store"), str):
                    key = change.get("key")
                    yield Change(change["store"], key if isinstance(key, str) else None)
        except (OSError, ValueError):
            pass
        finally:
            writer.close()


# ---------------------------------------------------------------- daemon side
class ThreadRoutedStream:
    """A stand-in for sys.stdout/sys.stderr: a thread serving a client writes to
    that client; every other thread writes to the real stream."""

    def __init__(self, real, kind: str, routes: threading.local):
        self._real, self._kind, self._routes = real, kind, routes

    def write(self, text: str) -> int:
        route = getattr(self._routes, "send", None)
        if route is None:
            return self._real.write(text)
        route({self._kind: text})
        return len(text)

    def flush(self) -> None:
        if getattr(self._routes, "send", None) is None:
            self._real.flush()

    def isatty(self) -> bool:
        if getattr(self._routes, "send", None) is None:
            return self._real.isatty()
        return bool(getattr(self._routes, "tty", False))

    def __getattr__(self, name):
        return getattr(self._real, name)


_routes = threading.local()
_install_mutex = threading.Lock()


def _route_output() -> None:
    with _install_mutex:
        if not isinstance(sys.stdout, ThreadRoutedStream):
            sys.stdout = ThreadRoutedStream(sys.stdout, "out", _routes)
        if not isinstance(sys.stderr, ThreadRoutedStream):
            sys.stderr = ThreadRoutedStream(sys.stderr, "err", _routes)


def cli_verb(request: dict, *, source: str, send, home: str) -> None:
    """The operator socket's ``cli`` verb: run a subcommand here for the peer."""
    from leash.console.cli import EXIT_USAGE, dispatch

    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        send({"error": "cli needs argv, a list of strings"})
        return
    _route_output()
    _routes.send, _routes.tty = send, bool(request.get("tty"))
    try:
        code = dispatch(argv, daemon_home=home, peer_source=source)
    except SystemExit as exc:  # --help and --version exit from argparse
        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    finally:
        _routes.send = None
    send({"exit": code})
