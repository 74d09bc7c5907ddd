"""``leash install``: wire leash's hooks into Claude Code's settings, and check them.

Claude Code reads hooks from several settings files (managed, user, project,
project-local); each event maps to a list of matcher groups, each with a list of
``{"type": "command", "command": ..., "timeout": seconds}``. ``install`` merges
leash's hooks into one of those files and changes nothing else: other keys and
other hooks stay as they are, a second run writes nothing, ``uninstall``
removes only leash's (recognised by the ``# leash-hook`` mark at the end of the
command). The ``statusLine`` becomes ``leash statusline``, chaining the user's
own (``core.hook.statuswiring``; uninstall puts it back). The command runs
leash's hook entry (``core/hook/hookentry.py``) with the interpreter of the
``leash`` that installed it, both by absolute path.

Fail-closed wiring: for the events where Claude Code reads exit 2 as "block"
(PreToolUse, UserPromptSubmit, PermissionRequest, ConfigChange, PostToolBatch)
the command is ``PYTHON -S -P ENTRY --deadline N hook EVENT || exit 2``, so a
missing binary (exit 127), a crash, or a hook that overruns its own deadline
(ended by ``SIGALRM``: ``core.wire.hookio.armed``) blocks the call instead of
letting it through. The other events fail open (a broken reply guard must
never trap an agent in its turn). Every program in a command is named by its
absolute path, never found through ``PATH``, which a settings file's ``env``
can set. Until 2026-11-29 the deadline was ``/usr/bin/timeout -k 2 N`` in
front of the interpreter, one more process per tool call; files installed so
are still recognised by their record (``timeout_program``).
``core.wiring`` compares what the settings hold with this, for ConfigChange
and ``leash install --check``.

The events an approval may hold (PreToolUse, PermissionRequest:
``core.approvals.hold``) wait as long as ``[approvals] timeout_s`` (read from
the home's config at install): their command pins it and their deadlines
outlast it (``core.hooktimes``), so the approval's own timeout decides and
leash, not a kill, answers.

Failure: a settings file that is not a JSON object is never rewritten; the
caller gets ``SettingsError`` with one line. Writes are atomic (temp file and
rename in the same directory) and keep the file's mode.
"""
from __future__ import annotations

import json
import os
import shlex
from collections import namedtuple

from leash.core.base.agentfiles import MANAGED_ENV, MANAGED_SETTINGS, settings_layers, settings_path  # noqa: F401 - named here too
from leash.core.base.wellknown import AGENT_SOCKET_ENV
from leash.core.hook.hooktimes import (  # noqa: F401 - HOOK_TIMEOUT_SECONDS, OWN_DEADLINE_SECONDS: named here too
    HOOK_TIMEOUT_SECONDS,
    OWN_DEADLINE_SECONDS,
    approval_wait,
    deadlines,
    pinned_wait,
)
from leash.core.wire.daemontrust import DAEMON_UID_ENV
from leash.core.wire.hookevents import CLAUDE, ON_FAILURE_BLOCK, events_of
from leash.core.wire.hookio import DEADLINE_FLAG

TYPE_CHECKING = False  # ``typing`` is for the type checker only
if TYPE_CHECKING:
    from typing import Any

MARK = "# leash-hook"
# Where ``timeout`` is looked for: the system's folders, not the caller's PATH.
TIMEOUT_SEARCH_PATH = "/usr/bin:/bin"


# event: Claude Code's name; verb: leash hook VERB; fail_closed: wrapped so that
# any failure blocks (exit 2); matcher: the event filters by tool name. (A
# namedtuple, not a dataclass: the hook path does not pay for ``inspect``.)
# Every row comes from the one table of hook events (``core.wire.hookevents``).
HookSpec = namedtuple("HookSpec", "event verb fail_closed matcher")


HOOKS = tuple(HookSpec(spec.event, spec.verb, spec.refusal is not None, spec.matcher)
              for spec in events_of(CLAUDE))
VERBS = {spec.verb: spec for spec in HOOKS}
VERBS_BY_EVENT = {spec.event: spec for spec in HOOKS}


class SettingsError(Exception):
    """A settings file leash will not touch; ``str()`` is one line."""


def timeout_program() -> str:
    """``timeout`` by its absolute path (``timeout`` alone when the system has
    none there): the program the commands of an install recorded before its
    record named one ran under (``core.hook.wiring``)."""
    import shutil

    return shutil.which("timeout", path=TIMEOUT_SEARCH_PATH) or "timeout"


