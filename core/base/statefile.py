"""The one module that writes leash state.

Hooks, the console, the kennel and the CLI all write the same files at once, so
every write goes through here:

* ``locked(path)`` takes ``flock`` on a sidecar ``<file>.lock``. It is re-entrant
  within a process (a thread that holds it may take it again), so a multi-file
  step such as a full stop can hold several locks. Locks are always taken in
  the order the callers agree on (stops, hands-off, sessions, ack log).
* ``write_json`` writes a temp file in the same directory, fsyncs it,
  ``os.replace``s it over the old file and fsyncs the directory: a reader sees
  the old file or the new one, never half of either, even across SIGKILL or a
  power cut.
* ``append_line`` appends one line with a single ``write`` under the lock, after
  cutting a torn tail (bytes after the last newline, left by a writer that died
  or a full disk) back to the last newline; the torn bytes are kept in
  ``<file>.torn``, nothing is thrown away.
* ``read_json`` never crashes: a missing file gives the default, a file that does
  not parse raises ``StateCorrupt`` so each caller applies its row of the
  fail-policy table (block, quarantine, or fail open).
* ``quarantine`` renames a corrupt file to ``<name>.corrupt-<timestamp>``; it is
  never deleted.
* ``CachedJSON`` re-parses a file only when its inode, size or times change, so
  the gate's hot path is one ``stat`` per file.

Symbolic links are never followed: every open of a state file, its lock, its
temp file and its ``.torn`` uses ``O_NOFOLLOW``. A writer that meets a link
raises ``SymlinkedState`` (an ``OSError``; nothing is written through it), and
a reader of JSON state takes a link, like a directory where a file belongs, as
corrupt state (``StateCorrupt``), which its caller quarantines and rebuilds.
"""
from __future__ import annotations

import _thread
import errno
import fcntl
import json
import os
import stat
from collections.abc import Callable

from leash.core.base.clock import compact_stamp, now_seconds

FILE_MODE = 0o600
LOCK_SUFFIX = ".lock"
TORN_SUFFIX = ".torn"
CORRUPT_MARK = ".corrupt-"
TEMP_PREFIX = ".tmp-"


NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC

# Parsed JSON, as ``json.loads`` gives it: its shape is checked by the reader
# that knows the format (``StateCorrupt`` when it is wrong), not by the types.
# ``typing`` is for the type checker only: the hook path does not import it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    JSONValue = Any
    JSONObject = dict[str, Any]
else:
    JSONValue = object  # annotations are never evaluated (``from __future__ import annotations``)
    JSONObject = dict


