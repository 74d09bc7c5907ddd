"""A loopback stand-in for the OpenAI Responses API that the Codex CLI talks to.

``codex exec`` pointed at it (``model_provider`` with ``base_url`` = ``.url``,
``wire_api = "responses"``; see ``codex_cli.write_codex_config``) posts every
model turn to ``POST /v1/responses`` and reads the answer as server-sent events:
``response.created``, ``response.output_item.added``/``.done`` per output item
(``response.output_text.delta`` for text) and ``response.completed``. Each
request that offers tools (a turn of the conversation) takes the next turn of
the script; a request without tools, or one past the end of the script, gets
``FALLBACK_TEXT``, which ends the turn, so a session that goes on longer than
scripted ends instead of hanging.

A script turn is built with ``shell``, ``apply_patch`` or ``text`` (or
``call``/``custom_call`` for any other tool) and is turned into the call shape
the request's own ``tools`` list asks for: Codex 0.169 offers ``exec_command``
(a ``function`` tool, arguments ``{"cmd": ...}``) and ``apply_patch`` (a
``custom`` freeform tool, answered as a ``custom_tool_call`` whose ``input`` is
the patch text); older shapes (``shell_command``, ``shell`` with an argv,
``local_shell``, ``apply_patch`` as a function) are served when those are what
is offered. A scripted tool the request does not offer is answered with an
HTTP 400 and recorded in ``.errors``; ``codex exec`` then fails the turn
(``turn.failed``, exit 1; ``write_codex_config`` turns retries off). The
automatic reviewer of ``--approve-for-me`` asks with tools too, so its
requests take turns of the script.

A turn marked with ``for_agent`` is played only for that agent's requests
(a subagent's requests race with its parent's).

Every response's ``response.completed`` carries a ``usage`` (the Responses
API's: ``input_tokens`` with its ``input_tokens_details.cached_tokens`` part,
``output_tokens`` with its ``output_tokens_details.reasoning_tokens`` part,
``total_tokens``), which Codex writes to its rollout as ``token_count``
events: a turn given one by ``with_usage`` carries that, any other response
``.default_usage`` (``DEFAULT_USAGE`` unless set). ``.usages`` is every usage
answered, with its request, in order.

``before`` maps a turn's index (0 for the first request that offers tools) to
a callable that is given that ``Request`` and runs just before the turn is
answered: what an operator does while the agent works (a stop filed after the
prompt was accepted, so it is the next tool call's hook that meets it). Its
``session-id`` header is Codex's session id. An exception it raises is
recorded in ``.errors`` and the request answered with an HTTP 500.

Every request is recorded (``.requests``) so a test can read what reached the
model: ``tool_outputs()`` gives the ``function_call_output`` /
``custom_tool_call_output`` items Codex sent back, once per ``call_id``.

The server is also an HTTP proxy that refuses everything (``.proxy_url``, for
``HTTPS_PROXY``/``HTTP_PROXY`` with ``NO_PROXY=127.0.0.1,localhost``): a CLI
reaching for any other host (plugin sync, analytics) connects here instead of
the network, and the host it wanted is recorded in ``.blocked``.
"""
from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FALLBACK_TEXT = "(no more scripted turns)"
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


# ----------------------------------------------------------------- usage
def usage(input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0) -> dict:
    """A Responses API ``usage``: ``cached`` is a part of ``input_tokens``,
    ``reasoning`` a part of ``output_tokens`` (as the API counts them)."""
    assert 0 <= cached <= input_tokens and 0 <= reasoning <= output_tokens, "a part exceeds its whole"
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens}


DEFAULT_USAGE = usage(10, 5)


def with_usage(turn: dict, spent: dict) -> dict:
    """``turn``, its response reporting ``spent`` (built by ``usage``)."""
    return {**turn, "usage": spent}


# ----------------------------------------------------------------- script turns
def shell(command: str, *, workdir: str | None = None) -> dict:
    """A turn that runs ``command`` through whichever shell tool is offered."""
    return {"kind": "shell", "command": command, "workdir": workdir}


def apply_patch(patch: str) -> dict:
    """A turn that calls ``apply_patch`` with ``patch`` (``*** Begin Patch`` ... ``*** End Patch``)."""
    return {"kind": "apply_patch", "patch": patch if patch.endswith("\n") else patch + "\n"}


