"""The Mini App used on a phone as a person would (360×740, touch, light and dark, English and Arabic): each
action ends in a confirmation on screen and cannot be sent twice, the page is never blank when the bot cannot
be reached, My results refreshes, every control is big enough for a finger and every text readable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.config import Settings
from tests.e2e.conftest import ALICE
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
from tests.e2e.test_mini_app_page import sent_photo, stored_jobs
from tests.fakes import samples
from tests.fakes.telegram_models import User, private_chat

pytestmark = pytest.mark.timeout(180)
#: both themes and both directions, in two runs
LOOKS = [("light", "en"), ("dark", "ar")]


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    return app_settings_with_a_preview(tmp_path, telegram, sandbox, sqlite_template)


def person(language: str) -> User:
    return User(ALICE.id, "Alice", username="alice", language_code=language)


@pytest.mark.parametrize(("scheme", "language"), LOOKS)
async def test_a_second_tap_after_success_queues_no_second_job(
        bot, telegram, browser, settings, scheme: str, language: str) -> None:
    user = person(language)
    ref = await sent_photo(telegram, user, 400, 300)
    app = await open_app(browser, settings, telegram, user, f"s=frame&p={ref}", scheme=scheme)
    await app.page.locator("[data-ratio='16:9']").click()
    await press_main(app)
    await wait_status(app)
    assert len(await stored_jobs(settings)) == 1
    await press_main(app)  # the same tap again, as an impatient finger does
    await asyncio.sleep(1.5)
    assert len(await stored_jobs(settings)) == 1
    assert page_errors(app) == []


@pytest.mark.parametrize(("scheme", "language"), LOOKS)
async def test_the_confirmation_is_inside_the_viewport_after_a_style_and_after_expand(
        bot, telegram, browser, settings, scheme: str, language: str) -> None:
    user = person(language)
    ref = await sent_photo(telegram, user, 400, 300)
    app = await open_app(browser, settings, telegram, user, f"s=styles&p={ref}", scheme=scheme)
    tile = app.page.locator(".tile[data-operation='art'][data-style='oil']")
    await tile.scroll_into_view_if_needed()
    await tile.click()
    shown = await wait_status(app)
    assert 0 <= shown["top"] and shown["bottom"] <= 740, shown
    app = await open_app(browser, settings, telegram, user, f"s=frame&p={ref}", scheme=scheme)
    await app.page.locator("[data-ratio='1:1']").click()
    await press_main(app)
    shown = await wait_status(app)
    assert 0 <= shown["top"] and shown["bottom"] <= 740, shown
    assert len(await stored_jobs(settings)) == 2
    await app.page.screenshot(path=screenshots_dir() / f"done-{scheme}-{language}.png")


@pytest.mark.parametrize(("scheme", "language"), LOOKS)
async def test_a_bot_out_of_reach_at_start_shows_a_readable_page_and_retry_brings_it_back(
        bot, telegram, browser, settings, scheme: str, language: str) -> None:
    user = person(language)
    app = await open_app(browser, settings, telegram, user, "s=results", scheme=scheme, ready=False)
    await app.page.context.route("**/app/api/**", lambda route: route.abort("internetdisconnected"))
    await app.page.reload()
    status = await wait_status(app)
    assert status["text"]
    assert await app.page.evaluate("document.documentElement.dir") == ("rtl" if language == "ar" else "ltr")
    tabs = await app.page.evaluate("[...document.querySelectorAll('.tab')].map((tab) => tab.textContent.trim())")
    assert all(tabs), tabs
    current = await app.page.evaluate("[...document.querySelectorAll('.tab[aria-current=page]')].map((tab) => "
                                      "tab.dataset.screen)")
    assert current == ["results"]  # the tabs still say where the person is
    await app.page.screenshot(path=screenshots_dir() / f"offline-{scheme}-{language}.png")
    await app.page.context.unroute("**/app/api/**")
    await app.page.locator("[data-action='retry']").click()
    await app.page.wait_for_function("() => document.body.dataset.ready === 'true'")


async def test_an_expired_session_offers_to_reopen_the_app(bot, telegram, browser, settings) -> None:
    app = await open_app(browser, settings, telegram, person("ar"), "s=results", ready=False, token="1:not-the-bots")
    status = await wait_status(app)
    assert status["text"] and await app.page.evaluate("document.documentElement.dir") == "rtl"
    await app.page.locator("[data-action='reopen']").click()
    assert await app.page.evaluate("window.__closed") is True


@pytest.mark.parametrize(("scheme", "language"), LOOKS)
async def test_my_results_shows_a_result_delivered_while_it_is_open(
        bot, telegram, browser, settings, scheme: str, language: str) -> None:
    user = person(language)
    chat = private_chat(user)
    telegram.user_sends(chat, user, photo=samples.jpeg(160, 120), caption="/colorize")
    await wait_media(telegram, chat.id)
    app = await open_app(browser, settings, telegram, user, "s=results", scheme=scheme)
    await app.page.wait_for_function("() => document.querySelectorAll('#grid [data-ref]').length === 1")
    telegram.user_sends(chat, user, photo=samples.jpeg(160, 120), caption="/colorize")
    await wait_media(telegram, chat.id, count=2)
    await app.page.wait_for_function("() => document.querySelectorAll('#grid [data-ref]').length === 2",
                                     timeout=20_000)
    assert page_errors(app) == []


HIT_AREAS = """() => [...document.querySelectorAll("button, input, select, a[href], .handle, [role=button]")]
  .filter((element) => element.checkVisibility() && !element.closest("[hidden]"))
  .map((element) => ({name: element.id || element.dataset.text || element.dataset.edge || element.className
                       || element.tagName, ...element.getBoundingClientRect().toJSON()}))
  .filter((box) => box.width > 0 && (box.width < 44 || box.height < 44))
  .map((box) => `${box.name} ${Math.round(box.width)}×${Math.round(box.height)}`)"""

#: every visible text's contrast with what is behind it (WCAG 2 relative luminance), the ones under 4.5:1
CONTRAST = """() => {
  const parse = (colour) => {
    let m = colour.match(/rgba?\\(([^)]+)\\)/);
    if (m) { const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p[3] ?? 1]; }
    m = colour.match(/color\\(srgb ([^)]+)\\)/);
    if (m) { const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(Number);
             return [p[0] * 255, p[1] * 255, p[2] * 255, p[3] ?? 1]; }
    return [0, 0, 0, 0];
  };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const luminance = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                             return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const behind = (element) => {
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((under, layer) => over(layer, under), [255, 255, 255, 1]);
  };
  const low = [];
  for (const element of document.querySelectorAll("body *")) {
    if (![...element.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    if (!element.checkVisibility() || element.closest("[hidden], :disabled, [aria-hidden=true]")) continue;
    const style = getComputedStyle(element);
    if (style.visibility === "hidden") continue;
    const under = behind(element), text = over(parse(style.color), under);
    const [a, b] = [luminance(text), luminance(under)];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(`${element.id || element.className || element.tagName} "${element.textContent.trim().slice(0, 24)}" ${ratio.toFixed(2)}`);
  }
  return low;
}"""


async def _each_screen(browser, settings, telegram, check: str, looks: list[tuple[str, str]]) -> list[str]:
    """What `check` finds on every screen of every look (a photo chosen, one result delivered), going from
    screen to screen by the tabs, as a person does."""
    found = []
    for scheme, language in looks:
        user = person(language)
        chat = private_chat(user)
        telegram.user_sends(chat, user, photo=samples.jpeg(480, 360), caption="/colorize")
        ref = await sent_photo(telegram, user, 480, 360)
        await wait_media(telegram, chat.id)
        app = await open_app(browser, settings, telegram, user, f"s={SCREENS[0]}&p={ref}", scheme=scheme)
        for screen in SCREENS:
            await show(app, screen)
            found += [f"{screen} {scheme} {language}: {item}" for item in await app.page.evaluate(check)]
        await app.page.context.close()
    return found


async def test_every_control_is_at_least_44_px_both_ways(bot, telegram, browser, settings) -> None:
    assert await _each_screen(browser, settings, telegram, HIT_AREAS, [("light", "en"), ("dark", "ar")]) == []


async def test_every_text_has_a_contrast_of_at_least_4_5_to_1(bot, telegram, browser, settings) -> None:
    looks = [("light", "en"), ("light", "ar"), ("dark", "en"), ("dark", "ar")]
    assert await _each_screen(browser, settings, telegram, CONTRAST, looks) == []
