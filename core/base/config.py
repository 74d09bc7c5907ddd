"""``config.toml``: every setting leash reads, with its default and its type.

The file is optional and every key has a default. It is read with ``tomllib``;
a file that does not parse, a key that leash does not know, or a value of the
wrong type raises ``ConfigError`` whose message is one line naming the file,
the line and the key, so the CLI can print it as it is.

The line is the one tomllib names for a file that does not parse, else the
line the key is written on: under its table, as a dotted key or in an inline
table. A file is parsed once per process while its bytes stay the same
(``load_config`` keeps the result; each caller gets its own copy), so the
hook path pays for one parse however many modules read it.
``config_problem(home)`` says why a file cannot be used, and
``strictest_config()`` is what the hooks use meanwhile: every setting that
could loosen a rule at its strictest, never the defaults.

Tables whose names are chosen by the operator (``[loop.NAME]``,
``[reply_guard.channels.NAME]``) are validated against a per-entry schema,
and so are the ``[[notify.route]]`` tables (with what each route's kind needs).
"""
from __future__ import annotations

import json
import os
import re

from leash.core.base.hours import HOURS_RULE, hours_problem
from leash.core.base.statefile import JSONObject

CONFIG_NAME = "config.toml"
HOST_VARIABLE = "LEASH_HOST"  # this host's name, before [daemon] host

# (type check, description) for each leaf; a tuple of types means any of them.
_NUMBER = (int, float)

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
    # may), the host's name ("" = the machine's hostname), and the sockets' modes.
    "daemon": {"agent_socket": "", "operator_socket": "", "operators": [], "host": "", "agent_socket_mode": "0600",
               "kennel": True},
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
               "agent_socket_mode": ("file mode",), "kennel": ("bool",)},
    "store": {"url": ("store url",), "owner_url": ("store url",), "password_file": ("str",),
              "offline_grace_s": ("non-negative number",),
              "offline": ("offline policy",)},
    "notify": {"waiting_after_s": ("positive number",), "remind_after_s": ("positive number",)},
    "approvals": {"ask": ("ask rules",), "timeout_s": ("positive number",), "on_timeout": ("on-timeout policy",)},
}

# Tables of operator-named entries: section -> (sub-table path, entry schema).
LOOP_ENTRY = {
    "max_restarts": ("int",),
    "window_seconds": ("positive number",),
    "max_gap_seconds": ("non-negative number",),
}
CHANNEL_ENTRY = {"needs_reply": ("list[str]",), "send_hint": ("str",)}


class ConfigError(Exception):
    """A config file leash cannot use; ``str()`` is the one-line message."""


_KIND_SAID = {  # kinds whose rule reads better in words than by name
    "hours": HOURS_RULE,
    "file mode": 'a file mode in octal such as "0600" or "0666"',
    "store url": ('"" or a postgresql:// url without a password (the password comes from PGPASSWORD, '
                  'PGPASSFILE or [store] password_file)'),
    "offline policy": '"closed" or "last-known"',
    "ask rules": 'a list of "Tool(glob)", "path:glob" or "tool:glob" strings',
    "on-timeout policy": '"deny" or "ask"',
}


_NEVER_ECHOED = {"store url"}  # it may hold a password: an error never repeats it


# Kinds checked by a rule of their own (a kind per line keeps ``_check`` short).
_SPECIAL_CHECKS = {
    "store url": lambda value: isinstance(value, str) and (value == "" or store_url_problem(value) is None),
    "offline policy": lambda value: value in ("closed", "last-known"),
    "on-timeout policy": lambda value: value in ("deny", "ask"),
    "ask rules": lambda value: isinstance(value, list) and all(ask_rule_problem(rule) is None for rule in value),
}


