"""leash's hooks in Gemini CLI's settings (``leash install --agent gemini``).

The project's ``.gemini/settings.json``, the user's ``~/.gemini/settings.json``
or the system's ``/etc/gemini-cli/settings.json``; timeouts in milliseconds.
``install_gemini`` also sets ``hooksConfig.enabled`` in the file it writes and,
for a project, trusts the folder in ``~/.gemini/trustedFolders.json`` (an
untrusted folder runs no hooks: headless Gemini exits 55 there).
``check_gemini`` fails on a missing hook, hooks switched off in a layer the
system file does not override, and an untrusted folder.

Failure: a settings file leash cannot read or would have to judge raises
``SettingsError`` naming it and nothing is written.
``LEASH_GEMINI_SYSTEM_SETTINGS`` moves the system file (tests).
"""
from __future__ import annotations

import os
from typing import Any

from leash.core.hook.agentcommon import (
    agent_command,
    hook_seconds,
    program_findings,
    table,
    write_json,
)
from leash.core.hook.install import (
    SettingsError,
    hook_runner,
    is_leash_hook,
    read_settings,
    without_leash,
)
from leash.core.wire.hookevents import GEMINI, events_of

GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"
GEMINI_SYSTEM_ENV = "LEASH_GEMINI_SYSTEM_SETTINGS"
GEMINI_MATCH_ALL = ".*"
TRUST_FOLDER = "TRUST_FOLDER"


def gemini_settings_path(*, project: str | None = None, user: bool = False, managed: bool = False) -> str:
    if managed:
        return os.environ.get(GEMINI_SYSTEM_ENV) or GEMINI_SYSTEM_SETTINGS
    if user:
        return os.path.join(os.path.expanduser("~"), ".gemini", "settings.json")
    return os.path.join(os.path.abspath(project or "."), ".gemini", "settings.json")


def gemini_merged(settings: dict, runner: list[str], *, uninstall: bool = False, wait: float | None = None,
                  socket: str | None = None, home: str | None = None) -> dict:
    """``settings`` with leash's hooks replaced by a fresh set (or removed)."""
    result = dict(settings)
    hooks: dict[str, Any] = {event: without_leash(groups) for event, groups in (settings.get("hooks") or {}).items()}
    if not uninstall:
        for spec in events_of(GEMINI):
            entry = {"type": "command", "name": f"leash {spec.verb}", "timeout": hook_seconds(spec, wait) * 1000,
                     "command": agent_command(runner, spec, wait=wait, socket=socket, home=home)}
            group = {"matcher": GEMINI_MATCH_ALL, "hooks": [entry]} if spec.matcher else {"hooks": [entry]}
            hooks.setdefault(spec.event, []).append(group)
        result["hooksConfig"] = {**(settings.get("hooksConfig") or {}), "enabled": True}
    hooks = {event: groups for event, groups in hooks.items() if groups}
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def install_gemini(path: str, runner: list[str] | None = None, *, project: str | None = None,
                   uninstall: bool = False, wait: float | None = None, socket: str | None = None,
                   home: str | None = None) -> list[str]:
    """Write leash's hooks into Gemini CLI's settings ``path`` (and, for a
    project, trust its folder); the files that changed."""
    current = read_settings(path)
    for event in {spec.event for spec in events_of(GEMINI)}:
        if not isinstance(current.get("hooks", {}).get(event, []), list):
            raise SettingsError(f'{path}: "hooks.{event}" is not a list; leash leaves it as it is')
    wanted = gemini_merged(current, runner or hook_runner(), uninstall=uninstall, wait=wait, socket=socket, home=home)
    changed = []
    if wanted != current:
        write_json(path, wanted)
        changed.append(path)
    if project and not uninstall and trust_gemini_folder(project):
        changed.append(gemini_trust_path())
    return changed


def gemini_trust_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".gemini", "trustedFolders.json")


def trust_gemini_folder(project: str) -> bool:
    """Mark ``project`` trusted for Gemini CLI; True when the file changed."""
    path = gemini_trust_path()
    trusted = read_settings(path)
    folder = os.path.realpath(project)
    if trusted.get(folder) == TRUST_FOLDER:
        return False
    trusted[folder] = TRUST_FOLDER
    write_json(path, trusted)
    return True


def gemini_folder_trusted(project: str) -> bool:
    """Whether Gemini CLI trusts ``project``: it, or a folder above it, is
    ``TRUST_FOLDER`` (a folder marked ``TRUST_PARENT`` trusts its parent)."""
    try:
        trusted = read_settings(gemini_trust_path())
    except SettingsError:
        return False
    folder = os.path.realpath(project)
    if trusted.get(folder) == "TRUST_PARENT":
        return True
    while True:
        if trusted.get(folder) == TRUST_FOLDER:
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def check_gemini(*, project: str | None = None) -> list[tuple[str, str, str]]:
    """(level, subject, message) for leash's wiring as Gemini CLI will see it."""
    findings: list[tuple[str, str, str]] = []
    layers = [gemini_settings_path(managed=True), gemini_settings_path(project=project),
              gemini_settings_path(user=True)]
    wired: dict[str, list[dict]] = {}
    enabled_by_system = False
    for index, path in enumerate(layers):
        try:
            data = read_settings(path)
        except SettingsError as exc:
            findings.append(("fail", "gemini", str(exc)))
            continue
        config = table(data.get("hooksConfig"))
        if index == 0 and config.get("enabled") is True:
            enabled_by_system = True
        if config.get("enabled") is False and not enabled_by_system:
            findings.append(("fail", "gemini", f"{path}: hooksConfig.enabled is false: Gemini CLI runs no hooks"))
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") if isinstance(group, dict) else None) or []:
                    if is_leash_hook(hook):
                        wired.setdefault(event, []).append(hook)
    for spec in events_of(GEMINI):
        if spec.event not in wired:
            findings.append(("fail", f"gemini {spec.event}", "leash's hook is missing: run `leash install --agent "
                                                             "gemini`"))
        else:
            findings.extend(program_findings(f"gemini {spec.event}", wired[spec.event]))
    if project and not gemini_folder_trusted(project):
        findings.append(("fail", "gemini", f"{os.path.abspath(project)} is not a trusted folder: Gemini CLI runs no "
                                           "hooks there (`leash install --agent gemini --project` trusts it)"))
    if not any(level == "fail" for level, _, _ in findings):
        findings.append(("ok", "gemini", f"{len(events_of(GEMINI))} leash hooks wired, enabled, folder trusted"))
    return findings
