"""``config.toml``: every setting leash reads, with its default and its type.

The file is optional and every key has a default. It is read with ``tomllib``.
A file that does not parse, or a known key with a value of the wrong type,
cannot be used: ``ConfigError``, whose message is one line naming the file,
the line and the key, so the CLI can print it as it is. A key leash does not
know is not an error: the file is still understood, the key is ignored and
``config_warnings(home)`` names it (file, line, key and, for a near miss, the
known key meant: ``timeout`` -> ``timeouts``). So are the bindings of
``[console.keys]`` the console cannot use (``core.base.consolekeys``): the
console's alone, they never make the file unusable.

The line is the one tomllib names for a file that does not parse, else the
line the key is written on: under its table, as a dotted key or in an inline
table. A file is parsed once per process while its bytes stay the same
(``load_config`` keeps the result; each caller gets its own copy), so the
hook path pays for one parse however many modules read it.
``config_problem(home)`` says why a file cannot be used, and
``strictest_config()`` is what is used meanwhile: every setting that could
loosen a rule at its strictest, never the defaults, never a value of the
broken file. The hooks ask ``config_problem`` themselves (the gate then holds
every call for an operator); ``load_config`` raises, except while an
operator's command or leashd holds ``strictest_when_broken()``: it then
answers with ``strictest_config()``, so the operator is never locked out by
the file (the command says so on stderr: ``config_notices``).

Tables whose names are chosen by the operator (``[loop.NAME]``,
``[reply_guard.channels.NAME]``) are validated against a per-entry schema,
and so are the ``[[notify.route]]`` tables (with what each route's kind needs)
and ``[budget]`` (``core.base.budgetconfig``).
"""
from __future__ import annotations

import json
import os

from leash.core.base.configread import ConfigError as ConfigError
from leash.core.base.configread import ask_rule_problem as ask_rule_problem
from leash.core.base.configread import parse
from leash.core.base.configread import store_url_problem as store_url_problem
from leash.core.base.notifyconfig import NOTIFY_EVENTS as NOTIFY_EVENTS
from leash.core.base.notifyconfig import SEVERITY_ORDER as SEVERITY_ORDER
from leash.core.base.statefile import JSONObject

CONFIG_NAME = "config.toml"
HOST_VARIABLE = "LEASH_HOST"  # this host's name, before [daemon] host


DEFAULTS: JSONObject = {
    # read_only_tools: Claude Code's current tools (Bash that only looks passes too);
    # end_turn_on_halt: a session held by a halt ends its turn as a stopped one does.
    "gate": {"read_only_tools": ["Read"], "end_turn_on_halt": True},
    "halts": {"record_high": True},
    "hands_off": {"default_hours": 24},
    "warrants": {
        "dogs": 5,
        "timeouts": [60, 120, 240],
        "poll_seconds": 1.0,
        "pardon_on_activity": False,
    },
    "loop": {},
    "reply_guard": {"channels": {}},
    "tmux": {"socket": ""},
    "console": {"keys": {}},
    # mac_key_file: the key whose macs prove a line was written by leashd ("" = <home>/run/log.key).
    "acklog": {"anchor_command": [], "mac_key_file": ""},
    "sessions": {"forget_after_days": 7},
    # leashd: sockets ("" = <home>/run/agent.sock, operator.sock), who may use
    # the operator socket (user and group names; the daemon's own user always
    # may), the host's name ("" = the machine's hostname), the sockets' modes, and
    # the loopback port of Claude Code's HTTP hooks (0 = none; leash install --transport http).
    "daemon": {"agent_socket": "", "operator_socket": "", "operators": [], "host": "", "agent_socket_mode": "0600",
               "kennel": True, "http_port": 0},
    # The shared store: "" = this home's files. A password never sits in the
    # url: it comes from PGPASSWORD, PGPASSFILE or password_file. owner_url: the
    # schema's owner (migrations, store copy, doctor --repair); "" = url's role.
    "store": {"url": "", "owner_url": "", "password_file": "", "offline_grace_s": 10, "offline": "closed"},
    # Notifications from leashd (core.notify); "route" holds the [[notify.route]] tables (see [notify] below).
    "notify": {"waiting_after_s": 120, "remind_after_s": 600, "route": []},
    # Approvals (core.approvals): calls that always need a human ("Bash(git push*)", "path:deploy/**",
    # "tool:mcp__*"), how long one waits, and what its timeout decides ("ask": PermissionRequest falls
    # back to Claude Code's own dialog; an ask rule's call is denied).
    "approvals": {"ask": [], "timeout_s": 300, "on_timeout": "deny"},
    # Spend caps, accounts and price overrides (core.base.budgetconfig; see [budget] below).
    "budget": {"cap": [], "accounts": {}, "prices": {}},
    # leash serve: the address the operator reaches it at from afar (their own proxy or tunnel to
    # 127.0.0.1), for the View link of an approval's notification ("" = none).
    "serve": {"public_url": ""},
}

