"""The Sessions panel's rows, and the rule of what a session's state is.

``SessionStates`` holds one snapshot's stops, halts, warrants and locks and
answers a session's state by its names:

    stopped > paused > halted > under warrant > hands-off > running

(the first that applies wins); a session held by nothing shows what its
hooks last said it is doing. ``session_rows`` joins the tmux sessions with
the agent sessions the hooks have seen (another host's, in a shared store,
by their ``HOST/NAME``), marks the gone ones (``core.views.gone``) and sorts
them by ``attention_order``. ``core.views.fleet`` builds the whole view
around them.

Failure: a stop state or halt store that cannot be read makes every session
stopped or halted (the snapshot's ``stop_state_error``/``halt_store_error``),
as the gate would treat them. A stamp that does not parse has no age.
"""
from __future__ import annotations

from leash.core.base.clock import parse_iso
from leash.core.views.gone import as_gone, pane_gone, why_killed

# Which sessions need a human, most urgent first: they sort before the rest
# (then by name). A stop is the operator's own doing, so it needs no one.
NEEDS_HUMAN = ("waiting for approval", "waiting for permission", "paused", "halted", "waiting for input")
STATE_RUNNING = "running"  # held by nothing, and its hooks have not said what it does


def _with_status(state: str, detail: str, agent: dict | None, moment: float | None = None) -> tuple[str, str]:
    """A session held by nothing shows what its hooks last said it is doing
    (working, thinking, idle, waiting for input or permission, ended); a
    working one names its tool and for how long in the detail; the subagent
    that made its last call is named too."""
    if not agent:
        return state, detail
    if state == STATE_RUNNING and agent.get("status"):
        state = agent["status"]
        if state == "working" and agent.get("last_tool") and not detail:
            since = age_of(agent.get("status_since"), moment) if moment is not None else None
            detail = agent["last_tool"] + (f" for {_duration(since)}" if since is not None else "")
    if agent.get("agent"):
        detail = f"{detail}; subagent {agent['agent']}" if detail else f"subagent {agent['agent']}"
    return state, detail


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def natural_key(name: str) -> tuple:
    """A name's sort key with its runs of digits as numbers: s1, s2, s10 (not
    s1, s10, s2); letters compare without case, the name itself breaks ties."""
    import re

    parts = re.split(r"([0-9]+)", name)  # text, digits, text, ...: the same kind at each index
    return tuple(int(part) if index % 2 else part.casefold() for index, part in enumerate(parts)), name


def attention_order(row: dict) -> tuple[int, tuple]:
    """Sessions that need a human first (in ``NEEDS_HUMAN``'s order), then by
    ``natural_key`` of the name; a gone session needs no one."""
    state = row.get("state", "")
    urgent = state in NEEDS_HUMAN and not row.get("gone")
    return (NEEDS_HUMAN.index(state) if urgent else len(NEEDS_HUMAN), natural_key(str(row.get("name", ""))))


def age_of(stamp: str | None, moment: float) -> float | None:
    try:
        return max(0.0, moment - parse_iso(stamp)) if stamp else None
    except ValueError:
        return None


