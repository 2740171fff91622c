"""The worker's view of Telegram: fetch inputs, deliver results, report failures, tidy status messages."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from telegram import Bot, InlineKeyboardMarkup, InputFile, InputMediaDocument, InputMediaPhoto, Message, ReplyParameters
from telegram.constants import ChatAction
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from bot.chats.stored_inputs import StoredInputs, is_stored
from bot.i18n import lazy, tr
from bot.images import ImageLimits, ImageRejected, inspect
from bot.jobs.notifier import Delivered, DeliveryError, Failure, InputUnavailable, ResultFile
from bot.media import MediaLinks
from bot.operations.catalogue import Operation, ResultKind
from bot.store import JobRecord
from bot.tg import texts
from bot.tg.inline_delivery import InlineDelivery
from bot.tg.inputs import MAX_DOWNLOAD_BYTES
from bot.tg.ratelimit import retry_seconds, waiting_out_429s
from bot.videos import VideoInfo

log = logging.getLogger(__name__)

#: Telegram's limits for sendPhoto; larger images go as documents
PHOTO_MAX_BYTES = 10 * 1024 * 1024
PHOTO_MAX_SIDES_SUM = 10_000
PHOTO_MAX_ASPECT = 20.0
ALBUM_MAX = 10
#: an input download may wait this long in total for Telegram's retry_after before the job is rescheduled
INPUT_RETRY_AFTER_BUDGET_S = 60.0
_ANY_SIZE = ImageLimits(max_bytes=1 << 31, max_pixels=1 << 31, min_side=1, max_aspect=1e9)
#: videos read into memory for upload at once, across all deliveries
VIDEO_UPLOADS_AT_ONCE = 1
#: results larger than this together are announced with an "uploading" chat action while they are sent
UPLOAD_ACTION_BYTES = 1024 * 1024

#: the follow-up buttons under a job's delivered results
Keyboard = Callable[[JobRecord, Operation, Sequence[ResultFile]], InlineKeyboardMarkup | None]


def _file_of(message: Message) -> dict[str, str] | None:
    """The file a sent result message holds, as the job keeps it."""
    if message.photo:
        return {"id": message.photo[-1].file_id, "kind": "photo"}
    if message.document:
        return {"id": message.document.file_id, "kind": "document"}
    if message.video:
        file = {"id": message.video.file_id, "kind": ResultKind.VIDEO.value}
        if message.video.thumbnail is not None:  # the Mini App's poster: the bot may not download the video itself
            file["thumb"] = message.video.thumbnail.file_id
        return file
    return None


def fits_photo(data: bytes) -> bool:
    """Whether Telegram will take these bytes with sendPhoto."""
    if len(data) > PHOTO_MAX_BYTES:
        return False
    try:
        info = inspect(data, _ANY_SIZE)
    except ImageRejected:
        return False
    sides = (info.width, info.height)
    return sum(sides) <= PHOTO_MAX_SIDES_SUM and max(sides) / max(1, min(sides)) <= PHOTO_MAX_ASPECT


def _as_delivery_error(error: TelegramError) -> DeliveryError:
    if isinstance(error, RetryAfter):
        return DeliveryError(str(error), retry_after=retry_seconds(error) + 0.5)
    if isinstance(error, Forbidden | BadRequest):
        return DeliveryError(error.message)  # blocked, kicked, chat gone: trying again cannot help
    if isinstance(error, NetworkError):
        return DeliveryError(error.message, retry_after=5.0)
    return DeliveryError(str(error), retry_after=10.0)


class TelegramNotifier:
    """Implements the worker's Notifier with a python-telegram-bot Bot."""

    def __init__(self, bot: Bot, *, sandbox: Callable[[], bool] = lambda: False,
                 keyboard: Keyboard | None = None, stored: StoredInputs | None = None,
                 media: MediaLinks | None = None) -> None:
        self._bot = bot
        #: inputs handed over outside a chat (a mask painted in the Mini App)
        self._stored = stored
        #: inline-mode jobs (job.inline_message_id) are delivered by editing their inline message
        self._inline = InlineDelivery(bot, media)
        #: whether results come from a sandbox (the embedded one, or a service that says it is one): every
        #: caption says so; asked at each delivery, since a service may say so only in a later answer
        self._sandbox = sandbox
        #: the follow-up buttons under a result (none when not given)
        self._keyboard = keyboard or (lambda job, operation, results: None)
        #: python-telegram-bot reads an upload into memory whole: videos (up to 50 MB each) wait on disk and
        #: are read one at a time, so deliveries in flight cannot add up to gigabytes (bench/perf/videos.py)
        self._video_uploads = asyncio.Semaphore(VIDEO_UPLOADS_AT_ONCE)

    async def fetch_input(self, file_id: str) -> bytes:
        if is_stored(file_id):
            data = await self._stored.load(file_id) if self._stored is not None else None
            if data is None:
                raise InputUnavailable(lazy(texts.FILE_UNAVAILABLE), permanent=True)
            return data
        try:
            # waited out here: the worker's own backoff does not know how long Telegram asked for
            return await waiting_out_429s(lambda: self._fetch_once(file_id), budget=INPUT_RETRY_AFTER_BUDGET_S,
                                          what="input download")
        except RetryAfter as error:
            raise InputUnavailable("Telegram asked me to slow down", permanent=False) from error

    async def _fetch_once(self, file_id: str) -> bytes:
        try:
            file = await self._bot.get_file(file_id)
            if file.file_size is not None and file.file_size > MAX_DOWNLOAD_BYTES:
                raise InputUnavailable(lazy(texts.FILE_TOO_BIG), permanent=True)
            return bytes(await file.download_as_bytearray())
        except BadRequest as error:
            too_big = "too big" in error.message.lower()
            reason = lazy(texts.FILE_TOO_BIG if too_big else texts.FILE_UNAVAILABLE)
            raise InputUnavailable(reason, permanent=True) from error
        except RetryAfter:
            raise
        except TelegramError as error:
            raise InputUnavailable(f"download failed: {type(error).__name__}", permanent=False) from error

    def _reply_to(self, job: JobRecord) -> ReplyParameters | None:
        if job.reply_to_message_id is None:
            return None
        return ReplyParameters(message_id=job.reply_to_message_id, allow_sending_without_reply=True)

    async def deliver(self, job: JobRecord, operation: Operation, results: Sequence[ResultFile]) -> Delivered:
        text = texts.result_text(job, operation, sandbox=self._sandbox())
        if job.inline_message_id is not None:
            return await self._inline.deliver(job, operation, results, text)
        # The status message goes first: after the result is sent, every round trip until the worker records
        # it widens the window in which a crash sends the result twice; and a crash can no longer leave a
        # status message behind a result.
        await self._delete_status(job)
        markup = self._keyboard(job, operation, results)
        if sum(len(result.data) + result.size for result in results) > UPLOAD_ACTION_BYTES:
            await self._upload_action(job, operation)
        try:
            sent = await self._send_results(job, operation, results, text, markup)
        except TelegramError as error:
            raise _as_delivery_error(error) from error
        files = [file for message in sent if (file := _file_of(message)) is not None]
        ids = [message.message_id for message in sent]
        if markup is not None and len(sent) > 1:
            # albums carry no keyboard: the buttons go on a short message after the album
            ids += await self._send_album_keyboard(job, sent[0], markup)
        if job.status_message_id is None:
            await self._mark(job, texts.REACTION_DONE)
        return Delivered(ids, files)

    async def _send_album_keyboard(self, job: JobRecord, first: Message, markup: InlineKeyboardMarkup) -> list[int]:
        """The follow-up buttons of an album; a failure here loses no result, so it is logged, not raised."""
        try:
            message = await self._bot.send_message(
                job.chat_id, tr(job.language, texts.FU_PROMPT), reply_markup=markup,
                reply_parameters=ReplyParameters(message_id=first.message_id, allow_sending_without_reply=True))
        except TelegramError as error:
            log.info("job %s: follow-up buttons not sent: %s", job.id, error)
            return []
        return [message.message_id]

    async def _upload_action(self, job: JobRecord, operation: Operation) -> None:
        action = {ResultKind.PNG_DOCUMENT: ChatAction.UPLOAD_DOCUMENT,
                  ResultKind.VIDEO: ChatAction.UPLOAD_VIDEO}.get(operation.result, ChatAction.UPLOAD_PHOTO)
        try:
            await self._bot.send_chat_action(job.chat_id, action)
        except TelegramError as error:  # only a courtesy
            log.debug("job %s: no chat action: %s", job.id, error)

    async def _mark(self, job: JobRecord, emoji: str) -> None:
        """Turn the 👀 on a quick job's request into its final mark (best effort: the answer is already sent)."""
        if job.reply_to_message_id is None:
            return
        try:
            await self._bot.set_message_reaction(job.chat_id, job.reply_to_message_id, emoji)
        except TelegramError as error:
            log.debug("job %s: final reaction not set: %s", job.id, error)

    async def show_progress(self, job: JobRecord, operation: Operation, elapsed: int) -> bool:
        """Edit the job's status message to say it is at the service (and for how long); False when not edited."""
        if job.status_message_id is None and job.inline_message_id is None:
            return False
        text = texts.progress_text(job, operation, elapsed)
        if job.inline_message_id is not None:
            return await self._inline.progress(job, text)
        try:
            await self._bot.edit_message_text(text, job.chat_id, job.status_message_id)
        except TelegramError as error:
            log.debug("job %s: status not edited: %s", job.id, error)
            return False
        return True

    async def _send_results(self, job: JobRecord, operation: Operation, results: Sequence[ResultFile],
                            text: str, markup: InlineKeyboardMarkup | None = None) -> list[Message]:
        reply = self._reply_to(job)
        if operation.result is ResultKind.VIDEO:
            return [await self._send_video(job, results[0], text, reply, markup)]
        if operation.result is ResultKind.PNG_DOCUMENT:
            return [await self._send_document(job, results[0], text, reply, markup)]
        if len(results) == 1:
            return [await self._send_picture(job, results[0], text, reply, markup)]
        sent: list[Message] = []
        photos = all(fits_photo(result.data) for result in results)
        for start in range(0, len(results), ALBUM_MAX):
            chunk = results[start:start + ALBUM_MAX]
            first_caption = text if start == 0 else None
            if len(chunk) == 1:
                sent.append(await self._send_picture(job, chunk[0], first_caption, reply))
                continue
            media_type = InputMediaPhoto if photos else InputMediaDocument
            media = [media_type(media=result.data, caption=first_caption if i == 0 else None,
                                **({} if photos else {"filename": result.file_name}))
                     for i, result in enumerate(chunk)]
            sent.extend(await self._bot.send_media_group(job.chat_id, media, reply_parameters=reply))
        return sent

    async def _send_picture(self, job: JobRecord, result: ResultFile, text: str | None,
                            reply: ReplyParameters | None, markup: InlineKeyboardMarkup | None = None) -> Message:
        if fits_photo(result.data):
            try:
                return await self._bot.send_photo(job.chat_id, result.data, caption=text, reply_parameters=reply,
                                                  reply_markup=markup)
            except BadRequest as error:
                # Telegram has the last word on what a photo is; a document always gets through
                log.info("job %s: photo refused (%s); sending as a document", job.id, error.message)
        return await self._send_document(job, result, text, reply, markup)

    async def _send_video(self, job: JobRecord, result: ResultFile, text: str, reply: ReplyParameters | None,
                          markup: InlineKeyboardMarkup | None = None) -> Message:
        """The video with its size, length and thumbnail, streamable; one too large to upload as a link."""
        if result.video is None or result.path is None:
            return await self._bot.send_message(
                job.chat_id, texts.video_link(job.language, text, result.source_url or ""),
                reply_parameters=reply, reply_markup=markup)
        info = result.video
        async with self._video_uploads:
            return await self._upload_video(job, result, info, text, reply, markup)

    async def _upload_video(self, job: JobRecord, result: ResultFile, info: VideoInfo, text: str,
                            reply: ReplyParameters | None, markup: InlineKeyboardMarkup | None) -> Message:
        with result.path.open("rb") as video:
            return await self._bot.send_video(
                job.chat_id, InputFile(video, filename=result.file_name), duration=info.duration, width=info.width,
                height=info.height, thumbnail=InputFile(info.thumbnail, filename="thumbnail.jpg"),
                supports_streaming=True, caption=text, reply_parameters=reply, reply_markup=markup)

    async def _send_document(self, job: JobRecord, result: ResultFile, text: str | None,
                             reply: ReplyParameters | None, markup: InlineKeyboardMarkup | None = None) -> Message:
        return await self._bot.send_document(job.chat_id, result.data, filename=result.file_name,
                                             caption=text, reply_parameters=reply, reply_markup=markup)

    async def report_failure(self, job: JobRecord, operation: Operation | None, failure: Failure) -> None:
        if job.inline_message_id is not None:
            await self._inline.report_failure(job, failure)
            return
        await self._delete_status(job)  # first, as in deliver()
        try:
            await self._bot.send_message(job.chat_id, texts.failure_text(failure, language=job.language),
                                         reply_parameters=self._reply_to(job))
        except TelegramError as error:
            raise _as_delivery_error(error) from error
        if job.status_message_id is None:
            await self._mark(job, texts.REACTION_FAILED)

    async def _delete_status(self, job: JobRecord) -> None:
        if job.status_message_id is None:
            return
        try:
            await self._bot.delete_message(job.chat_id, job.status_message_id)
        except TelegramError as error:  # already gone, or too old to delete: nothing to tidy
            log.debug("job %s: status message not deleted: %s", job.id, error)
