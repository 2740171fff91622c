"""The Mini App's page in headless Chromium, against the running bot: a phone's finger paints a mask, drags a
frame, taps a style, shares a result; what reaches the bot is checked in its jobs, its stored mask and the
sandbox's result. Screenshots of every screen, light and dark, English and Arabic, are written for a look."""

from __future__ import annotations

import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from PIL import Image, ImageChops, ImageDraw
from sqlalchemy import select

from bot.chats.conversations import Conversations
from bot.chats.stored_inputs import StoredInputs
from bot.config import Settings
from bot.store import JobRecord, JobRepository, create_engine, session_factory
from bot.store.models import jobs_table
from tests.e2e.conftest import ALICE, size_of
from tests.e2e.helpers import wait_media
from tests.e2e.miniapp import (
    SCREENS,
    app_settings_with_a_preview,
    open_app,
    page_errors,
    press_main,
    screenshots_dir,
    show,
    wait_status,
)
from tests.fakes import samples
from tests.fakes.telegram_models import SentMessage, User, private_chat
from tests.harness.browser import Phone

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    return app_settings_with_a_preview(tmp_path, telegram, sandbox, sqlite_template)


async def stored_jobs(settings: Settings) -> list[JobRecord]:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            ids = list((await session.execute(select(jobs_table.c.id).order_by(jobs_table.c.id))).scalars())
            return [job for job_id in ids if (job := await JobRepository(session).get(job_id)) is not None]
    finally:
        await engine.dispose()


async def wait_jobs(settings: Settings, app: Phone, count: int) -> list[JobRecord]:
    """The stored jobs once there are `count` (the page says it is done first)."""
    status = await wait_status(app)
    jobs = await stored_jobs(settings)
    assert len(jobs) == count, status
    return jobs


async def stored_mask(settings: Settings, reference: str) -> bytes:
    engine = create_engine(settings.database_url)
    try:
        data = await StoredInputs(Conversations(session_factory(engine))).load(reference)
    finally:
        await engine.dispose()
    assert data is not None
    return data


async def rect(app: Phone, selector: str) -> dict[str, float]:
    """Where an element is in the viewport."""
    return await app.page.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                                   ".getBoundingClientRect(); return {left: r.left, top: r.top, width: r.width, "
                                   "height: r.height}; })()")


async def center_of(app: Phone, selector: str) -> tuple[float, float]:
    box = await rect(app, selector)
    return box["left"] + box["width"] / 2, box["top"] + box["height"] / 2


async def tap(app: Phone, selector: str) -> None:
    # a click where the finger lifts (Chromium's touch emulation makes no click of a tap after a drag)
    await app.page.locator(selector).first.click()


def along(start: tuple[float, float], end: tuple[float, float], steps: int = 12) -> list[tuple[float, float]]:
    return [(start[0] + (end[0] - start[0]) * i / steps, start[1] + (end[1] - start[1]) * i / steps)
            for i in range(steps + 1)]


def capsule(size: tuple[int, int], start: tuple[float, float], end: tuple[float, float], radius: float) -> Image.Image:
    """White where a round-capped stroke of `radius` between two points covers, black elsewhere."""
    image = Image.new("L", size, 0)
    draw = ImageDraw.Draw(image)
    draw.line([start, end], fill=255, width=max(1, round(2 * radius)))
    for x, y in (start, end):
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=255)
    return image


async def sent_photo(telegram, user: User, width: int, height: int, photo: bytes | None = None) -> str:
    """`user` sends a photo to the bot (`photo`, else a sample of this size): the reference the Mini App buttons
    under it carry."""
    chat = private_chat(user)
    sent = telegram.user_sends(chat, user, photo=photo or samples.jpeg(width, height))

    def menu() -> SentMessage | None:  # the photo menu answering that photo
        return next((message for message in telegram.sent(chat.id)
                     if message.reply_to_message_id == sent["message_id"] and message.reply_markup), None)

    await telegram.wait_for(lambda: menu() is not None)
    url = next(button["web_app"]["url"] for row in menu().reply_markup["inline_keyboard"] for button in row
               if "web_app" in button)
    return parse_qs(urlsplit(url).query)["p"][0]