def hook_command(leash: str | list[str], spec: HookSpec, *, socket: str | None = None,
                 daemon_uid: int | None = None, timeout: str | None = None, wait: float | None = None,
                 home: str | None = None) -> str:
    """``leash`` is a program (the path of a ``leash``) or the words that run
    leash's hook entry (``hook_runner()``). ``socket`` pins the daemon's agent
    socket in the command itself (``LEASH_SOCKET=...``), where the agent's
    environment cannot take it away: an unreachable daemon then denies;
    ``daemon_uid`` pins the user leashd runs as (``LEASH_DAEMON_UID``), whose
    socket the hook believes. A gating hook's own deadline is the entry's
    ``--deadline SECONDS``; ``timeout``, a ``timeout`` program's path, writes
    the command as leash wrote it before (``timeout -k 2 SECONDS ...``): what
    an install recorded with it is still expected. ``wait``: ``[approvals]
    timeout_s`` (default 300), pinned for the events an approval may hold.
    ``home``: the state home the hook uses, pinned (``--home HOME``) so that
    an agent's environment (its ``LEASH_HOME`` or none) cannot take it
    elsewhere: the operator's stops and the agents' hooks meet in one home."""
    words = [leash] if isinstance(leash, str) else list(leash)
    if spec.fail_closed and not timeout:
        words += [DEADLINE_FLAG, deadlines(spec.verb, wait)[0]]
    if home:
        words += ["--home", home]
    run = f"{shlex.join(words)} hook {spec.verb}"
    if spec.fail_closed and timeout:
        run = f"{shlex.quote(timeout)} -k 2 {deadlines(spec.verb, wait)[0]} {run}"
    run = f"{pinned_wait(spec.verb, wait)}{run}"
    if socket and daemon_uid is not None:
        run = f"{DAEMON_UID_ENV}={int(daemon_uid)} {run}"
    if socket:
        run = f"{AGENT_SOCKET_ENV}={shlex.quote(socket)} {run}"
    if spec.fail_closed:
        run = f"{run} || exit 2"
    return f"{run} {MARK}"


def daemon_uid_of(socket: str) -> int | None:
    """The user leashd runs as, for a hook pinned to its ``socket``: the
    socket's owner, or its folder's before it exists; None when neither is
    there or it is this user (the hook proves its own user's daemon otherwise)."""
    for path in (socket, os.path.dirname(socket)):
        try:
            owner = os.stat(path).st_uid
        except OSError:
            continue
        return None if owner == os.geteuid() else owner
    return None


def is_leash_hook(hook: object) -> bool:
    from leash.core.hook.httpwiring import is_leash_http_hook

    if isinstance(hook, dict) and isinstance(hook.get("command"), str) and hook["command"].rstrip().endswith(MARK):
        return True
    return is_leash_http_hook(hook)


def hook_runner() -> list[str]:
    """What runs a hook: this interpreter on leash's hook entry file
    (``core/hook/hookentry.py``), by absolute paths. Not the ``leash`` console
    script: its wrapper imports ``re`` on every call, as long again as the whole
    thin hook. ``-P`` keeps the entry's folder off ``sys.path``; ``-S`` leaves
    ``site`` to the entry, which needs it only without leashd (``hookentry``)."""
    import sys

    entry = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hookentry.py")
    return [sys.executable, "-S", "-P", entry]


def read_settings(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read ({exc.strerror})") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid JSON ({exc}); leash leaves it as it is") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: not a JSON object; leash leaves it as it is")
    if not isinstance(data.get("hooks", {}), dict):
        raise SettingsError(f'{path}: "hooks" is not an object; leash leaves it as it is')
    return data


def hook_entry(leash: str | list[str], spec: HookSpec, *, socket: str | None = None,
               on_failure: bool = False, daemon_uid: int | None = None, timeout: str | None = None,
               wait: float | None = None, home: str | None = None, http_port: int | None = None) -> dict[str, Any]:
    """One hook as the settings hold it. ``on_failure``: the installed Claude
    Code knows ``onFailure`` (``core.claudeversion``), so a gating hook that
    cannot run blocks by Claude Code's own rule too, besides ``|| exit 2``.
    ``http_port``: an HTTP hook to leashd's listener there instead
    (``core.hook.httpwiring``; only where Claude Code knows ``onFailure``)."""
    if http_port:
        from leash.core.hook.httpwiring import COMMAND_ONLY_EVENTS, http_entry

        if spec.event not in COMMAND_ONLY_EVENTS:
            return http_entry(spec, port=http_port, wait=wait)
    command = hook_command(leash, spec, socket=socket, daemon_uid=daemon_uid, timeout=timeout, wait=wait,
                           home=home)
    entry: dict[str, Any] = {"type": "command", "command": command, "timeout": deadlines(spec.verb, wait)[1]}
    if on_failure and spec.fail_closed:
        entry["onFailure"] = ON_FAILURE_BLOCK
    return entry