def add_file_patch(path: str, content: str) -> str:
    """An ``apply_patch`` text that adds ``path`` (relative to the cwd) with ``content``."""
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def update_file_patch(path: str, old_line: str, new_line: str) -> str:
    """An ``apply_patch`` text that replaces the line ``old_line`` of ``path`` by ``new_line``."""
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old_line}\n+{new_line}\n*** End Patch\n"


def text(words: str) -> dict:
    """A turn that answers with text and so ends the model's turn."""
    return {"kind": "text", "text": words}


def call(name: str, arguments: dict, *, namespace: str | None = None) -> dict:
    """A turn that calls the function tool ``name`` with ``arguments`` as given;
    a tool offered inside a ``namespace`` tool (``collaboration``) names it."""
    return {"kind": "function", "name": name, "arguments": arguments, "namespace": namespace}


def custom_call(name: str, tool_input: str) -> dict:
    """A turn that calls the custom (freeform) tool ``name`` with ``tool_input``."""
    return {"kind": "custom", "name": name, "input": tool_input}


def for_agent(agent: str, turn: dict) -> dict:
    """``turn``, played only for a request of ``agent`` (its ``agent_name``:
    ``/root`` for the main session, ``/root/<task>`` for a subagent). An
    unmarked turn goes to whichever agent asks first."""
    return {**turn, "agent": agent}


class ScriptError(Exception):
    """A scripted turn cannot be served with the tools the request offers."""


# ----------------------------------------------------------------- requests
@dataclass
class Request:
    """One request as the stand-in received it."""
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path}, {len(self.input())} input items, tools={self.tool_names()})"

    def input(self) -> list[dict]:
        value = self.body.get("input") if isinstance(self.body, dict) else None
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    def tools(self) -> list[dict]:
        value = self.body.get("tools") if isinstance(self.body, dict) else None
        return [tool for tool in value if isinstance(tool, dict)] if isinstance(value, list) else []

    def tool_names(self) -> list[str]:
        return [tool.get("name") or tool.get("type", "?") for tool in self.tools()]

    @property
    def is_turn(self) -> bool:
        """A turn of the conversation: a ``/responses`` post that offers tools."""
        return self.method == "POST" and self.path.rstrip("/").endswith("/responses") and bool(self.tools())

    @property
    def agent(self) -> str | None:
        """The asking agent's name from the ``x-codex-turn-metadata`` header."""
        raw = next((value for name, value in self.headers.items() if name.lower() == "x-codex-turn-metadata"), None)
        try:
            metadata = json.loads(raw) if raw else {}
        except ValueError:
            return None
        return metadata.get("agent_name") if isinstance(metadata, dict) else None

    def user_texts(self) -> list[str]:
        """The ``input_text`` spans of the user messages, oldest first."""
        return [part.get("text", "") for item in self.input()
                if item.get("type") == "message" and item.get("role") == "user"
                for part in item.get("content") or [] if isinstance(part, dict) and part.get("type") == "input_text"]


def output_text(item: dict) -> str:
    """The text of a ``function_call_output``/``custom_tool_call_output`` item
    (its ``output`` is a string, or a list of content parts)."""
    output = item.get("output")
    if isinstance(output, dict):  # older shape: {"content": ..., "success": ...}
        output = output.get("content")
    if isinstance(output, list):
        return "\n".join(part.get("text", "") for part in output if isinstance(part, dict))
    return output if isinstance(output, str) else json.dumps(output)


# ----------------------------------------------------------------- turning turns into events
def _tool(request: Request, name: str) -> dict | None:
    return next((tool for tool in request.tools() if tool.get("name") == name), None)


def _shell_item(turn: dict, request: Request, call_id: str) -> dict:
    command, workdir = turn["command"], turn.get("workdir")
    for name, arguments in (("exec_command", {"cmd": command}), ("shell_command", {"command": command}),
                            ("shell", {"command": ["bash", "-lc", command]})):
        if _tool(request, name) is not None:
            if workdir:
                arguments["workdir"] = workdir
            return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
    if any(tool.get("type") == "local_shell" for tool in request.tools()):
        action: dict[str, Any] = {"type": "exec", "command": ["bash", "-lc", command]}
        if workdir:
            action["working_directory"] = workdir
        return {"type": "local_shell_call", "call_id": call_id, "status": "completed", "action": action}
    raise ScriptError(f"no shell tool offered (tools: {request.tool_names()})")


