"""leashd's acknowledgements of hook requests: how a client tells a daemon
that is judging its call from one that is stopped or hung.

A hook request that asks for them (``"ack": "1"``, as the thin hook's do)
hears from leashd at least every ``BEAT_SECONDS`` until its answer:

* a call answered within ``FIRST_ACK_SECONDS`` (nearly all of them) gets its
  answer and nothing else: the answer is the acknowledgement;
* a call judged for longer (a slow store, every serving slot busy) gets
  ``{"ack": "judging"}`` from the beat thread, again each ``BEAT_SECONDS``;
* a call held for an approval gets ``{"ack": "held", "approval": ID}`` from
  its own connection's thread before it waits, and no beats after: the client
  then waits the approval's timeout.

The client (``core.wire.thinhook``) refuses a call when it heard nothing for
``ACK_WAIT_SECONDS`` (2 s), so a SIGSTOPped leashd costs each call about two
seconds instead of the approval's five minutes.

Failure: a beat that cannot be written at once (the client is gone, its
buffer full) is skipped: a live client hears the next one, a gone one is the
connection thread's to find. Beats and answers share one lock per call, so a
beat never lands after, or inside, the answer. What this cannot see: a daemon
whose beat thread runs while the thread judging the call is stuck forever
(a deadlock inside leashd); the client's overall deadline (20 s) still ends it.
"""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

from leash.core.wire.lines import encode
from leash.core.wire.thinhook import ACK_ASKED, ACK_KEY, ACK_WAIT_SECONDS, HELD_ACK

FIRST_ACK_SECONDS = 0.5  # a judgement that takes longer is acknowledged ("judging")
BEAT_SECONDS = 1.0  # and again this often: half the client's ACK_WAIT_SECONDS
TICK_SECONDS = 0.25  # how often the beat thread looks
JUDGING_LINE = encode({ACK_KEY: "judging"})
assert BEAT_SECONDS + TICK_SECONDS < ACK_WAIT_SECONDS  # a beat always lands before the client gives up


class Call:
    """One hook request being judged on ``conn``."""

    __slots__ = ("conn", "lock", "started", "last", "done")

    def __init__(self, conn: socket.socket, *, now: float):
        self.conn, self.lock = conn, threading.Lock()
        self.started = self.last = now
        self.done = False

    def due(self, *, now: float) -> bool:
        return not self.done and now - self.started >= FIRST_ACK_SECONDS and (
            self.last == self.started or now - self.last >= BEAT_SECONDS)

    def beat(self, *, now: float) -> None:
        with self.lock:
            if self.done:
                return
            try:
                self.conn.send(JUDGING_LINE, socket.MSG_DONTWAIT)
            except OSError:
                return  # gone or full: see the module's docstring
            self.last = now

    def finish(self) -> None:
        """No beat from now on: the answer or the held acknowledgement follows."""
        with self.lock:
            self.done = True


class Acknowledger:
    """The beat thread and the calls it watches."""

    def __init__(self, stopping: threading.Event, *, clock=time.monotonic):
        self.stopping, self.clock = stopping, clock
        self.calls: set[Call] = set()
        self.mutex = threading.Lock()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._beat_forever, name="hook acknowledgements", daemon=True)
        self.thread.start()

    @contextmanager
    def judging(self, conn: socket.socket, request: dict):
        """Watch this request while it is judged (when it asked for acknowledgements)."""
        if request.get(ACK_KEY) != ACK_ASKED:
            yield None
            return
        call = Call(conn, now=self.clock())
        with self.mutex:
            self.calls.add(call)
        try:
            yield call
        finally:
            call.finish()
            with self.mutex:
                self.calls.discard(call)

    @staticmethod
    def held(call: Call | None, approval_id: str) -> None:
        """Tell the client its call waits for approval ``approval_id``."""
        if call is None:
            return
        call.finish()
        call.conn.settimeout(None)
        call.conn.sendall(encode({ACK_KEY: HELD_ACK, "approval": approval_id}))

    def beat_due(self) -> int:
        """One look: a beat to each call judged long enough; returns how many."""
        now = self.clock()
        with self.mutex:
            due = [call for call in self.calls if call.due(now=now)]
        for call in due:
            call.beat(now=now)
        return len(due)

    def _beat_forever(self) -> None:
        while not self.stopping.wait(TICK_SECONDS):
            self.beat_due()