async def test_painting_strokes_queues_a_replace_whose_mask_is_white_exactly_where_the_finger_went(
        bot, telegram, browser, settings, alice_chat) -> None:
    ref = await sent_photo(telegram, ALICE, 640, 480)
    app = await open_app(browser, settings, telegram, ALICE, f"s=paint&p={ref}")
    await app.page.wait_for_function("() => document.getElementById('paint-canvas').width === 640")
    canvas = await rect(app, "#paint-canvas")
    scale = 640 / canvas["width"]  # photo pixels per screen pixel
    start = (canvas["left"] + 40, canvas["top"] + 60)
    end = (canvas["left"] + 220, canvas["top"] + 140)
    await app.touch_drag(along(start, end))
    dot = (canvas["left"] + 280, canvas["top"] + 200)
    await app.touch_drag([dot])  # a tap paints a dot
    # the main button is inactive until there is paint and a description
    assert await app.page.evaluate("Telegram.WebApp.MainButton.isActive") is False
    await app.page.fill("#paint-prompt", "a red balloon")
    assert await app.page.evaluate("Telegram.WebApp.MainButton.isActive") is True
    assert await app.page.evaluate("Telegram.WebApp.MainButton.text") == "Replace · \u20681 credit\u2069"
    assert await press_main(app) == "main"
    [job] = await wait_jobs(settings, app, 1)
    assert (job.operation, job.args, job.chat_id) == ("replace", {"prompt": "a red balloon"}, ALICE.id)
    mask = Image.open(io.BytesIO(await stored_mask(settings, job.inputs[1]))).convert("L")
    assert mask.size == (640, 480)
    radius = 36 / 2 * scale  # the brush slider's default, in screen pixels

    def photo_point(point: tuple[float, float]) -> tuple[float, float]:
        return ((point[0] - canvas["left"]) * scale, (point[1] - canvas["top"]) * scale)

    def painted(grow: float) -> Image.Image:
        line = capsule(mask.size, photo_point(start), photo_point(end), radius + grow)
        return ImageChops.lighter(line, capsule(mask.size, photo_point(dot), photo_point(dot), radius + grow))

    # white inside the strokes (2 px in from their edge), black outside them (2 px out); only the edge may blend
    assert ImageChops.subtract(painted(-2), mask.point(lambda v: 255 if v > 127 else 0)).getbbox() is None
    assert ImageChops.subtract(mask.point(lambda v: 255 if v > 127 else 0), painted(2)).getbbox() is None
    # and the sandbox painted the result where the mask is white: the photo's size comes back
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (640, 480)
    assert page_errors(app) == []


async def test_two_fingers_zoom_the_photo_and_paint_nothing(bot, telegram, browser, settings) -> None:
    ref = await sent_photo(telegram, ALICE, 640, 480)
    app = await open_app(browser, settings, telegram, ALICE, f"s=paint&p={ref}")
    await app.page.wait_for_function("() => document.getElementById('paint-canvas').width === 640")
    before = await rect(app, "#paint-canvas")
    x, y = before["left"] + before["width"] / 2, before["top"] + before["height"] / 2
    await app.touch("touchStart", [(x - 30, y), (x + 30, y)])
    for spread in range(40, 100, 10):
        await app.touch("touchMove", [(x - spread, y), (x + spread, y)])
    await app.touch("touchEnd", [])
    after = await rect(app, "#paint-canvas")
    assert after["width"] / before["width"] == pytest.approx(3.0, rel=0.05)  # the fingers spread 60 → 180 px
    assert await app.page.evaluate("state.strokes.length") == 0
    # painting after the zoom lands where the finger is on the photo: the brush keeps its screen size
    await app.touch_drag([(x, y)])
    [stroke] = await app.page.evaluate("state.strokes")
    photo_x = (x - after["left"]) * 640 / after["width"]
    assert stroke["points"][0][0] == pytest.approx(photo_x, abs=1)
    assert stroke["size"] == pytest.approx(36 * 640 / after["width"], rel=0.01)
    assert page_errors(app) == []


async def test_dragging_the_frame_queues_the_paddings_shown(bot, telegram, browser, settings, alice_chat) -> None:
    ref = await sent_photo(telegram, ALICE, 400, 300)
    app = await open_app(browser, settings, telegram, ALICE, f"s=frame&p={ref}")
    await tap(app, "[data-ratio='16:9']")
    assert await app.page.evaluate("document.getElementById('side-left').textContent") == "\u2066+67\u2069 px"
    assert await app.page.evaluate("document.getElementById('side-right').textContent") == "\u2066+67\u2069 px"

    async def drag(edge: str, dx: float, dy: float) -> int:
        """Drag an edge's handle; the padding it should give, from the scale the drag began at."""
        pads = await app.page.evaluate("state.pads")
        scale = (await rect(app, "#frame-photo"))["width"] / 400  # screen pixels per photo pixel
        x, y = await center_of(app, f".handle[data-edge='{edge}']")
        await app.touch_drag(along((x, y), (x + dx, y + dy), 8))
        return round(pads[edge] + abs(dx or dy) / scale)

    right = await drag("right", 50, 0)
    bottom = await drag("bottom", 0, 60)
    assert await app.page.evaluate("state.ratio") == "free"
    assert await app.page.evaluate("document.getElementById('side-right').textContent") == f"\u2066+{right}\u2069 px"
    assert await press_main(app) == "main"
    [job] = await wait_jobs(settings, app, 1)
    assert (job.operation, job.args) == ("expand", {"left": 67, "top": 0, "right": right, "bottom": bottom})
    [result] = await wait_media(telegram, alice_chat.id)  # the sandbox expands by the paddings
    assert size_of(result.media) == (400 + 67 + right, 300 + bottom)
    assert page_errors(app) == []


