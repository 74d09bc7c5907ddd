"""The notifier leashd runs: one thread reads, one thread per route sends.

``Notifier.start()`` (from ``core.daemon.service``) starts, when
``config.toml`` has routes:

* the reading thread: each reading (``tick``) first renews the lease (in a
  store many hosts share, one leashd sends: ``core.store.leases``, renewed every
  ``LEASE_RENEW_SECONDS`` for ``LEASE_SECONDS``), then, when this notifier
  holds it, reads the stores (``core.notify.sources``), offers the events to
  every route and saves ``run/notify.json``. It reads when the daemon's change
  feed says a store changed (``SETTLE_SECONDS`` after, and at most every
  ``MIN_READ_SECONDS``) and every ``TICK_SECONDS`` anyway (waits that pass
  ``waiting_after_s``, reminders, hosts gone quiet);
* one sending thread per route (``RouteWorker``), each with its own queue
  (``core.notify.dispatch``): a route that hangs or fails delays only itself,
  and no hook ever waits on any of it (hooks are answered by other threads
  and never touch the notifier).

``probe`` is ``leash notify test``: a test message straight through each route.

Failure: a reading or a save that fails is said on leashd's log and tried
again at the next tick; a delivery that fails is retried with backoff and
recorded in the route's health (``leash doctor``); a lease that cannot be
renewed because the store is away keeps the role it had, so the last sender
reports the store's loss; a notifier that lost the lease to another host drops
what it had queued. Nothing here stops the daemon.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time

from leash.core.notify import state
from leash.core.notify.dispatch import RouteQueue
from leash.core.notify.events import Event, clean, probe_event
from leash.core.notify.routes import Route, escalation_delays, routes_of
from leash.core.notify.sender import DeliveryFailed, deliver
from leash.core.notify.sources import Gatherer

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    import queue

    from leash.core.store.protocols import Backend


TICK_SECONDS = 1.0  # the stores are read at least this often
SETTLE_SECONDS = 0.05  # after a change, a reading waits this long for the rest of a burst
MIN_READ_SECONDS = 0.25  # readings are at least this far apart however busy the stores are
LEASE_SECONDS = 20.0  # a sender that stops renewing hands over within this
LEASE_RENEW_SECONDS = 5.0
PROBLEM_LIMIT = 300
WAKE_SECONDS = 1.0  # a sending thread looks at its queue at least this often
CLOSE_WAIT_SECONDS = 2.0  # how long closing waits for the threads, all together


class RouteWorker:
    """One route's queue and the thread that sends it."""

    def __init__(self, queue: RouteQueue, *, send=deliver, clock=time.time, say=None):
        self.queue = queue
        self.route = queue.route
        self.send = send
        self.clock = clock
        self.say = say or (lambda *args, **kwargs: None)
        self.ready = threading.Condition()
        self.halt = threading.Event()
        self.thread: threading.Thread | None = None

    def offer(self, events: list[Event], read_kinds: set[str], *, now: float) -> None:
        with self.ready:
            if self.queue.offer(events, read_kinds=read_kinds, now=now):
                self.ready.notify()

    def drop_queued(self) -> None:
        with self.ready:
            self.queue.waiting.clear()

    def pump(self, *, now: float | None = None) -> int:
        """Send what is due now, one message after another; how many were tried."""
        tried = 0
        while not self.halt.is_set():
            with self.ready:
                message = self.queue.due(now=self.clock() if now is None else now)
            if message is None:
                return tried
            tried += 1
            problem = self._deliver(message.event)
            with self.ready:
                self.queue.settle(message, problem, now=self.clock() if now is None else now)
            if problem is None:
                self.say("notify-sent", route=self.route.number, kind=message.event.kind, id=message.event.id)
            else:
                self.say("notify-failed", route=self.route.number, kind=message.event.kind, problem=problem,
                         attempt=message.attempts)
        return tried

    def _deliver(self, event: Event) -> str | None:
        try:
            self.send(self.route, event)
        except DeliveryFailed as exc:
            return clean(str(exc), PROBLEM_LIMIT)
        except Exception as exc:  # a bug in a route must not end its thread
            return clean(f"{exc.__class__.__name__}: {exc}", PROBLEM_LIMIT)
        return None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=f"notify-route-{self.route.number}", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.halt.set()
        with self.ready:
            self.ready.notify_all()

    def _run(self) -> None:
        while not self.halt.is_set():
            self.pump()
            with self.ready:
                if self.halt.is_set():
                    return
                self.ready.wait(timeout=min(WAKE_SECONDS, max(0.01, self.queue.next_chance(now=self.clock()))))


