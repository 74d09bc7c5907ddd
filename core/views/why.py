"""Why a session is held: every rule that holds it now, and the command that lifts each.

``why(home, session, now=..., backend=...)`` answers for a session named by its
agent session id or its tmux session name, with the gate's own rules
(``core.identity.answers_to`` for the names a session answers to, its lineage
included) over the stores of ``backend`` (default: the home's,
``backend_for(home)``): its stops, locks and sessions, and one unit of work on
its halt store, so its answer is the gate's. It returns plain data::

    {"session": "agent-3", "names": ["agent-3", "claude-7f3a"], "tmux_session_id": "$4",
     "held": True,
     "rules": [{"rule": "session_stop", "subject": "agent-3", "reason": "...", "source": "...",
                "since": "...", "lift": "leash resume agent-3"}, ...],
     "path_locks_elsewhere": [{"entity": "path:infra/**", ...}]}

Rules, in the gate's order: ``stop_unreadable``, ``fleet_stop``,
``session_stop`` (by a name, or by the tmux session id ``$N`` the session had
when the stop was filed: ``bound_to`` says which), ``locks_unreadable``,
``hands_off`` (the entity, or the tmux id a lock was bound to),
``halts_unreadable``, ``session_paused`` and ``session_halted`` (one rule per
halt that holds it), ``budget_hold`` (a reached spend cap whose hold covers
the session, ``core.policy.budgethold``; ``budget_unreadable``), ``path_lock`` (a ``path:`` lock that would deny files
under the session's working directory, with up to ``MAX_FILES_SHOWN`` of
them). A path lock that matches no file there now is listed in
``path_locks_elsewhere`` and does not count as holding the session.

Failure: state that cannot be read is itself a rule that holds the session
(the gate denies then), with ``leash doctor --repair`` as the way out; the
function never raises for bad state.
"""
from __future__ import annotations

import os
import shlex

from leash.core.base.clock import now_seconds

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.store.records import StopRecord


MAX_FILES_SHOWN = 5
MAX_WALK_ENTRIES = 5000  # files looked at under a session's cwd for path locks
HALT_ID_SHOWN = 8
MAX_HALTS_READ = 1000  # pending halts looked at per name
DOCTOR = "leash doctor --repair"


def _command(*words: str) -> str:
    return " ".join(shlex.quote(w) if i else w for i, w in enumerate(words))


def _identity(backend: Backend, session: str, *, now: float,
              tmux_session_id: str | None) -> tuple[list, list, list, list]:
    """(names, entities, tmux ids, working directories) of ``session``: an
    agent session id, or a tmux session name with every agent seen in it."""
    from leash.core.base.identity import answers_to
    from leash.core.state.sessions import tmux_session_id_for

    known = backend.sessions.all(now=now)
    if tmux_session_id is None:
        stored = {sid: record.as_dict() for sid, record in known.items()}
        tmux_session_id = "" if session in known else tmux_session_id_for(session, home=backend.home, known=stored)
    agents = [session] if session in known else [
        sid for sid, record in known.items()
        if record.tmux_session == session
        or (tmux_session_id and record.tmux_session_id == tmux_session_id)]
    names, entities, tmux_ids, cwds = [session], [], [tmux_session_id] if tmux_session_id else [], []
    for agent in agents:
        agent_names, record = answers_to(backend.sessions, agent, now=now)
        names += [n for n in agent_names if n not in names]
        if record.get("entity") and record["entity"] not in entities:
            entities.append(record["entity"])
        if record.get("tmux_session_id") and record["tmux_session_id"] not in tmux_ids:
            tmux_ids.append(record["tmux_session_id"])
        if record.get("cwd") and record["cwd"] not in cwds:
            cwds.append(record["cwd"])
    entities = names + [e for e in entities if e not in names]
    return names, entities, tmux_ids, cwds


def why(home=None, session: str = "", *, now: float | None = None, tmux_session_id: str | None = None,
        halts=None, halts_connection=None, backend: Backend | None = None) -> dict:
    """Every rule that holds ``session`` now. ``tmux_session_id``: the tmux
    session's id when the caller knows it ("" to skip asking tmux); ``halts``:
    an open unit of the halt store to read (the console's kept reader,
    ``backend.halts.reading()``; ``halts_connection``, an open halts.db
    connection, is the older way to say it), else one unit is opened."""
    from leash.core.views.status import backend_of

    moment = now_seconds(now)
    backend = backend_of(home, backend)
    if halts is None and halts_connection is not None:
        from leash.core.store.filehalts import FileHaltUnit

        halts = FileHaltUnit(halts_connection, backend.home)
    names, entities, tmux_ids, cwds = _identity(backend, session, now=moment, tmux_session_id=tmux_session_id)
    rules = _stop_rules(backend, names, tmux_ids, moment)
    lock_rules, path_locks = _lock_rules(backend, entities, tmux_ids, moment)
    rules += lock_rules
    rules += _halt_rules(backend, names, moment, halts)
    rules += _budget_rules(backend, session, moment)
    elsewhere = []
    for entity, lock in path_locks:
        files, more = _files_denied(backend, entity, cwds, moment)
        row = {"entity": entity, "reason": lock.reason or "", "source": lock.source or "",
               "until": lock.expires_at or "", "lift": _command("leash", "release", entity)}
        if files:
            rules.append({"rule": "path_lock", "subject": entity, **row, "files": files, "more_files": more})
        else:
            elsewhere.append(row)
    # Something answers to the name: an agent session or a tmux session leash
    # knows, or a rule that names it. Otherwise "free" would be a guess.
    known = bool(rules) or len(names) > 1 or bool(tmux_ids) or bool(cwds) or \
        backend.sessions.get(session, now=moment) is not None
    return {"session": session, "names": names, "tmux_session_id": tmux_ids[0] if tmux_ids else "",
            "known": known, "held": bool(rules), "rules": rules, "path_locks_elsewhere": elsewhere}


