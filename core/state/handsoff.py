"""The hands-off registry: time-bounded locks on entities.

``hands_off_registry.json`` maps an entity to
``{"locked_at", "expires_at", "reason", "source", "session_id"}`` (ISO-8601 UTC).
An entity is a name (an agent such as "ezra", a session id, a tmux session) or
a path pattern ``path:<glob>`` that guards files (see ``core.globs``).

Locks last ``[hands_off] default_hours`` (24 h) unless told otherwise. An expired
lock is ignored by every reader and pruned by the next write.

The registry is a cache of the ack log's ``hands_off``/``release`` lines (lock
lines carry ``expires_at``; see ``core.logstate``); the file records the head of
the last one under ``"@head"``, a key no entity may take. Re-locking an entity
never shortens its lock: the later expiry is kept and the caller is told.

Failure (the fail policy, docs/state-and-security.md): a registry that is missing, corrupt, emptied or
out of step with the log is moved aside as ``<name>.corrupt-<timestamp>`` (never
deleted) and rebuilt from the ack log, with a ``state_rebuilt`` line; a lock is
never lost to a bad file. When the log cannot rebuild it, ``HandsOffUnreadable``
is raised: the gate denies and the kennel kills nothing.
"""
from __future__ import annotations

import math
import os
import re

from leash.core.base.clock import iso, now_seconds, parse_iso
from leash.core.base.hours import MAX_HOURS, hours_problem  # noqa: F401 (MAX_HOURS: kept importable here)
from leash.core.base.statefile import JSONObject, StateCorrupt
from leash.core.state.acklog import AckLog
from leash.core.state.loghead import HANDS_OFF_STORE
from leash.core.state.logstate import LogBackedJSON
from leash.core.state.sessions import BOUND_KEYS, bound_tmux_ids

REGISTRY_NAME = "hands_off_registry.json"
PATH_PREFIX = "path:"
DEFAULT_HOURS = 24
HEAD_KEY = "@head"  # where the registry records the ack-log line it reflects
# Keys of a lock's log line kept in its record besides the seed's five.
_BOUND_KEYS = BOUND_KEYS


class HandsOffError(Exception):
    """Raised when something is about to touch an entity that is hands-off."""


class NotLocked(Exception):
    """Release of an entity that holds no active lock."""


class HandsOffUnreadable(Exception):
    """The locks can be neither read nor rebuilt: nothing may count as unlocked."""


def validate_registry(data: dict) -> dict:
    entries = {entity: entry for entity, entry in data.items() if entity != HEAD_KEY}
    if not all(isinstance(entry, dict) for entry in entries.values()):
        raise StateCorrupt(REGISTRY_NAME, "a lock is not an object")
    return entries


def apply_lock_line(state: dict, line: dict, now: float | None = None) -> None:
    """Fold one ack-log line into the registry: the writer and the replay share it."""
    entity = line.get("entity")
    if not isinstance(entity, str):
        return
    if line.get("event") == "hands_off":
        entry = {"locked_at": line.get("timestamp"), "expires_at": line.get("expires_at"),
                 "reason": line.get("reason", ""), "source": line.get("source", ""),
                 "session_id": line.get("session_id", "")}
        entry.update({key: line[key] for key in _BOUND_KEYS if line.get(key)})
        state[entity] = entry
    elif line.get("event") == "release":
        state.pop(entity, None)


def _index(data: JSONObject) -> dict[str, tuple[float, JSONObject]]:
    """Pre-parse expiry times once per file change; unparseable entries count
    as never expiring, so a damaged timestamp keeps its lock rather than dropping it."""
    index = {}
    for entity, entry in data.items():
        if not isinstance(entry, dict):
            continue
        try:
            expires = parse_iso(entry.get("expires_at"))
        except (ValueError, TypeError):
            expires = math.inf
        index[entity] = (expires, entry)
    return index


