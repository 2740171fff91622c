"""Delivery of inline-mode jobs: the result edits the inline message the person sent with "Generate".

Telegram takes no upload when an inline message is edited: the media must be a file id or a URL it can
fetch. The picture goes first to the person's private chat with the bot, which gives them a copy there
and the bot a file id; a person who never started the bot cannot be written to, so then the bot's own
signed media link (bot.media, under PUBLIC_URL) is the URL. Without either, the message says to open
the bot, and the job fails as undelivered (nothing is charged). Several pictures (a guest-mode headshot)
go to that chat as an album; the inline message shows the first, with a button to the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, InputMediaPhoto
from telegram.error import BadRequest, Forbidden, TelegramError

from bot.i18n import N_, ntr, tr
from bot.jobs.notifier import Delivered, DeliveryError, Failure, FailureKind, ResultFile
from bot.media import MediaLinks, MediaTooLarge
from bot.operations.catalogue import Operation
from bot.store import JobRecord
from bot.tg import texts
from bot.tg.keyboards import OPEN_BOT, open_bot_url

log = logging.getLogger(__name__)

#: the delivery error of a result with neither a file id nor a link; its failure says to open the bot
NOT_STARTED = "the person never started the bot and PUBLIC_URL is not set"
START_BOT = N_("The picture is ready, but I can only show it here once you have opened a chat with me (Start).")
#: an inline message holds one picture; the rest of an album goes to the person's chat with the bot only
ALBUM_MAX = 10


def inline_keyboard(job: JobRecord, username: str | None, pictures: int = 1) -> InlineKeyboardMarkup:
    """The buttons of a delivered inline picture: draw it again (a description's, inline in the same chat), and
    open the bot (saying how many pictures wait there when there are several)."""
    row = []
    if not job.inputs:  # an edited photo cannot be asked for again by typing
        row.append(InlineKeyboardButton(tr(job.language, texts.FU_AGAIN),
                                        switch_inline_query_current_chat=str(job.args.get("prompt", ""))[:200]))
    label = (ntr(job.language, "All {count} picture in the bot", "All {count} pictures in the bot", pictures)
             if pictures > 1 else tr(job.language, OPEN_BOT))
    row.append(InlineKeyboardButton(label, url=open_bot_url(username)))
    return InlineKeyboardMarkup([row])


class InlineDelivery:
    """Edits inline messages: progress in their text, the result as their media, a failure as text."""

    def __init__(self, bot: Bot, media: MediaLinks | None = None) -> None:
        self._bot = bot
        self._media = media

    async def deliver(self, job: JobRecord, operation: Operation, results: Sequence[ResultFile],
                      caption: str) -> Delivered:
        """Put the first result into the inline message (it holds one picture)."""
        message_ids, files, media = await self._file_or_link(job, results[:ALBUM_MAX], caption)
        try:
            await self._bot.edit_message_media(InputMediaPhoto(media, caption=caption),
                                               inline_message_id=job.inline_message_id,
                                               reply_markup=inline_keyboard(
                                                   job, self._bot.username, len(results) if message_ids else 1))
        except (Forbidden, BadRequest) as error:
            if not message_ids:
                raise DeliveryError(f"inline message not edited: {error.message}") from error
            # gone or too old to edit: the picture reached the person's chat with the bot all the same
            log.info("job %s: inline message not edited (%s); delivered in the chat", job.id, error.message)
        except TelegramError as error:  # a network error, or Telegram still asking to wait after retries
            raise DeliveryError(f"inline message not edited: {error}", retry_after=10.0) from error
        return Delivered(message_ids, files)

    async def _file_or_link(self, job: JobRecord, results: Sequence[ResultFile],
                            caption: str) -> tuple[list[int], list[dict[str, str]], str]:
        """A file id of the first picture (all sent to the person's chat with the bot) or a signed link Telegram
        can fetch."""
        result = results[0]
        try:
            if len(results) > 1:
                sent = list(await self._bot.send_media_group(job.chat_id, [
                    InputMediaPhoto(each.data, caption=caption if index == 0 else None)
                    for index, each in enumerate(results)]))
            else:
                sent = [await self._bot.send_photo(job.chat_id, result.data, caption=caption)]
            files = [{"id": message.photo[-1].file_id, "kind": "photo"} for message in sent if message.photo]
            return [message.message_id for message in sent], files, files[0]["id"]
        except (Forbidden, BadRequest) as error:  # never started the bot, or blocked it
            log.info("job %s: result not sent to the person's chat (%s); using a media link", job.id, error.message)
        except TelegramError as error:
            raise DeliveryError(str(error), retry_after=10.0) from error
        if self._media is None:
            raise DeliveryError(NOT_STARTED)
        try:
            return [], [], self._media.link(result.data, result.mime)
        except MediaTooLarge as error:
            raise DeliveryError("result too large for the media store") from error

    async def progress(self, job: JobRecord, text: str) -> bool:
        """Show a job's progress as the inline message's text; False when not edited."""
        try:
            await self._bot.edit_message_text(text, inline_message_id=job.inline_message_id,
                                              reply_markup=InlineKeyboardMarkup([[InlineKeyboardButton(
                                                  tr(job.language, OPEN_BOT), url=open_bot_url(self._bot.username))]]))
        except TelegramError as error:
            log.debug("job %s: inline progress not shown: %s", job.id, error)
            return False
        return True

    async def report(self, job: JobRecord, text: str) -> None:
        """Turn the inline message into a short text (a failure); best effort: there is nowhere else to say it."""
        try:
            await self._bot.edit_message_text(text, inline_message_id=job.inline_message_id)
        except TelegramError as error:
            log.info("job %s: inline message not edited: %s", job.id, error)

    async def report_failure(self, job: JobRecord, failure: Failure) -> None:
        """A failed inline job's message says what went wrong."""
        if failure.kind is FailureKind.DELIVERY and failure.detail == NOT_STARTED:
            await self.report(job, tr(job.language, START_BOT))
            return
        # everyone in that chat reads it: no advice meant for the requester (the bot's chat tells them more)
        await self.report(job, tr(job.language, texts.SHARED_FAILED))
