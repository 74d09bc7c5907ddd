"""The agent processes leashd knows, and whether a process runs below one.

Every hook request's peer (the hook process, by ``SO_PEERCRED``) leads up its
ancestry to the agent CLI process that ran it (Claude Code, Gemini CLI or
Codex CLI: ``core.base.agentproc``); leashd
keeps that process as (pid, start time), which names one process for the
machine's life however its pid is reused later. At start it also takes the
processes the session records name (``agent_process``) that still run as
that CLI, so a restarted daemon knows the agents that ran before it.

``agent_above(pid)`` walks a process's ancestry in ``/proc`` (at most
``MAX_DEPTH`` steps) and says which known agent it runs below: the operator
socket refuses such a peer (in the single-user profile the agent is the same
Unix user as the operator, so the uid alone cannot tell them apart).

Failure: nothing here raises for a process that has gone. A peer whose own
``/proc`` entry cannot be read (gone already, or in a pid namespace leashd
cannot see) is ``UNTOLD`` while any agent is known: the caller refuses it,
since it cannot be told apart. What the walk cannot see: a process that left
the agent's tree before it connected (a double fork or ``setsid`` reparents
it to init; ``systemd-run``, ``at``, a tmux server started elsewhere run it
for the agent), which is why the separated profile is the guarantee.
"""
from __future__ import annotations

import threading

from leash.core.base import agentproc

# Processes remembered at most; past this, the ones that have ended are
# dropped first, then the oldest.
MAX_KNOWN = 4096
MAX_DEPTH = agentproc.MAX_DEPTH
UNTOLD = (-1, -1)  # agent_above's answer for a peer whose ancestry cannot be read


class KnownAgents:
    def __init__(self) -> None:
        self.known: dict[tuple[int, int], str] = {}  # (pid, start ticks) -> its session, oldest first
        self.mutex = threading.Lock()

    def __len__(self) -> int:
        return len(self.known)

    def learn_from_hook(self, hook_pid: int, uid: int, *, session: str = "") -> tuple[int, int] | None:
        """Remember the agent CLI process behind the hook process
        ``hook_pid`` (of user ``uid``, for ``session``); returns it as (pid,
        start ticks), None when there is none."""
        process = agentproc.agent_process(hook_pid, uid=uid)
        if process is None:
            return None
        key = (process["pid"], process["started"])
        self._add(key, session)
        return key

    def session_of(self, key: tuple[int, int]) -> str:
        """The session a known agent's hooks named last ("" when none did)."""
        return self.known.get(key, "")

    def learn_recorded(self, records: dict) -> int:
        """Remember the recorded ``agent_process`` of each session record
        (session id -> record) that is still that agent CLI; returns how many."""
        learned = 0
        for session, record in records.items():
            process = record.get("agent_process") if hasattr(record, "get") else None  # a dict or a SessionRecord
            known = agentproc.recorded(process)
            if known is None:
                continue
            try:
                agentproc.verify(process)  # type: ignore[arg-type]  # recorded() said it is a dict
            except agentproc.NotTheAgent:
                continue
            self._add((known[0], known[1]), str(session))
            learned += 1
        return learned

    def _add(self, key: tuple[int, int], session: str) -> None:
        with self.mutex:
            if key in self.known:
                if session:
                    self.known[key] = session
                return
            self.known[key] = session
            if len(self.known) > MAX_KNOWN:
                for stale in [k for k in self.known if not _running(k)]:
                    del self.known[stale]
                while len(self.known) > MAX_KNOWN:
                    del self.known[next(iter(self.known))]

    def name_of(self, key: tuple[int, int]) -> str:
        """The agent CLI a known agent runs, as a person says it."""
        from leash.core.base.agentprograms import name_of, program_of

        facts = agentproc.stat_of(key[0])
        program = program_of(facts[0], agentproc.argv_of(key[0])) if facts is not None else None
        return name_of(program.cli if program is not None else None)

    def agent_above(self, pid: int) -> tuple[int, int] | None:
        """The known agent (pid, start ticks) that ``pid`` is or runs below;
        None when it runs below none; ``UNTOLD`` when its ancestry cannot be
        read while agents are known."""
        if not self.known:
            return None
        facts = agentproc.stat_of(pid) if pid > 0 else None
        if facts is None:
            return UNTOLD
        for _ in range(MAX_DEPTH):
            key = (pid, facts[2])
            if key in self.known:
                return key
            pid = facts[1]
            if pid <= 1:
                return None
            facts = agentproc.stat_of(pid)
            if facts is None:
                return None  # an ancestor it cannot see (another user's, hidden): none of the agents it learned
        return None


def _running(key: tuple[int, int]) -> bool:
    facts = agentproc.stat_of(key[0])
    return facts is not None and facts[2] == key[1]
