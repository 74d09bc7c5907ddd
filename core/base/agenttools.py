"""The sessions an agent's tools run in, and ending them when the agent leaves
them behind.

Gemini CLI and Codex CLI run each shell call in a session of its own
(``setsid``: the shell is its session's and process group's leader) below
their own process. SIGINT ends a headless Codex CLI and its tools; a headless
Gemini CLI ends on it but leaves its running shell command behind, orphaned
in that session (tests/e2e/agents/PROCESS_FACTS.md). So an interrupt takes
the tool sessions below the agent *before* it signals the agent (after, the
orphans hang from init and nothing ties them to it), and ends them after:
``tool_sessions(agent)`` then ``end_sessions(found)``.

A tool session is a process below the agent (at any depth, at most
``MAX_TREE`` looked at) that leads a session other than the agent's, of the
agent's user. Each is kept as (pid, start time), and is ended (SIGTERM to its
process group, the leader's pid) only while that pid still has that start
time, that user and still leads its session: a pid reused meanwhile is never
signalled.

What this cannot see: a tool that left the agent's tree (a double fork to
init, ``systemd-run``, a tmux server of its own) before the interrupt.

Failure: nothing raises for a process that has gone; ``end_sessions`` returns
how many it ended.
"""
from __future__ import annotations

import os
import signal

from leash.core.base.agentproc import MAX_TREE, children_of_all, owner_of, session_of, stat_of


def tool_sessions(agent_pid: int, uid: int) -> list[tuple[int, int]]:
    """(pid, start time) of each session leader below ``agent_pid`` (other
    than the agent's own session), owned by ``uid``."""
    own = session_of(agent_pid)
    if own is None:
        return []
    children = children_of_all()
    found: list[tuple[int, int]] = []
    todo, seen = list(children.get(agent_pid, [])), {agent_pid}
    while todo and len(seen) < MAX_TREE:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        facts = stat_of(pid)
        if facts is None:
            continue
        if session_of(pid) == pid != own and owner_of(pid) == uid:
            found.append((pid, facts[2]))
        todo.extend(children.get(pid, []))
    return found


def end_sessions(leaders: list[tuple[int, int]], uid: int, signum: int = signal.SIGTERM) -> int:
    """SIGTERM to the process group of each leader still the one found; how many."""
    ended = 0
    for pid, started in leaders:
        facts = stat_of(pid)
        if facts is None or facts[2] != started or owner_of(pid) != uid or session_of(pid) != pid:
            continue
        try:
            os.killpg(pid, signum)
            ended += 1
        except (ProcessLookupError, PermissionError):
            continue
    return ended