_SCHEMA: dict[str, dict[str, object]] = {
    "gate": {"read_only_tools": ("list[str]",), "end_turn_on_halt": ("bool",)},
    "halts": {"record_high": ("bool",)},
    "hands_off": {"default_hours": ("hours",)},
    "warrants": {
        "dogs": ("positive int",),
        "timeouts": ("list[positive number]",),
        "poll_seconds": ("positive number",),
        "pardon_on_activity": ("bool",),
    },
    "tmux": {"socket": ("str",)},
    "acklog": {"anchor_command": ("list[str]",), "mac_key_file": ("str",)},
    "sessions": {"forget_after_days": ("positive number",)},
    "daemon": {"agent_socket": ("str",), "operator_socket": ("str",), "operators": ("list[str]",), "host": ("str",),
               "agent_socket_mode": ("file mode",), "kennel": ("bool",), "http_port": ("port",)},
    "store": {"url": ("store url",), "owner_url": ("store url",), "password_file": ("str",),
              "offline_grace_s": ("non-negative number",),
              "offline": ("offline policy",)},
    "notify": {"waiting_after_s": ("positive number",), "remind_after_s": ("positive number",)},
    "approvals": {"ask": ("ask rules",), "timeout_s": ("positive number",), "on_timeout": ("on-timeout policy",)},
    "serve": {"public_url": ("str",)},
}

def host_name(home, environ=None) -> str:
    """This host's name: ``LEASH_HOST``, else ``[daemon] host``, else the
    machine's hostname (also when config.toml cannot be used: a shared store,
    where the name matters, is never opened then — ``core.store.select``
    raises first — and a home of files only shows it)."""
    import socket

    environ = os.environ if environ is None else environ
    if environ.get(HOST_VARIABLE):
        return environ[HOST_VARIABLE]
    try:
        named = load_config(home)["daemon"]["host"]
    except ConfigError:
        named = ""
    return named or socket.gethostname()



# Parsed files, by path: (the bytes parsed, the merged config or None, the
# error's message, the warnings). A process parses a file once however many
# modules read it (the hook path reads it from the gate, the halt engine, the
# session registry...), and again only when its bytes change.
_PARSED: dict[str, tuple[bytes, JSONObject | None, str, list[str]]] = {}
_PARSED_KEPT = 16

# What the hooks use when config.toml cannot be used: the defaults, with every
# setting that could loosen a rule at its strictest. A broken file must never
# let through what the valid one would hold: no tool counts as read-only while
# a session is halted (only commands that only look pass), a halt ends the
# turn, a high halt is recorded, an approval's timeout denies, an offline
# shared store denies. (The approvals floor — every call needs an operator
# while the file is broken — is the gate's: ``core.hook.hooks``.)
STRICTEST_OVERRIDES: JSONObject = {
    "gate": {"read_only_tools": [], "end_turn_on_halt": True},
    "halts": {"record_high": True},
    "approvals": {"on_timeout": "deny"},
    "store": {"offline": "closed"},
}


def strictest_config() -> JSONObject:
    """``DEFAULTS`` with ``STRICTEST_OVERRIDES`` (a fresh copy)."""
    merged = json.loads(json.dumps(DEFAULTS))
    for section, values in STRICTEST_OVERRIDES.items():
        merged[section].update(json.loads(json.dumps(values)))
    return merged


