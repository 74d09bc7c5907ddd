"""The ack log's MAC key: lines only leashd's user could have written.

In the separated profile leashd runs as a user of its own and keeps a key
file only that user can read: ``$LEASH_HOME/run/log.key``, or ``[acklog]
mac_key_file``. Every line appended by a process that can read it carries
``mac`` = HMAC-SHA256(key, the line's ``hash``), so a line added by anyone
without the key (a stolen database role, an edited file) has no mac that
verifies, and ``leash log verify`` names it.

The file ``leash daemon`` creates when it is missing is one JSON object,
``{"key": "<64 hex digits>", "since": N}``: N is the seq of the first line
written after it was made, and every line from N on must carry a good mac (so
dropping the macs of lines rewritten without the key does not hide them). An
operator's own file may hold anything else: its bytes are the key, and the
first line whose mac verifies starts the rule. In a store shared by many hosts
every leashd must hold the same key (copy the file, or point ``mac_key_file``
at one), or each host's lines fail the others' checks.

Failure: a key file that is missing, or that this user cannot read, is no
key: appends carry no mac and ``verify`` reports "macs not checked: no key
readable". A key file that group or others may read, or that is a symbolic
link, is not used (``leash doctor`` says why): a key anyone can read proves
nothing. Nothing here raises on a bad file.
"""
from __future__ import annotations

import json
import os

from leash.core.base.wellknown import RUN_DIR  # leashd's folder in the home (sockets, its lock, this key)

KEY_NAME = "log.key"
KEY_BYTES = 32
KEY_MODE = 0o600
SHARED_MODE_BITS = 0o077  # group or others may read it: not a secret any more
MAX_KEY_FILE_BYTES = 4096
NO_KEY_READABLE = "macs not checked: no key readable"


class MacKey:
    """A key that signs and checks line hashes; ``since``: the seq from which
    every line must carry a mac (None: from the first line that has a good one)."""

    __slots__ = ("secret", "since", "path")

    def __init__(self, secret: bytes, since: int | None, path: str):
        self.secret, self.since, self.path = secret, since, path

    def sign(self, digest: str) -> str:
        import hashlib
        import hmac

        return hmac.new(self.secret, digest.encode("ascii"), hashlib.sha256).hexdigest()

    def verifies(self, digest: str, mac: object) -> bool:
        import hmac

        return isinstance(mac, str) and hmac.compare_digest(self.sign(digest), mac)


def default_path(home: str | os.PathLike) -> str:
    return os.path.join(os.fspath(home), RUN_DIR, KEY_NAME)


def configured_path(home: str | os.PathLike) -> str:
    """``[acklog] mac_key_file`` of the home's config, else the default path
    (a config that cannot be read names no file of its own)."""
    if os.path.exists(os.path.join(os.fspath(home), "config.toml")):
        from leash.core.base.config import ConfigError, load_config

        try:
            named = load_config(home).get("acklog", {}).get("mac_key_file") or ""
        except ConfigError:
            named = ""
        if named:
            return os.path.expanduser(named)
    return default_path(home)


# path -> ((device, inode, size, mtime), the key or None, why not): a key is read once per change
_CACHE: dict[str, tuple[tuple, MacKey | None, str]] = {}


def load(path: str) -> tuple[MacKey | None, str]:
    """(the key at ``path``, "") or (None, why there is none: "" when there is no file at all)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None, ""
    except PermissionError:
        return None, NO_KEY_READABLE
    except OSError as exc:  # a symbolic link (ELOOP) or worse: never read through it
        return None, f"macs not checked: key file {path} cannot be used ({exc.strerror})"
    try:
        status = os.fstat(fd)
        signature = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
        cached = _CACHE.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1], cached[2]
        key, problem = _parse(os.read(fd, MAX_KEY_FILE_BYTES), status.st_mode, path)
        _CACHE[path] = (signature, key, problem)
        return key, problem
    finally:
        os.close(fd)


def _parse(raw: bytes, mode: int, path: str) -> tuple[MacKey | None, str]:
    if mode & SHARED_MODE_BITS:
        return None, f"macs not checked: key file {path} may be read by others (chmod 600 it)"
    if not raw.strip():
        return None, f"macs not checked: key file {path} is empty"
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("key"), str):
        since = data.get("since")
        return MacKey(data["key"].encode("ascii", "replace"),
                      since if isinstance(since, int) and not isinstance(since, bool) and since > 0 else None,
                      path), ""
    return MacKey(raw.strip(), None, path), ""


def key_of(home: str | os.PathLike) -> tuple[MacKey | None, str]:
    """The home's key and why there is none (see ``load``)."""
    return load(configured_path(home))


def ensure_key(home: str | os.PathLike, *, next_seq: int) -> tuple[str, bool]:
    """Create the home's key file when it is missing (``leash daemon`` at its
    start): 0600, owned by this user, never through a link. Returns (its
    path, whether it was created now); an existing file is left as it is."""
    import secrets

    from leash.core.base.home import private_dir

    path = configured_path(home)
    private_dir(os.path.dirname(os.path.abspath(path)))
    body = json.dumps({"key": secrets.token_hex(KEY_BYTES), "since": max(1, int(next_seq))}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, KEY_MODE)
    except FileExistsError:
        return path, False
    try:
        os.fchmod(fd, KEY_MODE)  # whatever the umask
        os.write(fd, body.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return path, True