def _check(kind: str, value: object) -> bool:
    number = value if isinstance(value, _NUMBER) and not isinstance(value, bool) else None
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "positive int":
        return isinstance(number, int) and number > 0
    if kind == "positive number":
        return number is not None and number > 0
    if kind == "hours":
        return hours_problem(value) is None
    if kind == "non-negative number":
        return number is not None and number >= 0
    special = _SPECIAL_CHECKS.get(kind)
    if special is not None:
        return special(value)
    if kind == "file mode":
        return isinstance(value, str) and re.fullmatch(r"0?[0-7]{3}", value) is not None
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "list[positive number]":
        return isinstance(value, list) and bool(value) and all(_check("positive number", v) for v in value)
    raise AssertionError(kind)


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


def ask_rule_problem(rule: object) -> str | None:
    """Why ``rule`` is not an ``[approvals] ask`` rule (``core.approvals.rules``), or None."""
    from leash.core.base.askrules import parse_rule

    try:
        parse_rule(rule)
    except ValueError as exc:
        return str(exc)
    return None


def store_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name the shared store, or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return "is not a url"
    if parts.scheme not in ("postgresql", "postgres"):
        return "is not a postgresql:// url"
    if parts.password is not None or "password=" in parts.query:
        return "holds a password (give it in PGPASSWORD, PGPASSFILE or [store] password_file)"
    return None


def _key_parts(text: str) -> list[str]:
    """A TOML key (``a.b``, ``"a b".c``, ``'x'``) split at its dots, quotes off."""
    parts, current, quote = [], "", ""
    for char in text.strip():
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [part for part in parts if part]


_KEY_PART = r"(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')"  # a bare, "basic" or 'literal' key
_HEADER = re.compile(r"^\s*\[\[?\s*((?:[^\]\"']|\"[^\"]*\"|'[^']*')+?)\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")


def _line_of(text: str, table: str, key: str) -> int:
    """The line where ``key`` is set inside ``[table]`` (1-based; 0 when it
    cannot be found): under its table's header, as a dotted key
    (``gate.read_only_tools = ...``) or inside an inline table
    (``gate = {read_only_tools = ...}``: the line that opens it)."""
    wanted = _key_parts(f"{table}.{key}" if table else key)
    current: list[str] = []
    near = 0  # the closest line found short of the key itself: its table, or an inline table holding it
    for number, line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        found = _HEADER.match(line)
        if found:
            current = _key_parts(found.group(1))
            if current == wanted:
                return number
            if current and wanted[:len(current)] == current and not near:
                near = number
            continue
        found = _ASSIGN.match(line)
        if not found:
            continue
        full = current + _key_parts(found.group(1))
        if full == wanted:
            return number
        if full and wanted[:len(full)] == full:
            near = number  # an inline table (or a value) that holds the key
    return near


def _decode_error(path: str, text: str, exc: Exception) -> ConfigError:
    message = str(exc)
    lines = text.splitlines()
    found = re.search(r"at line (\d+)", message)
    if found:
        line = int(found.group(1))
    else:  # "at end of document": blame the last assignment, the one left open
        line = max((n for n, t in enumerate(lines, 1) if "=" in t), default=len(lines))
    reason = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", message)
    reason = _DECODE_HINTS.get(reason, reason)
    key = _key_at(lines, line)
    where = f"{path}:{line}" if line else str(path)
    return ConfigError(f"{where}: key '{key}': {reason}" if key else f"{where}: {reason}")


def _key_at(lines: list[str], line: int) -> str:
    """The dotted key set on ``line`` (its table included), or its table header."""
    if not 0 < line <= len(lines):
        return ""
    table = ""
    for source in lines[:line - 1]:
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]", source)
        if header:
            table = header.group(1).replace(" ", "")
    source = lines[line - 1]
    header = re.match(r"^\s*\[+\s*([^\]]*)", source)
    if header:
        return header.group(1).strip()
    left = source.split("=", 1)[0].strip() if "=" in source else source.strip()
    return f"{table}.{left}" if table and left else left


