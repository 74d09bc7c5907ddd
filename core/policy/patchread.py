"""A patch in the apply_patch format (Codex CLI's file-writing tool) read into
the files it changes, so a patch is judged as the edits it makes.

The format::

    *** Begin Patch
    *** Add File: path          (every following line starts with "+")
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ context
    -removed line
    +added line
    *** Delete File: path
    *** End Patch

``read_patch(text)`` gives one ``FilePatch`` per file header: what it does
(``add``, ``update``, ``delete``), its path, where it moves to, and the text
it removes and adds (for the secret and breaking-change conditions).

Never raises. What the reader cannot see: a patch is not checked against the
files (an Update of a file that does not exist is still an update of that
path), and a header the format does not know is ignored — so every path the
patch names under a known header is a write, and a patch whose text names no
file at all (``files`` empty) is judged as an unknown tool whose input names
no path. Only the first ``MAX_PATCH_FILES`` files are read; a patch with more
is ``incomplete``.
"""
from __future__ import annotations

PATCH_TOOLS = frozenset({"apply_patch"})
MAX_PATCH_FILES = 256
HEADERS = (("*** Add File: ", "add"), ("*** Update File: ", "update"), ("*** Delete File: ", "delete"))
MOVE_HEADER = "*** Move to: "


class FilePatch:
    """One file a patch changes."""

    __slots__ = ("operation", "path", "moved_to", "removed", "added")

    def __init__(self, operation: str, path: str) -> None:
        self.operation, self.path = operation, path
        self.moved_to: str | None = None
        self.removed: list[str] = []
        self.added: list[str] = []

    def paths(self) -> list[str]:
        """Every path the change writes: the file, and where it moves to."""
        return [self.path] + ([self.moved_to] if self.moved_to else [])


class Patch:
    __slots__ = ("files", "incomplete")

    def __init__(self) -> None:
        self.files: list[FilePatch] = []
        self.incomplete = False


def patch_text(tool: str | None, tool_input: object) -> str | None:
    """The patch of an apply_patch call (Codex CLI sends it as ``command``)."""
    if tool not in PATCH_TOOLS or not isinstance(tool_input, dict):
        return None
    for key in ("command", "patch", "input"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return None


def read_patch(text: str) -> Patch:
    patch = Patch()
    current: FilePatch | None = None
    for line in text.splitlines():
        header = _header(line)
        if header is not None:
            if len(patch.files) >= MAX_PATCH_FILES:
                patch.incomplete = True
                break
            current = FilePatch(*header)
            patch.files.append(current)
        elif current is not None and line.startswith(MOVE_HEADER):
            current.moved_to = line[len(MOVE_HEADER):].strip() or None
        elif current is not None and line.startswith("+"):
            current.added.append(line[1:])
        elif current is not None and line.startswith("-"):
            current.removed.append(line[1:])
    return patch


def _header(line: str) -> tuple[str, str] | None:
    for prefix, operation in HEADERS:
        if line.startswith(prefix):
            path = line[len(prefix):].strip()
            return (operation, path) if path else None
    return None