class SessionStates:
    """The rule of a session's state (module docstring), over one snapshot."""

    def __init__(self, home, raw: dict, stops, halt_states: dict[str, str]):
        from leash.core.state.warrants.records import configured_attempts

        self.raw, self.stops, self.halt_states = raw, stops, halt_states
        self.fleet_stop = raw["fleet_stopped"][0] if raw["fleet_stopped"] else None
        self.locks = {lock["entity"]: lock for lock in raw["hands_off"]}
        from leash.core.state.sessions import bound_tmux_ids

        self.locks_by_tmux_id = {bound: lock for lock in raw["hands_off"] for bound in bound_tmux_ids(lock)}
        self.shared = False  # a shared store: a bare name stops or locks that name on every host
        self.killed: list[tuple[set[str], float]] = []  # (the names a warrant killed, when)
        self.live_warrants = {w["target"]: w for w in raw["warrants"]}
        self.attempts = configured_attempts(home) if raw["warrants"] else None

    def state_of(self, names: list[str], entities: list[str], tmux_id: str = "") -> tuple[str, str]:
        if self.shared:  # as the gate reads them: HOST/NAME answers to NAME too
            names = names + [name.partition("/")[2] for name in names if "/" in name]
            entities = entities + [name.partition("/")[2] for name in entities if "/" in name]
        return (self._stopped(names, tmux_id) or self._halted(names) or self._under_warrant(names)
                or self._hands_off(entities, tmux_id) or ("running", ""))

    def _stopped(self, names: list[str], tmux_id: str) -> tuple[str, str] | None:
        sessions = self.stops.sessions
        if "stop_state_error" in self.raw:
            return "stopped", "stop state unreadable"
        if self.fleet_stop:
            return "stopped", f"fleet: {self.fleet_stop.get('reason') or '-'}"
        stopped = next((name for name in names if name in sessions), None)
        if stopped is None and tmux_id and tmux_id in self.stops.by_tmux_id:
            stopped = self.stops.by_tmux_id[tmux_id]
        return ("stopped", sessions[stopped].reason or "-") if stopped is not None else None

    def _halted(self, names: list[str]) -> tuple[str, str] | None:
        if "halt_store_error" in self.raw:
            return "halted", "halt store unreadable"
        held = [self.halt_states.get(n) for n in names]
        if "paused" in held:
            return "paused", "escalated halt"
        return ("halted", "pending halt") if "halted" in held else None

    def _under_warrant(self, names: list[str]) -> tuple[str, str] | None:
        from leash.core.state.warrants.records import attempt_label

        w = next((self.live_warrants[name] for name in names if name in self.live_warrants), None)
        return ("under warrant", f"{w.get('state')} {attempt_label(w, self.attempts)}") if w else None

    def _hands_off(self, entities: list[str], tmux_id: str) -> tuple[str, str] | None:
        for entity in entities:
            if entity in self.locks:
                return "hands-off", self.locks[entity].get("reason") or entity
        if tmux_id and tmux_id in self.locks_by_tmux_id:
            return "hands-off", self.locks_by_tmux_id[tmux_id].get("reason") or tmux_id
        return None


def _agents_by_tmux(agents: list[dict], tmux_sessions: list[dict]) -> tuple[dict[str, list[dict]], list[dict]]:
    """The agent sessions inside each tmux session, and those in none shown."""
    by_tmux: dict[str, list[dict]] = {}
    loose = []
    tmux_names = {s["name"] for s in tmux_sessions}
    # tmux ids survive a rename: an agent seen under an old name joins the session it is in now.
    name_of_tmux_id = {s["id"]: s["name"] for s in tmux_sessions if s.get("id")}
    for agent in agents:
        current = name_of_tmux_id.get(agent.get("tmux_session_id") or "")
        if current:
            agent = {**agent, "tmux_session": current}
        if agent.get("tmux_session") and agent["tmux_session"] in tmux_names:
            by_tmux.setdefault(agent["tmux_session"], []).append(agent)
        else:
            loose.append(agent)
    return by_tmux, loose


def session_rows(rule: SessionStates, agents: list[dict], tmux_sessions: list[dict], moment: float) -> list[dict]:
    """Every session row, sorted by name: tmux sessions, agents outside them,
    and stops filed for sessions nothing has shown yet."""
    by_tmux, loose = _agents_by_tmux(agents, tmux_sessions)
    rows = [_tmux_row(rule, tmux, by_tmux.get(tmux["name"], []), moment) for tmux in tmux_sessions]
    elsewhere, loose = _other_hosts_tmux(loose) if rule.shared else ({}, loose)
    rows += [_elsewhere_row(rule, name, members, moment) for name, members in sorted(elsewhere.items())]
    listed = bool(tmux_sessions)  # with no tmux listing, tmux cannot say what is gone (a warrant can)
    rows += [_agent_row(rule, agent, moment, gone=why_killed(rule.killed, agent) or (
        f"tmux session {agent['tmux_session']} gone" if listed and _left_its_pane(agent) else ""))
        for agent in loose]
    rows += _unseen_stop_rows(rule.stops, rows, {s["id"] for s in tmux_sessions if s.get("id")}, moment)
    rows.sort(key=attention_order)
    return rows


