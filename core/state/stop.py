"""The stop registry: stops per session and fleet-wide (the-nexus's API over it
is ``core.protocol.StopProtocol``).

``stops.json`` is ``{"sessions": {"<id>": {"stopped_at", "source", "reason"}},
"fleet": null | {"stopped_at", "source", "reason"}, "head": {"seq", "hash"}}``.
A session id here may be an agent's session id or a tmux session name; a stop
filed by a tmux name also records the session's id (``tmux_session_id``), so it
keeps holding after a rename. The gate treats a session as stopped when one of
its names, its tmux session id, a session it was resumed from, or the fleet is
stopped.

The file is a cache of the ack log (``core.logstate``): every stop, resume,
fleet stop and fleet resume appends its line first and then applies it, under
the file's lock, so a failed append changes nothing.

Failure: a stop must never be lost to a bad file. A reader that finds
``stops.json`` missing, corrupt, emptied or out of step with the log rebuilds
it by replaying the log; while even that is impossible (the log was cut),
``StopRegistry.snapshot`` raises ``StopStateUnreadable`` and the gate denies
every tool call until an operator runs ``leash doctor``.
"""
from __future__ import annotations

import os

from leash.core.base.clock import now_seconds
from leash.core.base.statefile import JSONObject, StateCorrupt
from leash.core.state.acklog import FLEET, AckLog
from leash.core.state.loghead import STOPS_STORE
from leash.core.state.logstate import LogBackedJSON
from leash.core.state.sessions import BOUND_KEYS, SessionRegistry, bound_tmux_ids

STOPS_NAME = "stops.json"


class StopInterrupt(Exception):
    """Raised by ``pre_tool_check`` when a tool call must not run."""


class StopStateUnreadable(Exception):
    """``stops.json`` exists but cannot be used; the gate fails closed."""


class NotStopped(Exception):
    """Resume of something that is not stopped."""


def empty_stops() -> JSONObject:
    return {"sessions": {}, "fleet": None}


# Keys of a stop's log line that are kept in its record besides the seed's three.
_BOUND_KEYS = BOUND_KEYS


STOPS_KEYS = frozenset({"sessions", "fleet"})
HEAD_KEY = "head"  # where stops.json records the ack-log line it reflects


def validate_stops(data: JSONObject) -> JSONObject:
    """The stops' shape. A key it does not know (``Sessions`` beside or for
    ``sessions``) is corruption, not a state without stops: rebuilt from the
    log, so a stop renamed out of sight still holds."""
    unknown = sorted(set(data) - STOPS_KEYS - {HEAD_KEY})
    if unknown:
        raise StateCorrupt(STOPS_NAME, f"unknown key {unknown[0]!r}")
    if data and "sessions" not in data:
        raise StateCorrupt(STOPS_NAME, 'no "sessions"')
    sessions = data.get("sessions", {})
    if not isinstance(sessions, dict):
        raise StateCorrupt(STOPS_NAME, '"sessions" is not an object')
    if not all(isinstance(record, dict) for record in sessions.values()):
        raise StateCorrupt(STOPS_NAME, 'a stopped session is not an object')
    fleet = data.get("fleet")
    if fleet is not None and not isinstance(fleet, dict):
        raise StateCorrupt(STOPS_NAME, '"fleet" is neither null nor an object')
    return {"sessions": dict(sessions), "fleet": fleet}


def apply_stop_line(state: JSONObject, line: JSONObject, now: float | None = None) -> None:
    """Fold one ack-log line into the stops: the writer and the replay share it."""
    event, sid = line.get("event"), line.get("session_id", "")
    record = {"stopped_at": line.get("timestamp"), "source": line.get("source"), "reason": line.get("reason")}
    record.update({key: line[key] for key in _BOUND_KEYS if line.get(key)})
    if event == "stop_ack":
        state["sessions"].setdefault(sid, record)
    elif event == "resume":
        state["sessions"].pop(sid, None)
    elif event == "fleet_stop":
        state["fleet"] = state["fleet"] or record
    elif event == "fleet_resume":
        state["fleet"] = None


def index_stops(state: JSONObject) -> JSONObject:
    """The stops plus an index by tmux session id, so a stop filed by a name
    keeps holding the session after it is renamed."""
    by_tmux_id: dict[str, str] = {}
    for name, record in state["sessions"].items():
        for bound in bound_tmux_ids(record):
            by_tmux_id.setdefault(bound, name)
    return {"sessions": state["sessions"], "fleet": state["fleet"], "by_tmux_id": by_tmux_id}


