"""A loopback stand-in for Google's Gemini API (the Generative Language API),
as the Gemini CLI calls it with an API key and ``GOOGLE_GEMINI_BASE_URL``.

It plays a *script*: a list of turns, each a ``function_call(name, args)`` (or
a list of them, for calls the model makes together) or a final ``text(...)``.
Every request of the conversation (one whose body offers the model function
declarations) takes the next turn; when the script has run out the answer is
``FALLBACK_TEXT``, so a session that goes on longer than scripted still ends.
A request that offers no tools (a helper call of the CLI's own, such as the
model router's complexity score) takes no turn: when it asks for JSON
(``responseMimeType: application/json`` with a schema) it gets the smallest
object that fits the schema, else the text ``UTILITY_TEXT``.

What it serves, under any API version prefix (``/v1beta``, ``/v1``):

* ``POST models/<model>:streamGenerateContent?alt=sse``: the turn as
  server-sent events, one ``GenerateContentResponse`` chunk per part;
* ``POST models/<model>:generateContent``: the turn as one JSON response;
* ``POST models/<model>:countTokens``: an estimate, a token per 4 characters;
* ``GET models`` and ``GET models/<model>``: the one model asked for so far
  (or ``MODEL``), described minimally;
* ``CONNECT host:port`` and absolute-URL requests, when a client uses the
  stand-in as its HTTP(S) proxy: refused with 403 and recorded in ``stray``,
  so a test can prove the CLI tried to reach nothing but the stand-in.

Anything else is answered 404 in Google's error shape (and recorded), so an
endpoint the CLI starts to call shows up as a failure, not as a silent hang.

``before`` maps a conversation request's index (0: the first) to a callable
run just before that request is answered: what an operator does while the
model thinks (the prompt is then already accepted, so the next tool call is
what meets it); what such a callable raises is kept in ``before_errors``.

Every answer carries a ``usageMetadata``: a turn given one by ``with_usage``
(built by ``usage``: ``promptTokenCount`` with its ``cachedContentTokenCount``
part, ``candidatesTokenCount``, ``thoughtsTokenCount``, ``totalTokenCount``)
carries that on its last chunk; any other answer an estimate (a token per 4
characters of the request and of the answer) on every chunk. ``usages``
keeps each answer's, with whether it answered the conversation and its model.

Every request is recorded in ``requests`` with its decoded JSON body;
``tool_results()`` gives the ``functionResponse`` parts the CLI sent back,
which is where a hook's refusal (``Tool execution blocked: <reason>``) reaches
the model.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MODEL = "gemini-2.5-flash"
FALLBACK_TEXT = "(no more scripted turns)"
UTILITY_TEXT = "(stand-in helper answer)"

Turn = dict | list


def function_call(name: str, args: dict | None = None) -> dict:
    """A turn (or one part of a turn) in which the model calls tool ``name``."""
    return {"functionCall": {"name": name, "args": dict(args or {})}}


def text(words: str) -> dict:
    """A turn in which the model answers with text and so ends the turn."""
    return {"text": words}


def usage(prompt: int, candidates: int, *, cached: int = 0, thoughts: int = 0) -> dict:
    """A response's ``usageMetadata`` as the API reports it: ``cached`` is a part
    of ``prompt``; ``thoughts`` are apart from ``candidates``, inside the total."""
    assert 0 <= cached <= prompt and thoughts >= 0, "a part exceeds its whole"
    return {"promptTokenCount": prompt, "candidatesTokenCount": candidates, "cachedContentTokenCount": cached,
            "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + candidates + thoughts}


def with_usage(turn: Turn, spent: dict) -> dict:
    """``turn`` (one part or a list of them), its answer reporting ``spent``
    (built by ``usage``) on its last chunk."""
    return {"turn": turn, "usageMetadata": spent}


def shell(command: str, description: str = "run a command") -> dict:
    """A ``run_shell_command`` call, the Gemini CLI's shell tool."""
    return function_call("run_shell_command", {"command": command, "description": description})


def write_out(name: str = "out.txt") -> dict:
    """A shell call that writes ``name`` in the project."""
    return shell(f"echo hi > {name}", f"write {name}")


def write_file(path: str, content: str) -> dict:
    """A ``write_file`` call, the Gemini CLI's file writer."""
    return function_call("write_file", {"file_path": path, "content": content})


def replace(path: str, old: str, new: str) -> dict:
    """A ``replace`` call, the Gemini CLI's file editor."""
    return function_call("replace", {"file_path": path, "instruction": "change the setting",
                                     "old_string": old, "new_string": new})


