"""leash's hooks in Gemini CLI's and Codex CLI's settings: written, checked and
made to run (``leash install --agent gemini|codex``).

Each CLI gets a hook for every row of its part of the one table of hook events
(``core.wire.hookevents``). A gating hook's command ends so that any failure of
leash's own — a crash, its own deadline, an unreachable leashd — is a refusal
in the CLI's form, because both CLIs let the call run on exit 1, on exit 2
with nothing on stderr, and on their own timeout::

    T -k 2 25 PYTHON -P hookentry.py hook codex-pre-tool-use \\
        || { s=$?; [ $s -eq 2 ] || echo "leash: …" >&2; exit 2; } # leash-hook

Gemini CLI (settings JSON): the project's ``.gemini/settings.json``, the
user's ``~/.gemini/settings.json`` or the system's
``/etc/gemini-cli/settings.json``; timeouts in milliseconds. ``install`` also
sets ``hooksConfig.enabled`` in the file it writes and, for a project, trusts
the folder in ``~/.gemini/trustedFolders.json`` (an untrusted folder runs no
hooks: headless Gemini exits 55 there).

Codex CLI (TOML): the user's ``$CODEX_HOME/config.toml`` (``~/.codex``) or a
project's ``.codex/config.toml``, or, as root, the managed
``/etc/codex/requirements.toml``. A hook that is not managed runs only when the
user's config holds its trusted hash (``hooks.state."<file>:<event>:<group>:<n>"``),
so ``install`` writes the hashes Codex computes (sha256 of the hook's compact,
key-sorted identity) and ``check`` fails when Codex would skip a hook. leash
writes its part of a TOML file as one block between two marker comments and
rewrites only that block: other hooks and settings stay as they are. The
managed file also pins ``[features] hooks = true``, which no project can then
switch off.

Failure: a file leash cannot read or would have to judge (not JSON, not TOML,
leash's hooks outside its block) raises ``SettingsError`` naming the file and
nothing is written. Every write is atomic. ``LEASH_GEMINI_SYSTEM_SETTINGS``
and ``LEASH_CODEX_REQUIREMENTS`` move the system files (tests).
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
from typing import Any

from leash.core.base.statefile import write_bytes_atomic
from leash.core.hook.hooktimes import deadlines, pinned_wait
from leash.core.hook.install import MARK, SettingsError, hook_runner, is_leash_hook, read_settings, timeout_program
from leash.core.wire.hookevents import CODEX, GEMINI, events_of

GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"
GEMINI_SYSTEM_ENV = "LEASH_GEMINI_SYSTEM_SETTINGS"
CODEX_REQUIREMENTS = "/etc/codex/requirements.toml"
CODEX_REQUIREMENTS_ENV = "LEASH_CODEX_REQUIREMENTS"
GEMINI_MATCH_ALL = ".*"
CODEX_MATCH_ALL = "*"
TRUST_FOLDER = "TRUST_FOLDER"
BLOCK_BEGIN = "# >>> leash hooks (written by `leash install --agent codex`; it rewrites this block)"
BLOCK_END = "# <<< leash hooks"
# Codex's name of each event in a hook's key and hash (``hooks/list``).
CODEX_EVENT_LABELS = {"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use",
                      "PermissionRequest": "permission_request", "UserPromptSubmit": "user_prompt_submit",
                      "SessionStart": "session_start", "SessionEnd": "session_end", "Stop": "stop"}
CODEX_DEFAULT_TIMEOUT_SECONDS = 600  # what Codex hashes when a hook names none
# Codex clamps these events' hook timeouts (and hashes the clamped value).
CODEX_CLAMPED_TIMEOUT_SECONDS = {"SessionEnd": 3, "Interrupt": 3}


# ------------------------------------------------------------------ commands
def agent_command(runner: list[str], spec, *, timeout: str | None = None, wait: float | None = None,
                  socket: str | None = None, home: str | None = None) -> str:
    """The shell command of ``spec``'s hook; a gating one refuses on any failure.
    ``home`` pins the state home in the command: Gemini CLI hands a hook only
    an allowlist of the environment when ``GITHUB_SHA`` is set, and an agent's
    environment is the agent's to change."""
    run = f"{shlex.join(runner)} hook {spec.verb}"
    if home:
        run = f"{shlex.join(runner)} --home {shlex.quote(home)} hook {spec.verb}"
    gating = spec.refusal is not None
    if gating:
        run = f"{shlex.quote(timeout or timeout_program())} -k 2 {deadlines(spec.verb, wait)[0]} {run}"
    run = f"{pinned_wait(spec.verb, wait)}{run}"
    if socket:
        from leash.core.base.wellknown import AGENT_SOCKET_ENV

        run = f"{AGENT_SOCKET_ENV}={shlex.quote(socket)} {run}"
    if gating:
        refused = f"leash: hook {spec.verb} could not run (exit $s): the call is refused"
        run = f'{run} || {{ s=$?; [ $s -eq 2 ] || echo "{refused}" >&2; exit 2; }}'
    return f"{run} {MARK}"


