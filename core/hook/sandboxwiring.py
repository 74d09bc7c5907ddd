"""``leash install --sandbox``: an OS boundary around the agent's own tools,
written into Claude Code's ``sandbox`` settings, and checked.

In the single-user profile the agent is the operator's own Unix user, so a
command it runs could read leash's home (``run/log.key``), write answers into
it, talk to the operator socket from a detached process or type into the
operator's tmux. Claude Code runs its Bash tool in a sandbox (bubblewrap and
socat on Linux, a seccomp filter that refuses every Unix socket unless
``network.allowAllUnixSockets``); its hooks run outside it, so leash's hooks
still reach leashd. ``wanted`` is what leash writes:

* ``enabled``; ``failIfUnavailable`` (Claude Code 2.1.83 and later: a sandbox
  that cannot start refuses to start Claude Code instead of running tools
  unsandboxed); ``allowUnsandboxedCommands: false`` (the model's
  ``dangerouslyDisableSandbox`` is then ignored); ``network.allowAllUnixSockets:
  false``;
* ``filesystem.denyRead`` and ``denyWrite``: the home, its run directory, the
  daemon's sockets' folders, the operator's tmux socket folders
  (``/tmp/tmux-UID``, ``$TMUX_TMPDIR/tmux-UID``) and the user's and the
  system's settings of Claude Code, Codex CLI and Gemini CLI; ``denyWrite``
  also the project's own settings of the three CLIs (reading them stays
  allowed: ``git`` in the project reads every file).

``differences`` is what ConfigChange and ``leash install --check`` report: in
a file install wrote the sandbox into, every entry leash wrote still there;
in any settings layer that governs it (the project's layers, every layer for
a user or managed install), nothing that switches it off or reopens it
(``enabled: false``, ``allowUnsandboxedCommands: true``, ``excludedCommands``,
``allowAllUnixSockets``, ``filesystem.disabled``, an ``allowRead`` or
``allowWrite`` over a guarded path...).

Failure: a settings file that is not a JSON object is never rewritten
(``install.SettingsError``, one line); ``differences`` never raises.
"""
from __future__ import annotations

import json
import os

from leash.core.base.agentfiles import settings_layers, settings_path
from leash.core.base.wellknown import RUN_DIR

KEY = "sandbox"
FAIL_IF_UNAVAILABLE_SINCE = (2, 1, 83)
PROGRAMS = ("bwrap", "socat")  # what Claude Code's sandbox needs on Linux (Debian: bubblewrap, socat)
# What leash sets, and the value that would switch the boundary off.
SCALARS = (("enabled", True), ("failIfUnavailable", True), ("allowUnsandboxedCommands", False),
           ("network.allowAllUnixSockets", False))
# Keys no governing layer may set to True (each opens the boundary).
OPENERS = ("filesystem.disabled", "enableWeakerNestedSandbox",
           "allowNestedUserNamespaces")
LISTS = ("filesystem.denyRead", "filesystem.denyWrite")


def user_settings_files() -> list[str]:
    """The user's and the system's settings of the three CLIs."""
    user = os.path.expanduser("~")
    return [settings_path(user=True), os.path.join(user, ".claude", "settings.local.json"),
            settings_path(managed=True), os.path.join(user, ".codex", "config.toml"),
            os.path.join(user, ".gemini", "settings.json"), "/etc/codex/config.toml",
            "/etc/gemini-cli/settings.json"]


def project_settings_files(project: str) -> list[str]:
    base = os.path.abspath(project)
    return [os.path.join(base, ".claude", "settings.json"), os.path.join(base, ".claude", "settings.local.json"),
            os.path.join(base, ".codex", "config.toml"), os.path.join(base, ".gemini", "settings.json")]


def tmux_folders(environ=os.environ, uid: int | None = None) -> list[str]:
    """Where the operator's tmux servers put their sockets."""
    uid = os.geteuid() if uid is None else uid
    folders = [f"/tmp/tmux-{uid}"]
    if environ.get("TMUX_TMPDIR"):
        folders.append(os.path.join(os.path.abspath(environ["TMUX_TMPDIR"]), f"tmux-{uid}"))
    return folders


