"""Running the real Codex CLI (npm ``@openai/codex``) headless in tests.

``install_codex(version)`` installs the package once into
``.cache/codex-cli/<version>`` of the repository (``latest`` is resolved with
``npm view``) and returns the native ``codex`` binary that the package's
platform dependency ships; it raises ``CodexUnavailable`` with one line saying
why when npm or its registry is out of reach.

``write_codex_config(codex_home, standin_url, hooks)`` writes a private
``config.toml`` (``CODEX_HOME``; no real user config is read or touched): the
stand-in as the model provider, a model Codex knows (so it offers
``apply_patch``), plugin sync, apps and analytics off, and the hooks, given in
Claude Code's settings shape ``{"PreToolUse": [{"matcher": ".*", "hooks":
[{"type": "command", "command": "...", "timeout": 10}]}]}``.

Codex runs a hook that is not managed (by ``/etc/codex/requirements.toml`` or
another admin source) only once its hash is trusted, and skips an untrusted one
silently. ``trust_hooks(codex_exe, codex_home)`` trusts them the way the CLI's
own clients do: it drives ``codex app-server`` over stdio JSON-RPC
(``initialize``, ``hooks/list`` for each hook's key and current hash,
``config/batchWrite`` of ``hooks.state.<key>.trusted_hash``) and checks with a
second ``hooks/list`` that every hook is trusted. ``hook_hash()`` computes the
same hash without the CLI (see tests/e2e/agents/CODEX_FACTS.md for what it covers).

``run_codex(exe, prompt, codex_home=..., cwd=...)`` runs ``codex exec --json``
with stdin from /dev/null in a closed environment (private HOME, CODEX_HOME and
TMPDIR; every proxy variable pointing at a loopback port so the CLI reaches no
other host), in a process group of its own that is killed when it ends or
overruns (``CodexError`` on overrun, with the output so far). A sandboxed run
makes an empty ``/tmp/codex-daemon-<uid>`` whatever TMPDIR says; ``run_codex``
removes it again when it was not there before.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from tests.support.e2e.jsonlines import json_objects
from tests.support.e2e.npm import NPM_TIMEOUT_SECONDS, npm_error, npm_install

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "codex-cli"  # one npm prefix per version below it
PACKAGE = "@openai/codex"
PINNED_VERSION = "0.169.0"
VERSION_ENV = "LEASH_E2E_CODEX_VERSION"
MODEL = "gpt-5.5"  # a model Codex 0.169 knows: an unknown one is offered no apply_patch
RUN_TIMEOUT_SECONDS = 90
APP_SERVER_TIMEOUT_SECONDS = 60
# Where every proxy variable points when no stand-in proxy is given: nothing
# listens there, so a reach for another host fails at once, on this machine.
CLOSED_PROXY = "http://127.0.0.1:9"
# The sandbox is bypassed by default: what is under test is the hooks, not the
# sandbox (its bundled bubblewrap does work here: ``-s workspace-write``), and a
# sandboxed run leaves SANDBOX_LEFTOVER behind. Without it ``codex exec`` asks no
# one: an escalation is refused (approval policy "never"), or with
# --approve-for-me goes to PermissionRequest hooks, then the automatic reviewer.
EXEC_ARGS = ("--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox")
# Event names as config.toml spells them, with the label the trust key and hash use.
EVENT_LABELS = {
    "PreModelRequest": "pre_model_request", "PostModelRequest": "post_model_request",
    "PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request", "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact", "PostCompact": "post_compact", "SessionStart": "session_start",
    "SessionEnd": "session_end", "UserPromptSubmit": "user_prompt_submit", "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop", "Stop": "stop", "Interrupt": "interrupt",
}
DEFAULT_HOOK_TIMEOUT_SECONDS = 600  # what Codex assumes (and hashes) when a hook names none
# A sandboxed run (not EXEC_ARGS: --sandbox, --approve-for-me) makes this empty
# folder whatever TMPDIR says; run_codex removes it again when it was not there
# before the run (two sandboxed runs at once may race on it: Codex makes it anew).
SANDBOX_LEFTOVER = Path(f"/tmp/codex-daemon-{os.getuid()}")


class CodexUnavailable(Exception):
    """The Codex CLI cannot be installed or run here; ``str()`` is one line."""


class CodexError(Exception):
    """The Codex CLI did not do what a helper needed (a failed app-server call, an overrun)."""


# ----------------------------------------------------------------- installing
def wanted_version() -> str:
    """The version asked for by ``LEASH_E2E_CODEX_VERSION`` (a number or ``latest``), else the pinned one."""
    return os.environ.get(VERSION_ENV, "").strip() or PINNED_VERSION


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise CodexUnavailable(f"npm is not installed, so {PACKAGE} cannot be installed")
    return npm


@cache
def resolve_version(wanted: str) -> str:
    """``wanted`` as a version number; a dist-tag such as ``latest`` is asked of the registry."""
    if wanted[:1].isdigit():
        return wanted
    try:
        done = subprocess.run([_npm(), "view", f"{PACKAGE}@{wanted}", "version", "--fetch-retries=1",
                               "--fetch-timeout=30000"], capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise CodexUnavailable(f"npm view {PACKAGE}@{wanted} took over {NPM_TIMEOUT_SECONDS} s "
                               "(is the npm registry reachable?)") from None
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise CodexUnavailable(f"npm view {PACKAGE}@{wanted} failed (is the npm registry reachable?): "
                               f"{npm_error(done.stderr)}")
    return words[-1].strip("'\"")  # a range matches several versions: the newest is last


def find_binary(folder: Path) -> Path | None:
    """The native ``codex`` in an npm prefix: the platform package's
    ``vendor/<target>/bin/codex`` (what ``bin/codex.js`` would exec)."""
    found = sorted(folder.glob("node_modules/@openai/codex-*/vendor/*/bin/codex"))
    found += sorted(folder.glob("node_modules/@openai/codex/vendor/*/bin/codex"))
    return next((path for path in found if os.access(path, os.X_OK)), None)


def binary_version(codex: Path) -> str | None:
    """``codex --version``'s number (``codex-cli 0.169.0``), or None when it does not run.
    Even this writes helper links into ``$CODEX_HOME/tmp``: a temporary one here."""
    with tempfile.TemporaryDirectory(prefix="codex-version-") as home:
        try:
            done = subprocess.run([str(codex), "--version"], capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL, env=dict(os.environ, HOME=home, CODEX_HOME=home))
        except (OSError, subprocess.TimeoutExpired):
            return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def install_codex(version: str | None = None) -> Path:
    """The ``codex`` binary of ``version`` (default: ``wanted_version()``),
    installed first if needed; one process installs at a time."""
    number = resolve_version(version or wanted_version())
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder = CACHE / number
        codex = find_binary(folder)
        if codex is not None and binary_version(codex) == number:
            return codex
        npm = _npm()  # before the folder is made: no empty folder is left when npm is missing
        failure = npm_install(npm, f"{PACKAGE}@{number}", folder)
        if failure is not None:
            raise CodexUnavailable(failure)
        codex = find_binary(folder)
        if codex is None or binary_version(codex) != number:
            raise CodexUnavailable(f"{PACKAGE}@{number} installed into {folder}, but no codex {number} runs there")
        return codex


# ----------------------------------------------------------------- config.toml
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def to_toml(table: dict, prefix: tuple[str, ...] = ()) -> str:
    """``table`` as TOML: its plain keys, then its tables, then its arrays of tables."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in table.items()
             if not isinstance(v, dict) and not _is_table_array(v)]
    out = "\n".join(lines) + ("\n" if lines else "")
    for name, value in table.items():
        path = (*prefix, name)
        if isinstance(value, dict):
            header = f"[{'.'.join(_key(part) for part in path)}]\n"
            out += "\n" + header + to_toml(value, path).lstrip("\n")
        elif _is_table_array(value):
            for item in value:
                out += f"\n[[{'.'.join(_key(part) for part in path)}]]\n" + to_toml(item, path).lstrip("\n")
    return out


