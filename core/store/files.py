"""``FileBackend``: every store over the files and SQLite databases of one home.

Each store delegates to the class or module that owns its file (``AckLog``,
``StopRegistry``, ``HandsOffRegistry``, ``SessionRegistry``, the halt API,
``WarrantQueue``, ``loopguard``, ``replyledger``, the kennel), so formats and
fail policies are theirs: a stop state that cannot be read raises
``StopStateUnreadable`` (the gate fails closed), a breaker that cannot be read
is not tripped (fails open), and so on. The halt, warrant, breaker, reply and
kennel stores live in ``leash.core.store.filestores``.

``transaction()`` queues a full stop's writes and applies them at its end under
the stop and lock files' locks (``leash.core.store.transaction``). ``changes()``
watches the home (``watchfiles``, imported there and only there).
"""
from __future__ import annotations

import os

from leash.core.base.home import ensure_home
from leash.core.base.logverify import ChainReport
from leash.core.base.statefile import JSONObject
from leash.core.state.acklog import FLEET, AckLog
from leash.core.state.handsoff import HandsOffRegistry
from leash.core.state.sessions import SessionRegistry
from leash.core.state.stop import StopRegistry
from leash.core.store.lazystores import LazyStores
from leash.core.store.records import (
    ChainAnchor,
    Change,
    LockRecord,
    LogLine,
    LogLines,
    SessionRecord,
    StopRecord,
    StopState,
)
from leash.core.store.transaction import transaction

TYPE_CHECKING = False  # typing is for the type checker only: the hook path imports this module
if TYPE_CHECKING:
    from typing import Any, AsyncIterator, Iterator

    from leash.core.base.finding import Finding

DEBOUNCE_MS = 150  # one burst of writes (a file and its lock, a rename) is one change

# A changed file's name -> the store it belongs to.
STORE_OF_FILE = {
    "stops.json": "stops", "hands_off_registry.json": "locks", "sessions.json": "sessions",
    "stop_ack_log.jsonl": "acklog", "halts.db": "halts", "halts.db-wal": "halts", "replies.db": "replies",
    "replies.db-wal": "replies", "kennel.json": "kennels", "restart_loop.json": "breakers",
    "approvals.json": "approvals", "budget.db": "budget", "budget.db-wal": "budget", "budget-holds.json": "budget",
}
WARRANT_DIRS = ("warrants", "dogs")


class FileAckLog:
    def __init__(self, log: AckLog):
        self.log = log

    def append(self, event: str, *, source: str, session_id: str, reason: str = "", now: float | None = None,
               **extra: object) -> LogLine:
        return LogLine.of(self.log.append(event, source=source, session_id=session_id, reason=reason, now=now,
                                          **extra))

    def read(self, **filters: Any) -> LogLines:
        stream = self.log.lines(**filters)  # one list, of the records: the parsed lines are not kept twice
        lines = LogLines(LogLine.of(line) for line in stream)
        lines.torn_bytes, lines.unreadable_lines = stream.torn_bytes, stream.unreadable_lines
        return lines

    def tail(self, count: int) -> list[LogLine]:
        return [LogLine.of(line) for line in self.log.tail(count)]

    def follow(self, **options: Any) -> Iterator[LogLine]:
        for line in self.log.follow(**options):
            yield LogLine.of(line)

    def verify(self, *, anchor: ChainAnchor | None = None) -> ChainReport:
        return self.log.verify(anchor=anchor.as_dict() if anchor is not None else None)