@dataclass
class Request:
    """One request the stand-in received."""
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path}, {len(self.contents)} contents)"

    @property
    def action(self) -> str:
        """``streamGenerateContent``, ``generateContent``, ``countTokens``, or ``''``."""
        last = self.path.rsplit("/", 1)[-1]
        return last.split(":", 1)[1] if ":" in last else ""

    @property
    def model(self) -> str:
        """The model named in the path (``models/<model>:action``), or ``''``."""
        parts = self.path.split("/")
        if "models" in parts and parts.index("models") + 1 < len(parts):
            return parts[parts.index("models") + 1].split(":", 1)[0]
        return ""

    @property
    def contents(self) -> list[dict]:
        body = self.body if isinstance(self.body, dict) else {}
        return list(body.get("contents") or [])

    @property
    def is_conversation(self) -> bool:
        """A generate request of the agent's conversation: it offers function declarations."""
        if self.action not in ("generateContent", "streamGenerateContent") or not isinstance(self.body, dict):
            return False
        return any(tool.get("functionDeclarations") for tool in self.body.get("tools") or [])

    def function_responses(self) -> list[dict]:
        """The ``functionResponse`` parts of the last content (what the CLI sends after tools ran)."""
        if not self.contents:
            return []
        parts = self.contents[-1].get("parts") or []
        return [part["functionResponse"] for part in parts if isinstance(part, dict) and "functionResponse" in part]

    def tool_names(self) -> list[str]:
        """The names of the functions this request offers the model."""
        body = self.body if isinstance(self.body, dict) else {}
        return [declaration.get("name", "") for tool in body.get("tools") or []
                for declaration in tool.get("functionDeclarations") or []]


def response_text(function_response: dict) -> str:
    """The text a ``functionResponse`` carries (the CLI puts it in ``response.output``
    or, for a failed call, ``response.error``)."""
    response = function_response.get("response") or {}
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return json.dumps(response)


class GeminiStandin:
    """The stand-in server, on 127.0.0.1 at a free port, for a ``with`` block.

    ``url`` is what ``GOOGLE_GEMINI_BASE_URL`` should be; ``proxy_url`` (the
    same address) may be given as ``HTTPS_PROXY`` to catch stray traffic.
    The server's threads are daemons and ``__exit__`` shuts it down, so a test
    that fails midway leaves no listener behind."""

    def __init__(self, turns: Sequence[Turn] | None = None, *, model: str = MODEL):
        self._lock = threading.Lock()
        self._turns: list[Turn] = list(turns or [])
        self._played = 0
        self.default_model = model
        self.requests: list[Request] = []
        self.stray: list[str] = []
        # Called with no arguments just before the conversation request of that
        # index (0 = the first) is answered: what an operator or another process
        # does while the agent waits for the model.
        self.before: dict[int, Callable[[], None]] = {}
        self.before_errors: list[BaseException] = []  # what a ``before`` callable raised (the turn is still served)
        self.usages: list[tuple[bool, str, dict]] = []  # (a conversation request?, model, the usage it was answered)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> GeminiStandin:
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="gemini-standin", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is not running: use it in a `with` block")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    proxy_url = url

    # ------------------------------------------------------------ the script
    def script(self, turns: Sequence[Turn]) -> None:
        """Play ``turns`` from the next conversation request on (replacing what was left)."""
        with self._lock:
            self._turns = list(turns)
            self._played = 0

    @property
    def played(self) -> int:
        """How many scripted turns have been served."""
        with self._lock:
            return self._played

    def _next_turn(self) -> tuple[list[dict], dict | None]:
        """The next turn's parts and the usage scripted for it (None: estimate it)."""
        with self._lock:
            if self._played < len(self._turns):
                turn = self._turns[self._played]
                self._played += 1
                spent = None
                if isinstance(turn, dict) and "usageMetadata" in turn:
                    turn, spent = turn["turn"], turn["usageMetadata"]
                return (list(turn) if isinstance(turn, list) else [turn]), spent
        return [text(FALLBACK_TEXT)], None

    # ------------------------------------------------------------ what was asked
    def conversation(self) -> list[Request]:
        """The conversation requests, in the order received."""
        with self._lock:
            return [request for request in self.requests if request.is_conversation]

    def tool_results(self) -> list[dict]:
        """Every ``functionResponse`` the CLI sent back (``name``, ``response``,
        and ``id`` when it has one), in order; each is read from the last
        content of a conversation request, so none is counted twice."""
        return [response for request in self.conversation() for response in request.function_responses()]

    def tool_result_texts(self) -> list[str]:
        return [response_text(response) for response in self.tool_results()]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


