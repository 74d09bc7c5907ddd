"""``leash daemon``: the two sockets, the warm hook, the kennel, the change feed, the spend meter.

One daemon per home: it holds ``<home>/run/leashd.lock`` (flock) for its whole
life, so a second one refuses to start with one line. Its sockets are created
fresh at start (a socket file left by a killed daemon is stale: the lock says
no daemon holds it). Each connection gets its own thread; a request line is
read with a cap and a deadline (``core.daemon.wire``) and holds no serving
slot while it is read (``core.daemon.listener``): stalled clients cost only
their own threads.

* agent socket: ``hook`` (``core.hooks.answer``, the same code the
  in-process hook runs, with the agent's forwarded environment); a call held
  as an approval waits for its answer in the connection's thread, holding no
  serving slot (``core.daemon.approvaldesk``); and ``status``, Claude Code's
  status line (``core.daemon.statusverb``);
* operator socket: ``ping``, ``subscribe`` (a stream of ``{"change": ...}``
  lines from the backend's change feed) and the verbs given by the program that
  starts the daemon (the CLI adds ``cli``, its subcommands run here with the
  peer's user as ``source``). A peer that runs below an agent process whose
  hooks the daemon has answered (``core.daemon.agents``) is refused whatever
  its uid, and an ``operator_refused`` line names it and the agent.

A config.toml that cannot be used never keeps it down: it holds
``core.base.config.strictest_when_broken()`` for its life, so it starts (and
its commands run) on the strictest settings, says ``config_broken`` with the
file and line at start, and the gate holds every call for an operator; a
``config_warning`` line names each key of a usable file that it ignores.

Failure: a malformed, oversized or unfinished request gets one error reply and
its connection closes; nothing a client sends ends the daemon. A verb that
raises answers ``{"error": ...}`` (a thin hook then fails closed on the gating
events). SIGTERM/SIGINT end it cleanly: the listeners close, the kennel stops
(dogs keep their state and resume at their deadlines under the next daemon),
the sockets are removed, the lock is released. A SIGKILLed daemon leaves only
stale socket files, which the next one replaces.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time

from leash.core.base.wellknown import AGENT_SOCKET_NAME, OPERATOR_SOCKET_NAME, RUN_DIR
from leash.core.daemon.acks import Acknowledger
from leash.core.daemon.agents import KnownAgents
from leash.core.daemon.approvaldesk import ApprovalDesk
from leash.core.daemon.changefeed import ChangeFeed
from leash.core.daemon.hookverb import HookVerb
from leash.core.daemon.httphooks import HttpHooks
from leash.core.daemon.kennelrunner import KennelRunner
from leash.core.daemon.listener import Listener
from leash.core.daemon.ntfyreplies import ReplyListener
from leash.core.daemon.operatorside import OperatorSide
from leash.core.daemon.peers import OperatorPolicy, Peer, RefusalLog, peer_of
from leash.core.daemon.statusverb import StatusVerb
from leash.core.wire import lines as wire
from leash.core.wire.daemontrust import DAEMON_LOCK_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from leash.core.notify.runner import Notifier

LOCK_NAME = DAEMON_LOCK_NAME  # the thin hook checks who holds it
# Requests served at once per socket (a connection waiting for its line holds
# none); each socket has its own, so agents filling theirs never keep an
# operator out.
MAX_CONNECTIONS = 256
# Connections open at once per socket (one thread each); beyond this, new
# clients wait in the listen backlog.
MAX_OPEN_CONNECTIONS = 1024
OPERATOR_SOCKET_MODE = 0o600
# With [daemon] operators named, other users must be able to connect; who may
# then act is decided per connection by the peer's credentials, not the mode.
SHARED_OPERATOR_SOCKET_MODE = 0o666
NOTICE_LIMIT = 1000  # what a config_broken or config_warning line keeps of its notice


class DaemonRunning(Exception):
    """Another daemon holds this home."""


class Daemon:
    def __init__(self, home=None, *, operator_verbs: dict | None = None, kennel: bool | None = None,
                 agent_socket: str | None = None, operator_socket: str | None = None, log=None,
                 line_deadline: float = wire.LINE_DEADLINE_SECONDS, clock=time.time,
                 max_connections: int = MAX_CONNECTIONS, open_connections: int = MAX_OPEN_CONNECTIONS):
        from leash.core.base.config import strictest_when_broken
        from leash.core.base.home import ensure_home

        self.home = ensure_home(home)
        # A config.toml that cannot be used never keeps leashd down: it runs on
        # the strictest settings (none of the file's), the gate holding every
        # call for an operator, so the held calls can be answered through it.
        self._floor = strictest_when_broken().__enter__()
        try:
            self._set_up(operator_verbs, kennel=kennel, agent_socket=agent_socket, operator_socket=operator_socket,
                         log=log, line_deadline=line_deadline, clock=clock, max_connections=max_connections,
                         open_connections=open_connections)
        except BaseException:
            self._floor.release()
            raise

    def _set_up(self, operator_verbs: dict | None, *, kennel: bool | None, agent_socket: str | None,
                operator_socket: str | None, log, line_deadline: float, clock, max_connections: int,
                open_connections: int) -> None:
        from leash.core.base.config import load_config
        from leash.core.base.home import private_dir

        self.config = load_config(self.home)["daemon"]
        run_dir = os.path.join(self.home, RUN_DIR)
        private_dir(run_dir)
        self.run_dir = run_dir
        self.agent_path = agent_socket or self.config["agent_socket"] or os.path.join(run_dir, AGENT_SOCKET_NAME)
        self.operator_path = (operator_socket or self.config["operator_socket"]
                              or os.path.join(run_dir, OPERATOR_SOCKET_NAME))
        self.want_kennel = self.config["kennel"] if kennel is None else kennel
        self.policy = OperatorPolicy(list(self.config["operators"]))
        from leash.core.store.select import host_name

        self.host = host_name(self.home)
        self.operator_verbs = {"ping": self._ping, "subscribe": self._subscribe, **(operator_verbs or {})}
        self.log_stream = log or sys.stderr
        self.line_deadline = line_deadline
        self.clock = clock
        self.stopping = threading.Event()
        self.acks = Acknowledger(self.stopping)
        self.http: HttpHooks | None = None  # Claude Code's HTTP hooks ([daemon] http_port)
        self.replies: ReplyListener | None = None  # the ntfy reply topics' listener (core.daemon.ntfyreplies)
        self.http_serving = threading.BoundedSemaphore(1)
        self.max_connections, self.open_connections = max_connections, open_connections
        self.listeners: list[Listener] = []
        self.kennels: KennelRunner | None = None
        self.notifier: Notifier | None = None
        from leash.core.daemon.storeverb import StoreVerb
        from leash.core.store.select import daemon_backend

        # One backend for the daemon's life: its caches and connections stay warm
        # (with the shared store: its pool, and the mirror hooks are answered from).
        self.backend = daemon_backend(self.home, say=self.say)
        self.feed = ChangeFeed(self.backend, say=self.say)
        self.operator_verbs.setdefault("store", StoreVerb(self.backend))
        self.refusals = RefusalLog(self._append_refusal)
        self.agents = KnownAgents()  # the agent CLI processes whose hooks this daemon answered
        self.desk = ApprovalDesk(self.home, self.backend, feed=self.feed, clock=clock, say=self.say)
        from leash.core.daemon.tamperwatch import TamperWatch

        self.tamper = TamperWatch(self.backend, feed=self.feed, clock=clock, say=self.say)
        from leash.core.daemon.meter import Meter

        self.meter = Meter(self.home, self.backend, say=self.say, clock=clock)
        self.hooks = HookVerb(self.home, self.backend, self.agents, refuse=self._log_refusal, seen=self._seen_hook)
        # The status line runs as the agent's child, as a hook does: the same owners of sessions.
        self.status = StatusVerb(self.home, self.backend, self.hooks.owners, refuse=self._log_refusal, clock=clock)
        self.operator_side = OperatorSide(home=self.home, host=self.host, backend=self.backend, policy=self.policy,
                                          agents=self.agents, verbs=self.operator_verbs, requests=self._requests,
                                          refuse=self._refuse, say=self.say, clock=clock,
                                          line_deadline=line_deadline)
        self._lock_fd: int | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        from leash.core.base.statefile import try_hold

        lock_path = os.path.join(self.run_dir, LOCK_NAME)
        fd = try_hold(lock_path)
        if fd is None:
            self._floor.release()
            raise DaemonRunning(f"a leash daemon already runs on {self.home} ({lock_path} is held)")
        self._lock_fd = fd
        self._say_config()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._warm()
        self._learn_recorded_agents()
        agent_mode = int(self.config["agent_socket_mode"], 8)
        operator_mode = SHARED_OPERATOR_SOCKET_MODE if self.policy.names else OPERATOR_SOCKET_MODE
        self.listeners = [self._listen(self.agent_path, agent_mode, self._connection_peer(self._serve_agent)),
                          self._listen(self.operator_path, operator_mode,
                                       self._connection_peer(self.operator_side.serve))]
        if self.want_kennel:
            self.kennels = KennelRunner(self.home, self.backend, stopping=self.stopping, say=self.say)
            self.kennels.start()
        self.feed.start()  # watching from the start: a first subscriber misses nothing written after it
        self.tamper.start()  # lines that lift control written into the home behind leashd's back
        self._start_desk()
        self.meter.start()
        self.acks.start()
        self._start_http()
        self._start_notifier()
        self.say("started", pid=os.getpid(), home=self.home, agent=self.agent_path, operator=self.operator_path,
                 kennel="on" if self.want_kennel else "off")
        for listener in self.listeners:  # clients that connected meanwhile waited in the backlog
            listener.serve()

    def serve_forever(self) -> None:
        """Block until ``stop()`` (or SIGTERM/SIGINT when run from the main thread)."""
        import signal

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stopping.set())
        while not self.stopping.wait(0.5):
            pass
        self.close()

    def stop(self) -> None:
        self.stopping.set()

    def close(self) -> None:
        from leash.core.base.statefile import release_hold

        self.stopping.set()
        self.desk.close()  # held hooks are answered (denied) before the sockets go
        self.tamper.close()
        for listener in self.listeners:
            listener.close()
        if self.http is not None:
            self.http.close()
        if self.replies is not None:
            self.replies.close()
        for path in (self.agent_path, self.operator_path):
            try:
                os.unlink(path)
            except OSError:
                pass
        self.feed.close()
        self.meter.close()
        if self.notifier is not None:
            self.notifier.close()
        if self.kennels is not None:
            self.kennels.close()
        for listener in self.listeners:
            if listener.thread is not None:
                listener.thread.join(timeout=5)
        self.backend.close()
        if self._lock_fd is not None:
            release_hold(self._lock_fd)
            self._lock_fd = None
        self._floor.release()
        self.say("stopped")

    def _say_config(self) -> None:
        """One line for each thing config.toml says that leashd does not use
        (``core.base.config.config_notices``): ``config_broken`` and what leashd
        does meanwhile, or a ``config_warning`` for each key it ignores."""
        from leash.core.base.clock import iso
        from leash.core.base.config import config_notices, config_problem
        from leash.core.base.text import printable

        event = "config_broken" if config_problem(self.home) is not None else "config_warning"
        for notice in config_notices(self.home):
            self.log_stream.write(f"leashd {iso(self.clock())} {event} {printable(notice, limit=NOTICE_LIMIT)}\n")
        self.log_stream.flush()

    def _warm(self) -> None:
        """Import the whole hook path now, not on the first tool call."""
        import leash.core.hook.gate  # noqa: F401
        import leash.core.hook.hooks  # noqa: F401
        import leash.core.hook.lifecycle  # noqa: F401
        import leash.core.hook.replyguard  # noqa: F401
        import leash.core.policy.shellread  # noqa: F401
        import leash.core.state.halts.api  # noqa: F401

    def _seen_hook(self, event: str, payload: dict) -> None:
        """A session's hook, once answered: the approval desk and the spend meter learn from it."""
        self.desk.seen_hook(event, payload)
        self.meter.seen_hook(event, payload)

    def _start_desk(self) -> None:
        """Held hooks wait at the desk; approvals a daemon before this one left waiting are withdrawn."""
        self.desk.start()
        try:
            left = self.desk.withdraw_left_over(self.host)
        except Exception as exc:  # a store it cannot read now: they stay listed until answered
            self.say("approvals-not-read", problem=f"{exc.__class__.__name__}: {exc}")
            return
        if left:
            self.say("approvals-withdrawn", count=left)

    def _start_notifier(self) -> None:
        """Notifications ([[notify.route]]) in threads of their own, fed by the
        change feed, off every hook's path; a notifier that cannot start is
        said and leashd runs on without it."""
        from leash.core.notify.runner import Notifier

        try:
            notifier = Notifier(self.home, self.backend, host=self.host, feed=self.feed, say=self.say)
            if notifier.start():
                self.notifier = notifier
        except Exception as exc:
            self.say("notify-not-started", problem=f"{exc.__class__.__name__}: {exc}")
            return
        self._start_replies()

    def _start_replies(self) -> None:
        """The ntfy reply topics: Allow and Deny tapped on a phone (``core.daemon.ntfyreplies``)."""
        from leash.core.base.config import load_config
        from leash.core.notify.routes import routes_of

        listener = ReplyListener(self.home, self.backend, routes_of(load_config(self.home)["notify"]),
                                 say=self.say)
        if listener.start():
            self.replies = listener

    def _learn_recorded_agents(self) -> None:
        """The agents of the sessions on record that still run: a restarted
        daemon refuses their processes on the operator socket from the start."""
        try:
            records = dict(self.backend.sessions.all())
        except Exception as exc:  # a store it cannot read now: the agents are learned from their next hooks
            self.say("agents-not-read", problem=f"{exc.__class__.__name__}: {exc}")
            return
        self.agents.learn_recorded(records)

    def _listen(self, path: str, mode: int, serve) -> Listener:
        listener = Listener(path, mode, serve, open_cap=self.open_connections, serve_cap=self.max_connections,
                            stopping=self.stopping)
        listener.start()
        return listener

    def _connection_peer(self, serve):
        """``serve(conn, peer, serving)`` with the peer's credentials read first."""
        return lambda conn, serving: serve(conn, peer_of(conn), serving)

    # ------------------------------------------------------------ sockets
    def _requests(self, conn: socket.socket, *, limit: int):
        """Each request of a connection; a bad line is answered and ends it."""
        reader = wire.LineReader(conn, limit=limit, deadline_seconds=self.line_deadline)
        while not self.stopping.is_set():
            try:
                line = reader.next_line()
                if line is None:
                    return
                yield wire.parse_request(line)
            except wire.BadRequest as exc:
                self.say("bad-request", problem=str(exc))
                wire.send(conn, {"error": str(exc)})
                if isinstance(exc, (wire.LineTooLong, wire.LineTimeout)):
                    return

    def _serve_agent(self, conn: socket.socket, peer: Peer, serving: threading.BoundedSemaphore) -> None:
        for request in self._requests(conn, limit=wire.AGENT_LINE_LIMIT_BYTES):
            verb = request["verb"]
            if verb == "status":
                with serving:
                    self._status(conn, request, peer)
                continue
            if verb != "hook":
                self._refuse(conn, peer, where="agent", verb=verb,
                             reason=f"the agent socket answers only hook and status, not {verb!r}")
                return
            started = time.perf_counter()
            reply = self._answer_hook(conn, request, peer, serving)
            if reply is None:  # the client went away (the pane answered first)
                return
            self._log_hook(request, peer, reply, started)  # before the reply: a client that has it finds it logged
            wire.send(conn, reply)
            self.hooks.learn_after_reply()

    def _answer_hook(self, conn: socket.socket, request: dict, peer: Peer,
                     serving: threading.BoundedSemaphore) -> dict | None:
        """The reply to one ``hook`` request (the agent socket's or the HTTP
        listener's); None when its client went away while the call was held."""
        with self.acks.judging(conn, request) as call:  # silent past half a second: "judging", each second
            with serving:
                try:
                    reply = self._hook(request, peer)
                except Exception as exc:  # answered as a hook that could not judge: gating events fail closed
                    reply = {"error": f"hook failed: {exc.__class__.__name__}: {exc}"}
            if not isinstance(reply, dict):
                try:
                    self.acks.held(call, reply.approval.id)
                except OSError:  # the hook went away before it heard its call is held
                    self.desk.gone(reply)
                    return None
        if not isinstance(reply, dict):  # held as an approval: waits without a serving slot
            answered = self.desk.wait(reply, conn)
            if answered is None:
                return None
            reply = {"stdout": answered[0], "stderr": answered[1], "code": answered[2]}
        return reply

    def _log_hook(self, request: dict, peer: Peer, reply: dict, started: float, **extra) -> None:
        self.say("hook", hook_event=request.get("event"), uid=peer.uid, code=reply.get("code"),
                 ms=round((time.perf_counter() - started) * 1000, 2), **extra)

    def _http_answer(self, request: dict, peer: Peer, conn: socket.socket) -> dict | None:
        started = time.perf_counter()
        reply = self._answer_hook(conn, request, peer, self.http_serving)
        if reply is not None:
            self._log_hook(request, peer, reply, started, transport="http")
        return reply

    def _http_answered(self) -> None:
        self.hooks.learn_after_reply()

    def _start_http(self) -> None:
        """Claude Code's HTTP hooks, when ``[daemon] http_port`` names a port."""
        port = int(self.config.get("http_port") or 0)
        if not port:
            return
        self.http_serving = threading.BoundedSemaphore(self.max_connections)
        self.http = HttpHooks(port, self._http_answer, say=self.say, after=self._http_answered)
        self.http.start()

    def _refuse(self, conn: socket.socket, peer: Peer, *, where: str, verb: str, reason: str) -> None:
        self._log_refusal(peer, where=where, verb=verb, reason=reason)
        wire.send(conn, {"error": f"refused: {reason}"})

    def _log_refusal(self, peer: Peer, *, where: str, verb: str, reason: str) -> None:
        self.say("refused", socket=where, verb=verb, uid=peer.uid, user=peer.user)
        try:
            self.refusals.refused(peer, peer.source(self.host), reason, where=where, verb=verb, now=self.clock())
        except OSError as exc:
            self.say("refusal-not-logged", problem=exc.strerror)

    def _append_refusal(self, *, source: str, reason: str, now: float, **extra) -> None:
        self.backend.acklog.append("daemon_refused", source=source, session_id="", reason=reason, now=now, **extra)

    # ------------------------------------------------------------ verbs
    def _hook(self, request: dict, peer: Peer) -> dict:
        return self.hooks.reply(request, peer)

    def _status(self, conn: socket.socket, request: dict, peer: Peer) -> None:
        """Claude Code's status line (``core.daemon.statusverb``): its figures, or an error reply."""
        try:
            reply = self.status.reply(request, peer)
        except Exception as exc:  # the line shows the user's part alone
            reply = {"error": f"status failed: {exc.__class__.__name__}: {exc}"}
        wire.send(conn, reply)

    def _subscribe(self, request: dict, *, source: str, send, home: str) -> None:
        """Stream ``{"change": {"store", "key"}}`` lines until the client goes."""
        self.feed.stream(send, stopping=self.stopping)

    def _ping(self, request: dict, *, source: str, send, home: str) -> None:
        send({"ok": True, "pid": os.getpid(), "home": self.home, "host": self.host, "you": source,
              "kennel": self.kennels is not None, "store": self.backend.name,
              "shared_host": self.backend.sessions.host})

    # ------------------------------------------------------------ log
    def say(self, event: str, **fields) -> None:
        """One line per event on stderr; agent-supplied values are escaped."""
        from leash.core.base.clock import iso
        from leash.core.base.text import printable

        shown = " ".join(f"{k}={printable(v, limit=200)}" for k, v in fields.items())
        try:
            self.log_stream.write(f"leashd {iso(self.clock())} {event} {shown}".rstrip() + "\n")
            self.log_stream.flush()
        except (OSError, ValueError):
            pass
