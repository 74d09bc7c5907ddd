"""``/approvals`` in a real browser (Debian's Chromium through Playwright), on
a phone (390x844) and a desktop (1280x800), used with the keyboard alone:
Tab to a call's Allow and press Enter; Tab into Deny's message, type it, Tab
to Deny and press Enter. Its pictures go to ``LEASH_SCREENSHOTS`` when set
(``make screenshots`` writes docs/serve-approvals-*.png with them)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from leash.core.store.files import FileBackend

from ..support.browser import SHARED_LOOP, new_page, playwright_or_skip
from ..support.serve import start_server, stop_servers

playwright_or_skip()
pytestmark = [SHARED_LOOP, pytest.mark.heavy(
    "a real Chromium per module: ~5 s of CPU for two pages; make test keeps the served console's "
    "protocol, keys and refusals (test_serve.py, test_serve_approvals.py)")]
DEVICES = {"phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                     "device_scale_factor": 3},
           "desktop": {"viewport": {"width": 1280, "height": 800}}}


@pytest.fixture
def served(home, tmux_socket):
    server = start_server(home, tmux_socket, "--no-kennel")
    yield server
    stop_servers([server], set())


async def with_page(chromium, served, device: str, act):
    async with new_page(chromium, DEVICES[device]) as page:
        await page.goto(f"{served.base}approvals?token={served.token}")
        return await act(page)


async def tab_to(page, label: str, *, most: int = 30) -> None:
    """Press Tab until the focused element's label starts with ``label``."""
    for _ in range(most):
        await page.keyboard.press("Tab")
        focused = await page.evaluate("() => document.activeElement.getAttribute('aria-label') || "
                                      "document.activeElement.tagName")
        if focused.startswith(label):
            return
    raise AssertionError(f"Tab never reached {label!r}")


@pytest.mark.parametrize("device", list(DEVICES))
async def test_keyboard_alone_allows_one_call_and_denies_another_with_a_message(chromium, home, served, device):
    backend = FileBackend(home)
    first = backend.approvals.request("agent-push", "Bash", {"command": "git push origin main"}, kind="ask",
                                      timeout_s=600)
    second = backend.approvals.request("agent-deploy", "Bash", {"command": "make deploy"}, kind="ask", timeout_s=600)

    async def act(page):
        width = await page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= DEVICES[device]["viewport"]["width"]  # no sideways scrolling on the phone
        shots = os.environ.get("LEASH_SCREENSHOTS")
        if shots:
            await page.screenshot(path=str(Path(shots) / f"serve-approvals-{device}.png"))
        await tab_to(page, "Allow Bash for agent-push")
        await page.keyboard.press("Enter")
        await page.wait_for_selector("text=allowed: agent-push")
        await tab_to(page, "TEXTAREA")
        await page.keyboard.type("not before the release")
        await tab_to(page, "Deny Bash for agent-deploy")
        await page.keyboard.press("Enter")
        await page.wait_for_selector("text=denied: agent-deploy")
        return await page.content()

    final = await with_page(chromium, served, device, act)
    assert "0 calls waiting" in final
    assert backend.approvals.get(first.id).status == "allowed"
    denied = backend.approvals.get(second.id)
    assert (denied.status, denied.message) == ("denied", "not before the release")
