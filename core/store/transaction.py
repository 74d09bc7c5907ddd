"""A full stop in one step: a stop, a hands-off lock and the session's entity,
queued under ``with transaction(...) as step:`` and written together at its end,
over either backend's registries (each state's ``holding()``: the files' locks, or
one database transaction).

Each write is checked as it is queued (a bad name or hours raises there, before
anything is written). At the end of the block, under the stop and lock files'
locks, the writes are applied in order; each appends its ack-log line first, as
every write does. A block that raises writes nothing. A write that fails while
the step is applied undoes the ones before it with a ``resume`` / ``release``
line (the log is append-only: the undo is logged, never erased), so no half of
a full stop is left standing. A re-lock that kept a longer lock is not undone:
it shortened nothing.

``step.results`` holds the records of the stop and lock writes (a
``StopRecord``, a ``LockRecord``), in order.
"""
from __future__ import annotations

from leash.core.base.clock import now_seconds
from leash.core.base.hours import hours_problem
from leash.core.state.handsoff import PATH_PREFIX, validate_entity
from leash.core.store.records import LockRecord, StopRecord

TYPE_CHECKING = False  # for the type checker only: the hook path imports this module
if TYPE_CHECKING:
    from leash.core.state.handsoff import HandsOffRegistry
    from leash.core.state.sessions import SessionRegistry
    from leash.core.state.stop import StopRegistry

UNDO_SOURCE = "leash"
MAX_UNDO_REASON = 500


class Step:
    """The writes of one transaction (see the module's docstring)."""

    def __init__(self, stops: StopRegistry, locks: HandsOffRegistry, sessions: SessionRegistry, now: float):
        self.stops, self.locks, self.sessions = stops, locks, sessions
        self.now = now
        self.writes: list[tuple[str, tuple, dict]] = []
        self.results: list[StopRecord | LockRecord] = []

    def stop(self, session_id: str, *, source: str, reason: str = "", **extra: object) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("a session id must be a non-empty string")
        self.writes.append(("stop", (session_id,), {"source": source, "reason": reason, **extra}))

    def lock(self, entity: str, *, hours: float, source: str, reason: str = "",
             session_id: str | None = None) -> None:
        validate_entity(entity)
        problem = hours_problem(hours)
        if problem:
            raise ValueError(f"hours {problem}")
        self.writes.append(("lock", (entity,), {"hours": hours, "source": source, "reason": reason,
                                                "session_id": session_id}))

    def set_entity(self, session_id: str, entity: str) -> None:
        self.writes.append(("set_entity", (session_id, entity), {}))

    def full_stop(self, session_id: str, entity: str, *, hours: float, source: str, reason: str = "") -> None:
        """Stop the session, lock ``entity`` for it, and make the entity the
        session's own unless it is a ``path:`` pattern (files, not an agent)."""
        self.stop(session_id, source=source, reason=reason, entity=entity)
        self.lock(entity, hours=hours, reason=reason, source=source, session_id=session_id)
        if not entity.startswith(PATH_PREFIX):
            self.set_entity(session_id, entity)

    def apply(self) -> list[StopRecord | LockRecord]:
        with self.stops.state.holding(), self.locks.state.holding():
            stopped_before = set(self.stops.snapshot(now=self.now)["sessions"])
            locked_before = set(self.locks.active(now=self.now))
            done: list[tuple[str, str]] = []
            try:
                for kind, args, options in self.writes:
                    if kind == "set_entity":
                        self.sessions.set_entity(*args, now=self.now)
                    else:
                        self.results.append(self._written(kind, args[0], options))
                        done.append((kind, args[0]))
            except BaseException as exc:
                self._undo(done, stopped_before, locked_before, exc)
                raise
        return self.results

    def _written(self, kind: str, name: str, options: dict) -> StopRecord | LockRecord:
        if kind == "stop":
            return StopRecord.of(self.stops.stop(name, now=self.now, **options), key=name)
        return LockRecord.of(self.locks.lock(name, now=self.now, **options), entity=name)

    def _undo(self, done: list[tuple[str, str]], stopped_before: set, locked_before: set,
              exc: BaseException) -> None:
        reason = f"full stop undone: {type(exc).__name__}: {exc}"[:MAX_UNDO_REASON]
        for kind, name in reversed(done):
            if kind == "stop" and name not in stopped_before:
                self.stops.resume(name, source=UNDO_SOURCE, reason=reason, now=self.now)
            elif kind == "lock" and name not in locked_before:
                self.locks.release(name, source=UNDO_SOURCE, reason=reason, now=self.now)


class transaction:
    """``with transaction(stops, locks, sessions, now=) as step:`` over a home's
    ``StopRegistry``, ``HandsOffRegistry`` and ``SessionRegistry``."""

    def __init__(self, stops: StopRegistry, locks: HandsOffRegistry, sessions: SessionRegistry, *,
                 now: float | None = None):
        self.step = Step(stops, locks, sessions, now_seconds(now))

    def __enter__(self) -> Step:
        return self.step

    def __exit__(self, kind: type[BaseException] | None, value: object, traceback: object) -> None:
        if kind is None:
            self.step.apply()
