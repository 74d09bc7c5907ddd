"""A loopback HTTP server that answers Claude Code's HTTP hooks as a test chooses.

``ProbeServer(mode)`` listens on 127.0.0.1 (a port of its own) and answers
every POST with ``mode``, or with what ``mode(request)`` returns when it is a
function (so one server can answer each event, or each request, differently).
It records every request it is sent (method, path, headers as sent, body, the
client's port, when it arrived) in ``Probe.requests``.

The answers (``MODES``):

- ``allow``: 200, a PreToolUse JSON allowing the call;
- ``deny``: 200, ``hookSpecificOutput.permissionDecision: "deny"`` with ``DENY_REASON``;
- ``empty``: 200 with an empty body;
- ``500``: 500 with a JSON error body;
- ``deny-500``: 500 whose body is the ``deny`` JSON (is a non-2xx body read?);
- ``garbage``: 200, a body that is not JSON;
- ``garbage-json``: 200, a JSON array; ``json-string``: 200, a JSON string;
- ``close``: the connection is closed without an answer;
- ``slow``: ``allow``, but only after ``slow_seconds`` (longer than the hook's timeout);
- ``redirect``: 307 to ``/redirected``, which answers ``deny``: a client that
  follows redirects is refused, one that does not sees a 3xx.

Failure: a client that hangs up before a slow or late answer is ignored; closing
the server cuts every pending ``slow`` wait short, so nothing outlives the test.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Union

MODES = ("allow", "deny", "empty", "500", "deny-500", "garbage", "garbage-json", "json-string", "close", "slow",
         "redirect")
DENY_REASON = "refused by the HTTP probe"
REDIRECT_TARGET = "/redirected"
ALLOW = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                "permissionDecisionReason": "allowed by the HTTP probe"}}
DENY = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                               "permissionDecisionReason": DENY_REASON}}


@dataclass
class Received:
    """One request as it arrived."""
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    client_port: int
    at: float  # time.monotonic()

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def json(self) -> object:
        return json.loads(self.body)


Mode = Union[str, Callable[[Received], str]]


@dataclass
class Probe:
    """The server's state: how to answer, and what it was sent."""
    mode: Mode = "allow"
    slow_seconds: float = 10.0
    port: int = 0
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def mode_for(self, request: Received) -> str:
        if request.path.startswith(REDIRECT_TARGET):
            return "deny"
        mode = self.mode(request) if callable(self.mode) else self.mode
        if mode not in MODES:
            raise ValueError(f"unknown probe mode {mode!r}")
        return mode

    def record(self, request: Received) -> None:
        with self.lock:
            self.requests.append(request)

    def paths(self) -> list[str]:
        with self.lock:
            return [request.path for request in self.requests]


def _answer(mode: str) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, extra headers) of every mode but ``close`` and the wait of ``slow``."""
    as_json = {"allow": ALLOW, "slow": ALLOW, "deny": DENY, "deny-500": DENY, "500": {"error": "probe failure"},
               "garbage-json": ["not", "an", "object"], "json-string": "allow"}
    if mode in as_json:
        return (500 if mode in ("500", "deny-500") else 200), json.dumps(as_json[mode]).encode(), {
            "Content-Type": "application/json"}
    if mode == "garbage":
        return 200, b"<html>this is not JSON</html>", {"Content-Type": "text/html"}
    if mode == "redirect":
        return 307, b"", {"Location": REDIRECT_TARGET}
    return 200, b"", {}  # empty


def handler_for(probe: Probe) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real listener would

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self.handle_any()

        def do_POST(self) -> None:
            self.handle_any()

        def handle_any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Received(self.command, self.path, list(self.headers.items()), body,
                               self.client_address[1], time.monotonic())
            probe.record(request)
            mode = probe.mode_for(request)
            if mode == "close":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if mode == "slow" and probe.closing.wait(probe.slow_seconds):
                self.close_connection = True
                return
            status, data, extra = _answer(mode)
            try:
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up waiting
                self.close_connection = True

    return Handler


class ProbeServer:
    """The probe on 127.0.0.1, serving from a thread until closed."""

    def __init__(self, mode: Mode = "allow", *, slow_seconds: float = 10.0):
        self.state = Probe(mode=mode, slow_seconds=slow_seconds)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self.state))
        self.server.daemon_threads = True
        self.state.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Probe:
        self.thread.start()
        return self.state

    def __exit__(self, *exc) -> None:
        self.state.closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def unused_port() -> int:
    """A loopback port nothing listens on (bound and released: the listener "down")."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
