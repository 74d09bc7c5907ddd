"""``leash serve``: the console in a browser, on 127.0.0.1 only, behind a token.

Any web page the operator opens may send requests to 127.0.0.1, so the
server trusts nothing it is sent. Every request must
- name this server in ``Host`` (``127.0.0.1:PORT`` or ``localhost:PORT``): a
  page on a rebound DNS name is refused;
- carry the token: ``?token=`` on the URL printed at start, after which the
  page is redirected to ``/`` with an HttpOnly SameSite=Strict cookie that the
  browser sends on the page's own asset and WebSocket requests (the cookie's
  name carries the port, so two servers do not overwrite each other's);
- be a GET (nothing changes state over plain HTTP), and when it has an
  ``Origin``, come from this server's origin; the WebSocket must have one.
  The one exception: an answer on ``/approvals`` (``console.serve.approvals``),
  a POST that must carry this server's ``Origin`` and the form's CSRF token.
Tokens are compared in constant time. A refused request gets 403 and a short
reason, never the page.

Each WebSocket runs one ``leash console`` process (``console.serve.child``),
``--read-only`` when the server is, at most ``max_clients`` at once (the next
one gets 503 until one leaves). A client that leaves ends its console within
two seconds. Page assets are this package's ``assets`` and the
terminal script and font textual-serve installs; nothing is fetched from
elsewhere.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
import signal
import socket
import sys
from pathlib import Path

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    import os
    from typing import Awaitable, Callable

    from aiohttp import web

    from leash.console.serve.child import ConsoleProcess

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HOST = "127.0.0.1"
LOCAL_NAMES = (HOST, "localhost")
DEFAULT_MAX_CLIENTS = 4
COOKIE_PREFIX = "leash_serve_"
ASSETS = Path(__file__).resolve().parent / "assets"
MAX_MESSAGE_BYTES = 64 * 1024
HEARTBEAT_SECONDS = 15
TERMINAL_SIZE_LIMIT = 1000     # columns or rows a browser may ask for
AUTO_FONT_SIZE = "auto"        # the page's choice: 16 px, smaller on a phone's narrow screen
EXIT_NO_LISTEN = 1
MAX_PORT = 65535
ANSWER_PATH = "/approvals/"  # the only place a POST is taken: an answer from the phone page


class ServeError(ValueError):
    """A setting ``leash serve`` cannot use; one line."""


def serve(home: str | os.PathLike, *, port: int, read_only: bool = False, no_kennel: bool = False,
          token_file: str | None = None,
          max_clients: int = DEFAULT_MAX_CLIENTS) -> int:
    """Serve until SIGINT/SIGTERM. ``ServeError`` (and ``TokenError``) for bad settings."""
    from leash.console.serve.token import home_token, read_token
    from leash.core.base.home import ensure_home

    if max_clients < 1:
        raise ServeError("--max-clients must be at least 1")
    if not 0 <= port <= MAX_PORT:
        raise ServeError(f"--port must be 0 (any free port) to {MAX_PORT}, got {port}")
    home = ensure_home(home)
    if token_file is not None:
        try:
            token = read_token(token_file)
        except FileNotFoundError:
            raise ServeError(f"token file {token_file} does not exist") from None
    else:
        token = home_token(home)
    try:
        listener = socket.create_server((HOST, port))
    except OSError as exc:
        sys.stderr.write(f"leash: error: cannot listen on {HOST}:{port}: {exc.strerror or exc}\n")
        return EXIT_NO_LISTEN
    from leash.console.serve.child import console_argv

    server = ConsoleServer(token, listener.getsockname()[1], max_clients=max_clients,
                           argv=console_argv(home, read_only=read_only, no_kennel=no_kennel), home=str(home),
                           read_only=read_only)
    mode = ", read-only" if read_only else ""
    print(f"leash console on {server.url}?token={token} (local only; at most {max_clients} consoles{mode})",
          flush=True)
    asyncio.run(server.run(listener))
    return 0


class ConsoleServer:
    def __init__(self, token: str, port: int, *, max_clients: int, argv: list[str], home: str = "",
                 read_only: bool = False):
        from leash.console.serve.approvals import ApprovalsPages

        self.approvals = ApprovalsPages(home, token, read_only=read_only)
        self.token = token
        self.port = port
        self.max_clients = max_clients
        self.argv = argv
        self.url = f"http://{HOST}:{port}/"
        self.cookie = f"{COOKIE_PREFIX}{port}"
        self.hosts = {f"{name}:{port}" for name in LOCAL_NAMES}
        if port == 80:
            self.hosts |= set(LOCAL_NAMES)
        self.origins = {f"http://{host}" for host in self.hosts}
        self.clients = 0
        self.consoles: set = set()

    # ------------------------------------------------------------ running
    def make_app(self) -> web.Application:
        from aiohttp import web

        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self.guard(request, handler)

        app = web.Application(middlewares=[guard], client_max_size=MAX_MESSAGE_BYTES)
        app.router.add_get("/", self.page)
        app.router.add_get("/static/{name}", self.asset)
        app.router.add_get("/ws", self.websocket)
        app.router.add_get("/approvals", self.approvals_page)
        app.router.add_post("/approvals/{approval}", self.approvals_answer)
        app.on_response_prepare.append(self._harden)
        return app

    async def run(self, listener: socket.socket) -> None:
        from aiohttp import web

        runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        await web.SockSite(runner, listener).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signal_number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signal_number, stop.set)
        try:
            await stop.wait()
        finally:
            await self.close_consoles()
            await runner.cleanup()

    async def close_consoles(self) -> None:
        consoles = list(self.consoles)
        try:
            await asyncio.gather(*(console.stop() for console in consoles), return_exceptions=True)
            await asyncio.gather(*(console.remote_close() for console in consoles), return_exceptions=True)
        finally:
            for console in consoles:
                console.kill_now()

    # ------------------------------------------------------------ the guard
    def guard_reason(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None."""
        if request.headers.get("Host", "") not in self.hosts:
            return "unknown Host"
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            return "foreign Origin"
        if request.path == "/ws" and origin is None:
            return "a WebSocket needs an Origin"
        if not self.token_shown(request):
            return "missing or wrong token (open the URL leash serve printed)"
        return None

    def token_shown(self, request: web.Request) -> bool:
        expected = self.token.encode()
        for given in (request.query.get("token"), request.cookies.get(self.cookie)):
            if given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), expected):
                return True
        return False

    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        from aiohttp import web

        answering = request.method == "POST" and request.path.startswith(ANSWER_PATH)
        if request.method not in ("GET", "HEAD") and not answering:
            raise web.HTTPMethodNotAllowed(request.method, ["GET"], text="leash serve only reads\n")
        reason = self.guard_reason(request)
        if reason is None and answering and request.headers.get("Origin") is None:
            reason = "an answer needs an Origin"  # a form of this server's page always sends one
        if reason is not None:
            raise web.HTTPForbidden(text=f"forbidden: {reason}\n")
        return await handler(request)

    @staticmethod
    async def _harden(request: web.Request, response: web.StreamResponse) -> None:
        host = request.headers.get("Host", HOST)
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            f"img-src 'self' data:; font-src 'self'; connect-src 'self' ws://{host}; "
            "frame-ancestors 'none'; base-uri 'none'; "
            + ("form-action 'self'" if request.path == "/approvals" else "form-action 'none'"))
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        # The phone page's forms must send their Origin (under no-referrer a browser sends "null").
        response.headers["Referrer-Policy"] = "same-origin" if request.path == "/approvals" else "no-referrer"
        response.headers["Cache-Control"] = "no-store"

    # ------------------------------------------------------------ pages
    async def page(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        if "token" in request.query:  # keep the token out of the address bar and history
            redirect = web.HTTPSeeOther("/")
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
            raise redirect
        asked = request.query.get("fontsize")
        font_size = AUTO_FONT_SIZE if asked is None else _bounded(asked, 16, 6, 64)
        text = (ASSETS / "index.html").read_text(encoding="utf-8")
        text = text.replace("{{ websocket_url }}", html.escape(f"ws://{request.headers['Host']}/ws"))
        text = text.replace("{{ font_size }}", str(font_size))
        return web.Response(text=text, content_type="text/html")

    async def approvals_page(self, request: web.Request) -> web.StreamResponse:
        """The waiting calls, for a phone (``console.serve.approvals``)."""
        import asyncio

        from aiohttp import web

        if "token" in request.query:  # as the console's page: the token goes into the cookie
            redirect = web.HTTPSeeOther("/approvals")
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
            raise redirect
        said = request.query.get("said", "")
        text = await asyncio.to_thread(self.approvals.page_html, said)
        return web.Response(text=text, content_type="text/html")

    async def approvals_answer(self, request: web.Request) -> web.StreamResponse:
        import asyncio

        from aiohttp import web

        from leash.console.serve.approvals import said_query

        form = {key: str(value) for key, value in (await request.post()).items()}
        refused = self.approvals.refusal(request.path, form)
        if refused is not None:
            raise web.HTTPForbidden(text=f"forbidden: {refused}\n")
        said = await asyncio.to_thread(self.approvals.answer, request.match_info["approval"], form)
        raise web.HTTPSeeOther("/approvals" + said_query(said))

    async def asset(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        path = asset_files().get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound(text="no such asset\n")
        return web.FileResponse(path)

    # ------------------------------------------------------------ consoles
    async def websocket(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        if self.clients >= self.max_clients:
            raise web.HTTPServiceUnavailable(text=f"at most {self.max_clients} consoles at once\n")
        self.clients += 1
        leaving = _Once(self._client_left)
        try:
            socket_response = web.WebSocketResponse(heartbeat=HEARTBEAT_SECONDS, max_msg_size=MAX_MESSAGE_BYTES)
            await socket_response.prepare(request)
            await self._run_console(request, socket_response, leaving)
        finally:
            leaving()
        return socket_response

    def _client_left(self) -> None:
        self.clients -= 1

    async def _run_console(self, request: web.Request, socket_response: web.WebSocketResponse, leaving: Callable[[],
                           None]) -> None:
        from leash.console.serve.child import ConsoleProcess

        console = ConsoleProcess(self.argv, socket_response)
        self.consoles.add(console)
        try:
            width = _bounded(request.query.get("width"), 80, 1, TERMINAL_SIZE_LIMIT)
            height = _bounded(request.query.get("height"), 24, 1, TERMINAL_SIZE_LIMIT)
            await console.start(width, height)
            await self._pump(socket_response, console)
            leaving()   # the slot is free as soon as the browser has gone
        finally:
            try:
                await asyncio.shield(console.stop())
            finally:
                self.consoles.discard(console)
                with contextlib.suppress(Exception):
                    await socket_response.close()

    @staticmethod
    async def _pump(socket_response: web.WebSocketResponse, console: ConsoleProcess) -> None:
        """Browser to console: keys, sizes, focus; ``ping`` is answered here."""
        from aiohttp import WSMsgType

        async for message in socket_response:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                kind, data = json.loads(message.data)
            except (ValueError, TypeError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await console.send_input(data)
            elif kind == "resize" and isinstance(data, dict):
                await console.set_terminal_size(_bounded(data.get("width"), 80, 1, TERMINAL_SIZE_LIMIT),
                                                _bounded(data.get("height"), 24, 1, TERMINAL_SIZE_LIMIT))
            elif kind == "ping":
                await socket_response.send_json(["pong", data])
            elif kind == "focus":
                await console.focus()
            elif kind == "blur":
                await console.blur()


def asset_files() -> dict[str, Path]:
    """Every file the page may load, by the name it is served under."""
    import textual_serve

    installed = Path(textual_serve.__file__).resolve().parent / "static"
    return {
        "terminal.css": ASSETS / "terminal.css",
        "textual.js": installed / "js" / "textual.js",
        "roboto-mono.ttf": installed / "fonts" / "RobotoMono-VariableFont_wght.ttf",
    }


def _bounded(value: object, default: int, low: int, high: int) -> int:
    try:
        number = int(str(value)) if value is not None else default
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high)


class _Once:
    """Call ``action`` the first time this is called, never again."""

    def __init__(self, action: Callable[[], object] | None):
        self.action = action

    def __call__(self) -> None:
        action, self.action = self.action, None
        if action is not None:
            action()
