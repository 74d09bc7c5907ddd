"""The hands-off registry: time-bounded locks on entities.

``hands_off_registry.json`` maps an entity to
``{"locked_at", "expires_at", "reason", "source", "session_id"}`` (ISO-8601 UTC).
An entity is a name (an agent such as "ezra", a session id, a tmux session) or
a path pattern ``path:<glob>`` that guards files (see ``core.globs``).

Locks last ``[hands_off] default_hours`` (24 h) unless told otherwise. An expired
lock is ignored by every reader and pruned by the next write.

Failure (the-nexus's rule, DESIGN.md fail policy): a registry that does not
parse is moved aside as ``<name>.corrupt-<timestamp>`` (never deleted), the
registry starts empty, and ``state_quarantined`` is written to the ack log.
"""
from __future__ import annotations

import os
import math

from core.acklog import AckLog
from core.clock import iso, now_seconds, parse_iso
from core.selfhealing import SelfHealingJSON
from core.statefile import locked, write_json

REGISTRY_NAME = "hands_off_registry.json"
PATH_PREFIX = "path:"
DEFAULT_HOURS = 24


class HandsOffError(Exception):
    """Raised when something is about to touch an entity that is hands-off."""


class NotLocked(Exception):
    """Release of an entity that holds no active lock."""


def _index(data: dict[str, object]) -> dict[str, tuple[float, dict[str, object]]]:
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


def _index_paths(data: dict[str, object]):
    from core.globs import compile_glob

    indexed = _index(data)
    paths = [
        (entity, entity[len(PATH_PREFIX):], compile_glob(entity[len(PATH_PREFIX):]))
        for entity in indexed
        if entity.startswith(PATH_PREFIX)
    ]
    return indexed, paths


class HandsOffRegistry:
    """Locks on entities, stored in one home."""

    def __init__(self, home: str | os.PathLike, acklog: AckLog | None = None):
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, REGISTRY_NAME)
        self.acklog = acklog or AckLog(self.home)
        self.store = SelfHealingJSON(self.path, self.acklog, _index_paths)

    # ------------------------------------------------------------ reading
    def _snapshot(self, now: float | None = None):
        return self.store.snapshot(({}, []), now=now)

    def active(self, *, now: float | None = None) -> dict[str, dict[str, object]]:
        """Every lock that has not expired, by entity."""
        moment = now_seconds(now)
        indexed, _ = self._snapshot(now)
        return {e: dict(entry) for e, (expires, entry) in indexed.items() if expires > moment}

    def lock_of(self, entity: str, *, now: float | None = None) -> dict[str, object] | None:
        indexed, _ = self._snapshot(now)
        found = indexed.get(entity)
        if found is None or found[0] <= now_seconds(now):
            return None
        return found[1]

    def is_hands_off(self, entity: str, *, now: float | None = None) -> bool:
        return self.lock_of(entity, now=now) is not None

    def has_path_locks(self, *, now: float | None = None) -> bool:
        indexed, paths = self._snapshot(now)
        moment = now_seconds(now)
        return any(indexed[entity][0] > moment for entity, _, _ in paths)

    def lock_for_path(self, file_path: str, *, cwd: str | None = None, now: float | None = None):
        """(entity, lock) of the first active ``path:`` lock covering the file."""
        from core.globs import path_candidates

        indexed, paths = self._snapshot(now)
        moment = now_seconds(now)
        absolute, relative = path_candidates(file_path, cwd)  # once, not once per pattern
        for entity, pattern, compiled in paths:
            expires, entry = indexed[entity]
            candidate = absolute if pattern.startswith("/") else relative
            if expires > moment and candidate is not None and compiled.match(candidate):
                return entity, entry
        return None

    # ------------------------------------------------------------ writing
    def _load_for_write(self, *, now: float | None) -> dict[str, object]:
        return self.store.load_for_write(now=now)

    @staticmethod
    def _prune(data: dict[str, object], moment: float) -> list[str]:
        gone = [e for e, (expires, _) in _index(data).items() if expires <= moment]
        gone += [e for e, entry in data.items() if not isinstance(entry, dict)]
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
        log: bool = True,
    ) -> dict[str, object]:
        """Lock ``entity`` for ``hours``; re-locking extends or shortens the lock."""
        validate_entity(entity)
        hours = DEFAULT_HOURS if hours is None else hours
        if not isinstance(hours, (int, float)) or isinstance(hours, bool) or not math.isfinite(hours) or hours <= 0:
            raise ValueError(f"hours must be a positive number, got {hours!r}")
        moment = now_seconds(now)
        entry = {
            "locked_at": iso(moment),
            "expires_at": iso(moment + hours * 3600),
            "reason": reason,
            "source": source,
            "session_id": session_id or "",
        }
        with locked(self.path):
            data = self._load_for_write(now=now)
            self._prune(data, moment)
            data[entity] = entry
            write_json(self.path, data)
            if log:
                self.acklog.append(
                    "hands_off", source=source, session_id=session_id or "", reason=reason,
                    now=moment, entity=entity, expires_at=entry["expires_at"],
                )
        return entry

    def release(self, entity: str, *, source: str, reason: str = "", now: float | None = None) -> dict[str, object]:
        """Remove an active lock; raises NotLocked when there is none."""
        moment = now_seconds(now)
        with locked(self.path):
            data = self._load_for_write(now=now)
            pruned = self._prune(data, moment)
            entry = data.pop(entity, None)
            if entry is None:
                if pruned:
                    write_json(self.path, data)
                raise NotLocked(f"{entity} is not hands-off")
            write_json(self.path, data)
            self.acklog.append(
                "release", source=source, session_id=entry.get("session_id", ""), reason=reason,
                now=moment, entity=entity,
            )
        return entry

    def prune(self, *, now: float | None = None) -> list[str]:
        """Drop expired locks from the file; returns the entities dropped."""
        moment = now_seconds(now)
        with locked(self.path):
            data = self._load_for_write(now=now)
            gone = self._prune(data, moment)
            if gone:
                write_json(self.path, data)
        return gone


def validate_entity(entity: str) -> None:
    if not isinstance(entity, str) or not entity.strip():
        raise ValueError("an entity must be a non-empty name")
    if entity.startswith(PATH_PREFIX) and not entity[len(PATH_PREFIX):].strip():
        raise ValueError("a path entity needs a pattern: path:<glob>")