def guarded_folders(home: str, *, sockets: tuple[str | None, ...] = (), environ=os.environ) -> list[str]:
    """The home, its run directory, the sockets' folders and tmux's: unreadable and unwritable."""
    home = os.path.abspath(home)
    found = [home, os.path.realpath(home), os.path.join(home, RUN_DIR)]
    found += [os.path.dirname(os.path.abspath(socket)) for socket in sockets if socket]
    found += tmux_folders(environ)
    return _unique(found)


def wanted(home: str, *, project: str | None, sockets: tuple[str | None, ...] = (),
           version: tuple[int, ...] | None = None, environ=os.environ) -> dict:
    """The ``sandbox`` entries leash writes (``project``: the folder whose
    CLIs' settings the tools may not write, None for a user or managed
    install; ``version``: the installed Claude Code's; None, unknown, writes
    every setting)."""
    hidden = guarded_folders(home, sockets=sockets, environ=environ) + user_settings_files()
    written = {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
               "network": {"allowAllUnixSockets": False},
               "filesystem": {"denyRead": hidden,
                              "denyWrite": _unique(hidden + (project_settings_files(project) if project
                                                             else []))}}
    if not has_fail_if_unavailable(version):
        del written["failIfUnavailable"]
    return written


def has_fail_if_unavailable(version: tuple[int, ...] | None) -> bool:
    return version is None or tuple(version) >= FAIL_IF_UNAVAILABLE_SINCE


def missing_programs(path: str | None = None) -> list[str]:
    """The programs the sandbox needs that are not on ``path`` (default: ``PATH``)."""
    import shutil

    return [program for program in PROGRAMS if shutil.which(program, path=path) is None]


# ------------------------------------------------------------------ writing
def merged(settings: dict, written: dict, *, uninstall: bool = False) -> dict:
    """``settings`` with leash's ``sandbox`` entries added (or, ``uninstall``,
    taken out: a scalar still as leash wrote it, a path leash listed); the
    user's other sandbox entries stay."""
    result = dict(settings)
    held_sandbox = settings.get(KEY)
    sandbox = _copy(held_sandbox) if isinstance(held_sandbox, dict) else {}
    for dotted, _ in SCALARS:
        value = _get(written, dotted)
        if value is None:
            continue
        if not uninstall:
            _set(sandbox, dotted, value)
        elif _get(sandbox, dotted) == value:
            _pop(sandbox, dotted)
    for dotted in LISTS:
        mine = _list(written, dotted)
        kept = [entry for entry in _list(sandbox, dotted) if entry not in mine]
        _set(sandbox, dotted, kept if uninstall else kept + mine)
        if not _get(sandbox, dotted):
            _pop(sandbox, dotted)
    if sandbox:
        result[KEY] = sandbox
    else:
        result.pop(KEY, None)
    return result


def install_sandbox(path: str, written: dict, *, uninstall: bool = False) -> bool:
    """Merge (or remove) leash's sandbox entries in the settings file ``path``; True when it changed."""
    from leash.core.base.statefile import write_bytes_atomic
    from leash.core.hook.install import SettingsError, read_settings

    current = read_settings(path)
    if not isinstance(current.get(KEY, {}), dict):
        raise SettingsError(f'{path}: "{KEY}" is not an object; leash leaves it as it is')
    new = merged(current, written, uninstall=uninstall)
    if new == current:
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    write_bytes_atomic(path, (json.dumps(new, indent=2) + "\n").encode())
    os.chmod(path, mode)
    return True


# ------------------------------------------------------------------ checking
def recorded(record: dict | None) -> dict[str, dict]:
    """settings file -> the sandbox entries ``leash install --sandbox`` wrote there."""
    files = record.get("files") if isinstance(record, dict) else None
    return {path: entry[KEY] for path, entry in (files.items() if isinstance(files, dict) else ())
            if isinstance(entry, dict) and isinstance(entry.get(KEY), dict)}


def governs(installed: str, path: str) -> bool:
    """Whether Claude Code reads the settings file ``path`` along with
    ``installed`` (a project's layers; any layer for a user or managed install)."""
    installed, path = os.path.abspath(installed), os.path.abspath(path)
    if installed == path:
        return True
    if installed in (os.path.abspath(settings_path(user=True)), os.path.abspath(settings_path(managed=True))):
        return True
    project = os.path.dirname(os.path.dirname(installed))
    return path in map(os.path.abspath, settings_layers(project=project))