def _hook_seconds(spec, wait: float | None) -> int:
    return deadlines(spec.verb, wait)[1]


# ------------------------------------------------------------------ Gemini CLI
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
    hooks: dict[str, Any] = {event: _without_leash(groups) for event, groups in (settings.get("hooks") or {}).items()}
    if not uninstall:
        timeout = timeout_program()
        for spec in events_of(GEMINI):
            entry = {"type": "command", "name": f"leash {spec.verb}", "timeout": _hook_seconds(spec, wait) * 1000,
                     "command": agent_command(runner, spec, timeout=timeout, wait=wait, socket=socket, home=home)}
            group = {"matcher": GEMINI_MATCH_ALL, "hooks": [entry]} if spec.matcher else {"hooks": [entry]}
            hooks.setdefault(spec.event, []).append(group)
        result["hooksConfig"] = {**(settings.get("hooksConfig") or {}), "enabled": True}
    hooks = {event: groups for event, groups in hooks.items() if groups}
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def _without_leash(groups: Any) -> Any:
    if not isinstance(groups, list):
        return groups  # not leash's to judge: kept as it is
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            others = [hook for hook in group["hooks"] if not is_leash_hook(hook)]
            if not others and group["hooks"]:
                continue
            group = {**group, "hooks": others}
        kept.append(group)
    return kept


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
        _write_json(path, wanted)
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
    _write_json(path, trusted)
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
        config = _table(data.get("hooksConfig"))
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
            findings.extend(_program_findings(f"gemini {spec.event}", wired[spec.event]))
    if project and not gemini_folder_trusted(project):
        findings.append(("fail", "gemini", f"{os.path.abspath(project)} is not a trusted folder: Gemini CLI runs no "
                                           "hooks there (`leash install --agent gemini --project` trusts it)"))
    if not any(level == "fail" for level, _, _ in findings):
        findings.append(("ok", "gemini", f"{len(events_of(GEMINI))} leash hooks wired, enabled, folder trusted"))
    return findings


# ------------------------------------------------------------------ Codex CLI
def codex_config_path(*, project: str | None = None, user: bool = False, managed: bool = False) -> str:
    if managed:
        return os.environ.get(CODEX_REQUIREMENTS_ENV) or CODEX_REQUIREMENTS
    if user:
        return os.path.join(codex_home(), "config.toml")
    return os.path.join(os.path.abspath(project or "."), ".codex", "config.toml")