def _index_paths(data: JSONObject):
    from leash.core.base.globs import compile_glob

    indexed = _index(data)
    paths: list[tuple[str, str, re.Pattern[str] | None]] = []
    for entity in indexed:
        if entity.startswith(PATH_PREFIX):
            try:
                paths.append((entity, entity[len(PATH_PREFIX):], compile_glob(entity[len(PATH_PREFIX):])))
            except Exception:  # a pattern stored before patterns were checked at filing:
                paths.append((entity, entity[len(PATH_PREFIX):], None))  # it guards nothing, doctor names it
    by_tmux_id: dict[str, str] = {}
    for entity, (_, entry) in indexed.items():
        for bound in bound_tmux_ids(entry):
            by_tmux_id.setdefault(bound, entity)
    return indexed, paths, by_tmux_id


# How the locks are folded from the log, for whichever store keeps them.
LOCK_FOLD: dict = {"validate": validate_registry, "apply": apply_lock_line, "empty": dict, "transform": _index_paths,
             "what": "hands-off locks", "error": HandsOffUnreadable}


class HandsOffRegistry:
    """Locks on entities, stored in one home."""

    def __init__(self, home: str | os.PathLike, acklog=None, *, state=None, sessions=None):
        """Over ``hands_off_registry.json`` by default, or the ``state`` (and
        ``sessions``) another backend keeps the locks in."""
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, REGISTRY_NAME)
        self.acklog = acklog if acklog is not None else AckLog(self.home)
        self.state = state or LogBackedJSON(self.path, HANDS_OFF_STORE, self.acklog, head_key=HEAD_KEY, **LOCK_FOLD)
        self._sessions = sessions

    # ------------------------------------------------------------ reading
    def _snapshot(self, now: float | None = None):
        return self.state.snapshot(now=now)

    def pinned(self, *, now: float | None = None) -> "HandsOffRegistry":
        """This registry with its locks read once, now: every read of the copy
        answers from that one reading (a check asks several questions of one
        state). HandsOffUnreadable here, as any read would raise it."""
        copy = _PinnedLocks.__new__(_PinnedLocks)
        copy.__dict__.update(self.__dict__)
        copy.reading = self._snapshot(now)
        return copy

    def active(self, *, now: float | None = None) -> dict[str, JSONObject]:
        """Every lock that has not expired, by entity."""
        moment = now_seconds(now)
        indexed, _, _ = self._snapshot(now)
        return {e: dict(entry) for e, (expires, entry) in indexed.items() if expires > moment}

    def lock_of(self, entity: str, *, now: float | None = None) -> JSONObject | None:
        indexed, _, _ = self._snapshot(now)
        found = indexed.get(entity)
        if found is None or found[0] <= now_seconds(now):
            return None
        return found[1]

    def lock_covering(self, names: list[str], *, tmux_session_id: str = "",
                      now: float | None = None) -> tuple[str, JSONObject] | None:
        """(entity, lock) of the first active lock on one of ``names``, or on
        the tmux session ``tmux_session_id`` (``$N``) it was bound to when filed
        by name, so a renamed session stays locked. Raises HandsOffUnreadable
        when the locks cannot be read: the caller must not treat that as free."""
        indexed, _, by_tmux_id = self._snapshot(now)
        moment = now_seconds(now)
        candidates = list(names)
        if tmux_session_id and tmux_session_id in by_tmux_id:
            candidates.append(by_tmux_id[tmux_session_id])
        for entity in candidates:
            found = indexed.get(entity)
            if found is not None and found[0] > moment:
                return entity, found[1]
        return None

    def is_hands_off(self, entity: str, *, now: float | None = None) -> bool:
        return self.lock_of(entity, now=now) is not None

    def has_path_locks(self, *, now: float | None = None) -> bool:
        indexed, paths, _ = self._snapshot(now)
        moment = now_seconds(now)
        return any(indexed[entity][0] > moment for entity, _, _ in paths)

    def lock_for_path(self, file_path: str, *, cwd: str | None = None, now: float | None = None,
                      subtree: bool = False):
        """(entity, lock) of the first active ``path:`` lock covering the file
        (with ``subtree``: the directory or anything under it)."""
        from leash.core.base.globs import path_candidates, subtree_may_match

        indexed, paths, _ = self._snapshot(now)
        moment = now_seconds(now)
        absolute, relative = path_candidates(file_path, cwd)  # once, not once per pattern
        for entity, pattern, compiled in paths:
            expires, entry = indexed[entity]
            candidate = absolute if pattern.startswith("/") else relative
            if expires > moment and candidate is not None and compiled is not None and compiled.match(candidate):
                return entity, entry
            if subtree and expires > moment and compiled is not None and subtree_may_match(pattern, file_path, cwd):
                return entity, entry
        return None

    # ------------------------------------------------------------ writing
    @staticmethod
    def _prune(data: JSONObject, moment: float) -> list[str]:
        gone = [e for e, (expires, _) in _index(data).items() if expires <= moment]
        for entity in gone:
            data.pop(entity, None)
        return gone

    def lock(
        self,
        entity: str,
        *,
        hours: float | None = None,
        reason: str = "",
        source: str,
        session_id: str | None = None,
        now: float | None = None,
        tmux_session_id: str | None = None,
    ) -> JSONObject:
        """Lock ``entity`` for ``hours``. Re-locking never shortens a lock: the
        later expiry is kept and the returned entry says ``kept_longer``."""
        validate_entity(entity)
        hours = DEFAULT_HOURS if hours is None else hours
        problem = hours_problem(hours)
        if problem:
            raise ValueError(f"hours {problem}")
        moment = now_seconds(now)
        expires = moment + hours * 3600
        bound_ids: list[str] = []
        if tmux_session_id is None and not entity.startswith(PATH_PREFIX):
            if self._sessions is None:
                from leash.core.state.sessions import SessionRegistry

                self._sessions = SessionRegistry(self.home, self.acklog)
            if self._sessions.host:  # a shared store: every host's session by that name
                bound_ids = self._sessions.bind_tmux_names(entity)
            else:
                tmux_session_id = self._sessions.bind_tmux_name(entity)
        with self.state.writing(now=now) as data:
            self._prune(data, moment)
            kept_longer = False
            current = _index({entity: data[entity]}).get(entity) if entity in data else None
            if current is not None and current[0] > expires:
                expires, kept_longer = current[0], True
            extra: dict = {"tmux_session_id": tmux_session_id} if tmux_session_id else {}
            if bound_ids:
                extra["tmux_session_ids"] = bound_ids
            self.state.record(data, "hands_off", source=source, session_id=session_id or "", reason=reason,
                              now=moment, entity=entity, expires_at=iso(expires) if math.isfinite(expires)
                              else data[entity].get("expires_at"), **extra)
            entry = dict(data[entity])
        if kept_longer:
            entry["kept_longer"] = True
        return entry

    def release(self, entity: str, *, source: str, reason: str = "", now: float | None = None) -> JSONObject:
        """Remove an active lock; raises NotLocked when there is none."""
        moment = now_seconds(now)
        with self.state.writing(now=now) as data:
            self._prune(data, moment)
            entry = data.get(entity)
            if entry is None:
                raise NotLocked(f"{entity} is not hands-off")
            self.state.record(data, "release", source=source, session_id=entry.get("session_id", ""),
                              reason=reason, now=moment, entity=entity)
        return entry

    def prune(self, *, now: float | None = None) -> list[str]:
        """Drop expired locks from the file (readers ignore them anyway)."""
        moment = now_seconds(now)
        with self.state.writing(now=now) as data:
            gone = self._prune(data, moment)
            if gone:
                self.state.rewrite(data)
        return gone



class _PinnedLocks(HandsOffRegistry):
    """``HandsOffRegistry.pinned``'s copy: reads answer from one reading; writes go to the store as ever."""

    reading: object

    def _snapshot(self, now: float | None = None):
        return self.reading


def validate_entity(entity: str) -> None:
    """A lock's entity: any non-empty name (it is data, shown escaped), or
    ``path:<glob>`` whose pattern compiles now, at filing (a pattern that
    fails later would guard nothing, or everything)."""
    if not isinstance(entity, str) or not entity.strip():
        raise ValueError("an entity must be a non-empty name")
    if entity == HEAD_KEY:
        raise ValueError(f"{HEAD_KEY!r} is reserved and cannot be locked")
    if entity.startswith(PATH_PREFIX):
        pattern = entity[len(PATH_PREFIX):]
        if not pattern.strip():
            raise ValueError("a path entity needs a pattern: path:<glob>")
        from leash.core.base.globs import check_glob

        check_glob(pattern)
