"""The kernel's TCP socket table (``/proc/net/tcp``): who owns a loopback
connection's socket, and who listens on a port. leashd's HTTP hook listener
names a request's user by it (``core.daemon.tcppeer``); ``leash install
--check`` names the process on leashd's HTTP port by it.

Failure: a table that cannot be read, or holds no such row, is None; a
process that cannot be found for an inode (another user's fds, or gone) is
``UNKNOWN_PID``. IPv4 only: leash binds 127.0.0.1.
"""
from __future__ import annotations

import os
import socket
import struct

PROC_TCP = "/proc/net/tcp"
UNKNOWN_PID = -1
# A row: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
LOCAL, REMOTE, STATE, UID, INODE = 1, 2, 3, 7, 9
LISTEN_STATE = "0A"


def hex_address(address: tuple[str, int]) -> str:
    """``127.0.0.1:8080`` as the table writes it: ``0100007F:1F90`` (the
    address in the host's byte order, the port big-endian)."""
    packed = socket.inet_aton(address[0])
    return f"{struct.unpack('=I', packed)[0]:08X}:{address[1]:04X}"


def _rows(table: str) -> list[list[str]]:
    """The table's rows, each split into its fields ([] when it cannot be read)."""
    try:
        with open(table, "rb") as handle:
            lines = handle.read().decode("ascii", "replace").splitlines()
    except OSError:
        return []
    return [fields for fields in (line.split() for line in lines[1:]) if len(fields) > INODE]


def socket_row(client: tuple[str, int], server: tuple[str, int], table: str = PROC_TCP) -> tuple[int, int] | None:
    """(uid, inode) of the client's end of the connection, or None."""
    local, remote = hex_address(client), hex_address(server)
    return next(((int(f[UID]), int(f[INODE])) for f in _rows(table) if f[LOCAL] == local and f[REMOTE] == remote),
                None)


def holder_of(inode: int, uid: int) -> int:
    """The pid of a process of ``uid`` holding socket ``inode``, or ``UNKNOWN_PID``."""
    wanted = f"socket:[{inode}]"
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return UNKNOWN_PID
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return int(pid)
            except OSError:
                continue
    return UNKNOWN_PID


def listener_of(port: int, table: str = PROC_TCP) -> tuple[int, int] | None:
    """(uid, inode) of the socket listening on 127.0.0.1:``port`` (or on every
    address), or None when nothing listens there."""
    wanted = {hex_address(("127.0.0.1", port)), hex_address(("0.0.0.0", port))}
    return next(((int(f[UID]), int(f[INODE])) for f in _rows(table) if f[LOCAL] in wanted and f[STATE] == LISTEN_STATE),
                None)
