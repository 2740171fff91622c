"""A video result in the Mini App, in headless Chromium against the running bot and the sandbox: its tile is a
video's (its poster under a play badge, named as a video) and its viewer offers what fits a video."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from bot.config import Settings
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import ALICE, POLL_TIME_SCALE
from tests.e2e.helpers import wait_media
from tests.e2e.miniapp import PUBLIC_URL, open_app, page_errors, screenshots_dir
from tests.e2e.test_videos import TYPICAL_SECONDS, buy, picture
from tests.harness import bot_settings, free_port, settings_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    """The Mini App on (an https PUBLIC_URL), the video models' usual time shortened for the sandbox."""
    catalogue = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8"))
    for model in catalogue["video"]["styles"].values():
        model["typical_seconds"] = TYPICAL_SECONDS
    styles = tmp_path / "styles.json"
    styles.write_text(json.dumps(catalogue), encoding="utf-8")
    previews = tmp_path / "previews"
    previews.mkdir()
    database = migrated_sqlite(sqlite_template, tmp_path / "bot.db")
    return settings_of(bot_settings(telegram, sandbox, database, http_port=free_port(), worker_id="e2e-worker",
                                    poll_time_scale=POLL_TIME_SCALE, public_url=PUBLIC_URL, previews_dir=previews,
                                    styles_file=styles))


async def test_a_delivered_video_is_a_video_tile_whose_viewer_offers_no_photo_actions(
        bot, telegram, browser, settings, alice_chat) -> None:
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(480, 320, (30, 90, 200)), caption="/animate seedance")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.media_kind == "video"
    app = await open_app(browser, settings, telegram, ALICE, "s=results")
    # the tile shows the video's poster (a picture copy of its thumbnail) under the play badge
    await app.page.wait_for_function("() => { const tile = document.querySelector('#grid button.video.loaded');"
                                     " return tile && tile.querySelector('img').src.startsWith('blob:'); }")
    tile = app.page.locator("#grid button.video")
    assert await tile.locator(".play").count() == 1
    assert (await tile.get_attribute("aria-label")).startswith("Video: ")
    await app.page.screenshot(path=screenshots_dir() / "results-video.png")
    await tile.click()
    await app.page.wait_for_selector("#viewer-actions .share")
    await app.page.wait_for_function("() => document.querySelector('#viewer-photo').src.startsWith('blob:')")
    actions = await app.page.locator("#viewer-actions button").all_inner_texts()
    assert actions == ["Share"]  # no Paint, Extend, Styles or one-tap photo follow-ups for a video
    await app.page.screenshot(path=screenshots_dir() / "viewer-video.png")
    await app.page.locator("#viewer-actions .share").click()
    shared = await (await app.page.wait_for_function("() => window.__shared.length && window.__shared")).json_value()
    [prepared] = telegram.prepared_messages.for_user(ALICE.id)
    assert shared == [prepared.id] and prepared.result["type"] == "video"
    assert page_errors(app) == []
