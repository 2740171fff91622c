"""A delivered video sent again as a live photo (Bot API 10.0 sendLivePhoto): its first frame and its motion.

Telegram takes a live photo's video only as an upload (or a live photo's own file id) of at most 10 seconds
and 10 MB, so the bot downloads the video it sent (getFile serves files up to 20 MB), makes the still from
its first frame in a thread, and uploads both. A few at a time in a process bound the memory (two files of
at most 10 MB each, getFile's own size checked before the download since a message may leave it out, and a
decoded frame of at most 4K); a second press on the same video while one is being made is told so rather
than doing the work twice.
"""

from __future__ import annotations

import asyncio

from telegram import Bot, InputFile, Message, ReplyParameters, Video

from bot.videos import LIVE_PHOTO_MAX_BYTES, fits_live_photo, still

#: live photos made at once in this process
AT_ONCE = 2


def seconds_of(video: Video) -> int:
    """A video's length in whole seconds, as the Bot API gives it (python-telegram-bot's attribute changes type)."""
    return int(video.to_dict().get("duration", 0))


def fits(video: Video) -> tuple[bool, bool]:
    """Whether the video is short enough and small enough for a live photo (a file of unknown size is tried:
    getFile tells its size before the download)."""
    return fits_live_photo(seconds_of(video), video.file_size or 0)


class TooBig(Exception):
    """The video turned out larger than a live photo may be, once Telegram said its size."""


class LivePhotoMaker:
    """Sends videos the bot delivered again as live photos, a few at a time, each video once at a time."""

    def __init__(self, at_once: int = AT_ONCE) -> None:
        self._slots = asyncio.Semaphore(at_once)
        self._making: set[tuple[int, int]] = set()

    def claim(self, message: Message) -> bool:
        """Mark this message's video as being made; False when it is already (a second press is told so)."""
        key = (message.chat_id, message.message_id)
        if key in self._making:
            return False
        self._making.add(key)
        return True

    def release(self, message: Message) -> None:
        """The claimed make is over, sent or not."""
        self._making.discard((message.chat_id, message.message_id))

    async def make(self, bot: Bot, message: Message) -> Message:
        """Send the video on `message` (claimed) as a live photo replying to it, with its caption; raises
        TelegramError, TooBig, or VideoRejected when the video has no frame to show still."""
        async with self._slots:
            file = await bot.get_file(message.video.file_id)
            # the message may not say the size (or say it wrong): getFile's is Telegram's own, and the bytes decide
            if (file.file_size or 0) > LIVE_PHOTO_MAX_BYTES:
                raise TooBig(file.file_size)
            video = bytes(await file.download_as_bytearray())
            if len(video) > LIVE_PHOTO_MAX_BYTES:
                raise TooBig(len(video))
            photo = await asyncio.to_thread(still, video)
            return await bot.send_live_photo(
                message.chat_id, InputFile(video, filename="live.mp4"), photo, caption=message.caption,
                caption_entities=message.caption_entities,
                reply_parameters=ReplyParameters(message_id=message.message_id, allow_sending_without_reply=True))
