"""What a route sends and when (core.notify.dispatch through RouteWorker),
with an injected clock and a recording sender: once per event, rate limited
with a summary, reminders until answered, retries with backoff, lasting
events that end."""
from __future__ import annotations

from itertools import pairwise

import pytest

from leash.core.notify.dispatch import MAX_ATTEMPTS, RETRY_BASE_SECONDS, RouteQueue
from leash.core.notify.events import Event
from leash.core.notify.routes import Route
from leash.core.notify.runner import RouteWorker
from leash.core.notify.sender import DeliveryFailed

T0 = 1_900_000_000.0
EVERY_KIND = {"approval", "halt", "waiting", "warrant", "breaker", "offline"}


class Recorder:
    """A sender that keeps what it was given and fails while ``failing``."""

    def __init__(self):
        self.sent: list[Event] = []
        self.failing = False
        self.tried = 0

    def __call__(self, route, event):
        self.tried += 1
        if self.failing:
            raise DeliveryFailed("HTTP 503 Service Unavailable")
        self.sent.append(event)


def worker(recorder, **table) -> RouteWorker:
    route = Route(1, {"kind": "webhook", "url": "http://127.0.0.1:9/x", "events": sorted(EVERY_KIND),
                      "min_severity": "high", **table})
    return RouteWorker(RouteQueue(route, remind_after_s=600, host="h"), send=recorder)


def halt(n: int, severity: str = "high") -> Event:
    return Event("halt", f"halt:{n}", title=f"halt {n}", severity=severity, session=f"s{n}", time=T0, lasting=True)


def step(w: RouteWorker, events, now: float, read=EVERY_KIND) -> int:
    w.offer(list(events), set(read), now=now)
    return w.pump(now=now)


def test_an_event_is_sent_once_however_often_it_is_offered():
    sent = Recorder()
    w = worker(sent)
    for second in range(5):
        step(w, [halt(1)], T0 + second)
    assert [e.id for e in sent.sent] == ["halt:1"]


def test_halts_below_the_routes_min_severity_are_not_sent():
    sent = Recorder()
    w = worker(sent, min_severity="critical")
    step(w, [halt(1, "high"), halt(2, "critical"), halt(3, "low")], T0)
    assert [e.id for e in sent.sent] == ["halt:2"]


def test_events_the_route_does_not_list_are_not_sent():
    sent = Recorder()
    w = worker(sent, events=["warrant"])
    step(w, [halt(1, "critical"), Event("warrant", "warrant:1:executed", title="w", time=T0)], T0)
    assert [e.kind for e in sent.sent] == ["warrant"]


def test_the_rate_limit_collapses_the_rest_into_one_summary():
    sent = Recorder()
    w = worker(sent, rate_per_minute=3, digest_at=100)  # (no digest: the rate limit alone)
    step(w, [halt(n) for n in range(10)], T0)
    assert [e.kind for e in sent.sent] == ["halt", "halt", "summary"]
    summary = sent.sent[2]
    assert summary.title.startswith("8 more notifications") and "halt 9" in summary.body
    assert step(w, [halt(n) for n in range(12)], T0 + 30) == 0  # the minute is full: they wait
    step(w, [halt(n) for n in range(12)], T0 + 61)
    assert [e.id for e in sent.sent[3:]] == ["halt:10", "halt:11"]  # nothing summarised comes back


def test_many_at_once_go_out_as_one_digest_and_a_few_one_by_one():
    sent = Recorder()
    w = worker(sent)  # digest_at 5, the default
    step(w, [halt(n) for n in range(50)], T0)  # fifty agents stopped at once
    (digest,) = sent.sent
    assert digest.title.startswith("50 at once: 50 halt") and "halt 0" in digest.body and "halt 49" in digest.body
    step(w, [halt(n) for n in range(54)], T0 + 1)
    assert [e.id for e in sent.sent[1:]] == ["halt:50", "halt:51", "halt:52", "halt:53"]


def test_an_escalation_chain_tells_the_next_route_only_what_went_unanswered():
    from leash.core.notify.routes import escalation_delays

    chain = [Route(1, {"kind": "webhook", "url": "http://127.0.0.1:9/a", "escalate_after": "5m"}),
             Route(2, {"kind": "webhook", "url": "http://127.0.0.1:9/b", "escalate_after": 600}),
             Route(3, {"kind": "webhook", "url": "http://127.0.0.1:9/c"}),
             Route(4, {"kind": "webhook", "url": "http://127.0.0.1:9/d"})]
    assert escalation_delays(chain) == [0.0, 300.0, 900.0, 0.0]


