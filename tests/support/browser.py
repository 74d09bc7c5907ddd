"""A real browser for the served console's tests: Debian's Chromium, headless,
driven by Playwright. A test module calls ``playwright_or_skip()`` at import:
without Chromium or Playwright the whole module is skipped, saying which is missing.

Starting Chromium is most of what a page costs (~0.7 s of CPU): a module
starts it once (``chromium``, a fixture on the module's event loop, which the
module asks for with ``pytestmark = SHARED_LOOP``) and each test opens its
page in a context of its own (no cookies, storage or cache shared)."""
from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import pytest_asyncio

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SHARED_LOOP = pytest.mark.asyncio(loop_scope="module")  # the module's tests run on the loop its browser runs on


def playwright_or_skip() -> Any:
    """Playwright's async API; the calling module skipped when Chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)
    return pytest.importorskip("playwright.async_api", reason="playwright is not installed (make venv)")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Any]:
    """One headless Chromium for the module's tests, closed after the last."""
    playwright = playwright_or_skip()
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def new_page(browser, device: dict) -> AsyncIterator[Any]:
    """A new, blank page of ``browser`` on ``device`` (a Playwright context's options), in a context of its own
    that is closed after."""
    context = await browser.new_context(**device)
    try:
        yield await context.new_page()
    finally:
        await context.close()
