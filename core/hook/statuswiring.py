"""Claude Code's ``statusLine`` as ``leash install`` writes it: leash's status
line command (``leash statusline``, ``core.wire.thinstatus``), chaining the
user's own.

Claude Code shows one status line, from the strongest settings layer that
sets ``statusLine`` (``{"type": "command", "command": ..., "padding": ...}``).
``install`` replaces the ``command`` of the file's statusLine with leash's and
keeps the user's in it, ``--user-command CMD``, which leash's runs first with
the same stdin (its output shown first, unchanged). The object's other keys
stay as they are. A project's ``.claude/settings.json`` without a statusLine
of its own would hide the user's (``~/.claude/settings.json``): leash's then
chains that one and says so with ``--inherited`` (its other keys copied).

Installing again rebuilds leash's command around the user's command it holds
(an inherited one is read again), so leash never chains itself.
``uninstall`` puts back the user's command (the object as it was), or removes
the statusLine leash added (none before, or ``--inherited``).

leash's command is marked ``# leash-statusline`` at its end
(``core.policy.halts.settingsguard`` knows the mark: an agent removing or
changing it is ``supervisor_tampering``, as for a hook).

Failure: a statusLine leash cannot chain (not an object of ``type``
"command" with a string ``command``) is left as it is and no status line of
leash's is wired there (``wired`` says so); a leash command that no longer
parses as one is left as it is too.
"""
from __future__ import annotations

import json
import os
import shlex

from leash.core.base.agentfiles import settings_path
from leash.core.base.wellknown import AGENT_SOCKET_ENV
from leash.core.wire.daemontrust import DAEMON_UID_ENV
from leash.core.wire.thinstatus import INHERITED_OPTION, USER_COMMAND_OPTION

STATUS_MARK = "# leash-statusline"
KEY = "statusLine"
COMMAND_TYPE = "command"
VERB = "statusline"


def status_command(runner: list[str], *, home: str | None = None, socket: str | None = None,
                   daemon_uid: int | None = None, user_command: str | None = None, inherited: bool = False) -> str:
    """leash's status line command: ``runner`` (``install.hook_runner()``)
    with ``statusline``, the pinned home, socket and daemon uid as a hook's
    command pins them, and the user's command to run first."""
    words = list(runner)
    if home:
        words += ["--home", home]
    words.append(VERB)
    if user_command is not None:
        words += [USER_COMMAND_OPTION, user_command]
        if inherited:
            words.append(INHERITED_OPTION)
    run = shlex.join(words)
    if socket and daemon_uid is not None:
        run = f"{DAEMON_UID_ENV}={int(daemon_uid)} {run}"
    if socket:
        run = f"{AGENT_SOCKET_ENV}={shlex.quote(socket)} {run}"
    return f"{run} {STATUS_MARK}"


def is_leash_status(entry: object) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("command"), str) \
        and entry["command"].rstrip().endswith(STATUS_MARK)


def chainable(entry: object) -> bool:
    """A statusLine leash can run first: a command of the user's."""
    return isinstance(entry, dict) and entry.get("type", COMMAND_TYPE) == COMMAND_TYPE \
        and isinstance(entry.get("command"), str)


def chained_of(command: str) -> tuple[str | None, bool] | None:
    """(the user's command, inherited) that leash's ``command`` holds; None
    when it does not parse as leash's."""
    try:
        words = shlex.split(command.rstrip().removesuffix(STATUS_MARK))
    except ValueError:
        return None
    if VERB not in words:
        return None
    rest = words[words.index(VERB) + 1:]
    if not rest:
        return None, False
    if rest[0] != USER_COMMAND_OPTION or len(rest) < 2 or rest[2:] not in ([], [INHERITED_OPTION]):
        return None
    return rest[1], rest[2:] == [INHERITED_OPTION]


def inherited_entry(path: str) -> dict | None:
    """The user's statusLine a project's settings file would hide: the one in
    ``~/.claude/settings.json`` (leash's there: the command it chains), for a
    project's ``.claude/settings.json`` only; None otherwise."""
    user = settings_path(user=True)
    if os.path.basename(path) != "settings.json" or os.path.basename(os.path.dirname(path)) != ".claude" \
            or os.path.abspath(path) == os.path.abspath(user):
        return None
    try:
        with open(user, "rb") as handle:
            data = json.loads(handle.read() or b"{}")
    except (OSError, ValueError):  # none, or one Claude Code cannot read either: nothing to chain
        return None
    entry = data.get(KEY) if isinstance(data, dict) else None
    if not isinstance(entry, dict) or not chainable(entry):
        return None
    if is_leash_status(entry):
        held = chained_of(entry["command"])
        if held is None or held[0] is None:
            return None
        entry = {**entry, "command": held[0]}
    return entry


def wired(settings: dict) -> bool:
    """Whether ``install`` wires leash's status line into ``settings``: none
    there, leash's own, or one it can chain."""
    entry = settings.get(KEY)
    return entry is None or is_leash_status(entry) or chainable(entry)


def merged_status(settings: dict, path: str, runner: list[str], *, uninstall: bool = False,
                  home: str | None = None, socket: str | None = None, daemon_uid: int | None = None) -> dict:
    """``settings`` with leash's status line wired (or, ``uninstall``, the
    user's put back); unchanged when it cannot be (see the module)."""
    entry = settings.get(KEY)
    if entry is not None and not chainable(entry):
        return settings
    held: tuple[str | None, bool] | None = (None, False)
    if isinstance(entry, dict) and is_leash_status(entry):
        held = chained_of(entry["command"])
    elif isinstance(entry, dict):
        held = None if uninstall else (entry["command"], False)
    if held is None:  # the user's own on uninstall, or no longer leash's command: not leash's to rewrite
        return settings
    result = dict(settings)
    user_command, inherited = held
    if uninstall:
        if not isinstance(entry, dict):
            return settings
        if user_command is None or inherited:
            result.pop(KEY)
        else:
            result[KEY] = {**entry, "command": user_command}
        return result
    base = entry if isinstance(entry, dict) else {"type": COMMAND_TYPE}
    if user_command is None or inherited:
        found = inherited_entry(path)
        if found is not None:
            base, user_command, inherited = {**found, "type": COMMAND_TYPE}, found["command"], True
        elif inherited:  # the user's own is gone from their settings: nothing to chain any more
            base, user_command, inherited = {"type": COMMAND_TYPE}, None, False
    command = status_command(runner, home=home, socket=socket, daemon_uid=daemon_uid, user_command=user_command,
                             inherited=inherited)
    result[KEY] = {**base, "command": command}
    return result