def _merge(base: dict, extra: dict) -> dict:
    merged = dict(base)
    for name, value in extra.items():
        merged[name] = _merge(merged[name], value) if isinstance(value, dict) and isinstance(
            merged.get(name), dict) else value
    return merged


def config_path(codex_home: Path) -> Path:
    return Path(codex_home) / "config.toml"


def write_codex_config(codex_home: Path, standin_url: str, hooks: dict[str, list[dict]] | None = None, *,
                       model: str = MODEL, settings: dict | None = None,
                       trusted_projects: tuple[Path, ...] = ()) -> Path:
    """Write ``codex_home/config.toml`` (replacing it) and return its path.

    ``hooks`` maps an event (``PreToolUse``...) to matcher groups in Claude
    Code's shape; ``settings`` is merged over the rest (``{"features": {...}}``,
    ``"approval_policy"``...); ``trusted_projects`` get ``trust_level =
    "trusted"``, so Codex reads their ``.codex/config.toml``."""
    codex_home = Path(codex_home)
    codex_home.mkdir(parents=True, exist_ok=True)
    unknown = sorted(set(hooks or {}) - set(EVENT_LABELS))
    if unknown:
        raise ValueError(f"events Codex {PINNED_VERSION} does not have: {unknown}")
    config: dict[str, Any] = {
        "model": model,
        "model_provider": "standin",
        "model_providers": {"standin": {"name": "stand-in", "base_url": standin_url, "wire_api": "responses",
                                        "env_key": "OPENAI_API_KEY", "request_max_retries": 0,
                                        "stream_max_retries": 0}},
        "analytics": {"enabled": False},
        # plugin sync clones from github.com and apps reach chatgpt.com at startup
        "features": {"plugins": False, "apps": False, "remote_plugin": False},
    }
    if trusted_projects:
        config["projects"] = {str(Path(p).resolve()): {"trust_level": "trusted"} for p in trusted_projects}
    if hooks:
        config["hooks"] = {event: [dict(group) for group in groups] for event, groups in hooks.items()}
    config = _merge(config, settings or {})
    path = config_path(codex_home)
    path.write_text(to_toml(config))
    return path


