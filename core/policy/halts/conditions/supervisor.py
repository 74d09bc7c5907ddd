"""Supervisor tampering: an agent acting on leash itself.

Reads the tool call as the shell reader sees it (``ctx.tool_call()``), so
``bash -c``, ``$(...)``, ``xargs``, ``env``, ``sudo`` and ``cd`` change nothing.
Paths are compared after ``os.path.realpath`` (symbolic links resolved). The
parts live beside it: ``core.halts.leashverbs`` (leash's operator verbs),
``core.halts.leashsignals`` (tmux and signals), ``core.halts.guardedreads``
(reads of the serve token, the store's password, another process's
environment, the operator socket) and ``core.halts.settingsguard`` (Claude Code's
settings and leash's installed files). A file that cannot be read only means
less is known: the rule never raises.
"""
from __future__ import annotations

import os

from leash.core.policy.halts.conditions.registry import Finding, condition
from leash.core.policy.halts.leashsignals import KILLERS, signal_action, tmux_action
from leash.core.policy.halts.leashverbs import leash_words, runs_operator_verb

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_SUPERVISOR_NAMES = ("leash", "leashd", "kennel", "leash.console.cli")
MANAGED_SETTINGS = ("/etc/claude-code/managed-settings.json",
                    "/Library/Application Support/ClaudeCode/managed-settings.json")
SETTINGS_READ_LIMIT = 256 * 1024
PATH_MAX = 4096
# Tools whose change is judged by its text (``ctx.edits``), not as an unseen write.
FILE_EDITING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
DESCRIPTION_CHARS = 1500
CONTEXT_FINDINGS = 20


def real(path: str) -> str:
    """``os.path.realpath`` (``core.base.realpaths``), for paths the system could
    hold (longer ones cannot exist)."""
    from leash.core.base.realpaths import realpath

    return realpath(path) if len(path) <= PATH_MAX else os.path.normpath(path)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


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


def _settings_files(cwd: str | None) -> list[str]:
    from leash.core.base.project import git_toplevel

    candidates = list(MANAGED_SETTINGS) + [os.path.expanduser("~/.claude/settings.json")]
    for base in {place for place in (cwd, git_toplevel(cwd)) if place is not None}:
        candidates += [os.path.join(base, ".claude", n) for n in ("settings.json", "settings.local.json")]
    return [c for c in candidates if os.path.isfile(c)]


# ------------------------------------------------------------ writes: the home, settings files
def _written(ctx, call) -> list[tuple[str, bool, bool]]:
    """(path, subtree, unjudged) once each: what the call may write, where
    ``unjudged`` says leash cannot judge the change (a command, an MCP tool)."""
    leash_runs = {id(c) for c in call.commands if leash_words(c) is not None}
    return list(dict.fromkeys([(t.path, t.subtree, t.program not in FILE_EDITING_TOOLS) for t in call.may_write
                               if id(t.command) not in leash_runs]
                              + [(ctx.norm(p), False, False) for p in ctx.files_to_change + ctx.new_files]))


def _write_finding(path: str, subtree: bool, unjudged: bool, home: tuple[str, str], real_of) -> str | None:
    home_path, real_home = home
    real_path = real_of(path) if len(path) <= PATH_MAX else os.path.normpath(path)
    if _under(real_path, real_home) or _under(path, home_path):
        return f"writes {path} inside leash's home"
    if subtree and (_under(real_home, real_path) or _under(home_path, path)):
        return f"reaches {path}, which holds leash's home"
    if unjudged and (is_settings_file(path) or is_settings_file(real_path)):
        return f"writes Claude Code settings {path}"
    if unjudged:
        from leash.core.policy.halts.agentsettings import agent_settings_file

        what = agent_settings_file(path) or agent_settings_file(real_path)
        if what:
            return f"writes {what} {path}"
    return None