def covering_stop(stops: JSONObject, names: list[str], *, tmux_session_id: str = "") -> tuple[str, str | None] | None:
    """Which stop of the indexed stop state ``stops`` holds a session known by
    ``names``: ("session", name), ("fleet", None), or None. Resuming that one
    is what frees it. Every backend's stop store answers with this rule."""
    for name in names:
        if name in stops["sessions"]:
            return "session", name
    if tmux_session_id and tmux_session_id in stops["by_tmux_id"]:
        return "session", stops["by_tmux_id"][tmux_session_id]
    return ("fleet", None) if stops["fleet"] else None


def require_name(value: str, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a {what} must be a non-empty string")


# How the stop state is folded from the log, for whichever store keeps it.
STOP_FOLD: dict = {"validate": validate_stops, "apply": apply_stop_line, "empty": empty_stops, "transform": index_stops,
             "what": "stop state", "error": StopStateUnreadable}


class StopRegistry:
    """The stops over a log-backed state: ``stops.json`` by default, or the
    ``state`` (and ``sessions``) another backend keeps them in."""

    def __init__(self, home: str | os.PathLike, acklog=None, *, state=None, sessions=None):
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, STOPS_NAME)
        self.acklog = acklog if acklog is not None else AckLog(self.home)
        self.state = state or LogBackedJSON(self.path, STOPS_STORE, self.acklog, head_key=HEAD_KEY, **STOP_FOLD)
        self._sessions = sessions

    def sessions(self) -> SessionRegistry:
        if self._sessions is None:
            self._sessions = SessionRegistry(self.home, self.acklog)
        return self._sessions

    def snapshot(self, *, now: float | None = None) -> JSONObject:
        """Current stops (``sessions``, ``fleet``, ``by_tmux_id``); raises
        StopStateUnreadable when neither the file nor the log can say."""
        return self.state.snapshot(now=now)

    def covering(self, names: list[str], *, tmux_session_id: str = "") -> tuple[str, str | None] | None:
        return covering_stop(self.snapshot(), names, tmux_session_id=tmux_session_id)

    def stop(self, session_id: str, *, source: str, reason: str = "", now: float | None = None,
             **extra: object) -> JSONObject:
        require_name(session_id, "session id")
        moment = now_seconds(now)
        if self.sessions().host:  # a shared store: every host's session by that name
            extra.setdefault("tmux_session_ids", self.sessions().bind_tmux_names(session_id) or None)
        elif "tmux_session_id" not in extra:
            extra["tmux_session_id"] = self.sessions().bind_tmux_name(session_id)
        with self.state.writing(now=now) as data:
            self.state.record(data, "stop_ack", source=source, session_id=session_id, reason=reason, now=moment,
                              **{k: v for k, v in extra.items() if v not in (None, "")})
        return data["sessions"][session_id]

    def resume(self, session_id: str, *, source: str, reason: str = "", now: float | None = None) -> JSONObject:
        """Lift the stop on ``session_id``; in a shared store a bare name means
        that name on every host: its own stop and each ``HOST/NAME`` one (a line
        each)."""
        with self.state.writing(now=now) as data:
            names = [session_id] if session_id in data["sessions"] else []
            if self._sessions is not None and self._sessions.host and "/" not in session_id:
                names += sorted(name for name in data["sessions"] if name.rpartition("/")[2] == session_id
                                and name != session_id and "/" in name)
            if not names:
                raise NotStopped(f"session {session_id!r} is not stopped")
            record = data["sessions"][names[0]]
            for name in names:
                self.state.record(data, "resume", source=source, session_id=name, reason=reason, now=now)
        return record

    def stop_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> JSONObject:
        moment = now_seconds(now)
        with self.state.writing(now=now) as data:
            self.state.record(data, "fleet_stop", source=source, session_id=FLEET, reason=reason, now=moment)
        return data["fleet"]

    def resume_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> JSONObject:
        """Lift the fleet stop; sessions stopped one by one stay stopped."""
        with self.state.writing(now=now) as data:
            record = data["fleet"]
            if record is None:
                raise NotStopped("the fleet is not stopped")
            self.state.record(data, "fleet_resume", source=source, session_id=FLEET, reason=reason, now=now)
        return record
