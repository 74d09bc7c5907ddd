"""What the notifier remembers between runs, and what ``leash doctor`` says of it.

``<home>/run/notify.json`` (0600, written whole by ``core.statefile``)::

    {"since": <seconds>,                 # when this home's notifier first ran
     "routes": {"<route key>": {"sent": {"<event id>": <seconds>, ...},
                                "health": {"last_ok", "last_error", "last_error_at",
                                           "failing", "attempts", "retry_at", "given_up"}}}}

A route's key is a digest of what it is (``Route.key``): routes added or moved
keep their history. ``since`` marks what is history: events that ended before
the notifier first ran are never sent.

``findings`` is the notifications' part of ``leash doctor``: each route's
health (a route whose last attempt failed is a failure, with its error), and
who sends (the lease's holder: in a shared store one leashd does; none holding
it means nothing is sent).

Failure: a state file that cannot be read is started over (every lasting event
may be sent once more) and a write that fails is said by the runner; neither
stops the notifier. ``findings`` never raises.
"""
from __future__ import annotations

import os
from typing import Iterator

from leash.core.base.clock import human_duration, iso, now_seconds
from leash.core.base.finding import Finding
from leash.core.base.wellknown import RUN_DIR

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


STATE_NAME = "notify.json"
LEASE_NAME = "notify"
SUBJECT = "notify"


def state_path(home: str) -> str:
    return os.path.join(home, RUN_DIR, STATE_NAME)


def load(home: str) -> dict:
    from leash.core.base.statefile import read_json

    try:
        data = read_json(state_path(home), None)
    except Exception:  # corrupt or a link: started over
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("routes"), dict):
        return {"since": None, "routes": {}}
    return data


def save(home: str, data: dict) -> None:
    from leash.core.base.home import private_dir
    from leash.core.base.statefile import write_json

    private_dir(os.path.join(home, RUN_DIR))
    write_json(state_path(home), data, durable=False)


def findings(home: str, *, backend: Backend | None = None, now: float | None = None) -> Iterator[Finding]:
    """The notifications' findings (nothing when no route is configured);
    ``backend`` False: the store could not be opened."""
    from leash.core.base.config import ConfigError, load_config
    from leash.core.notify.routes import routes_of

    try:
        routes = routes_of(load_config(home)["notify"])
    except ConfigError:
        return  # the config finding says it
    if not routes:
        return
    moment = now_seconds(now)
    yield _sender(home, backend, moment)
    records = load(home)["routes"]
    for route in routes:
        record = records.get(route.key)
        health = record.get("health", {}) if isinstance(record, dict) else {}
        yield _route_finding(f"{SUBJECT} route {route.number} ({route.label})", health, moment)
        if route.reply_url:
            yield _replies_finding(home, route, moment)


def _replies_finding(home: str, route, moment: float) -> Finding:
    """The route's reply topic, as leashd's listener left word of it (``core.daemon.ntfyreplies``)."""
    import json
    import os

    from leash.core.base.clock import human_duration
    from leash.core.base.text import printable
    from leash.core.base.wellknown import RUN_DIR

    subject = f"{SUBJECT} answers from route {route.number} ({route.label})"
    try:
        with open(os.path.join(home, RUN_DIR, "ntfy-replies.json")) as handle:
            kept = json.load(handle)
        health = kept["health"][route.key]
    except (OSError, ValueError, KeyError, TypeError):
        return Finding("warn", subject, "not listened to yet: taps on its buttons wait until leashd reads the topic")
    counts = f"{int(health.get('applied') or 0)} applied, {int(health.get('refused') or 0)} refused"
    since = human_duration(max(0.0, moment - float(health.get("since") or moment)))
    if health.get("state") == "open":
        return Finding("ok", subject, f"leashd reads its reply topic (for {since}); {counts}")
    problem = printable(health.get("problem") or "", limit=200)
    return Finding("warn", subject, f"leashd cannot read its reply topic for {since}: {problem}; taps wait; {counts}")


def _sender(home: str, backend: Backend | None, moment: float) -> Finding:
    from leash.core.store.leases import FileLeases, leases_of

    if backend is False:
        return Finding("warn", SUBJECT, "who sends cannot be read: the store cannot be opened")
    try:
        leases = leases_of(backend) if backend is not None else FileLeases(home)
        holder = leases.holder(LEASE_NAME, now=moment)
    except Exception as exc:  # a store it cannot read now: said, never raised
        return Finding("warn", SUBJECT, f"who sends cannot be read: {exc.__class__.__name__}")
    if holder is None:
        return Finding("warn", SUBJECT, "no leash daemon is sending notifications (none holds the notifier's lease)")
    return Finding("ok", SUBJECT, f"sent by leashd on {holder.get('host') or 'this host'}")


def _route_finding(subject: str, health: dict, moment: float) -> Finding:
    from leash.core.base.text import printable

    error = printable(health.get("last_error") or "", limit=300)
    given_up = health.get("given_up") or 0
    lost = f"; {given_up} message{'s' if given_up != 1 else ''} given up" if given_up else ""
    if health.get("failing"):
        retry = health.get("retry_at")
        then = f", next try {iso(retry)}" if isinstance(retry, (int, float)) else ""
        return Finding("fail", subject, f"failing: {error} (at {_when(health.get('last_error_at'))}, "
                                        f"{health.get('attempts', 1)} attempts{then}){lost}")
    if isinstance(health.get("last_ok"), (int, float)):
        earlier = f"; last failure {_ago(health.get('last_error_at'), moment)}: {error}" if error else ""
        return Finding("ok", subject, f"delivering (last sent {_ago(health['last_ok'], moment)}){earlier}{lost}")
    return Finding("ok", subject, "nothing sent yet")


def _when(stamp: object) -> str:
    return iso(stamp) if isinstance(stamp, (int, float)) else "?"


def _ago(stamp: object, moment: float) -> str:
    return f"{human_duration(moment - stamp)} ago" if isinstance(stamp, (int, float)) else "?"