def _stop_rules(backend: Backend, names: list[str], tmux_ids: list[str], moment: float) -> list[dict]:
    from leash.core.state.stop import StopStateUnreadable

    try:
        stops = backend.stops.current(now=moment)
    except StopStateUnreadable as exc:
        return [{"rule": "stop_unreadable", "subject": "stops.json", "reason": str(exc), "lift": DOCTOR}]
    rules = []
    if stops.fleet is not None:
        rules.append(_stop_row("fleet_stop", "the fleet", stops.fleet, "leash resume --all"))
    seen = set()
    for name in names:
        if name in stops.sessions:
            seen.add(name)
            rules.append(_stop_row("session_stop", name, stops.sessions[name], _command("leash", "resume", name)))
    for tmux_id in tmux_ids:
        bound = stops.by_tmux_id.get(tmux_id)
        if bound is not None and bound not in seen:  # filed under the name the tmux session had then
            seen.add(bound)
            row = _stop_row("session_stop", bound, stops.sessions[bound], _command("leash", "resume", bound))
            rules.append({**row, "bound_to": tmux_id})
    return rules


def _budget_rules(backend: Backend, session: str, moment: float) -> list[dict]:
    """A reached spend cap whose hold covers the session (``core.policy.budgethold``, as the gate judges)."""
    from leash.core.base.config import load_config
    from leash.core.policy import budgethold

    budget = load_config(backend.home).get("budget") or {}
    if not budget.get("cap"):
        return []
    from leash.core.store.budget import BudgetUnreadable

    try:
        holds = backend.budget.holds()
    except BudgetUnreadable as exc:
        return [{"rule": "budget_unreadable", "subject": "budget store", "reason": str(exc), "lift": DOCTOR}]
    from leash.core.views.metering import member_of

    member = member_of(backend, session)
    found = budgethold.covering(holds, budget["cap"], budget.get("accounts", {}),
                                session_ids=(session, *backend.sessions.lineage(session, now=moment)),
                                entity=member.entity, host=member.host)
    if found is None:
        return []
    hold, cap = found
    amount = "PERCENT" if budgethold.is_percent(hold, cap) else "AMOUNT"
    return [{"rule": "budget_hold", "subject": hold.cap, "bucket": hold.bucket, "period": hold.period,
             "reason": f"{budgethold.figure(hold, cap)} ({budgethold.where(hold, cap)})",
             "lift": _command("leash", "budget", "raise", hold.cap, "--to", amount, "--reason", "...")}]


def _stop_row(rule: str, subject: str, record: StopRecord, lift: str) -> dict:
    return {"rule": rule, "subject": subject, "reason": record.reason or "", "source": record.source or "",
            "since": record.stopped_at or "", "lift": lift}


def _lock_rules(backend: Backend, entities: list[str], tmux_ids: list[str], moment: float) -> tuple[list[dict], list]:
    """(hands-off rules on the session's entities, the active path locks)."""
    from leash.core.state.handsoff import PATH_PREFIX, HandsOffUnreadable

    try:
        found = [(backend.locks.covering([entity], now=moment), "") for entity in entities]
        found += [(backend.locks.covering([], tmux_session_id=t, now=moment), t) for t in tmux_ids]
        active = backend.locks.active(now=moment)
    except HandsOffUnreadable as exc:
        return [{"rule": "locks_unreadable", "subject": "hands_off_registry.json", "reason": str(exc),
                 "lift": DOCTOR}], []
    rules, seen = [], set()
    for lock, bound in found:
        if lock is None or lock.entity in seen:
            continue
        entity = lock.entity
        seen.add(entity)
        row = {"rule": "hands_off", "subject": entity, "reason": lock.reason or "",
               "source": lock.source or "", "since": lock.locked_at or "",
               "until": lock.expires_at or "", "lift": _command("leash", "release", entity)}
        rules.append({**row, "bound_to": bound} if bound else row)
    paths = [(e, lock) for e, lock in sorted(active.items()) if e.startswith(PATH_PREFIX)]
    return rules, paths


