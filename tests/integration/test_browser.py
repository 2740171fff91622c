"""The headless Chromium driver against a small page served on loopback: loading, scripts injected
before the page's, evaluation, pointer and touch drawing read back from a canvas, screenshots,
colour-scheme emulation, collected errors, and a clean shutdown."""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from PIL import Image

from tests.harness.browser import Browser, JavaScriptError, chromium_path, start_browser

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<style>
  body { margin: 0; background: #fff; }
  @media (prefers-color-scheme: dark) { body { background: #000; } }
  canvas { display: block; width: 200px; height: 200px; touch-action: none; }
</style>
<script>window.seenAtParse = window.Telegram ? window.Telegram.WebApp.initData : null;</script>
</head><body><canvas id="paint" width="200" height="200"></canvas>
<script>
  const canvas = document.getElementById("paint");
  const ctx = canvas.getContext("2d");
  window.pointerTypes = [];
  let last = null;
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


async def test_page_loads_runs_the_injected_script_first_and_evaluates(browser: Browser, site: str) -> None:
    page = await browser.new_page(init_script="window.Telegram = {WebApp: {initData: 'user=x&hash=y'}};")
    await page.goto(f"{site}/")
    assert await page.evaluate("window.seenAtParse") == "user=x&hash=y"
    assert await page.evaluate("Promise.resolve(6).then((n) => n * 7)") == 42
    assert await page.evaluate("({a: [1, 'b'], c: null})") == {"a": [1, "b"], "c": None}
    assert await page.evaluate("[innerWidth, innerHeight]") == [360, 740]
    with pytest.raises(JavaScriptError, match="nope"):
        await page.evaluate("Promise.reject(new Error('nope'))")
    await page.wait_for_selector("#paint")
    with pytest.raises(AssertionError, match="still false"):
        await page.wait_for("document.querySelector('#absent')", timeout=0.3)
    page.assert_no_errors()


async def test_a_mouse_drag_draws_on_the_canvas(browser: Browser, site: str) -> None:
    page = await browser.new_page()
    await page.goto(f"{site}/")
    assert await page.evaluate("painted(100, 20)") == 0
    await page.mouse_drag([(20, 20), (60, 20), (100, 20), (180, 20)])
    assert await page.evaluate("painted(100, 20)") == 255
    assert await page.evaluate("painted(100, 150)") == 0
    assert await page.evaluate("pointerTypes") == ["mouse"]


async def test_a_finger_drag_draws_on_a_mobile_page(browser: Browser, site: str) -> None:
    page = await browser.new_page(mobile=True)
    await page.goto(f"{site}/")
    await page.touch_drag([(20, 100), (60, 100), (100, 100), (180, 100)])
    assert await page.evaluate("painted(100, 100)") == 255
    assert await page.evaluate("painted(100, 20)") == 0
    assert await page.evaluate("pointerTypes") == ["touch"]


async def test_screenshots_are_pngs_of_the_viewport(browser: Browser, site: str, tmp_path: Path) -> None:
    page = await browser.new_page()
    await page.goto(f"{site}/")
    await page.mouse_drag([(0, 100), (199, 100)])
    data = await page.screenshot(tmp_path / "shots" / "light.png")
    assert (tmp_path / "shots" / "light.png").read_bytes() == data
    image = Image.open(io.BytesIO(data))
    assert (image.format, image.size) == ("PNG", (360, 740))
    rgb = image.convert("RGB")
    assert rgb.getpixel((100, 100))[0] > 200 and rgb.getpixel((100, 100))[1] < 60  # the red stroke
    assert rgb.getpixel((300, 700)) == (255, 255, 255)
    sharp = await browser.new_page(width=360, height=740, scale=2)
    await sharp.goto(f"{site}/")
    assert Image.open(io.BytesIO(await sharp.screenshot(tmp_path / "x2.png"))).size == (720, 1480)


async def test_dark_emulation_changes_media_queries(browser: Browser, site: str, tmp_path: Path) -> None:
    query = "matchMedia('(prefers-color-scheme: dark)').matches"
    dark = await browser.new_page(color_scheme="dark")
    await dark.goto(f"{site}/")
    assert await dark.evaluate(query) is True
    assert await dark.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(0, 0, 0)"
    image = Image.open(io.BytesIO(await dark.screenshot(tmp_path / "dark.png"))).convert("RGB")
    assert image.getpixel((300, 700)) == (0, 0, 0)
    light = await browser.new_page()
    await light.goto(f"{site}/")
    assert await light.evaluate(query) is False
    await light.set_color_scheme("dark")
    assert await light.evaluate(query) is True


async def test_console_errors_exceptions_and_failed_loads_are_collected(browser: Browser, site: str) -> None:
    page = await browser.new_page()
    await page.goto(f"{site}/broken")
    await page.wait_for("true")
    await page.evaluate("new Promise((done) => setTimeout(done, 100))")
    texts = " | ".join(f"{entry.source}: {entry.text}" for entry in page.errors)
    assert "console: made to fail" in texts
    assert "thrown later" in texts
    assert "missing.png" in texts
    with pytest.raises(AssertionError, match="made to fail"):
        page.assert_no_errors()


async def test_closing_ends_every_process_and_removes_the_profile() -> None:
    browser = await start_browser()
    files, pid = browser.files, browser.pid
    page = await browser.new_page()
    await page.goto("about:blank")
    assert (files / "profile").is_dir()
    await browser.close()
    assert not files.exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_a_missing_chromium_fails_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(pytest.fail.Exception, match="Chromium not found.*apt-get install chromium"):
        chromium_path()