class SymlinkedState(OSError):
    """A state file (or its lock or ``.torn``) is a symbolic link; leash does not
    read or write through one."""

    def __init__(self, path: str):
        super().__init__(errno.ELOOP, "is a symbolic link; leash does not follow it (leash doctor)",
                         os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


def open_state(path: str | os.PathLike, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a symbolic link in the last component."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkedState(os.fspath(path)) from None
        raise


def read_state_bytes(path: str | os.PathLike) -> bytes | None:
    """A whole state file (None when missing), never through a symbolic link;
    ``IsADirectoryError`` when a directory stands where the file belongs."""
    try:
        fd = open_state(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as handle:
        return handle.read()


class StateCorrupt(Exception):
    """A state file exists but cannot be parsed or has the wrong shape."""

    def __init__(self, path: str, detail: str):
        super().__init__(f"{path}: {detail}")
        self.path = os.fspath(path)
        self.detail = detail


# --------------------------------------------------------------------- locks
class _HeldLock:
    """One lock file's flock, shared by the threads of this process."""

    __slots__ = ("mutex", "fd", "depth")

    def __init__(self) -> None:
        # _thread rather than threading: the hook path pays for every import.
        self.mutex = _thread.RLock()
        self.fd: int | None = None
        self.depth = 0


_locks: dict[str, _HeldLock] = {}
_locks_guard = _thread.allocate_lock()


class locked:
    """``with locked(path):`` an exclusive lock on ``<path>.lock``: across
    processes by flock, across threads by an RLock; re-entrant for the thread
    that holds it."""

    __slots__ = ("held", "key")

    def __init__(self, path: str | os.PathLike):
        self.key = os.fspath(path) + LOCK_SUFFIX
        with _locks_guard:
            self.held = _locks.setdefault(self.key, _HeldLock())

    def __enter__(self) -> None:
        held = self.held
        held.mutex.acquire()
        try:
            if held.depth == 0:
                fd = open_state(self.key, os.O_RDWR | os.O_CREAT, FILE_MODE)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                held.fd = fd
            held.depth += 1
        except BaseException:
            held.mutex.release()
            raise

    def __exit__(self, *exc_info) -> None:
        held = self.held
        held.depth -= 1
        if held.depth == 0 and held.fd is not None:
            os.close(held.fd)  # closing the descriptor releases the flock
            held.fd = None
        held.mutex.release()


def try_hold(path: str | os.PathLike) -> int | None:
    """Take an exclusive flock on ``path`` without waiting and keep it: the
    descriptor is returned (None when another process holds it). The kernel
    drops the lock when the holder dies, so a claim never outlives its owner.
    Release with ``release_hold``."""
    fd = open_state(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def release_hold(fd: int) -> None:
    os.close(fd)


# --------------------------------------------------------------------- write
def fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on directories
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike, payload: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``payload``: temp file, fsync, rename, dir fsync.
    ``durable=False`` skips the fsyncs, for files that are recomputed when a
    crash leaves them stale or empty (``acklog.head``)."""
    target = os.fspath(path)
    fd, tmp_name = _create_temp(target)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp_name)
        raise
    os.close(fd)
    try:
        os.replace(tmp_name, target)
    except BaseException:
        _unlink_quietly(tmp_name)
        raise
    if durable:
        fsync_dir(os.path.dirname(target))


def _create_temp(target: str) -> tuple[int, str]:
    """A new, exclusive temp file beside ``target`` (tempfile is too slow to
    import on the hook path)."""
    for _ in range(100):
        directory, base = os.path.split(target)
        name = os.path.join(directory, f"{TEMP_PREFIX}{base}.{os.getpid()}.{os.urandom(6).hex()}")
        try:
            return open_state(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), name
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temp file beside {target}")


def dump_json(data: object) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=False) + "\n").encode("utf-8")


def write_json(path: str | os.PathLike, data: object, *, durable: bool = True) -> None:
    write_bytes_atomic(path, dump_json(data), durable=durable)


def _unlink_quietly(name: str | os.PathLike) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


# ---------------------------------------------------------------------- read
def read_json(path: str | os.PathLike, default: object = None, *, expect: type | None = dict) -> JSONValue:
    """The parsed file, ``default`` when it does not exist.

    Raises ``StateCorrupt`` when it exists but is not valid JSON of type
    ``expect``; raises ``OSError`` only for errors other than a missing file
    (a permission problem is not corruption and must not be quarantined)."""
    target = os.fspath(path)
    try:
        raw = read_state_bytes(target)
    except SymlinkedState:
        raise StateCorrupt(target, "a symbolic link (leash does not follow it)") from None
    except IsADirectoryError:
        raise StateCorrupt(target, "a directory where a file belongs") from None
    if raw is None:
        return default
    return parse_json_bytes(target, raw, expect=expect)


def parse_json_bytes(path: str, raw: bytes, *, expect: type | None = dict) -> JSONValue:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StateCorrupt(path, f"not valid JSON ({exc})") from None
    if expect is not None and not isinstance(data, expect):
        raise StateCorrupt(path, f"expected a JSON {expect.__name__}, found {type(data).__name__}")
    return data


# --------------------------------------------------------------- quarantine
def quarantine(path: str | os.PathLike, *, now: float | None = None) -> str | None:
    """Move a corrupt file aside as ``<name>.corrupt-<timestamp>``; never deletes.

    Returns the new path, or None when the file was already gone (another
    process quarantined it first). Call it holding the file's lock."""
    target = os.fspath(path)
    stamp = compact_stamp(now_seconds(now))
    destination = f"{target}{CORRUPT_MARK}{stamp}"
    suffix = 0
    while os.path.lexists(destination):  # rename would replace a link there, not follow it
        suffix += 1
        destination = f"{target}{CORRUPT_MARK}{stamp}.{suffix}"
    try:
        os.rename(target, destination)
    except FileNotFoundError:
        return None
    fsync_dir(os.path.dirname(target))
    return destination


# -------------------------------------------------------------------- JSONL
def repair_torn_tail(path: str | os.PathLike) -> int:
    """Cut bytes after the last newline into ``<file>.torn``; returns how many.

    Call it holding the file's lock."""
    target = os.fspath(path)
    try:
        fd = open_state(target, os.O_RDWR)
    except FileNotFoundError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        if os.pread(fd, 1, size - 1) == b"\n":
            return 0
        cut = _last_newline_end(fd, size)
        torn = os.pread(fd, size - cut, cut)
        torn_fd = open_state(target + TORN_SUFFIX, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            # Each torn fragment ends with a newline so fragments stay apart.
            os.write(torn_fd, torn + b"\n")
            os.fsync(torn_fd)
        finally:
            os.close(torn_fd)
        os.ftruncate(fd, cut)
        os.fsync(fd)
        return len(torn)
    finally:
        os.close(fd)


def _last_newline_end(fd: int, size: int, block: int = 65536) -> int:
    """Offset just past the last newline before ``size`` (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        end = start
    return 0


def last_lines(path: str | os.PathLike, count: int = 1, block: int = 65536) -> list[bytes]:
    """Up to ``count`` complete lines at the end of the file, oldest first.

    A torn tail (no final newline) is not a line and is not returned."""
    target = os.fspath(path)
    try:
        fd = open_state(target, os.O_RDONLY)
    except FileNotFoundError:
        return []
    try:
        size = os.fstat(fd).st_size
        end = _last_newline_end(fd, size)
        buffer = b""
        position = end
        while position > 0 and buffer.count(b"\n") <= count:
            start = max(0, position - block)
            buffer = os.pread(fd, position - start, start) + buffer
            position = start
        lines = buffer.split(b"\n")[:-1]  # the piece after the final newline is empty
        if position > 0:
            lines = lines[1:]  # the first piece may be cut in half
        return lines[-count:]
    finally:
        os.close(fd)


def append_line(path: str | os.PathLike, make_line: Callable[[], bytes]) -> bytes:
    """Append one line under the lock, repairing a torn tail first.

    ``make_line`` runs under the lock (so it may read the file's last line, as
    the ack log's hash chain does) and returns the bytes without the newline."""
    target = os.fspath(path)
    with locked(target):
        repair_torn_tail(target)
        line = make_line()
        if b"\n" in line:
            raise ValueError("a JSONL record must not contain a newline")
        fd = open_state(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            os.write(fd, line + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        return line


# -------------------------------------------------------------------- cache
class CachedJSON:
    """A parsed JSON file, re-read only when the file's identity changes.

    The key is (inode, size, mtime_ns, ctime_ns): every write goes through an
    atomic replace, which always produces a new inode while the old one is still
    held, so a changed file is never mistaken for the cached one in practice.
    ``transform`` turns the raw data into whatever the caller wants to keep
    (pre-parsed times, compiled globs) so that work is also done once per change.
    """

    def __init__(self, path: str | os.PathLike, transform: Callable[[JSONValue], Any], *,
                 expect: type | None = dict):
        self.path = os.fspath(path)
        self.transform = transform
        self.expect = expect
        self._key: tuple | None = None
        self._value: Any = None

    def get(self, missing: object = None) -> Any:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            self._key = None
            return missing
        if not stat.S_ISREG(st.st_mode):
            self._key = None
            kind = "a symbolic link (leash does not follow it)" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise StateCorrupt(self.path, kind)
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key != self._key:
            raw = read_state_bytes(self.path)
            if raw is None:  # replaced between the lstat and the open: missing for now
                self._key = None
                return missing
            data = parse_json_bytes(self.path, raw, expect=self.expect)
            self._value = self.transform(data)
            self._key = key
        return self._value

    def forget(self) -> None:
        self._key = None
