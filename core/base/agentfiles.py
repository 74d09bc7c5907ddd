"""Where each agent CLI keeps the settings that decide whether leash's hooks run.

Claude Code reads, strongest first: the managed settings (``/etc/claude-code/
managed-settings.json``), a project's ``.claude/settings.local.json`` and
``.claude/settings.json``, and the user's ``~/.claude/settings.json``. The
installer writes these files and the settings guard refuses an agent's writes
to them, so both read the paths from here.

Paths only: nothing is read or written, so nothing here can fail but
``os.path``. ``LEASH_CLAUDE_MANAGED_SETTINGS`` moves the managed file (tests
and unusual hosts).
"""
from __future__ import annotations

import os

MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"
MANAGED_ENV = "LEASH_CLAUDE_MANAGED_SETTINGS"  # where --managed writes (tests point it elsewhere)


def settings_path(*, project: str | None = None, user: bool = False, managed: bool = False) -> str:
    """Claude Code's settings file: the managed one, the user's, or a project's."""
    if managed:
        return os.environ.get(MANAGED_ENV) or MANAGED_SETTINGS
    if user:
        return os.path.join(os.path.expanduser("~"), ".claude", "settings.json")
    return os.path.join(os.path.abspath(project or "."), ".claude", "settings.json")


def settings_layers(*, project: str | None = None) -> list[str]:
    """Every settings file Claude Code would read for ``project``, strongest first."""
    base = os.path.abspath(project or ".")
    return [settings_path(managed=True), os.path.join(base, ".claude", "settings.local.json"),
            os.path.join(base, ".claude", "settings.json"), settings_path(user=True)]
