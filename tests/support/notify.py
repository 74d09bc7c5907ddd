"""Helpers for the notification tests: an HTTP server on 127.0.0.1 in the test
process that keeps what it is sent, a port that accepts and never answers, and
a small program that writes its argv to a file."""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Received:
    __slots__ = ("path", "headers", "body", "at")

    def __init__(self, path: str, headers: dict, body: bytes, at: float):
        self.path, self.headers, self.body, self.at = path, headers, body, at

    def json(self):
        return json.loads(self.body)


class Inbox:
    """A loopback HTTP server; ``status`` is what it answers, ``posts`` what it got."""

    def __init__(self, status: int = 200):
        self.status = status
        self.posts: list[Received] = []
        self.arrived = threading.Condition()
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the name http.server calls
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with inbox.arrived:
                    inbox.posts.append(Received(self.path, dict(self.headers), body, time.monotonic()))
                    inbox.arrived.notify_all()
                self.send_response(inbox.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/leash"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.posts) < count and time.monotonic() < deadline:
                self.arrived.wait(timeout=max(0.0, deadline - time.monotonic()))
            return list(self.posts)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hanging:
    """A port on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.held: list[socket.socket] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/leash"

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        for conn in self.held:
            conn.close()
        self.listener.close()


def closed_port_url() -> str:
    """A url on 127.0.0.1 where nothing listens (connections are refused)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}/leash"


def argv_writer(tmp_path, *, exit_code: int = 0) -> list[str]:
    """A command (argv head) that writes its arguments, one JSON list per line,
    and its stdin to ``tmp_path/argv.jsonl``; exits ``exit_code``."""
    script = tmp_path / "write_argv.py"
    script.write_text(
        "import json, sys\n"
        f"with open({str(tmp_path / 'argv.jsonl')!r}, 'a') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read()}) + '\\n')\n"
        f"sys.stderr.write('it went wrong\\n') if {exit_code} else None\n"
        f"sys.exit({exit_code})\n")
    return [sys.executable, str(script)]


def written_argv(tmp_path) -> list[dict]:
    path = tmp_path / "argv.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def write_routes(home, routes: list[dict], **notify) -> None:
    """``config.toml`` with ``[notify]`` settings and these ``[[notify.route]]`` tables."""
    lines = ["[notify]"] + [f"{key} = {json.dumps(value)}" for key, value in notify.items()]
    for route in routes:
        lines.append("[[notify.route]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in route.items()]
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n")
