"""``leash install --check`` and what reads the same answer: whether leash's
hooks are wired as Claude Code will see them.

``check`` reads every settings layer Claude Code reads for a project and
says, a line per finding, what is missing, switched off (``disableAllHooks``),
pointing at a program that is not there, without a timeout, or — for an HTTP
hook — answered by a process that is not leashd or routed through a proxy.
``wiring`` sums it up in the words a session record keeps (``WIRED_GATE``,
``WIRED_READS`` of ``core.hook.install``), ``disabling_change`` says why a
settings edit switched leash off, and ``doctor_findings`` is ``check`` as
``leash doctor`` words it.

Failure: a settings file that cannot be read is a warning about that file;
nothing here raises or writes.
"""
from __future__ import annotations

import os
import shlex

from leash.core.base.agentfiles import settings_layers
from leash.core.hook.install import (
    HOOKS,
    MARK,
    VERBS_BY_EVENT,
    WIRED_GATE,
    WIRED_NOTHING,
    WIRED_READS,
    HookSpec,
    SettingsError,
    is_leash_hook,
    read_settings,
)


def wired_hooks(*, project: str | None = None) -> list[tuple[str, dict]]:
    """(event, hook) for every leash hook in the settings layers for ``project``."""
    found = []
    for path in settings_layers(project=project):
        try:
            data = read_settings(path)
        except SettingsError:
            continue
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") if isinstance(group, dict) else None) or []:
                    if is_leash_hook(hook) and event in VERBS_BY_EVENT:
                        found.append((event, hook))
    return found


def check(*, project: str | None = None) -> list[tuple[str, str, str]]:
    """(level, subject, message) for leash's wiring as Claude Code will see it:
    hooks missing, switched off by ``disableAllHooks`` in any layer, pointing at
    a binary that is not there, or without a timeout."""
    findings: list[tuple[str, str, str]] = []
    present: dict[str, list[dict]] = {}
    for path in settings_layers(project=project):
        try:
            data = read_settings(path)
        except SettingsError as exc:
            findings.append(("warn", path, str(exc)))
            continue
        if data.get("disableAllHooks") is True:
            findings.append(("fail", path, "disableAllHooks is true: no leash hook runs (remove it)"))
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") if isinstance(group, dict) else None) or []:
                    if is_leash_hook(hook):
                        present.setdefault(event, []).append({**hook, "_file": path})
    for spec in HOOKS:
        found = present.get(spec.event)
        if not found:
            findings.append(("fail", spec.event, f"leash's hook is not wired (leash install); "
                                                 f"{'calls are not judged' if spec.fail_closed else 'not recorded'}"))
            continue
        for hook in found:
            if hook.get("type") == "http":
                findings.extend(_http_findings(spec, hook))
                continue
            binary, entry = _program_of(hook["command"])
            if binary and not os.access(binary, os.X_OK):
                findings.append(("fail", spec.event, f"{hook['_file']}: runs {binary}, which is missing"))
            elif entry and not os.path.isfile(entry):
                findings.append(("fail", spec.event, f"{hook['_file']}: runs {entry}, which is missing"))
            if not isinstance(hook.get("timeout"), (int, float)):
                findings.append(("fail", spec.event, f"{hook['_file']}: no timeout"))
    if not any(level == "fail" for level, _, _ in findings):
        findings.append(("ok", "claude code", f"{len(HOOKS)} leash hooks wired with timeouts"))
    return findings


def _http_findings(spec: HookSpec, hook: dict) -> list[tuple[str, str, str]]:
    """An HTTP hook's: a timeout, and leashd listening on its port (nothing
    there: Claude Code's onFailure refuses every call until it is)."""
    from urllib.parse import urlsplit

    from leash.core.base.sockettable import UNKNOWN_PID, holder_of, listener_of

    found = []
    if not isinstance(hook.get("timeout"), (int, float)):
        found.append(("fail", spec.event, f"{hook['_file']}: no timeout"))
    port = urlsplit(str(hook.get("url"))).port or 0
    listening = listener_of(port) if port else None
    if listening is None:
        found.append(("warn", spec.event, f"{hook['_file']}: nothing listens on 127.0.0.1:{port}; every call is "
                                          "refused until `leash daemon` runs with [daemon] http_port"))
    elif (pid := holder_of(listening[1], listening[0])) != UNKNOWN_PID and not _is_leashd(pid):
        found.append(("fail", spec.event, f"{hook['_file']}: pid {pid} listens on 127.0.0.1:{port}, "
                                          "and it is not leash daemon: it would answer leash's hooks"))
    proxy = _proxy_in_the_way(os.environ)
    if proxy:
        found.append(("warn", spec.event, f"{proxy} is set and NO_PROXY does not name 127.0.0.1: Claude Code would "
                                          "send leash's HTTP hooks to the proxy, and every call and prompt is "
                                          "refused (add 127.0.0.1 to NO_PROXY)"))
    return found