def test_the_notifier_escalates_an_unanswered_approval_down_the_chain(home):
    from leash.core.notify.runner import Notifier
    from leash.core.store.files import FileBackend

    first, second = Recorder(), Recorder()
    table = {"kind": "webhook", "events": ["approval"]}
    settings = {"waiting_after_s": 120, "remind_after_s": 10_000,
                "route": [dict(table, url="http://127.0.0.1:9/on-call", escalate_after="5m"),
                          dict(table, url="http://127.0.0.1:9/lead")]}
    backend = FileBackend(home)
    backend.approvals.request("s1", "Bash", {"command": "git push"}, kind="ask", timeout_s=3600, now=T0)
    notifier = Notifier(str(home), backend, host="h", settings=settings, send=lambda route, event: (
        first if route.number == 1 else second)(route, event), clock=lambda: T0)
    for moment in (T0 + 1, T0 + 299, T0 + 301):
        notifier.tick(now=moment)
        for worker in notifier.workers:
            worker.pump(now=moment)
        if moment == T0 + 299:
            assert len(first.sent) == 1 and second.sent == []  # the on-call route first
    assert [e.kind for e in second.sent] == ["approval"]  # unanswered after 5 minutes: the lead too


def test_an_unanswered_halt_is_reminded_until_it_is_acknowledged():
    sent = Recorder()
    w = worker(sent)
    step(w, [halt(1)], T0)
    step(w, [halt(1)], T0 + 599)
    assert len(sent.sent) == 1
    step(w, [halt(1)], T0 + 600)
    assert [e.title for e in sent.sent] == ["halt 1", "reminder: halt 1"]
    step(w, [], T0 + 1300)  # acknowledged: no longer pending
    step(w, [], T0 + 2000)
    assert len(sent.sent) == 2


def test_other_lasting_events_are_not_reminded():
    sent = Recorder()
    w = worker(sent)
    wait = Event("waiting", "waiting:s1:t", title="s1 is waiting", time=T0, lasting=True)
    for moment in (T0, T0 + 700, T0 + 1400):
        step(w, [wait], moment)
    assert len(sent.sent) == 1


def test_a_lasting_event_that_ends_is_news_again_when_it_returns():
    sent = Recorder()
    w = worker(sent)
    host_gone = Event("offline", "offline:host:web2:t", title="web2 gone", time=T0, lasting=True)
    step(w, [host_gone], T0)
    step(w, [], T0 + 10)
    step(w, [host_gone], T0 + 20)
    assert len(sent.sent) == 2


def test_a_source_that_could_not_be_read_ends_nothing():
    sent = Recorder()
    w = worker(sent)
    step(w, [halt(1)], T0)
    step(w, [], T0 + 10, read=EVERY_KIND - {"halt"})  # the halt store failed this reading
    step(w, [halt(1)], T0 + 20)
    assert len(sent.sent) == 1


def test_a_failed_delivery_is_retried_with_backoff_then_given_up():
    sent = Recorder()
    sent.failing = True
    w = worker(sent)
    step(w, [halt(1)], T0)
    tries, moment, delay = [T0], T0, RETRY_BASE_SECONDS
    while sent.tried < MAX_ATTEMPTS:
        assert step(w, [halt(1)], moment + delay - 0.01) == 0  # not before its time
        moment += delay
        assert step(w, [halt(1)], moment) == 1
        tries.append(moment)
        delay *= 2
    gaps = [b - a for a, b in pairwise(tries)]
    assert gaps == [RETRY_BASE_SECONDS * 2 ** n for n in range(MAX_ATTEMPTS - 1)]
    health = w.queue.health
    assert health["failing"] and health["given_up"] == 1 and "503" in health["last_error"]
    assert step(w, [halt(1)], moment + 100) == 0  # given up: not queued again before its reminder
    sent.failing = False
    step(w, [halt(1)], moment + 600)  # the reminder comes, and goes through
    assert [e.title for e in sent.sent] == ["reminder: halt 1"] and not w.queue.health["failing"]


def test_a_failing_route_sends_nothing_else_while_it_backs_off():
    sent = Recorder()
    sent.failing = True
    w = worker(sent)
    step(w, [halt(1), halt(2), halt(3)], T0)
    assert sent.tried == 1
    sent.failing = False
    step(w, [halt(1), halt(2), halt(3)], T0 + RETRY_BASE_SECONDS)
    assert [e.id for e in sent.sent] == ["halt:1", "halt:2", "halt:3"]


def test_a_message_queued_for_an_event_that_ended_is_dropped():
    sent = Recorder()
    sent.failing = True
    w = worker(sent)
    step(w, [halt(1)], T0)
    sent.failing = False
    step(w, [], T0 + RETRY_BASE_SECONDS)  # acknowledged while the route was down
    assert sent.sent == []


@pytest.mark.parametrize("kind", ["warrant", "breaker"])
def test_one_off_events_are_sent_once(kind):
    sent = Recorder()
    w = worker(sent)
    news = Event(kind, f"{kind}:1", title="news", time=T0)
    step(w, [news], T0)
    step(w, [news], T0 + 5000)
    assert len(sent.sent) == 1
