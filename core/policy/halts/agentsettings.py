"""What makes leash's hooks run in Gemini CLI and Codex CLI: their settings
files, and the command-line switches that turn hooks off.

``supervisor_tampering`` reads this module. Files:

* Gemini CLI: ``.gemini/settings.json`` anywhere, ``/etc/gemini-cli/settings.json``
  and ``~/.gemini/trustedFolders.json`` (an untrusted folder runs no hooks);
* Codex CLI: ``.codex/config.toml`` anywhere (``[features] hooks = false`` in a
  trusted project switches the user's hooks off; the user's holds the hashes
  that trust leash's hooks), ``$CODEX_HOME/config.toml``, ``hooks.json`` beside
  either, and ``/etc/codex/requirements.toml``.

A shell command or an unknown tool that writes one of these files is
tampering (leash cannot see what it writes). An Edit, MultiEdit or Write
(Claude Code), ``replace`` or ``write_file`` (Gemini CLI) or ``apply_patch``
(Codex CLI) is judged by the file it leaves (``core.policy.editresult``: the
edit applied in memory to the file as it is), parsed, against the file now.
It is tampering when it changes ``hooksConfig`` (Gemini); ``[features]
hooks`` (a profile's too) or ``allow_managed_hooks_only`` (Codex); the trust
of hooks (Codex's ``hooks.state``) or any key of Codex's ``hooks`` table that
is not an event's list; the trusted folders at all; when it removes, changes
(command, matcher, timeout, name ...) or adds a leash hook, or moves one in
Codex, which trusts a hook by its event, group and place; when it leaves the
file unreadable to the CLI (not JSON or TOML: leash's ``--check`` cannot read
it either). An edit leash cannot work out (its old text is not in the file, a
patch that does not apply, a file larger than ``editresult.READ_LIMIT`` or
unreadable) is tampering too. Anything else (a theme, a model, a hook of the
user's after leash's) passes.

Commands: running ``codex`` with ``--disable hooks``, ``-c features.hooks=…``,
``--enable``/``--disable`` of hooks or ``--dangerously-bypass-hook-trust``
starts an agent leash cannot hold.
"""
from __future__ import annotations

import json
import os

from leash.core.policy.editresult import EditFailed, current_text, files_after_patch, replaced

GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"
CODEX_REQUIREMENTS = "/etc/codex/requirements.toml"
CODEX_HOOK_SWITCHES = ("--dangerously-bypass-hook-trust",)


def agent_settings_file(path: str) -> str | None:
    """Which CLI's hook settings ``path`` is ("Gemini CLI settings" ...), or None."""
    name, folder = os.path.basename(path), os.path.basename(os.path.dirname(path))
    if path == GEMINI_SYSTEM_SETTINGS or (folder == ".gemini" and name == "settings.json"):
        return "Gemini CLI settings"
    if folder == ".gemini" and name == "trustedFolders.json":
        return "Gemini CLI's trusted folders"
    codex_home = os.environ.get("CODEX_HOME")
    if path == CODEX_REQUIREMENTS or (folder == ".codex" and name in ("config.toml", "hooks.json")) \
            or (codex_home and os.path.dirname(path) == os.path.normpath(codex_home)
                and name in ("config.toml", "hooks.json")):
        return "Codex CLI config"
    return None


def edit_findings(path: str, edits: list[dict], *, patch: str | None = None,
                  cwd: str | None = None) -> list[str]:
    """Why the edits (or the ``apply_patch`` ``patch``) of the agent settings
    file ``path`` are tampering (see the module)."""
    what = agent_settings_file(path)
    if what is None:
        return []
    before = current_text(path)
    after = _after(path, edits, before, patch, cwd)
    if before is None or after is UNKNOWN:
        return [f"makes a change leash cannot work out to {what} {path}"]
    return [f"{why} in {what} {path}" for why in wiring_changes(path, before, after)]


UNKNOWN = object()  # the file after an edit leash cannot work out


def _after(path: str, edits: list[dict], before: str | None, patch: str | None, cwd: str | None):
    """The text ``path`` holds after the call (None: removed; UNKNOWN)."""
    if before is None:
        return UNKNOWN
    if patch is None:
        after = replaced(before, edits)
        return UNKNOWN if after is None else after
    try:
        return files_after_patch(patch, cwd=cwd, only=lambda p: p == path).get(path, before)
    except EditFailed:
        return UNKNOWN


