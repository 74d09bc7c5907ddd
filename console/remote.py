"""The CLI over leashd's operator socket.

Client side (``forward``): when a daemon runs for the home, a subcommand that
acts on state is sent to it as ``{"verb": "cli", "argv": [...]}`` and its
output streamed back line by line (``{"out": text}``, ``{"err": text}``, then
``{"exit": code}``): the same output and exit code as run here. The socket is
``LEASH_OPERATOR_SOCKET``, else ``[daemon] operator_socket`` of the home's
``config.toml``, else ``<home>/run/operator.sock``.

The daemon side (running a forwarded subcommand) is ``console.served``.

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

# The console's live updates over the daemon's subscribe stream (one definition, in the core).
from leash.core.store.remote import subscribed_changes as live_changes  # noqa: F401
from leash.core.wellknown import OPERATOR_SOCKET_ENV as SOCKET_ENV

# What runs where the operator is, never in the daemon: the console and the
# programs that hold a terminal or run long, and what acts on the caller's own
# files (Claude Code settings) or is the daemon.
LOCAL_COMMANDS = frozenset({"console", "demo", "serve", "kennel", "install", "hook", "daemon", "completion"})


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


