"""The fake Bot API's sendVideo and sendLivePhoto, driven by python-telegram-bot: what Telegram documents, refused as it refuses."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest
import telegram
from PIL import Image
from telegram import InputFile
from telegram.error import BadRequest, NetworkError, RetryAfter

from bot.sandbox import clips
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.fakes.telegram_models import User
from tests.integration.conftest import ptb_bot

ALICE = User(2001, "Alice")
CLIP = clips.encode(clips.scene("rain", "kling-v3", (160, 120)), (160, 120), 1)


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.user_sends(private_chat(ALICE), ALICE, text="/start")
        yield fake


def jpeg(width: int, height: int, fmt: str = "JPEG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height)).save(buffer, fmt)
    return buffer.getvalue()


async def test_a_video_with_its_size_length_and_thumbnail_is_kept_as_sent(fake: FakeTelegram,
                                                                          bot: telegram.Bot) -> None:
    message = await bot.send_video(ALICE.id, InputFile(CLIP, filename="clip.mp4"), width=160, height=120,
                                   duration=1, thumbnail=InputFile(jpeg(160, 120), filename="t.jpg"),
                                   supports_streaming=True, caption="rain")
    assert (message.video.width, message.video.height, message.video.duration) == (160, 120, 1)
    assert message.video.thumbnail.width == 160 and message.caption == "rain"
    [sent] = fake.sent(ALICE.id)
    assert sent.media_kind == "video" and sent.media == CLIP
    again = await bot.send_video(ALICE.id, message.video.file_id)  # a file id sends the same video again
    assert again.video.file_id == message.video.file_id


@pytest.mark.parametrize(("thumbnail", "reason"), [
    (jpeg(321, 100), "must not exceed 320"),
    (jpeg(100, 100, "PNG"), "must be a jpeg"),
    (jpeg(100, 100) + bytes(200 * 1024), "less than 200 kb"),  # bytes after the picture still count
    (b"not a picture", "can't be decoded"),
], ids=["wide", "png", "heavy", "garbage"])
async def test_a_thumbnail_outside_telegrams_rules_is_refused(bot: telegram.Bot, thumbnail: bytes,
                                                              reason: str) -> None:
    with pytest.raises(BadRequest, match=f"(?i){reason}"):
        await bot.send_video(ALICE.id, InputFile(CLIP, filename="clip.mp4"),
                             thumbnail=InputFile(thumbnail, filename="t.jpg"))


async def test_a_thumbnail_cannot_be_reused_by_file_id(fake: FakeTelegram, bot: telegram.Bot) -> None:
    photo = await bot.send_photo(ALICE.id, jpeg(100, 100))
    with pytest.raises(BadRequest, match="can't be reused"):
        await bot.send_video(ALICE.id, InputFile(CLIP, filename="clip.mp4"), thumbnail=photo.photo[-1].file_id)


async def test_an_upload_over_50_mb_is_refused_whole(fake: FakeTelegram, bot: telegram.Bot) -> None:
    padded = CLIP + (52 * 1024 * 1024).to_bytes(4, "big") + b"free" + bytes(52 * 1024 * 1024 - 8)
    with pytest.raises((BadRequest, NetworkError), match="(?i)too large"):
        await bot.send_video(ALICE.id, InputFile(padded, filename="big.mp4"))
    assert fake.sent(ALICE.id) == []


async def test_a_live_photo_is_kept_with_its_video_and_static_photo(fake: FakeTelegram, bot: telegram.Bot) -> None:
    message = await bot.send_live_photo(ALICE.id, InputFile(CLIP, filename="live.mp4"), jpeg(160, 120),
                                        caption="rain")
    assert message.live_photo is not None and message.live_photo.duration.total_seconds() == 1
    assert (message.live_photo.width, message.live_photo.height) == (160, 120)
    # older clients see the photo alone: Telegram sets both fields
    assert message.photo and message.photo[-1].file_id == message.live_photo.photo[-1].file_id
    [sent] = fake.sent(ALICE.id)
    assert sent.media_kind == "live_photo" and sent.media == CLIP and sent.caption == "rain"


@pytest.mark.parametrize(("seconds", "filler", "reason"), [
    (11, 0, "no longer than 10 seconds"),
    (1, 10 * 1024 * 1024, "must not exceed 10 mb"),
], ids=["long", "heavy"])
async def test_a_live_photo_past_its_limits_is_refused(fake: FakeTelegram, bot: telegram.Bot, seconds: int,
                                                       filler: int, reason: str) -> None:
    video = clips.encode(clips.scene("rain", "kling-v3", (64, 48)), (64, 48), seconds, filler=filler)
    with pytest.raises(BadRequest, match=f"(?i){reason}"):
        await bot.send_live_photo(ALICE.id, InputFile(video, filename="live.mp4"), jpeg(64, 48))
    assert fake.sent(ALICE.id) == []


async def test_a_live_photo_is_never_taken_by_url_nor_from_a_videos_file_id(fake: FakeTelegram,
                                                                            bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match="(?i)by a url"):
        await bot.send_live_photo(ALICE.id, "https://example.com/live.mp4", jpeg(160, 120))
    video = await bot.send_video(ALICE.id, InputFile(CLIP, filename="clip.mp4"))
    with pytest.raises(BadRequest, match="(?i)another type"):
        await bot.send_live_photo(ALICE.id, video.video.file_id, jpeg(160, 120))
    with pytest.raises(BadRequest, match="(?i)no live_photo"):
        await bot.send_live_photo(ALICE.id, None, jpeg(160, 120))


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_a_live_photo_counts_toward_the_chats_flood_limit() -> None:
    fake = FakeTelegram(rate_limits=True, clock=lambda: 1000.0)  # time stands still: nothing refills
    await fake.start()
    try:
        fake.user_sends(private_chat(ALICE), ALICE, text="/start")
        async with ptb_bot(fake) as bot:
            for _ in range(3):  # a private chat's burst
                await bot.send_message(ALICE.id, "ok")
            with pytest.raises(RetryAfter):
                await bot.send_live_photo(ALICE.id, InputFile(CLIP, filename="live.mp4"), jpeg(160, 120))
        assert [sent.text for sent in fake.sent(ALICE.id)] == ["ok"] * 3
    finally:
        await fake.stop()
