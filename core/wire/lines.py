"""One request per line, one JSON object per reply line, on a Unix socket.

A request line is read with a size cap and a deadline: a client that sends
more than the cap, or does not finish its line in time, gets one error reply
and its connection is closed. Nothing a client sends can end the daemon or
hold up other clients (each connection has its own thread).

Failure: ``LineTooLong``, ``LineTimeout`` and ``BadRequest`` carry the one-line
reason sent back; ``send`` raises ``OSError`` when the client has gone, which
ends that connection only.
"""
from __future__ import annotations

import json
import socket
import time

from leash.core.wire.hookio import REQUEST_LIMIT_BYTES

AGENT_LINE_LIMIT_BYTES = REQUEST_LIMIT_BYTES
# Operator requests are command lines and small objects.
OPERATOR_LINE_LIMIT_BYTES = 1024 * 1024
# A request line not finished in this time is cut off (a stuck or hostile client).
LINE_DEADLINE_SECONDS = 10.0
RECV_BYTES = 65536


class BadRequest(Exception):
    pass


class LineTooLong(BadRequest):
    pass


class LineTimeout(BadRequest):
    pass


class LineReader:
    """Request lines of one connection, read with a cap and a deadline each;
    bytes after a newline are kept for the next line."""

    def __init__(self, conn: socket.socket, *, limit: int, deadline_seconds: float = LINE_DEADLINE_SECONDS):
        self.conn, self.limit, self.deadline_seconds = conn, limit, deadline_seconds
        self.pending = b""

    def next_line(self) -> bytes | None:
        """One request line without its newline; None when the client closed
        between lines."""
        deadline = time.monotonic() + self.deadline_seconds
        while True:
            newline = self.pending.find(b"\n")
            if newline >= 0:
                line, self.pending = self.pending[:newline], self.pending[newline + 1:]
                if len(line) > self.limit:
                    raise LineTooLong(f"request line over {self.limit} bytes")
                return line
            if len(self.pending) > self.limit:
                raise LineTooLong(f"request line over {self.limit} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LineTimeout(f"request line not finished within {self.deadline_seconds:g} s")
            self.conn.settimeout(remaining)
            try:
                chunk = self.conn.recv(RECV_BYTES)
            except socket.timeout:
                raise LineTimeout(f"request line not finished within {self.deadline_seconds:g} s") from None
            if not chunk:
                if not self.pending:
                    return None
                raise BadRequest("the connection closed in the middle of a request line")
            self.pending += chunk


def parse_request(line: bytes) -> dict:
    """The request object: JSON (UTF-8, lone surrogates allowed) with a string ``verb``."""
    try:
        request = json.loads(line.decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("a request line must be one JSON object") from None
    if not isinstance(request, dict):
        raise BadRequest("a request line must be one JSON object")
    if not isinstance(request.get("verb"), str):
        raise BadRequest("a request needs a string \"verb\"")
    return request


def encode(reply: dict) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def send(conn: socket.socket, reply: dict) -> None:
    conn.settimeout(None)
    conn.sendall(encode(reply))
