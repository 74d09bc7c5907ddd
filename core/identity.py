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
