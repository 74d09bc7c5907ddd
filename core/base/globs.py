"""Path patterns for ``path:<glob>`` hands-off locks.

``*`` and ``?`` stay inside one directory, ``**`` crosses directories, ``[...]``
is a character class, and a pattern ending in ``/**`` also covers the directory
itself (so ``rm -rf src/auth`` is caught by ``path:src/auth/**``).

A relative pattern is matched against the file's path relative to the
directory it is anchored at — the ``cwd`` argument of these functions, which
the gate gives as the session's project (``core.project.project_root``:
``CLAUDE_PROJECT_DIR``, else the git work tree, else the working directory),
so ``cd src`` does not move a lock; an absolute pattern against the absolute
path.

``subtree_may_match(pattern, directory, cwd)`` answers whether anything under
a directory could match (``rm -rf src`` reaches ``path:src/auth/**``): every
part of the directory matches the pattern's leading parts, or the pattern
reaches ``**`` first; a directory above the anchor holds every relative
match. A pattern that does not compile is refused at filing (``check_glob``).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache


def compile_glob(pattern: str) -> re.Pattern[str]:
    body = pattern
    directory_too = body.endswith("/**")
    if directory_too:
        body = body[:-3]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                i += 2
                if body.startswith("/", i):
                    i += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = body.find("]", i + 2 if body.startswith("[!", i) or body.startswith("[^", i) else i + 1)
            if close == -1:
                out.append(re.escape(c))
            else:
                inner = body[i + 1:close]
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(c))
        i += 1
    if directory_too:
        out.append("(?:/.*)?")
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def path_candidates(file_path: str, cwd: str | None) -> tuple[str, str | None]:
    """(absolute path, path relative to cwd or None when outside it)."""
    base = cwd or os.getcwd()
    absolute = os.path.normpath(os.path.join(base, file_path))
    relative = None
    if cwd:
        rel = os.path.relpath(absolute, os.path.normpath(cwd))
        if rel != ".." and not rel.startswith("../"):
            relative = rel
    elif not os.path.isabs(file_path):
        relative = os.path.normpath(file_path)
    return absolute, relative


def check_glob(pattern: str) -> None:
    """Raise ValueError (one line) when ``pattern`` cannot be compiled: a lock
    is refused at filing rather than guarding nothing, or everything, later."""
    try:
        compile_glob(pattern)
    except re.error as exc:
        raise ValueError(f"path pattern {pattern!r} is not a valid glob ({exc})") from None


@lru_cache(maxsize=512)
def _part(pattern_part: str) -> re.Pattern[str]:
    return compile_glob(pattern_part)


def subtree_may_match(pattern: str, directory: str, cwd: str | None) -> bool:
    """Could ``directory`` or anything under it match ``pattern``?"""
    absolute, relative = path_candidates(directory, cwd)
    if pattern.startswith("/"):
        return _leading_parts_match(pattern, absolute)
    if relative is None:  # outside the cwd: it holds every relative match when the cwd is under it
        base = os.path.normpath(cwd or os.getcwd())
        return base == absolute or base.startswith(absolute.rstrip("/") + "/")
    return _leading_parts_match(pattern, relative)


def _leading_parts_match(pattern: str, directory: str) -> bool:
    parts = [p for p in directory.split("/") if p and p != "."]
    wanted = [p for p in pattern.split("/") if p]
    for index, part in enumerate(parts):
        if index >= len(wanted):
            return False
        if wanted[index] == "**":
            return True
        if not _part(wanted[index]).match(part):
            return False
    return True
