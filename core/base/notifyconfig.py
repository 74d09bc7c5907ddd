"""``[notify]`` of config.toml: the ``[[notify.route]]`` tables, each checked
against what its kind needs (``core.notify`` sends through them).

Read as part of the file by ``core.base.config`` (which re-exports the names
the rest of leash uses, and words what this module finds with the route's
line): a route key leash does not know is ignored, a value it cannot use
makes the file unusable (a url is never repeated: it may hold a token).
"""
from __future__ import annotations

# The [[notify.route]] tables: each entry's keys and defaults, then what its kind needs.
SEVERITY_ORDER = ("low", "medium", "high", "critical")  # core.halts.store.SEVERITIES, lowest first
NOTIFY_EVENTS = ("approval", "halt", "waiting", "warrant", "breaker", "offline", "budget")
ROUTE_KINDS = ("webhook", "ntfy", "slack", "command", "desktop")
ROUTE_ENTRY = {"kind": "str", "url": "str", "argv": "list[str]", "events": "list[str]", "min_severity": "str",
               "rate_per_minute": "positive int", "timeout_s": "positive number", "name": "str",
               "reply_topic": "str", "escalate_after": "duration", "digest_at": "positive int"}
ROUTE_DEFAULTS = {"url": "", "min_severity": "high", "rate_per_minute": 10, "timeout_s": 10, "name": "",
                  "reply_topic": "", "escalate_after": 0, "digest_at": 5}
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def duration_seconds(value: object) -> float | None:
    """Seconds from a number or ``"90s"``/``"5m"``/``"1h"``; None when it is neither (or negative)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    if isinstance(value, str) and len(value) > 1 and value[-1] in DURATION_UNITS:
        try:
            number = float(value[:-1])
        except ValueError:
            return None
        return number * DURATION_UNITS[value[-1]] if number >= 0 else None
    return None
# An ntfy topic name: what ntfy itself accepts (letters, digits, _ and -, at most 64).
TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def read_route(entry: dict, check) -> tuple[dict, list[str], tuple[str, str]]:
    """One ``[[notify.route]]`` table: (the route with its defaults, the keys
    it ignores, ("", "") or (key, why) when it cannot be used); ``check(kind,
    value)`` judges a value of a kind of ``ROUTE_ENTRY``."""
    route = dict(ROUTE_DEFAULTS, argv=[], events=list(NOTIFY_EVENTS))
    ignored = []
    for key, value in entry.items():
        if key not in ROUTE_ENTRY:
            ignored.append(key)
            continue
        if not check(ROUTE_ENTRY[key], value):
            said = "" if key == "url" else f", got {value!r}"  # a url may hold a token: never repeated
            return route, ignored, (key, f"must be {ROUTE_ENTRY[key]}{said}")
        route[key] = value
    return route, ignored, route_problem(route)


def route_problem(route: dict) -> tuple[str, str]:
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
    topic = route.get("reply_topic", "")
    if topic and (kind != "ntfy" or len(topic) > 64 or not set(topic) <= TOPIC_CHARS):
        return "reply_topic", "an ntfy route's topic for answers: letters, digits, _ and - (at most 64)"
    if kind == "command" and not route["argv"]:
        return "argv", 'a command route needs argv = ["program", "{title}", "{body}", ...]'
    unknown = [name for name in route["events"] if name not in NOTIFY_EVENTS]
    if unknown:
        return "events", f"unknown event {unknown[0]!r} (known: {', '.join(NOTIFY_EVENTS)})"
    if route["min_severity"] not in SEVERITY_ORDER:
        return "min_severity", f"must be one of {', '.join(SEVERITY_ORDER)}"
    return "", ""