# ----------------------------------------------------------------- trust
def hook_key(source: Path | str, event: str, group_index: int, handler_index: int) -> str:
    """The key Codex files a hook's state under: ``<config file>:<event label>:<group>:<handler>``."""
    return f"{source}:{EVENT_LABELS[event]}:{group_index}:{handler_index}"


def hook_hash(event: str, matcher: str | None, handler: dict) -> str:
    """The hash Codex trusts a command hook by, computed without the CLI.

    It is the sha256 of the compact, key-sorted JSON of the hook's normalized
    identity: the event label, the matcher, and the one handler with its
    ``type``, ``command``, ``timeout`` (600 when unset, at least 1), ``async``
    and ``statusMessage`` (when set). The config file, the hook's position and
    other hooks are not in it (they are in the key)."""
    normalized: dict[str, Any] = {"type": "command", "command": handler["command"],
                                  "timeout": max(1, int(handler.get("timeout", DEFAULT_HOOK_TIMEOUT_SECONDS))),
                                  "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    serialized = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(serialized.encode()).hexdigest()


def hook_states(codex_home: Path, hooks: dict[str, list[dict]]) -> dict[str, dict]:
    """``hooks.state`` entries that trust every command hook of ``hooks`` as
    ``write_codex_config`` writes them (computed, no CLI needed)."""
    source = config_path(codex_home).resolve()
    states = {}
    for event, groups in hooks.items():
        for group_index, group in enumerate(groups):
            for handler_index, handler in enumerate(group.get("hooks", [])):
                if handler.get("type", "command") == "command":
                    key = hook_key(source, event, group_index, handler_index)
                    states[key] = {"trusted_hash": hook_hash(event, group.get("matcher"), handler)}
    return states


class AppServer:
    """``codex app-server`` over stdio: newline-delimited JSON-RPC (no
    ``jsonrpc`` member needed). ``call`` waits for the answer to its id and
    skips the notifications in between; an error answer raises ``CodexError``."""

    def __init__(self, codex_exe: Path | str, env: dict[str, str], cwd: Path,
                 timeout: float = APP_SERVER_TIMEOUT_SECONDS):
        self.timeout = timeout
        self.proc = subprocess.Popen([str(codex_exe), "app-server"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        self.ids = iter(range(1, 1_000_000))

    @staticmethod
    def _pump(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line)
        sink(None)

    def notify(self, method: str, params: dict | None = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict | None = None) -> Any:
        number = next(self.ids)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": number, "method": method, "params": params or {}}) + "\n")
        self.proc.stdin.flush()
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                raise CodexError(f"codex app-server gave no answer to {method} in {self.timeout} s") from None
            if line is None:
                raise CodexError(f"codex app-server ended before answering {method}: "
                                 f"{''.join(str(s) for s in self.stderr if s)[-1000:]}")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") != number:
                continue
            if "error" in message:
                raise CodexError(f"codex app-server {method} failed: {message['error']}")
            return message.get("result")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _kill_group(self.proc.pid)
        self.proc.wait()

    def __enter__(self) -> AppServer:
        self.call("initialize", {"clientInfo": {"name": "leash-tests", "version": "1"}})
        self.notify("initialized")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def list_hooks(server: AppServer, cwd: Path) -> list[dict]:
    """Every hook Codex discovers for ``cwd`` (``hooks/list``); an error in
    the hook configuration raises ``CodexError`` (warnings, such as a timeout
    clamped to the event's limit, do not)."""
    result = server.call("hooks/list", {"cwds": [str(cwd)]})
    entries = (result or {}).get("data") or []
    errors = [str(error) for entry in entries for error in entry.get("errors") or []]
    if errors:
        raise CodexError(f"codex hooks/list reported errors: {errors}")
    return [hook for entry in entries for hook in entry.get("hooks") or []]


def trust_hooks(codex_exe: Path | str, codex_home: Path, *, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> list[dict]:
    """Trust every hook that is not managed, as the CLI's clients do, and
    return the hooks as ``hooks/list`` then reports them (all trusted or managed).
    ``cwd`` (default: ``codex_home``) decides which project layers are read."""
    codex_home = Path(codex_home)
    cwd = Path(cwd or codex_home)
    environment = codex_env(codex_home, **(env or {}))
    with AppServer(codex_exe, environment, cwd) as server:
        hooks = list_hooks(server, cwd)
        states = {hook["key"]: {"trusted_hash": hook["currentHash"]} for hook in hooks
                  if not hook.get("isManaged") and hook.get("trustStatus") != "trusted"}
        if states:
            server.call("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "value": states,
                                                         "mergeStrategy": "upsert"}]})
            hooks = list_hooks(server, cwd)
    untrusted = [hook["key"] for hook in hooks if hook.get("trustStatus") not in ("trusted", "managed")]
    if untrusted:
        raise CodexError(f"hooks still not trusted after config/batchWrite: {untrusted}")
    return hooks


# ----------------------------------------------------------------- running
def codex_env(codex_home: Path, *, proxy_url: str = CLOSED_PROXY, **extra: str) -> dict[str, str]:
    """A closed environment for the CLI: HOME and CODEX_HOME are ``codex_home``,
    TMPDIR a folder in it, a dummy API key, and every proxy variable at
    ``proxy_url`` (a loopback port) with only loopback exempt."""
    codex_home = Path(codex_home)
    tmp = codex_home / "process-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(codex_home),
           "CODEX_HOME": str(codex_home), "TMPDIR": str(tmp), "USER": os.environ.get("USER", "root"),
           "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TERM": "dumb", "NO_COLOR": "1",
           "OPENAI_API_KEY": "sk-standin"}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        env[name] = proxy_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    env.update(extra)
    return env


