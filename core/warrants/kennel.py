"""The kennel: a pool of dogs working the warrant queue.

``Kennel.run()`` (asyncio) keeps ``kennel.json`` — pid, host, started_at,
heartbeat_at, dogs — fresh every second and renews its claims with it (a dog
whose claim is lost stops), resumes dogs whose kennel died (their claim is
free) and then takes pending warrants in filing order, up to ``dogs``
at a time; warrants beyond the pool wait. Each dog runs in its own task and
sleeps between polls; tmux calls run in worker threads so one slow pane never
stalls the others. ``until_idle`` ends the run when nothing is pending or
active. SIGTERM/SIGINT stop it cleanly: active dogs keep their state for the
next kennel.

``running_kennel(home)`` says whether another kennel is alive (a heartbeat
younger than ``HEARTBEAT_STALE_SECONDS``). Everything goes through the
kennel's ``Backend`` (keyword ``backend``, default the home's,
``backend_for(home)``): heartbeats through ``backend.kennels``, warrants and
claims through ``backend.warrants`` (a claim is an object the dog's task
completes or releases, never a bare descriptor), the hands-off check before a
kill through ``backend.locks`` and ``backend.sessions``.
"""
from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import TYPE_CHECKING

from leash.core.base.clock import iso

# KENNEL_NAME and HEARTBEAT_STALE_SECONDS belong to the kennel store; named here too for the kennel's readers.
from leash.core.store.filestores import HEARTBEAT_STALE_SECONDS as HEARTBEAT_STALE_SECONDS
from leash.core.store.filestores import KENNEL_NAME as KENNEL_NAME
from leash.core.store.records_warrants import KennelOwner
from leash.core.warrants.dog import Dog

if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.store.protocols_work import Claim

HEARTBEAT_SECONDS = 1.0
IDLE_POLL_SECONDS = 0.5
CLAIM_AHEAD = 1
ORPHAN_SCAN_SECONDS = 1.0


def _backend(home, backend: Backend | None) -> Backend:
    from leash.core.store.select import backend_for

    return backend if backend is not None else backend_for(home)


def running_kennel(home=None, *, now: float | None = None, backend: Backend | None = None) -> dict | None:
    beat = _backend(home, backend).kennels.alive(now=now)
    return beat.as_dict() if beat is not None else None


def hands_off_check(home=None, *, backend: Backend | None = None):
    """``check(names, tmux_session_id=, now=)``: the hands-off entity that
    protects a tmux session known by these names and this id (or None). The
    agent sessions seen inside it and their entities count too. Raises when
    the locks cannot be read: the caller must not kill then."""
    from leash.core.base.identity import protecting_entities

    backend = _backend(home, backend)

    def check(names, *, tmux_session_id: str | None = None, now: float | None = None) -> str | None:
        host = backend.sessions.host
        if host:  # a shared store keeps this host's tmux names and ids as HOST/NAME
            names = list(names) + [backend.sessions.hosted(n) for n in names if not n.startswith(host + "/")]
            if tmux_session_id and not tmux_session_id.startswith(host + "/"):
                tmux_session_id = backend.sessions.hosted(tmux_session_id)
        inside = [{**record.as_dict(), "session_id": session_id}
                  for session_id, record in backend.sessions.all(now=now).items()
                  if record.tmux_session in names or (
                      tmux_session_id is not None and record.tmux_session_id == tmux_session_id)]
        found = backend.locks.covering(protecting_entities(names, inside), tmux_session_id=tmux_session_id or "",
                                       now=now)
        return found.entity if found is not None else None

    return check


