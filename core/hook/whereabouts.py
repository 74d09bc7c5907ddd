"""Where a session's hook call comes from: the agent CLI process that ran it
and the tmux pane and session it runs in, as every hook records them.

The pane is the hook's ``$TMUX_PANE``, unless the agent process is a server
that runs many terminal UIs' calls (``codex app-server``, Codex CLI's default
for its TUIs: ``core.base.agentprograms``): it keeps the environment of the
TUI that started it, so its ``$TMUX_PANE`` names that one's pane for every
session it serves, and a pane recorded from it would send an interrupt or a
warrant's check into another agent's pane. Such a session has no pane on
record. The tmux session is asked of tmux once per pane (its id survives a
rename) and kept while the pane stays the same.

Failure: what cannot be read is left out (no process, no tmux session); an
``OSError`` of the store is the caller's.
"""
from __future__ import annotations


class Whereabouts:
    """(A plain class: the hook path does not import ``typing``.)"""

    __slots__ = ("process", "pane", "tmux_session_id", "tmux_session")

    def __init__(self, process: dict | None, pane: str, tmux_session_id: str, tmux_session: str):
        self.process = process  # core.base.agentproc's record of the agent process
        self.pane = pane  # as the store keeps it (HOST/%N in a shared store), "" when none
        self.tmux_session_id = tmux_session_id
        self.tmux_session = tmux_session


def whereabouts(registry, env, known: dict) -> Whereabouts:
    """The call's agent process, pane and tmux session; ``known``: the
    session's record as just read ({} for a new session)."""
    from leash.core.base.agentproc import hook_agent
    from leash.core.state.sessions import tmux_identity_of_pane

    process = hook_agent(env, known.get("agent_process"))
    local_pane = "" if process and process.get("shared_server") else env.get("TMUX_PANE", "")
    pane = registry.hosted(local_pane)  # HOST/%N in a shared store: panes are one host's
    if pane and known.get("tmux_pane") == pane and known.get("tmux_session_id"):
        return Whereabouts(process, pane, known["tmux_session_id"], known.get("tmux_session", ""))
    if not pane:
        return Whereabouts(process, "", "", "")
    tmux_id, tmux_name = map(registry.hosted, tmux_identity_of_pane(local_pane, env=dict(env)))
    return Whereabouts(process, pane, tmux_id, tmux_name)