def _path_findings(ctx, call, home: str) -> list[str]:
    paths = _written(ctx, call)
    place = (home, call.real(home) if paths else home)
    found = [f for path, subtree, unjudged in paths if (f := _write_finding(path, subtree, unjudged, place, call.real))]
    trees = [call.real(path) for path, subtree, _ in paths if subtree]
    if trees and not found:
        held = [s for s in _settings_files(call.cwd) if _mentions_leash(s)]
        found += [f"reaches {s}, which holds leash's hooks" for s in held if any(_under(real(s), t) for t in trees)]
    return found


def _settings_findings(ctx) -> list[str]:
    from leash.core.policy.halts.agentsettings import agent_settings_file, edit_findings
    from leash.core.policy.halts.settingsguard import settings_change

    by_file: dict[str, list[dict]] = {}
    others: dict[str, list[dict]] = {}
    for edit in ctx.edits:
        path = ctx.norm(edit["file"])
        if is_settings_file(path):
            by_file.setdefault(path, []).append(edit)
        elif agent_settings_file(path):
            others.setdefault(path, []).append(edit)
    patch, cwd = ctx.patch, ctx.cwd
    for path in map(ctx.norm, ctx.target_files if patch is not None else ()):  # a patch's moves too
        if is_settings_file(path):
            by_file.setdefault(path, [])
        elif agent_settings_file(path):
            others.setdefault(path, [])
    return ([f"{why} in {path}" for path, edits in by_file.items()
             for why in settings_change(edits, path, patch=patch, cwd=cwd)]
            + [why for path, edits in others.items() for why in edit_findings(path, edits, patch=patch, cwd=cwd)])


# ------------------------------------------------------------ leash's installed files
def _may_change_code(target) -> bool:
    from leash.core.policy.argroles import CODE_FLAGS

    return target.role == "write" or (target.role == "touch" and target.command is not None
                                      and target.command.program in CODE_FLAGS)


def _installed_findings(ctx, call, env: Mapping[str, str]) -> list[str]:
    targets = [t for t in call.targets if _may_change_code(t)]
    if not targets:
        return []
    from leash.core.policy.halts.settingsguard import installed_places

    guarded = installed_places(call.project(ctx.cwd, env), env)
    found = []
    for target in targets:
        path, real_path = target.path, call.real(target.path) if len(target.path) <= PATH_MAX else target.path
        for place, real_place, what in guarded:
            if _under(path, place) or _under(real_path, real_place):
                found.append(f"writes {what} ({path})")
            elif target.subtree and target.role == "write" and (_under(place, path) or _under(real_place, real_path)):
                found.append(f"reaches {path}, which holds {what}")
    return found


# ------------------------------------------------------------ reads, commands
def _read_findings(call, home: str, env: Mapping[str, str]) -> list[str]:
    if not call.targets and not call.commands:
        return []
    from leash.core.policy.halts.guardedreads import Guarded, reads

    return reads(call, Guarded.of(home, env))


def _command_findings(call, threshold, home: str, env: Mapping[str, str]) -> list[str]:
    names = tuple(threshold.get("supervisor_names") or DEFAULT_SUPERVISOR_NAMES)
    found: list[str] = []
    for command in call.commands:
        if not command.argv:
            continue
        action = runs_operator_verb(command) or _python_lifting(command)
        if action:
            found.append(f"runs {action}")
        if command.program == "tmux":
            action = tmux_action(command, home, env)
            found += [f"runs {action}"] if action else []
        elif command.program in KILLERS:
            action = signal_action(command, names, home)
            found += [f"signals leash: {action}"] if action else []
        elif command.program == "codex":
            from leash.core.policy.halts.agentsettings import codex_switch

            switch = codex_switch(command.argv)
            found += [f"runs Codex CLI with its hooks off ({switch})"] if switch else []
    return found


