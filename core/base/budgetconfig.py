"""``[budget]`` of config.toml: the caps that hold sessions at a spend, the
accounts that group hosts and entities under one subscription, and the
per-model prices that win over the price table.

::

    [[budget.cap]]
    name = "daily"            # unique; what ``leash budget raise NAME`` names
    scope = "entity"          # session | entity | host | fleet | account
    period = "day"            # day | week (UTC) | window-5h | window-7d | total
    limit_usd = 20            # or limit_percent (exactly one of them)
    warn_at = [0.75, 0.95]    # fractions of the limit that notify, ascending, each in (0, 1)
    resume_at_reset = false   # the period's reset releases the hold (never for "total")
    account = ""              # scope "account" only: a name of [budget.accounts]
    stale_after = 10          # minutes a working session's meter may stay silent
    on_stale = "warn"         # warn | hold

    [budget.accounts.work]    # a subscription login and where it is used
    hosts = ["web1"]
    entities = ["web2/agent-3", "reviewer"]   # HOST/NAME, or a bare NAME on every host

    [budget.prices."gpt-4.1"] # USD per million tokens; cache rates default to the input rate
    input = 2
    output = 8

``limit_percent`` is a subscription window's use as its CLI reports it (Claude
Code's status line: ``rate_limits.five_hour`` / ``seven_day``): one figure per
login, so it is only for ``window-5h`` / ``window-7d`` and only with scope
``account`` (the login named) or ``fleet`` (a fleet on one login); 0 to 100.
``limit_usd`` is any finite number >= 0 (0 holds at the first spend). A host
or an entity belongs to one account at most.

Read as part of the file by ``core.base.config`` (which words what this
module finds with the file and the line): a key leash does not know is
ignored with a warning; a value it cannot use (both limits or neither, an
unknown scope or period, a negative, infinite or NaN limit, a duplicate
name...) makes the file unusable, and ``read_budget`` says which key, on which
line, and why. What it cannot see: a cap's name that is valid but not the one
meant, a host or entity name that no session will ever carry, a price that is
wrong. While the file cannot be used, no cap is known (leash never uses a
value of a broken file): the hooks then hold every tool call for an operator,
which no cap would loosen.

On the hook path whenever the file has a ``[budget]`` table, so it imports
nothing but the standard library's cheapest modules (no dataclasses or
typing: ``core.policy.caps.Cap`` is the typed record of a cap read here).
"""
from __future__ import annotations

import math
import re

from leash.core.base.tomllines import array_table_line, did_you_mean, line_of

BUDGET_DEFAULTS: dict = {"cap": [], "accounts": {}, "prices": {}}
SCOPES = ("session", "entity", "host", "fleet", "account")
PERIODS = ("day", "week", "window-5h", "window-7d", "total")
WINDOW_PERIODS = ("window-5h", "window-7d")
PERCENT_SCOPES = ("account", "fleet")  # a window's percentage belongs to one login
ON_STALE = ("warn", "hold")
CAP_KEYS = ("name", "scope", "period", "limit_usd", "limit_percent", "warn_at", "resume_at_reset", "account",
            "stale_after", "on_stale")
CAP_DEFAULTS: dict = {"limit_usd": None, "limit_percent": None, "warn_at": [0.75, 0.95], "resume_at_reset": False,
                      "account": "", "stale_after": 10, "on_stale": "warn"}
ACCOUNT_KEYS = ("hosts", "entities")
PRICE_KEYS = ("input", "output", "cache_write", "cache_read")  # USD per million tokens
NAME_RULE = "letters, digits, '_' and '-'"
_NAME = re.compile(r"[A-Za-z0-9_-]+")

# (table, key, line, what is said): a warning, or the one problem of a file that cannot be used.
Found = tuple[str, str, int, str]


class _Bad(Exception):
    """The first value of ``[budget]`` leash cannot use: (table, key, line, why)."""


def read_budget(body: dict, text: str) -> tuple[dict, list[Found], Found | None]:
    """``[budget]`` (the parsed table, and the file's text to find lines in):
    (the section with its defaults, a warning for each key ignored, None or
    the problem that makes the file unusable)."""
    reading = _Budget(text)
    try:
        return reading.read(body), reading.ignored, None
    except _Bad as bad:
        return dict(BUDGET_DEFAULTS), reading.ignored, bad.args


