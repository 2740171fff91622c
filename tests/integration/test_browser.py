"""The browser harness (tests/harness/browser.py) against a small page on loopback: which Chromium it
launches, finger input through the CDP session (one finger and a pinch), the errors it collects, and the
one-line failure when there is no browser."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from playwright.async_api import Browser

from tests.harness.browser import MISSING, chromium_or_fail, find_chromium, phone

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<style>body { margin: 0; } canvas { display: block; width: 200px; height: 200px; touch-action: none; }</style>
</head><body><canvas id="paint" width="200" height="200"></canvas>
<script>
  const canvas = document.getElementById("paint");
  const ctx = canvas.getContext("2d");
  window.pointerTypes = [];
  window.mostFingers = 0;
  let last = null;
  canvas.addEventListener("touchstart", (e) => { window.mostFingers = Math.max(window.mostFingers, e.touches.length); });
  canvas.addEventListener("pointerdown", (e) => { last = [e.offsetX, e.offsetY]; window.pointerTypes.push(e.pointerType); });
  canvas.addEventListener("pointermove", (e) => {
    if (!last) return;
    ctx.lineWidth = 10; ctx.strokeStyle = "#f00";
    ctx.beginPath(); ctx.moveTo(last[0], last[1]); ctx.lineTo(e.offsetX, e.offsetY); ctx.stroke();
    last = [e.offsetX, e.offsetY];
  });
  canvas.addEventListener("pointerup", () => { last = null; });
  window.painted = (x, y) => ctx.getImageData(x, y, 1, 1).data[3];
</script></body></html>"""

BROKEN = """<!doctype html><html><body><script>
  console.error("made to fail");
  setTimeout(() => { throw new Error("thrown later"); }, 0);
</script><img src="/missing.png"></body></html>"""


def _html(text: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/html")

    return serve


@pytest.fixture
async def site() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/", _html(PAGE))
    app.router.add_get("/broken", _html(BROKEN))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_a_finger_drag_draws_and_two_fingers_are_two_touches(browser: Browser, site: str) -> None:
    app = await phone(browser)
    await app.page.goto(f"{site}/")
    assert await app.page.evaluate("[innerWidth, innerHeight, navigator.maxTouchPoints > 0]") == [360, 740, True]
    await app.touch_drag([(20, 100), (60, 100), (100, 100), (180, 100)])
    assert await app.page.evaluate("painted(100, 100)") == 255
    assert await app.page.evaluate("painted(100, 20)") == 0
    assert await app.page.evaluate("pointerTypes") == ["touch"]
    await app.touch("touchStart", [(50, 150), (150, 150)])
    await app.touch("touchEnd", [])
    assert await app.page.evaluate("mostFingers") == 2
    app.assert_no_errors()


async def test_console_errors_exceptions_and_failed_loads_are_collected(browser: Browser, site: str) -> None:
    app = await phone(browser)
    await app.page.goto(f"{site}/broken")
    await app.page.evaluate("new Promise((done) => setTimeout(done, 100))")
    texts = " | ".join(app.errors)
    assert "console: made to fail" in texts
    assert "thrown later" in texts
    assert "missing.png" in texts
    with pytest.raises(AssertionError, match="made to fail"):
        app.assert_no_errors()


def _executable(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_chromium_is_chromium_env_else_playwrights_own_else_the_systems(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    system = _executable(tmp_path / "bin" / "chromium")
    bundled = _executable(tmp_path / "chrome")
    named = _executable(tmp_path / "my-chromium")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("CHROMIUM", raising=False)
    assert find_chromium(bundled) == bundled
    assert find_chromium(str(tmp_path / "not-installed" / "chrome")) == system
    monkeypatch.setenv("CHROMIUM", named)
    assert find_chromium(bundled) == named


def test_no_browser_fails_in_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CHROMIUM", raising=False)
    assert find_chromium(str(tmp_path / "absent")) is None
    with pytest.raises(pytest.fail.Exception) as failed:
        chromium_or_fail(str(tmp_path / "absent"))
    assert str(failed.value) == MISSING and "\n" not in MISSING
    assert "playwright install chromium" in MISSING and "apt-get install chromium" in MISSING
