"""Two-image requests (a face swap: the face, then the template): remember the first, ask for and take the
second, remind the user of what is missing, and tell them when the request ran out."""

from __future__ import annotations

from telegram import ForceReply, Message
from telegram.constants import ChatType

from bot.i18n import tr
from bot.operations.catalogue import Operation
from bot.tg import albums, pending, texts
from bot.tg.context import CustomContext, deps, language_for, sender_id
from bot.tg.inputs import FileInput
from bot.tg.pending import WaitingRequest
from bot.tg.queueing import queue
from bot.tg.replies import reply, show


async def wait_for_more(context: CustomContext, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput], *, editable: Message | None = None) -> None:
    """Remember a two-image request and ask for what is missing (albums bring the rest by themselves)."""
    if source.media_group_id and images and source.chat.type != ChatType.PRIVATE:
        # privacy mode may keep the album's other photos from the bot: what has not come by the album's
        # quiet time is asked for as a reply
        await albums.collect_album(context, operation, args_text, source, images)
        return
    user_id = sender_id(source) or 0
    request = WaitingRequest(operation.name, args_text, source, tuple(image.file_id for image in images),
                             started=deps(context).clock())
    await pending.save(context, user_id, request)
    if source.media_group_id and images:
        return  # the album's next photo completes the pair
    await _ask_for_next(context, operation, source, have_first=bool(images), editable=editable, hint=True)


async def _ask_for_next(context: CustomContext, operation: Operation, message: Message, *,
                        have_first: bool, editable: Message | None = None, hint: bool = False) -> None:
    """Ask for a two-image request's next photo (in a group, as a reply to this prompt)."""
    language = await language_for(context, message)
    first, second = (tr(language, name) for name in operation.image_names)
    group = message.chat.type != ChatType.PRIVATE
    if have_first:
        text = tr(language, texts.PAIR_REPLY_SECOND if group else texts.NEED_PAIR_SECOND, first=first, second=second)
    else:
        text = tr(language, texts.PAIR_REPLY_FIRST if group else texts.NEED_PAIR_FIRST,
                  title=tr(language, operation.title_noun), first=first, second=second)
    if hint:
        text = f"{text} {tr(language, texts.PAIR_TIMEOUT_HINT)}"
    if group:
        # privacy mode (Telegram's default) hides a plain photo in a group from the bot: a reply reaches it
        await reply(message, text, ForceReply(selective=True))
    else:
        await show(message, text, editable)


async def take_expired(context: CustomContext, user_id: int, chat_id: int, language: str) -> str | None:
    """Forget this user's two-image request if its time ran out; the notice to show them, else None."""
    request = await pending.load(context, chat_id, user_id)
    if request is None or not pending.expired(context, request):
        return None
    if not await pending.drop(context, user_id, chat_id):
        return None  # another update of theirs told them already
    operation = deps(context).operations.get(request.operation)
    if operation is None:
        return None
    return texts.pair_expired(language, tr(language, operation.title_noun).lower(), tr(language, operation.image_names[-1]),
                              max(1, int(pending.PENDING_FOR.total_seconds() // 60)), f"/{operation.name}")


async def still_waiting(context: CustomContext, user_id: int, chat_id: int, language: str) -> str | None:
    """A reminder of what this user's live two-image request still needs, or None without one."""
    request = await pending.load(context, chat_id, user_id)
    return None if request is None else pending.still_waiting_text(context, request, language)


async def continue_pending(context: CustomContext, message: Message, images: list[FileInput]) -> bool:
    """Add an image to this user's waiting two-image request, or an item to their album being collected;
    True when the message was used."""
    user_id = sender_id(message) or 0
    chat_id = message.chat_id
    request = await pending.load(context, chat_id, user_id)
    if request is None or pending.expired(context, request):
        return False
    if request.album_id is not None:
        return await albums.add_item(context, message, user_id, request, images)
    if not images:
        return False
    if await pending.told_problem(context, message, request, images):
        return True
    new_ids = [image.file_id for image in images]
    edited = await pending.change(context, chat_id, user_id, lambda stored: stored.with_images(new_ids))
    if edited is None or edited.album_id is not None:
        return edited is not None  # taken meanwhile by another of their updates
    operation = deps(context).operations[edited.operation]
    if not edited.has_all(operation):
        if not message.media_group_id:
            await _ask_for_next(context, operation, message, have_first=True)
        return True
    await queue(context, operation, operation.parse(edited.args_text), edited.source, list(edited.file_ids[: operation.images]))
    return True