async def test_in_arabic_the_photos_left_side_is_still_shown_on_the_left(bot, telegram, browser, settings) -> None:
    person = User(ALICE.id, "Alice", language_code="ar")
    ref = await sent_photo(telegram, person, 400, 300)
    app = await open_app(browser, settings, telegram, person, f"s=frame&p={ref}")
    assert await app.page.evaluate("document.documentElement.dir") == "rtl"
    left, right = [await rect(app, f"#sides div:has(#side-{side})") for side in ("left", "right")]
    assert left["left"] + left["width"] <= right["left"]  # the photo's sides as the photo has them, not mirrored with the text
    # each box still reads right to left
    assert await app.page.evaluate("getComputedStyle(document.querySelector('#sides div')).direction") == "rtl"
    assert page_errors(app) == []


async def test_a_style_tap_queues_that_style_on_the_photo(bot, telegram, browser, settings) -> None:
    ref = await sent_photo(telegram, ALICE, 320, 240)
    app = await open_app(browser, settings, telegram, ALICE, f"s=styles&p={ref}")
    await app.page.wait_for_selector(".tile[data-operation='art'][data-style='oil']")
    await app.page.wait_for_function("() => document.querySelector(\".tile[data-style='oil'] img\").naturalWidth > 0")
    assert await app.page.evaluate("document.querySelectorAll('.tile img').length") == 1
    await tap(app, ".tile[data-operation='art'][data-style='oil']")
    [art] = await wait_jobs(settings, app, 1)
    await tap(app, "#keep-editing")
    await tap(app, ".gallery .counts button[data-count='2']")
    await tap(app, ".tile[data-operation='headshot'][data-style='business']")
    # the confirmation again (Keep editing hid the first): the tile being enabled was true before the popup answered
    await app.page.wait_for_function("() => !document.getElementById('done').hidden")
    jobs = await stored_jobs(settings)
    assert [(job.operation, job.args) for job in jobs] == [
        ("art", {"style": "oil", "prompt": ""}), ("headshot", {"style": "business", "count": 2})]
    assert art.inputs == [ref.split(".")[1]] and jobs[1].credits == 2
    # each choice that costs credits was confirmed in Telegram's popup first
    assert len(await app.page.evaluate("window.__popups")) == 2
    assert page_errors(app) == []


async def test_share_prepares_the_result_and_hands_its_id_to_telegram(
        bot, telegram, browser, settings, alice_chat) -> None:
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/colorize")
    await wait_media(telegram, alice_chat.id)
    app = await open_app(browser, settings, telegram, ALICE, "s=results")
    await app.page.wait_for_function("() => document.querySelector('#grid button img') && "
                        "document.querySelector('#grid button img').src.startsWith('blob:')")
    await tap(app, "#grid button")
    await app.page.wait_for_selector("#viewer-actions .share")
    await tap(app, "#viewer-actions .share")
    shared = await (await app.page.wait_for_function("() => window.__shared.length && window.__shared")).json_value()
    [prepared] = telegram.prepared_messages.for_user(ALICE.id)
    assert shared == [prepared.id] and prepared.result["type"] == "photo"
    assert page_errors(app) == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "ar"])
async def test_every_screen_renders_in_both_themes_and_directions(
        bot, telegram, browser, settings, scheme: str, language: str) -> None:
    person = User(ALICE.id, "Alice", username="alice", language_code=language)
    chat = private_chat(person)
    telegram.user_sends(chat, person, photo=samples.jpeg(480, 360), caption="/colorize")
    await wait_media(telegram, chat.id)
    ref = await sent_photo(telegram, person, 480, 360)
    folder = screenshots_dir()
    print(f"\nMini App screenshots: {folder}")
    # one page load, screen to screen by the tabs, as a person goes
    app = await open_app(browser, settings, telegram, person, f"s={SCREENS[0]}&p={ref}", scheme=scheme)
    for screen in SCREENS:
        await show(app, screen)
        assert await app.page.evaluate("document.documentElement.dir") == ("rtl" if language == "ar" else "ltr")
        if screen == "paint":
            canvas = await rect(app, "#paint-canvas")
            await app.touch_drag(along((canvas["left"] + 60, canvas["top"] + 80),
                                        (canvas["left"] + 200, canvas["top"] + 120)))
        if screen == "frame":
            await tap(app, "[data-ratio='1:1']")
        if screen == "results":
            await app.page.wait_for_function("() => document.querySelector('#grid button img') && "
                                "document.querySelector('#grid button img').src.startsWith('blob:')")
        # nothing wider than the phone: one hand, no sideways scrolling
        assert await app.page.evaluate("document.documentElement.scrollWidth") <= 360
        await app.page.screenshot(path=folder / f"{screen}-{scheme}-{language}.png")
        if screen == "results":
            await tap(app, "#grid button")
            await app.page.wait_for_function("() => document.getElementById('viewer-photo').src.startsWith('blob:')")
            await app.page.screenshot(path=folder / f"result-{scheme}-{language}.png")
    assert page_errors(app) == []
    await app.page.context.close()
