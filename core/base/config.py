"""``config.toml``: every setting leash reads, with its default and its type.

The file is optional and every key has a default. It is read with ``tomllib``;
a file that does not parse, a key that leash does not know, or a value of the
wrong type raises ``ConfigError`` whose message is one line naming the file,
the line and the key, so the CLI can print it as it is.

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
    """This host's name: ``LEASH_HOST``, else ``[daemon] host``, else the machine's hostname."""
    import socket

    environ = os.environ if environ is None else environ
    return environ.get(HOST_VARIABLE) or load_config(home)["daemon"]["host"] or socket.gethostname()


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


def _line_of(text: str, table: str, key: str) -> int:
    """The line where ``key`` is set inside ``[table]`` (best effort, 1-based)."""
    current = ""
    header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
    assign = re.compile(r"^\s*(\"[^\"]*\"|[A-Za-z0-9_.-]+)\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        found = header.match(line)
        if found:
            current = found.group(1).replace(" ", "")
            if current == f"{table}.{key}".strip("."):
                return number
            continue
        found = assign.match(line)
        if found and current == table and found.group(1).strip('"') == key:
            return number
    return 0


def _decode_error(path: str, text: str, exc: Exception) -> ConfigError:
    message = str(exc)
    lines = text.splitlines()
    found = re.search(r"at line (\d+)", message)
    if found:
        line = int(found.group(1))
    else:  # "at end of document": blame the last assignment, the one left open
        line = max((n for n, t in enumerate(lines, 1) if "=" in t), default=len(lines))
    reason = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", message)
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


def load_config(home) -> JSONObject:
    """Defaults overlaid with ``<home>/config.toml``; raises ConfigError."""
    merged = json.loads(json.dumps(DEFAULTS))  # a deep copy without importing copy
    path = os.path.join(os.fspath(home), CONFIG_NAME)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return merged
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
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