def _proxy_in_the_way(env) -> str:
    """The proxy variable that would carry a loopback HTTP hook ("" when none would)."""
    named = next((name for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy") if env.get(name)), "")
    if not named:
        return ""
    exempt = {word.strip() for word in (env.get("NO_PROXY") or env.get("no_proxy") or "").split(",")}
    return "" if exempt & {"127.0.0.1", "localhost", "*"} else named


def _is_leashd(pid: int) -> bool:
    """Whether process ``pid`` runs ``leash daemon`` (its command line)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except OSError:
        return False
    return b"daemon" in words and any(b"leash" in word for word in words)


def _program_of(command: str) -> tuple[str, str]:
    """(program, script): what a hook command runs (behind ``timeout`` and its
    options), and the Python file it gives the interpreter ("" if none)."""
    try:
        words = shlex.split(command.replace(MARK, ""))
    except ValueError:
        return "", ""
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]  # VAR=value before the program
    if words and os.path.basename(words[0]) == "timeout":
        words = words[1:]
        while words and (words[0].startswith("-") or words[0].replace(".", "", 1).isdigit()):
            words = words[1:]
    if not words:
        return "", ""
    script = next((word for word in words[1:4] if word.endswith(".py")), "")
    return words[0], script


def is_wired(*, project: str | None = None) -> bool:
    """True when some settings layer for ``project`` wires leash's PreToolUse hook."""
    return not any(level == "fail" and subject == "PreToolUse" for level, subject, _ in check(project=project))




def wiring(*, project: str | None = None) -> str:
    """``WIRED_GATE`` and ``WIRED_READS`` (space-separated) for the hooks the
    settings for ``project`` wire without a fault, or ``WIRED_NOTHING``."""
    failing = {subject for level, subject, _ in check(project=project) if level == "fail"}
    words = [word for event, word in (("PreToolUse", WIRED_GATE), ("PostToolUse", WIRED_READS))
             if event not in failing]
    return " ".join(words) or WIRED_NOTHING


def disabling_change(path: str, *, project: str | None = None, was_wired: bool = False) -> str:
    """Why a settings file, as it now is, switches leash's hooks off ("" when it
    does not): ``disableAllHooks`` in it, or — when the settings wired leash's
    PreToolUse hook as the session started (``was_wired``) — that hook no
    longer wired in any layer Claude Code reads for ``project``. (Wiring that
    leash cannot see, such as a ``--settings`` file, is never judged removed.)"""
    if path:
        try:
            if read_settings(path).get("disableAllHooks") is True:
                return f"disableAllHooks in {path}"
        except SettingsError:
            pass  # a file Claude Code cannot parse either changes nothing
    if was_wired and not is_wired(project=project):
        return "leash's PreToolUse hook is no longer wired"
    return ""


def doctor_findings(*, project: str | None = None) -> list[tuple[str, str, str]]:
    """``check`` as ``leash doctor`` reports it: wiring that is absent everywhere
    is a warning (leash may be used without Claude Code); wiring that is there
    but switched off or broken is a failure (which home the hooks use:
    ``core.hook.wiring.home_findings``)."""
    findings = check(project=project)
    missing = [f for f in findings if f[0] == "fail" and "is not wired" in f[2]]
    if len(missing) == len(HOOKS):
        rest = [f for f in findings if f not in missing]
        findings = rest + [("warn", "claude code", "no leash hook is wired for this directory (leash install)")]
    return findings
