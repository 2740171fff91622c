"""The fake Bot API's sendVideo, driven by python-telegram-bot: what Telegram documents, refused as it refuses."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest
import telegram
from PIL import Image
from telegram import InputFile
from telegram.error import BadRequest, NetworkError

from bot.sandbox import clips
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.fakes.telegram_models import User

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
