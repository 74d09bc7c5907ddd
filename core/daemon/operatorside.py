"""The operator socket's side of leashd: who may act, and each request answered by its verb.

A peer is refused, with one line to it, when its user is not one of
``[daemon] operators`` (``OperatorPolicy``), when it runs below an agent
process whose hooks leashd answered, or under the tmux server such an agent
runs in (``core.daemon.agents``), or when its environment carries an agent
CLI's marks (``core.daemon.agentmarks``). A refusal below an agent is also an
``operator_refused`` line in the ack log, naming the agent and what the peer
tried (its first request, read before the refusal is sent). Everyone else's
requests go to the verbs leashd was given, with the peer's user as ``source``.

Failure: a verb that raises answers ``{"error": ...}`` and the connection
goes on; an ack-log line that cannot be written is said on leashd's log and
the refusal still goes out. Nothing a client sends ends leashd.
"""
from __future__ import annotations

import contextlib
import socket
import threading

from leash.core.daemon.agentmarks import agent_mark
from leash.core.daemon.agents import UNTOLD, KnownAgents
from leash.core.daemon.peers import OperatorPolicy, Peer, RefusalLog
from leash.core.wire import lines as wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from leash.core.store.protocols import Backend

# What an operator_refused line keeps of the refused command line.
ARGV_WORDS_LOGGED = 20
ARGV_WORD_LOGGED = 200


class OperatorSide:
    """One operator connection at a time, each in its own thread: ``serve``.
    ``requests`` reads a connection's request lines, ``refuse`` answers and
    logs a refusal, ``say`` writes leashd's log."""

    def __init__(self, *, home: str, host: str, backend: Backend, policy: OperatorPolicy, agents: KnownAgents,
                 verbs: dict, requests: Callable[..., Iterator[dict]], refuse: Callable[..., None],
                 say: Callable[..., None], clock: Callable[[], float], line_deadline: float) -> None:
        self.home, self.host, self.backend = home, host, backend
        self.policy, self.agents, self.verbs = policy, agents, verbs
        self.requests, self.refuse, self.say, self.clock = requests, refuse, say, clock
        self.line_deadline = line_deadline
        self.agent_refusals = RefusalLog(self._append_refusal)

    def serve(self, conn: socket.socket, peer: Peer, serving: threading.BoundedSemaphore) -> None:
        if not self.policy.allows(peer):
            # Read what it asked first: a client writes its request, then reads;
            # closing before its write lands would give it EPIPE, not the reason.
            verb, _ = self.first_request(conn)
            self.refuse(conn, peer, where="operator", verb=str(verb),
                         reason=f"user {peer.user} (uid {peer.uid}) is not an operator of this daemon")
            return
        agent = self.agents.agent_above(peer.pid)
        if agent is not None:
            self._refuse_agent_process(conn, peer, agent)
            return
        hosted = self.agents.tmux_server_above(peer.pid)
        if hosted is not None:  # what an agent has its tmux server run leaves the agent's tree, not the server's
            self._refuse_agent_process(conn, peer, hosted[1], tmux_server=hosted[0][0])
            return
        mark = agent_mark(peer.pid)
        if mark:  # an agent's tool that left its tree (setsid, a double fork) still carries its CLI's variables
            verb, _ = self.first_request(conn)
            self.refuse(conn, peer, where="operator", verb=str(verb),
                         reason=f"process {peer.pid} carries {mark} in its environment: an agent CLI's tool started "
                                "it, and an agent cannot act as the operator (run leash from your own terminal)")
            return
        source = peer.source(self.host)
        for request in self.requests(conn, limit=wire.OPERATOR_LINE_LIMIT_BYTES):
            verb = request["verb"]
            handler = self.verbs.get(verb)
            if handler is None:
                wire.send(conn, {"error": f"unknown verb {verb!r} (known: {', '.join(sorted(self.verbs))})"})
                continue
            said = getattr(handler, "log_fields", None)  # the store verb's reads say nothing
            fields = said(request) if said is not None else {}
            if fields is not None:
                self.say("operator", verb=verb, user=peer.user, **fields)
            # A stream waits on changes, not on work: it holds no serving slot.
            with serving if verb != "subscribe" else contextlib.nullcontext():
                try:
                    handler(request, source=source, send=lambda reply: wire.send(conn, reply), home=self.home)
                except OSError:
                    raise
                except Exception as exc:
                    wire.send(conn, {"error": f"{verb} failed: {exc.__class__.__name__}: {exc}"})

    def _refuse_agent_process(self, conn: socket.socket, peer: Peer, agent: tuple[int, int], *,
                              tmux_server: int | None = None) -> None:
        """One line to a peer that runs below an agent process (or under the
        tmux server one runs in), and an ``operator_refused`` line in the ack
        log (its request, read first, says what it tried)."""
        verb, argv = self.first_request(conn)
        agent_pid: int | None
        agent_started: int | None
        if tmux_server is not None:
            reason = (f"process {peer.pid} runs under tmux server {tmux_server}, which also runs "
                      f"{self.agents.name_of(agent)} process {agent[0]}, an agent leash supervises: what an agent "
                      "has tmux run cannot act as the operator (run leash from a terminal outside that tmux "
                      "server, and agents on a tmux socket of their own)")
            agent_pid, agent_started = agent
        elif agent == UNTOLD:
            reason = (f"process {peer.pid} cannot be seen in /proc, so leashd cannot tell it from an agent's "
                      "processes; operator requests come from outside the agents leash supervises")
            agent_pid = agent_started = None
        else:
            agent_pid, agent_started = agent
            reason = (f"process {peer.pid} runs below {self.agents.name_of(agent)} process {agent_pid}, an agent "
                      "leash supervises: "
                      "an agent cannot act as the operator (run leash from your own terminal)")
        self.say("refused", socket="operator", verb=verb, uid=peer.uid, pid=peer.pid, agent=agent_pid)
        extra: dict[str, object] = {"agent_pid": agent_pid, "agent_started": agent_started,
                                    "session_id": self.agents.session_of(agent)}
        if tmux_server is not None:
            extra["tmux_server"] = tmux_server
        if argv is not None:
            extra["argv"] = [str(word)[:ARGV_WORD_LOGGED] for word in argv[:ARGV_WORDS_LOGGED]]
        try:
            self.agent_refusals.refused(peer, peer.source(self.host), reason, where="operator", verb=str(verb),
                                        now=self.clock(), **extra)
        except OSError as exc:
            self.say("refusal-not-logged", problem=exc.strerror)
        wire.send(conn, {"error": f"refused: {reason}"})

    def first_request(self, conn: socket.socket) -> tuple[object, list | None]:
        """(verb, argv) of a refused peer's first line, ``("*", None)`` when it
        sent none or garbage within the line deadline."""
        try:
            first = wire.LineReader(conn, limit=wire.OPERATOR_LINE_LIMIT_BYTES,
                                    deadline_seconds=self.line_deadline).next_line()
            request = wire.parse_request(first) if first is not None else {}
        except wire.BadRequest:
            return "*", None
        argv = request.get("argv")
        return request.get("verb", "*"), argv if isinstance(argv, list) else None

    def _append_refusal(self, *, source: str, reason: str, now: float, session_id: str = "",
                                 **extra) -> None:
        self.backend.acklog.append("operator_refused", source=source, session_id=session_id, reason=reason, now=now,
                                   **extra)
