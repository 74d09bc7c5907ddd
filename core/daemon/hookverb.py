"""The agent socket's one verb: ``hook``, answered with the same code the
in-process hook runs (``core.hooks.answer``).

Before it judges, the request teaches the daemon two things from the peer's
credentials (``SO_PEERCRED``), never from what the client sent: the Claude
Code process behind the hook (``core.daemon.agents``: its processes are an
agent's, never an operator's) and, for a session first named now, the uid it
belongs to. The forwarded environment gets ``LEASH_HOOK_PID`` from the kernel
too.

A call held as an approval (``core.approvals.hold``) is not answered here:
``reply`` returns its ``Held``, and leashd waits for the approval to close
without holding a serving slot (``core.daemon.approvaldesk``).

Tracing: leashd started with ``LEASH_HOOK_TRACE`` naming a file appends, for
each hook call, ``daemon PID`` (the hook's pid) and its stamps: accepted (the
connection's thread began), peer (its credentials read), request (its line
parsed), learned (its agent, when learnt before the answer), judged; written
after the reply is sent, so the trace costs the call nothing.

Failure: a request without a string event and payload is an error reply; a
hook naming another user's session is refused (``refuse`` logs it) and fails
closed on the gating events; whatever the hook raises is answered by
``core.hooks.answer`` itself as a hook that could not judge.
"""
from __future__ import annotations

import os
import threading

from leash.core.daemon.listener import CONNECTION
from leash.core.daemon.peers import Peer
from leash.core.wire.hookio import TRACE_ENV, Trace

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


SESSIONS_PER_USER_KEPT = 20_000  # sessions whose owning uid the daemon remembers, per uid
ENDED_EVENTS = frozenset({"session-end", "gemini-session-end", "codex-session-end"})


def _parsed(payload: str) -> object:
    """The hook payload's JSON (None when it is not JSON)."""
    import json

    try:
        return json.loads(payload)
    except ValueError:
        return None


