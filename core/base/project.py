"""Where a session's project is: the directory relative path locks are anchored at.

``project_root(cwd, env)`` is, in order: ``CLAUDE_PROJECT_DIR`` from the
hook's environment (Claude Code sets it for every hook it runs; the agent's
own commands cannot change the environment Claude Code gives its hooks), the
git work tree holding the working directory (the nearest directory with a
``.git``, found by walking up: no subprocess on the hook path), else the
working directory itself. So a ``path:src/auth/**`` lock means the project's
``src/auth`` wherever the agent has ``cd``-ed to.

It never raises: a relative or empty ``CLAUDE_PROJECT_DIR`` is ignored, and a
working directory that is unknown gives None (the caller matches against the
path as it is).
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
# A work tree deeper than this many directories is not looked for further up
# (no real path has so many parts; the walk stays bounded on any input).
MAX_WALK_UP = 64


def git_toplevel(cwd: str | None) -> str | None:
    """The work tree holding ``cwd`` (the nearest directory with ``.git``)."""
    path = cwd
    for _ in range(MAX_WALK_UP):
        if not path:
            return None
        if os.path.lexists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def declared_project(env: Mapping[str, str] | None) -> str | None:
    """``CLAUDE_PROJECT_DIR`` when it is an absolute path, normalised."""
    value = env.get(PROJECT_DIR_ENV) if env is not None else None
    if isinstance(value, str) and os.path.isabs(value) and "\x00" not in value:
        return os.path.normpath(value)
    return None


def project_root(cwd: str | None, env: Mapping[str, str] | None) -> str | None:
    """The project directory relative lock patterns are matched from (see the module)."""
    declared = declared_project(env)
    if declared is not None:
        return declared
    if not cwd:
        return None
    where = os.path.normpath(cwd)
    return git_toplevel(where) or where
