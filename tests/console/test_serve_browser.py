"""``leash serve`` in a real browser: Debian's Chromium, driven by Playwright.

On a phone's screen (390x844, a mobile viewport) the page must lay itself out
at the screen's width, with text one can read and a console narrow enough for
its one-panel layout; on a desktop's it keeps its full size. The footer's keys
are drawn from the start, before the terminal is ever touched. What the
browser received is read from the WebSocket's frames as the page got them.
"""
from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from ..support.browser import SHARED_LOOP, new_page, playwright_or_skip
from ..support.serve import DRAWN, start_server, stop_servers

playwright_or_skip()
pytestmark = [SHARED_LOOP, pytest.mark.heavy(
    "a real Chromium per module: ~5 s of CPU for two pages; make test keeps the served console's "
    "protocol, keys and refusals (test_serve.py, test_serve_approvals.py)")]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 3}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
FOOTER_KEY = b"Fleet stop"   # a footer key's description (keymap.py), on every panel
NARROW_LAYOUT = 120          # below this many columns the console shows one panel at a time
DRAW_SECONDS = 15.0
CSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]")


@pytest.fixture
def served(home, tmux_socket):
    server = start_server(home, tmux_socket, "--no-kennel")
    yield server
    stop_servers([server], set())


class Page:
    """The page as the browser shows it, and the frames its WebSocket carried."""

    def __init__(self, page):
        self.page = page
        self.received: list[bytes] = []
        self.sent: list[str] = []
        page.on("websocket", self._watch)

    def _watch(self, websocket) -> None:
        websocket.on("framereceived", lambda data: self.received.append(data if isinstance(data, bytes)
                                                                        else data.encode()))
        websocket.on("framesent", lambda data: self.sent.append(data if isinstance(data, str) else data.decode()))

    def screen_text(self) -> bytes:
        """What the console drew, its escape sequences taken out."""
        return CSI.sub(b"", b"".join(self.received))

    async def until_drawn(self, *wanted: bytes) -> bytes:
        deadline = time.monotonic() + DRAW_SECONDS
        while not all(text in self.screen_text() for text in wanted) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        return self.screen_text()

    def sizes(self) -> list[dict]:
        """The terminal sizes the page asked for (``resize`` messages)."""
        messages = [json.loads(text) for text in self.sent if text.startswith("[")]
        return [data for kind, data, *_ in messages if kind == "resize"]

    def touched(self) -> bool:
        """Did the terminal get focus (a click or a tap) or a key?"""
        return any(text.startswith(('["focus"', '["stdin"')) and "\\u001b[?" not in text for text in self.sent)


async def open_console(chromium, served, device: dict, look):
    """Open the served console's URL in Chromium on ``device``; ``look(page)`` runs on it."""
    async with new_page(chromium, device) as blank:
        page = Page(blank)  # its WebSocket watched from the start
        await page.page.goto(f"{served.base}?token={served.token}")
        return await look(page)


async def measured(page: Page) -> dict:
    return await page.page.evaluate("""() => {
        const viewport = document.querySelector('meta[name=viewport]');
        const terminal = document.getElementById('terminal');
        const screen = terminal.querySelector('.xterm-screen');
        return {viewport: viewport ? viewport.content : null, width: window.innerWidth,
                fontSize: Number(terminal.dataset.fontSize), screenWidth: screen.getBoundingClientRect().width};
    }""")


async def test_on_a_phone_the_console_fits_the_screen_in_readable_text(chromium, served):
    async def look(page: Page):
        drawn = await page.until_drawn(DRAWN, FOOTER_KEY)
        return drawn, await measured(page), page.sizes(), page.touched()

    drawn, layout, sizes, touched = await open_console(chromium, served, PHONE, look)
    assert layout["viewport"] == "width=device-width, initial-scale=1"
    assert layout["width"] == PHONE["viewport"]["width"]   # laid out at the phone's width, not a desktop's
    assert sizes, "the page never sent its terminal's size"
    columns = sizes[-1]["width"]
    assert 44 <= columns <= 52 and columns < NARROW_LAYOUT, sizes
    assert layout["fontSize"] >= 10, layout
    assert layout["screenWidth"] / columns >= 0.55 * 10, layout   # a cell as wide as 10 px monospace text
    assert layout["screenWidth"] <= layout["width"], layout
    assert not touched
    assert FOOTER_KEY in drawn, "the footer's keys were not drawn before the terminal was touched"


async def test_on_a_desktop_the_console_keeps_its_full_size(chromium, served):
    async def look(page: Page):
        drawn = await page.until_drawn(DRAWN, FOOTER_KEY)
        return drawn, await measured(page), page.sizes()

    drawn, layout, sizes = await open_console(chromium, served, DESKTOP, look)
    assert layout["fontSize"] == 16, layout
    assert sizes and sizes[-1]["width"] >= NARROW_LAYOUT, sizes
    assert FOOTER_KEY in drawn
