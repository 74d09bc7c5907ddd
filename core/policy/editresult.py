"""The text a file will hold after an edit, worked out in memory before the
edit runs, so a rule can judge a change by the file it leaves.

``replaced(before, edits)``: Edit, MultiEdit, Write (Claude Code) and
Gemini CLI's ``replace`` and ``write_file``, as ``{"old", "new"}`` pairs
applied in order (a Write's ``old`` is the whole file as it is).

``files_after_patch(text, cwd=, only=)``: an ``apply_patch`` patch (Codex
CLI) applied as Codex applies it: each ``*** Update File`` chunk is found by
its ``@@`` context line and its old lines (context and removed), matched
exactly, then ignoring trailing whitespace, then ignoring surrounding
whitespace, then with typographic quotes, dashes and spaces read as ASCII; a
chunk with no old lines is added at the end; ``*** End of File`` looks at the
end first; the file ends with a newline. ``*** Add File`` writes its ``+``
lines, ``*** Delete File`` removes the file, ``*** Move to`` writes the
result there and removes the source. The answer is ``{absolute path: text,
or None when the file is gone}`` for every path the patch touches (``only``
keeps the changes of the paths it accepts, sources and targets).

How it fails: a patch that does not apply (a header the format does not
know, a chunk whose lines are not in the file, an update or delete of a file
that does not exist, a file that cannot be read or is larger than
``READ_LIMIT``) raises ``EditFailed``; ``replaced`` answers None when an
edit's old text is not in the file. Nothing here writes a file.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

READ_LIMIT = 256 * 1024
BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, UPDATE, DELETE, MOVE = "*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "
END_OF_FILE = "*** End of File"
# What Codex reads as ASCII in its last, loosest pass.
_PUNCTUATION = str.maketrans({**dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
                              **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
                              **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
                              **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                                              "\u202f\u205f\u3000", " ")})


class EditFailed(ValueError):
    """The edit does not apply to the file as it is (the message says why)."""


def current_text(path: str) -> str | None:
    """The file's text now: "" when it does not exist, None when it cannot be
    read whole (unreadable, larger than ``READ_LIMIT``)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(READ_LIMIT + 1)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    return text if len(text) <= READ_LIMIT else None


def replaced(before: str, edits: list[dict]) -> str | None:
    """The text after the edits, applied in order, or None when one cannot apply."""
    text = before
    for edit in edits:
        old, new = edit["old"], edit["new"]
        if old == text:  # a Write: its "old" is the whole file as it is
            text = new
        elif old and old in text:
            text = text.replace(old, new)
        else:
            return None
    return text


# ------------------------------------------------------------ apply_patch
class Chunk:
    __slots__ = ("context", "old", "new", "end_of_file")

    def __init__(self, context: str | None) -> None:
        self.context = context
        self.old: list[str] = []
        self.new: list[str] = []
        self.end_of_file = False


class Change:
    """One file header of a patch and what follows it."""

    __slots__ = ("operation", "path", "moved_to", "added", "chunks")

    def __init__(self, operation: str, path: str) -> None:
        self.operation, self.path = operation, path
        self.moved_to: str | None = None
        self.added: list[str] = []
        self.chunks: list[Chunk] = []


def read_changes(text: str) -> list[Change]:
    """The file changes of a patch, in order (EditFailed: not a patch Codex applies)."""
    lines = text.strip().splitlines()
    if lines and lines[0].strip() == BEGIN:
        lines = lines[1:]
    if lines and lines[-1].strip() == END:
        lines = lines[:-1]
    changes: list[Change] = []
    index = 0
    while index < len(lines):
        header = lines[index].strip()
        index += 1
        if not header:
            continue
        change = _header(header)
        changes.append(change)
        if change.operation == "add":
            while index < len(lines) and lines[index].startswith("+"):
                change.added.append(lines[index][1:])
                index += 1
        elif change.operation == "update":
            if index < len(lines) and lines[index].startswith(MOVE):
                change.moved_to = lines[index][len(MOVE):].strip() or None
                index += 1
            index = _read_chunks(lines, index, change)
    return changes


