"""What one route sends, and when: ``RouteQueue``.

* **Once per event.** ``sent`` holds each event id the route delivered (or gave
  up on) with the time; an event offered again is not queued again. A lasting
  event that is no longer offered is over: its queued message is dropped and
  its id forgotten (a breaker that trips again, a session that waits again,
  is news again). Only the kinds a reading actually read are judged so: a
  store that could not be read ends nothing.
* **Digests.** ``digest_at`` (5) or more new events in one reading (fifty
  agents stopped at once) go out as one digest listing them, not one by one.
* **Reminders.** A reminded event (an approval, a halt) still offered
  ``remind_after_s`` after it was last sent is queued once more, titled as a
  reminder, until it is answered or acknowledged.
* **Rate limit.** At most ``rate_per_minute`` messages in any 60 s; when more
  wait than the minute has room for, the last free place carries one summary
  of all the rest.
* **Retries.** A failed delivery is tried again after ``RETRY_BASE_SECONDS``,
  doubling per failure in a row up to ``RETRY_MAX_SECONDS``; the route sends
  nothing else meanwhile (a dead endpoint is not hammered). After
  ``MAX_ATTEMPTS`` the message is given up (counted in the route's health,
  its ids marked sent so it does not come back; a reminder still will).

Everything is decided from the ``now=`` it is given: tests drive it with an
injected clock. Not thread-safe by itself: ``core.notify.runner`` holds a lock.

Failure: none here; the caller reports delivery problems to ``settle``.
"""
from __future__ import annotations

from collections import deque

from leash.core.notify.events import Event, summary_event
from leash.core.notify.routes import Route

RATE_WINDOW_SECONDS = 60.0
RETRY_BASE_SECONDS = 2.0
RETRY_MAX_SECONDS = 300.0
MAX_ATTEMPTS = 6  # 2 + 4 + 8 + 16 + 32 s of waiting before a message is given up
SENT_KEPT = 5000  # ids remembered per route at most (the oldest go first)
REMINDER_PREFIX = "reminder: "


class Message:
    """One delivery: an event, or a summary standing for several (``ids``)."""

    __slots__ = ("event", "covered", "ids", "kinds", "attempts")

    def __init__(self, event: Event, covered: list[Event] | None = None):
        self.event = event
        self.covered = covered or [event]
        self.ids = [e.id for e in self.covered]
        self.kinds = {e.kind for e in self.covered}
        self.attempts = 0


class RouteQueue:
    def __init__(self, route: Route, *, remind_after_s: float, host: str, sent: dict | None = None,
                 health: dict | None = None):
        self.route = route
        self.remind_after_s = remind_after_s
        self.host = host
        self.sent: dict[str, float] = dict(sent or {})
        self.health: dict = dict(health or {})
        self.waiting: list[Message] = []
        self.window: deque[float] = deque()
        self.failures = 0
        self.retry_at = 0.0

    # ------------------------------------------------------------ offering
    def offer(self, events: list[Event], *, read_kinds: set[str], now: float) -> bool:
        """Queue what this route should send of ``events`` (the whole reading
        of ``read_kinds``); whether anything was queued."""
        offered = {e.id for e in events}
        self._end_what_is_over(offered, read_kinds)
        queued = {i for message in self.waiting for i in message.ids}
        fresh: list[Event] = []
        added = False
        for event in events:
            if event.id in queued or not self.route.wants(event):
                continue
            last = self.sent.get(event.id)
            if last is None:
                fresh.append(event)
            elif event.reminded and now - last >= self.remind_after_s:
                self.waiting.append(Message(_reminder(event)))
            else:
                continue
            added = True
        if len(fresh) >= max(2, self.route.digest_at):  # many at once (a fleet stopped): one digest
            self.waiting.append(Message(summary_event(fresh, host=self.host, now=now, together=True), fresh))
        else:
            self.waiting.extend(Message(event) for event in fresh)
        return added

    def send_now(self, event: Event) -> None:
        """Queue ``event`` whatever was sent before (a test message)."""
        self.waiting.append(Message(event))

    def _end_what_is_over(self, offered: set[str], read_kinds: set[str]) -> None:
        def over(message: Message) -> bool:
            return message.kinds <= read_kinds and not offered.intersection(message.ids)

        self.waiting = [m for m in self.waiting if not over(m)]
        for event_id in [i for i in self.sent if i not in offered and _kind_of(i) in read_kinds]:
            del self.sent[event_id]

    # ------------------------------------------------------------ sending
    def due(self, *, now: float) -> Message | None:
        """The next message to send now, or None (nothing waits, the route
        backs off, or the minute is full); collapses what the minute has no
        room for into one summary."""
        if not self.waiting or now < self.retry_at:
            return None
        while self.window and self.window[0] <= now - RATE_WINDOW_SECONDS:
            self.window.popleft()
        room = self.route.rate_per_minute - len(self.window)
        if room <= 0:
            return None
        if len(self.waiting) > room:
            self._collapse(room - 1, now=now)
        return self.waiting[0]

    def next_chance(self, *, now: float) -> float:
        """Seconds until ``due`` may answer differently without a new offer."""
        if not self.waiting:
            return RATE_WINDOW_SECONDS
        waits = [self.retry_at - now]
        if len(self.window) >= self.route.rate_per_minute:
            waits.append(self.window[0] + RATE_WINDOW_SECONDS - now)
        return max(0.0, max(waits))

    def _collapse(self, keep: int, *, now: float) -> None:
        covered = [e for m in self.waiting[keep:] for e in m.covered]
        self.waiting = self.waiting[:keep] + [Message(summary_event(covered, host=self.host, now=now), covered)]

    def settle(self, message: Message, problem: str | None, *, now: float) -> None:
        """The outcome of sending ``message`` (``problem`` None: delivered)."""
        if problem is None:
            self.window.append(now)
            self._done(message, now)
            self.failures, self.retry_at = 0, 0.0
            self.health.update(last_ok=now, failing=False, attempts=0)
            return
        message.attempts += 1
        self.failures += 1
        self.retry_at = now + min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (self.failures - 1))
        self.health.update(last_error=problem, last_error_at=now, failing=True, attempts=message.attempts,
                           retry_at=self.retry_at)
        if message.attempts >= MAX_ATTEMPTS:
            self._done(message, now)
            self.health["given_up"] = self.health.get("given_up", 0) + 1

    def _done(self, message: Message, now: float) -> None:
        if message in self.waiting:
            self.waiting.remove(message)
        if message.event.kind == "test":
            return
        for event_id in message.ids:
            self.sent[event_id] = now
        while len(self.sent) > SENT_KEPT:
            del self.sent[min(self.sent, key=self.sent.__getitem__)]


def _reminder(event: Event) -> Event:
    return Event(event.kind, event.id, title=REMINDER_PREFIX + event.title, body=event.body, session=event.session,
                 host=event.host, severity=event.severity, time=event.time, lasting=event.lasting)


def _kind_of(event_id: str) -> str:
    """An id's kind: the word before its first colon (``halt:...``)."""
    return event_id.split(":", 1)[0]
