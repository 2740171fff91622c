"""Buying credits in the Mini App, end to end: out of credits, a style tap offers the packs; a pack opens Telegram's
payment sheet (openInvoice) on a link the bot made; the payment goes through the fake Bot API to the bot's own
pre-checkout and receipt handlers, the header shows the new balance, and the same tap then queues the job; a
sheet closed without paying changes nothing."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from bot.config import Settings
from bot.previews import thumbnail
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import ALICE
from tests.e2e.miniapp import app_settings, open_app, page_errors, screenshots_dir, wait_status
from tests.e2e.test_mini_app_page import sent_photo, stored_jobs
from tests.e2e.test_payments import credits_of
from tests.fakes.telegram_models import User

pytestmark = pytest.mark.timeout(120)

#: Telegram's payment sheet as the page sees it: openInvoice keeps the link and the callback Telegram calls
#: when the sheet closes (the test pays through the fake Bot API meanwhile, as the person would in the sheet)
SHEET = """() => { window.Telegram.WebApp.openInvoice = (url, callback) => {
  window.__invoices.push(url); window.__sheetClosed = callback; }; }"""


def expected_only(app) -> list[str]:
    """The page's errors but the refusal it was meant to get (Chromium logs every 402 it loads)."""
    return [entry for entry in page_errors(app) if "402 (Payment Required)" not in entry]


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    previews = tmp_path / "previews"
    previews.mkdir()
    sample = resources.files("bot.operations").joinpath("preview-sample.jpg").read_bytes()
    (previews / "art-oil.jpg").write_bytes(thumbnail(sample))
    found = app_settings(telegram, sandbox, migrated_sqlite(sqlite_template, tmp_path / "bot.db"), previews)
    return found.model_copy(update={"credit_packs": "10:50,100:400", "free_credits_per_day": 0})


async def test_out_of_credits_a_pack_is_bought_in_place_and_the_tap_then_goes_through(
        bot, telegram, browser, settings) -> None:
    user = User(ALICE.id, "Alice", username="alice", language_code="ar")
    ref = await sent_photo(telegram, user, 400, 300)
    app = await open_app(browser, settings, telegram, user, f"s=styles&p={ref}", scheme="dark")
    header = await app.page.locator("#credits").text_content()
    tile = app.page.locator(".tile[data-operation='art'][data-style='oil']")
    await tile.click()
    refusal = await wait_status(app)
    assert 0 <= refusal["top"] and refusal["bottom"] <= 740, refusal
    await app.page.screenshot(path=screenshots_dir() / "buy-dark-ar.png")
    # the sheet closed without paying (the stub's sheet says "cancelled" at once): nothing changes, the offer stays
    await app.page.locator("[data-action='buy'][data-pack='100:400']").click()
    await app.page.wait_for_function("() => window.__invoices.length === 1")
    await app.page.wait_for_timeout(300)
    assert await app.page.locator("[data-action='buy']").count() == 2
    assert await credits_of(settings, ALICE.id) == 0 and await stored_jobs(settings) == []
    # and now paid
    await app.page.evaluate(SHEET)
    await app.page.locator("[data-action='buy'][data-pack='10:50']").click()
    await app.page.wait_for_function("() => window.__invoices.length === 2")
    link = (await app.page.evaluate("window.__invoices"))[-1]
    assert telegram.payments.links[link]["payload"] == "credits:10:50"
    # the person pays in Telegram's sheet: the bot's pre-checkout answer and its receipt handler credit them
    query_id = telegram.payments.user_pays_link(user, link)
    await telegram.wait_for(lambda: telegram.payments.answer_to(query_id) is not None)
    assert telegram.payments.answer_to(query_id)["ok"] is True
    await telegram.wait_for(lambda: len(telegram.payments.charges) == 1)
    for _ in range(50):
        if await credits_of(settings, ALICE.id) == 10:
            break
        await app.page.wait_for_timeout(100)
    assert await credits_of(settings, ALICE.id) == 10
    await app.page.evaluate("window.__sheetClosed('paid')")
    await app.page.wait_for_function(f"() => document.getElementById('credits').textContent !== {header!r}")
    assert "10" in await app.page.locator("#credits").text_content()
    assert (await wait_status(app))["text"]
    await tile.click()
    await app.page.wait_for_function("() => !document.getElementById('done').hidden")
    assert [job.operation for job in await stored_jobs(settings)] == ["art"]
    assert expected_only(app) == []