def wiring_changes(path: str, before: str, after: str | None) -> list[str]:
    """What going from text ``before`` to ``after`` (None: the file removed)
    does to the hook wiring of agent settings file ``path``."""
    is_toml = path.endswith(".toml")
    new = _parsed(after or "", is_toml)
    if new is None:
        return [f"leaves it unreadable (not {'TOML' if is_toml else 'JSON'})"]
    old = _parsed(before, is_toml) or {}
    what = agent_settings_file(path) or ""
    if "trusted folders" in what:
        return ["changes the folders Gemini CLI trusts"] if old != new else []
    if what.startswith("Gemini"):
        found = ["changes hooksConfig"] if old.get("hooksConfig") != new.get("hooksConfig") else []
        return found + _hook_changes(_gemini_leash_hooks(old), _gemini_leash_hooks(new), "")
    found = [why for why, part in (("changes whether hooks run ([features] hooks, allow_managed_hooks_only)",
                                    _hook_switches),
                                   ("changes the trust of hooks (hooks.state)", _trust),
                                   ("changes the hooks table", _hooks_keys)) if part(old) != part(new)]
    return found + _hook_changes(_codex_leash_hooks(old), _codex_leash_hooks(new),
                                 " (Codex trusts a hook by its place)")


def _parsed(text: str, is_toml: bool) -> dict | None:
    """The object a settings text holds ({} when blank), or None when the CLI could not read it."""
    if not text.strip():
        return {}
    try:
        if is_toml:
            import tomllib

            return tomllib.loads(text)
        data = json.loads(text)
    except (ValueError, RecursionError):  # tomllib.TOMLDecodeError and json's are ValueErrors
        return None
    return data if isinstance(data, dict) else None


def _table(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _hook_changes(old: list[str], new: list[str], moved: str) -> list[str]:
    if old == new:
        return []
    before, after = _unplaced(old), _unplaced(new)
    if sorted(before) == sorted(after):
        return [f"moves leash's hook{moved}"]
    if any(before.count(hook) > after.count(hook) for hook in before):
        return ["removes or changes leash's hook"]
    return ["adds a hook that runs leash"]


def _unplaced(hooks: list[str]) -> list[str]:
    return [json.dumps(json.loads(hook)[1:], sort_keys=True) for hook in hooks]


def _gemini_leash_hooks(settings: dict) -> list[str]:
    from leash.core.policy.halts.settingsguard import leash_hooks

    return [json.dumps([0, *json.loads(hook)], sort_keys=True) for hook in leash_hooks(settings)]


def _codex_leash_hooks(config: dict) -> list[str]:
    """Each leash hook of a Codex config as (place, event, matcher, handler): the place is
    the group and handler index Codex's trust key holds."""
    from leash.core.policy.halts.settingsguard import is_leash_hook

    found = []
    for event, groups in _table(config.get("hooks")).items():
        for group_index, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = _table(group).get("hooks")
            for index, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if is_leash_hook(handler):
                    found.append(json.dumps([[group_index, index], event, _table(group).get("matcher"), handler],
                                            sort_keys=True, default=str))
    return sorted(found)


def _hook_switches(config: dict) -> dict:
    """Every ``[features] hooks`` (a profile's too), the profile chosen when one
    sets it, and ``allow_managed_hooks_only`` (which drops every hook not managed)."""
    found = {"features": _table(config.get("features")).get("hooks"),
             "allow_managed_hooks_only": config.get("allow_managed_hooks_only")}
    for name, profile in _table(config.get("profiles")).items():
        found[f"profiles.{name}"] = _table(_table(profile).get("features")).get("hooks")
    if any(value is not None for key, value in found.items() if key != "features"):
        found["profile"] = config.get("profile")
    return found


def _trust(config: dict) -> object:
    return _table(config.get("hooks")).get("state")


def _hooks_keys(config: dict) -> object:
    """What Codex's ``hooks`` holds besides the events' lists and the trust."""
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return hooks
    return {key: value for key, value in hooks.items() if key != "state" and not isinstance(value, list)}


def codex_switch(argv: list[str]) -> str | None:
    """The switch of a ``codex`` command line that turns hooks off, or None."""
    for index, word in enumerate(argv[1:], start=1):
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word in CODEX_HOOK_SWITCHES:
            return word
        if word in ("--disable", "--enable") and following == "hooks":
            return f"{word} hooks"
        if word in ("-c", "--config") and "hooks" in following:
            return f"{word} {following}"
        if word.startswith(("-c", "--config=")) and "hooks" in word:
            return word
    return None
