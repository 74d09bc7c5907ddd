"""the-nexus's Stop Protocol API: stops, hands-off locks and the gate over one
state home, as ``StopProtocol``.

Failure: each call raises what the registry under it raises (``ValueError``
for a bad name, ``NotStopped``, ``HandsOffError``); ``pre_tool_check`` raises
``StopInterrupt`` when the gate denies, including when the stop state cannot be
read (fail closed).
"""
from __future__ import annotations

import os

from leash.core.base.home import ensure_home
from leash.core.base.source import default_source
from leash.core.base.statefile import JSONObject
from leash.core.hook.gate import Gate
from leash.core.state.acklog import AckLog
from leash.core.state.handsoff import DEFAULT_HOURS, HandsOffError, HandsOffRegistry
from leash.core.state.sessions import SessionRegistry
from leash.core.state.stop import StopInterrupt, StopRegistry


class StopProtocol:
    """the-nexus's Stop Protocol API over one state home.

    ``StopProtocol()`` uses ``$LEASH_HOME`` (default ``~/.leash``)."""

    def __init__(self, home: str | os.PathLike | None = None):
        self.home = ensure_home(home)
        self.acklog = AckLog(self.home)
        self.stops = StopRegistry(self.home, self.acklog)
        self.hands_off_registry = HandsOffRegistry(self.home, self.acklog)
        self.sessions = SessionRegistry(self.home, self.acklog)
        self._gate: Gate | None = None
        self.backend: object = None  # the stores a command reads (``core.status.backend_of``), chosen once

    @property
    def gate(self):
        if self._gate is None:
            from leash.core.store.files import FileBackend

            self._gate = Gate(self.home, backend=FileBackend.sharing(self))
        return self._gate

    def default_hours(self) -> float:
        """``[hands_off] default_hours`` from config.toml (24 when unset)."""
        from leash.core.base.config import load_config

        return load_config(self.home)["hands_off"].get("default_hours", DEFAULT_HOURS)

    # the-nexus's names -------------------------------------------------
    def pre_tool_check(self, session_id: str, tool: str | None = None, tool_input: dict | None = None,
                       *, cwd: str | None = None, now: float | None = None) -> None:
        """Raise StopInterrupt when the session's next tool call must not run."""
        verdict = self.gate.check(session_id, tool, tool_input, cwd=cwd, now=now)
        if not verdict.allow:
            raise StopInterrupt(verdict.reason)

    def acknowledge_stop(self, source: str, session_id: str, reason: str = "", *,
                         now: float | None = None) -> JSONObject:
        """Stop ``session_id`` and log the STOP_ACK; returns the stop record."""
        return self.stops.stop(session_id, source=source, reason=reason, now=now)

    def is_stopped(self, session_id: str, *, now: float | None = None) -> bool:
        """True when the session, its tmux session or the fleet is stopped,
        and when the stop state cannot be read (fail closed)."""
        return self.gate.stopped_reason(session_id, now=now) is not None

    def full_stop(self, session_id: str, entity: str, reason: str = "", source: str | None = None, *,
                  hours: float | None = None, now: float | None = None) -> JSONObject:
        """Stop the session and lock ``entity`` hands-off in one locked step:
        both or neither (``leash.core.store.transaction``)."""
        from leash.core.store.transaction import transaction

        source = source or default_source()
        hours = hours if hours is not None else self.default_hours()
        with transaction(self.stops, self.hands_off_registry, self.sessions, now=now) as step:
            step.stop(session_id, source=source, reason=reason, entity=entity)
            step.lock(entity, hours=hours, reason=reason, source=source, session_id=session_id)
            if not entity.startswith("path:"):
                step.set_entity(session_id, entity)
        stop, lock = step.results
        return {"stop": stop.as_dict(), "hands_off": lock.as_dict()}

    def is_hands_off(self, entity: str, *, now: float | None = None) -> bool:
        return self.hands_off_registry.is_hands_off(entity, now=now)

    def check_hands_off(self, entity: str, *, now: float | None = None) -> None:
        """Raise HandsOffError when ``entity`` is locked."""
        lock = self.hands_off_registry.lock_of(entity, now=now)
        if lock is not None:
            raise HandsOffError(f"{entity} is locked until {lock.get('expires_at')} — do not touch.")

    def read_ack_log(self) -> list[JSONObject]:
        return self.acklog.read().entries

    # added -------------------------------------------------------------
    def resume(self, session_id: str, reason: str = "", source: str | None = None, *,
               now: float | None = None) -> JSONObject:
        return self.stops.resume(session_id, source=source or default_source(), reason=reason, now=now)

    def stop_fleet(self, reason: str = "", source: str | None = None, *, now: float | None = None) -> JSONObject:
        return self.stops.stop_fleet(source=source or default_source(), reason=reason, now=now)

    def resume_fleet(self, reason: str = "", source: str | None = None, *,
                     now: float | None = None) -> JSONObject:
        return self.stops.resume_fleet(source=source or default_source(), reason=reason, now=now)

    def hands_off(self, entity: str, *, hours: float | None = None, reason: str = "", source: str | None = None,
                  session_id: str | None = None, now: float | None = None) -> JSONObject:
        return self.hands_off_registry.lock(entity, hours=hours if hours is not None else self.default_hours(),
                                            reason=reason, source=source or default_source(),
                                            session_id=session_id, now=now)

    def release(self, entity: str, reason: str = "", source: str | None = None, *,
                now: float | None = None) -> JSONObject:
        return self.hands_off_registry.release(entity, source=source or default_source(), reason=reason, now=now)