class CodexRun(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    session_id: str | None

    def events(self) -> list[dict]:
        """The ``--json`` events (JSON lines of stdout)."""
        return json_objects(self.stdout)

    def items(self, kind: str | None = None) -> list[dict]:
        """The items of ``item.completed`` events (of type ``kind`` when given)."""
        return [event["item"] for event in self.events() if event.get("type") == "item.completed"
                and isinstance(event.get("item"), dict) and (kind is None or event["item"].get("type") == kind)]

    def __repr__(self) -> str:
        return (f"CodexRun(returncode={self.returncode}, session_id={self.session_id}, "
                f"stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})")


def session_id_of(stdout: str) -> str | None:
    """The ``thread_id`` of the ``thread.started`` event: Codex's session id."""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "thread.started":
            return event.get("thread_id")
    return None


def run_codex(exe: Path | str, prompt: str, *, codex_home: Path, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = RUN_TIMEOUT_SECONDS, args: tuple[str, ...] = EXEC_ARGS,
              proxy_url: str = CLOSED_PROXY) -> CodexRun:
    """``codex exec ARGS PROMPT`` in ``cwd``; ``env`` is laid over ``codex_env``.
    The process group is killed afterwards whatever happened; an overrun raises
    ``CodexError`` with what the CLI printed."""
    environment = codex_env(Path(codex_home), proxy_url=proxy_url, **(env or {}))
    argv = [str(exe), "exec", *args, prompt]
    leftover_before = SANDBOX_LEFTOVER.exists()
    proc = subprocess.Popen(argv, cwd=cwd, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise CodexError(f"codex exec overran {timeout} s: stdout={out[-2000:]!r} stderr={err[-2000:]!r}") from None
    finally:
        _kill_group(proc.pid)
        if not leftover_before:
            remove_sandbox_leftover()
    return CodexRun(proc.returncode, out, err, session_id_of(out))


def remove_sandbox_leftover() -> None:
    """Remove ``SANDBOX_LEFTOVER`` when it is empty (``rmdir``; anything else is left alone)."""
    try:
        SANDBOX_LEFTOVER.rmdir()
    except OSError:
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
