"""The fleet as the console shows it: every panel's rows, derived from state.

``view(home, tmux_sessions=..., now=..., backend=...)`` reads the stores of
``backend`` (default: the home's, ``backend_for(home)``) once, the halts in one
unit of its kept halt reader, and returns plain data: sessions (tmux sessions joined with the agent sessions the
hooks have seen), pending halts, live warrants (with their open gate), hands-off
locks, loop breakers, the ack-log tail, recent finished warrants, the
approvals waiting for an operator (oldest first, with its age and the time
left to its deadline), and a summary. An approval and a pending halt name
their session as the Sessions panel names it (``session``). The rules that decide what a session's state *is*
live here, not in the console:

    stopped > paused > halted > under warrant > hands-off > running

(the first that applies wins). A session whose agent is dead is ``gone``: its
tmux session (or its pane) is no longer listed, or a warrant executed on it
after the hooks last saw it. Its hooks' last word (waiting for permission,
working...) is no longer true, so it is never shown; a rule that still holds
the name (a stop, a halt) is, with "gone" in the detail. A gone row carries
``gone: True`` and sorts with the rest, never among those that need a human.
Rows sort by ``attention_order``: need-a-human first, then by ``natural_key``
of the name (s1, s2, ..., s10). Every row has a stable ``key`` so the console
can update cells in place.

The ack log is read from its end only (its last ``ack_tail`` lines): the
stores' state comes from their caches, which ``acklog.head`` holds to the log
with a ``stat`` and a small file; a cache found out of step with it is rebuilt
by streaming the log (``core.logstate``, ``core.halts.ledger``), never by
holding it (``tests/state/test_log_reads_bounded.py``).

Failure: unreadable stop state or halt store are reported in ``problems`` and
make every session "stopped"/"halted" as the gate would treat them; an
approval state that cannot be read is reported there too (no rows). A backend
without an approval store shows none.
"""
from __future__ import annotations

from leash.core.base.clock import now_seconds, parse_iso
from leash.core.views.gone import STATE_GONE, as_gone, killed_targets, pane_gone, why_killed  # noqa: F401 (named here)

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

ACK_TAIL_LINES = 200
MAX_ROWS = 300  # per list; an operator filters or uses the palette beyond that
RECENT_FINISHED = 20
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}
# An approval this close to its deadline is due: the console shows it (and the summary's count) in red.
APPROVAL_DUE_SECONDS = 60.0


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
            since = _age(agent.get("status_since"), moment) if moment is not None else None
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


def view(home=None, *, tmux_sessions: list[dict] | None = None, now: float | None = None,
         ack_tail: int = ACK_TAIL_LINES, max_rows: int = MAX_ROWS, backend: Backend | None = None) -> dict:
    """The whole fleet; each list holds at most ``max_rows`` rows (the summary
    counts them all)."""
    from leash.core.state.halts.store import HaltStoreUnavailable
    from leash.core.views.status import backend_of

    backend = backend_of(home, backend)
    try:
        with backend.halts.reading(now=now) as unit:
            return _view(backend, unit, tmux_sessions=tmux_sessions, now=now, ack_tail=ack_tail,
                         max_rows=max_rows)
    except HaltStoreUnavailable as exc:
        return _view(backend, None, tmux_sessions=tmux_sessions, now=now, ack_tail=ack_tail, max_rows=max_rows,
                     halt_problem=f"halt store unreadable ({exc})")


def _view(backend: Backend, unit, *, tmux_sessions, now, ack_tail, max_rows, halt_problem: str | None = None) -> dict:
    moment = now_seconds(now)
    raw = _snapshot(backend, unit, moment, max_rows, halt_problem)
    rule = _SessionStates(backend.home, raw, _stops_or_none_held(backend), unit.states() if unit is not None else {})
    host = raw["host"] if backend.sessions.host else ""
    rule.shared = bool(host)
    finished = _finished_warrants(backend)
    rule.killed = killed_targets(finished)
    every_session = _session_rows(rule, raw["sessions"], _hosted(tmux_sessions or [], host), moment)
    if host:
        from leash.core.state.sessions import host_of

        seen_on = {record["session_id"]: host_of(record) for record in raw["sessions"]}
        for row in every_session:
            row["host"] = _row_host(row, host, seen_on)
    sessions = every_session[:max_rows]
    warrants = _warrant_rows(raw["warrants"], rule.attempts, moment)
    lock_rows = _lock_rows(raw["hands_off"], moment)
    loops = [{"key": f"loop:{loop['name']}", **loop} for loop in raw["loops"]]
    approvals, approval_problems = _approval_rows(backend, every_session, moment)
    summary = {
        "approvals": len(approvals),
        "approval_deadline": _soonest(approvals),  # the earliest deadline, for the count's urgency
        "sessions": len(every_session),
        "stopped": sum(1 for s in every_session if s["state"] == "stopped"),
        "fleet_stopped": rule.fleet_stop is not None,
        "halts": unit.pending_counts() if unit is not None else {s: 0 for s in SEVERITY_ORDER},
        "warrants": len(warrants),
        "breakers_tripped": sum(1 for loop in loops if loop.get("tripped")),
        "locks": len(lock_rows),
    }
    return {"now": moment, "home": backend.home, "summary": summary, "sessions": sessions,
            "halts": _halt_rows(raw["pending_halts"], moment, _names_of_agents(every_session)),
            "warrants": warrants,
            "finished_warrants": finished, "locks": lock_rows, "loops": loops,
            "acklog": _ack_rows(backend, ack_tail), "approvals": approvals[:max_rows],
            "problems": [raw[k] for k in ("stop_state_error", "halt_store_error") if k in raw]
            + approval_problems}


