"""The "As a live photo" button under an animated photo: the same video sent again as a live photo, free."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from telegram import CallbackQuery, Message
from telegram.constants import ChatAction
from telegram.error import BadRequest, RetryAfter, TelegramError

from bot.i18n import tr
from bot.store import JobRecord
from bot.tg import texts
from bot.tg.answers import answer
from bot.tg.context import CustomContext
from bot.tg.live_photos import TooBig, fits
from bot.tg.ratelimit import retry_seconds, waiting_out_429s
from bot.tg.replies import reply
from bot.videos import VideoRejected
from bot.waiting import ON_WAIT

log = logging.getLogger(__name__)

#: the longest a live photo waits, in all, on Telegram's 429s before the person is asked to press again
RETRY_AFTER_BUDGET_S = 60.0


async def send_as_live_photo(context: CustomContext, query: CallbackQuery, job: JobRecord, message: Message) -> None:
    """Answer the press, then send the video on `message` as a live photo, or say why it cannot be one."""
    lang = job.language
    if message.video is None or not job.inputs or not _offered(query.data, message):
        await answer(query, tr(lang, texts.FU_GONE), alert=True)
        return
    short, small = fits(message.video)
    if not short or not small:
        await answer(query, tr(lang, texts.LIVE_PHOTO_TOO_LONG if not short else texts.LIVE_PHOTO_TOO_BIG),
                     alert=True)
        return
    maker = context.bot_data.live_photos
    # claimed before anything is awaited: a second press (a double tap) is told it is on its way, never made twice
    if not maker.claim(message):
        await answer(query, tr(lang, texts.LIVE_PHOTO_ON_ITS_WAY))
        return
    try:
        await answer(query, tr(lang, texts.LIVE_PHOTO_ON_ITS_WAY))
        # a make waits for its turn, then downloads, decodes and uploads for seconds: meanwhile it lets go of the
        # update's handler slot and its chat's turn (bot.waiting), as a post waiting for its chat's limit does;
        # a crash now loses only a free live photo, pressed for again
        # (a webhook replica's update has no such hand-off: it keeps its turn, its lease renewed while it waits)
        on_wait = ON_WAIT.get()
        async with on_wait() if on_wait is not None else contextlib.nullcontext():
            await _make(context, job, message)
    finally:
        maker.release(message)


async def _make(context: CustomContext, job: JobRecord, message: Message) -> None:
    """Make the live photo, or tell the chat why not; Telegram's long 429s are waited out, up to a budget."""
    lang = job.language
    with contextlib.suppress(TelegramError):  # only a courtesy: it must not cost the live photo itself
        await context.bot.send_chat_action(message.chat_id, ChatAction.UPLOAD_PHOTO)
    try:
        # Telegram's 429s are waited out here, holding nothing but the claim (a press meanwhile hears it is on
        # its way), then the live photo is made again
        await waiting_out_429s(lambda: context.bot_data.live_photos.make(context.bot, message),
                               budget=RETRY_AFTER_BUDGET_S, what=f"job {job.id}: live photo")
    except RetryAfter as error:
        log.info("job %s: live photo not sent: %s", job.id, error)
        if (wait := retry_seconds(error)) <= RETRY_AFTER_BUDGET_S:
            await asyncio.sleep(wait)  # so the chat may be written to again, to ask for a press later
        await reply(message, tr(lang, texts.LIVE_PHOTO_FAILED))
    except TooBig as error:
        log.info("job %s: no live photo: the video has %s bytes", job.id, error)
        await reply(message, tr(lang, texts.LIVE_PHOTO_TOO_BIG))
    except (BadRequest, VideoRejected) as error:  # this video will not become one: pressing again cannot help
        log.info("job %s: no live photo: %s", job.id, error)
        await reply(message, tr(lang, texts.LIVE_PHOTO_REFUSED))
    except TelegramError as error:
        log.info("job %s: live photo not sent: %s", job.id, error)
        await reply(message, tr(lang, texts.LIVE_PHOTO_FAILED))


def _offered(data: str | None, message: Message) -> bool:
    """Whether the message carries the pressed button: a client can send any data, naming another job's id on
    this video (one the presser may use, on a video they may not), and only the bot puts buttons on a message."""
    markup = message.reply_markup
    rows = markup.inline_keyboard if markup is not None else ()
    return any(button.callback_data == data for row in rows for button in row)
