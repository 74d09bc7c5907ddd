"""The secret a browser must show to reach ``leash serve``.

By default the token lives in ``$LEASH_HOME/serve.token`` (0600): the first
run makes it (``secrets.token_urlsafe``, written to a private temp file and
linked into place, so a reader never sees half a token and two servers
starting at once agree on one), later runs reuse it. ``--token-file FILE``
pins another one.

Failure: a token file that is not a regular file (a symbolic link, a FIFO, a
directory), that others can read or write, that belongs to another user, or
whose content is not one line of URL-safe characters is refused with
``TokenError`` (a one-line reason); nothing is overwritten or removed.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from pathlib import Path

TOKEN_FILE_NAME = "serve.token"
TOKEN_BYTES = 32                       # secrets.token_urlsafe(32): 43 characters
MIN_TOKEN_LENGTH = 16
MAX_TOKEN_FILE_BYTES = 4096
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]+")   # survives a URL's query string as it is
OTHERS_ACCESS = stat.S_IRWXG | stat.S_IRWXO


class TokenError(ValueError):
    """A token file leash will not use; the message says why, in one line."""


def home_token(home: str) -> str:
    """The token of ``home``: the one in ``serve.token``, made on first use."""
    path = Path(home) / TOKEN_FILE_NAME
    try:
        return read_token(path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(TOKEN_BYTES)
    temp = path.with_name(f".{TOKEN_FILE_NAME}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)          # fails if another server made one meanwhile: use that one
    except FileExistsError:
        return read_token(path)
    finally:
        os.unlink(temp)
    return token


def read_token(path: str | Path) -> str:
    """The token in ``path``; ``FileNotFoundError`` when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        reason = "is a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or "cannot be read")
        raise TokenError(f"token file {path} {reason}") from None
    try:
        info = os.fstat(fd)
        _check_file(path, info)
        data = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return _parse(path, data)


def _check_file(path: str | Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise TokenError(f"token file {path} is not a regular file")
    if info.st_uid != os.getuid():
        raise TokenError(f"token file {path} belongs to another user")
    if info.st_mode & OTHERS_ACCESS:
        raise TokenError(f"token file {path} is open to group or others "
                         f"(mode {stat.S_IMODE(info.st_mode):o}; chmod 600 {path})")


def _parse(path: str | Path, data: bytes) -> str:
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise TokenError(f"token file {path} is larger than {MAX_TOKEN_FILE_BYTES} bytes")
    try:
        lines = data.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise TokenError(f"token file {path} is not ASCII text") from None
    token = lines[0].strip() if lines else ""
    if len([line for line in lines if line.strip()]) != 1 or not TOKEN_SHAPE.fullmatch(token):
        raise TokenError(f"token file {path} must hold one line of letters, digits and ._~-")
    if len(token) < MIN_TOKEN_LENGTH:
        raise TokenError(f"token in {path} is shorter than {MIN_TOKEN_LENGTH} characters")
    return token
