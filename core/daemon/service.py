"""``leash daemon``: the two sockets, the warm hook, the kennel, the change feed.

One daemon per home: it holds ``<home>/run/leashd.lock`` (flock) for its whole
life, so a second one refuses to start with one line. Its sockets are created
fresh at start (a socket file left by a killed daemon is stale: the lock says
no daemon holds it). Each connection gets its own thread; a request line is
read with a cap and a deadline (``core.daemon.wire``).

* agent socket: ``hook`` only (``core.hooks.answer``, the same code the
  in-process hook runs, with the agent's forwarded environment);
* operator socket: ``ping``, ``subscribe`` (a stream of ``{"change": ...}``
  lines from the backend's change feed) and the verbs given by the program that
  starts the daemon (the CLI adds ``cli``, its subcommands run here with the
  peer's user as ``source``).

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
import queue
import socket
import sys
import threading
import time

from leash.core.daemon import wire
from leash.core.daemon.changefeed import ChangeFeed
from leash.core.daemon.peers import OperatorPolicy, Peer, RefusalLog, peer_of
from leash.core.wellknown import AGENT_SOCKET_NAME, OPERATOR_SOCKET_NAME, RUN_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from leash.core.warrants.kennel import Kennel

LOCK_NAME = "leashd.lock"
# Threads per socket; beyond this, new clients wait in the listen backlog. Each
# socket has its own count, so agents filling theirs never keep an operator out.
MAX_CONNECTIONS = 256
LISTEN_BACKLOG = 128
OPERATOR_SOCKET_MODE = 0o600
# With [daemon] operators named, other users must be able to connect; who may
# then act is decided per connection by the peer's credentials, not the mode.
SHARED_OPERATOR_SOCKET_MODE = 0o666
SESSION_OWNERS_KEPT = 100_000  # sessions whose owning uid the daemon remembers


def _parsed(payload: str) -> object:
    """The hook payload's JSON (None when it is not JSON)."""
    import json

    try:
        return json.loads(payload)
    except ValueError:
        return None


class DaemonRunning(Exception):
    """Another daemon holds this home."""