def hook_group(spec: HookSpec, entry: dict[str, Any]) -> dict[str, Any]:
    """The matcher group ``install`` puts a hook in: every tool for the events
    that filter by tool name, no matcher for the others."""
    return {"matcher": "*", "hooks": [entry]} if spec.matcher else {"hooks": [entry]}


def merged(settings: dict, leash: str | list[str], *, uninstall: bool = False, socket: str | None = None,
           on_failure: bool = False, daemon_uid: int | None = None, wait: float | None = None,
           home: str | None = None, http_port: int | None = None) -> dict:
    """``settings`` with leash's hooks replaced by a fresh set (or removed)."""
    result = dict(settings)
    hooks: dict[str, Any] = {event: without_leash(groups) for event, groups in (settings.get("hooks") or {}).items()}
    if not uninstall:
        for spec in HOOKS:
            entry = hook_entry(leash, spec, socket=socket, on_failure=on_failure, daemon_uid=daemon_uid,
                               wait=wait, home=home, http_port=http_port)
            hooks.setdefault(spec.event, []).append(hook_group(spec, entry))
    hooks = {event: groups for event, groups in hooks.items() if groups}
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def without_leash(groups: object) -> object:
    """A settings event's hook groups with leash's hooks taken out (a group
    left empty goes); anything that is not a list is not leash's to judge."""
    if not isinstance(groups, list):
        return groups
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            others = [hook for hook in group["hooks"] if not is_leash_hook(hook)]
            if not others and group["hooks"]:
                continue
            group = {**group, "hooks": others}
        kept.append(group)
    return kept


def _require_lists(path: str, settings: dict) -> None:
    """Every event leash adds a hook to holds a list (anything else is the
    user's to fix: leash cannot add to it without judging it)."""
    for event in sorted({spec.event for spec in HOOKS}):
        if not isinstance(settings.get("hooks", {}).get(event, []), list):
            raise SettingsError(f'{path}: "hooks.{event}" is not a list; leash leaves it as it is')


def install(path: str, leash: str | list[str] | None = None, *, uninstall: bool = False,
            socket: str | None = None, on_failure: bool = False, daemon_uid: int | None = None,
            wait: float | None = None, home: str | None = None, http_port: int | None = None) -> bool:
    """Merge (or remove) leash's hooks in ``path``, and its status line
    (``core.hook.statuswiring``: the user's chained, put back on uninstall);
    True when the file changed.
    ``wait``: ``[approvals] timeout_s`` (``approval_wait(home)``; default 300);
    ``home``: the state home each hook command pins (None: the agent's own)."""
    current = read_settings(path)
    if not uninstall:
        _require_lists(path, current)
    runner = leash or hook_runner()
    wanted = merged(current, runner, uninstall=uninstall, socket=socket, on_failure=on_failure,
                    daemon_uid=daemon_uid, wait=wait, home=home, http_port=http_port)
    from leash.core.hook.statuswiring import merged_status

    wanted = merged_status(wanted, path, [runner] if isinstance(runner, str) else runner, uninstall=uninstall,
                           home=home, socket=socket, daemon_uid=daemon_uid)
    if wanted == current:
        return False
    from leash.core.base.statefile import write_bytes_atomic

    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644  # settings are not secret; Claude Code (maybe another user) must read them
    write_bytes_atomic(path, (json.dumps(wanted, indent=2) + "\n").encode())
    os.chmod(path, mode)
    return True


# The words of a session record's ``wired``: what the settings for its
# directory wired when leash first judged them.
WIRED_GATE = "settings"  # leash's PreToolUse hook: its calls are judged
WIRED_READS = "reads"  # leash's PostToolUse hook: every file it reads is reported
WIRED_NOTHING = "none"


# ------------------------------------------------------------------ which home the hooks use
HOME_MISMATCH = "home_mismatch"  # the subject of a finding: the hooks use another home than this leash
HOME_UNPINNED = "home_unpinned"  # the hooks pin no home: the agent's environment chooses it


def pinned_home(command: str) -> str | None:
    """The home a hook command pins (``... --home HOME hook VERB``), or None."""
    try:
        words = shlex.split(command.replace(MARK, ""))
    except ValueError:
        return None
    for index, word in enumerate(words):
        if word == "hook":
            return None
        if word == "--home" and index + 1 < len(words):
            return words[index + 1]
        if word.startswith("--home="):
            return word.split("=", 1)[1]
    return None


def pinned_socket(command: str) -> bool:
    """Whether a hook command pins leashd's agent socket (``LEASH_SOCKET=...``):
    such a hook asks that daemon, whatever home it names."""
    return f"{AGENT_SOCKET_ENV}=" in command
