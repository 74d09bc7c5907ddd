"""leash's hooks in Codex CLI's config (``leash install --agent codex``).

The user's ``$CODEX_HOME/config.toml`` (``~/.codex``), a project's
``.codex/config.toml``, or, as root, the managed ``/etc/codex/requirements.toml``.
A hook that is not managed runs only when the user's config holds its trusted
hash (``hooks.state."<file>:<event>:<group>:<n>"``): ``install_codex`` writes
the hash Codex computes (sha256 of the hook's compact, key-sorted identity;
SessionEnd's timeout clamped to 3 s as Codex clamps it) and ``check_codex``
fails when Codex would skip a hook or hooks are switched off. leash writes its
part of a TOML file as one block between two marker comments and rewrites only
that block; the managed file also pins ``[features] hooks = true``.

Failure: a file that is not TOML, broken markers, or leash's hooks outside its
block raise ``SettingsError`` naming the file, and nothing is written; what
leash writes is parsed back before it is written. ``LEASH_CODEX_REQUIREMENTS``
moves the managed file (tests).
"""
from __future__ import annotations

import hashlib
import json
import os

from leash.core.hook.agentcommon import agent_command, hook_seconds, program_findings, table, write_text
from leash.core.hook.install import SettingsError, hook_runner, is_leash_hook
from leash.core.wire.hookevents import CODEX, events_of

CODEX_REQUIREMENTS = "/etc/codex/requirements.toml"
CODEX_REQUIREMENTS_ENV = "LEASH_CODEX_REQUIREMENTS"
CODEX_MATCH_ALL = "*"
BLOCK_BEGIN = "# >>> leash hooks (written by `leash install --agent codex`; it rewrites this block)"
BLOCK_END = "# <<< leash hooks"
# Codex's name of each event in a hook's key and hash (``hooks/list``).
CODEX_EVENT_LABELS = {"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use",
                      "PermissionRequest": "permission_request", "UserPromptSubmit": "user_prompt_submit",
                      "SessionStart": "session_start", "SessionEnd": "session_end", "Stop": "stop"}
CODEX_DEFAULT_TIMEOUT_SECONDS = 600  # what Codex hashes when a hook names none
# Codex clamps these events' hook timeouts (and hashes the clamped value).
CODEX_CLAMPED_TIMEOUT_SECONDS = {"SessionEnd": 3, "Interrupt": 3}


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
    lines: list[str] = []
    trusted: dict[str, str] = {}
    existing = table(others.get("hooks"))
    for spec in events_of(CODEX):
        handler = {"type": "command", "command": agent_command(runner, spec, wait=wait,
                                                               socket=socket, home=home),
                   "timeout": min(hook_seconds(spec, wait), CODEX_CLAMPED_TIMEOUT_SECONDS.get(spec.event, 1 << 30))}
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
    write_text(path, wanted)
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
    hooks = table(config.get("hooks"))
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
    user_hooks = table(parsed[user_config].get("hooks"))
    states = table(user_hooks.get("state"))
    pinned = table(parsed[layers[0][0]].get("features")).get("hooks") is True
    wired: dict[str, list[str]] = {}
    for path, managed in layers:
        config = parsed[path]
        if table(config.get("features")).get("hooks") is False and not pinned:
            findings.append(("fail", "codex", f"{path}: [features] hooks = false: Codex CLI runs no hooks"))
        for event, group, index, matcher, handler in _leash_handlers(config):
            subject = f"codex {event}"
            if event not in CODEX_EVENT_LABELS:
                continue
            if managed:
                wired.setdefault(event, []).append(path)
                continue
            key = f"{os.path.abspath(path)}:{CODEX_EVENT_LABELS[event]}:{group}:{index}"
            state = table(states.get(key))
            if state.get("trusted_hash") != codex_hook_hash(event, matcher, handler):
                findings.append(("fail", subject, f"{path}: leash's hook is not trusted: Codex CLI skips it "
                                                  "(`leash install --agent codex` trusts it)"))
                continue
            wired.setdefault(event, []).append(path)
            findings.extend(program_findings(subject, [handler]))
    for spec in events_of(CODEX):
        if spec.event not in wired and not any(s == f"codex {spec.event}" for _, s, _ in findings):
            findings.append(("fail", f"codex {spec.event}", "leash's hook is missing: run `leash install --agent "
                                                            "codex`"))
    if not any(level == "fail" for level, _, _ in findings):
        findings.append(("ok", "codex", f"{len(events_of(CODEX))} leash hooks wired and trusted"))
    return findings
