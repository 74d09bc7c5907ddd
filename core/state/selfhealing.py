"""A JSON state file whose fail policy is "quarantine and start empty".

The session registry follows that row of the fail-policy table (it is a cache
of observations the hooks rebuild on their next call; stops and locks are
caches of the ack log instead, ``core.logstate``): a file that does not parse is renamed to
``<name>.corrupt-<timestamp>`` (never deleted), the state starts empty, and a
``state_quarantined`` line goes to the ack log so the operator learns of it.
Quarantine happens under the file's lock and re-checks the file first, so when
many processes trip over the same corrupt file only one moves it and logs it.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from leash.core.base.statefile import CachedJSON, JSONObject, StateCorrupt, locked, quarantine, read_json
from leash.core.state.acklog import AckLog

TYPE_CHECKING = False  # ``typing`` is for the type checker only: the hook path does not import it
if TYPE_CHECKING:
    from typing import Any


class SelfHealingJSON:
    def __init__(self, path: str | os.PathLike, acklog: AckLog, transform: Callable[[JSONObject], Any]):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        self.acklog = acklog
        self._cache = CachedJSON(self.path, transform)

    def snapshot(self, missing: object, *, now: float | None = None) -> Any:
        """The transformed content (cached); ``missing`` when absent or corrupt."""
        try:
            return self._cache.get(missing=missing)
        except StateCorrupt as exc:
            self.quarantine(exc, now=now)
            return missing

    def load_for_write(self, *, now: float | None = None) -> JSONObject:
        """The raw content for a read-modify-write; call it holding the lock."""
        try:
            return read_json(self.path, {})
        except StateCorrupt as exc:
            self.quarantine(exc, now=now)
            return {}

    def quarantine(self, exc: StateCorrupt, *, now: float | None = None) -> str | None:
        with locked(self.path):
            try:
                read_json(self.path, {})
                return None  # another process already put a good file there
            except StateCorrupt:
                pass
            moved = quarantine(self.path, now=now)
            if moved is not None:
                self.acklog.append(
                    "state_quarantined", source="leash", session_id="",
                    reason=f"{self.name} unreadable ({exc.detail}); moved to {os.path.basename(moved)}; "
                           "starts empty",
                    now=now, file=self.name, moved_to=os.path.basename(moved),
                )
        self._cache.forget()
        return moved
