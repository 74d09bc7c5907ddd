"""Reading one ``config.toml``'s text into settings: the kinds a value may
be (``value_fits``), the one-line errors (``ConfigError``, naming the file, the
line and the key), the warnings for what is ignored, and the sections read by a
rule of their own (``[loop.NAME]``, ``[reply_guard.channels.NAME]``,
``[console.keys]``, ``[[notify.route]]``, ``[budget]``).
``core.base.config`` owns the defaults, the schema and when a file is read;
this module only reads what it is given.

Failure: ``parse`` raises ``ConfigError`` for a file that cannot be used; a
key it does not know is a warning, never an error.
"""
from __future__ import annotations

import json
import re

from leash.core.base.hours import HOURS_RULE, hours_problem
from leash.core.base.statefile import JSONObject

# (type check, description) for each leaf; a tuple of types means any of them.
_NUMBER = (int, float)

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
    "port": "0 (none) or a TCP port from 1 to 65535",
    "duration": 'seconds, or a text such as "90s", "5m" or "1h"',
}


_NEVER_ECHOED = {"store url"}  # it may hold a password: an error never repeats it


# Kinds checked by a rule of their own (a kind per line keeps ``_check`` short).
_SPECIAL_CHECKS = {
    "store url": lambda value: isinstance(value, str) and (value == "" or store_url_problem(value) is None),
    "offline policy": lambda value: value in ("closed", "last-known"),
    "on-timeout policy": lambda value: value in ("deny", "ask"),
    "port": lambda value: isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535,
    "duration": lambda value: _duration(value) is not None,
    "ask rules": lambda value: isinstance(value, list) and all(ask_rule_problem(rule) is None for rule in value),
}


def _duration(value: object) -> float | None:
    from leash.core.base.notifyconfig import duration_seconds

    return duration_seconds(value)


def value_fits(kind: str, value: object) -> bool:
    """Whether ``value`` is of ``kind`` (a schema's kind name, such as "positive number")."""
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
        return isinstance(value, list) and bool(value) and all(value_fits("positive number", v) for v in value)
    raise AssertionError(kind)


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


def _why_not(kind: str, value: object) -> str:
    """What is wrong with the first bad rule of a list of ask rules ("" for other kinds)."""
    if kind != "ask rules" or not isinstance(value, list):
        return ""
    problems = [problem for problem in map(ask_rule_problem, value) if problem]
    return f" ({problems[0]})" if problems else ""


def parse(path: str, raw: bytes, defaults: JSONObject, schema: dict) -> tuple[JSONObject, str, list[str]]:
    """(the defaults overlaid with the file's known keys, "", a line for each
    key it ignores); raises ConfigError for a file that cannot be used."""
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
        from leash.core.base.tomllines import decode_error

        raise ConfigError(decode_error(path, text, exc)) from None
    reading = _Reading(path, text, schema)
    merged = json.loads(json.dumps(defaults))
    for section, body in data.items():
        if section not in defaults:
            reading.unknown("", section, defaults, "section")
        elif not isinstance(body, dict):
            raise reading.bad("", section, "must be a table")
        elif section in _SECTION_READERS:
            _SECTION_READERS[section](reading, body, merged[section])
        else:
            reading.entries(section, body, schema[section], merged[section])
    return merged, "", reading.warnings


class _Reading:
    """One file being read: its path and text (for the lines messages name), and its warnings."""

    def __init__(self, path: str, text: str, schema: dict) -> None:
        self.path, self.text, self.schema = path, text, schema
        self.found: list[tuple[int, str]] = []  # (line, warning)

    @property
    def warnings(self) -> list[str]:
        """The warnings in the order of their lines."""
        return [said for _, said in sorted(self.found, key=lambda found: found[0])]

    def where(self, table: str, key: str, line: int | None = None) -> str:
        """``<path>:<line>: key '<table.key>'`` (the line found in the text unless given)."""
        from leash.core.base.tomllines import line_of

        line = line_of(self.text, table, key) if line is None else line
        dotted = f"{table}.{key}" if table else key
        return f"{self.path}:{line}: key '{dotted}'" if line else f"{self.path}: key '{dotted}'"

    def bad(self, table: str, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where(table, key)}: {problem}")

    def warn(self, table: str, key: str, problem: str, line: int | None = None) -> None:
        from leash.core.base.tomllines import line_of

        line = line_of(self.text, table, key) if line is None else line
        self.found.append((line, f"{self.where(table, key, line)}: {problem}"))

    def unknown(self, table: str, key: str, known, what: str = "setting") -> None:
        from leash.core.base.tomllines import did_you_mean

        self.warn(table, key, f"unknown {what}, ignored{did_you_mean(key, known)}")

    def entries(self, table: str, entries: dict, schema: dict, merged_into: dict) -> None:
        for key, value in entries.items():
            if key not in schema:
                self.unknown(table, key, schema)
                continue
            (kind,) = schema[key]
            if not value_fits(kind, value):
                said = "" if kind in _NEVER_ECHOED else f", got {value!r}"
                raise self.bad(table, key, f"must be {_KIND_SAID.get(kind, kind)}{said}{_why_not(kind, value)}")
            merged_into[key] = value