class _Budget:
    def __init__(self, text: str) -> None:
        self.text = text
        self.ignored: list[Found] = []

    def bad(self, table: str, key: str, why: str, line: int | None = None) -> _Bad:
        return _Bad(table, key, line_of(self.text, table, key) if line is None else line, why)

    def unknown(self, table: str, key: str, known, line: int | None = None) -> None:
        line = line_of(self.text, table, key) if line is None else line
        self.ignored.append((table, key, line, f"unknown setting, ignored{did_you_mean(key, known)}"))

    def read(self, body: dict) -> dict:
        budget: dict = {"cap": [], "accounts": {}, "prices": {}}
        for key in body:
            if key not in budget:
                self.unknown("budget", key, budget)
        for key, shape in (("cap", list), ("accounts", dict), ("prices", dict)):
            if not isinstance(body.get(key, shape()), shape):
                said = "[[budget.cap]] tables" if key == "cap" else f"a table [budget.{key}]"
                raise self.bad("budget", key, f"must be {said}")
        budget["accounts"] = self.accounts(body.get("accounts", {}))
        budget["prices"] = self.prices(body.get("prices", {}))
        names: dict[str, int] = {}
        for number, entry in enumerate(body.get("cap", []), 1):
            cap = self.cap(number, entry, budget["accounts"])
            if cap["name"] in names:
                raise self.bad(f"budget.cap[{number}]", "name",
                               f"{cap['name']!r} already names budget.cap[{names[cap['name']]}]; names are unique",
                               self.cap_line(number, "name"))
            names[cap["name"]] = number
            budget["cap"].append(cap)
        return budget

    def cap_line(self, number: int, key: str) -> int:
        """The line of ``key`` in the ``number``-th ``[[budget.cap]]`` (its header when not set there)."""
        line = array_table_line(self.text, "budget.cap", number, key)
        return line or line_of(self.text, "budget", "cap")

    def cap(self, number: int, entry: object, accounts: dict) -> dict:
        table = f"budget.cap[{number}]"
        if not isinstance(entry, dict):
            raise self.bad(table, "", "must be a table", self.cap_line(number, ""))
        cap = dict(CAP_DEFAULTS, warn_at=list(CAP_DEFAULTS["warn_at"]))
        for key, value in entry.items():
            if key not in CAP_KEYS:
                self.unknown(table, key, CAP_KEYS, self.cap_line(number, key))
                continue
            why = cap_value_problem(key, value)
            if why:
                raise self.bad(table, key, why, self.cap_line(number, key))
            cap[key] = list(value) if key == "warn_at" else value
        key, why = cap_problem(cap, entry, accounts)
        if why:
            raise self.bad(table, key, why, self.cap_line(number, key))
        return cap

    def accounts(self, body: dict) -> dict:
        accounts: dict = {}
        owner: dict[tuple[str, str], str] = {}  # (hosts|entities, name) -> the account it is in
        for name, entry in body.items():
            if not _NAME.fullmatch(name):
                raise self.bad("budget.accounts", _quoted(name), f"an account's name is {NAME_RULE}")
            table = f"budget.accounts.{name}"
            if not isinstance(entry, dict):
                raise self.bad("budget.accounts", name, 'must be a table: hosts = [...], entities = [...]')
            accounts[name] = {"hosts": [], "entities": []}
            for key, value in entry.items():
                if key not in ACCOUNT_KEYS:
                    self.unknown(table, key, ACCOUNT_KEYS)
                    continue
                if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                    raise self.bad(table, key, f"must be a list of non-empty names, got {value!r}")
                for member in value:
                    if (key, member) in owner and owner[(key, member)] != name:
                        raise self.bad(table, key, f"{member!r} is already in account {owner[(key, member)]!r}; "
                                                   "one account each")
                    owner[(key, member)] = name
                accounts[name][key] = list(value)
        return accounts

    def prices(self, body: dict) -> dict:
        prices: dict = {}
        for model, entry in body.items():
            table = f"budget.prices.{_quoted(model)}"
            if not isinstance(entry, dict):
                raise self.bad("budget.prices", _quoted(model),
                               "must be a table: input = USD, output = USD (per million tokens)")
            rates = {}
            for key, value in entry.items():
                if key not in PRICE_KEYS:
                    self.unknown(table, key, PRICE_KEYS)
                elif (number := _number(value)) is None or number < 0:
                    raise self.bad(table, key, f"must be a finite number >= 0 (USD per million tokens), got {value!r}")
                else:
                    rates[key] = value
            missing = [key for key in ("input", "output") if key not in rates]
            if missing:
                raise self.bad("budget.prices", _quoted(model),
                               f"needs {' and '.join(missing)} (USD per million tokens)")
            prices[model] = rates
        return prices


