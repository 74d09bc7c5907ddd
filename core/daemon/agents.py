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

``tmux_server_above(pid)`` says which tmux server hosting a known agent a
process runs under: the server of the agent's ``$TMUX`` (read from its
environment, or the ``tmux_socket`` its session recorded), asked once per
agent as ``tmux -S SOCKET display -p '#{pid}'`` when the operator socket next
needs it (never on the hook's path). What an agent has that server run
(``tmux new-window 'leash resume ...'``, ``run-shell``, keys sent to another
pane) leaves the agent's tree but not the server's, and is refused too. It
cannot tell such a command from an operator's own console in the same tmux
server: an operator keeps agents on a tmux socket of their own (leash's
kennel does).

Failure: nothing here raises for a process that has gone. A peer whose own
``/proc`` entry cannot be read (gone already, or in a pid namespace leashd
cannot see) is ``UNTOLD`` while any agent is known: the caller refuses it,
since it cannot be told apart. What the walk cannot see: a process that left
the agent's tree before it connected (a double fork or ``setsid`` reparents
it to init; ``systemd-run``, ``at``, a tmux server started elsewhere run it
for the agent), which is why the separated profile is the guarantee.
"""
from __future__ import annotations

import os
import subprocess
import threading

from leash.core.base import agentproc

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.records import SessionRecord

# Processes remembered at most; past this, the ones that have ended are
# dropped first, then the oldest.
MAX_KNOWN = 4096
MAX_DEPTH = agentproc.MAX_DEPTH
UNTOLD = (-1, -1)  # agent_above's answer for a peer whose ancestry cannot be read
TMUX_SERVER_COMM = "tmux: server"  # what a tmux server process is named in /proc/PID/stat
TMUX_ASK_SECONDS = 2.0
ENVIRON_BYTES = 1 << 20  # an agent's environment read at most


class KnownAgents:
    def __init__(self) -> None:
        self.known: dict[tuple[int, int], str] = {}  # (pid, start ticks) -> its session, oldest first
        self.servers: dict[tuple[int, int], tuple[int, int]] = {}  # a tmux server -> an agent it hosts
        self.unasked: dict[tuple[int, int], str] = {}  # agents whose tmux server is not known yet -> recorded socket
        self.mutex = threading.Lock()
        self.asking = threading.Lock()

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

    def learn_recorded(self, records: dict[str, SessionRecord]) -> int:
        """Remember the recorded ``agent_process`` of each session record
        (session id -> record) that is still that agent CLI; returns how many."""
        learned = 0
        for session, record in records.items():
            process = record.agent_process
            known = agentproc.recorded(process)
            if known is None:
                continue
            try:
                agentproc.verify(process)  # type: ignore[arg-type]  # recorded() said it is a dict
            except agentproc.NotTheAgent:
                continue
            self._add((known[0], known[1]), str(session))
            socket = process.get("tmux_socket")  # type: ignore[union-attr]  # recorded() said it is a dict
            if isinstance(socket, str) and socket:
                with self.mutex:
                    self.unasked[(known[0], known[1])] = socket
            learned += 1
        return learned

    def _add(self, key: tuple[int, int], session: str) -> None:
        with self.mutex:
            if key in self.known:
                if session:
                    self.known[key] = session
                return
            self.known[key] = session
            self.unasked.setdefault(key, "")
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


    def tmux_server_above(self, pid: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """(the tmux server, the known agent it hosts) when ``pid`` runs
        under a tmux server a known agent runs in, else None."""
        self._ask_tmux()
        if not self.servers:
            return None
        facts = agentproc.stat_of(pid) if pid > 0 else None
        for _ in range(MAX_DEPTH):
            if facts is None:
                return None
            key = (pid, facts[2])
            if key in self.servers:
                return key, self.servers[key]
            pid = facts[1]
            if pid <= 1:
                return None
            facts = agentproc.stat_of(pid)
        return None

    def _ask_tmux(self) -> None:
        """The tmux servers of agents learned since the last ask (one asker
        at a time: a second connection waits for the answer, not past it)."""
        with self.asking:
            with self.mutex:
                unasked, self.unasked = self.unasked, {}
            asked: dict[str, tuple[int, int] | None] = {}  # one tmux client per socket, however many agents
            for key, recorded_socket in unasked.items():
                socket = _tmux_socket_of(key[0]) or recorded_socket
                if not socket or not _running(key):
                    continue
                if socket not in asked:
                    asked[socket] = _server_of_socket(socket)
                server = asked[socket]
                with self.mutex:
                    if server is not None:
                        self.servers[server] = key
                    elif os.path.exists(socket):  # a server that did not answer in time: asked again next time
                        self.unasked.setdefault(key, recorded_socket)
                    if len(self.servers) > MAX_KNOWN:
                        for stale in [k for k in self.servers if not _running(k)]:
                            del self.servers[stale]


def _tmux_socket_of(pid: int) -> str:
    """The socket of the tmux server a process's ``$TMUX`` names ("" when none or unreadable)."""
    try:
        with open(f"{agentproc.PROC}/{pid}/environ", "rb") as handle:
            environment = handle.read(ENVIRON_BYTES)
    except OSError:
        return ""
    for entry in environment.split(b"\0"):
        if entry.startswith(b"TMUX="):
            return entry[5:].split(b",")[0].decode(errors="replace")
    return ""


def _server_of_socket(socket: str) -> tuple[int, int] | None:
    """The tmux server listening on ``socket`` (None when none answers)."""
    try:
        done = subprocess.run(["tmux", "-S", socket, "display-message", "-p", "#{pid}"], capture_output=True,
                              text=True, timeout=TMUX_ASK_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    pid = done.stdout.strip()
    facts = agentproc.stat_of(int(pid)) if done.returncode == 0 and pid.isdigit() else None
    return (int(pid), facts[2]) if facts is not None and facts[0] == TMUX_SERVER_COMM else None


def _running(key: tuple[int, int]) -> bool:
    facts = agentproc.stat_of(key[0])
    return facts is not None and facts[2] == key[1]
