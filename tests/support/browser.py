"""A real browser for the served console's tests: Debian's Chromium, headless,
driven by Playwright. A test module calls ``playwright_or_skip()`` at import:
without Chromium or Playwright the whole module is skipped, saying which is missing."""
from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def playwright_or_skip() -> Any:
    """Playwright's async API; the calling module skipped when Chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)
    return pytest.importorskip("playwright.async_api", reason="playwright is not installed (make venv)")


@asynccontextmanager
async def new_page(device: dict) -> AsyncIterator[Any]:
    """A new, blank page of Chromium on ``device`` (a Playwright context's options); the browser closed after."""
    playwright = playwright_or_skip()
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield await (await browser.new_context(**device)).new_page()
        finally:
            await browser.close()