def _hosted(tmux_sessions: list[dict], host: str) -> list[dict]:
    """This host's tmux sessions as a shared store names them (``HOST/NAME``, ``HOST/$N``)."""
    if not host:
        return tmux_sessions
    return [{**tmux, "name": f"{host}/{tmux['name']}", "id": f"{host}/{tmux['id']}" if tmux.get("id") else "",
             "local_name": tmux["name"]} for tmux in tmux_sessions]


def _row_host(row: dict, here: str, seen_on: dict[str, str]) -> str:
    """The host a session row is on: this host's for a local tmux session; the
    host its agents' hooks ran on (``seen_on``: ``core.sessions.host_of`` of
    each session); a stop's ``HOST/``; "" for a stop filed by a bare name
    (every host)."""
    if row.get("in_tmux"):
        return here
    found = next((seen_on[agent] for agent in row["agents"] if seen_on.get(agent)), "")
    return found or (row["name"].partition("/")[0] if "/" in row["name"] else "")


def _snapshot(backend: Backend, unit, moment: float, max_rows: int, halt_problem: str | None) -> dict:
    from leash.core.views import status

    raw = status.snapshot(backend=backend, now=moment, halts_limit=max_rows if unit is not None else 0, halts=unit)
    if halt_problem:
        raw["halt_store_error"] = halt_problem
    return raw


def _stops_or_none_held(backend: Backend):
    """The stop state; none when it cannot be read (``stop_state_error`` then
    makes every session stopped)."""
    from leash.core.state.stop import StopStateUnreadable
    from leash.core.store.records import StopState

    try:
        return backend.stops.current()
    except StopStateUnreadable:
        return StopState({})


class _SessionStates:
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


def _session_rows(rule: _SessionStates, agents: list[dict], tmux_sessions: list[dict], moment: float) -> list[dict]:
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


def _tmux_row(rule: _SessionStates, tmux: dict, agents: list[dict], moment: float) -> dict:
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
    age = _age(latest.get("last_seen"), moment) if latest else max(0.0, moment - tmux.get("created", moment))
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


def _elsewhere_row(rule: _SessionStates, name: str, agents: list[dict], moment: float) -> dict:
    """Another host's tmux session, known from its agents' hooks (this host's
    tmux cannot show it: no pane to peek at here)."""
    latest = max(agents, key=lambda a: a.get("last_seen", ""))
    tmux: dict = {"name": name, "id": latest.get("tmux_session_id") or "", "created": moment, "panes": []}
    row = _tmux_row(rule, tmux, agents, moment)
    row.update(key=f"elsewhere:{name}", in_tmux=False, local_tmux="")
    return row


def _agent_row(rule: _SessionStates, agent: dict, moment: float, *, gone: str = "") -> dict:
    """``gone``: why the agent is dead ("" when it is not known to be)."""
    from leash.core.base.identity import protecting_entities

    names = [agent["session_id"]] + ([agent["tmux_session"]] if agent.get("tmux_session") else [])
    state, detail = _with_status(*rule.state_of(names, protecting_entities(names, [agent])), agent, moment)
    if gone:
        state, detail = as_gone(state, detail, gone)
    return {
        "key": f"agent:{agent['session_id']}", "name": agent["session_id"],
        "tmux_session": agent.get("tmux_session", ""), "agents": [agent["session_id"]], "state": state,
        "detail": detail, "last_tool": agent.get("last_tool", ""), "age": _age(agent.get("last_seen"), moment),
        "in_tmux": False, "cli": _cli_of([agent]), "gone": bool(gone),
    }


def _unseen_stop_rows(stops, rows: list[dict], tmux_ids: set[str], moment: float) -> list[dict]:
    """Rows for stops filed for a session no hook or tmux has shown yet."""
    known = {name for s in rows for name in [s["name"], s.get("tmux_session")] + s["agents"] if name}
    return [{"key": f"stop:{stopped_id}", "name": stopped_id, "tmux_session": "", "agents": [],
             "state": "stopped", "detail": record.reason or "-", "last_tool": "",
             "age": _age(record.stopped_at, moment), "in_tmux": False}
            for stopped_id, record in stops.sessions.items()
            if stopped_id not in known and record.tmux_session_id not in tmux_ids]


