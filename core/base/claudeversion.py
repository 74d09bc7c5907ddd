"""Which Claude Code is installed here, and what its hook settings support.

Claude Code moves fast and leash supports both the version its end-to-end
tests pin and the newest: ``leash install`` asks the installed ``claude`` for
its version (``claude --version`` prints ``2.1.332 (Claude Code)``) and writes
only what that version understands. ``onFailure: "block"`` on a hook (Claude
Code 2.1.295 and later) makes a hook that cannot start, times out or exits
with an unexpected code block the call; an older version may refuse a
settings file holding a key it does not know, so it is never written there.

The program asked is ``$LEASH_CLAUDE`` when set, else ``claude`` on ``PATH``.

Failure: no program, one that fails, overruns ``VERSION_TIMEOUT_SECONDS`` or
prints no version all mean "unknown" (None): the wiring then relies on its
shell form alone (``|| exit 2``), which every version honours.
"""
from __future__ import annotations

import os
import shutil
import subprocess

CLAUDE_ENV = "LEASH_CLAUDE"
VERSION_TIMEOUT_SECONDS = 20.0
ON_FAILURE_SINCE = (2, 1, 295)


def claude_program() -> str | None:
    """The Claude Code program to ask, or None when there is none."""
    named = os.environ.get(CLAUDE_ENV, "").strip()
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("claude")


def parse_version(text: str) -> tuple[int, ...] | None:
    """``(2, 1, 332)`` from ``2.1.332 (Claude Code)``; None when the first word is no version."""
    words = text.split()
    parts = words[0].split(".") if words else []
    if len(parts) < 2 or not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def installed_version(program: str | None = None) -> tuple[int, ...] | None:
    """The installed Claude Code's version, or None when it cannot be told."""
    program = program or claude_program()
    if not program:
        return None
    env = dict(os.environ, DISABLE_AUTOUPDATER="1")
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_SECONDS,
                              env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(done.stdout) if done.returncode == 0 else None


def supports_on_failure(version: tuple[int, ...] | None) -> bool:
    return version is not None and version >= ON_FAILURE_SINCE


def shown(version: tuple[int, ...] | None) -> str:
    return ".".join(str(part) for part in version) if version else "unknown"
