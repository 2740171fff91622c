"""The Mini App's weight and speed on a phone: bytes and time to ready of each screen, with a 2560 px photo
and nine 2560 px results, over a throttled connection (Chromium's Slow 4G: 150 ms, 1.6 Mbit/s down,
750 kbit/s up). Targets (issue 29): Paint ready within 2 s, the results grid within 300 KB.

    python -m bench.miniapp            # prints one line per screen
    python -m bench.miniapp --runs 5   # five runs, each with a fresh bot (cold copies), and each screen's median

"Ready" is the page's own signal (`body[data-ready]`, set once the screen's texts and photo are shown), and
for My results every tile in view has its picture. Bytes are what the page's Resource Timing counts on the wire (transferSize: compressed bodies and headers). The bot makes each picture's copy on
the first request and keeps it: the first screen to show the photo pays for that.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from PIL import Image, ImageDraw
from playwright.async_api import async_playwright

from tests.e2e.conftest import ALICE
from tests.e2e.miniapp import TELEGRAM_SCRIPT, app_settings, page_root, webapp_stub
from tests.fakes.telegram_models import private_chat
from tests.harness import InProcessBot, fakes, sqlite_url
from tests.harness.browser import MISSING, find_chromium, phone

SLOW_4G = {"offline": False, "latency": 150, "downloadThroughput": 1_600_000 / 8, "uploadThroughput": 750_000 / 8}
SIDE = (2560, 1920)
RESULTS = 9
SCREENS = {"paint": "document.getElementById('paint-photo').complete",
           "frame": "document.getElementById('frame-photo').complete",
           "styles": "document.querySelector('.tile') !== null",
           "results": "[...document.querySelectorAll('#grid button')].filter((b) => b.getBoundingClientRect().top"
                      " < innerHeight).every((b) => b.classList.contains('loaded'))"}
#: the screens that show a small copy of the photo first: when the sharp one is in place too
SHARP = {"paint": "document.getElementById('paint-photo').dataset.sharp === 'true' && "
                  "document.getElementById('paint-photo').complete",
         "frame": "document.getElementById('frame-photo').dataset.sharp === 'true' && "
                  "document.getElementById('frame-photo').complete"}


def camera_photo() -> bytes:
    """A 2560×1920 JPEG about as heavy as a phone's photo (about a megabyte): shapes over a gradient, with
    sensor-like noise, which costs a JPEG what a real scene's detail does."""
    noise = Image.effect_noise(SIDE, 14).convert("RGB")
    image = Image.blend(noise, Image.linear_gradient("L").resize(SIDE).convert("RGB"), 0.6)
    draw = ImageDraw.Draw(image)
    for i in range(40):
        top = (i * 97) % 1800
        draw.ellipse((i * 60, top, i * 60 + 300, top + 200), fill=((i * 40) % 255, (i * 90) % 255, (i * 20) % 255))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=93)
    return out.getvalue()


async def photo_ref(telegram, photo: bytes) -> str:
    """Alice sends `photo`: the reference the Mini App buttons of its menu carry."""
    chat = private_chat(ALICE)
    sent = telegram.user_sends(chat, ALICE, photo=photo)

    def menu():
        return next((message for message in telegram.sent(chat.id)
                     if message.reply_to_message_id == sent["message_id"] and message.reply_markup), None)

    await telegram.wait_for(lambda: menu() is not None)
    url = next(button["web_app"]["url"] for row in menu().reply_markup["inline_keyboard"] for button in row
               if "web_app" in button)
    return parse_qs(urlsplit(url).query)["p"][0]


async def measure(browser, settings, token: str, query: str, ready: str, sharp: str | None) -> tuple[int, float, float]:
    """(bytes over the wire, seconds from navigation to ready, and to the sharp photo where there is one) of one
    screen on a fresh phone."""
    opened = await phone(browser, init_script=webapp_stub(token, ALICE))
    await opened.page.route(TELEGRAM_SCRIPT, lambda route: route.abort())
    await opened.cdp.send("Network.enable")
    await opened.cdp.send("Network.emulateNetworkConditions", SLOW_4G)
    started = time.monotonic()
    await opened.page.goto(page_root(settings) + "?" + query)
    await opened.page.wait_for_function(f"() => document.body.dataset.ready === 'true' && ({ready})",
                                        timeout=60_000)
    elapsed = time.monotonic() - started
    if sharp is not None:
        await opened.page.wait_for_function(f"() => {sharp}", timeout=60_000)
    sharpened = time.monotonic() - started if sharp is not None else elapsed
    # the page's own count: every response's size on the wire, headers included (all are same-origin)
    wire = await opened.page.evaluate("""() => performance.getEntriesByType("navigation")
      .concat(performance.getEntriesByType("resource")).reduce((sum, entry) => sum + entry.transferSize, 0)""")
    await opened.page.context.close()
    return wire, elapsed, sharpened


async def one_run() -> dict[str, tuple[int, float, float]]:
    """(bytes, seconds to ready) of each screen, with a fresh bot, database and browser: every copy made cold."""
    found: dict[str, tuple[int, float, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        previews = Path(folder) / "previews"
        previews.mkdir()
        async with fakes() as world, async_playwright() as playwright:
            executable = find_chromium(playwright.chromium.executable_path)
            if executable is None:
                raise SystemExit(MISSING)
            settings = app_settings(world.telegram, world.sandbox, sqlite_url(Path(folder) / "bot.db"), previews)
            # nine photos at once: more than one person's active jobs allow by default
            settings = settings.model_copy(update={"user_max_active_jobs": RESULTS + 1})
            bot = InProcessBot(settings, world.telegram)
            await bot.start()
            try:
                chat = private_chat(ALICE)
                photo = camera_photo()
                print(f"input: {SIDE[0]}×{SIDE[1]} JPEG, {len(photo) / 1024:.0f} KB; {RESULTS} results of it")
                for _ in range(RESULTS):
                    world.telegram.user_sends(chat, ALICE, photo=photo, caption="/colorize")
                await world.telegram.wait_for(
                    lambda: sum(1 for m in world.telegram.sent(chat.id) if m.media) >= RESULTS, 120)
                ref = await photo_ref(world.telegram, photo)
                args = ["--no-sandbox"] if os.geteuid() == 0 else []
                browser = await playwright.chromium.launch(executable_path=executable, args=args)
                print("screen   bytes      ready  sharp (Slow 4G)")
                for screen, ready in SCREENS.items():  # each on a fresh phone: nothing in its cache
                    found[screen] = size, seconds, sharp = await measure(
                        browser, settings, world.telegram.token, f"s={screen}&p={ref}", ready, SHARP.get(screen))
                    print(f"{screen:8} {size / 1024:7.0f} KB {seconds:6.2f} s {sharp:6.2f} s")
                await browser.close()
            finally:
                await bot.stop()
    return found


async def main(runs: int) -> None:
    results = [await one_run() for _ in range(runs)]
    if runs > 1:
        print(f"medians of {runs} runs")
        for screen in SCREENS:
            size = statistics.median(run[screen][0] for run in results)
            seconds = statistics.median(run[screen][1] for run in results)
            sharp = statistics.median(run[screen][2] for run in results)
            spread = ", ".join(f"{run[screen][1]:.2f}" for run in results)
            print(f"{screen:8} {size / 1024:7.0f} KB {seconds:6.2f} s {sharp:6.2f} s   ({spread})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The Mini App's bytes and time to ready on Slow 4G")
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a fresh bot; medians printed")
    asyncio.run(main(parser.parse_args().runs))
