"""Supervisor tampering: an agent acting on leash itself.

Reads the tool call as the shell reader sees it (``ctx.tool_call()``), so
``bash -c``, ``$(...)``, ``xargs``, ``env``, ``sudo`` and ``cd`` change nothing.
Paths are compared after ``os.path.realpath`` (symbolic links resolved).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from leash.core.halts.conditions.registry import Finding, condition
from leash.core.halts.lazy_re import lazy

DEFAULT_SUPERVISOR_NAMES = ("leash", "leashd", "kennel", "leash.console.cli")
# Verbs that only read; everything else a human runs to lift or change a hold.
READ_ONLY_VERBS = frozenset({"status", "log", "why", "halts", "warrant", "loop", "doctor", "install", "completion",
                             "hook", "reply", "demo", "help"})
OPERATOR_VERBS = frozenset({"resume", "release", "stop", "hands-off", "kennel", "daemon", "store", "serve"})
_OPERATOR_SUBVERBS = {"halts": {"ack", "dismiss", "escalate"}, "warrant": {"pardon", "file"}, "loop": {"reset"}}
_GLOBAL_VALUES = {"--home", "--source"}
_LEASH_MODULES = lazy(r"^(?:leash(?:\.console(?:\.cli)?)?|console(?:\.cli)?)$")
# Substrings (plain ``in`` tests: one fast pass over any amount of code).
LEASH_API = ("leash.console.cli", "leash.console", "leash.core", "leash.core.stop", "leash.core.handsoff",
             "leash.core.halts", "leash.core.gate", "leash.core.fleet", "leash.core.acklog")
LIFTING = ("resume", "release", "acknowledge", "dismiss", "escalate", "pardon", "unlock", "lift", "clear",
           "reset", "repair", "uninstall", "hands_off", "update_halt_config")
_TMUX_ACTIONS = ("kill-server", "kill-session", "rename-session")
_KILLERS = {"kill", "pkill", "killall", "skill", "systemctl", "service", "launchctl", "supervisorctl"}
_SERVICE_STOPS = {"stop", "restart", "kill", "disable", "mask", "unload", "remove", "bootout"}
_DISABLE_ALL = lazy(r'"disableAllHooks"\s*:\s*true')
MANAGED_SETTINGS = ("/etc/claude-code/managed-settings.json",
                    "/Library/Application Support/ClaudeCode/managed-settings.json")
SETTINGS_READ_LIMIT = 256 * 1024
PATH_MAX = 4096


def real(path: str) -> str:
    """``os.path.realpath``, for paths the system could hold (longer ones cannot exist)."""
    return os.path.realpath(path) if len(path) <= PATH_MAX else os.path.normpath(path)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def leash_words(command) -> list[str] | None:
    """The words given to leash when the command runs it in any form, else None."""
    argv, program = command.argv, command.program
    if program in ("leash", "leashd"):
        return argv[1:]
    if program.startswith("python") or program in ("pypy3",):
        for index, word in enumerate(argv[1:-1], 1):
            if word == "-m" and _LEASH_MODULES.match(argv[index + 1]):
                return argv[index + 2:]
            if not word.startswith("-"):
                return argv[index + 1:] if word.endswith("console/cli.py") else None
    if program in ("uv", "poetry", "pipenv", "pdm", "hatch", "pipx") and "run" in argv:
        rest = argv[argv.index("run") + 1:]
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        if rest and rest[0].rsplit("/", 1)[-1] in ("leash", "leashd"):
            return rest[1:]
    return None


def operator_action(words: list[str], dynamic: list[bool], stdin_args: bool) -> str | None:
    """Why these leash words are an operator's action, or None when they only read."""
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _GLOBAL_VALUES else 1
    if index >= len(words):
        if stdin_args:
            return "xargs supplies leash's verb"
        quiet = any(w in ("--version", "-h", "--help") for w in words)
        return None if quiet else "the console (every operator action)"
    verb, rest = words[index], words[index + 1:]
    if dynamic[index] or any(dynamic[index + 1:index + 2]):
        return "a computed leash verb"
    if verb in OPERATOR_VERBS:
        return None if verb == "serve" and "--read-only" in rest else f"leash {verb}"
    subverbs = _OPERATOR_SUBVERBS.get(verb, set())
    sub = next((w for w in rest if not w.startswith("-")), None)
    if sub in subverbs:
        return f"leash {verb} {sub}"
    if verb == "halts" and sub == "config" and any(w.startswith("--") and w not in ("--json", "--home")
                                                   for w in rest):
        return "leash halts config (changing a condition)"
    if verb == "doctor" and "--repair" in rest:
        return "leash doctor --repair"
    if verb == "install" and "--uninstall" in rest:
        return "leash install --uninstall"
    if stdin_args and subverbs and sub is None:
        return f"xargs supplies the action of leash {verb}"
    return None


