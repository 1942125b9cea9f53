"""A real browser for the web chat tests: Playwright driving the system's Chromium.

No browser is downloaded: the tests use Debian's ``chromium`` (``.ci/run`` installs it) and
skip, saying why, only when it cannot be found. Every page records what it requested and
the errors it raised; a test fails if the page fetched anything but the gateway or threw.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Route, async_playwright, expect

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium")) if p and Path(p).exists()), None
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT = 10_000  # ms: how long an action or an expectation may wait for the page
# expect() has a default of its own (5 s), which a loaded CI machine overran once.
expect.set_options(timeout=WAIT)


@dataclass
class Opened:
    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


OpenPage = Callable[..., Awaitable[Opened]]
Shoot = Callable[[Page, str], Awaitable[None]]

# The docs' pictures of the web chat are these tests' screenshots, written there only when
# asked for (docs/testing.md), so that a test run leaves the tree as it was.
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DOCS_SCREENSHOTS = os.environ.get("SLASHGATE_DOCS_SCREENSHOTS") == "1"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests keep their screenshots (pytest's temp folder, kept for a few runs)."""
    return tmp_path_factory.mktemp("webchat-screenshots", numbered=False)


@pytest.fixture
def shoot(screenshots: Path) -> Shoot:
    """``await shoot(page, "name.png")``: a screenshot kept with the others, and written to
    docs/images/ too when ``SLASHGATE_DOCS_SCREENSHOTS=1``.
    """

    async def shoot_(page: Page, name: str) -> None:
        path = screenshots / name
        await page.screenshot(path=path)
        if DOCS_SCREENSHOTS:
            DOCS_IMAGES.mkdir(exist_ok=True)
            shutil.copyfile(path, DOCS_IMAGES / name)

    return shoot_


# The site of tests/webchat/test_hostile_page.py, resolved to 127.0.0.1 by the browser alone.
HOSTILE_SITE = "evil.example"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for all the browser tests of a test process (starting one took about
    1.3 s of CPU); each test opens its pages in a browser context of its own, a fresh
    profile. The tests using it run on the session's event loop (``LOOP``), the one it is on.
    """
    if CHROMIUM is None:
        pytest.skip("chromium not found (apt-get install chromium); the browser tests need it")
    rules = f"--host-resolver-rules=MAP {HOSTILE_SITE} 127.0.0.1"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=[*ARGS, rules])
        try:
            yield browser
        finally:
            await browser.close()


# The mark of every test that uses ``browser``: the session's event loop.
LOOP = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def open_page(browser: Browser) -> AsyncIterator[OpenPage]:
    """``await open_page(url, width=1000)``: a fresh browser profile on the web chat.
    ``routes`` (URL pattern: handler) are in place before the page loads.
    """
    opened: list[Opened] = []

    async def open_(
        url: str,
        width: int = 1000,
        height: int = 760,
        routes: Mapping[str, Callable[[Route], Any]] | None = None,
    ) -> Opened:
        context = await browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(WAIT)
        for pattern, handler in (routes or {}).items():
            await context.route(pattern, handler)
        page = await context.new_page()
        seen = Opened(page)
        page.on("request", lambda request: seen.requests.append(request.url))
        page.on("pageerror", lambda error: seen.errors.append(str(error)))
        await page.goto(url + "/chat")
        # The page focuses its composer (or its token form) once its script listens: keys
        # typed before are lost, and a user sees the caret first.
        await page.wait_for_function("document.activeElement !== document.body")
        opened.append(seen)
        return seen

    yield open_
    for seen in opened:
        await seen.page.context.close()
        origin = seen.requests[0].rsplit("/chat", 1)[0] if seen.requests else ""
        assert all(url.startswith(origin + "/") for url in seen.requests), seen.requests
        assert seen.errors == []
