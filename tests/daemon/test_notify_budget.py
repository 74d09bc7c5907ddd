"""A spend cap's news reaches the routes as ``budget`` events: a warn point
crossed, a cap reached and its sessions held, a silent meter — each once,
from its ack-log line (``core.views.metering`` writes them)."""
from __future__ import annotations

import pytest

from leash.core.notify.runner import Notifier
from leash.core.store.files import FileBackend

from ..support.notify import Inbox, write_routes

T0 = 1_900_000_000.0


@pytest.fixture
def inbox():
    server = Inbox()
    yield server
    server.close()


def run(note: Notifier, now: float) -> None:
    note.tick(now=now)
    for worker in note.workers:
        worker.pump(now=now)


def test_budget_warnings_holds_and_silent_meters_are_sent_once(home, inbox):
    write_routes(home, [{"kind": "webhook", "url": inbox.url, "events": ["budget"], "min_severity": "high"}])
    note = Notifier(str(home), FileBackend(home, keep_connections=True), host="web1", clock=lambda: T0)
    log = note.backend.acklog
    log.append("budget_warn", source="leash", session_id="s1", reason="cap daily at 76% of its limit", cap="daily",
               bucket="fleet", period="2030-03-17", point=0.75, used=7.6, limit=10.0, unit="usd", now=T0 + 1)
    log.append("budget_hold", source="leash", session_id="s1", reason="cap daily reached", cap="daily",
               bucket="fleet", period="2030-03-17", used=10.2, limit=10.0, unit="usd", sessions=["s1"], now=T0 + 2)
    log.append("budget_raised", source="ops", session_id="", reason="a big day", cap="daily", bucket="fleet",
               period="2030-03-17", to=20.0, now=T0 + 3)  # the operator's own act: not news to send
    run(note, T0 + 5)
    run(note, T0 + 6)
    got = sorted((e["event"], e["title"], e["severity"]) for e in [p.json() for p in inbox.wait_for(2, timeout=5)])
    assert got == [("budget", "spend cap daily at 75% (fleet)", "high"),
                   ("budget", "spend cap daily reached: fleet held", "critical")]
    assert len(inbox.posts) == 2
