"""What makes leash's hooks run: Claude Code's settings and leash's installed files.

``supervisor_tampering`` guards both with the functions here.

``settings_change(edits, path)`` judges an Edit, MultiEdit or Write of a
Claude Code settings file by the file's content after the change against
before (the edits applied to the file as it is now; a Write's content). It is
tampering when the change:

* touches the ``env`` key (the environment of every hook: ``LEASH_HOME``,
  ``PATH``, ``LEASH_SOCKET`` ...);
* sets or changes ``disableAllHooks`` or ``allowManagedHooksOnly``;
* removes, changes (command, matcher, timeout, event ...) or adds a leash
  hook: a hook whose command ends in ``# leash-hook`` or runs ``leash hook``
  or leash's ``hookentry.py``;
* removes or changes leash's ``statusLine`` (its command ends in
  ``# leash-statusline``: ``core.hook.statuswiring``), which reports the
  subscription windows the budget caps count;
* leaves a file that held leash's hooks as something Claude Code cannot
  read (not a JSON object).

An ``apply_patch`` patch is applied in memory as Codex CLI applies it
(``core.policy.editresult``); one that does not apply is tampering. When the
content after an edit cannot be known (the old text is not in the file, the
file is larger than ``SETTINGS_READ_LIMIT``), the edit's own text is judged:
it sets ``disableAllHooks``, names ``env``, drops mentions of leash or the
``hooks`` key. Ordinary settings (a model, a permission) pass.

``installed(project, env)`` lists leash's installed files, whose writing is
tampering: the directory of ``leash.core`` (and ``leash.console`` beside it;
the whole ``leash`` package directory when leash is installed as one, not
from a source tree), this interpreter, the ``leash`` program beside it and on
the agent's PATH, and the interpreter and entry file each leash hook in the
settings layers for the project names. Never raises.
"""
from __future__ import annotations

import json
import os
import shlex
import sys

from leash.core.base.lazy_re import lazy

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

HOOK_MARK = "# leash-hook"
STATUS_MARK = "# leash-statusline"  # core.hook.statuswiring's
SETTINGS_READ_LIMIT = 256 * 1024
SWITCHES = ("disableAllHooks", "allowManagedHooksOnly")
INSTALLED_CODE = "leash's installed code"
LEASH_PROGRAM = "the leash program operators run"
HOOK_INTERPRETER = "the interpreter leash's hooks run"
HOOK_ENTRY = "leash's hook entry"
_LEASH_HOOK_COMMAND = lazy(r"(?:^|[\s/])leashd?\s+hook\s|hookentry\.py")
_DISABLE_ALL = lazy(r'"disableAllHooks"\s*:\s*true')
_ENV_KEY = lazy(r'"env"\s*:')
_settings_seen: dict = {}


def is_leash_hook(hook: object) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    command = hook["command"]
    return command.rstrip().endswith(HOOK_MARK) or _LEASH_HOOK_COMMAND.search(command) is not None


def leash_hooks(settings: dict) -> list[str]:
    """Each leash hook of a settings object, as one canonical string (event, matcher, hook)."""
    found = []
    hooks = settings.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                if is_leash_hook(hook):
                    found.append(json.dumps([event, group.get("matcher"), hook], sort_keys=True, default=str))
    return sorted(found)


def leash_status_line(settings: dict) -> str | None:
    """leash's statusLine of a settings object, as one canonical string (None: not leash's)."""
    entry = settings.get("statusLine")
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or not command.rstrip().endswith(STATUS_MARK):
        return None
    return json.dumps(entry, sort_keys=True, default=str)


def parsed(text: str) -> dict | None:
    """The settings object a text holds ({} when blank), or None when Claude Code could not read it."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _current(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(SETTINGS_READ_LIMIT + 1)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    return text if len(text) <= SETTINGS_READ_LIMIT else None


def after_edits(before: str, edits: list[dict]) -> str | None:
    """The text after the edits, applied in order, or None when one cannot apply."""
    from leash.core.policy.editresult import replaced

    return replaced(before, edits)


def changes(before: dict | None, after: dict | None) -> list[str]:
    """What a change of settings does to leash's wiring (see the module)."""
    if after is None:
        return ["leaves it unreadable to Claude Code, with leash's hooks in it"] if before and leash_hooks(before) \
            else []
    before = before or {}
    found = []
    if before.get("env") != after.get("env"):
        found.append("changes its env (the environment of leash's hooks)")
    found += [f"changes {key}" for key in SWITCHES if before.get(key) != after.get(key) and after.get(key)]
    old, new = leash_hooks(before), leash_hooks(after)
    if any(hook not in new for hook in old):
        found.append("removes or changes leash's hook")
    elif any(hook not in old for hook in new):
        found.append("adds a hook that runs leash")
    status = leash_status_line(before)
    if status is not None and status != leash_status_line(after):
        found.append("removes or changes leash's status line")
    return found


