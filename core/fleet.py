"""The fleet as the console shows it: every panel's rows, derived from state.

``view(home, tmux_sessions=..., now=...)`` reads the state home once and
returns plain data: sessions (tmux sessions joined with the agent sessions the
hooks have seen), pending halts, live warrants (with their open gate), hands-off
locks, loop breakers, the ack-log tail, recent finished warrants, and a
summary. The rules that decide what a session's state *is* live here, not in
the console:

    stopped > paused > halted > under warrant > hands-off > running

(the first that applies wins). Every row has a stable ``key`` so the console can
update cells in place.

Failure: unreadable stop state or halt store are reported in ``problems`` and
make every session "stopped"/"halted" as the gate would treat them.
"""
from __future__ import annotations

from leash.core.clock import now_seconds, parse_iso

ACK_TAIL_LINES = 200
MAX_ROWS = 300  # per list; an operator filters or uses the palette beyond that
RECENT_FINISHED = 20
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}


def _with_status(state: str, detail: str, agent: dict | None) -> tuple[str, str]:
    """A running session shows what Claude Code last said it is doing
    ("waiting for input", "waiting for permission", "ended"); the subagent
    that made its last call is named in the detail."""
    if not agent:
        return state, detail
    if state == "running" and agent.get("status"):
        state = agent["status"]
    if agent.get("agent"):
        detail = f"{detail}; subagent {agent['agent']}" if detail else f"subagent {agent['agent']}"
    return state, detail


def _age(stamp: str | None, moment: float) -> float | None:
    try:
        return max(0.0, moment - parse_iso(stamp)) if stamp else None
    except ValueError:
        return None


def _left(stamp: str | None, moment: float) -> float | None:
    try:
        return parse_iso(stamp) - moment if stamp else None
    except ValueError:
        return None


def view(home, *, tmux_sessions: list[dict] | None = None, now: float | None = None,
         ack_tail: int = ACK_TAIL_LINES, max_rows: int = MAX_ROWS) -> dict:
    """The whole fleet; each list holds at most ``max_rows`` rows (the summary
    counts them all)."""
    from leash.core.halts import api as halts_api
    from leash.core.halts.store import HaltStoreUnavailable

    try:
        with halts_api.reading(home, now) as connection:
            return _view(home, connection, tmux_sessions=tmux_sessions, now=now, ack_tail=ack_tail,
                         max_rows=max_rows)
    except HaltStoreUnavailable as exc:
        return _view(home, None, tmux_sessions=tmux_sessions, now=now, ack_tail=ack_tail, max_rows=max_rows,
                     halt_problem=f"halt store unreadable ({exc})")


