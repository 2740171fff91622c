"""A message without a command: finish a waiting face swap, offer the operations menu, or say what to send;
and the menu's buttons."""

from __future__ import annotations

from datetime import timedelta

from telegram import CallbackQuery, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.i18n import Text, tr
from bot.operations.catalogue import ArgumentError, Operation, StyleMissing
from bot.tg import keyboards, texts
from bot.tg.commands import parse_command
from bot.tg.context import CustomContext, conversations, deps, language_for, sender_id
from bot.tg.handlers.router import Router
from bot.tg.inputs import message_images, own_images, problem_with
from bot.tg.pairs import continue_pending, still_waiting, take_expired, wait_for_more
from bot.tg.picks import picked_text, picker_images
from bot.tg.queueing import refuse
from bot.tg.replies import reply, show
from bot.tg.start import start_operation

USED_MENUS_KEY = "menu"
#: how long a menu is remembered as already answered (a double tap sends two callback queries)
USED_MENUS_KEPT_FOR = timedelta(days=7)


def _user_id(message: Message) -> int:
    return sender_id(message) or 0  # an anonymous admin or a channel is its sender chat


def _joined(*parts: str | None) -> str:
    return "\n\n".join(part for part in parts if part)


async def on_media(update: Update, context: CustomContext) -> None:
    """A message without a command and without text: a photo, a file, a sticker, a voice message, ..."""
    message = update.effective_message
    private = message.chat.type == ChatType.PRIVATE
    language = await language_for(context, message)
    expired = await take_expired(context, _user_id(message), message.chat_id, language)
    images = own_images(message)
    # an album item without an image (a video) still counts as an item of the album being collected
    if (images or message.media_group_id) and await continue_pending(context, message, images):
        return
    if not private or message.media_group_id:
        # in groups the bot speaks when spoken to; album items need a command
        if expired and images:
            await reply(message, expired)
        return
    if not images:
        if message.effective_attachment is not None:  # not a service message: the user sent us something
            waiting = await still_waiting(context, _user_id(message), message.chat_id, language)
            await reply(message, _joined(expired, waiting or tr(language, texts.NOT_A_PHOTO)))
        return
    problems = [problem for image in images if (problem := problem_with(image)) is not None]
    if problems:
        await reply(message, _joined(expired, tr(language, problems[0])))
        return
    markup = keyboards.operations_menu(deps(context).operations, language)
    links = deps(context).app_links
    if links is not None and message.from_user is not None:
        markup = links.with_photo_row(markup, language, message.from_user.id, images[0].file_id)
    await reply(message, _joined(expired, tr(language, texts.MENU_PROMPT)), markup)


async def on_text(update: Update, context: CustomContext) -> None:
    """Plain text in a private chat: remind the user of a half-given face swap, or say what the bot takes."""
    message = update.effective_message
    user_id = _user_id(message)
    language = await language_for(context, message)
    await reply(message, await take_expired(context, user_id, message.chat_id, language)
                or await still_waiting(context, user_id, message.chat_id, language) or tr(language, texts.TEXT_HINT))


async def _answer(query: CallbackQuery, text: str | None = None, *, alert: bool = False) -> None:
    try:
        await query.answer(text, show_alert=alert)
    except TelegramError:  # the query may be too old to answer; the user sees nothing worse
        return


async def on_button(update: Update, context: CustomContext) -> None:
    """A button of the photo menu, of a style picker or of a picked argument."""
    query = update.callback_query
    d = deps(context)
    language = await language_for(context, update=update)
    choice = keyboards.parse_choice(query.data)
    menu: Message | None = query.message if isinstance(query.message, Message) else None
    source = menu.reply_to_message if menu else None
    operation = d.operations.get(choice.operation) if choice else None
    if choice is None or operation is None or source is None:
        await _answer(query, tr(language, texts.MENU_EXPIRED), alert=True)
        return
    if source.from_user and query.from_user.id != source.from_user.id:
        await _answer(query, tr(language, texts.MENU_NOT_YOURS), alert=True)
        return
    if not await _first_use(context, menu.chat_id, menu.message_id, choice.kind):
        await _answer(query, tr(language, texts.MENU_USED), alert=True)
        return
    await _answer(query)
    if choice.kind == keyboards.MENU_PREFIX:
        await _menu_choice(context, operation, choice.argument, source, menu)
    elif choice.kind == keyboards.PICK_PREFIX:
        await _picked(context, operation, choice.argument, source, menu)
    else:
        await _style_choice(context, operation, choice.argument, source, menu)


async def _first_use(context: CustomContext, chat_id: int, menu_id: int, kind: str) -> bool:
    """Mark a menu step as answered; False when it already was (one insert decides, across replicas)."""
    return await conversations(context).first_use(chat_id, USED_MENUS_KEY, f"{menu_id}:{kind}",
                                                  keep_for=USED_MENUS_KEPT_FOR)


async def _menu_choice(context, operation, argument: str, source: Message, menu: Message) -> None:
    images = own_images(source)
    language = await language_for(context, source)
    if not images:
        await show(source, tr(language, texts.MENU_EXPIRED), menu)
    elif (needs := _typed_arguments_needed(operation, argument)) is not None:
        # an operation whose arguments only the user can give (expand's padding): say how to type them
        await refuse(context, source, operation, tr(language, texts.MENU_NEEDS_ARGUMENTS, reason=needs,
                                                    usage=tr(language, operation.usage)), editable=menu)
    elif operation.images == 2:
        await wait_for_more(context, operation, "", source, images, editable=menu)
    else:
        await start_operation(context, operation, argument, source, images, editable=menu)


def _typed_arguments_needed(operation: Operation, argument: str) -> Text | None:
    """Why the button's argument text is not enough for the operation, or None when it is (or a style is missing)."""
    try:
        operation.parse(argument)
    except StyleMissing:
        return None
    except ArgumentError as error:
        return error.text
    return None


async def _style_choice(context, operation, style: str, source: Message, menu: Message) -> None:
    # the picker replies to the user's own request: read its arguments again, with the style put first
    call = parse_command(source.text or source.caption, context.bot.username)
    typed = call.args if call and call.name == operation.name else ""
    images = await _style_images(context, source, menu) if operation.images else []
    await start_operation(context, operation, f"{style} {typed}".strip(), source, images, editable=menu)


async def _picked(context, operation, argument: str, source: Message, menu: Message) -> None:
    # a picked argument's button carries the whole argument text (the style picked before it included), or the
    # choice alone (a video's model and length), the words typed with the command then read again
    if operation.pick is not None and operation.pick.choice_only:
        call = parse_command(source.text or source.caption, context.bot.username)
        argument = picked_text(operation, argument, call.args if call and call.name == operation.name else "")
    # the images the picker was asked about first: two frames, or a photo replied to (not nested in `source`)
    images = (await picker_images(context, menu.chat_id, menu.message_id) or message_images(source)
              if operation.images else [])
    await start_operation(context, operation, argument, source, images, editable=menu)


async def _style_images(context, source: Message, menu: Message) -> list:
    """The request's images: its own, or those the picker was shown for (a replied-to photo is not nested)."""
    return message_images(source) or await picker_images(context, menu.chat_id, menu.message_id)


def register(application: Application, router: Router) -> None:
    """The menu's, the style picker's and the choice buttons: last, as it takes every button no other pattern took."""
    application.add_handler(CallbackQueryHandler(on_button))
