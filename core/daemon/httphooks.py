"""leashd's loopback HTTP listener for Claude Code's ``type: "http"`` hooks
(``leash install --transport http``; ``core.hook.httpwiring``): no process per
tool call.

``POST /leash-hook/VERB`` with Claude Code's hook payload as the body is
judged exactly as the agent socket's ``hook`` verb judges it (the same
``HookVerb``, serving slots and approval desk); the agent's environment comes
in the ``X-Leash-Env-*`` headers. The answer is a 200 whose body is what
Claude Code reads from an HTTP hook: the hook's JSON, or nothing. A refusal
the command hook says with exit 2 and stderr is written as the JSON that means
the same (``http_body``), since an HTTP hook has no exit code.

Who asks: the kernel's socket table names the client socket's uid
(``core.daemon.tcppeer``), as ``SO_PEERCRED`` does on the agent socket, and a
session belongs to the uid that first named it. It binds 127.0.0.1 only.

Failure: everything that is not a judged answer is a non-2xx status, which
Claude Code's ``onFailure: "block"`` turns into a refusal: an unknown path
(404), a body over the hook's limit (413), a peer the socket table does not
show (403), a hook that raised (500: the gating events are failed closed by
Claude Code). A client that goes away while its call waits for an approval
withdraws it, as on the agent socket. What this cannot see: another process
of the same user that bound the port before leashd did answers in leashd's
stead (a command hook proves leashd by its lock; an HTTP client cannot), so
``leash doctor`` and ``leash install --check`` name the port's holder.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from leash.core.daemon.tcppeer import TcpPeers
from leash.core.hook.httpwiring import LOOPBACK, env_of, verb_of
from leash.core.wire.hookevents import BY_VERB, CLAUDE, refusal_output
from leash.core.wire.hookio import REQUEST_LIMIT_BYTES

CONTEXT_EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}


def http_body(verb: str, out: str, err: str, code: int) -> bytes:
    """What an HTTP hook answers for the command hook's (stdout, stderr, exit code)."""
    if code == 2:
        refused = refusal_output(verb, err.strip() or "leash refused this")
        if refused is not None and refused[0].strip():
            return refused[0].strip().encode()
        return json.dumps({"decision": "block", "reason": err.strip() or "leash refused this"}).encode()
    if code != 0 or not out.strip():
        return b""  # a non-blocking error, or nothing to say: the call goes on
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        return out.strip().encode()
    if verb in CONTEXT_EVENTS:  # plain text a command hook adds to the context
        return json.dumps({"hookSpecificOutput": {"hookEventName": CONTEXT_EVENTS[verb],
                                                  "additionalContext": out}}).encode()
    return b""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class HttpHooks:
    """The listener. ``answer(request, peer, conn)`` is the service's: the
    reply dict, or None when the client went away while its call was held."""

    def __init__(self, port: int, answer, *, say, after=lambda: None):
        """``after()`` runs in the request's thread once its answer is sent."""
        self.port, self.answer, self.say, self.after = port, answer, say, after
        self.peers = TcpPeers()
        self.server: _Server | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.server = _Server((LOOPBACK, self.port), self._handler())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="http hooks", daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def _handler(self):
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept alive: a session's calls reuse one connection
            disable_nagle_algorithm = True  # an answer goes out whole at once, not after the client's ACK
            inode: int | None = None
            peer = None  # who is on the other end, read from the kernel's table at the first request

            def log_message(self, format, *args):  # noqa: A002 - the base class's name
                return  # leashd logs each hook itself

            def do_POST(self):
                hooks._post(self)

            def finish(self):
                super().finish()
                if self.inode is not None:
                    hooks.peers.forget(self.inode)

        return Handler

    def _post(self, handler) -> None:
        verb = verb_of(handler.path)
        spec = BY_VERB.get(verb or "")
        if spec is None or spec.agent != CLAUDE:
            return self._status(handler, 404, f"no hook {handler.path!r}")
        try:
            length = int(handler.headers.get("Content-Length", ""))
        except ValueError:
            return self._status(handler, 411, "a hook request needs a Content-Length")
        if not 0 <= length <= REQUEST_LIMIT_BYTES:
            return self._status(handler, 413, f"a hook request over {REQUEST_LIMIT_BYTES} bytes")
        body = handler.rfile.read(length)
        if handler.peer is None:  # once per connection: the kernel's table is slow to read (~ms)
            found = self.peers.peer(handler.client_address, handler.server.server_address)
            if found is None:
                return self._status(handler, 403, "the kernel's socket table does not show this connection")
            handler.peer, handler.inode = found
        peer = handler.peer
        request = {"verb": "hook", "event": verb, "payload": body.decode("utf-8", "surrogateescape"),
                   "env": env_of(handler.headers)}
        reply = self.answer(request, peer, handler.connection)
        if reply is None:
            handler.close_connection = True
            return None
        out, err, code = reply.get("stdout"), reply.get("stderr"), reply.get("code")
        if not (isinstance(out, str) and isinstance(err, str) and isinstance(code, int)):
            return self._status(handler, 500, str(reply.get("error") or "no answer"))
        self._send(handler, 200, http_body(verb or "", out, err, code))
        self.after()
        return None

    def _status(self, handler, status: int, problem: str) -> None:
        self.say("http-hook-refused", status=status, problem=problem)
        self._send(handler, status, json.dumps({"error": problem}).encode())

    @staticmethod
    def _send(handler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
