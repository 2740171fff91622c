"""Headless Chromium for tests, through Playwright: phone pages (viewport, touch, colour scheme), every
console error a page logged, and finger input.

Playwright's own Chromium is used where `playwright install chromium` put it; otherwise the system's
(Debian's `chromium`, or the executable $CHROMIUM names). Nothing is downloaded at test time. Without
either the tests that need a browser fail with one line saying what to install, never skip: a skipped
browser test would let a broken page pass.

Playwright's touchscreen only taps; a finger that moves, and two fingers (a pinch), go through a CDP
session's `Input.dispatchTouchEvent`, which is what Playwright exposes for input it does not model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from playwright.async_api import Browser, BrowserContext, CDPSession, ConsoleMessage, Page

from tests.harness.provision import CHROMIUM_ENV, find_browser

ColorScheme = Literal["light", "dark"]
TouchKind = Literal["touchStart", "touchMove", "touchEnd", "touchCancel"]
MISSING = ("no Chromium for the browser tests: run `.venv/bin/playwright install chromium`, or install "
           "Debian's (`apt-get install chromium fonts-noto-core`), or set CHROMIUM to an executable")


def find_chromium(bundled: str | None = None) -> str | None:
    """The Chromium to launch: $CHROMIUM when set, else Playwright's own (`bundled`) when installed, else the
    system's (tests.harness.provision finds it, and installs it first where it may); None when there is none."""
    if not os.environ.get(CHROMIUM_ENV, "").strip() and bundled and Path(bundled).is_file():
        return bundled
    return find_browser(os.environ)


def chromium_or_fail(bundled: str | None) -> str:
    """`find_chromium`, or the test fails with what to install."""
    found = find_chromium(bundled)
    if found is None:
        pytest.fail(MISSING, pytrace=False)
    return found


@dataclass
class Phone:
    """One page on a phone: the page, its CDP session for finger input, and the errors it logged."""

    page: Page
    cdp: CDPSession
    errors: list[str] = field(default_factory=list)

    async def touch(self, kind: TouchKind, points: Sequence[tuple[float, float]]) -> None:
        """One touch event with a finger at each point (ids by position: two points are a pinch)."""
        touch_points = [{"x": x, "y": y, "id": index} for index, (x, y) in enumerate(points)]
        await self.cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": touch_points})

    async def touch_drag(self, points: Sequence[tuple[float, float]]) -> None:
        """One finger down at the first point, along the rest, and lifted."""
        first, *rest = points
        await self.touch("touchStart", [first])
        for point in rest:
            await self.touch("touchMove", [point])
        await self.touch("touchEnd", [])

    def assert_no_errors(self) -> None:
        """AssertionError listing what the page logged as an error, if anything."""
        assert not self.errors, "the page logged errors:\n" + "\n".join(f"  {error}" for error in self.errors)


def collect_errors(page: Page, errors: list[str]) -> None:
    """Append every console error, uncaught exception and failed load of `page` to `errors`."""

    def console(message: ConsoleMessage) -> None:
        # the browser asks for /favicon.ico on its own (Telegram's webview does not): not the page's error
        if message.type in ("error", "assert") and not message.location.get("url", "").endswith("/favicon.ico"):
            errors.append(f"console: {message.text} {message.location.get('url', '')}".strip())

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(f"exception: {error}"))


async def phone(browser: Browser, *, width: int = 360, height: int = 740, scale: float = 1.0,
                color_scheme: ColorScheme = "light", locale: str = "en-US", init_script: str | None = None,
                context: BrowserContext | None = None) -> Phone:
    """A page in a fresh phone context (touch, this viewport and colour scheme) with `init_script` run before
    each document's own scripts; or a new page in `context`."""
    if context is None:
        context = await browser.new_context(
            viewport={"width": width, "height": height}, device_scale_factor=scale, has_touch=True,
            is_mobile=True, color_scheme=color_scheme, locale=locale)
    if init_script is not None:
        await context.add_init_script(init_script)
    page = await context.new_page()
    found = Phone(page, await context.new_cdp_session(page))
    collect_errors(page, found.errors)
    return found
