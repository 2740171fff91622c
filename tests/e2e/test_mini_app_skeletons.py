"""Never a blank while the Mini App waits: with every API answer held back, each screen (the first one, Paint,
Extend, Styles, My results and the result viewer) shows a skeleton, the shape of what comes, and once the
answers are in, no skeleton is left; and Paint is ready on the small copy of the photo while the sharp one is
still on its way."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import Route

from tests.e2e.conftest import ALICE, BOB
from tests.e2e.helpers import wait_media
from tests.e2e.miniapp import open_app, page_errors, page_root
from tests.e2e.test_mini_app_controls import settings  # noqa: F401 (the fixture)
from tests.e2e.test_mini_app_page import sent_photo
from tests.fakes import samples
from tests.fakes.telegram_models import private_chat

pytestmark = pytest.mark.timeout(120)

#: the skeletons on screen: visible elements shimmering
SHIMMERING = """() => [...document.querySelectorAll("body *")]
  .filter((element) => element.checkVisibility() && getComputedStyle(element).animationName === "shimmer")
  .map((element) => element.id || element.className || element.tagName)"""
HELD_S = 0.7


async def test_every_screen_shows_a_skeleton_while_it_loads_and_none_once_loaded(bot, telegram, browser,
                                                                                  settings) -> None:  # noqa: F811
    chat = private_chat(ALICE)
    telegram.user_sends(chat, ALICE, photo=samples.jpeg(320, 240), caption="/colorize")
    await wait_media(telegram, chat.id)
    ref = await sent_photo(telegram, ALICE, 400, 300)
    app = await open_app(browser, settings, telegram, ALICE, "s=results", ready=False)
    held = {"on": True}
    parts_free = asyncio.Event()  # the screen's own parts (pictures, styles, results) wait until the test has looked

    async def slow(route: Route) -> None:  # a slow network: the texts come late, a screen's parts later still
        if held["on"]:
            if any(f"/api/{first}" in route.request.url for first in ("me", "screens")):
                await asyncio.sleep(HELD_S)
            else:
                await parts_free.wait()
        await route.continue_()

    await app.page.context.route("**/app/api/**", slow)
    for screen in ("paint", "frame", "styles", "results"):
        parts_free.clear()
        await app.page.goto(page_root(settings) + f"?s={screen}&p={ref}")
        assert "skeleton-block" in await app.page.evaluate(SHIMMERING), screen  # the first screen, before any text
        # the texts are in, the screen's own parts are not yet
        await app.page.wait_for_function("() => document.getElementById('loading').hidden", timeout=20_000)
        assert await app.page.evaluate(SHIMMERING), f"{screen}: blank while its parts load"
        parts_free.set()
        await app.page.wait_for_function("() => document.body.dataset.ready === 'true'", timeout=20_000)
        if screen == "results":
            await app.page.wait_for_selector("#grid button.loaded", timeout=20_000)
            parts_free.clear()
            await app.page.locator("#grid button").first.click()
            assert "viewer-photo" in await app.page.evaluate(SHIMMERING)
            parts_free.set()
            await app.page.wait_for_selector("#viewer-photo.loaded", timeout=20_000)
        elif screen == "styles":
            await app.page.wait_for_selector("#styles-photo.loaded", timeout=20_000)
            await app.page.wait_for_function("() => document.querySelector('.tile:not(.named)').classList"
                                             ".contains('loaded')")
        assert await app.page.evaluate(SHIMMERING) == [], screen
    held["on"] = False
    assert page_errors(app) == []
    # someone with no results yet: the skeleton gives way to the hint, not to a grid of shapes for ever
    empty = await open_app(browser, settings, telegram, BOB, "s=results")
    assert await empty.page.locator("#no-results").is_visible()
    assert await empty.page.evaluate(SHIMMERING) == []


async def test_paint_is_ready_on_the_small_copy_and_the_sharp_one_replaces_it_under_the_paint(
        bot, telegram, browser, settings) -> None:  # noqa: F811
    ref = await sent_photo(telegram, ALICE, 640, 480)
    app = await open_app(browser, settings, telegram, ALICE, "s=results")
    sharp_held = asyncio.Event()

    async def slow_sharp(route: Route) -> None:  # the sharp copy is the one a slow network holds up longest
        if "size=display" in route.request.url:
            await sharp_held.wait()
        await route.continue_()

    await app.page.context.route("**/app/api/picture**", slow_sharp)
    await app.page.goto(page_root(settings) + f"?s=paint&p={ref}")
    await app.page.wait_for_function("() => document.body.dataset.ready === 'true'", timeout=20_000)
    photo = app.page.locator("#paint-photo")
    assert await photo.get_attribute("data-sharp") == "false"
    assert await app.page.evaluate("document.getElementById('paint-canvas').width") == 640  # the mask's own size
    canvas = await app.page.evaluate("document.getElementById('paint-canvas').getBoundingClientRect().toJSON()")
    await app.touch_drag([(canvas["left"] + 50, canvas["top"] + 50), (canvas["left"] + 120, canvas["top"] + 90)])
    assert await app.page.evaluate("state.strokes.length") == 1
    sharp_held.set()
    await app.page.wait_for_function("() => document.getElementById('paint-photo').dataset.sharp === 'true'")
    assert await app.page.evaluate("document.getElementById('paint-photo').naturalWidth") == 640
    assert await app.page.evaluate("state.strokes.length") == 1  # what was painted stays
    assert page_errors(app) == []