def _header(line: str) -> Change:
    for prefix, operation in ((ADD, "add"), (UPDATE, "update"), (DELETE, "delete")):
        if line.startswith(prefix) and line[len(prefix):].strip():
            return Change(operation, line[len(prefix):].strip())
    raise EditFailed(f"not a patch header: {line[:80]!r}")


def _read_chunks(lines: list[str], index: int, change: Change) -> int:
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if line.startswith("***"):
            break
        if line == "@@" or line.startswith("@@ "):
            chunk, index = Chunk(line[3:] if line.startswith("@@ ") else None), index + 1
        elif change.chunks:
            raise EditFailed(f"a line outside a chunk in {change.path}: {line[:80]!r}")
        else:
            chunk = Chunk(None)  # the first chunk may start without "@@"
        index = _read_chunk_lines(lines, index, chunk, change.path)
        change.chunks.append(chunk)
    if not change.chunks:
        raise EditFailed(f"an update of {change.path} that changes nothing")
    return index


def _read_chunk_lines(lines: list[str], index: int, chunk: Chunk, path: str) -> int:
    start = index
    while index < len(lines):
        line = lines[index]
        if line == END_OF_FILE:
            chunk.end_of_file = True
            return index + 1
        marker, rest = line[:1], line[1:]
        if marker in ("", " "):
            chunk.old.append(rest)
            chunk.new.append(rest)
        elif marker == "+":
            chunk.new.append(rest)
        elif marker == "-":
            chunk.old.append(rest)
        else:
            break
        index += 1
    if index == start:
        raise EditFailed(f"an empty chunk in {path}")
    return index


def _seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if end_of_file else start
    for same in (lambda a, b: a == b, lambda a, b: a.rstrip() == b.rstrip(),
                 lambda a, b: a.strip() == b.strip(),
                 lambda a, b: a.strip().translate(_PUNCTUATION) == b.strip().translate(_PUNCTUATION)):
        for at in range(first, len(lines) - len(pattern) + 1):
            if all(same(lines[at + n], want) for n, want in enumerate(pattern)):
                return at
    return None


def updated(before: str, chunks: list[Chunk], path: str = "") -> str:
    """``before`` with the chunks of an ``*** Update File`` applied (EditFailed when one does not)."""
    lines = before.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    at = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], at, False)
            if found is None:
                raise EditFailed(f"no line {chunk.context!r} in {path}")
            at = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = _seek(lines, old, at, chunk.end_of_file)
        if found is None and old[-1] == "":
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, chunk.end_of_file)
        if found is None:
            raise EditFailed(f"the lines a chunk changes are not in {path}")
        replacements.append((found, len(old), new))
        at = found + len(old)
    for start, length, new in sorted(replacements, reverse=True):
        lines[start:start + length] = new
    return "\n".join(lines + [""])


def files_after_patch(text: str, *, cwd: str | None = None, only: Callable[[str], bool] | None = None,
                      read: Callable[[str], str | None] = current_text) -> dict[str, str | None]:
    """What each file the patch touches holds after it (see the module)."""
    files: dict[str, str | None] = {}

    def now(path: str) -> str | None:
        if path not in files:
            if not os.path.lexists(path):
                return None
            text = read(path)
            if text is None:
                raise EditFailed(f"cannot read {path} whole")
            files[path] = text
        return files[path]

    for change in read_changes(text):
        path = _absolute(change.path, cwd)
        target = _absolute(change.moved_to, cwd) if change.moved_to else None
        if only is not None and not only(path) and not (target and only(target)):
            continue
        if change.operation == "add":
            files[path] = "".join(line + "\n" for line in change.added)
            continue
        before = now(path)
        if before is None:
            raise EditFailed(f"no file {path} to {change.operation}")
        if change.operation == "delete":
            files[path] = None
            continue
        files[path] = updated(before, change.chunks, path)
        if target and target != path:
            files[target], files[path] = files[path], None
    return files


def _absolute(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or os.getcwd(), path))
