"""The ``[[notify.route]]`` tables of ``config.toml`` as ``Route`` objects.

``core.config`` has validated each table (its kind, its url or argv, its
events, its ``min_severity``) and filled in the defaults; a route here only
answers what it wants and how it is named. A route is shown by its number
(1-based, the order of the file) and a label that never repeats a secret:
Slack's webhook urls and ntfy's topics are credentials, so a url is shown as
its scheme and host only, a command as its program.

Failure: none; ``routes_of`` takes the validated configuration.
"""
from __future__ import annotations

import hashlib
import json

from leash.core.notify.events import Event, severity_rank

HTTP_KINDS = ("webhook", "ntfy", "slack")
OWN_KINDS = frozenset({"summary", "test"})  # the notifier's own messages: every route takes them


class Route:
    __slots__ = ("number", "kind", "url", "argv", "events", "min_severity", "rate_per_minute", "timeout_s",
                 "name", "key", "reply_topic", "escalate_after", "digest_at")

    def __init__(self, number: int, table: dict):
        self.number = number
        self.kind = table["kind"]
        self.url = table.get("url", "")
        self.argv = list(table.get("argv", []))
        self.events = frozenset(table.get("events", ()))
        self.min_severity = table.get("min_severity", "high")
        self.rate_per_minute = int(table.get("rate_per_minute", 10))
        self.timeout_s = float(table.get("timeout_s", 10))
        self.name = table.get("name", "")
        self.reply_topic = table.get("reply_topic", "")  # ntfy: where Allow/Deny taps are published
        from leash.core.base.notifyconfig import duration_seconds

        # Unanswered this long after it was first seen, an approval or halt goes to the next route too.
        self.escalate_after = duration_seconds(table.get("escalate_after", 0)) or 0.0
        self.digest_at = int(table.get("digest_at", 5))  # this many at once: one digest message
        # What the route's record in run/notify.json is filed under: the same
        # route keeps its history when others are added or moved around it.
        what = {k: table.get(k) for k in ("kind", "url", "argv", "events", "min_severity")}
        self.key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]

    def wants(self, event: Event) -> bool:
        if event.kind in OWN_KINDS:
            return True
        if event.kind not in self.events:
            return False
        return event.kind != "halt" or severity_rank(event.severity) >= severity_rank(self.min_severity)

    @property
    def reply_url(self) -> str:
        """The reply topic's url on the route's own ntfy server ("" when none)."""
        if self.kind != "ntfy" or not self.reply_topic:
            return ""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/{self.reply_topic}"

    @property
    def label(self) -> str:
        """How the route is shown (never its secret parts)."""
        return f"{self.name} ({self.kind})" if self.name else f"{self.kind} {self.place}".rstrip()

    @property
    def place(self) -> str:
        """Where it sends: a url's scheme, host and port; a command's program."""
        if self.kind in HTTP_KINDS:
            from urllib.parse import urlsplit

            parts = urlsplit(self.url)
            return f"{parts.scheme}://{parts.hostname or '?'}{f':{parts.port}' if parts.port else ''}"
        if self.kind == "command":
            return self.argv[0] if self.argv else "?"
        return ""

    def __repr__(self) -> str:
        return f"Route({self.number}, {self.label!r})"


def routes_of(settings: dict) -> list[Route]:
    """The routes of the ``notify`` section of a loaded configuration."""
    return [Route(number, table) for number, table in enumerate(settings.get("route", []), 1)]


def escalation_delays(routes: list[Route]) -> list[float]:
    """How long after an approval or halt is first seen each route hears of
    it: a route after one with ``escalate_after`` is that route's next link
    (its delay plus that wait); any other route hears at once."""
    delays, waited = [], 0.0
    for route in routes:
        delays.append(waited)
        waited = waited + route.escalate_after if route.escalate_after else 0.0
    return delays
