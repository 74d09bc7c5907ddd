"""A loopback stand-in for an ntfy server, from ntfy's documented API: publish
with ``POST /<topic>`` (the body is the message; ``Title``, ``Priority``,
``Tags`` and ``Actions`` headers), subscribe with ``GET /<topic>/json``: one
JSON object a line (``{"id", "time", "event": "open"|"message"|"keepalive",
"topic", "message", "title"}``), kept open, ``since=`` an id, a unix time or
``all``. The ``Actions`` header's ``http`` buttons are parsed (``action,
label, url, method=…, body=…, clear=…`` separated by ``;``) so a test can
tap one as the phone would: POST its body to its url.

``status`` makes publishing answer that HTTP status instead (a server in
trouble); ``close()`` ends every stream.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEEPALIVE_SECONDS = 0.5


def parse_actions(header: str) -> list[dict]:
    """ntfy's short ``Actions`` header: ``action, label, url, key=value, …; …``."""
    found = []
    for part in header.split(";"):
        words = [word.strip() for word in part.split(",")]
        if len(words) < 3:
            continue
        action = {"action": words[0], "label": words[1], "url": words[2]}
        for word in words[3:]:
            key, _, value = word.partition("=")
            action[key] = value
        found.append(action)
    return found


class Ntfy:
    def __init__(self, port: int = 0):
        """``port``: 0 for any free one; a port given again brings a stopped server back."""
        self.messages: list[dict] = []
        self.changed = threading.Condition()
        self.status = 200
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                return

            def do_POST(self):  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if server.status != 200:
                    self.send_response(server.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                message = server.publish(self.path.strip("/"), body, dict(self.headers))
                answer = json.dumps(message).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def do_GET(self):  # noqa: N802
                parts = urllib.parse.urlsplit(self.path)
                topic, _, kind = parts.path.strip("/").partition("/")
                if kind != "json":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                since = urllib.parse.parse_qs(parts.query).get("since", [""])[0]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                self.close_connection = True
                server.stream(self.wfile, topic, since)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def publish(self, topic: str, body: str, headers: dict) -> dict:
        message = {"id": secrets.token_hex(6), "time": int(time.time()), "event": "message", "topic": topic,
                   "message": body, "title": headers.get("Title", ""),
                   "actions": parse_actions(headers.get("Actions", ""))}
        with self.changed:
            self.messages.append(message)
            self.changed.notify_all()
        return message

    def stream(self, out, topic: str, since: str) -> None:
        """Messages of ``topic`` after ``since``, then each new one, with keepalives."""
        def after(messages: list[dict]) -> int:
            if since == "all" or not since:
                return 0 if since == "all" else len(messages)
            if since.isdigit():
                return next((n for n, m in enumerate(messages) if m["time"] >= int(since)), len(messages))
            return next((n + 1 for n, m in enumerate(messages) if m["id"] == since), 0)

        try:
            out.write((json.dumps({"id": "open", "time": int(time.time()), "event": "open", "topic": topic})
                       + "\n").encode())
            out.flush()
            with self.changed:
                sent = after(self.messages)
            while not self.closing.is_set():
                with self.changed:
                    self.changed.wait(KEEPALIVE_SECONDS)
                    fresh = self.messages[sent:]
                    sent = len(self.messages)
                lines = [m for m in fresh if m["topic"] == topic] or [
                    {"id": "keepalive", "time": int(time.time()), "event": "keepalive", "topic": topic}]
                for message in lines:
                    out.write((json.dumps({k: v for k, v in message.items() if k != "actions"}) + "\n").encode())
                out.flush()
        except OSError:
            return  # the subscriber went away

    def on(self, topic: str) -> list[dict]:
        with self.changed:
            return [m for m in self.messages if m["topic"] == topic]

    def wait_for(self, topic: str, count: int = 1, timeout: float = 15.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while len([m for m in self.messages if m["topic"] == topic]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {count} message(s) on {topic}: {self.messages}")
                self.changed.wait(left)
            return [m for m in self.messages if m["topic"] == topic]

    def tap(self, action: dict) -> None:
        """What the phone does for an ``http`` button: POST its body to its url."""
        request = urllib.request.Request(action["url"], data=action.get("body", "").encode(),
                                         method=action.get("method", "POST"))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as answer:
            answer.read()

    def close(self) -> None:
        self.closing.set()
        with self.changed:
            self.changed.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
