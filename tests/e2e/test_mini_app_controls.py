"""Telegram's controls around the Mini App's page, on one phone page: the back button walks back through the
screens and the result viewer the person went through (and hides at the first), and vertical swipes (which
pull a Mini App down and closed) are held while a finger paints or drags a frame handle, and only then."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from bot.config import Settings
from bot.previews import thumbnail
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import wait_media
from tests.e2e.miniapp import app_settings, open_app, page_errors
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
    previews = tmp_path / "previews"
    previews.mkdir()
    sample = resources.files("bot.operations").joinpath("preview-sample.jpg").read_bytes()
    (previews / "art-oil.jpg").write_bytes(thumbnail(sample))
    return app_settings(telegram, sandbox, migrated_sqlite(sqlite_template, tmp_path / "bot.db"), previews)


async def seen(app: Phone) -> dict[str, object]:
    return await app.page.evaluate(SEEN)


async def back(app: Phone) -> dict[str, object]:
    """Telegram's back button pressed (the client calls the page's handler)."""
    await app.page.evaluate("window.__back()")
    return await seen(app)


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


async def test_the_back_button_walks_back_the_way_the_person_came_and_swipes_wait_for_the_finger(
        bot, telegram, browser, settings) -> None:
    chat = private_chat(ALICE)
    telegram.user_sends(chat, ALICE, photo=samples.jpeg(320, 240), caption="/colorize")
    await wait_media(telegram, chat.id)
    ref = await sent_photo(telegram, ALICE, 400, 300)
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