def _tmux_row(rule: SessionStates, tmux: dict, agents: list[dict], moment: float) -> dict:
    from leash.core.base.identity import protecting_entities

    names = [tmux["name"]] + [a["session_id"] for a in agents]
    state, detail = rule.state_of(names, protecting_entities([tmux["name"]], agents), tmux.get("id", ""))
    latest = max(agents, key=lambda a: a.get("last_seen", ""), default=None)
    alive = [a for a in agents if not pane_gone(a, tmux) and not why_killed(rule.killed, a)]
    speaking = max(alive, key=lambda a: a.get("last_seen", ""), default=None)
    gone = bool(agents) and not alive  # the session is there, but no agent seen in it is
    state, detail = _with_status(state, detail, speaking, moment)
    if gone:
        state, detail = as_gone(state, detail, why_killed(rule.killed, agents[0]) or "its agent's pane is gone")
    pane = next((p for p in tmux.get("panes", []) if p.get("active")), (tmux.get("panes") or [{}])[0])
    age = age_of(latest.get("last_seen"), moment) if latest else max(0.0, moment - tmux.get("created", moment))
    return {
        "key": f"tmux:{tmux['name']}", "name": tmux["name"], "tmux_session": tmux["name"],
        "local_tmux": tmux.get("local_name", tmux["name"]),  # what this host's tmux calls it
        "tmux_session_id": tmux.get("id", ""),  # as the store names it (HOST/$N in a shared one)
        "agents": [a["session_id"] for a in agents], "state": state, "detail": detail,
        "last_tool": (latest or {}).get("last_tool", "") or pane.get("command", ""), "age": age, "in_tmux": True,
        "cli": _cli_of(agents), "gone": gone,
    }


def _cli_of(agents: list[dict]) -> str:
    """Which agent CLI runs in a session: its agents' (``claude``, ``gemini``,
    ``codex``, several joined by ``+``), "" when no hook has spoken yet."""
    return "+".join(sorted({str(a.get("cli") or "claude") for a in agents}))


def _left_its_pane(agent: dict) -> bool:
    """An agent seen in a tmux session of this host that tmux no longer lists
    (the caller passes only agents in no listed session)."""
    name = agent.get("tmux_session") or ""
    return bool(name) and "/" not in name and agent.get("status") != "ended"


def _other_hosts_tmux(loose: list[dict]) -> tuple[dict[str, list[dict]], list[dict]]:
    """In a shared store, the agents of other hosts' tmux sessions (``HOST/NAME``),
    by session, and the agents in none."""
    grouped: dict[str, list[dict]] = {}
    rest = []
    for agent in loose:
        name = agent.get("tmux_session") or ""
        if "/" in name:
            grouped.setdefault(name, []).append(agent)
        else:
            rest.append(agent)
    return grouped, rest


def _elsewhere_row(rule: SessionStates, name: str, agents: list[dict], moment: float) -> dict:
    """Another host's tmux session, known from its agents' hooks (this host's
    tmux cannot show it: no pane to peek at here)."""
    latest = max(agents, key=lambda a: a.get("last_seen", ""))
    tmux: dict = {"name": name, "id": latest.get("tmux_session_id") or "", "created": moment, "panes": []}
    row = _tmux_row(rule, tmux, agents, moment)
    row.update(key=f"elsewhere:{name}", in_tmux=False, local_tmux="")
    return row


def _agent_row(rule: SessionStates, agent: dict, moment: float, *, gone: str = "") -> dict:
    """``gone``: why the agent is dead ("" when it is not known to be)."""
    from leash.core.base.identity import protecting_entities

    names = [agent["session_id"]] + ([agent["tmux_session"]] if agent.get("tmux_session") else [])
    state, detail = _with_status(*rule.state_of(names, protecting_entities(names, [agent])), agent, moment)
    if gone:
        state, detail = as_gone(state, detail, gone)
    return {
        "key": f"agent:{agent['session_id']}", "name": agent["session_id"],
        "tmux_session": agent.get("tmux_session", ""), "agents": [agent["session_id"]], "state": state,
        "detail": detail, "last_tool": agent.get("last_tool", ""), "age": age_of(agent.get("last_seen"), moment),
        "in_tmux": False, "cli": _cli_of([agent]), "gone": bool(gone),
    }


def _unseen_stop_rows(stops, rows: list[dict], tmux_ids: set[str], moment: float) -> list[dict]:
    """Rows for stops filed for a session no hook or tmux has shown yet."""
    known = {name for s in rows for name in [s["name"], s.get("tmux_session")] + s["agents"] if name}
    return [{"key": f"stop:{stopped_id}", "name": stopped_id, "tmux_session": "", "agents": [],
             "state": "stopped", "detail": record.reason or "-", "last_tool": "",
             "age": age_of(record.stopped_at, moment), "in_tmux": False}
            for stopped_id, record in stops.sessions.items()
            if stopped_id not in known and record.tmux_session_id not in tmux_ids]


def names_of_agents(sessions: list[dict]) -> dict[str, str]:
    """Each agent session id -> the name the Sessions panel shows its row by
    (the tmux session it is in, else its own id)."""
    return {agent: row["name"] for row in sessions for agent in row["agents"]}
