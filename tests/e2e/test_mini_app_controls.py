"""Telegram's controls around the Mini App's page, and Paint's loupe, on one phone page: the back button walks back
through the screens and the result viewer the person went through (and hides at the first); vertical swipes
(which pull a Mini App down and closed) are held while a finger paints or drags a frame handle, and only then;
and while a finger paints, a loupe shows the photo and the paint under it, magnified, where the finger is not."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from bot.config import Settings
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import wait_media
from tests.e2e.miniapp import app_settings_with_a_preview, open_app, page_errors, screenshots_dir
from tests.e2e.test_mini_app_page import along, center_of, rect, sent_photo
from tests.fakes import samples
from tests.fakes.telegram_models import private_chat
from tests.harness.browser import Phone

pytestmark = pytest.mark.timeout(120)

#: what the person sees: the screen shown, whether the result viewer is open, and Telegram's back button
SEEN = """() => ({screen: [...document.querySelectorAll('.screen')].find((s) => !s.hidden)?.id ?? null,
                 viewer: !document.getElementById('viewer').hidden,
                 back: window.Telegram.WebApp.BackButton.isVisible})"""


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    return app_settings_with_a_preview(tmp_path, telegram, sandbox, sqlite_template)


async def seen(app: Phone) -> dict[str, object]:
    return await app.page.evaluate(SEEN)


async def back(app: Phone) -> dict[str, object]:
    """Telegram's back button pressed (the client calls the page's handler)."""
    await app.page.evaluate("window.__back()")
    return await seen(app)


def half_black() -> bytes:
    """A 400×300 photo, black left of x=200 and white right of it: what the loupe shows is easy to tell."""
    image = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(image).rectangle((0, 0, 199, 299), fill="black")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=95)
    return out.getvalue()


#: the loupe as shown: where it is, and the colour at a few of its points (x, y in its own 112 px)
LOUPE = """(points) => {
  const loupe = document.getElementById('loupe');
  if (loupe.hidden) return null;
  const r = loupe.getBoundingClientRect(), scale = loupe.width / r.width;
  const context = loupe.getContext('2d');
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom,
          colours: points.map(([x, y]) => [...context.getImageData(x * scale, y * scale, 1, 1).data].slice(0, 3))};
}"""
#: points of the loupe: its centre (under the finger, painted) and two corners (the photo: left and right of it)
CENTRE, UPPER_LEFT, UPPER_RIGHT = (56, 56), (12, 14), (100, 14)


async def loupe(app: Phone) -> dict | None:
    return await app.page.evaluate(LOUPE, [CENTRE, UPPER_LEFT, UPPER_RIGHT])


def outside(box: dict, point: tuple[float, float]) -> bool:
    return not (box["left"] <= point[0] <= box["right"] and box["top"] <= point[1] <= box["bottom"])


async def check_loupe(app: Phone) -> None:
    """A finger on the black half, 20 photo pixels from the white: the loupe, magnified twice, shows black to its
    left and white to its right, the paint at its centre, and is clear of the finger; it follows; it goes."""
    canvas = await rect(app, "#paint-canvas")
    per_pixel = canvas["width"] / 400
    finger = (canvas["left"] + 180 * per_pixel, canvas["top"] + 150 * per_pixel)
    assert await loupe(app) is None
    await app.touch("touchStart", [finger])
    shown = await loupe(app)
    assert shown is not None and outside(shown, finger) and shown["bottom"] <= finger[1]  # above the finger
    assert 0 <= shown["left"] and shown["right"] <= 360 and 0 <= shown["top"]
    centre, left, right = shown["colours"]
    assert max(left) < 70 and min(right) > 180, shown  # the photo, black then white, the right way round
    assert centre[0] > centre[1] + 40, shown  # the paint under the finger (pink over black)
    moved = (finger[0] + 60, finger[1])
    await app.touch("touchMove", [moved])
    after = await loupe(app)
    assert after is not None and after["left"] - shown["left"] == pytest.approx(60, abs=1) and outside(after, moved)
    await app.page.screenshot(path=screenshots_dir() / "loupe-light-en.png")
    assert min(after["colours"][1]) > 180  # now all white around
    await app.touch("touchEnd", [])
    assert await loupe(app) is None
    # near the top of the screen the loupe goes below the finger
    high = (canvas["left"] + 60, canvas["top"] + 10)
    await app.touch("touchStart", [high])
    below = await loupe(app)
    assert below is not None and below["top"] >= high[1] and outside(below, high)
    await app.touch("touchEnd", [])


async def swipes_while(app: Phone, start: tuple[float, float], end: tuple[float, float]) -> list[bool]:
    """Whether vertical swipes are on before a finger goes down at `start`, while it moves to `end`, and after."""
    enabled = "window.Telegram.WebApp.isVerticalSwipesEnabled"
    found = [await app.page.evaluate(enabled)]
    first, *rest = along(start, end, 6)
    await app.touch("touchStart", [first])
    for point in rest:
        await app.touch("touchMove", [point])
    found.append(await app.page.evaluate(enabled))
    await app.touch("touchEnd", [])
    found.append(await app.page.evaluate(enabled))
    return found


async def test_the_back_button_walks_back_the_way_the_person_came_swipes_wait_for_the_finger_and_a_loupe_shows(
        bot, telegram, browser, settings) -> None:
    chat = private_chat(ALICE)
    telegram.user_sends(chat, ALICE, photo=samples.jpeg(320, 240), caption="/colorize")
    await wait_media(telegram, chat.id)
    ref = await sent_photo(telegram, ALICE, 400, 300, half_black())
    app = await open_app(browser, settings, telegram, ALICE, f"s=results&p={ref}")
    await app.page.wait_for_selector("#grid button.loaded")
    assert await seen(app) == {"screen": "results", "viewer": False, "back": False}
    await app.page.locator("#grid button").first.click()
    assert await seen(app) == {"screen": "results", "viewer": True, "back": True}
    assert await back(app) == {"screen": "results", "viewer": False, "back": False}

    # results → the viewer → Paint → Extend, and back the same way
    await app.page.locator("#grid button").first.click()
    await app.page.locator(".tab[data-screen='paint']").click()
    await app.page.wait_for_function("() => document.getElementById('paint-photo').complete")
    assert await seen(app) == {"screen": "paint", "viewer": False, "back": True}
    await check_loupe(app)
    canvas = await rect(app, "#paint-canvas")
    assert await swipes_while(app, (canvas["left"] + 40, canvas["top"] + 40),
                              (canvas["left"] + 40, canvas["top"] + 160)) == [True, False, True]
    await app.page.locator(".tab[data-screen='frame']").click()
    await app.page.wait_for_function("() => document.getElementById('frame-photo').complete")
    x, y = await center_of(app, ".handle[data-edge='bottom']")
    assert await swipes_while(app, (x, y), (x, y + 60)) == [True, False, True]
    assert await seen(app) == {"screen": "frame", "viewer": False, "back": True}
    assert await back(app) == {"screen": "paint", "viewer": False, "back": True}
    assert await back(app) == {"screen": "results", "viewer": True, "back": True}
    assert await back(app) == {"screen": "results", "viewer": False, "back": False}
    # a tap that changes nothing (the screen already shown) adds no step to go back through
    await app.page.locator(".tab[data-screen='results']").click()
    assert await seen(app) == {"screen": "results", "viewer": False, "back": False}
    assert page_errors(app) == []