def _patch_item(turn: dict, request: Request, call_id: str) -> dict:
    tool = _tool(request, "apply_patch")
    if tool is None:
        raise ScriptError(f"apply_patch is not offered (tools: {request.tool_names()}); "
                          "Codex offers it only for models it knows")
    if tool.get("type") == "custom":
        return {"type": "custom_tool_call", "name": "apply_patch", "input": turn["patch"], "call_id": call_id}
    return {"type": "function_call", "name": "apply_patch", "arguments": json.dumps({"input": turn["patch"]}),
            "call_id": call_id}


def output_item(turn: dict, request: Request, call_id: str) -> dict:
    """The output item (without ``id``) that plays ``turn`` for ``request``."""
    kind = turn.get("kind")
    if kind == "shell":
        return _shell_item(turn, request, call_id)
    if kind == "apply_patch":
        return _patch_item(turn, request, call_id)
    if kind == "function":
        item = {"type": "function_call", "name": turn["name"], "arguments": json.dumps(turn["arguments"]),
                "call_id": call_id}
        if turn.get("namespace"):
            item["namespace"] = turn["namespace"]
        return item
    if kind == "custom":
        return {"type": "custom_tool_call", "name": turn["name"], "input": turn["input"], "call_id": call_id}
    if kind == "text":
        return {"type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}]}
    raise ScriptError(f"unknown turn {turn!r}")


def sse_events(response_id: str, model: str, item: dict, spent: dict = DEFAULT_USAGE) -> list[dict]:
    """The events of one streamed response carrying ``item`` as its only output
    and ``spent`` as its usage."""
    added = dict(item)
    if item["type"] == "message":
        added["content"] = []
    elif item["type"] == "function_call":
        added["arguments"] = ""
    elif item["type"] == "custom_tool_call":
        added["input"] = ""
    shell = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    events: list[dict] = [{"type": "response.created", "response": shell},
                          {"type": "response.output_item.added", "output_index": 0, "item": added}]
    if item["type"] == "message":
        events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": item["content"][0]["text"]})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    events.append({"type": "response.completed",
                   "response": {**shell, "status": "completed", "output": [item], "usage": spent}})
    return events


def encode_sse(events: list[dict]) -> bytes:
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()


