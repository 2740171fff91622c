"""Collecting an album's items into one request: Telegram sends them as separate messages, close together.

An album is queued in one place, `_queue`, whatever closes it: the item that completes a two-image
request, or the album's quiet time running out (seen by the album's own task or by any replica's sweep,
`queue_due_albums`; taking the due row decides which, once).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from telegram import ForceReply, Message
from telegram.constants import ChatType
from telegram.ext import Application

from bot.i18n import tr
from bot.operations.catalogue import Operation
from bot.tg import pending, texts
from bot.tg.context import CustomContext, deps, language_for, sender_id
from bot.tg.inputs import FileInput, problem_with
from bot.tg.pending import PENDING_KEY, WaitingRequest
from bot.tg.picks import offer_pick, sole_choice
from bot.tg.queueing import queue, refuse
from bot.tg.replies import reply

log = logging.getLogger(__name__)

#: how long an album's items are awaited after the last one arrived (Telegram sends them together)
ALBUM_QUIET_S = 1.5


async def collect_album(context: CustomContext, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput]) -> None:
    """Take the rest of the album `source` belongs to, then queue the job once no item came for a moment."""
    user_id = sender_id(source) or 0  # as continue_pending looks it up: an anonymous admin is their sender chat
    request = WaitingRequest(operation.name, args_text, source, tuple(image.file_id for image in images),
                             started=deps(context).clock(), album_id=source.media_group_id)
    # stored before the album's next item is handled; the row is what counts: any replica's sweep (or the
    # task below) queues the album once it is due
    await pending.save(context, user_id, request, due_in=ALBUM_QUIET_S)
    context.application.create_task(_await_quiet(context, user_id, request), name=f"album-{source.media_group_id}")


async def add_item(context: CustomContext, message: Message, user_id: int, request: WaitingRequest,
                   images: list[FileInput]) -> bool:
    """Add an item of the album being collected (a video or a bad file counts as seen, adding no image);
    True when the message was one of its items."""
    if message.media_group_id != request.album_id:
        return False
    usable = not any(problem_with(image) for image in images)
    new_ids = [image.file_id for image in images] if usable else []

    def add(stored: WaitingRequest) -> WaitingRequest:
        return stored.with_images(new_ids, album_item=True) if stored.album_id == request.album_id else stored

    # under a lock, and the album's quiet time starts again: whoever collects it sees this item
    edited = await pending.change(context, message.chat_id, user_id, add, due_in=ALBUM_QUIET_S)
    if edited is None or edited.album_id != request.album_id:
        return False
    if not usable:
        return await pending.told_problem(context, message, request, images)
    operation = deps(context).operations[edited.operation]
    if edited.has_all(operation):  # as outside an album, the second image completes a pair at once
        await _queue(context, user_id, replace(edited, file_ids=edited.file_ids[: operation.images]))
    return True


async def _await_quiet(context: CustomContext, user_id: int, request: WaitingRequest) -> None:
    """Queue the album when its quiet time runs out (on time; the replicas' sweep is the fallback)."""
    while True:
        await asyncio.sleep(ALBUM_QUIET_S)
        await queue_due_albums(context.application)
        stored = await pending.load(context, request.source.chat_id, user_id)
        if stored is None or stored.album_id != request.album_id:
            return  # queued, replaced or cancelled


async def queue_due_albums(application: Application) -> int:
    """Queue every album whose items stopped coming ALBUM_QUIET_S ago (this replica's or another's); how many."""
    d = application.bot_data.deps
    due = await d.conversations.take_due(PENDING_KEY)
    for row in due:
        context = CustomContext(application, chat_id=row.chat_id, user_id=int(row.key))
        try:
            await _queue(context, int(row.key), WaitingRequest.of_data(row.data, application.bot))
        except Exception:  # one album's failure must not stop the others
            log.exception("could not queue the album of chat %s", row.chat_id)
    return len(due)


async def _queue(context: CustomContext, user_id: int, request: WaitingRequest) -> None:
    """Queue a closed album's job, or say why not (too many images), or ask for the image it lacks."""
    operation = deps(context).operations[request.operation]
    language = await language_for(context, request.source)
    if len(request.file_ids) > operation.most_images:
        await refuse(context, request.source, operation,
                     texts.too_many_images(language, tr(language, operation.title_noun), operation.most_images))
        return
    if len(request.file_ids) < operation.images:
        await _ask_for_rest(context, user_id, operation, request, language)
        return
    # a choice that differs in price (a video's model for two frames) is asked before anything is spent; the
    # album's items were checked as they came, so its images are remembered for the picker by their ids alone
    images = [FileInput(file_id, None, is_document=False) for file_id in request.file_ids]
    args_text = request.args_text
    if operation.pick is not None and operation.pick.priced:
        if (only := sole_choice(operation, args_text, len(images))) is not None:
            args_text = only
        elif await offer_pick(context, operation, args_text, request.source, images, None):
            return
    queued = await queue(context, operation, operation.parse(args_text), request.source, list(request.file_ids))
    if queued and request.album_items == 1 and request.source.chat.type != ChatType.PRIVATE:
        # an album has two items at least: privacy mode kept the others from the bot
        await reply(request.source, tr(language, texts.ALBUM_ONLY_CAPTIONED))


async def _ask_for_rest(context: CustomContext, user_id: int, operation: Operation,
                        request: WaitingRequest, language: str) -> None:
    """An album in a group brought fewer images than needed (privacy mode kept the others from the bot): wait
    for the rest as any two-image request does, asking for it as a reply, which privacy mode lets through."""
    await pending.save(context, user_id, replace(request, album_id=None))
    first, second = (tr(language, name) for name in operation.image_names)
    text = tr(language, texts.ALBUM_REPLY_REST, first=first, second=second)
    await reply(request.source, f"{text} {tr(language, texts.PAIR_TIMEOUT_HINT)}", ForceReply(selective=True))
