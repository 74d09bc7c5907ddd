"""The words of a command line as the role rules read them: paths, operands, options.

``path_like(word, cwd)``: a word with no whitespace that contains ``/``, has
a ``.ext`` or names an existing file relative to ``cwd``; ``operands(argv,
values)``: the non-option words, skipping the values of options that take
one (``VALUE_OPTIONS`` by program); ``absolute`` and ``is_dir`` against the
directory a command runs in. Shared by ``core.argroles``, ``core.copyroles``
and ``core.gitroles``; nothing here raises.
"""
from __future__ import annotations

import os
import re

PATH_MAX = 4096  # no file has a longer name: longer words are never paths
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")
VALUE_OPTIONS = {
    "rm": (), "mkdir": ("-m", "--mode"), "touch": ("-d", "-t", "-r", "--date", "--reference"),
    "truncate": ("-s", "--size", "-r", "--reference"), "cp": ("-S", "--suffix"), "mv": ("-S", "--suffix"),
    "install": ("-m", "-o", "-g", "--mode", "--owner", "--group", "-S", "--suffix"),
    "ln": ("-S", "--suffix"), "chmod": ("--reference",), "chown": ("--reference",), "sed": ("-l", "--line-length"),
    "rsync": ("-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from", "--include-from",
              "--files-from", "--log-file", "--partial-dir", "-T", "--temp-dir", "--backup-dir", "--chmod",
              "--chown", "--port", "--password-file", "--rsync-path", "--timeout", "--bwlimit", "--max-size",
              "--min-size", "--compare-dest", "--copy-dest", "--link-dest"),
    "scp": ("-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"), "tee": (), "shred": ("-n", "-s", "--iterations"),
}


def absolute(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or not cwd:
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd, path))


def path_like(word: str, cwd: str | None) -> bool:
    if not word or len(word) > PATH_MAX or word.startswith("-") or "://" in word or any(c.isspace() for c in word):
        return False
    if "/" in word or word in (".", "..") or _EXTENSION.search(word):
        return True
    return cwd is not None and cwd != "" and os.path.lexists(os.path.join(cwd, word))


def operands(argv: list[str], values: tuple = ()) -> list[str]:
    """Non-option words, skipping the values of options that take one."""
    out, skip, ended = [], False, False
    for word in argv[1:]:
        if skip:
            skip = False
            continue
        if ended or not word.startswith("-") or word == "-":
            out.append(word)
        elif word == "--":
            ended = True
        elif word in values:
            skip = True
    return out


def is_dir(path: str, cwd: str | None) -> bool:
    return os.path.isdir(absolute(path, cwd)) if (cwd or os.path.isabs(path)) else False