class _FloorHold:
    """One holder of ``strictest_when_broken()``; a context manager, or ``release()`` it."""

    def __enter__(self) -> _FloorHold:
        _FLOOR_HOLDERS.append(self)
        return self

    def __exit__(self, *_exc) -> None:
        self.release()

    def release(self) -> None:
        if self in _FLOOR_HOLDERS:  # list.append and list.remove: safe from any thread
            _FLOOR_HOLDERS.remove(self)


_FLOOR_HOLDERS: list[_FloorHold] = []


def strictest_when_broken() -> _FloorHold:
    """While held (``with strictest_when_broken():``, or entered and later
    ``release()``d), ``load_config`` answers a file that cannot be used with
    ``strictest_config()`` instead of raising: what an operator's command, the
    console and leashd run on, so a broken file never locks the operator out
    and no value of it is used. Process-wide (the console's threads, leashd's
    connections): the hooks' own process never holds it, and the gate asks
    ``config_problem`` itself wherever it runs."""
    return _FloorHold()


def config_path(home) -> str:
    return os.path.join(os.fspath(home), CONFIG_NAME)


def config_problem(home) -> str | None:
    """Why ``<home>/config.toml`` cannot be used (``ConfigError``'s one line:
    ``<path>:<line>: ...``), or None when it can (or there is none). Parsed
    once per process while the file does not change (``load_config``)."""
    try:
        _loaded(home)
    except ConfigError as exc:
        return str(exc)
    return None


def config_warnings(home) -> list[str]:
    """What a usable ``<home>/config.toml`` says that leash ignores, one line
    each (``<path>:<line>: key 'warrants.timeout': unknown setting, ignored
    (did you mean 'timeouts'?)``); [] when there is none, or the file cannot
    be used (``config_problem`` says why)."""
    try:
        _loaded(home)
    except ConfigError:
        return []
    kept = _PARSED.get(config_path(home))
    return list(kept[3]) if kept is not None else []


BROKEN_EFFECT = ("leash runs on the strictest settings meanwhile: the hooks hold every tool call for an operator "
                 "until it is mended; leash doctor")


def config_notices(home) -> list[str]:
    """The lines an operator is told about ``<home>/config.toml`` (a command
    on stderr, leashd at start, the console as a notice): the one problem of
    a file that cannot be used and what leash does meanwhile, else each
    warning; [] for a file with nothing to say."""
    problem = config_problem(home)
    if problem is not None:
        return [f"config.toml cannot be used: {problem} ({BROKEN_EFFECT})"]
    return config_warnings(home)


def may_name_store(home) -> bool:
    """Whether ``<home>/config.toml``, when it cannot be used, may name the
    shared store (any ``store`` in its text, or it cannot be read): the home's
    files are then not known to be the state, and nothing falls back to them."""
    try:
        with open(config_path(home), "rb") as handle:
            return b"store" in handle.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True


def load_config(home) -> JSONObject:
    """Defaults overlaid with ``<home>/config.toml`` (its unknown keys left
    out: ``config_warnings``); raises ConfigError for a file that cannot be
    used, unless ``strictest_when_broken()`` is held: ``strictest_config()``."""
    try:
        return json.loads(json.dumps(_loaded(home)))  # each caller its own (deep) copy, without importing copy
    except ConfigError:
        if _FLOOR_HOLDERS:
            return strictest_config()
        raise


def judged_config(home) -> tuple[JSONObject, str | None]:
    """What the hooks judge by, in one read of the file: (its config, None),
    or (``strictest_config()``, why it cannot be used), whoever holds
    ``strictest_when_broken()``."""
    try:
        return json.loads(json.dumps(_loaded(home))), None
    except ConfigError as exc:
        return strictest_config(), str(exc)


def _loaded(home) -> JSONObject:
    """The merged config as kept for this process (never to be changed); raises ConfigError."""
    path = config_path(home)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return DEFAULTS
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    kept = _PARSED.get(path)
    if kept is None or kept[0] != raw:
        try:
            kept = (raw, *parse(path, raw, DEFAULTS, _SCHEMA))
        except ConfigError as exc:
            kept = (raw, None, str(exc), [])
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[path] = kept
    if kept[1] is None:
        raise ConfigError(kept[2])
    return kept[1]
