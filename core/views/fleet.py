"""The fleet as the console shows it: every panel's rows, derived from state.

``view(home, tmux_sessions=..., now=..., backend=...)`` reads the stores of
``backend`` (default: the home's, ``backend_for(home)``) once, the halts in one
unit of its kept halt reader, and returns plain data: sessions (tmux sessions joined with the agent sessions the
hooks have seen), pending halts, live warrants (with their open gate), hands-off
locks, loop breakers, the ack-log tail, recent finished warrants, the
approvals waiting for an operator (oldest first, with its age and the time
left to its deadline), and a summary. An approval and a pending halt name
their session as the Sessions panel names it (``session``). The rule that decides what a session's state *is*
lives in core, not in the console: ``core.views.sessionrows``
(stopped > paused > halted > under warrant > hands-off > running; the first
that applies wins). A session whose agent is dead is ``gone``: its
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
from leash.core.views.gone import STATE_GONE, killed_targets  # noqa: F401 (named here)
from leash.core.views.sessionrows import SessionStates, age_of, names_of_agents, session_rows

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

ACK_TAIL_LINES = 200
MAX_ROWS = 300  # per list; an operator filters or uses the palette beyond that
RECENT_FINISHED = 20
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}
# An approval this close to its deadline is due: the console shows it (and the summary's count) in red.
APPROVAL_DUE_SECONDS = 60.0


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
    rule = SessionStates(backend.home, raw, _stops_or_none_held(backend), unit.states() if unit is not None else {})
    host = raw["host"] if backend.sessions.host else ""
    rule.shared = bool(host)
    finished = _finished_warrants(backend)
    rule.killed = killed_targets(finished)
    every_session = session_rows(rule, raw["sessions"], _hosted(tmux_sessions or [], host), moment)
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
            "halts": _halt_rows(raw["pending_halts"], moment, names_of_agents(every_session)),
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


def _halt_rows(pending: list[dict], moment: float, named: dict[str, str] | None = None) -> list[dict]:
    """Pending halts by severity, then age; each names its session as the
    Sessions panel does (``session``; ``session_id`` stays the agent's id)."""
    named = named or {}
    halts = sorted(pending, key=lambda h: (SEVERITY_ORDER.get(h["severity"], 9), h["triggered_at"]))
    for halt in halts:
        halt["key"] = f"halt:{halt['halt_id']}"
        halt["session"] = named.get(halt["session_id"], halt["session_id"])
        halt["age"] = age_of(halt["triggered_at"], moment)
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
    named = names_of_agents(sessions)
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