# ----------------------------------------------------------------- the server
@dataclass
class _State:
    script: list[dict] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    before: dict[int, Callable[[Request], None]] = field(default_factory=dict)
    turns_seen: int = 0
    default_usage: dict = field(default_factory=lambda: dict(DEFAULT_USAGE))
    usages: list[tuple[Request, dict]] = field(default_factory=list)

    def take(self, request: Request) -> dict | None:
        """The first turn still to play that is for ``request``'s agent (the lock is held)."""
        for index, turn in enumerate(self.script):
            if turn.get("agent") in (None, request.agent):
                return self.script.pop(index)
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _reply(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _record(self, body: Any) -> Request:
        request = Request(self.command, self.path, dict(self.headers.items()), body)
        with self.server.state.lock:
            self.server.state.requests.append(request)
        return request

    def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
        with self.server.state.lock:
            self.server.state.blocked.append(self.path)
        self.close_connection = True
        self._reply(403, b"blocked by the stand-in\n", "text/plain")

    def do_GET(self) -> None:  # noqa: N802
        if not self.path.startswith("/"):  # a plain-HTTP proxy request for another host
            with self.server.state.lock:
                self.server.state.blocked.append(self.path)
            self._reply(403, b"blocked by the stand-in\n", "text/plain")
            return
        self._record(None)
        self._reply(404, json.dumps({"error": {"message": f"no {self.path} here", "type": "not_found"}}).encode())

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.startswith("/"):
            with self.server.state.lock:
                self.server.state.blocked.append(self.path)
            self._reply(403, b"blocked by the stand-in\n", "text/plain")
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = self._record(body)
        if not self.path.rstrip("/").endswith("/responses"):
            self._reply(404, json.dumps({"error": {"message": f"no {self.path} here", "type": "not_found"}}).encode())
            return
        state = self.server.state
        action = None
        if request.is_turn:
            with state.lock:
                action = state.before.pop(state.turns_seen, None)
                state.turns_seen += 1
        if action is not None:
            try:  # outside the lock: it may take a while (a CLI run), and reads nothing of ours
                action(request)
            except Exception as exc:  # noqa: BLE001 - any failure is the test's to see
                with state.lock:
                    state.errors.append(f"before turn: {exc.__class__.__name__}: {exc}")
                self._reply(500, json.dumps({"error": {"message": str(exc), "type": "server_error"}}).encode())
                return
        with state.lock:
            turn = state.take(request) if request.is_turn else None
            number = next(state.ids)
        turn = turn or text(FALLBACK_TEXT)
        model = body.get("model", "") if isinstance(body, dict) else ""
        try:
            item = output_item(turn, request, f"call_{number}")
        except ScriptError as exc:
            with state.lock:
                state.errors.append(str(exc))
            self._reply(400, json.dumps({"error": {"message": str(exc), "type": "invalid_request_error"}}).encode())
            return
        item["id"] = f"{'msg' if item['type'] == 'message' else 'fc'}_{number}"
        with state.lock:
            spent = turn.get("usage") or state.default_usage
            state.usages.append((request, spent))
        self._reply(200, encode_sse(sse_events(f"resp_{number}", model, item, spent)), "text/event-stream")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: _State):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class CodexStandin:
    """The stand-in as a context manager: ``with CodexStandin(turns) as api:``
    serves on a free loopback port until the block ends."""

    def __init__(self, turns: list[dict] | None = None, *,
                 before: dict[int, Callable[[Request], None]] | None = None):
        self._state = _State(script=list(turns or []), before=dict(before or {}))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> CodexStandin:
        self._server = _Server(self._state)
        self._thread = threading.Thread(target=self._server.serve_forever, name="codex-standin", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        assert self._server is not None, "the stand-in is not running"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The API base, for a model provider's ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def proxy_url(self) -> str:
        """This server as a proxy that refuses every host (for ``HTTPS_PROXY``)."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, turns: list[dict]) -> None:
        """Replace the turns still to play by ``turns``."""
        with self._state.lock:
            self._state.script[:] = list(turns)

    def before(self, index: int, action: Callable[[Request], None]) -> None:
        """Run ``action(request)`` just before turn ``index`` (0-based) is answered."""
        with self._state.lock:
            self._state.before[index] = action

    @property
    def remaining(self) -> list[dict]:
        with self._state.lock:
            return list(self._state.script)

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def turns(self) -> list[Request]:
        """The requests that were turns of the conversation."""
        return [request for request in self.requests if request.is_turn]

    @property
    def default_usage(self) -> dict:
        """The usage of a response whose turn gives none."""
        with self._state.lock:
            return self._state.default_usage

    @default_usage.setter
    def default_usage(self, spent: dict) -> None:
        with self._state.lock:
            self._state.default_usage = spent

    @property
    def usages(self) -> list[tuple[Request, dict]]:
        """Every usage a response reported, with the request it answered, in order."""
        with self._state.lock:
            return list(self._state.usages)

    @property
    def blocked(self) -> list[str]:
        """The hosts a client tried to reach through this server as a proxy."""
        with self._state.lock:
            return list(self._state.blocked)

    @property
    def errors(self) -> list[str]:
        """Scripted turns that could not be served (answered with HTTP 400)."""
        with self._state.lock:
            return list(self._state.errors)

    def tool_outputs(self) -> list[dict]:
        """The tool-output items Codex sent back, each ``call_id`` once, in the
        order they first reached the stand-in (later requests repeat history)."""
        seen: dict[str, dict] = {}
        for request in self.requests:
            for item in request.input():
                if item.get("type") in OUTPUT_TYPES and item.get("call_id") not in seen:
                    seen[item.get("call_id", f"#{len(seen)}")] = item
        return list(seen.values())

    def tool_output_texts(self) -> list[str]:
        return [output_text(item) for item in self.tool_outputs()]