def _bad(path: str, text: str, table: str, key: str, problem: str) -> ConfigError:
    line = _line_of(text, table, key)
    dotted = f"{table}.{key}" if table else key
    where = f"{path}:{line}" if line else str(path)
    return ConfigError(f"{where}: key '{dotted}': {problem}")


def _validate_entries(path, text, table, entries, schema, merged_into):
    for key, value in entries.items():
        if key not in schema:
            raise _bad(path, text, table, key, "unknown setting")
        (kind,) = schema[key]
        if not _check(kind, value):
            said = "" if kind in _NEVER_ECHOED else f", got {value!r}"
            raise _bad(path, text, table, key, f"must be {_KIND_SAID.get(kind, kind)}{said}{_why_not(kind, value)}")
        merged_into[key] = value


def _why_not(kind: str, value: object) -> str:
    """What is wrong with the first bad rule of a list of ask rules ("" for other kinds)."""
    if kind != "ask rules" or not isinstance(value, list):
        return ""
    problems = [problem for problem in map(ask_rule_problem, value) if problem]
    return f" ({problems[0]})" if problems else ""


# Parsed files, by path: (the bytes parsed, the merged config or the error's
# message). A process parses a file once however many modules read it (the
# hook path reads it from the gate, the halt engine, the session registry...),
# and again only when its bytes change.
_PARSED: dict[str, tuple[bytes, JSONObject | None, str]] = {}
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


def load_config(home) -> JSONObject:
    """Defaults overlaid with ``<home>/config.toml``; raises ConfigError."""
    return json.loads(json.dumps(_loaded(home)))  # each caller its own (deep) copy, without importing copy


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
            kept = (raw, _parse(path, raw), "")
        except ConfigError as exc:
            kept = (raw, None, str(exc))
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[path] = kept
    if kept[1] is None:
        raise ConfigError(kept[2])
    return kept[1]


_DECODE_HINTS = {  # tomllib's words, and what usually causes them
    "Invalid value": "Invalid value (a string needs quotes; a boolean is true or false)",
}


def _parse(path: str, raw: bytes) -> JSONObject:
    merged = json.loads(json.dumps(DEFAULTS))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text") from None
    text = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark some editors write
    import tomllib  # only when there is a file to parse

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _decode_error(path, text, exc) from None

    for section, body in data.items():
        if section not in DEFAULTS:
            raise _bad(path, text, "", section, "unknown section")
        if not isinstance(body, dict):
            raise _bad(path, text, "", section, "must be a table")
        if section == "loop":
            for name, entry in body.items():
                if not isinstance(entry, dict):
                    raise _bad(path, text, "loop", name, "must be a table [loop.NAME]")
                merged["loop"][name] = {}
                _validate_entries(path, text, f"loop.{name}", entry, LOOP_ENTRY, merged["loop"][name])
        elif section == "reply_guard":
            for key, channels in body.items():
                if key != "channels" or not isinstance(channels, dict):
                    raise _bad(path, text, "reply_guard", key, "only [reply_guard.channels.NAME] tables are known")
                for name, entry in channels.items():
                    if not isinstance(entry, dict):
                        raise _bad(path, text, "reply_guard.channels", name, "must be a table")
                    merged["reply_guard"]["channels"][name] = {}
                    _validate_entries(
                        path, text, f"reply_guard.channels.{name}", entry, CHANNEL_ENTRY,
                        merged["reply_guard"]["channels"][name],
                    )
        elif section == "console":
            for key, value in body.items():
                if key != "keys" or not isinstance(value, dict):
                    raise _bad(path, text, "console", key, "only [console.keys] is known")
                for action, binding in value.items():
                    if not isinstance(binding, str) or not binding:
                        raise _bad(path, text, "console.keys", action, "must be a key name string")
                    merged["console"]["keys"][action] = binding
        elif section == "notify":
            _validate_notify(path, text, body, merged["notify"])
        else:
            _validate_entries(path, text, section, body, _SCHEMA[section], merged[section])
    return merged