def codex_home() -> str:
    return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def codex_hook_hash(event: str, matcher: str | None, handler: dict) -> str:
    """The hash Codex trusts a command hook by: sha256 of the compact, key-sorted
    JSON of its event label, matcher and the handler's type, command, timeout,
    async and statusMessage."""
    timeout = max(1, int(handler.get("timeout", CODEX_DEFAULT_TIMEOUT_SECONDS)))
    timeout = min(timeout, CODEX_CLAMPED_TIMEOUT_SECONDS.get(event, timeout))
    normalized: dict = {"type": "command", "command": handler["command"], "timeout": timeout,
                        "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict = {"event_name": CODEX_EVENT_LABELS[event], "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    serialized = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(serialized.encode()).hexdigest()


def _toml(value) -> str:
    """A TOML string or integer (JSON's string escapes are TOML's basic string's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _parse_toml(path: str, text: str) -> dict:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc}); leash leaves it as it is") from None


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read ({exc})") from None


def _outside_block(path: str, text: str) -> str:
    """``text`` without leash's block (SettingsError when the markers are broken)."""
    begin, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
    if begin < 0 and end < 0:
        return text
    if begin < 0 or end < begin:
        raise SettingsError(f"{path}: leash's block markers are broken; fix or remove them and run again")
    tail = text[end + len(BLOCK_END):]
    return text[:begin].rstrip("\n") + ("\n" + tail.lstrip("\n") if tail.strip() else "\n")


def codex_hook_lines(path: str, others: dict, runner: list[str], *, wait: float | None = None,
                     socket: str | None = None, home: str | None = None) -> tuple[list[str], dict[str, str]]:
    """leash's hook tables for the Codex file ``path`` whose other content is
    ``others``, and {key: hash} that trusts each."""
    timeout = timeout_program()
    lines: list[str] = []
    trusted: dict[str, str] = {}
    existing = _table(others.get("hooks"))
    for spec in events_of(CODEX):
        handler = {"type": "command", "command": agent_command(runner, spec, timeout=timeout, wait=wait,
                                                               socket=socket, home=home),
                   "timeout": min(_hook_seconds(spec, wait), CODEX_CLAMPED_TIMEOUT_SECONDS.get(spec.event, 1 << 30))}
        matcher = CODEX_MATCH_ALL if spec.matcher else None
        lines.append(f"[[hooks.{spec.event}]]")
        if matcher is not None:
            lines.append(f"matcher = {_toml(matcher)}")
        lines.append(f"[[hooks.{spec.event}.hooks]]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in handler.items())
        group = len(existing.get(spec.event) or [])  # after the groups already there
        key = f"{os.path.abspath(path)}:{CODEX_EVENT_LABELS[spec.event]}:{group}:0"
        trusted[key] = codex_hook_hash(spec.event, matcher, handler)
    return lines, trusted


def _block_parts(path: str, text: str) -> tuple[list[str], dict[str, str]]:
    """leash's block in ``text``: its hook lines, and the trusted hashes it holds."""
    begin = text.find(BLOCK_BEGIN)
    if begin < 0:
        return [], {}
    block = text[begin:text.find(BLOCK_END)].splitlines()[1:]
    cut = next((n for n, line in enumerate(block) if line.startswith("[hooks.state.")), len(block))
    parsed = _parse_toml(path, "\n".join(block[cut:]))
    states = (parsed.get("hooks") or {}).get("state") or {}
    return block[:cut], {key: value.get("trusted_hash", "") for key, value in states.items() if isinstance(value, dict)}


def _write_block(path: str, text: str, rest: str, lines: list[str]) -> bool:
    """``rest`` with leash's block of ``lines`` after it; True when the file changed."""
    block = "\n".join([BLOCK_BEGIN, *lines, BLOCK_END]) + "\n" if lines else ""
    wanted = (rest.rstrip("\n") + "\n" + ("\n" if block else "") if rest.strip() else "") + block
    _parse_toml(path, wanted)  # what leash writes must read back
    if wanted == text:
        return False
    _write_text(path, wanted)
    return True


def _state_lines(states: dict[str, str]) -> list[str]:
    return [line for key, digest in sorted(states.items())
            for line in (f"[hooks.state.{_toml(key)}]", f"trusted_hash = {_toml(digest)}")]


def install_codex(path: str, runner: list[str] | None = None, *, managed: bool = False, uninstall: bool = False,
                  wait: float | None = None, socket: str | None = None, home: str | None = None) -> list[str]:
    """Write leash's block into the Codex file ``path`` and trust its hooks in
    the user's config (a managed file's hooks need no trust); the files that changed."""
    text = _read_text(path)
    rest = _outside_block(path, text)
    others = _parse_toml(path, rest)
    if _leash_handlers(others):
        raise SettingsError(f"{path}: leash's hooks stand outside its block (rewritten by another program?); "
                            "remove them and run `leash install --agent codex` again")
    user_config = codex_config_path(user=True)
    own_keys = f"{os.path.abspath(path)}:"
    _, states = _block_parts(path, text)
    states = {key: digest for key, digest in states.items() if not key.startswith(own_keys)}
    lines: list[str] = []
    trusted: dict[str, str] = {}
    if not uninstall:
        lines, trusted = codex_hook_lines(path, others, runner or hook_runner(), wait=wait, socket=socket, home=home)
        if managed and "features" not in others:
            lines += ["[features]", "hooks = true"]  # no project can switch the managed hooks off
    changed = []
    if path == user_config:
        lines += _state_lines({**states, **trusted})
    if _write_block(path, text, rest, lines):
        changed.append(path)
    if not managed and path != user_config and _trust_in_user_config(user_config, own_keys, trusted):
        changed.append(user_config)
    return changed


def _trust_in_user_config(user_config: str, own_keys: str, trusted: dict[str, str]) -> bool:
    """The hashes of another file's hooks (a project's), in the user's config:
    where Codex looks them up."""
    text = _read_text(user_config)
    rest = _outside_block(user_config, text)
    hook_lines, states = _block_parts(user_config, text)
    states = {key: digest for key, digest in states.items() if not key.startswith(own_keys)}
    return _write_block(user_config, text, rest, hook_lines + _state_lines({**states, **trusted}))


def _leash_handlers(config: dict) -> list[tuple[str, int, int, str | None, dict]]:
    """(event, group index, handler index, matcher, handler) of every leash hook in ``config``."""
    found = []
    hooks = _table(config.get("hooks"))
    for event, groups in hooks.items():
        if event == "state" or not isinstance(groups, list):
            continue
        for group_index, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_leash_hook(handler):
                    found.append((event, group_index, handler_index, group.get("matcher"), handler))
    return found


def check_codex(*, project: str | None = None) -> list[tuple[str, str, str]]:
    """(level, subject, message) for leash's wiring as Codex CLI will see it:
    each hook present, trusted (or managed), and hooks not switched off."""
    findings: list[tuple[str, str, str]] = []
    user_config = codex_config_path(user=True)
    states: dict = {}
    layers = [(codex_config_path(managed=True), True), (user_config, False)]
    if project:
        layers.append((codex_config_path(project=project), False))
    parsed: dict[str, dict] = {}
    for path, _ in layers:
        try:
            parsed[path] = _parse_toml(path, _read_text(path))
        except SettingsError as exc:
            findings.append(("fail", "codex", str(exc)))
            parsed[path] = {}
    user_hooks = _table(parsed[user_config].get("hooks"))
    states = _table(user_hooks.get("state"))
    pinned = _table(parsed[layers[0][0]].get("features")).get("hooks") is True
    wired: dict[str, list[str]] = {}
    for path, managed in layers:
        config = parsed[path]
        if _table(config.get("features")).get("hooks") is False and not pinned:
            findings.append(("fail", "codex", f"{path}: [features] hooks = false: Codex CLI runs no hooks"))
        for event, group, index, matcher, handler in _leash_handlers(config):
            subject = f"codex {event}"
            if event not in CODEX_EVENT_LABELS:
                continue
            if managed:
                wired.setdefault(event, []).append(path)
                continue
            key = f"{os.path.abspath(path)}:{CODEX_EVENT_LABELS[event]}:{group}:{index}"
            state = _table(states.get(key))
            if state.get("trusted_hash") != codex_hook_hash(event, matcher, handler):
                findings.append(("fail", subject, f"{path}: leash's hook is not trusted: Codex CLI skips it "
                                                  "(`leash install --agent codex` trusts it)"))
                continue
            wired.setdefault(event, []).append(path)
            findings.extend(_program_findings(subject, [handler]))
    for spec in events_of(CODEX):
        if spec.event not in wired and not any(s == f"codex {spec.event}" for _, s, _ in findings):
            findings.append(("fail", f"codex {spec.event}", "leash's hook is missing: run `leash install --agent "
                                                            "codex`"))
    if not any(level == "fail" for level, _, _ in findings):
        findings.append(("ok", "codex", f"{len(events_of(CODEX))} leash hooks wired and trusted"))
    return findings


# ------------------------------------------------------------------ shared
def _program_findings(subject: str, hooks: list[dict]) -> list[tuple[str, str, str]]:
    """A hook whose interpreter or entry file is gone can only fail (which refuses, but every call)."""
    found = []
    for hook in hooks:
        words = shlex.split(hook.get("command", "").split(" || ")[0], comments=True)
        for word in words:
            if word.endswith(("hookentry.py", "/python", "/python3")) and os.path.isabs(word) \
                    and not os.path.exists(word):
                found.append(("fail", subject, f"runs {word}, which is missing: run `leash install` again"))
    return found


def _table(value: object) -> dict:
    """``value`` when it is a JSON object or TOML table, else an empty one."""
    return value if isinstance(value, dict) else {}


def _write_json(path: str, data: dict) -> None:
    _write_text(path, json.dumps(data, indent=2) + "\n")


def _write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    write_bytes_atomic(path, text.encode())
    os.chmod(path, mode)


def wiring(cli: str, *, project: str | None = None) -> str:
    """``install.wiring``'s answer for a session of ``cli``: whether its CLI's
    settings wire leash's gate (``WIRED_GATE``) and the hook that reports what
    each call read (``WIRED_READS``) without a fault, or ``WIRED_NOTHING``."""
    from leash.core.hook.install import WIRED_GATE, WIRED_NOTHING, WIRED_READS
    from leash.core.hook.install import wiring as claude_wiring

    if cli not in (GEMINI, CODEX):
        return claude_wiring(project=project)
    if cli == GEMINI:
        findings, gate, reads = check_gemini(project=project), "gemini BeforeTool", "gemini AfterTool"
    else:
        findings, gate, reads = check_codex(project=project), "codex PreToolUse", "codex PostToolUse"
    failing = {subject for level, subject, _ in findings if level == "fail"}
    if cli in failing:  # the CLI runs no hook at all (switched off, folder untrusted)
        return WIRED_NOTHING
    words = [word for subject, word in ((gate, WIRED_GATE), (reads, WIRED_READS)) if subject not in failing]
    return " ".join(words) or WIRED_NOTHING