class Notifier:
    def __init__(self, home: str, backend: Backend, *, host: str, feed=None, approvals=None, say=None, clock=time.time,
                 settings: dict | None = None, send=deliver):
        from leash.core.base.config import load_config

        self.home, self.backend, self.host, self.feed, self.clock = home, backend, host, feed, clock
        self.say = say or (lambda *args, **kwargs: None)
        # Where the phone page is reached from afar ([serve] public_url): the notification's View link.
        self.public_url = ""
        if settings is None:
            config = load_config(home)
            settings, self.public_url = config["notify"], str(config["serve"]["public_url"])
        self.routes = routes_of(settings)
        self.saved = state.load(home)
        self.saved["since"] = self.saved.get("since") or clock()
        records = self.saved["routes"]
        self.workers = [RouteWorker(RouteQueue(route, remind_after_s=settings["remind_after_s"], host=host,
                                               sent=_record(records, route).get("sent"),
                                               health=_record(records, route).get("health")),
                                    send=self._answering(send), clock=clock, say=self.say)
                        for route in self.routes]
        self.delays = escalation_delays(self.routes)
        self.gatherer = Gatherer(backend, host=host, waiting_after_s=settings["waiting_after_s"],
                                 since=self.saved["since"], approvals=approvals, say=self.say)
        self.holder = f"{host}:{os.getpid()}:{os.urandom(4).hex()}"
        self.sending = False
        self.lease_checked: float | None = None
        self.read_at = 0.0  # time.monotonic() of the last reading
        self.last_written = ""
        self.halt = threading.Event()
        self.thread: threading.Thread | None = None
        self.inbox: queue.Queue | None = None  # the change feed's queue the reading thread waits on

    def _answering(self, send):
        """``send``, giving an approval on an ntfy route with a reply topic its
        Allow and Deny buttons (tokens signed under this home's answer key)."""
        def sending(route, event) -> None:
            actions = self._answer_actions(route, event)
            if actions:
                send(route, event, actions=actions)
            else:
                send(route, event)

        return sending

    def _answer_actions(self, route, event) -> tuple:
        if event.kind != "approval" or not route.reply_url or not event.id.startswith("approval:"):
            return ()
        from leash.core.notify.answers import answer_key, token

        try:
            key = answer_key(self.home, create=True)
            approval = self.backend.approvals.get(event.id[len("approval:"):])
        except Exception as exc:  # sent without buttons: the operator answers another way
            self.say("notify-no-buttons", route=route.number, problem=f"{exc.__class__.__name__}: {exc}")
            return ()
        if approval.status != "waiting":
            return ()
        buttons = (("Allow", route.reply_url, token(key, approval, "allow")),
                   ("Deny", route.reply_url, token(key, approval, "deny")))
        return buttons + ((("View", self.public_url.rstrip("/") + "/approvals", ""),) if self.public_url else ())

    # ------------------------------------------------------------ lifecycle
    def start(self) -> bool:
        """Start the threads; False (and nothing started) when no route is configured."""
        if not self.routes:
            return False
        for worker in self.workers:
            worker.start()
        self.thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self.thread.start()
        self.say("notify-started", routes=len(self.routes))
        return True

    def close(self) -> None:
        """Stop the threads; a route stuck in a delivery is not waited for
        beyond ``CLOSE_WAIT_SECONDS`` (its thread dies with the process)."""
        self.halt.set()
        self._wake()
        for worker in self.workers:
            worker.stop()
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        for thread in [self.thread] + [w.thread for w in self.workers]:
            if thread is not None:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.sending:
            try:
                self._leases().release(state.LEASE_NAME, self.holder)
            except Exception as exc:  # the lease then expires by itself
                self.say("notify-lease-not-released", problem=f"{exc.__class__.__name__}: {exc}")
        if self.routes:
            self._save()

    def _wake(self) -> None:
        """A reading thread waiting on the change feed sees the halt now, not a tick later."""
        import queue

        if self.inbox is not None:
            with contextlib.suppress(queue.Full):  # a full inbox wakes it as well
                self.inbox.put_nowait(None)

    # ------------------------------------------------------------ readings
    def tick(self, *, now: float | None = None) -> bool:
        """One reading: the lease, the stores, the offers, the save; whether this notifier sends."""
        moment = self.clock() if now is None else now
        self._lease(moment)
        if not self.sending:
            return False
        self.read_at = time.monotonic()
        events, read = self.gatherer.gather(now=moment)
        for worker, delay in zip(self.workers, self.delays, strict=True):
            # A route down an escalation chain hears of an approval or halt only once it went unanswered that long.
            heard = events if not delay else [e for e in events if not e.reminded or moment - e.time >= delay]
            worker.offer(heard, read, now=moment)
        self._save()
        return True

    def _leases(self):
        from leash.core.store.leases import leases_of

        return leases_of(self.backend)

    def _lease(self, now: float) -> None:
        if self.lease_checked is not None and 0 <= now - self.lease_checked < LEASE_RENEW_SECONDS:
            return
        self.lease_checked = now
        try:
            held = self._leases().claim(state.LEASE_NAME, self.holder, host=self.host, seconds=LEASE_SECONDS,
                                        now=now)
        except Exception as exc:  # the store away: the role stays as it was (see the module's docstring)
            self.say("notify-lease-unknown", problem=f"{exc.__class__.__name__}: {exc}")
            return
        if held != self.sending:
            self.say("notify-sending" if held else "notify-standby", host=self.host)
            if not held:
                for worker in self.workers:
                    worker.drop_queued()
        self.sending = held

    def _save(self) -> None:
        records = {}
        for worker in self.workers:
            with worker.ready:
                records[worker.route.key] = {"sent": dict(worker.queue.sent), "health": dict(worker.queue.health)}
        data = {"since": self.saved["since"], "routes": records}
        text = json.dumps(data, sort_keys=True)
        if text == self.last_written:
            return
        try:
            state.save(self.home, data)
            self.last_written = text
        except OSError as exc:
            self.say("notify-state-not-saved", problem=exc.strerror or str(exc))

    def _run(self) -> None:
        inbox = self.inbox = self.feed.join() if self.feed is not None else None
        try:
            while not self.halt.is_set():
                try:
                    self.tick()
                except Exception as exc:  # said, and read again at the next tick
                    self.say("notify-tick-failed", problem=f"{exc.__class__.__name__}: {exc}")
                self._wait(inbox)
        finally:
            if inbox is not None:
                self.feed.leave(inbox)

    def _wait(self, inbox) -> None:
        """Until a store changes (then a moment for the rest of its burst) or ``TICK_SECONDS`` pass."""
        import queue

        if inbox is None:
            self.halt.wait(TICK_SECONDS)
            return
        try:
            inbox.get(timeout=TICK_SECONDS)
        except queue.Empty:
            return
        since_read = time.monotonic() - self.read_at
        self.halt.wait(max(SETTLE_SECONDS, MIN_READ_SECONDS - since_read))
        while True:
            try:
                inbox.get_nowait()
            except queue.Empty:
                return


def _record(records: dict, route: Route) -> dict:
    found = records.get(route.key)
    return found if isinstance(found, dict) else {}


def probe(home: str, *, number: int | None = None, host: str, now: float | None = None,
          send=deliver) -> list[tuple[Route, str | None]]:
    """``leash notify test``: a test message through each route (or route
    ``number``, 1-based); (route, problem or None) each. ``ValueError`` for a
    route number the configuration does not have."""
    from leash.core.base.clock import now_seconds
    from leash.core.base.config import load_config

    routes = routes_of(load_config(home)["notify"])
    if number is not None:
        if not 1 <= number <= len(routes):
            raise ValueError(f"--route {number}: config.toml has {len(routes)} [[notify.route]] table"
                             f"{'s' if len(routes) != 1 else ''}")
        routes = [routes[number - 1]]
    event = probe_event(host=host, now=now_seconds(now))
    results: list[tuple[Route, str | None]] = []
    for route in routes:
        try:
            send(route, event)
            results.append((route, None))
        except DeliveryFailed as exc:
            results.append((route, clean(str(exc), PROBLEM_LIMIT)))
    return results
