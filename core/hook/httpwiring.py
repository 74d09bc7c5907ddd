"""Claude Code's hooks over HTTP: the ``type: "http"`` entries ``leash install
--transport http`` writes, which Claude Code POSTs to leashd's loopback
listener (``core.daemon.httphooks``) instead of starting a process per call.

An entry is ``{"type": "http", "url": "http://127.0.0.1:PORT/leash-hook/VERB",
"timeout": N, "headers": {...}, "allowedEnvVars": [...], "onFailure":
"block"}``. The ``/leash-hook/`` path is leash's mark (as ``# leash-hook`` is a
command's): install, uninstall and ``--check`` know leash's entries by it.
The headers carry what the thin hook forwards from the agent's environment
(``FORWARDED_ENV``): Claude Code fills ``$NAME`` in a header value only for
the names ``allowedEnvVars`` lists, so leashd sees the agent's tmux pane,
home, user, project and leash's own settings as a command hook would.

SessionStart stays a command hook: Claude Code never sends it over HTTP, and
it runs once a session. Only a Claude Code that knows ``onFailure`` (2.1.295
and later) gets this wiring: an HTTP hook that fails (listener down, slow, a 500, garbage, a
connection closed early) is otherwise a non-blocking error, which would let
the call through. The status line stays a command.

Failure: nothing here reads or writes a file; ``http_entry`` is pure.
What the HTTP wiring cannot carry: ``LEASH_*`` names not in
``FORWARDED_ENV`` (a command hook forwards every one), and the hook's own pid
(leashd finds Claude Code's from the kernel's socket table instead).
"""
from __future__ import annotations

from leash.core.hook.hooktimes import deadlines
from leash.core.wire.hookevents import ON_FAILURE_BLOCK

MARK_PATH = "/leash-hook/"
# Events Claude Code never sends over HTTP (found with 2.1.197 and 2.1.332:
# tests/e2e/HTTP_HOOK_FACTS.md): the HTTP wiring keeps their command hook.
COMMAND_ONLY_EVENTS = frozenset({"SessionStart"})
LOOPBACK = "127.0.0.1"
ENV_HEADER_PREFIX = "X-Leash-Env-"
# The agent's environment leashd judges by: the thin hook's FORWARDED_ENV and
# the LEASH_* settings the hooks read.
FORWARDED_ENV = ("TMUX", "TMUX_PANE", "TMUX_TMPDIR", "HOME", "USER", "LOGNAME", "PWD", "CLAUDE_PROJECT_DIR",
                 "LEASH_ENTITY", "LEASH_SCOPE", "LEASH_ENVIRONMENT", "LEASH_PRODUCTION_APPROVED", "LEASH_TMUX_SOCKET",
                 "LEASH_TRIGGER_CHANNEL", "LEASH_TRIGGER_SESSION_KEY")


def hook_url(port: int, verb: str) -> str:
    return f"http://{LOOPBACK}:{int(port)}{MARK_PATH}{verb}"


def http_entry(spec, *, port: int, wait: float | None = None) -> dict:
    """The settings entry for hook ``spec`` (``install.HookSpec``) over HTTP to
    leashd's listener on ``port``: every gating event blocks on failure."""
    entry: dict = {"type": "http", "url": hook_url(port, spec.verb), "timeout": deadlines(spec.verb, wait)[1],
                   "headers": {f"{ENV_HEADER_PREFIX}{name}": f"${{{name}}}" for name in FORWARDED_ENV},
                   "allowedEnvVars": list(FORWARDED_ENV)}
    if spec.fail_closed:
        entry["onFailure"] = ON_FAILURE_BLOCK
    return entry


def is_leash_http_hook(hook: object) -> bool:
    """An HTTP entry leash wrote: its url is a loopback one under ``/leash-hook/``."""
    if not isinstance(hook, dict) or hook.get("type") != "http" or not isinstance(hook.get("url"), str):
        return False
    url = hook["url"]
    return url.startswith(f"http://{LOOPBACK}:") and MARK_PATH in url


def verb_of(path: str) -> str | None:
    """The hook verb a request path names (``/leash-hook/pre-tool-use``), or None."""
    if not path.startswith(MARK_PATH):
        return None
    verb = path[len(MARK_PATH):].split("?", 1)[0]
    return verb if verb and all(c.isalnum() or c == "-" for c in verb) else None


def env_of(headers) -> dict[str, str]:
    """The agent's environment as the headers carry it: only the forwarded
    names, and not those Claude Code left empty (unset in the agent)."""
    env = {}
    for name in FORWARDED_ENV:
        value = headers.get(f"{ENV_HEADER_PREFIX}{name}")
        if isinstance(value, str) and value and value != f"${{{name}}}":
            env[name] = value
    return env