class RegistryStops:
    """``StopStore`` over a ``StopRegistry`` (whichever store keeps its state)."""

    def __init__(self, registry: StopRegistry):
        self.registry = registry
        self._current: tuple[JSONObject, StopState] | None = None

    def stop(self, session_id: str, *, source: str, reason: str = "", now: float | None = None,
             **extra: object) -> StopRecord:
        return StopRecord.of(self.registry.stop(session_id, source=source, reason=reason, now=now, **extra),
                             key=session_id)

    def resume(self, session_id: str, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        return StopRecord.of(self.registry.resume(session_id, source=source, reason=reason, now=now), key=session_id)

    def stop_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        return StopRecord.of(self.registry.stop_fleet(source=source, reason=reason, now=now), key=FLEET)

    def resume_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        return StopRecord.of(self.registry.resume_fleet(source=source, reason=reason, now=now), key=FLEET)

    def snapshot(self, *, now: float | None = None) -> JSONObject:
        """The stop state as stored (``sessions``, ``fleet``, ``by_tmux_id``)."""
        return self.registry.snapshot(now=now)

    def stopped(self, *, now: float | None = None) -> dict[str, StopRecord]:
        sessions = self.snapshot(now=now)["sessions"]
        return {key: StopRecord.of(record, key=key) for key, record in sorted(sessions.items())}

    def fleet(self, *, now: float | None = None) -> StopRecord | None:
        return StopRecord.of(self.snapshot(now=now)["fleet"], key=FLEET)

    def covering(self, names: list[str], *, tmux_session_id: str = "") -> tuple[str, str | None] | None:
        return self.registry.covering(names, tmux_session_id=tmux_session_id)

    def current(self, *, now: float | None = None) -> StopState:
        stored = self.registry.snapshot(now=now)
        cached = self._current
        if cached is not None and cached[0] is stored:  # the registry's cache: the file has not changed
            return cached[1]
        state = StopState.of(stored)
        self._current = (stored, state)
        return state


class RegistryLocks:
    """``LockStore`` over a ``HandsOffRegistry``."""

    def __init__(self, registry: HandsOffRegistry):
        self.registry = registry

    def lock(self, entity: str, *, hours: float, reason: str = "", source: str, session_id: str | None = None,
             now: float | None = None, **extra: Any) -> LockRecord:
        return LockRecord.of(self.registry.lock(entity, hours=hours, reason=reason, source=source,
                                                session_id=session_id, now=now, **extra), entity=entity)

    def release(self, entity: str, *, source: str, reason: str = "", now: float | None = None) -> LockRecord:
        return LockRecord.of(self.registry.release(entity, source=source, reason=reason, now=now), entity=entity)

    def active(self, *, now: float | None = None) -> dict[str, LockRecord]:
        return {entity: LockRecord.of(lock, entity=entity)
                for entity, lock in sorted(self.registry.active(now=now).items())}

    def lock_of(self, entity: str, *, now: float | None = None) -> LockRecord | None:
        return LockRecord.of(self.registry.lock_of(entity, now=now), entity=entity)

    def lock_for_path(self, file_path: str, *, cwd: str | None = None, now: float | None = None,
                      subtree: bool = False) -> LockRecord | None:
        found = self.registry.lock_for_path(file_path, cwd=cwd, now=now, subtree=subtree)
        if found is None:
            return None
        if isinstance(found, tuple):  # (entity, lock)
            return LockRecord.of(found[1], entity=found[0])
        return LockRecord.of(found)

    def covering(self, names: list[str], *, tmux_session_id: str = "",
                 now: float | None = None) -> LockRecord | None:
        found = self.registry.lock_covering(names, tmux_session_id=tmux_session_id or "", now=now)
        return LockRecord.of(found[1], entity=found[0]) if found is not None else None

    def has_path_locks(self, *, now: float | None = None) -> bool:
        return self.registry.has_path_locks(now=now)

    def view(self, *, now: float | None = None) -> "RegistryLocks":
        """These locks read once: the view's every read answers from that reading."""
        return RegistryLocks(self.registry.pinned(now=now))


class RegistrySessions:
    """``SessionStore`` over a ``SessionRegistry``."""

    def __init__(self, registry: SessionRegistry):
        self.registry = registry
        self.host = registry.host  # "" in a home of one host
        self.hosted = registry.hosted

    def observe(self, session_id: str, *, now: float | None = None, **fields: Any) -> SessionRecord | None:
        """The session seen (``known=``: its record as just read, a dict); its record as stored now."""
        return SessionRecord.of(self.registry.observe(session_id, now=now, **fields), session_id=session_id)

    def get(self, session_id: str, *, now: float | None = None) -> SessionRecord | None:
        return SessionRecord.of(self.registry.get(session_id, now=now), session_id=session_id)

    def all(self, *, now: float | None = None) -> dict[str, SessionRecord]:
        return {key: SessionRecord.of(record, session_id=key)
                for key, record in sorted(self.registry.all(now=now).items())}

    def set_entity(self, session_id: str, entity: str, *, now: float | None = None) -> None:
        self.registry.set_entity(session_id, entity, now=now)

    def lineage(self, session_id: str, *, now: float | None = None) -> list[str]:
        return self.registry.lineage(session_id, now=now)

    def predecessor_in_pane(self, session_id: str, pane: str, *, now: float | None = None) -> str:
        return self.registry.predecessor_in_pane(session_id, pane, now=now)


class FileBackend(LazyStores):
    """The embedded backend: one home's files and SQLite databases."""

    name = "file"
    host = ""  # one home's files belong to one host

    def __init__(self, home: str | os.PathLike | None = None, *, keep_connections: bool = False):
        """``keep_connections``: a long-lived process (leashd) keeps its
        database connections open between calls."""
        self.home = ensure_home(home)
        if keep_connections:
            from leash.core.store.filehalts import FileHalts

            self.__dict__["halts"] = FileHalts(self.home, keep_connection=True)  # kept open (LazyStores)
        log = AckLog(self.home)
        self._hold(log, StopRegistry(self.home, log), HandsOffRegistry(self.home, log),
                   SessionRegistry(self.home, log))

    @classmethod
    def sharing(cls, owner: Any) -> "FileBackend":
        """A backend over the registries ``owner`` (a ``StopProtocol``) already
        holds: one cache of each file, and the home is not checked twice."""
        backend = cls.__new__(cls)
        backend.home = owner.home
        backend._hold(owner.acklog, owner.stops, owner.hands_off_registry, owner.sessions)
        return backend

    def _hold(self, log: AckLog, stops: StopRegistry, locks: HandsOffRegistry, sessions: SessionRegistry) -> None:
        self.acklog = FileAckLog(log)
        self.stops = RegistryStops(stops)
        self.locks = RegistryLocks(locks)
        self.sessions = RegistrySessions(sessions)

    def _make(self, name: str) -> Any:
        if name == "halts":  # the gate's store: its module alone, not the other stores'
            from leash.core.store.filehalts import FileHalts

            return FileHalts(self.home, self.acklog.log)
        from leash.core.store import filestores

        return filestores.STORES[name](self.home, self.acklog.log)

    def close(self) -> None:
        """Nothing to let go: every file is opened per call (leashd's kept
        SQLite connection ends with its process)."""

    def transaction(self, *, now: float | None = None) -> transaction:
        return transaction(self.stops.registry, self.locks.registry, self.sessions.registry, now=now)

    async def changes(self, *, debounce_ms: int = DEBOUNCE_MS, stop_event: Any = None) -> AsyncIterator[Change]:
        """Each store whose files changed, once per debounced burst."""
        from watchfiles import awatch

        async for batch in awatch(self.home, debounce=debounce_ms, step=50, stop_event=stop_event,
                                  ignore_permission_denied=True):  # a file another user left unreadable
            seen: list[Change] = []
            for _, path in sorted(batch, key=lambda item: item[1]):
                change = change_of(self.home, path)
                if change is not None and change not in seen:
                    seen.append(change)
            for change in seen:
                yield change

    def examine(self, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
        """Each file and database of the home, and each cache of the ack log
        against it (``leash.core.store.filecheck``); the home itself and the
        settings are ``leash doctor``'s own."""
        from leash.core.store.filecheck import examine

        return examine(self, repair=repair, now=now)


def change_of(home: str, path: str) -> Change | None:
    """The change a touched path means, or None for files no store owns
    (lock sidecars, temporary files, quarantined copies)."""
    relative = os.path.relpath(path, home)
    parts = relative.split(os.sep)
    if parts[0] in WARRANT_DIRS:
        name = parts[-1]
        if name.endswith(".json") and not name.startswith("."):
            return Change("warrants", name[:-len(".json")])
        return None
    store = STORE_OF_FILE.get(parts[-1])
    if store is None or len(parts) > 2:
        return None
    if store == "breakers":
        return Change(store, parts[0]) if len(parts) == 2 else None
    return Change(store) if len(parts) == 1 else None
