"""Reaching a running leashd from a client process (the CLI, the console,
``RemoteBackend``): where its operator socket is, and one request with its
one reply.

The socket is ``LEASH_OPERATOR_SOCKET`` when set (then the daemon is required),
else ``[daemon] operator_socket`` of the client's own ``config.toml``, else
``<home>/run/operator.sock`` when that exists.

Failure: a daemon that cannot be reached, or that closes without one JSON
object as its reply, is ``DaemonUnreachable`` with one line; ``answers`` says
False instead of raising.
"""
from __future__ import annotations

import json
import os
import socket

from leash.core.base.wellknown import OPERATOR_SOCKET_ENV, OPERATOR_SOCKET_NAME, RUN_DIR


class DaemonUnreachable(Exception):
    pass


def operator_socket(home: str | None) -> tuple[str | None, bool]:
    """(path, required): the operator socket to use (None: act on the home)."""
    from leash.core.base.config import ConfigError, load_config
    from leash.core.base.home import resolve_home

    explicit = os.environ.get(OPERATOR_SOCKET_ENV)
    if explicit:
        return explicit, True
    resolved = resolve_home(home)
    try:
        configured = load_config(resolved)["daemon"]["operator_socket"]
    except (ConfigError, OSError):
        configured = ""
    path = configured or os.path.join(resolved, RUN_DIR, OPERATOR_SOCKET_NAME)
    return (path, False) if os.path.exists(path) else (None, False)


def request(path: str, message: dict, *, timeout: float = 30.0) -> dict:
    """The daemon's one-line reply to ``message`` on the socket at ``path``."""
    from leash.core.wire.thinhook import connect

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            connect(conn, path)
            conn.sendall(json.dumps(message).encode() + b"\n")
            with conn.makefile("rb") as replies:
                line = replies.readline()
    except OSError as exc:
        raise DaemonUnreachable(f"leash daemon not reachable at {path} ({exc.strerror or exc})") from None
    try:
        reply = json.loads(line)
    except ValueError:
        raise DaemonUnreachable("leash daemon closed the connection without a reply") from None
    if not isinstance(reply, dict):
        raise DaemonUnreachable("leash daemon replied with something that is not a JSON object")
    return reply


def answers(path: str, *, timeout: float = 2.0) -> bool:
    """True when a daemon answers ``ping`` on the operator socket at ``path``."""
    try:
        return bool(request(path, {"verb": "ping"}, timeout=timeout).get("ok"))
    except DaemonUnreachable:
        return False