def _read_loop(reading: _Reading, body: dict, merged: dict) -> None:
    for name, entry in body.items():
        if not isinstance(entry, dict):
            raise reading.bad("loop", name, "must be a table [loop.NAME]")
        merged[name] = {}
        reading.entries(f"loop.{name}", entry, LOOP_ENTRY, merged[name])


def _read_reply_guard(reading: _Reading, body: dict, merged: dict) -> None:
    for key, channels in body.items():
        if key != "channels":
            reading.unknown("reply_guard", key, ("channels",))
            continue
        if not isinstance(channels, dict):
            raise reading.bad("reply_guard", key, "must be [reply_guard.channels.NAME] tables")
        for name, entry in channels.items():
            if not isinstance(entry, dict):
                raise reading.bad("reply_guard.channels", name, "must be a table")
            merged["channels"][name] = {}
            reading.entries(f"reply_guard.channels.{name}", entry, CHANNEL_ENTRY, merged["channels"][name])


def _read_console(reading: _Reading, body: dict, merged: dict) -> None:
    """``[console.keys]``: a binding the console cannot use is left out with a
    warning (``core.base.consolekeys``), never an error: it loosens nothing."""
    from leash.core.base.consolekeys import rebind

    for key, value in body.items():
        if key != "keys":
            reading.unknown("console", key, ("keys",))
        elif not isinstance(value, dict):
            reading.warn("console", key, "must be a table [console.keys] of action = \"key\", ignored")
        else:
            kept, left_out = rebind(value)
            merged["keys"].update(kept)
            for action, why in left_out:
                reading.warn("console.keys", action, f"{why}: ignored, the action keeps its own key")

def _read_notify(reading: _Reading, body: dict, merged: dict) -> None:
    """``[notify]`` and its ``[[notify.route]]`` tables (``core.base.notifyconfig``)."""
    from leash.core.base.notifyconfig import ROUTE_ENTRY, read_route
    from leash.core.base.tomllines import did_you_mean, route_line

    routes = body.get("route", [])
    reading.entries("notify", {k: v for k, v in body.items() if k != "route"}, reading.schema["notify"], merged)
    if not isinstance(routes, list):
        raise reading.bad("notify", "route", "must be [[notify.route]] tables")
    merged["route"] = []
    for number, entry in enumerate(routes, 1):
        table = f"notify.route[{number}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{reading.where(table, '', route_line(reading.text, number, ''))}: must be a table")
        route, ignored, (key, problem) = read_route(entry, value_fits)
        for name in ignored:
            reading.warn(table, name, f"unknown setting, ignored{did_you_mean(name, ROUTE_ENTRY)}",
                         route_line(reading.text, number, name))
        if problem:
            raise ConfigError(f"{reading.where(table, key, route_line(reading.text, number, key))}: {problem}")
        merged["route"].append(route)


def _read_budget(reading: _Reading, body: dict, merged: dict) -> None:
    """``[budget]``: its caps, accounts and prices (``core.base.budgetconfig``)."""
    from leash.core.base.budgetconfig import read_budget

    budget, ignored, problem = read_budget(body, reading.text)
    for table, key, line, said in ignored:
        reading.warn(table, key, said, line)
    if problem:
        table, key, line, said = problem
        raise ConfigError(f"{reading.where(table, key, line) if key else reading.where('', table, line)}: {said}")
    merged.update(budget)


# The sections read by a rule of their own (the others: by the schema).
_SECTION_READERS = {"loop": _read_loop, "reply_guard": _read_reply_guard, "console": _read_console,
                    "notify": _read_notify, "budget": _read_budget}
