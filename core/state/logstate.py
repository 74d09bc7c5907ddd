"""A JSON state file that is a cache of the ack log.

The stops (``stops.json``) and the hands-off locks (``hands_off_registry.json``)
are each a fold of their store's ack-log lines: ``apply(state, line)`` turns one
line into its change, the same function for a writer that has just appended a
line and for a reader that replays the whole log. Every write appends the log
line **first** and then applies it to the file, under the file's lock; the file
records the ``{"seq", "hash"}`` of the last line it reflects under ``head_key``.

A reader compares that head with the store's head in ``acklog.head``. When the
file is missing, corrupt, emptied, replaced by an older copy or written without
its log line, the two disagree and the file is rebuilt by replaying the log
(the bad file is quarantined, never deleted, and ``state_rebuilt`` is logged).
So ``rm stops.json`` or ``echo {} > hands_off_registry.json`` lifts nothing.

Failure: when the log itself no longer holds the lines the head names (cut,
deleted or rewritten), when the file names a line the log does not hold (the
log was emptied or cut, its head deleted with it), or when the log does not
verify (a broken chain, a repeated key, a line whose mac is wrong or missing),
nothing is rebuilt from it: ``StateUnreadable`` is raised, the gate denies
every tool call and the kennel kills nothing until an operator runs ``leash
doctor``. An edit that keeps the recorded head is not seen here; ``leash
doctor`` compares every store with the replay of the log.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import contextmanager

from leash.core.base.statefile import CachedJSON, StateCorrupt, locked, quarantine, read_json, write_json
from leash.core.state.loghead import STORE_OF_EVENT, HeadMismatch, mark

TYPE_CHECKING = False  # ``typing`` is for the type checker only: the hook path does not import it
if TYPE_CHECKING:
    from typing import Any

_MISSING = object()


class StateUnreadable(Exception):
    """A log-backed state file cannot be read nor rebuilt from the log."""


class LogBackedJSON:
    """One store's state file.

    ``validate(raw) -> state`` raises ``StateCorrupt`` for a bad shape and
    returns the state without the head key; ``apply(state, line, now)`` folds
    one log line in; ``empty()`` is the state before any line; ``transform``
    turns a state into what readers keep cached (indexes, compiled globs)."""

    def __init__(self, path: str | os.PathLike, store: str, acklog, *, head_key: str,
                 validate: Callable[[dict], dict], apply: Callable[[dict, dict, float | None], None],
                 empty: Callable[[], dict], transform: Callable[[dict], Any] = lambda state: state,
                 what: str = "state", error: type[Exception] | None = None):
        self.what, self.error = what, error or StateUnreadable
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        self.store = store
        self.acklog = acklog
        self.head_key = head_key
        self.validate, self.apply, self.empty, self.transform = validate, apply, empty, transform
        self._cache = CachedJSON(self.path, self._parse)

    def _parse(self, raw: dict) -> tuple[object, Any]:
        head = raw.get(self.head_key)
        return head, self.transform(self.validate(raw))

    # ------------------------------------------------------------ reading
    def snapshot(self, *, now: float | None = None) -> Any:
        """The transformed state (what ``transform`` made of it); rebuilt from the log when the file disagrees
        with it. Raises ``error`` when neither the file nor the log can say."""
        try:
            return self._snapshot(now=now)
        except (StateUnreadable, OSError) as exc:
            raise self._unreadable(exc) from None

    def _unreadable(self, exc: Exception) -> Exception:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return self.error(f"{self.what} unreadable ({detail}) — run `leash doctor`")

    def _snapshot(self, *, now: float | None = None) -> Any:
        problem, value = self._examine_cached()
        if problem is None:
            return value
        self.rebuild(problem, now=now)
        problem, value = self._examine_cached()
        if problem is not None:
            raise StateUnreadable(f"{self.name} unreadable after a rebuild ({problem}) — run `leash doctor`")
        return value

    def _examine_cached(self) -> tuple[str | None, object]:
        expected = self._expected_head()
        try:
            found = self._cache.get(missing=_MISSING)
        except StateCorrupt as exc:
            return f"unreadable: {exc.detail}", None
        except OSError as exc:
            raise StateUnreadable(f"{self.name} unreadable ({exc.strerror}) — run `leash doctor`") from None
        if found is _MISSING:
            return (None, self.transform(self.empty())) if expected is None else ("missing", None)
        head, value = found
        if head != expected:
            return _head_problem(head, expected), None
        return None, value

    def _expected_head(self) -> dict | None:
        try:
            return self.acklog.head.store_head(self.store, self.acklog)
        except HeadMismatch as exc:
            raise StateUnreadable(f"{exc} — run `leash log verify` and `leash doctor`") from None

    # ------------------------------------------------------------ writing
    def holding(self):
        """Hold the file's lock: the writes inside are one writer's (a full stop holds two)."""
        return locked(self.path)

    @contextmanager
    def writing(self, *, now: float | None = None):
        """``with state.writing(now=) as data:`` the current state, under the
        file's lock, for ``record``/``rewrite`` (the shape every backend's
        log-backed state offers)."""
        with locked(self.path):
            yield self.load_for_write(now=now)

    def load_for_write(self, *, now: float | None = None) -> dict:
        """The current state as a mutable dict; call it holding ``locked(self.path)``."""
        try:
            problem = self._problem_on_disk()
            if problem is not None:
                return self.rebuild(problem, now=now)
            return self.validate(read_json(self.path, {}))
        except StateUnreadable as exc:
            raise self._unreadable(exc) from None

    def commit(self, state: dict, line: dict) -> None:
        """Write ``state`` as reflecting ``line`` (already appended and applied)."""
        self._write(state, mark(line))

    def record(self, state: dict, event: str, *, now: float | None = None, **fields) -> dict:
        """Append one line of this store, apply it to ``state`` and write; the
        log line comes first, so a failed append changes nothing."""
        line = self.acklog.append(event, now=now, **fields)
        self.apply(state, line, now)
        self.commit(state, line)
        return line

    def rewrite(self, state: dict) -> None:
        """Write ``state`` with the head the file already has (a change that
        needs no log line, such as pruning expired locks); hold the lock."""
        self._write(state, self._expected_head())

    def _write(self, state: dict, head: dict | None) -> None:
        data = dict(state)
        data[self.head_key] = head
        write_json(self.path, data)
        self._cache.forget()

    def _problem_on_disk(self) -> str | None:
        expected = self._expected_head()
        try:
            raw = read_json(self.path, _MISSING)
        except StateCorrupt as exc:
            return f"unreadable: {exc.detail}"
        if raw is _MISSING:
            return None if expected is None else "missing"
        try:
            self.validate(raw)
        except StateCorrupt as exc:
            return f"unreadable: {exc.detail}"
        head = raw.get(self.head_key)
        return None if head == expected else _head_problem(head, expected)

    def replay(self, *, now: float | None = None, find: object = None) -> tuple[dict, dict | None, bool]:
        """(the state the log gives, the head of its last line of this store,
        whether the line ``find`` names is one of them)."""
        state, head, found = self.empty(), None, False
        for line in self.acklog.lines():  # streamed: the state grows, the log is not held
            if STORE_OF_EVENT.get(line.get("event")) == self.store and isinstance(line.get("seq"), int):
                self.apply(state, line, now)
                head = mark(line)
                found = found or head == find
        return state, head, found

    def force_rebuild(self, problem: str, *, now: float | None = None) -> dict:
        """Rebuild even when the file's head agrees (``leash doctor --repair``
        after finding content that differs from the replay)."""
        return self.rebuild(problem, now=now, force=True)

    def rebuild(self, problem: str, *, now: float | None = None, force: bool = False) -> dict:
        """Write the state replayed from the log. A file that is merely behind
        the log (a writer stopped between the two) is overwritten; one that
        does not parse, names a line the log lacks, or is forced out is
        quarantined first."""
        with locked(self.path):
            if not force and self._problem_on_disk() is None:  # another process rebuilt it meanwhile
                return self.validate(read_json(self.path, {}))
            if os.path.lexists(self.path) and not os.path.exists(self.acklog.path):
                raise StateUnreadable(f"{self.name} {problem} and the ack log it was written from is missing "
                                      "— run `leash doctor`")
            recorded = self._recorded_head()
            state, head, behind = self.replay(now=now, find=recorded)
            expected = self._expected_head()
            if head != expected:
                raise StateUnreadable(
                    f"{self.name} cannot be rebuilt: the ack log does not hold the line its head names "
                    f"(expected {_short(expected)}, the log ends this store at {_short(head)}) — "
                    "run `leash log verify` and `leash doctor`")
            self._refuse_unheld(recorded, behind)
            moved = quarantine(self.path, now=now) if os.path.lexists(self.path) and (force or not behind) else None
            self._write(state, head)
            self.acklog.append(
                "state_rebuilt", source="leash", session_id="",
                reason=(f"{self.name} {problem}; "
                        f"{'moved to ' + os.path.basename(moved) + '; ' if moved else ''}rebuilt from the ack log"),
                now=now, file=self.name, moved_to=os.path.basename(moved) if moved else "",
            )
        return state

    def _refuse_unheld(self, recorded: object, held: bool) -> None:
        """Raise when the log cannot be trusted to rebuild this file: the file
        names a line of this store the log does not hold (the log lost it), or
        the log does not verify."""
        if isinstance(recorded, dict) and isinstance(recorded.get("seq"), int) and recorded["seq"] > 0 and not held:
            raise StateUnreadable(f"{self.name} names line {recorded['seq']}, which the ack log does not hold: the "
                                  "ack log is shorter than its head or was rewritten — run `leash log verify` and "
                                  "`leash doctor`")
        problem = self.acklog.chain_problem()
        if problem:
            raise StateUnreadable(f"{self.name} cannot be rebuilt from a log that does not verify ({problem}) — "
                                  "run `leash log verify` and `leash doctor`")

    def _recorded_head(self) -> object:
        """The head the file on disk records (None when it has none or does not parse)."""
        try:
            raw = read_json(self.path, {})
            return raw.get(self.head_key) if isinstance(raw, dict) else None
        except StateCorrupt:
            return None


def _short(head: dict | None) -> str:
    return "nothing" if not head else f"line {head.get('seq')}"


def _head_problem(found: object, expected: dict | None) -> str:
    if found is None:
        return "records no ack-log head"
    if expected is None:
        return f"records {_short(found) if isinstance(found, dict) else 'a bad head'} but the log has none"
    return f"records {_short(found) if isinstance(found, dict) else 'a bad head'}, the log is at {_short(expected)}"