class Daemon:
    def __init__(self, home=None, *, operator_verbs: dict | None = None, kennel: bool | None = None,
                 agent_socket: str | None = None, operator_socket: str | None = None, log=None,
                 line_deadline: float = wire.LINE_DEADLINE_SECONDS, clock=time.time,
                 max_connections: int = MAX_CONNECTIONS):
        from leash.core.config import load_config
        from leash.core.home import ensure_home, private_dir

        self.home = ensure_home(home)
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
        self.max_connections = max_connections
        self.listeners: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.kennel: Kennel | None = None
        from leash.core.daemon.storeverb import StoreVerb
        from leash.core.store.select import daemon_backend

        # One backend for the daemon's life: its caches and connections stay warm
        # (with the shared store: its pool, and the mirror hooks are answered from).
        self.backend = daemon_backend(self.home, say=self.say)
        self.feed = ChangeFeed(self.backend, say=self.say)
        self.operator_verbs.setdefault("store", StoreVerb(self.backend))
        self.refusals = RefusalLog(self._append_refusal)
        self.session_owners: dict[str, int] = {}  # session id -> the uid whose hook first named it
        self._owners_mutex = threading.Lock()
        self._lock_fd: int | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        from leash.core.statefile import try_hold

        lock_path = os.path.join(self.run_dir, LOCK_NAME)
        fd = try_hold(lock_path)
        if fd is None:
            raise DaemonRunning(f"a leash daemon already runs on {self.home} ({lock_path} is held)")
        self._lock_fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._warm()
        agent_mode = int(self.config["agent_socket_mode"], 8)
        operator_mode = SHARED_OPERATOR_SOCKET_MODE if self.policy.names else OPERATOR_SOCKET_MODE
        self.listeners = [self._listen(self.agent_path, agent_mode, self._serve_agent),
                          self._listen(self.operator_path, operator_mode, self._serve_operator)]
        if self.want_kennel:
            self._start_kennel()
        self.feed.start()  # watching from the start: a first subscriber misses nothing written after it
        self.say("started", pid=os.getpid(), home=self.home, agent=self.agent_path, operator=self.operator_path,
                 kennel="on" if self.want_kennel else "off")

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
        from leash.core.statefile import release_hold

        self.stopping.set()
        for listener in self.listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            except OSError:
                pass
            try:
                listener.close()
            except OSError:
                pass
        for path in (self.agent_path, self.operator_path):
            try:
                os.unlink(path)
            except OSError:
                pass
        self.feed.close()
        if self.kennel is not None:
            self.kennel.request_stop()
            self._kennel_thread.join(timeout=30)
        for thread in self.threads:
            thread.join(timeout=5)
        if hasattr(self.backend, "close"):
            self.backend.close()
        if self._lock_fd is not None:
            release_hold(self._lock_fd)
            self._lock_fd = None
        self.say("stopped")

    def _warm(self) -> None:
        """Import the whole hook path now, not on the first tool call."""
        import leash.core.gate  # noqa: F401
        import leash.core.halts.api  # noqa: F401
        import leash.core.hooks  # noqa: F401
        import leash.core.lifecycle  # noqa: F401
        import leash.core.replyguard  # noqa: F401
        import leash.core.shellread  # noqa: F401

    def _start_kennel(self) -> None:
        import asyncio

        from leash.core.warrants.kennel import Kennel

        kennel = self.kennel = Kennel(self.home, handle_signals=False, backend=self.backend)
        self._kennel_thread = threading.Thread(target=lambda: asyncio.run(kennel.run()), name="kennel", daemon=True)
        self._kennel_thread.start()

    def _listen(self, path: str, mode: int, serve) -> socket.socket:
        try:
            os.unlink(path)  # stale: the lock says no daemon holds it
        except FileNotFoundError:
            pass
        from leash.core.thinhook import unix_address

        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, directory_fd = unix_address(path)
        old_umask = os.umask(0o777 & ~mode)
        try:
            listener.bind(address)
        finally:
            os.umask(old_umask)
            if directory_fd is not None:
                os.close(directory_fd)
        os.chmod(path, mode)
        listener.listen(LISTEN_BACKLOG)
        slots = threading.BoundedSemaphore(self.max_connections)
        thread = threading.Thread(target=self._accept, args=(listener, serve, slots), name=f"accept {path}",
                                  daemon=True)
        thread.start()
        self.threads.append(thread)
        return listener

    def _accept(self, listener: socket.socket, serve, slots: threading.BoundedSemaphore) -> None:
        while not self.stopping.is_set():
            slots.acquire()
            try:
                conn, _ = listener.accept()
            except OSError:
                slots.release()
                return  # the listener was closed
            threading.Thread(target=self._connection, args=(conn, serve, slots), daemon=True).start()

    def _connection(self, conn: socket.socket, serve, slots: threading.BoundedSemaphore) -> None:
        try:
            with conn:
                serve(conn, peer_of(conn))
        except OSError:
            pass  # the client went away
        finally:
            slots.release()

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

    def _serve_agent(self, conn: socket.socket, peer: Peer) -> None:
        for request in self._requests(conn, limit=wire.AGENT_LINE_LIMIT_BYTES):
            verb = request["verb"]
            if verb != "hook":
                self._refuse(conn, peer, where="agent", verb=verb,
                             reason=f"the agent socket answers only hook, not {verb!r}")
                return
            started = time.perf_counter()
            try:
                reply = self._hook(request, peer)
            except Exception as exc:  # answered as a hook that could not judge: gating events fail closed
                reply = {"error": f"hook failed: {exc.__class__.__name__}: {exc}"}
            wire.send(conn, reply)
            self.say("hook", hook_event=request.get("event"), uid=peer.uid, code=reply.get("code"),
                     ms=round((time.perf_counter() - started) * 1000, 2))

    def _serve_operator(self, conn: socket.socket, peer: Peer) -> None:
        if not self.policy.allows(peer):
            self._refuse(conn, peer, where="operator", verb="*",
                         reason=f"user {peer.user} (uid {peer.uid}) is not an operator of this daemon")
            return
        source = peer.source(self.host)
        for request in self._requests(conn, limit=wire.OPERATOR_LINE_LIMIT_BYTES):
            verb = request["verb"]
            handler = self.operator_verbs.get(verb)
            if handler is None:
                wire.send(conn, {"error": f"unknown verb {verb!r} (known: {', '.join(sorted(self.operator_verbs))})"})
                continue
            self.say("operator", verb=verb, user=peer.user)
            try:
                handler(request, source=source, send=lambda reply: wire.send(conn, reply), home=self.home)
            except OSError:
                raise
            except Exception as exc:
                wire.send(conn, {"error": f"{verb} failed: {exc.__class__.__name__}: {exc}"})

    def _refuse(self, conn: socket.socket, peer: Peer, *, where: str, verb: str, reason: str) -> None:
        self._log_refusal(peer, where=where, verb=verb, reason=reason)
        wire.send(conn, {"error": f"refused: {reason}"})

    def _log_refusal(self, peer: Peer, *, where: str, verb: str, reason: str) -> None:
        self.say("refused", socket=where, verb=verb, uid=peer.uid, user=peer.user)
        try:
            self.refusals.refused(peer, peer.source(self.host), reason, where=where, verb=verb, now=self.clock())
        except OSError as exc:
            self.say("refusal-not-logged", problem=exc.strerror)

    def _not_the_owner(self, payload: object, peer: Peer) -> str:
        """Why ``peer`` may not speak for the payload's session ("" when it may).

        A session belongs to the uid whose hook first named it, for this
        daemon's life: another user's agent can neither judge its calls nor
        write its evidence (files read, attempts), nor end or register it. (A
        restarted daemon learns the owners again from the next calls.)"""
        if not isinstance(payload, dict):
            return ""  # unreadable input: the hook says what is wrong with it
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            return ""
        with self._owners_mutex:
            owner = self.session_owners.setdefault(session_id, peer.uid)
            if len(self.session_owners) > SESSION_OWNERS_KEPT:  # bounded: the oldest half is learned again
                for stale in list(self.session_owners)[:SESSION_OWNERS_KEPT // 2]:
                    del self.session_owners[stale]
        if owner == peer.uid:
            return ""
        return f"session {session_id!r} belongs to another user (uid {owner}), not to uid {peer.uid}"

    def _append_refusal(self, *, source: str, reason: str, now: float, **extra) -> None:
        self.backend.acklog.append("daemon_refused", source=source, session_id="", reason=reason, now=now, **extra)

    # ------------------------------------------------------------ verbs
    def _hook(self, request: dict, peer: Peer) -> dict:
        from leash.core.hookio import HookInputError, HookInputTooLarge, failed_closed
        from leash.core.hooks import answer

        event, payload = request.get("event"), request.get("payload", "")
        if not isinstance(event, str) or not isinstance(payload, str):
            return {"error": "a hook request needs a string event and payload"}
        parsed = _parsed(payload)
        intruder = self._not_the_owner(parsed, peer)
        if intruder:
            self._log_refusal(peer, where="agent", verb="hook", reason=intruder)
            out, err, code = failed_closed(event, f"leash: {intruder}; this call is refused")
            return {"stdout": out, "stderr": err, "code": code}
        given_env = request.get("env")
        env = {k: v for k, v in given_env.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(given_env, dict) else {}
        from leash.core.wellknown import HOOK_PID_ENV

        env[HOOK_PID_ENV] = str(peer.pid)  # the kernel's word, not the client's: whose Claude Code ran the hook
        problem = request.get("input_error")
        input_error: HookInputError | None = None
        if problem == "too_large":
            input_error = HookInputTooLarge()
        elif isinstance(problem, str):
            input_error = HookInputError(problem)
        try:
            raw = payload.encode("utf-8")
        except UnicodeEncodeError:
            parsed = None  # the hook reads the bytes themselves: what it makes of them is its to say
            try:
                raw = payload.encode("utf-8", "surrogateescape")  # the client's undecodable bytes, back as they were
            except UnicodeEncodeError:
                raw = payload.encode("utf-8", "surrogatepass")  # not JSON any more: the hook says so
        # Valid UTF-8 whose text parsed as an object: the hook's own json.loads of
        # ``raw`` would give the same object, so it is handed over, not parsed twice.
        out, err, code = answer(event, raw, home=self.home, env=env, input_error=input_error, backend=self.backend,
                                parsed=parsed if isinstance(parsed, dict) else None)
        return {"stdout": out, "stderr": err, "code": code}

    def _ping(self, request: dict, *, source: str, send, home: str) -> None:
        send({"ok": True, "pid": os.getpid(), "home": self.home, "host": self.host, "you": source,
              "kennel": self.kennel is not None, "store": self.backend.name,
              "shared_host": getattr(self.backend.sessions, "host", "")})

    def _subscribe(self, request: dict, *, source: str, send, home: str) -> None:
        """Stream ``{"change": {"store", "key"}}`` lines until the client goes."""
        inbox = self.feed.join()
        try:
            send({"subscribed": True})
            while not self.stopping.is_set():
                try:
                    change = inbox.get(timeout=0.5)
                except queue.Empty:
                    continue
                if change is None:  # fell too far behind: the client re-reads everything
                    send({"change": {"store": "*", "key": None}})
                    continue
                send({"change": {"store": change.store, "key": change.key}})
        finally:
            self.feed.leave(inbox)

    # ------------------------------------------------------------ log
    def say(self, event: str, **fields) -> None:
        """One line per event on stderr; agent-supplied values are escaped."""
        from leash.core.clock import iso
        from leash.core.text import printable

        shown = " ".join(f"{k}={printable(v, limit=200)}" for k, v in fields.items())
        try:
            self.log_stream.write(f"leashd {iso(self.clock())} {event} {shown}".rstrip() + "\n")
            self.log_stream.flush()
        except (OSError, ValueError):
            pass