def differences(path: str, data: dict, sandboxes: dict[str, dict]) -> list[str]:
    """What in the settings object ``data`` (of the file ``path``) undoes the
    sandbox ``leash install --sandbox`` wrote ([] when nothing does)."""
    ruling = [written for installed, written in sandboxes.items() if governs(installed, path)]
    if not ruling:
        return []
    sandbox = data.get(KEY)
    own = sandboxes.get(os.path.abspath(path))
    if not isinstance(sandbox, dict):
        return [f"{KEY}: leash's sandbox, which leash install --sandbox wrote here, is gone"] if own else []
    problems = _missing(sandbox, own) if own else []
    problems += _opened(sandbox, ruling)
    return problems


def _missing(sandbox: dict, own: dict) -> list[str]:
    problems = []
    for dotted, _ in SCALARS:
        value = _get(own, dotted)
        if value is not None and _get(sandbox, dotted) != value:
            problems.append(f"{KEY}.{dotted} is {json.dumps(_get(sandbox, dotted))}, where leash install "
                            f"--sandbox writes {json.dumps(value)}")
    for dotted in LISTS:
        held = _list(sandbox, dotted)
        gone = [entry for entry in _list(own, dotted) if entry not in held]
        if gone:
            problems.append(f"{KEY}.{dotted} lacks {gone[0]}" + (f" (and {len(gone) - 1} more)" if len(gone) > 1
                                                                 else "") + ", which leash install --sandbox wrote")
    return problems


def _opened(sandbox: dict, ruling: list[dict]) -> list[str]:
    """What in one layer's ``sandbox`` reopens the boundary the ruling installs wrote."""
    problems = []
    for dotted, value in SCALARS:
        if any(_get(written, dotted) == value for written in ruling) and _get(sandbox, dotted) == (not value):
            problems.append(f"{KEY}.{dotted} is {json.dumps(not value)}: it switches leash's sandbox off")
    for dotted in OPENERS:
        if _get(sandbox, dotted) is True:
            problems.append(f"{KEY}.{dotted} is true: it opens leash's sandbox")
    excluded = sandbox.get("excludedCommands")
    if isinstance(excluded, list) and excluded:
        problems.append(f"{KEY}.excludedCommands runs {json.dumps(excluded[0])} outside leash's sandbox")
    guarded = [entry for written in ruling for dotted in LISTS for entry in _list(written, dotted)]
    for dotted in ("filesystem.allowRead", "filesystem.allowWrite"):
        for entry in _list(sandbox, dotted):
            if isinstance(entry, str) and any(_overlaps(entry, path) for path in guarded):
                problems.append(f"{KEY}.{dotted} reopens {entry}, which leash's sandbox guards")
    return problems


def _overlaps(entry: str, guarded: str) -> bool:
    """Whether the path ``entry`` is ``guarded``, inside it or holds it
    (``//abs`` and ``~`` spelled as Claude Code reads them)."""
    entry = os.path.expanduser("/" + entry.lstrip("/") if entry.startswith("//") else entry)
    entry = entry.rstrip("*").rstrip("/") or "/"
    if not os.path.isabs(entry):
        return False
    entry, guarded = os.path.abspath(entry), os.path.abspath(guarded)
    return entry == guarded or guarded.startswith(entry.rstrip("/") + "/") or entry.startswith(guarded + "/")


# ------------------------------------------------------------------ dotted keys
def _get(data: object, dotted: str) -> object:
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _list(data: object, dotted: str) -> list:
    """The list at ``dotted`` ([] when it is not one)."""
    found = _get(data, dotted)
    return found if isinstance(found, list) else []


def _set(data: dict, dotted: str, value: object) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[last] = value


def _pop(data: dict, dotted: str) -> None:
    """Take ``dotted`` out, and the objects it leaves empty."""
    *parents, last = dotted.split(".")
    chain = [data]
    for part in parents:
        child = chain[-1].get(part)
        if not isinstance(child, dict):
            return
        chain.append(child)
    chain[-1].pop(last, None)
    for parent, part in zip(reversed(chain[:-1]), reversed(parents), strict=True):
        if not parent[part]:
            del parent[part]


def _copy(data: dict) -> dict:
    return json.loads(json.dumps(data))


def _unique(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))
