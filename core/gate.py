"""The gate: one chokepoint that decides whether an agent's tool call may run.

``Gate.check(session_id, tool, tool_input)`` answers allow or deny with a
reason, in this order (the first rule that denies wins):

1. the stop state is unreadable: deny (fail closed, point at ``leash doctor``);
2. the fleet is stopped;
3. the session is stopped, by its id or by its tmux session name;
4. the session's entity (its id, tmux session or registered entity) is hands-off;
5. a file the call would touch matches a ``path:`` hands-off lock.

Every read goes through a cache keyed by the file's identity, so a check is a
few ``stat`` calls and dictionary lookups however many stops and locks exist.
"""
from __future__ import annotations

import os

from core.handsoff import HandsOffRegistry
from core.sessions import SessionRegistry
from core.stop import StopRegistry, StopStateUnreadable


class Verdict:
    """allow or deny, why, and which rule decided (stop_unreadable,
    fleet_stop, session_stop, hands_off, path_lock)."""

    __slots__ = ("allow", "reason", "rule")

    def __init__(self, allow: bool, reason: str = "", rule: str = ""):
        self.allow, self.reason, self.rule = allow, reason, rule

    def __repr__(self) -> str:
        return f"Verdict(allow={self.allow}, rule={self.rule!r}, reason={self.reason!r})"


ALLOW = Verdict(True)


class Gate:
    def __init__(self, home: str | os.PathLike, *, stops: StopRegistry | None = None,
                 hands_off: HandsOffRegistry | None = None, sessions: SessionRegistry | None = None):
        self.home = os.fspath(home)
        self.stops = stops or StopRegistry(self.home)
        self.hands_off = hands_off or HandsOffRegistry(self.home, self.stops.acklog)
        self.sessions = sessions or SessionRegistry(self.home, self.stops.acklog)

    def names(self, session_id: str, *, now: float | None = None) -> tuple[list[str], dict[str, object]]:
        """The names a session answers to (id, tmux session) and its record."""
        record = self.sessions.get(session_id, now=now) or {}
        names = [session_id]
        tmux_name = record.get("tmux_session")
        if tmux_name and tmux_name != session_id:
            names.append(tmux_name)
        return names, record

    def stopped_reason(self, session_id: str, *, now: float | None = None) -> Verdict | None:
        names, _ = self.names(session_id, now=now)
        return self._stop_verdict(names)

    def _stop_verdict(self, names: list[str]) -> Verdict | None:
        try:
            stops = self.stops.snapshot()
        except StopStateUnreadable as exc:
            return Verdict(False, f"leash: {exc}", "stop_unreadable")
        fleet = stops["fleet"]
        if fleet is not None:
            return Verdict(False, _said("the whole fleet is stopped", fleet), "fleet_stop")
        for name in names:
            record = stops["sessions"].get(name)
            if record is not None:
                what = "this session" if name == names[0] else f"tmux session {name!r}"
                return Verdict(False, _said(f"{what} is stopped", record), "session_stop")
        return None

    def check(self, session_id: str, tool: str | None = None, tool_input: object = None, *,
              cwd: str | None = None, now: float | None = None) -> Verdict:
        names, record = self.names(session_id, now=now)
        stopped = self._stop_verdict(names)
        if stopped is not None:
            return stopped
        entities = names + ([record["entity"]] if record.get("entity") and record["entity"] not in names else [])
        for entity in entities:
            lock = self.hands_off.lock_of(entity, now=now)
            if lock is not None:
                return Verdict(False, _locked(entity, lock), "hands_off")
        if not self.hands_off.has_path_locks(now=now):
            return ALLOW
        from core.toolcall import touched_paths

        where = cwd or record.get("cwd") or None
        for path in touched_paths(tool, tool_input, where):
            found = self.hands_off.lock_for_path(path, cwd=where, now=now)
            if found is not None:
                entity, lock = found
                return Verdict(False, _locked(entity, lock, path=path), "path_lock")
        return ALLOW


def _said(what: str, record: dict[str, object]) -> str:
    reason = record.get("reason") or "no reason given"
    return (f"leash: {what} by {record.get('source', '?')} at {record.get('stopped_at', '?')}: {reason}. "
            "Do not retry; wait for the operator to resume.")


def _locked(entity: str, lock: dict[str, object], *, path: str | None = None) -> str:
    subject = f"{path} is covered by hands-off lock {entity!r}" if path else f"{entity!r} is hands-off"
    reason = lock.get("reason") or "no reason given"
    return (f"leash: {subject} until {lock.get('expires_at', '?')} "
            f"(locked by {lock.get('source', '?')}: {reason}). Do not touch it.")