def utility_answer(body: Any) -> dict:
    """The answer to a request that takes no turn: JSON fitting the schema it asks for, else text."""
    config = (body.get("generationConfig") or {}) if isinstance(body, dict) else {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if config.get("responseMimeType") == "application/json" and isinstance(schema, dict):
        return text(json.dumps(schema_example(schema)))
    return text(UTILITY_TEXT)


def schema_example(schema: dict) -> Any:
    """The smallest value that fits ``schema`` (an OpenAPI or JSON schema as Gemini
    takes it): every required property, an enum's first value, a number's minimum."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)
        return {name: schema_example(properties.get(name) or {}) for name in required}
    if kind == "array":
        return [schema_example(schema["items"])] * int(schema.get("minItems") or 0) if schema.get("items") else []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "stand-in"


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


class _Handler(BaseHTTPRequestHandler):
    owner: GeminiStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet: the record is in .requests
        return

    # ---------------------------------------------------------- dispatch
    def do_CONNECT(self) -> None:
        self.owner.stray.append(f"CONNECT {self.path}")
        self._send_json(403, _error(403, f"the Gemini stand-in refuses to tunnel to {self.path}", "PERMISSION_DENIED"))

    def do_GET(self) -> None:
        request = self._read()
        if request is None:
            return
        tail = request.path.split("/models", 1)
        if len(tail) == 2 and tail[1] in ("", "/"):
            self._send_json(200, {"models": [self._model_info(self._seen_model())]})
        elif len(tail) == 2 and tail[1].startswith("/") and ":" not in tail[1]:
            self._send_json(200, self._model_info(tail[1][1:]))
        else:
            self._not_found(request)

    def do_POST(self) -> None:
        request = self._read()
        if request is None:
            return
        if request.action == "countTokens":
            body = request.body if isinstance(request.body, dict) else {}
            counted = body.get("contents") or (body.get("generateContentRequest") or {}).get("contents") or []
            self._send_json(200, {"totalTokens": _estimate_tokens(counted)})
        elif request.action in ("generateContent", "streamGenerateContent"):
            if request.is_conversation:
                action = self.owner.before.get(len(self.owner.conversation()) - 1)
                if action is not None:
                    try:
                        action()
                    except Exception as exc:  # kept for the test to see, not lost in the thread
                        self.owner.before_errors.append(exc)
                parts, spent = self.owner._next_turn()
            else:
                parts, spent = [utility_answer(request.body)], None
            self._answer(request, parts, spent)
        else:
            self._not_found(request)

    # ---------------------------------------------------------- reading
    def _read(self) -> Request | None:
        if not self.path.startswith("/"):  # an absolute URL: someone uses us as a plain HTTP proxy
            self.owner.stray.append(f"{self.command} {self.path}")
            self._drain()
            self._send_json(403, _error(403, f"the Gemini stand-in is no proxy for {self.path}", "PERMISSION_DENIED"))
            return None
        split = urlsplit(self.path)
        raw = self._drain()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Request(self.command, split.path, parse_qs(split.query), body,
                          {key.lower(): value for key, value in self.headers.items()})
        self.owner._record(request)
        return request

    def _drain(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _seen_model(self) -> str:
        with self.owner._lock:
            models = [request.model for request in self.owner.requests if request.model]
        return models[-1] if models else self.owner.default_model

    # ---------------------------------------------------------- answering
    def _answer(self, request: Request, parts: list[dict], spent: dict | None = None) -> None:
        model = request.model or self.owner.default_model
        if spent is None:
            prompt_tokens = _estimate_tokens(request.body)  # the API counts instructions and tools too
            output_tokens = _estimate_tokens(parts)
            estimate = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                        "totalTokenCount": prompt_tokens + output_tokens}
        with self.owner._lock:
            self.owner.usages.append((request.is_conversation, model, spent or estimate))

        def chunk(chunk_parts: list[dict], last: bool) -> dict:
            candidate: dict = {"content": {"role": "model", "parts": chunk_parts}, "index": 0}
            answer: dict = {"candidates": [candidate], "modelVersion": model,
                            "responseId": f"standin-{len(self.owner.requests)}"}
            if last:
                candidate["finishReason"] = "STOP"
            if spent is None or last:  # a scripted usage is the last chunk's (the response's whole)
                answer["usageMetadata"] = spent or estimate
            return answer

        if request.action == "generateContent":
            self._send_json(200, chunk(parts, True))
            return
        events = [chunk([part], index == len(parts) - 1) for index, part in enumerate(parts)]
        if request.query.get("alt") == ["sse"]:
            payload = b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in events)
            self._send(200, "text/event-stream", payload)
        else:  # without alt=sse the API streams one JSON array
            self._send_json(200, events)

    def _model_info(self, name: str) -> dict:
        return {"name": f"models/{name}", "baseModelId": name, "version": "standin", "displayName": name,
                "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536,
                "supportedGenerationMethods": ["generateContent", "countTokens"]}

    def _not_found(self, request: Request) -> None:
        self._send_json(404, _error(404, f"the Gemini stand-in does not serve {request.method} {request.path}",
                                    "NOT_FOUND"))

    def _send_json(self, status: int, value: Any) -> None:
        self._send(status, "application/json; charset=UTF-8", json.dumps(value).encode())

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _error(code: int, message: str, status: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}