def _judged_by_text(edits: list[dict]) -> list[str]:
    found = []
    for edit in edits:
        old, new = edit["old"], edit["new"]
        if _DISABLE_ALL.search(new):
            found.append("sets disableAllHooks")
        if _ENV_KEY.search(new) or _ENV_KEY.search(old):
            found.append("changes its env (the environment of leash's hooks)")
        if old.count("leash") > new.count("leash") or ('"hooks"' in old and '"hooks"' not in new):
            found.append("removes or changes leash's hook")
    return found


def settings_change(edits: list[dict], path: str, *, patch: str | None = None, cwd: str | None = None) -> list[str]:
    """Why the edits (or the ``apply_patch`` ``patch``) of settings file
    ``path`` are tampering ([] when they are not)."""
    before = _current(path)
    if patch is not None and before is not None:
        from leash.core.policy.editresult import EditFailed, files_after_patch

        try:
            patched = files_after_patch(patch, cwd=cwd, only=lambda p: p == path).get(path, before)
        except EditFailed:
            return ["makes a change leash cannot work out"]
        return changes(parsed(before), parsed(patched or ""))
    after = after_edits(before, edits) if before is not None else None
    if before is None or after is None:
        return list(dict.fromkeys(_judged_by_text(edits)))
    return changes(parsed(before), parsed(after))


# ------------------------------------------------------------ installed files
def _hook_program(command: str) -> list[str]:
    """The interpreter (or program) and entry file a hook command runs."""
    try:
        words = shlex.split(command.replace(HOOK_MARK, ""))
    except ValueError:
        return []
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]  # VAR=value before the program
    if words[:1] == ["timeout"]:
        words = words[1:]
        while words and (words[0].startswith("-") or words[0].replace(".", "", 1).isdigit()):
            words = words[1:]
    if not words:
        return []
    return [words[0]] + [w for w in words[1:4] if w.endswith(".py")]


def _settings_of(path: str) -> dict:
    """A settings layer's object, read again only when the file changes."""
    try:
        info = os.stat(path)
    except OSError:
        return {}
    key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _settings_seen:
        if len(_settings_seen) > 16:
            _settings_seen.clear()
        text = _current(path)
        _settings_seen[key] = parsed(text or "") or {}
    return _settings_seen[key]


def hook_programs(project: str | None) -> dict[str, str]:
    """What each leash hook in the settings layers for ``project`` runs: path -> what."""
    from leash.core.base.agentfiles import settings_layers

    found: dict[str, str] = {}
    for layer in settings_layers(project=project):
        for canonical in leash_hooks(_settings_of(layer)):
            command = json.loads(canonical)[2].get("command", "")
            for index, word in enumerate(_hook_program(command)):
                if os.path.isabs(word):
                    found[os.path.normpath(word)] = HOOK_INTERPRETER if index == 0 else HOOK_ENTRY
    return found


def installed(project: str | None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """leash's installed files and directories: path -> what (see the module)."""
    import leash.core  # the package root, imported before any layer: not an upward import

    core = os.path.dirname(os.path.abspath(leash.core.__file__))
    package = os.path.dirname(core)
    found = {core: INSTALLED_CODE, os.path.normpath(sys.executable): HOOK_INTERPRETER}
    if os.path.isdir(os.path.join(package, "console")):
        found[os.path.join(package, "console")] = INSTALLED_CODE
    # An installed package (site-packages/leash), not a source tree that happens
    # to be checked out in a folder named leash (whose other files are the agent's work).
    if os.path.basename(package) == "leash" and not os.path.exists(os.path.join(package, "pyproject.toml")):
        found[package] = INSTALLED_CODE
    # The ``leash`` program operators run: beside this interpreter (a venv's
    # console script) and the one the agent's PATH finds.
    import shutil

    for program in (os.path.join(os.path.dirname(sys.executable), "leash"),
                    shutil.which("leash", path=(env or os.environ).get("PATH"))):
        if program and os.path.isfile(program):
            found[os.path.normpath(program)] = LEASH_PROGRAM
    found.update(hook_programs(project))
    return found


INSTALLED_KEPT_SECONDS = 1.0
_places: dict = {}


def installed_places(project: str | None, env: Mapping[str, str] | None = None, *,
                     clock=None) -> list[tuple[str, str, str]]:
    """``installed`` as (path, real path, what), kept ``INSTALLED_KEPT_SECONDS``
    per project: resolving them costs dozens of lstat calls on every write,
    and they change only when leash is installed again (a relinked
    interpreter is seen within that time)."""
    import time

    moment = (clock or time.monotonic)()
    kept = _places.get(project)
    if kept is not None and moment - kept[1] < INSTALLED_KEPT_SECONDS:
        return kept[0]
    places = [(path, os.path.realpath(path), what) for path, what in installed(project, env).items()]
    _places.clear()  # one project at a time in practice
    _places[project] = (places, moment)
    return places