def _tmux_action(command, home: str, env: Mapping[str, str]) -> str | None:
    argv = command.argv
    sockets = {os.path.realpath(os.path.join(home, "tmux.sock"))}
    if env.get("LEASH_TMUX_SOCKET"):
        sockets.add(os.path.realpath(env["LEASH_TMUX_SOCKET"]))
    for index, word in enumerate(argv[1:], 1):
        if word == "rename" or any(len(word) >= 8 and action.startswith(word) for action in _TMUX_ACTIONS):
            return " ".join(argv[:index + 2])
        if word in ("-S", "-L") and index + 1 < len(argv):
            target = argv[index + 1]
            path = real(os.path.join(command.cwd or "/", target)) if word == "-S" else target
            if path in sockets or (word == "-S" and _under(path, os.path.realpath(home))):
                return f"tmux {word} {target} (leash's own tmux server)"
    return None


def _kennel_pid(home: str) -> str | None:
    try:
        with open(os.path.join(home, "kennel.json"), encoding="utf-8") as handle:
            pid = json.load(handle).get("pid")
        return str(int(pid)) if pid else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _signal_action(command, names: tuple[str, ...], home: str, kennel_pid: str | None) -> str | None:
    argv, program = command.argv, command.program
    shown = " ".join(argv)[:200]
    argv = [w for w in argv if len(w) <= 4096]
    mentions = [re.compile(rf"(?<![\w-]){re.escape(n.lower())}(?![\w-])") for n in names]
    about_leash = lambda text: any(m.search(text.lower()) for m in mentions) or home in text  # noqa: E731
    if program == "kill":
        words = argv[1:]
        if words and words[0].startswith("-") and words[0] != "--":
            words = words[2:] if words[0] in ("-s", "-n") else words[1:]
        words = words[1:] if words[:1] == ["--"] else words
        if "-1" in words:
            return f"{shown} (every process of the user, leash's among them)"
        if kennel_pid and kennel_pid in words:
            return f"{shown} (the kennel's pid, from kennel.json)"
        if any(about_leash(body) or "kennel" in body for body in command.substitutions):
            return f"{shown} (a pid read from leash's state)"
        return None
    if program in ("pkill", "killall", "skill"):
        operands = " ".join(argv[1:])
        if about_leash(operands) or any(w in ("-u", "--user", "-U") for w in argv[1:]):
            return shown
        return None
    if program in ("systemctl", "service", "launchctl", "supervisorctl") and \
            any(w in _SERVICE_STOPS for w in argv[1:]) and about_leash(" ".join(argv[1:])):
        return shown
    return None


def is_settings_file(path: str) -> bool:
    """A Claude Code settings file: ``.claude/settings*.json`` anywhere, or managed settings."""
    name = os.path.basename(path)
    if path in MANAGED_SETTINGS or (name.startswith("managed-settings") and name.endswith(".json")):
        return True
    return name.startswith("settings") and name.endswith(".json") and \
        os.path.basename(os.path.dirname(path)) == ".claude"