def _view(home, connection, *, tmux_sessions, now, ack_tail, max_rows, halt_problem: str | None = None) -> dict:
    from leash.core import status
    from leash.core.halts import api as halts_api
    from leash.core.identity import protecting_entities
    from leash.core.protocol import StopProtocol
    from leash.core.stop import StopStateUnreadable
    from leash.core.warrants import WarrantQueue
    from leash.core.warrants.records import attempt_label, configured_attempts

    moment = now_seconds(now)
    protocol = StopProtocol(home)
    if connection is not None:
        raw = status.snapshot(protocol, now=moment, halts_limit=max_rows, connection=connection)
    else:
        raw = status.snapshot(protocol, now=moment, halts_limit=0)
    if halt_problem:
        raw["halt_store_error"] = halt_problem
    problems = [raw[k] for k in ("stop_state_error", "halt_store_error") if k in raw]
    try:
        stops = protocol.stops.snapshot()
    except StopStateUnreadable:
        stops = {"sessions": {}, "fleet": None, "by_tmux_id": {}}
    fleet_stop = raw["fleet_stopped"][0] if raw["fleet_stopped"] else None
    locks = {lock["entity"]: lock for lock in raw["hands_off"]}
    locks_by_tmux_id = {lock["tmux_session_id"]: lock for lock in raw["hands_off"] if lock.get("tmux_session_id")}
    halt_states = halts_api.session_states(connection) if connection is not None else {}
    live_warrants = {w["target"]: w for w in raw["warrants"]}
    attempts = configured_attempts(home) if raw["warrants"] else None

    agents_by_tmux: dict[str, list[dict]] = {}
    loose_agents = []
    tmux_names = {s["name"] for s in tmux_sessions or []}
    # tmux ids survive a rename: an agent seen under an old name joins the session it is in now.
    name_of_tmux_id = {s["id"]: s["name"] for s in tmux_sessions or [] if s.get("id")}
    for agent in raw["sessions"]:
        current = name_of_tmux_id.get(agent.get("tmux_session_id") or "")
        if current:
            agent = {**agent, "tmux_session": current}
        if agent.get("tmux_session") and agent["tmux_session"] in tmux_names:
            agents_by_tmux.setdefault(agent["tmux_session"], []).append(agent)
        else:
            loose_agents.append(agent)

    def state_of(names: list[str], entities: list[str], tmux_id: str = "") -> tuple[str, str]:
        if "stop_state_error" in raw:
            return "stopped", "stop state unreadable"
        if fleet_stop:
            return "stopped", f"fleet: {fleet_stop.get('reason') or '-'}"
        for name in names:
            if name in stops["sessions"]:
                return "stopped", stops["sessions"][name].get("reason") or "-"
        if tmux_id and tmux_id in stops["by_tmux_id"]:
            return "stopped", stops["sessions"][stops["by_tmux_id"][tmux_id]].get("reason") or "-"
        if "halt_store_error" in raw:
            return "halted", "halt store unreadable"
        held = [halt_states.get(n) for n in names]
        if "paused" in held:
            return "paused", "escalated halt"
        if "halted" in held:
            return "halted", "pending halt"
        for name in names:
            if name in live_warrants:
                w = live_warrants[name]
                return "under warrant", f"{w.get('state')} {attempt_label(w, attempts)}"
        for entity in entities:
            if entity in locks:
                return "hands-off", locks[entity].get("reason") or entity
        if tmux_id and tmux_id in locks_by_tmux_id:
            return "hands-off", locks_by_tmux_id[tmux_id].get("reason") or tmux_id
        return "running", ""

    sessions = []
    for tmux in tmux_sessions or []:
        agents = agents_by_tmux.get(tmux["name"], [])
        names = [tmux["name"]] + [a["session_id"] for a in agents]
        entities = protecting_entities([tmux["name"]], agents)
        state, detail = state_of(names, entities, tmux.get("id", ""))
        latest = max(agents, key=lambda a: a.get("last_seen", ""), default=None)
        state, detail = _with_status(state, detail, latest)
        pane = next((p for p in tmux.get("panes", []) if p.get("active")), (tmux.get("panes") or [{}])[0])
        sessions.append({
            "key": f"tmux:{tmux['name']}", "name": tmux["name"], "tmux_session": tmux["name"],
            "agents": [a["session_id"] for a in agents], "state": state, "detail": detail,
            "last_tool": (latest or {}).get("last_tool", "") or pane.get("command", ""),
            "age": _age((latest or {}).get("last_seen"), moment) if latest else max(0.0, moment - tmux.get("created", moment)),
            "in_tmux": True,
        })
    for agent in loose_agents:
        names = [agent["session_id"]] + ([agent["tmux_session"]] if agent.get("tmux_session") else [])
        entities = protecting_entities(names, [agent])
        state, detail = _with_status(*state_of(names, entities), agent)
        sessions.append({
            "key": f"agent:{agent['session_id']}", "name": agent["session_id"],
            "tmux_session": agent.get("tmux_session", ""), "agents": [agent["session_id"]], "state": state,
            "detail": detail, "last_tool": agent.get("last_tool", ""), "age": _age(agent.get("last_seen"), moment),
            "in_tmux": False,
        })
    known = {name for s in sessions for name in [s["name"], s.get("tmux_session")] + s["agents"] if name}
    for stopped_id, record in stops["sessions"].items():
        if stopped_id not in known and record.get("tmux_session_id") not in name_of_tmux_id:  # a stop filed for a session no hook or tmux has shown yet
            sessions.append({
                "key": f"stop:{stopped_id}", "name": stopped_id, "tmux_session": "", "agents": [],
                "state": "stopped", "detail": record.get("reason") or "-", "last_tool": "",
                "age": _age(record.get("stopped_at"), moment), "in_tmux": False,
            })
    sessions.sort(key=lambda s: s["name"])
    summary_sessions = len(sessions)
    summary_stopped = sum(1 for s in sessions if s["state"] == "stopped")
    sessions = sessions[:max_rows]

    halts = sorted(raw["pending_halts"], key=lambda h: (SEVERITY_ORDER.get(h["severity"], 9), h["triggered_at"]))
    for halt in halts:
        halt["key"] = f"halt:{halt['halt_id']}"
        halt["age"] = _age(halt["triggered_at"], moment)
        halt["triggered_epoch"] = moment - (halt["age"] or 0.0)

    warrants = []
    for w in raw["warrants"]:
        row = {"key": f"warrant:{w['id']}", **w, "attempt_label": attempt_label(w, attempts)}
        if w.get("state") == "interrogating" and w.get("next_timeout") and w.get("last_message_at"):
            total = max(0.001, parse_iso(w["next_timeout"]) - parse_iso(w["last_message_at"]))
            remaining = max(0.0, parse_iso(w["next_timeout"]) - moment)
            row.update(gate_left=remaining, gate_fraction=min(1.0, remaining / total),
                       deadline_epoch=parse_iso(w["next_timeout"]), gate_seconds=total)
        warrants.append(row)
    finished = sorted(WarrantQueue(protocol.home, protocol.acklog).completed(newest=RECENT_FINISHED),
                      key=lambda d: d.get("completed_at", ""))[-RECENT_FINISHED:]

    lock_rows = []
    for lock in raw["hands_off"]:
        left = _left(lock.get("expires_at"), moment)
        lock_rows.append({"key": f"lock:{lock['entity']}", **lock, "left": left,
                          "expires_epoch": moment + left if left is not None else None})
    loops = [{"key": f"loop:{loop['name']}", **loop} for loop in raw["loops"]]
    tail = protocol.acklog.tail(ack_tail)
    for line in tail:
        line["key"] = f"ack:{line.get('seq')}:{line.get('hash', '')[:12]}"

    by_severity = halts_api.pending_counts(connection) if connection is not None else {s: 0 for s in SEVERITY_ORDER}
    summary = {
        "sessions": summary_sessions,
        "stopped": summary_stopped,
        "fleet_stopped": fleet_stop is not None,
        "halts": by_severity,
        "warrants": len(warrants),
        "breakers_tripped": sum(1 for loop in loops if loop.get("tripped")),
        "locks": len(lock_rows),
    }
    return {"now": moment, "home": protocol.home, "summary": summary, "sessions": sessions, "halts": halts,
            "warrants": warrants, "finished_warrants": finished, "locks": lock_rows, "loops": loops,
            "acklog": tail, "problems": problems}
