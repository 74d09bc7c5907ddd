"""What a ``git`` command line writes: the verbs that rewrite the work tree.

``git_roles(argv, cwd)`` gives (path, role, subtree) for ``git ...``: ``clean``
writes its pathspecs or the cwd; ``checkout``/``restore``/``stash`` their
pathspecs or the whole work tree; ``reset --hard|--merge|--keep``, ``switch``,
``merge``, ``pull``, ``rebase``, ``cherry-pick``, ``revert``, ``am``,
``bisect``, ``submodule update`` and ``worktree remove`` the whole tree;
``rm``/``mv`` their operands (not with ``--cached``); ``apply`` the cwd
(unless it only checks or reports). Any other verb reads its path-like
operands. ``-C DIR`` and ``--work-tree`` are followed. The work tree is the
nearest directory with ``.git`` (``core.project.git_toplevel``). Never raises.
"""
from __future__ import annotations

import os

from leash.core.base.project import git_toplevel
from leash.core.policy.argwords import absolute, operands, path_like

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

_GIT_WHOLE_TREE = frozenset({"switch", "merge", "pull", "rebase", "cherry-pick", "revert", "am", "bisect"})
_GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_VERB_VALUES = ("-e", "--exclude", "-b", "-B", "--orphan", "-s", "--source", "-m", "--message", "-C", "-c", "-X")
_CHECK_ONLY = ("--check", "--stat", "--numstat", "--summary", "--cached")
_HARD_RESETS = ("--hard", "--merge", "--keep")


class GitLine:
    """A git command line: the verb, its words, where it runs and its work tree."""

    __slots__ = ("verb", "rest", "cwd", "whole", "paths", "after")

    def __init__(self, verb: str, rest: list[str], cwd: str | None, tree: str | None):
        self.verb, self.rest, self.cwd = verb, rest, cwd
        self.whole = tree or git_toplevel(cwd) or cwd or "."
        self.after = rest[rest.index("--") + 1:] if "--" in rest else None
        given = self.after if self.after is not None else operands([verb] + rest, _VERB_VALUES)
        self.paths = [absolute(p, cwd) for p in given]

    @property
    def here(self) -> str:
        return self.cwd or "."


def _written(items) -> list[tuple[str, str, bool]]:
    return [(p, "write", True) for p in items]


def _clean(line: GitLine) -> list:
    return _written(line.paths or [line.here])


def _checkout(line: GitLine) -> list:
    if line.after is not None:
        return _written(line.paths)
    existing = [p for p in line.paths if os.path.lexists(p)]
    if existing:
        return _written(existing)
    only_new_branch = any(w in ("-b", "-B", "--orphan") for w in line.rest) and not line.paths
    return [] if only_new_branch or (not line.paths and not line.rest) else _written([line.whole])


def _restore(line: GitLine) -> list:
    return _written(line.paths)


def _reset(line: GitLine) -> list:
    return _written([line.whole]) if any(w in _HARD_RESETS for w in line.rest) else []


def _stash(line: GitLine) -> list:
    if line.rest[:1] and line.rest[0] in ("list", "show", "branch"):
        return []
    return _written(line.paths if line.after else [line.whole])


def _moved(line: GitLine) -> list:
    return [] if "--cached" in line.rest else _written(line.paths)


def _apply(line: GitLine) -> list:
    return [] if any(w in _CHECK_ONLY for w in line.rest) else _written([line.here])


def _whole_tree(line: GitLine) -> list:
    return _written([line.whole])


def _submodule(line: GitLine) -> list:
    return _written([line.whole]) if "update" in line.rest else _read(line)


def _worktree(line: GitLine) -> list:
    return _written([line.whole]) if "remove" in line.rest else _read(line)


def _read(line: GitLine) -> list:
    cwd = line.cwd
    return [(p, "read", False) for p in line.paths if path_like(os.path.relpath(p, cwd) if cwd else p, cwd)]


VERBS: dict[str, Callable[[GitLine], list]] = {
    "clean": _clean, "checkout": _checkout, "restore": _restore, "reset": _reset, "stash": _stash, "rm": _moved,
    "mv": _moved, "apply": _apply, "submodule": _submodule, "worktree": _worktree,
    **{verb: _whole_tree for verb in _GIT_WHOLE_TREE},
}


def _global_options(argv: list[str], cwd: str | None) -> tuple[int, str | None, str | None]:
    """(index of the verb, the directory git runs in, the work tree given)."""
    index, tree = 1, None
    while index < len(argv) and argv[index].startswith("-"):
        word = argv[index]
        if word in _GIT_GLOBAL_VALUES and index + 1 < len(argv):
            if word == "-C":
                cwd = absolute(argv[index + 1], cwd)
            elif word == "--work-tree":
                tree = absolute(argv[index + 1], cwd)
            index += 2
            continue
        if word.startswith("--work-tree="):
            tree = absolute(word.split("=", 1)[1], cwd)
        index += 1
    return index, cwd, tree


def git_roles(argv: list[str], cwd: str | None) -> list[tuple[str, str, bool]]:
    index, cwd, tree = _global_options(argv, cwd)
    if index >= len(argv):
        return []
    line = GitLine(argv[index], argv[index + 1:], cwd, tree)
    return VERBS.get(line.verb, _read)(line)