# ---------------------------------------------------------------- [notify]
# The [[notify.route]] tables: each entry's keys and defaults, then what its kind needs.
SEVERITY_ORDER = ("low", "medium", "high", "critical")  # core.halts.store.SEVERITIES, lowest first
NOTIFY_EVENTS = ("approval", "halt", "waiting", "warrant", "breaker", "offline")
ROUTE_KINDS = ("webhook", "ntfy", "slack", "command", "desktop")
ROUTE_ENTRY = {"kind": "str", "url": "str", "argv": "list[str]", "events": "list[str]", "min_severity": "str",
               "rate_per_minute": "positive int", "timeout_s": "positive number", "name": "str"}
ROUTE_DEFAULTS = {"url": "", "min_severity": "high", "rate_per_minute": 10, "timeout_s": 10, "name": ""}


def _validate_notify(path: str, text: str, body: dict, merged: dict) -> None:
    routes = body.get("route", [])
    _validate_entries(path, text, "notify", {k: v for k, v in body.items() if k != "route"}, _SCHEMA["notify"],
                      merged)
    if not isinstance(routes, list):
        raise _bad(path, text, "notify", "route", "must be [[notify.route]] tables")
    merged["route"] = [_notify_route(path, text, number, entry) for number, entry in enumerate(routes, 1)]


def _notify_route(path: str, text: str, number: int, entry: object) -> dict:
    def bad(key: str, problem: str) -> ConfigError:
        line = _route_line(text, number, key)
        return ConfigError(f"{path}{f':{line}' if line else ''}: key 'notify.route[{number}].{key}': {problem}")

    if not isinstance(entry, dict):
        raise bad("", "must be a table")
    route = dict(ROUTE_DEFAULTS, argv=[], events=list(NOTIFY_EVENTS))
    for key, value in entry.items():
        if key not in ROUTE_ENTRY:
            raise bad(key, "unknown setting")
        if not _check(ROUTE_ENTRY[key], value):
            said = "" if key == "url" else f", got {value!r}"  # a url may hold a token: never repeated
            raise bad(key, f"must be {ROUTE_ENTRY[key]}{said}")
        route[key] = value
    key, problem = _route_problem(route)
    if problem:
        raise bad(key, problem)
    return route


def _route_problem(route: dict) -> tuple[str, str]:
    """(key, why) when a route's keys do not fit its kind; ("", "") when they do."""
    from urllib.parse import urlsplit

    kind = route.get("kind")
    if kind not in ROUTE_KINDS:
        return "kind", f"must be one of {', '.join(ROUTE_KINDS)}"
    if kind in ("webhook", "ntfy", "slack"):
        try:
            parts = urlsplit(route["url"])
            parts.port  # noqa: B018 - a port that is not a number raises here
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            return "url", f"a {kind} route needs an http:// or https:// url"
    if kind == "command" and not route["argv"]:
        return "argv", 'a command route needs argv = ["program", "{title}", "{body}", ...]'
    unknown = [name for name in route["events"] if name not in NOTIFY_EVENTS]
    if unknown:
        return "events", f"unknown event {unknown[0]!r} (known: {', '.join(NOTIFY_EVENTS)})"
    if route["min_severity"] not in SEVERITY_ORDER:
        return "min_severity", f"must be one of {', '.join(SEVERITY_ORDER)}"
    return "", ""


def _route_line(text: str, number: int, key: str) -> int:
    """The line of ``key`` in the ``number``-th ``[[notify.route]]`` table (its header when not set there)."""
    seen, header = 0, 0
    for line_number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            if seen == number:
                break
            if stripped.replace(" ", "").startswith("[[notify.route]]"):
                seen += 1
                header = line_number if seen == number else header
            continue
        if seen == number and key and re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line):
            return line_number
    return header
