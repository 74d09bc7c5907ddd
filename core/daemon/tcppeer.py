"""Who is on the other end of a loopback TCP connection: the kernel's socket
table (``/proc/net/tcp``) names the uid that owns the client's socket and its
inode, and ``/proc/PID/fd`` names the process holding that inode.

leashd's HTTP hook listener (``core.daemon.httphooks``) has no
``SO_PEERCRED``: this is how a request is attributed to a Unix user, as on
the agent socket. Only the client's own socket row is believed (local address
= the client's, remote = the listener's), never a header or the body.

Failure: no row (the client closed already, or it is in another network
namespace) is None, which the listener refuses. A process that cannot be
found for the inode (it is another user's and leashd cannot read its fds, or
it ended) leaves the pid -1: the uid still decides whose session it may speak
for, and the agent's process is not learned from that request.
"""
from __future__ import annotations

from leash.core.base.sockettable import holder_of, socket_row
from leash.core.daemon.peers import Peer


class TcpPeers:
    """Peers of the listener's connections, the pid looked up once per
    connection (a kept-alive connection's later requests cost a table read)."""

    def __init__(self) -> None:
        self.pids: dict[int, int] = {}  # inode -> pid, for the connections open now

    def peer(self, client: tuple[str, int], server: tuple[str, int]) -> tuple[Peer, int] | None:
        """(the peer, its socket's inode) of the connection from ``client``, or None."""
        row = socket_row(client, server)
        if row is None:
            return None
        uid, inode = row
        pid = self.pids.get(inode)
        if pid is None:
            pid = self.pids[inode] = holder_of(inode, uid)
        import pwd

        try:
            gid = pwd.getpwuid(uid).pw_gid
        except KeyError:
            gid = -1
        return Peer(pid, uid, gid), inode

    def forget(self, inode: int) -> None:
        """A connection closed: its inode may be reused."""
        self.pids.pop(inode, None)