class SessionOwners:
    """A session belongs to the uid whose hook first named it, for this
    daemon's life: another user's agent can neither judge its calls nor write
    its evidence (files read, attempts), nor end or register it. (A restarted
    daemon learns the owners again from the next calls.)

    Bounded per user, never across users: a uid past
    ``SESSIONS_PER_USER_KEPT`` sessions forgets its own ended sessions first,
    then its own oldest; no user's flood of session ids can make the daemon
    forget another user's session, which that user could then claim."""

    def __init__(self, *, per_user: int = SESSIONS_PER_USER_KEPT) -> None:
        self.owners: dict[str, int] = {}  # session id -> the uid whose hook first named it
        self.by_user: dict[int, dict[str, bool]] = {}  # uid -> its sessions, oldest first -> ended
        self.per_user = per_user
        self.mutex = threading.Lock()

    def seen(self, session_id: str) -> bool:
        return session_id in self.owners

    def ended(self, session_id: str) -> None:
        """The session's own SessionEnd: first to be forgotten when its user is past the bound."""
        with self.mutex:
            owner = self.owners.get(session_id)
            if owner is not None:
                self.by_user[owner][session_id] = True

    def intruder(self, payload: object, peer: Peer) -> str:
        """Why ``peer`` may not speak for the payload's session ("" when it may)."""
        if not isinstance(payload, dict):
            return ""  # unreadable input: the hook says what is wrong with it
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            return ""
        with self.mutex:
            owner = self.owners.get(session_id)
            if owner is None:
                owner = self.owners[session_id] = peer.uid
                own = self.by_user.setdefault(peer.uid, {})
                own[session_id] = False
                if len(own) > self.per_user:
                    self._forget_some(own)
        if owner == peer.uid:
            return ""
        return f"session {session_id!r} belongs to another user (uid {owner}), not to uid {peer.uid}"

    def _forget_some(self, own: dict[str, bool]) -> None:
        """A tenth of this user's sessions: its ended ones first, then its oldest."""
        count = max(1, self.per_user // 10)
        chosen = [session for session, ended in own.items() if ended][:count]
        chosen += [session for session in own if session not in chosen][:count - len(chosen)]
        for session in chosen:
            del own[session]
            del self.owners[session]


class HookVerb:
    def __init__(self, home: str, backend: Backend, agents, *, refuse, seen=None):
        self.home, self.backend, self.agents = home, backend, agents
        self.refuse = refuse  # refuse(peer, where=, verb=, reason=): logs a refusal
        self.seen = seen  # seen(event, payload): a session's hook, for the calls it holds (the approval desk)
        self.owners = SessionOwners()
        self.pending = threading.local()  # the agent to learn once this thread's reply is sent
        self.trace_path = os.environ.get(TRACE_ENV, "")  # leashd's own environment, never a request's

    def learn_after_reply(self) -> None:
        """Learn the agent of this thread's last request, if ``reply`` left it
        for after the answer (walking its ancestry costs ~50 us a call), and
        write its trace."""
        item = getattr(self.pending, "item", None)
        self.pending.item = None
        if item is not None:
            self.agents.learn_from_hook(item[0], item[1], session=item[2])
        trace = getattr(self.pending, "trace", None)
        if trace is not None:
            self.pending.trace = None
            trace[0].write("daemon", trace[1])

    def _trace(self, peer: Peer) -> Trace | None:
        if not self.trace_path:
            return None
        trace = Trace(self.trace_path)
        accepted = getattr(CONNECTION, "accepted_ns", None)
        trace.marks += [("accepted", accepted)] if accepted else []
        trace.marks.append(("peer", peer.known_ns))
        trace.mark("request")
        self.pending.trace = (trace, peer.pid)
        return trace

    def _learn(self, peer: Peer, session: str) -> None:
        """A session's first call teaches its agent before it is answered (the
        agent runs nothing before its first answer); later calls, after."""
        if session and self.owners.seen(session):
            self.pending.item = (peer.pid, peer.uid, session)
        else:
            self.agents.learn_from_hook(peer.pid, peer.uid, session=session)

    def reply(self, request: dict, peer: Peer):
        """The reply line to a ``hook`` request from ``peer``, or the ``Held``
        approval to wait for before answering."""
        from leash.core.hook.hooks import answer
        from leash.core.wire.hookio import failed_closed

        trace = self._trace(peer)
        event, payload = request.get("event"), request.get("payload", "")
        if not isinstance(event, str) or not isinstance(payload, str):
            return {"error": "a hook request needs a string event and payload"}
        parsed = _parsed(payload)
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        # Every hook names its agent: that process and all below it are an agent's, never an operator.
        self._learn(peer, session if isinstance(session, str) else "")
        if trace is not None:
            trace.mark("learned")
        intruder = self.owners.intruder(parsed, peer)
        if intruder:
            self.refuse(peer, where="agent", verb="hook", reason=intruder)
            out, err, code = failed_closed(event, f"leash: {intruder}; this call is refused")
            return {"stdout": out, "stderr": err, "code": code}
        if self.seen is not None and isinstance(parsed, dict):
            self.seen(event, parsed)
        if event in ENDED_EVENTS and isinstance(session, str):
            self.owners.ended(session)
        raw, parsed = _raw(payload, parsed)
        # Valid UTF-8 whose text parsed as an object: the hook's own json.loads of
        # ``raw`` would give the same object, so it is handed over, not parsed twice.
        answered = answer(event, raw, home=self.home, env=_env(request, peer), input_error=_input_error(request),
                          backend=self.backend, parsed=parsed if isinstance(parsed, dict) else None, hold=True)
        if trace is not None:
            trace.mark("judged")
        if not isinstance(answered, tuple):
            return answered  # held: an operator answers
        out, err, code = answered
        return {"stdout": out, "stderr": err, "code": code}


def _env(request: dict, peer: Peer) -> dict[str, str]:
    """The agent's forwarded environment, with the hook's pid from the kernel."""
    from leash.core.base.wellknown import HOOK_PID_ENV

    given = request.get("env")
    env = {k: v for k, v in given.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(given, dict) else {}
    env[HOOK_PID_ENV] = str(peer.pid)  # the kernel's word, not the client's: whose Claude Code ran the hook
    return env


def _input_error(request: dict):
    from leash.core.wire.hookio import HookInputError, HookInputTooLarge

    problem = request.get("input_error")
    if problem == "too_large":
        return HookInputTooLarge()
    return HookInputError(problem) if isinstance(problem, str) else None


def _raw(payload: str, parsed: object) -> tuple[bytes, object]:
    """The payload's bytes as the client read them, and ``parsed`` (None when
    the bytes were not UTF-8: the hook reads them itself and says what they are)."""
    try:
        return payload.encode("utf-8"), parsed
    except UnicodeEncodeError:
        pass
    try:
        return payload.encode("utf-8", "surrogateescape"), None  # the client's undecodable bytes, back as they were
    except UnicodeEncodeError:
        return payload.encode("utf-8", "surrogatepass"), None  # not JSON any more: the hook says so