class Kennel:
    def __init__(self, home=None, *, dogs: int | None = None, tmux=None, timeouts=None,
                 poll_seconds: float | None = None, pardon_on_activity: bool | None = None, until_idle: bool = False,
                 handle_signals: bool = True, backend: Backend | None = None):
        from leash.core.base.config import load_config

        self.backend = _backend(home, backend)
        self.home = self.backend.home
        settings = load_config(self.home)["warrants"]
        self.size = dogs if dogs is not None else settings["dogs"]
        if self.size < 1:
            raise ValueError("a kennel needs at least one dog")
        self.timeouts = list(timeouts if timeouts is not None else settings["timeouts"])
        self.poll_seconds = poll_seconds if poll_seconds is not None else settings["poll_seconds"]
        self.pardon_on_activity = (pardon_on_activity if pardon_on_activity is not None
                                   else settings["pardon_on_activity"])
        self.until_idle = until_idle
        self.handle_signals = handle_signals
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self.warrants = self.backend.warrants
        self.kennels = self.backend.kennels
        if tmux is None:
            from leash.core.base.tmux import Tmux

            tmux = Tmux(home=self.home)
        self.tmux = tmux
        self.hands_off = hands_off_check(backend=self.backend)
        self.owner = KennelOwner.of({"pid": os.getpid(), "host": socket.gethostname()})
        self.working: dict[str, asyncio.Task] = {}
        self.settling: set[asyncio.Task] = set()
        self.ready: list[Claim] = []  # claimed ahead, waiting for a free dog
        self.claims: dict[str, Claim] = {}  # the claim each working dog holds; the heartbeat renews them
        self._claiming: asyncio.Task | None = None
        self._orphans_checked = float("-inf")
        self._wake: asyncio.Event | None = None
        self.started_at = iso(time.time())
        self.finished: list[dict] = []

    def _heartbeat(self, *, stopped: bool = False) -> None:
        self.kennels.beat(pid=self.owner.pid, host=self.owner.host, started_at=self.started_at,
                          dogs=self.size, working=sorted(self.working), stopped=stopped, now=time.time())

    def _renew_claims(self) -> None:
        """Renew every claim this kennel holds (a shared store's lease). A dog
        whose claim is lost stops at once, so two dogs never work one warrant:
        it is another kennel's now, or this one's again when its orphan scan
        finds it, resumed at the state and deadline it was saved with. A claim
        taken ahead and lost is let go."""
        moment = time.time()
        for warrant_id, claim in list(self.claims.items()):
            task = self.working.get(warrant_id)
            if task is not None and not claim.renew(now=moment):
                task.cancel()
        kept = []
        for claim in self.ready:
            if claim.renew(now=moment):
                kept.append(claim)
            else:
                claim.release()
        self.ready = kept

    async def _run_dog(self, claim) -> None:
        dog = Dog(claim, tmux=self.tmux, timeouts=self.timeouts, poll_seconds=self.poll_seconds,
                  pardon_on_activity=self.pardon_on_activity, hands_off=self.hands_off, defer_finish=True)
        try:
            while True:
                delay = await asyncio.to_thread(dog.tick, time.time())
                if delay is None:
                    break
                await asyncio.sleep(max(0.0, delay))
            # The verdict is in: the dog leaves the pool now, and writes its
            # epitaph while the next dog starts (it keeps its claim until done).
            self._leave_pool(dog.id)
            await asyncio.shield(asyncio.to_thread(dog.settle))
            self.finished.append(dog.state.as_dict())
        finally:
            self._leave_pool(dog.id)
            if self.claims.get(dog.id) is claim:
                del self.claims[dog.id]
            claim.release()

    def _leave_pool(self, warrant_id: str) -> None:
        task = self.working.pop(warrant_id, None)
        if task is not None:
            self.settling.add(task)
            task.add_done_callback(self.settling.discard)
            self._wake_loop()

    def _wake_loop(self) -> None:
        """Let ``run``'s loop look again now (a dog left, claims arrived)."""
        if self._wake is not None:  # (run makes it before any dog or claim starts)
            self._wake.set()

    def _claim(self, free: int, busy: set[str]) -> list:
        """Orphans first (looked for at most once a second: it reads every
        active dog's state), then pending warrants in filing order. File I/O:
        runs in a worker thread so the dogs keep polling meanwhile."""
        claimed = []
        if time.monotonic() - self._orphans_checked >= ORPHAN_SCAN_SECONDS:
            self._orphans_checked = time.monotonic()
            claimed = self.warrants.claim_orphans(owner=self.owner, skip=busy, limit=free)
        while len(claimed) < free:
            taken = self.warrants.claim_next(owner=self.owner)
            if taken is None:
                break
            claimed.append(taken)
        return claimed

    def _start(self, claim) -> None:
        if claim.state.state == "received":
            claim.state.started_at = iso(time.time())  # a claim taken ahead waited for its dog
        self.claims[claim.state.id] = claim
        self.working[claim.state.id] = asyncio.ensure_future(self._run_dog(claim))

    def _fill(self) -> None:
        """Give every free dog a warrant, and keep ``CLAIM_AHEAD`` claimed in
        advance. Claiming (disk writes) runs as a task of its own, so the loop
        never waits for it: a dog that finishes starts the next warrant at once."""
        while self.ready and len(self.working) < self.size:
            self._start(self.ready.pop(0))
        want = self.size - len(self.working) + CLAIM_AHEAD - len(self.ready)
        orphan_scan_due = time.monotonic() - self._orphans_checked >= ORPHAN_SCAN_SECONDS
        if want > 0 and self._claiming is None and (orphan_scan_due or self.warrants.has_pending()):
            busy = set(self.working) | {claim.state.id for claim in self.ready}
            self._claiming = asyncio.ensure_future(self._claim_ahead(want, busy))

    async def _claim_ahead(self, want: int, busy: set[str]) -> None:
        try:
            claimed = await asyncio.to_thread(self._claim, want, busy)
        finally:
            self._claiming = None
        self.ready.extend(claimed)
        if claimed:
            self._wake_loop()

    def _tidy_done_files(self) -> None:
        """The warrant store's housekeeping (the file backend drops the
        reports of dogs whose state it has filed away)."""
        self.warrants.tidy()

    async def run(self, *, on_start=None) -> list[dict]:
        """Work until stopped (or idle, with ``until_idle``); returns the dogs
        finished. ``on_start()`` is called once SIGTERM and SIGINT stop it cleanly."""
        import signal

        self.warrants.tidy()
        from concurrent.futures import ThreadPoolExecutor

        stop = self._stop_event = asyncio.Event()
        loop = self._loop = asyncio.get_running_loop()
        # every dog polls in a thread, finishing dogs write in one, claims run in
        # one: the default pool (cores + 4) would make dogs queue for a thread
        loop.set_default_executor(ThreadPoolExecutor(max_workers=2 * self.size + 4,
                                                     thread_name_prefix="kennel"))
        for sig in (signal.SIGTERM, signal.SIGINT) if self.handle_signals else ():
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if on_start is not None:
            on_start()
        last_beat = 0.0
        stopping = asyncio.ensure_future(stop.wait())
        self._wake = asyncio.Event()
        try:
            while not stop.is_set():
                self._wake.clear()  # before filling: a dog leaving meanwhile sets it again
                self._fill()
                if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                    self._heartbeat()
                    self._renew_claims()
                    self._tidy_done_files()
                    last_beat = time.monotonic()
                if self.until_idle and not self.working and not self.settling and not self.ready \
                        and self._claiming is None and not self.warrants.has_pending() and not self._orphans():
                    self._orphans_checked = float("-inf")  # one last look before leaving
                    self._fill()
                    if self._claiming is not None:
                        await self._claiming
                    if self.ready:
                        continue
                    break
                woken = asyncio.ensure_future(self._wake.wait())
                claiming = [self._claiming] if self._claiming is not None else []
                await asyncio.wait(list(self.working.values()) + list(self.settling) + claiming + [stopping, woken],
                                   timeout=IDLE_POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
        finally:
            stopping.cancel()
            for task in self.working.values():
                task.cancel()
            if self._claiming is not None:
                await asyncio.gather(self._claiming, return_exceptions=True)
            pending = list(self.working.values()) + list(self.settling)
            if pending:  # dogs still writing their epitaph are let finish (shielded)
                await asyncio.gather(*pending, return_exceptions=True)
            for claim in self.ready:  # claimed ahead, never started: the next kennel takes them
                claim.release()
            self.ready = []
            self._tidy_done_files()
            self._heartbeat(stopped=True)
        return self.finished

    def request_stop(self) -> None:
        """Stop the run from any thread (the console runs its kennel in one)."""
        if self._loop is not None and self._stop_event is not None:
            self._loop.call_soon_threadsafe(self._stop_event.set)

    def _orphans(self) -> bool:
        """Whether an active dog this kennel may resume is not working here
        (in a shared store only this host's: another host's dogs are its own)."""
        host = self.backend.sessions.host or None  # None: one home's files, every dog is this host's
        return any(dog.id not in self.working and (host is None or (dog.warrant or {}).get("host") == host)
                   for dog in self.warrants.active())


def run_kennel(home=None, **options) -> list[dict]:
    return asyncio.run(Kennel(home, **options).run())
