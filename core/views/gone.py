"""When an agent is dead, for the fleet view (``core.views.fleet``).

An agent is gone when its tmux session is no longer listed, when its pane is
no longer in its tmux session, or when a warrant killed its tmux session
after its hooks last spoke (``executed``, ``already_dead``). What its hooks
last said (waiting for permission, working...) is then no longer true; a rule
that holds its name (a stop, a halt) still does, and is kept.

Failure: none; a time that does not parse is read as unknown.
"""
from __future__ import annotations

from leash.core.base.clock import parse_iso

STATE_GONE = "gone"  # its tmux session or pane is gone, or a warrant executed on it
# The states a rule gives (they hold the name, alive or not); any other state is
# what the hooks last said, which a dead agent no longer does.
RULE_STATES = ("stopped", "paused", "halted", "under warrant", "hands-off")
KILLED = ("executed", "already_dead")  # warrant outcomes after which its target's agents are dead


def epoch(stamp: object) -> float | None:
    try:
        return parse_iso(stamp)
    except ValueError:
        return None


def pane_gone(agent: dict, tmux: dict) -> bool:
    """An agent seen in a pane its tmux session no longer has: judged only when
    the hooks saw it in this very session (its id) and in a pane, and the
    session's panes are listed."""
    pane = str(agent.get("tmux_pane") or "")
    same = bool(tmux.get("id")) and agent.get("tmux_session_id") == tmux.get("id")
    listed = {p.get("id") for p in tmux.get("panes") or [] if p.get("id")}
    return same and bool(pane and listed) and (pane.rpartition("/")[2] or pane) not in listed


def killed_targets(finished: list) -> list[tuple[set[str], float]]:
    """The names each warrant that killed its target answered to (its target
    as filed, its tmux session's id), and when it ended."""
    killed = []
    for dog in finished:
        ended = epoch(dog.get("completed_at")) if dog.get("outcome") in KILLED else None
        warrant = dog.get("warrant") or {}
        names = {str(warrant.get(key)) for key in ("target", "target_id") if warrant.get(key)}
        if ended is not None and names:
            killed.append((names, ended))
    return killed


def why_killed(killed: list[tuple[set[str], float]], agent: dict) -> str:
    """"warrant executed" when a warrant killed the agent's tmux session after
    its hooks last spoke (a newer agent by that name is alive); "" otherwise."""
    mine = {str(agent.get(key)) for key in ("session_id", "tmux_session", "tmux_session_id") if agent.get(key)}
    seen = epoch(agent.get("last_seen"))
    for names, ended in killed:
        if mine & names and (seen is None or seen <= ended):
            return "warrant executed"
    return ""


def as_gone(state: str, detail: str, why: str) -> tuple[str, str]:
    """A dead agent's state: a rule that holds its name still shows (with
    "gone" said); what its hooks last said does not ("ended" stays ended)."""
    if state in RULE_STATES:
        return state, f"{detail}; gone: {why}" if detail else f"gone: {why}"
    if state == "ended":
        return state, detail
    return STATE_GONE, why
