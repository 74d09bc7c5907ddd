"""The daemon's change feed: the backend's stream of changes, fanned out to
every ``subscribe`` connection's queue, in its own thread from the daemon's
start (so a first subscriber misses nothing written after it).

Failure: a watcher that fails (the inotify limit, say) is said on the
daemon's log, subscribers are told to re-read everything (a ``None`` in their
queue), and it is started again after ``WATCH_RETRY_SECONDS``. A subscriber
that falls ``SUBSCRIBER_QUEUE`` changes behind is told the same, never blocks
the feed.
"""
from __future__ import annotations

import queue
import threading

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


SUBSCRIBER_QUEUE = 1024  # changes a slow subscriber may lag by before it is told to re-read all
WATCH_RETRY_SECONDS = 2.0
STREAM_WAIT_SECONDS = 0.5  # how soon a stream sees leashd stopping


class ChangeFeed:
    """The backend's change stream, fanned out to every subscriber's queue,
    in its own thread from the daemon's start."""

    def __init__(self, backend: Backend, *, say=None):
        self.backend = backend
        self.say = say or (lambda *args, **kwargs: None)
        self.inboxes: list[queue.Queue] = []
        self.mutex = threading.Lock()
        self.thread: threading.Thread | None = None
        self.halt = threading.Event()

    def start(self) -> None:
        with self.mutex:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="changes", daemon=True)
                self.thread.start()

    def join(self) -> queue.Queue:
        inbox: queue.Queue = queue.Queue(maxsize=SUBSCRIBER_QUEUE)
        with self.mutex:
            self.inboxes.append(inbox)
        self.start()
        return inbox

    def leave(self, inbox: queue.Queue) -> None:
        with self.mutex:
            if inbox in self.inboxes:
                self.inboxes.remove(inbox)

    def follow(self, inbox: queue.Queue, stores: frozenset, act, *, closed, wait: float = 1.0) -> None:
        """Call ``act()`` for each change of one of ``stores`` (or a wake-up:
        ``None``) that reaches ``inbox``, until ``closed`` is set; then leave."""
        try:
            while not closed.is_set():
                try:
                    change = inbox.get(timeout=wait)
                except queue.Empty:
                    continue
                if change is None or change.store in stores:
                    act()
        finally:
            self.leave(inbox)

    def stream(self, send, *, stopping: threading.Event) -> None:
        """Send ``{"change": {"store", "key"}}`` for each change until ``stopping``
        or the client goes (``send`` raises OSError); ``{"subscribed": true}`` first."""
        inbox = self.join()
        try:
            send({"subscribed": True})
            while not stopping.is_set():
                try:
                    change = inbox.get(timeout=STREAM_WAIT_SECONDS)
                except queue.Empty:
                    continue
                if change is None:  # fell too far behind: the client re-reads everything
                    send({"change": {"store": "*", "key": None}})
                    continue
                send({"change": {"store": change.store, "key": change.key}})
        finally:
            self.leave(inbox)

    def close(self) -> None:
        self.halt.set()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def _run(self) -> None:
        import asyncio

        async def pump():
            async for change in self.backend.changes(stop_event=self.halt):
                self._publish(change)

        while not self.halt.is_set():
            try:
                asyncio.run(pump())
            except Exception as exc:  # e.g. the inotify limit: say so, tell subscribers to re-read, retry
                self.say("changes-failed", problem=f"{exc.__class__.__name__}: {exc}")
                self._publish(None)
                self.halt.wait(WATCH_RETRY_SECONDS)

    def _publish(self, change) -> None:
        with self.mutex:
            inboxes = list(self.inboxes)
        for inbox in inboxes:
            try:
                inbox.put_nowait(change)  # None: "re-read everything"
            except queue.Full:
                _drain(inbox)
                inbox.put_nowait(None)


def _drain(inbox: queue.Queue) -> None:
    while True:
        try:
            inbox.get_nowait()
        except queue.Empty:
            return
