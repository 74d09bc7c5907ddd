"""Who a session is, for the locks that protect it: one rule read by the gate
(before a tool call), the fleet view (a row's state) and the kennel (before a
kill).

A session is protected by a hands-off lock on any of its names (its id, its
tmux session's name, the sessions it was resumed from) and on the entity each
agent session inside it was locked under. Nothing here reads a file or fails.
"""
from __future__ import annotations

from collections.abc import Iterable


def protecting_entities(names: Iterable[str], agents: Iterable[dict] = ()) -> list[str]:
    """The entities a lock on which protects the session: ``names``, then each
    agent record's ``session_id`` and ``entity``; each once, in that order."""
    found = [name for name in names if name]
    for agent in agents:
        found += [value for value in (agent.get("session_id"), agent.get("entity")) if value]
    return list(dict.fromkeys(found))


def answers_to(sessions, session_id: str, *, now: float | None = None) -> tuple[list[str], dict]:
    """The names a session answers to (its id, its tmux session's name, the
    sessions it was resumed or forked from: a stop on an ancestor holds it
    too) and its record, read from ``sessions`` (a session store: ``get`` and
    ``lineage``). The gate's rule, for readers that hold a backend."""
    found = sessions.get(session_id, now=now)
    record = found.as_dict() if found is not None else {}
    names = [session_id]
    tmux_name = record.get("tmux_session")
    if tmux_name and tmux_name != session_id:
        names.append(tmux_name)
    if record.get("parent"):
        record["lineage"] = sessions.lineage(session_id, now=now)
        names.extend(n for n in record["lineage"] if n not in names)
    return names, record
