"""The gate: one chokepoint that decides whether an agent's tool call may run.

``Gate.check(session_id, tool, tool_input)`` answers allow or deny with a
reason, in this order (the first rule that denies wins):

1. the stop state is unreadable: deny (fail closed, point at ``leash doctor``);
2. the fleet is stopped;
3. the session is stopped, by its id or by its tmux session name;
4. the session's entity (its id, tmux session or registered entity) is hands-off;
5. a file the call would touch matches a ``path:`` hands-off lock;
6. the session's halt state: ``paused`` denies everything, ``halted`` denies
   all but the read-only tools (``[gate] read_only_tools``); an unreadable
   halts.db denies (fail safe);
7. the halt conditions one tool call can show (``core.halts.hookcontext``):
   a condition of high or critical severity that fires denies the call, and
   is recorded by the seed's auto-record rules, which halts the session.

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
    fleet_stop, session_stop, hands_off, path_lock, halts_unreadable,
    session_paused, session_halted, halt_condition)."""

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
        self._config = None

    def config(self) -> dict:
        """config.toml, or the defaults when it cannot be used (the gate keeps going)."""
        if self._config is None:
            from core.config import DEFAULTS, ConfigError, load_config

            try:
                self._config = load_config(self.home)
            except ConfigError:
                self._config = DEFAULTS
        return self._config

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
              cwd: str | None = None, now: float | None = None, env: dict | None = None) -> Verdict:
        verdict = self.check_stops_and_locks(session_id, tool, tool_input, cwd=cwd, now=now)
        if verdict.allow:
            verdict = self.check_halts(session_id, tool, tool_input, cwd=cwd, now=now, env=env)
        return verdict

    def check_stops_and_locks(self, session_id: str, tool: str | None = None, tool_input: object = None, *,
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


    def check_halts(self, session_id: str, tool: str | None, tool_input: object, *, cwd: str | None = None,
                    now: float | None = None, env: dict | None = None) -> Verdict:
        """Rules 6 and 7. Imports the halt engine only when there is something
        for it to do, so the common hook call stays light."""
        if not os.path.exists(os.path.join(self.home, "halts.db")):
            return self._check_conditions(session_id, tool, tool_input, None, cwd=cwd, now=now, env=env)
        from core.halts import api
        from core.halts.store import HaltStoreUnavailable

        try:
            with api.connected(self.home, now) as connection:
                return self._check_held(session_id, tool, tool_input, connection, cwd=cwd, now=now, env=env)
        except HaltStoreUnavailable as exc:
            return Verdict(False, f"leash: halt store unreadable ({exc}) — every tool call is held; "
                                  "run `leash doctor`", "halts_unreadable")

    def _check_held(self, session_id, tool, tool_input, connection, *, cwd, now, env) -> Verdict:
        from core.halts.api import session_state

        state = session_state(self.home, session_id, now=now, connection=connection)
        if state == "paused":
            return Verdict(False, "leash: this session is paused: an escalated halt waits for a human. "
                                  f"Do not retry; the operator resolves it (leash halts list --session "
                                  f"{session_id}).", "session_paused")
        if state == "halted" and tool not in self.config()["gate"]["read_only_tools"]:
            return Verdict(False, "leash: this session is halted until the operator acknowledges its halts "
                                  f"(leash halts list --session {session_id}); only read-only tools may run "
                                  "meanwhile.", "session_halted")
        return self._check_conditions(session_id, tool, tool_input, connection, cwd=cwd, now=now, env=env)

    def _check_conditions(self, session_id, tool, tool_input, connection, *, cwd, now, env) -> Verdict:
        if tool is None:
            return ALLOW
        from core.halts.hookcontext import check_input

        files_read = None
        if connection is not None and tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
            from core.halts.api import files_read as recorded_reads

            files_read = recorded_reads(self.home, session_id, connection=connection)
        data = check_input(session_id, tool, tool_input, cwd=cwd, env=env if env is not None else os.environ,
                           files_read=files_read)
        if data is None:
            return ALLOW
        from core.halts.api import check_halt_conditions

        result = check_halt_conditions(data, home=self.home, now=now, connection=connection)
        blocking = [r for r in result["halt_reasons"] if r["severity"] in ("high", "critical")]
        if not blocking:
            return ALLOW
        said = "; ".join(f"{r['condition_name']} ({r['severity']}): {r['description'].rstrip('.')}" for r in blocking)
        held = any(r.get("auto_recorded") for r in blocking)
        tail = (" The session is halted until the operator acknowledges "
                f"(leash halts list --session {session_id})." if held else "")
        return Verdict(False, f"leash: halt — {said}. {result['recommended_action']}{tail}", "halt_condition")


def _said(what: str, record: dict[str, object]) -> str:
    reason = record.get("reason") or "no reason given"
    return (f"leash: {what} by {record.get('source', '?')} at {record.get('stopped_at', '?')}: {reason}. "
            "Do not retry; wait for the operator to resume.")


def _locked(entity: str, lock: dict[str, object], *, path: str | None = None) -> str:
    subject = f"{path} is covered by hands-off lock {entity!r}" if path else f"{entity!r} is hands-off"
    reason = lock.get("reason") or "no reason given"
    return (f"leash: {subject} until {lock.get('expires_at', '?')} "
            f"(locked by {lock.get('source', '?')}: {reason}). Do not touch it.")