def _names_of_agents(sessions: list[dict]) -> dict[str, str]:
    """Each agent session id -> the name the Sessions panel shows its row by
    (the tmux session it is in, else its own id)."""
    return {agent: row["name"] for row in sessions for agent in row["agents"]}


def _halt_rows(pending: list[dict], moment: float, named: dict[str, str] | None = None) -> list[dict]:
    """Pending halts by severity, then age; each names its session as the
    Sessions panel does (``session``; ``session_id`` stays the agent's id)."""
    named = named or {}
    halts = sorted(pending, key=lambda h: (SEVERITY_ORDER.get(h["severity"], 9), h["triggered_at"]))
    for halt in halts:
        halt["key"] = f"halt:{halt['halt_id']}"
        halt["session"] = named.get(halt["session_id"], halt["session_id"])
        halt["age"] = _age(halt["triggered_at"], moment)
        halt["triggered_epoch"] = moment - (halt["age"] or 0.0)
    return halts


def _warrant_rows(live: list[dict], attempts: int | None, moment: float) -> list[dict]:
    """Live warrants; an interrogation's row carries its open gate."""
    from leash.core.state.warrants.records import attempt_label

    rows = []
    for w in live:
        row = {"key": f"warrant:{w['id']}", **w, "attempt_label": attempt_label(w, attempts)}
        if (w.get("delivery") or {}).get("delivered") is False:  # this attempt's check never reached the agent
            row["state"] = "undelivered"
        if w.get("state") == "interrogating" and w.get("next_timeout") and w.get("last_message_at"):
            total = max(0.001, parse_iso(w["next_timeout"]) - parse_iso(w["last_message_at"]))
            remaining = max(0.0, parse_iso(w["next_timeout"]) - moment)
            row.update(gate_left=remaining, gate_fraction=min(1.0, remaining / total),
                       deadline_epoch=parse_iso(w["next_timeout"]), gate_seconds=total)
        rows.append(row)
    return rows


def _finished_warrants(backend: Backend) -> list[dict]:
    """The newest finished warrants, oldest first, as the view's plain data."""
    finished = sorted(backend.warrants.completed(newest=RECENT_FINISHED), key=lambda d: d.completed_at or "")
    return [dog.as_dict() for dog in finished[-RECENT_FINISHED:]]


def _lock_rows(locks: list[dict], moment: float) -> list[dict]:
    rows = []
    for lock in locks:
        left = _left(lock.get("expires_at"), moment)
        rows.append({"key": f"lock:{lock['entity']}", **lock, "left": left,
                     "expires_epoch": moment + left if left is not None else None})
    return rows


def approval_due(deadline_epoch: float | None, moment: float) -> bool:
    """Whether an approval with this deadline is within ``APPROVAL_DUE_SECONDS`` of it (or past it)."""
    return deadline_epoch is not None and deadline_epoch - moment <= APPROVAL_DUE_SECONDS


def _epoch(stamp: object) -> float | None:
    try:
        return parse_iso(stamp)
    except ValueError:
        return None


def _soonest(approvals: list[dict]) -> float | None:
    return min((row["deadline_epoch"] for row in approvals if row["deadline_epoch"] is not None), default=None)


def _approval_rows(backend: Backend, sessions: list[dict], moment: float) -> tuple[list[dict], list[str]]:
    """The approvals waiting, oldest first, and a problem when they cannot be
    read (their state, or a daemon from before approvals, which refuses the call)."""
    from leash.core.store.approvals import ApprovalsUnreadable
    from leash.core.store.remote import RemoteStoreError

    try:
        waiting = backend.approvals.pending(now=moment)
    except (ApprovalsUnreadable, RemoteStoreError) as exc:
        return [], [f"approvals unreadable ({exc})"]
    named = _names_of_agents(sessions)
    rows = [_approval_row(record, named, moment) for record in waiting]
    rows.sort(key=lambda row: (str(row.get("requested_at") or ""), str(row.get("id") or "")))
    return rows, []


def _approval_row(record, named: dict[str, str], moment: float) -> dict:
    """One approval, its session named as the Sessions panel names it (the tmux
    session its agent is in, else the agent's id), with its age and time left."""
    requested, deadline = _epoch(record.requested_at), _epoch(record.deadline)
    return {"key": f"approval:{record.id}", **record.as_dict(),
            "session": named.get(record.session_id or "", record.session_id or "?"),
            "requested_epoch": requested, "deadline_epoch": deadline,
            "age": max(0.0, moment - requested) if requested is not None else None,
            "left": deadline - moment if deadline is not None else None}


def _ack_rows(backend: Backend, lines: int) -> list[dict]:
    tail = [line.as_dict() for line in backend.acklog.tail(lines)]
    for line in tail:
        line["key"] = f"ack:{line.get('seq')}:{(line.get('hash') or '')[:12]}"
    return tail
