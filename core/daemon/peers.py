"""Who is on the other end of a socket, and what they may ask.

The kernel says who connected (``SO_PEERCRED``: pid, uid, gid); the client's
own claims (a ``--source``, a user name in the request) are never believed.
A peer may use the operator socket when it is the daemon's own user, root, or
named in ``[daemon] operators`` by user name or by a group it belongs to.
Anyone who can open the agent socket may ask ``hook`` (the socket file's mode
and directory decide who can).

Failure: a uid with no passwd entry is named by its number; a group that does
not exist matches no one. Refusals are written to the ack log at most once per
``REFUSAL_LOG_INTERVAL_SECONDS`` per peer and reason, so an agent that knocks
in a loop cannot grow the log without bound (each refusal is still answered
and printed by the daemon).
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import time

REFUSAL_LOG_INTERVAL_SECONDS = 60.0
REFUSALS_KEPT = 10_000  # refusal keys remembered for the interval
_UCRED = struct.Struct("3i")


class Peer:
    """``known_ns``: when leashd had its credentials (a traced hook's stamp)."""

    __slots__ = ("pid", "uid", "gid", "user", "known_ns")

    def __init__(self, pid: int, uid: int, gid: int):
        self.pid, self.uid, self.gid = pid, uid, gid
        self.user = user_name(uid)
        self.known_ns = time.perf_counter_ns()

    def source(self, host: str) -> str:
        """What the ack log says did it: ``user@host`` of the peer's uid."""
        return f"{self.user}@{host}"

    def __repr__(self) -> str:
        return f"Peer(pid={self.pid}, uid={self.uid}, user={self.user!r})"


def peer_of(conn: socket.socket) -> Peer:
    pid, uid, gid = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return Peer(pid, uid, gid)


def user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def groups_of(uid: int, gid: int) -> set[str]:
    """Names of the groups ``uid`` belongs to (primary and supplementary)."""
    import grp
    import pwd

    try:
        name = pwd.getpwuid(uid).pw_name
        ids = set(os.getgrouplist(name, gid))
    except (KeyError, OSError):
        ids = {gid}
    names = set()
    for group_id in ids:
        try:
            names.add(grp.getgrgid(group_id).gr_name)
        except KeyError:
            continue
    return names


class OperatorPolicy:
    """Who may use the operator socket: the daemon's user, root, and
    ``[daemon] operators`` (user or group names)."""

    def __init__(self, operators: list[str], *, daemon_uid: int | None = None):
        self.names = frozenset(operators)
        self.daemon_uid = os.getuid() if daemon_uid is None else daemon_uid

    def allows(self, peer: Peer) -> bool:
        if peer.uid in (0, self.daemon_uid):
            return True
        if peer.user in self.names:
            return True
        return bool(self.names & groups_of(peer.uid, peer.gid))


class RefusalLog:
    """Writes a refusal to the ack log unless the same one was written lately."""

    def __init__(self, append, *, interval: float = REFUSAL_LOG_INTERVAL_SECONDS):
        self.append = append  # append(source=, reason=, **extra)
        self.interval = interval
        self.last: dict[tuple, float] = {}
        self.mutex = threading.Lock()

    def refused(self, peer: Peer, source: str, reason: str, *, where: str, verb: str, now: float, **extra) -> bool:
        """True when this refusal was written (False: one like it was, lately).
        ``extra`` goes on the line; its ``agent_pid`` tells refusals apart."""
        key = (peer.uid, where, verb, extra.get("agent_pid"))
        with self.mutex:
            if now - self.last.get(key, float("-inf")) < self.interval:
                return False
            if len(self.last) > REFUSALS_KEPT:  # bounded: a knocking loop cannot grow this either
                self.last.clear()
            self.last[key] = now
        self.append(source=source, reason=reason, socket=where, verb=verb, peer_uid=peer.uid, peer_pid=peer.pid,
                    now=now, **extra)
        return True
