"""leashd's mirror of the shared store: what a hook's check reads, kept in memory.

Hooks never talk to the database; each host's leashd answers them, and reads
the stops, the locks and the sessions from memory rather than from the
database on every call. ``Mirror`` listens on the store's channel (its own
connection) and keeps a generation per store (and per session): a notice
bumps it, and a cached value read at an older generation is read again. After
every (re)connect every generation is bumped, since notices sent while nobody
listened are not replayed: a full re-read.

A write no notice announced (a leash that did not send one, a hand edit, a
notice lost) must not leave a mirror answering what the table no longer
says, while ``leash status`` reads the table: each mirrored log-backed value
notes the head and the version (``xmin``) of the row it was read from, and
once every ``MARK_CHECK_SECONDS`` one query compares them with the table's; a
store whose row moved is read again, as if its notice had come.

Failure (``[store] offline``): while the listener is down, nothing is read
from the database (a hook does not wait on a dead server's connect timeout);
for ``offline_grace_s`` the last values read are answered, then ``"closed"``
(the default) makes every read raise, so the gate denies every tool call
saying why, and ``"last-known"`` keeps answering the last values. A value
never read cannot be answered from memory at all: it raises.
"""
from __future__ import annotations

import threading
import time

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Callable

    from leash.core.store.pg import Database

OFFLINE_CLOSED = "closed"
OFFLINE_LAST_KNOWN = "last-known"
MAX_KEYED_GENERATIONS = 100_000  # past this many keys, every key starts over (one full re-read)
MARK_CHECK_SECONDS = 1.0  # how stale a value a write without a notice can leave, at most (one query a second)


class Offline(Exception):
    """The shared store is unreachable and the offline policy says not to answer from memory."""


class Mirror:
    """Generations of the shared store's contents, kept by LISTEN (see the module's docstring)."""

    def __init__(self, db: Database, *, grace_seconds: float = 10.0, policy: str = OFFLINE_CLOSED,
                 clock: Callable[[], float] = time.monotonic, say: Callable[..., object] | None = None):
        self.db, self.grace_seconds, self.policy, self.clock = db, grace_seconds, policy, clock
        self.say = say or (lambda *args, **kwargs: None)
        self.listening = False
        self.epoch = 0  # bumped at every (re)connect and loss: everything cached before is stale
        self.generations: dict[str, int] = {}
        self.keyed: dict[tuple[str, str], int] = {}
        self.marks: dict[str, tuple | None] = {}  # store -> (head_seq, row version) its value was read at
        self.check_seconds = MARK_CHECK_SECONDS
        self.lost_at: float | None = None
        self.mutex = threading.Lock()
        self.connected = threading.Event()
        self.halt = threading.Event()
        self.thread: threading.Thread | None = None
        self.checker: threading.Thread | None = None

    def start(self, *, wait_seconds: float = 5.0) -> bool:
        """Start listening; whether the first connection was made within ``wait_seconds``."""
        self.thread = threading.Thread(target=self._run, name="pg-mirror", daemon=True)
        self.thread.start()
        self.checker = threading.Thread(target=self._check_marks, name="pg-mirror-marks", daemon=True)
        self.checker.start()
        return self.connected.wait(wait_seconds)

    def stop(self) -> None:
        self.halt.set()
        for thread in (self.thread, self.checker):
            if thread is not None:
                thread.join(timeout=5)

    # ------------------------------------------------------------ readers
    def stamp(self, store: str) -> tuple[int, int]:
        with self.mutex:
            return self.epoch, self.generations.get(store, 0)

    def current(self, store: str, stamp: tuple[int, int], key: str | None = None) -> bool:
        """Whether a value read at ``stamp`` is still what the database holds."""
        with self.mutex:
            if not self.listening or stamp[0] != self.epoch:
                return False
            if key is not None:
                return self.keyed.get((store, key), 0) <= stamp[1]
            return self.generations.get(store, 0) == stamp[1]

    def note(self, store: str, mark: tuple | None) -> None:
        """The row ``store``'s mirrored value was just read from (None: no row)."""
        with self.mutex:
            self.marks[store] = mark

    def reachable(self) -> bool:
        """Whether a read may go to the database now (the listener is up)."""
        return self.listening

    def answer_offline(self, what: str) -> None:
        """Return when the last value read may be answered while offline; raise ``Offline`` otherwise."""
        lost = self.lost_at
        down = 0.0 if lost is None else self.clock() - lost
        if self.policy == OFFLINE_LAST_KNOWN or down < self.grace_seconds:
            return
        raise Offline(f"the shared store has been unreachable for {down:.0f} s ([store] offline = \"closed\"): "
                      f"{what} cannot be established")

    # ------------------------------------------------------------ listening
    def _run(self) -> None:
        for notice in self.db.notices(stop=self.halt, on_lost=lambda exc: self._lost(str(exc))):
            if notice is None:
                self._connected()
            else:
                self._bump(str(notice.get("store", "")), str(notice.get("key") or ""))

    def _check_marks(self) -> None:
        """Read again every store whose row moved without a notice."""
        from leash.core.store.pg import StoreOffline

        while not self.halt.wait(self.check_seconds):
            if not self.listening or not self.marks:
                continue
            try:
                rows = self.db.rows("SELECT store, head_seq, xmin::text FROM log_state")
            except StoreOffline:
                continue  # the listener notices a lost server; the offline policy answers meanwhile
            found = {store: (head, version) for store, head, version in rows}
            with self.mutex:
                moved = [store for store, mark in self.marks.items() if found.get(store) != mark]
                for store in moved:
                    del self.marks[store]
            for store in moved:
                self._bump(store, "")

    def _connected(self) -> None:
        if self.connected.is_set():  # back after a loss: the pool's connections may be dead
            self.db.discard_idle()
        with self.mutex:
            self.listening, self.lost_at = True, None
            self.epoch += 1
            self.keyed.clear()
        if self.connected.is_set():
            self.say("store_back")
        self.connected.set()

    def _lost(self, problem: str) -> None:
        with self.mutex:
            was = self.listening
            self.listening = False
            self.epoch += 1
            if self.lost_at is None:
                self.lost_at = self.clock()
        self.db.discard_idle()
        if was:
            self.say("store_lost", problem=problem)

    def _bump(self, store: str, key: str) -> None:
        with self.mutex:
            generation = self.generations.get(store, 0) + 1
            self.generations[store] = generation
            if key:
                if len(self.keyed) >= MAX_KEYED_GENERATIONS:
                    self.keyed.clear()
                    self.epoch += 1
                self.keyed[(store, key)] = generation