def _halt_rules(backend: Backend, names: list[str], moment: float, unit=None) -> list[dict]:
    from leash.core.state.halts.store import HaltStoreUnavailable
    from leash.core.state.loghead import HeadMismatch

    try:
        if unit is not None:
            return _held_by_halts(unit, names)
        with backend.halts.unit(now=moment) as opened:
            return _held_by_halts(opened, names)
    except (HaltStoreUnavailable, HeadMismatch) as exc:  # the gate holds every call then
        return [{"rule": "halts_unreadable", "subject": "halts.db", "reason": f"halt store unreadable ({exc})",
                 "lift": DOCTOR}]


def _held_by_halts(unit, names: list[str]) -> list[dict]:
    rules = []
    for name in names:
        state = unit.state(name)
        if state == "active":
            continue
        pending = [halt.as_dict() for halt in unit.pending(session_id=name, limit=MAX_HALTS_READ)]
        rules += [_halt_row(name, halt) for halt in pending if _holds(halt, state)]
    return rules


def _holds(halt: dict, state: str) -> bool:
    """The halts that give a session its state (``core.halts.rules``)."""
    from leash.core.policy.halts.conditions.registry import blocks

    if halt.get("resolution") in ("escalated", "timeout"):
        return True
    return state == "halted" and not halt["acknowledged"] and blocks(halt["severity"])


def _halt_row(name: str, halt: dict) -> dict:
    paused = halt.get("resolution") in ("escalated", "timeout")
    return {"rule": "session_paused" if paused else "session_halted", "subject": name,
            "halt_id": halt["halt_id"], "severity": halt["severity"],
            "condition": halt.get("condition_name") or halt["halt_type"], "reason": halt["description"],
            "since": halt["triggered_at"], "resolution": halt.get("resolution") or "",
            "lift": _command("leash", "halts", "ack", halt["halt_id"][:HALT_ID_SHOWN])}


def _files_denied(backend: Backend, entity: str, cwds: list[str], moment: float) -> tuple[list[str], bool]:
    """Files under the session's working directories that ``entity`` covers
    (the gate's ``lock_for_path``), at most ``MAX_FILES_SHOWN``; and whether
    there are more (or the walk stopped early)."""
    from leash.core.base.project import project_root

    files: list[str] = []
    looked = 0
    for cwd in cwds:
        if not os.path.isdir(cwd):
            continue
        for directory, dirs, names in os.walk(cwd):
            dirs.sort()
            for name in sorted(names) + [d + "/" for d in dirs]:
                looked += 1
                if looked > MAX_WALK_ENTRIES:
                    return files, True
                path = os.path.join(directory, name.rstrip("/"))
                # Anchored as the gate anchors them: at the project holding the directory.
                found = backend.locks.lock_for_path(path, cwd=project_root(cwd, {}) or cwd, now=moment,
                                                    subtree=name.endswith("/"))
                if found is not None and found.entity == entity:
                    if len(files) == MAX_FILES_SHOWN:
                        return files, True
                    files.append(os.path.relpath(path, cwd) + ("/" if name.endswith("/") else ""))
    return files, False


def summary(answer: dict, *, lifts: bool = True) -> str:
    """One line: what holds the session, most binding rule first (with what
    lifts each, or without: then no halt id either, the words alone)."""
    if not answer["rules"]:
        return "nothing holds it"
    return "; ".join(describe(rule, lift=lifts) for rule in answer["rules"])


def describe(rule: dict, *, lift: bool = True) -> str:
    """A rule in a few words, with what lifts it."""
    kind = rule["rule"]
    reason = f": {rule['reason']}" if rule.get("reason") else ""
    if kind == "fleet_stop":
        text = f"fleet stopped by {rule.get('source') or '?'}{reason}"
    elif kind == "session_stop":
        bound = f" (tmux {rule['bound_to']}, renamed since)" if rule.get("bound_to") else ""
        text = f"stop on {rule['subject']}{bound} by {rule.get('source') or '?'}{reason}"
    elif kind == "hands_off":
        bound = f" (tmux {rule['bound_to']})" if rule.get("bound_to") else ""
        text = f"hands-off {rule['subject']}{bound} until {rule.get('until') or '?'}{reason}"
    elif kind in ("session_halted", "session_paused"):
        verb = "paused" if kind == "session_paused" else "halted"
        shown_id = f" {rule['halt_id'][:HALT_ID_SHOWN]}" if lift else ""
        text = f"{verb} by {rule['severity']} halt{shown_id} {rule['condition']} on {rule['subject']}{reason}"
    elif kind == "budget_hold":
        text = f"budget cap {rule['subject']} reached{reason}"
    elif kind == "path_lock":
        more = ", ..." if rule.get("more_files") else ""
        text = f"{rule['subject']} denies {', '.join(rule['files'])}{more}{reason}"
    else:
        text = f"{kind}{reason}"
    return f"{text} [{rule['lift']}]" if lift else text
