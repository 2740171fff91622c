"""Making a live photo of a delivered video, against the fake Bot API: what Telegram says of the file decides."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import InputFile

from bot.sandbox import clips
from bot.tg.live_photos import LivePhotoMaker, TooBig
from bot.videos import LIVE_PHOTO_MAX_BYTES
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.fakes.telegram_models import User

ALICE = User(2002, "Alice")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.user_sends(private_chat(ALICE), ALICE, text="/start")
        yield fake


async def test_a_video_telegram_says_is_over_10_mb_is_never_downloaded(fake: FakeTelegram, bot: telegram.Bot) -> None:
    """The message may leave the size out (or say it wrong): getFile's size decides before any download."""
    heavy = clips.encode(clips.scene("rain", "kling-v3", (64, 48)), (64, 48), 1, filler=LIVE_PHOTO_MAX_BYTES)
    sent = await bot.send_video(ALICE.id, InputFile(heavy, filename="clip.mp4"))
    with pytest.raises(TooBig):
        await LivePhotoMaker().make(bot, sent)
    assert fake.file_downloads == 0
    assert not [call for call in fake.calls if call.method == "sendLivePhoto"]


async def test_a_small_video_becomes_a_live_photo_replying_to_it(fake: FakeTelegram, bot: telegram.Bot) -> None:
    clip = clips.encode(clips.scene("rain", "kling-v3", (64, 48)), (64, 48), 1)
    sent = await bot.send_video(ALICE.id, InputFile(clip, filename="clip.mp4"), caption="rain")
    live = await LivePhotoMaker().make(bot, sent)
    assert live.live_photo is not None and live.caption == "rain"
    assert live.reply_to_message.message_id == sent.message_id
    assert fake.file_downloads == 1
