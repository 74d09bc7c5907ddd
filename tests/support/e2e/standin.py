"""A loopback stand-in for the Anthropic Messages API that Claude Code talks to.

It answers ``POST /v1/messages`` (streamed as server-sent events when the
request asks for ``stream``, one JSON message otherwise) from a script: each
request of the main conversation (one that offers tools) takes the next turn
of the script; every other request (a title, a quota probe, a summary) gets a
short text that ends the turn. Every request body is recorded so a test can
read the ``tool_result`` Claude Code sends back and count model requests.

When the script runs out, the stand-in answers with text, so a conversation
that goes on longer than scripted still ends instead of hanging.
"""
from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

MODEL = "claude-sonnet-4-5-20250929"
FALLBACK_TEXT = "(no more scripted turns)"


def text(words: str) -> dict:
    return {"type": "text", "text": words}


def tool_use(name: str, tool_input: dict) -> dict:
    return {"type": "tool_use", "name": name, "input": tool_input}


def api_error(status: int = 400, kind: str = "invalid_request_error", message: str = "scripted error") -> dict:
    """A turn answered with an HTTP error instead of a message (400 is not retried)."""
    return {"type": "error", "status": status, "error": {"type": kind, "message": message}}


def bash(command: str, description: str = "run a command") -> dict:
    return tool_use("Bash", {"command": command, "description": description})


@dataclass
class Request:
    path: str
    body: dict

    def __repr__(self) -> str:
        return f"Request({self.path}, {len(self.body.get('messages') or [])} messages)"

    @property
    def is_main(self) -> bool:
        """A turn of the main conversation: one that offers the model tools."""
        return bool(self.body.get("tools"))

    def tool_results(self) -> list[dict]:
        """The tool_result blocks of the last user message."""
        messages = self.body.get("messages") or []
        if not messages or not isinstance(messages[-1].get("content"), list):
            return []
        return [block for block in messages[-1]["content"] if block.get("type") == "tool_result"]


def result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass
class StandIn:
    """The server's state: the script still to play and what was asked."""
    script: list[list[dict]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count = field(default_factory=itertools.count)
    # Called with no arguments just before the main request of that index is
    # answered: what an operator or another process does while the agent works.
    before: dict[int, Callable[[], None]] = field(default_factory=dict)
    # The usage of the nth main request's answer (n from 0), and of every other
    # request's; None: the fixed figures. ``usages`` records what each main answer carried.
    usage: Callable[[int], dict] | None = None
    other_usage: dict | None = None
    usages: list[dict] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def model_requests(self) -> list[Request]:
        return [request for request in self.requests if request.is_main]

    def tool_results(self) -> list[dict]:
        return [block for request in self.model_requests for block in request.tool_results()]

    def tool_result_texts(self) -> list[str]:
        return [result_text(block) for block in self.tool_results()]

    def answer(self, request: Request) -> list[dict]:
        with self.lock:
            self.requests.append(request)
            if request.is_main:
                action = self.before.get(len(self.model_requests) - 1)
                if action is not None:
                    action()
                if self.script:
                    return self.script.pop(0)
        return [text("ok" if not request.is_main else FALLBACK_TEXT)]

    def set_usage(self, message: dict, *, main: bool) -> None:
        """Give ``message`` the usage the test chose (``usage``, ``other_usage``), recorded in ``usages``."""
        with self.lock:
            if main and self.usage is not None:
                message["usage"] = dict(self.usage(len(self.usages)))
                self.usages.append(message["usage"])
            elif not main and self.other_usage is not None:
                message["usage"] = dict(self.other_usage)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self.ids):08d}standin"


def message_of(blocks: list[dict], standin: StandIn, model: str) -> dict:
    content = []
    for block in blocks:
        if block["type"] == "tool_use":
            block = dict(block, id=standin.next_id("toolu"))
        content.append(block)
    stop = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
    return {"id": standin.next_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


def sse_events(message: dict) -> list[tuple[str, dict]]:
    """The Messages API's streaming events for one whole message."""
    head = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    events = [("message_start", {"type": "message_start", "message": head})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            start = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = dict(block, text="")
            delta = {"type": "text_delta", "text": block["text"]}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                  "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def handler_for(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self.reply_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            path = self.path.split("?", 1)[0]
            if path.endswith("/count_tokens"):
                self.reply_json(200, {"input_tokens": 10})
                return
            if not path.endswith("/v1/messages"):
                self.reply_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                return
            blocks = standin.answer(Request(path, body))
            if blocks and blocks[0]["type"] == "error":
                self.reply_json(blocks[0]["status"], {"type": "error", "error": blocks[0]["error"]})
                return
            message = message_of(blocks, standin, body.get("model") or MODEL)
            standin.set_usage(message, main=Request(path, body).is_main)
            if body.get("stream"):
                self.reply_stream(message)
            else:
                self.reply_json(200, message)

        def reply_json(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def reply_stream(self, message: dict) -> None:
            data = b"".join(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
                            for name, event in sse_events(message))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


class StandInServer:
    """The stand-in on 127.0.0.1, serving from a thread until closed."""

    def __init__(self, script: list[list[dict]] | None = None):
        self.state = StandIn(script=list(script or []))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self.state))
        self.server.daemon_threads = True
        self.state.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self.state

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