def cap_value_problem(key: str, value: object) -> str:
    """Why ``value`` cannot be ``key`` of a ``[[budget.cap]]`` on its own ("" when it can)."""
    if key in ("name", "account"):
        ok = isinstance(value, str) and (_NAME.fullmatch(value) is not None or (key == "account" and value == ""))
        return "" if ok else f"must be a name of {NAME_RULE}, got {value!r}"
    if key in ("scope", "period", "on_stale"):
        known = {"scope": SCOPES, "period": PERIODS, "on_stale": ON_STALE}[key]
        return "" if value in known else f"must be one of {', '.join(known)}, got {value!r}"
    number = _number(value)
    if key == "limit_usd":
        return "" if number is not None and number >= 0 else f"must be a finite number >= 0 (US dollars), got {value!r}"
    if key == "limit_percent":
        return "" if number is not None and 0 <= number <= 100 else f"must be a number from 0 to 100, got {value!r}"
    if key == "warn_at":
        points = [_number(point) for point in value] if isinstance(value, list) else [None]
        fractions = [point for point in points if point is not None and 0 < point < 1]
        ok = len(fractions) == len(points) and fractions == sorted(set(fractions))
        return "" if ok else f"must be a list of ascending fractions, each between 0 and 1 (exclusive), got {value!r}"
    if key == "resume_at_reset":
        return "" if isinstance(value, bool) else f"must be true or false, got {value!r}"
    if key == "stale_after":
        return "" if number is not None and number > 0 else f"must be a number of minutes > 0, got {value!r}"
    raise AssertionError(key)


def cap_problem(cap: dict, entry: dict, accounts: dict) -> tuple[str, str]:
    """(key, why) when a cap's keys, each valid, do not fit together; ("", "") when they do."""
    if "name" not in entry:
        return "", 'needs a name: name = "NAME"'
    for key in ("scope", "period"):
        if key not in entry:
            return "", f"needs a {key}: one of {', '.join(SCOPES if key == 'scope' else PERIODS)}"
    given = [key for key in ("limit_usd", "limit_percent") if key in entry]
    if len(given) != 1:
        said = "has both limit_usd and limit_percent" if given else "has neither limit_usd nor limit_percent"
        return (given[-1] if given else ""), f"{said}: give exactly one"
    if given == ["limit_percent"] and cap["period"] not in WINDOW_PERIODS:
        return "limit_percent", "a percentage is a subscription window's: period must be window-5h or window-7d"
    if given == ["limit_percent"] and cap["scope"] not in PERCENT_SCOPES:
        return "limit_percent", "a window's percentage is its login's: scope must be account or fleet"
    if cap["resume_at_reset"] and cap["period"] == "total":
        return "resume_at_reset", "period total never resets"
    if cap["scope"] == "account" and not cap["account"]:
        return "", "scope account needs account = NAME, a table of [budget.accounts]"
    if cap["scope"] != "account" and cap["account"]:
        return "account", 'is only for scope = "account"'
    if cap["account"] and cap["account"] not in accounts:
        known = ", ".join(accounts) or "none"
        return "account", f"no account {cap['account']!r} in [budget.accounts] (known: {known})"
    return "", ""


def _number(value: object) -> float | None:
    """``value`` when it is a finite number (a TOML integer or float, never a boolean), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _quoted(name: str) -> str:
    """``name`` as a TOML key: bare when it can be, else quoted (a model's ``gpt-4.1``)."""
    return name if _NAME.fullmatch(name) else '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
