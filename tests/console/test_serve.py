"""``leash serve``: a real server on a free loopback port, real WebSocket
clients (aiohttp), real console processes watched in the process table.

What a web page in the operator's browser could try is refused (no token, a
foreign Origin or Host, a POST); the right token and Origin get a console that
draws; a client that leaves takes its console with it within two seconds;
``--max-clients`` holds; the page loads nothing from elsewhere; a read-only
console's keys change nothing.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import stat
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from leash.core import StopProtocol

from ..support.checkout import ROOT
from ..support.serve import (
    DRAWN,
    LEAVE_SECONDS,
    Served,
    children_of,
    client,
    console_started,
    gone_within,
    read_until,
    start_server,
    stop_and_read,
    stop_servers,
)

SLOT_ROUNDS = 200            # tries 50 ms apart, at least, for a freed slot
QUICK_LEAVERS = 3            # browsers closed while their consoles start
HANG_SECONDS = 30.0          # what counts as hung, not how fast it must be


@pytest.fixture
def serve(home, tmux_socket):
    """Start ``leash serve --port 0 ARGS`` on this test's home; afterwards the
    server and every console it started are gone (a leftover fails the test)."""
    started: list[Served] = []

    def start(*args: str) -> Served:
        started.append(start_server(home, tmux_socket, *args))
        return started[-1]

    yield start
    stop_servers(started, set())


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """One server for the tests that only knock at the door (no console starts)."""
    base = tmp_path_factory.mktemp("guarded")
    served = start_server(base / "leash-home", base / "tmux.sock", "--no-kennel")
    yield served
    stop_servers([served], set())


async def refused(connecting) -> int:
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        async with connecting:
            pass
    return caught.value.status


# ---------------------------------------------------------------- refusals
async def test_plain_http_needs_the_token_and_the_own_host(guarded):
    served = guarded
    async with client() as session:
        for path in ("/", "/static/textual.js", "/static/terminal.css", "/ws", "/nothing"):
            async with session.get(served.origin + path) as response:
                assert response.status == 403, path
        async with session.get(served.origin + "/?token=" + "x" * len(served.token)) as response:
            assert response.status == 403
        async with session.get(served.base, params={"token": served.token},
                               headers={"Host": f"rebound.example:{served.port}"}) as response:
            assert response.status == 403  # DNS rebinding: a foreign name for this address
        async with session.post(served.base, params={"token": served.token}) as response:
            assert response.status == 405
        async with session.get(served.base, params={"token": served.token},
                               headers={"Origin": "http://evil.example"}) as response:
            assert response.status == 403


async def test_token_sets_a_strict_cookie_that_opens_the_page(guarded):
    served = guarded
    async with client() as session:
        async with session.get(served.base, params={"token": served.token}, allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"] == "/"
            cookie = response.headers["Set-Cookie"]
            assert f"leash_serve_{served.port}={served.token}" in cookie
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        async with session.get(served.base) as response:  # the cookie alone, as the browser sends it
            assert response.status == 200
            page = await response.text()
        assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in page
        assert served.token not in page
        assert response.headers["X-Frame-Options"] == "DENY"


async def test_websocket_refused_without_token_or_with_a_foreign_or_no_origin(guarded):
    served = guarded
    async with client() as session:
        assert await refused(served.ws(session, token=False)) == 403
        assert await refused(served.ws(session, origin="http://evil.example")) == 403
        assert await refused(served.ws(session, origin=f"http://127.0.0.1:{served.port + 1}")) == 403
        assert await refused(served.ws(session, origin=None)) == 403
        assert await refused(served.ws(session, origin="null")) == 403
    assert children_of(served.pid) == set()  # no console was started for any of them


# ---------------------------------------------------------------- consoles
async def test_console_draws_and_a_quick_leaver_takes_it_along(serve):
    served = serve()
    async with client() as session:
        async with served.ws(session) as ws:  # leaves at once, before the console is up
            quick = await console_started(served)
        assert not await gone_within({quick}, LEAVE_SECONDS), "a console outlived its client"
        async with session.get(served.base, params={"token": served.token}) as response:
            assert response.status == 200  # the page; from here on the cookie speaks for the browser
        async with served.ws(session, token=False) as ws:
            drawn = await console_started(served)
            await ws.send_json(["resize", {"width": 120, "height": 40}])
            await read_until(ws, DRAWN)
            await ws.send_json(["ping", "t1"])
            while (message := await ws.receive(timeout=5)).type != aiohttp.WSMsgType.TEXT:
                pass
            assert json.loads(message.data) == ["pong", "t1"]
        assert not await gone_within({drawn}, LEAVE_SECONDS), "a console outlived its client"


async def test_clients_that_leave_before_their_console_starts_are_no_failure(serve):
    served = serve("--no-kennel")
    consoles = set()
    async with client() as session:
        for _ in range(QUICK_LEAVERS):
            async with served.ws(session):   # leaves at once, before its console has drawn anything
                consoles.add(await console_started(served, consoles))
    assert not await gone_within(consoles, LEAVE_SECONDS), "a console outlived its client"
    said = stop_and_read(served)
    assert said == "", said


async def test_max_clients_refuses_the_next_until_one_leaves(serve):
    served = serve("--max-clients", "1", "--no-kennel")
    async with client() as session:
        first = await served.ws(session)
        pid = await console_started(served)
        response = await session.get(served.ws_url.replace("ws:", "http:"), params={"token": served.token},
                                     headers={"Origin": served.origin, "Connection": "Upgrade",
                                              "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                                              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        assert response.status == 503
        assert "at most 1" in await response.text()
        await first.close()
        for _ in range(SLOT_ROUNDS):  # the slot is freed once the first client has gone
            try:
                again = await served.ws(session)
                break
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 503
                await asyncio.sleep(0.05)
        else:
            pytest.fail("the slot stayed taken after its client had gone")
        await again.close()
    assert not await gone_within({pid}, LEAVE_SECONDS)


async def test_read_only_server_serves_consoles_whose_keys_change_nothing(serve, home):
    served = serve("--read-only", "--no-kennel")
    assert "read-only" in served.line
    before = StopProtocol(home).stops.snapshot()
    async with client() as session:
        async with served.ws(session) as ws:
            pid = await console_started(served)
            assert b"--read-only" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            await read_until(ws, DRAWN)
            await ws.send_json(["stdin", "S"])
            await read_until(ws, b"read-only console")
            await ws.send_json(["stdin", "y"])
            await asyncio.sleep(0.3)
    assert StopProtocol(home).stops.snapshot() == before
    assert not StopProtocol(home).is_stopped("anyone")


# ---------------------------------------------------------------- assets
async def test_page_and_its_assets_load_nothing_from_elsewhere(guarded):
    served = guarded
    external = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+(?::\d+)?")
    async with client() as session:
        async with session.get(served.base, params={"token": served.token}) as response:
            page = await response.text()
        assets = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert assets, page
        texts = {"page": page}
        for asset in assets:
            assert asset.startswith("/"), asset
            async with session.get(served.origin + asset) as response:
                assert response.status == 200, asset
                texts[asset] = await response.text()
        async with session.get(served.origin + "/static/terminal.css") as response:
            fonts = re.findall(r'url\("([^"]+)"\)', await response.text())
        for font in fonts:
            assert font.startswith("/")
            async with session.get(served.origin + font) as response:
                assert response.status == 200 and len(await response.read()) > 10_000
    for name, text in texts.items():
        for url in re.findall(r"https?://[^\s\"'<>)]+", text):
            assert url.startswith(served.origin), f"{name} names {url}"
    assert not external.search(page.replace("ws://127.0.0.1", "")), page


# ---------------------------------------------------------------- the token
def test_token_file_is_made_private_and_reused(home):
    from leash.console.serve.token import home_token

    home.mkdir(mode=0o700)
    token = home_token(home)
    info = (home / "serve.token").stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and len(token) >= 40
    assert home_token(home) == token
    assert not [p for p in home.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("shape", ["group-readable", "world-readable", "directory", "symlink", "two-lines",
                                   "short", "missing"])
def test_unsafe_token_file_is_refused(tmp_path, home, cli, shape):
    home.mkdir(mode=0o700)  # serve only reads: it never creates a home
    target = tmp_path / "token"
    good = "k" * 43 + "\n"
    if shape in ("group-readable", "world-readable"):
        target.write_text(good)
        target.chmod(0o640 if shape == "group-readable" else 0o604)
    elif shape == "directory":
        target.mkdir()
    elif shape == "symlink":
        (tmp_path / "real").write_text(good)
        (tmp_path / "real").chmod(0o600)
        target.symlink_to(tmp_path / "real")
    elif shape in ("two-lines", "short"):
        target.write_text(good + "more\n" if shape == "two-lines" else "abc\n")
        target.chmod(0o600)
    result = cli("serve", "--port", "0", "--token-file", str(target))
    assert result.code == 2, result
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert str(target) in result.err


async def test_pinned_token_file_is_the_one_required(serve, tmp_path):
    pinned = tmp_path / "pinned.token"
    pinned.write_text("pinned-token-0123456789abcdef\n")
    pinned.chmod(0o600)
    served = serve("--token-file", str(pinned))
    assert served.token == "pinned-token-0123456789abcdef"
    async with client() as session:
        async with session.get(served.base, params={"token": served.token}) as response:
            assert response.status == 200


def test_max_clients_zero_is_a_usage_error(home, cli):
    home.mkdir(mode=0o700)
    result = cli("serve", "--port", "0", "--max-clients", "0")
    assert result.code == 2 and "--max-clients" in result.err


# ---------------------------------------------------------------- the console's own exit
async def test_read_only_console_keys_change_nothing(console_app, home):
    from leash.console.tui.screens.acklog import AckLogScreen
    from leash.console.tui.screens.help import HelpScreen

    app = console_app(read_only=True)
    before = StopProtocol(home).stops.snapshot()
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("S")
        await pilot.pause()
        assert app.screen.__class__.__name__ != "ConfirmScreen"
        await pilot.press("y")
        await pilot.press("1", "s", "u")
        app.run_operation("fleet_stop", None)  # the command palette's path
        await pilot.pause()
        assert [n.message for n in app._notifications].count("read-only console") >= 4
        await pilot.press("slash")
        await pilot.pause()
        assert app.query_one("#filter").has_class("visible")
        await pilot.press("escape", "l")
        await pilot.pause()
        assert isinstance(app.screen, AckLogScreen)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
    assert StopProtocol(home).stops.snapshot() == before


def test_a_console_that_leaves_before_its_kennel_starts_still_stops_it(home):
    from leash.console.tui.app import _run_until
    from leash.core.warrants.kennel import Kennel

    home.mkdir(mode=0o700)
    kennel = Kennel(home, handle_signals=False)
    kennel.request_stop()  # the console has gone already: this alone reaches nothing
    # It returns at all (the kennel saw the stop); wait_for's bound only keeps a hang from lasting.
    asyncio.run(asyncio.wait_for(_run_until(kennel, lambda: True), HANG_SECONDS))


@pytest.mark.parametrize("ending", ["stdin closes", "SIGTERM"])
def test_served_console_exits_when_its_server_goes(home, tmux_socket, ending):
    from leash.console.serve.child import DRIVER, console_argv

    home.mkdir(mode=0o700)  # the console only reads: it never creates a home
    env = dict(os.environ, LEASH_HOME=str(home), LEASH_TMUX_SOCKET=str(tmux_socket), TEXTUAL_DRIVER=DRIVER,
               COLUMNS="100", ROWS="30")
    process = subprocess.Popen(console_argv(home, read_only=False, no_kennel=False), cwd=ROOT, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        seen = b""
        deadline = time.monotonic() + 15
        while b"__GANGLION__" not in seen and time.monotonic() < deadline:
            if select.select([process.stdout], [], [], 0.1)[0]:
                seen += os.read(process.stdout.fileno(), 65536)
        assert b"__GANGLION__" in seen
        if ending == "stdin closes":
            process.stdin.close()
        else:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + LEAVE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([process.stdout], [], [], 0.05)[0]:
                os.read(process.stdout.fileno(), 65536)
        assert process.poll() is not None, f"the console ignored: {ending}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for stream in (process.stdin, process.stdout):
            if not stream.closed:
                stream.close()