def _mentions_leash(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "leash" in handle.read(SETTINGS_READ_LIMIT)
    except OSError:
        return False


def _settings_files(ctx, cwd: str | None) -> list[str]:
    from leash.core.toolcall import git_toplevel

    candidates = list(MANAGED_SETTINGS) + [os.path.expanduser("~/.claude/settings.json")]
    for base in {place for place in (cwd, git_toplevel(cwd)) if place is not None}:
        candidates += [os.path.join(base, ".claude", n) for n in ("settings.json", "settings.local.json")]
    return [c for c in candidates if os.path.isfile(c)]


def _edit_disables_hooks(edit: dict) -> bool:
    old, new = edit["old"], edit["new"]
    if _DISABLE_ALL.search(new):
        return True
    if old.count("leash") > new.count("leash"):
        return True
    return '"hooks"' in old and '"hooks"' not in new


def _path_findings(ctx, call, home: str) -> list[str]:
    leash_runs = {id(c) for c in call.commands if leash_words(c) is not None}
    found: list[str] = []
    # Each (path, subtree, written by a command) once: the same file is often the
    # call's target, a file to change and a new file, and its findings are the same.
    paths = dict.fromkeys([(t.path, t.subtree, t.command is not None) for t in call.may_write
                           if id(t.command) not in leash_runs]
                          + [(ctx.norm(p), False, False) for p in ctx.files_to_change + ctx.new_files])
    real_home = call.real(home) if paths else home
    settings_held = None
    for path, subtree, by_command in paths:
        real_path = call.real(path) if len(path) <= PATH_MAX else os.path.normpath(path)
        if _under(real_path, real_home) or _under(path, home):
            found.append(f"writes {path} inside leash's home")
        elif subtree and (_under(real_home, real_path) or _under(home, path)):
            found.append(f"reaches {path}, which holds leash's home")
        elif by_command and (is_settings_file(path) or is_settings_file(real_path)):
            found.append(f"writes Claude Code settings {path}")
        elif subtree:
            if settings_held is None:
                settings_held = [s for s in _settings_files(ctx, call.cwd) if _mentions_leash(s)]
            found += [f"reaches {s}, which holds leash's hooks" for s in settings_held
                      if _under(real(s), real_path)]
    for edit in ctx.edits:
        if is_settings_file(ctx.norm(edit["file"])) and _edit_disables_hooks(edit):
            found.append(f"disables or removes leash's hooks in {edit['file']}")
    return found


def _command_findings(call, threshold, home: str, env: Mapping[str, str]) -> list[str]:
    names = tuple(threshold.get("supervisor_names") or DEFAULT_SUPERVISOR_NAMES)
    found: list[str] = []
    for command in call.commands:
        if not command.argv:
            continue
        words = leash_words(command)
        if words is not None:
            offset = len(command.argv) - len(words)
            action = operator_action(words, command.dynamic[offset:], command.stdin_args)
            if action:
                found.append(f"runs {action}")
        elif command.program.startswith("python") and "-c" in command.argv:
            code = " ".join(command.argv[command.argv.index("-c") + 1:])
            if any(a in code for a in LEASH_API) and any(w in code for w in LIFTING):
                found.append("runs Python that calls leash's operator actions")
        if command.program == "tmux":
            action = _tmux_action(command, home, env)
            if action:
                found.append(f"runs {action}")
        elif command.program in _KILLERS:
            action = _signal_action(command, names, home, _kennel_pid(home) if command.program == "kill" else None)
            if action:
                found.append(f"signals leash: {action}")
    return found


@condition("supervisor_tampering", "security", "critical")
def supervisor_tampering(ctx, threshold):
    """Fires when a tool call acts on leash itself: it writes, moves, deletes
    or opens for writing anything under the leash home (``~``, ``$HOME``,
    ``$LEASH_HOME``, relative paths, ``cd`` and symbolic links resolved; a
    program whose effect on a path is unknown counts as writing it), or a
    directory that holds the home; an Edit/Write of a file there; a write to
    Claude Code's settings (``.claude/settings*.json``,
    ``~/.claude/settings.json``, managed settings) — an edit that sets
    ``disableAllHooks``, removes leash's hook commands or the ``hooks`` key,
    any shell write to such a file, or removing a directory that holds a
    settings file with leash's hooks; runs an operator verb of leash in any
    form (``leash``, ``python -m leash.console.cli``, ``uv run leash``, behind
    ``xargs``, ``env``, ``sudo``, ``bash -c``, ``$(...)``; a verb that is
    computed or comes from xargs counts) — resume, release, stop, hands-off,
    halts ack/dismiss/escalate/config changes, warrant pardon/file, loop
    reset, doctor --repair, kennel, daemon, store, serve, install --uninstall,
    the console — while status, log, why and the listings are fine; Python
    code importing leash that calls a lifting action; tmux kill-server,
    kill-session or rename-session (any prefix tmux accepts), or tmux on
    leash's own socket; ``kill``/``pkill``/``killall``/``systemctl stop`` of a
    name in the threshold's ``supervisor_names`` (default leash, leashd,
    kennel, console.cli), of the kennel's pid from ``kennel.json``, of a pid
    read from leash's state, of every process (``kill -1``, ``pkill -u``). A
    command too large for the shell reader to read to its end fires too: it
    cannot be cleared. Only a human can lift the halt."""
    call = ctx.tool_call()
    home = ctx.home()
    env = call.env or os.environ  # (read only for tmux commands, which only a shell command has)
    found = _path_findings(ctx, call, home) + _command_findings(call, threshold, home, env)
    if call.incomplete:
        found.append(f"the command could not be read to its end ({call.incomplete}), so tampering "
                     "cannot be ruled out")
    if not found:
        return None
    shown = "; ".join(dict.fromkeys(found))
    return Finding(f"Tampering with the supervisor: {shown[:1500]}. A human must lift this stop",
                   context={"tampering": list(dict.fromkeys(found))[:20]})
