"""Whether the process answering on leashd's agent socket is leashd: the
thin hook asks this before it sends anything (``vouch``).

A socket owned, and answered, by another user counts when that user is root,
the owner of the home directory or the uid pinned in ``LEASH_DAEMON_UID``
(``leash install --socket`` writes it into the command): the hook's user
cannot make a socket another user owns. A socket of the hook's own user (the
single-user profile) could be anyone's of that user, so there the peer
(``SO_PEERCRED``) must be the process that holds the flock of
``<home>/run/leashd.lock``, which one leashd per home holds for its life.
What this cannot tell apart: a process of the same user that stopped the real
daemon (or replaced the lock file) and took the lock itself.

Where the lock's holder is read: first in the peer's own descriptors
(``/proc/PID/fd`` to find the lock file open there, ``/proc/PID/fdinfo/FD``
for the locks on that open file: ``held_by``); only when that does not show
the peer holding it, in ``/proc/locks`` (``lock_holder``), which also names
the holder for the refusal. Reading ``/proc/locks`` costs the kernel a wait of
10-20 ms (it takes the file-lock table's write side, an RCU grace period),
on every tool call; the peer's own fdinfo takes no such lock.

Failure: ``NotTheDaemon`` (its text says why) for any peer it cannot vouch
for; a peer whose descriptors cannot be read (another user's, gone) is judged
by ``/proc/locks`` alone, and a ``/proc/locks`` that cannot be read is no
holder, so fails closed.

Imports: the standard library's C core of ``socket``, ``posix`` and ``sys``
(``os``'s own services through ``core.base.bareos``): every tool call pays for
them.
"""

import posix
import sys

from leash.core.base import bareos
from leash.core.base.wellknown import RUN_DIR

try:
    import _socket as socket_core
except ImportError:  # another Python: the module itself
    import socket as socket_core  # type: ignore[no-redef]

# The flock one leashd per home holds for its life (core.daemon.service).
DAEMON_LOCK_NAME = "leashd.lock"
PROC_LOCKS = "/proc/locks"
PROC = "/proc"
ROOT_UID = 0
# The uid of a leashd running as another user (the separated profile), which
# ``leash install --socket`` pins in the hook command next to LEASH_SOCKET.
DAEMON_UID_ENV = "LEASH_DAEMON_UID"
READ_CHUNK_BYTES = 65536


class NotTheDaemon(Exception):
    """The process on the socket is not leashd; ``str()`` says why."""


def peer_of(conn) -> tuple[int, int]:
    """(pid, uid) of the process listening on the other end (``SO_PEERCRED``)."""
    data = conn.getsockopt(socket_core.SOL_SOCKET, socket_core.SO_PEERCRED, 12)
    return int.from_bytes(data[0:4], sys.byteorder, signed=True), int.from_bytes(data[4:8], sys.byteorder)


def trusted_users(home: str, env=bareos.environ) -> set[int]:
    """Users other than this hook's own whose daemon it believes: root, the
    home directory's owner, the pinned ``LEASH_DAEMON_UID``."""
    trusted = {ROOT_UID}
    try:
        trusted.add(posix.stat(home).st_uid)
    except OSError:
        pass  # a home this user cannot see (the separated profile): leashd's uid is pinned instead
    pinned = env.get(DAEMON_UID_ENV, "")
    if pinned.isdigit():
        trusted.add(int(pinned))
    trusted.discard(posix.geteuid())  # the hook's own user could be the agent: it proves itself by the lock
    return trusted


def lock_holder(lock_path: str) -> int | None:
    """The pid holding the flock of ``lock_path`` (its device and inode in
    ``/proc/locks``); None when no one does or it cannot be read. Inode
    numbers repeat across file systems (two fresh tmpfs number their files
    alike), so a lock of the same inode on another device is not this file's.
    Some file systems report another device to stat than /proc/locks shows
    (overlayfs): when no lock is on the stat's device, the one lock of that
    inode is taken, and two or more are no holder."""
    try:
        found = posix.stat(lock_path)
        fd = posix.open(PROC_LOCKS, posix.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := posix.read(fd, READ_CHUNK_BYTES):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        posix.close(fd)
    wanted = f":{found.st_ino}".encode()
    device = f"{posix.major(found.st_dev):02x}:{posix.minor(found.st_dev):02x}".encode()
    holders: list[tuple[bytes, int]] = []
    for line in b"".join(chunks).splitlines():
        fields = line.split()  # 1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF
        if len(fields) >= 6 and fields[1] == b"FLOCK" and fields[5].endswith(wanted) and fields[4].isdigit():
            holders.append((fields[5][: -len(wanted)], int(fields[4])))
    on_device = [pid for where, pid in holders if where == device]
    if on_device:
        return on_device[0]
    return holders[0][1] if len(holders) == 1 else None


def held_by(lock_path: str, pid: int) -> bool:
    """Whether process ``pid`` holds the flock of ``lock_path`` on a
    descriptor of its own: an open file of its that is ``lock_path`` (the
    same device and inode) carries a FLOCK WRITE lock taken by ``pid``
    (``/proc/PID/fdinfo/FD``'s ``lock:`` lines, those of that open file only).
    A descriptor inherited from the lock's taker names the taker, not ``pid``.
    False whenever anything cannot be read: the caller asks ``/proc/locks``."""
    try:
        found = posix.stat(lock_path)
        names = posix.listdir(f"{PROC}/{pid}/fd")
    except OSError:
        return False
    wanted = f":{found.st_ino}".encode()
    for name in sorted(names, key=_fd_number):  # leashd takes its lock first: a low descriptor
        try:
            opened = posix.stat(f"{PROC}/{pid}/fd/{name}")
        except OSError:
            continue
        if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
            continue
        for line in _read_all(f"{PROC}/{pid}/fdinfo/{name}").splitlines():
            fields = line.split()  # lock:  1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF
            if (len(fields) >= 7 and fields[0] == b"lock:" and fields[2] == b"FLOCK" and fields[4] == b"WRITE"
                    and fields[5] == str(pid).encode() and fields[6].endswith(wanted)):
                return True
    return False


def _fd_number(name: str) -> int:
    return int(name) if name.isdigit() else -1


def _read_all(path: str) -> bytes:
    """A small /proc file's bytes (b"" when it cannot be read)."""
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return b""
    try:
        chunks = []
        while chunk := posix.read(fd, READ_CHUNK_BYTES):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        posix.close(fd)


def vouch(conn, path: str, home: str, env=bareos.environ) -> None:
    """``NotTheDaemon`` unless the process answering on ``conn`` is leashd."""
    pid, uid = peer_of(conn)
    try:
        owner = posix.stat(path).st_uid
    except OSError:
        owner = uid  # gone since the connect: the peer alone decides
    trusted = trusted_users(home, env)
    acceptable = trusted | {posix.geteuid()}
    for who, what in ((owner, "is owned by"), (uid, "is answered by")):
        if who not in acceptable:
            raise NotTheDaemon(f"{path} {what} uid {who}, neither leashd's user nor the home's owner")
    if owner in trusted and uid in trusted:
        return  # another user's socket and process: this hook's user could have made neither
    lock = bareos.join(home, RUN_DIR, DAEMON_LOCK_NAME)
    if pid > 0 and held_by(lock, pid):
        return
    holder = lock_holder(lock)
    if holder is None:
        raise NotTheDaemon(f"no leash daemon holds {lock}, yet pid {pid} answers on {path}")
    if holder != pid:
        raise NotTheDaemon(f"pid {pid} answers on {path}, but the leash daemon of this home is pid {holder}")
