"""The CLI over leashd's operator socket.

Client side (``forward``): when a daemon runs for the home, a subcommand that
acts on state is sent to it as ``{"verb": "cli", "argv": [...]}`` and its
output streamed back line by line (``{"out": text}``, ``{"err": text}``, then
``{"exit": code}``): the same output and exit code as run here. Where the
socket is, is ``core.daemon.client.operator_socket``'s to say.

The daemon side (running a forwarded subcommand) is ``console.cli.served``.

Failure: ``LEASH_OPERATOR_SOCKET`` set and the daemon unreachable is an error
(exit 1) naming the socket: the operator asked for the daemon, and in the
separated profile the home is not theirs to read. A socket found only by its
default path that refuses connections is stale and the CLI acts on the home
directly. A connection cut mid-answer is an error (exit 1).
"""
from __future__ import annotations

import json
import socket
import sys

from leash.core.base.wellknown import OPERATOR_SOCKET_ENV as SOCKET_ENV
from leash.core.wire.operator import DaemonUnreachable

# What runs where the operator is, never in the daemon: the console and the
# programs that hold a terminal or run long, and what acts on the caller's own
# files (Claude Code settings) or is the daemon.
LOCAL_COMMANDS = frozenset({"console", "demo", "serve", "kennel", "install", "hook", "daemon", "completion",
                            "store", "setup", "statusline"})


def forward(argv: list[str], path: str, *, required: bool) -> int | None:
    """The exit code of ``argv`` run by the daemon, with its output printed
    here; None when a stale default socket means acting on the home directly."""
    from leash.core.wire.thinhook import connect

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