# Substrings (plain ``in`` tests: one fast pass over any amount of code).
LEASH_API = ("leash.console.cli", "leash.console", "leash.core", "leash.core.state.stop", "leash.core.state.handsoff",
             "leash.core.state.halts", "leash.core.hook.gate", "leash.core.views.fleet", "leash.core.state.acklog")
LIFTING = ("resume", "release", "acknowledge", "dismiss", "escalate", "pardon", "unlock", "lift", "clear",
           "reset", "repair", "uninstall", "hands_off", "update_halt_config", "approvals", "answer")


def _python_lifting(command) -> str | None:
    if not command.program.startswith("python") or "-c" not in command.argv or leash_words(command) is not None:
        return None
    code = " ".join(command.argv[command.argv.index("-c") + 1:])
    if any(a in code for a in LEASH_API) and any(w in code for w in LIFTING):
        return "Python that calls leash's operator actions"
    return None


@condition("supervisor_tampering", "security", "critical")
def supervisor_tampering(ctx, threshold):
    """Fires when a tool call acts on leash itself: it writes, moves, deletes
    or opens for writing anything under the leash home (``~``, ``$HOME``,
    ``$LEASH_HOME``, relative paths, ``cd`` and symbolic links resolved; a
    program whose effect on a path is unknown counts as writing it), or a
    directory that holds the home; an Edit/Write of a file there; a change to
    Claude Code's settings (``.claude/settings*.json``,
    ``~/.claude/settings.json``, managed settings) judged by the file after
    the change against before — it touches ``env``, sets
    ``disableAllHooks``, removes, changes or adds a leash hook (its command,
    matcher, timeout) — and any shell or MCP write to such a file, or
    removing a directory that holds a settings file with leash's hooks; a
    write to leash's installed code, the interpreter its hooks run or their
    entry file; a read of leash's serve token, the store's password file
    (``[store] password_file``, ``PGPASSFILE``, ``~/.pgpass``), another
    process's environment (``/proc/<pid>/environ``, ``ps e``) or a use of the
    operator socket (``run/operator.sock``, ``[daemon] operator_socket``,
    ``LEASH_OPERATOR_SOCKET``); runs an operator verb of leash in any form
    (``leash``, ``python -m leash.console.cli``, ``uv run leash``, behind
    ``xargs``, ``env``, ``sudo``, ``bash -c``, ``$(...)``, through a program
    word that resolves to leash, ``"$(which leash)"``, or that cannot be
    resolved at all; a verb that is computed or comes from xargs counts) —
    resume, release, stop, hands-off, halts ack/dismiss/escalate/config
    changes, warrant pardon/file, loop reset, doctor --repair, kennel,
    daemon, store, serve, install --uninstall, the console — while status,
    log, why and the listings are fine; Python code importing leash that
    calls a lifting action; tmux kill-server, kill-session or rename-session
    (any prefix tmux accepts), or tmux on leash's own socket;
    ``kill``/``pkill``/``killall``/``systemctl stop`` of a name in the
    threshold's ``supervisor_names`` (default leash, leashd, kennel,
    console.cli), of the kennel's pid from ``kennel.json``, of a pid read from
    leash's state, of every process (``kill -1``, ``pkill -u``). A command too
    large for the shell reader to read to its end fires too: it cannot be
    cleared. Only a human can lift the halt."""
    call = ctx.tool_call()
    home = ctx.home()
    env = call.env or os.environ
    found = (_path_findings(ctx, call, home) + _settings_findings(ctx) + _installed_findings(ctx, call, env)
             + _read_findings(call, home, env) + _command_findings(call, threshold, home, env))
    if call.incomplete:
        found.append(f"the command could not be read to its end ({call.incomplete}), so tampering "
                     "cannot be ruled out")
    if not found:
        return None
    shown = "; ".join(dict.fromkeys(found))
    return Finding(f"Tampering with the supervisor: {shown[:DESCRIPTION_CHARS]}. A human must lift this stop",
                   context={"tampering": list(dict.fromkeys(found))[:CONTEXT_FINDINGS]})
