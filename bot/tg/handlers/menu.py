"""A photo without a command: finish a waiting face swap, or offer the operations menu; and its buttons."""

from __future__ import annotations

from telegram import CallbackQuery, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.tg import keyboards, texts
from bot.tg.commands import parse_command
from bot.tg.context import deps
from bot.tg.flow import continue_pending, reply, show, start_operation, wait_for_more
from bot.tg.inputs import message_images, own_images


async def on_media(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A photo or document sent without a command."""
    message = update.effective_message
    images = own_images(message)
    if not images:
        return
    if await continue_pending(context, message, images):
        return
    if message.chat.type != ChatType.PRIVATE or message.media_group_id:
        return  # in groups the bot speaks when spoken to; album items need a command
    await reply(message, texts.MENU_PROMPT, keyboards.operations_menu(deps(context).operations))


async def _answer(query: CallbackQuery, text: str | None = None, *, alert: bool = False) -> None:
    try:
        await query.answer(text, show_alert=alert)
    except TelegramError:  # the query may be too old to answer; the user sees nothing worse
        return


async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A button of the photo menu or of a style picker."""
    query = update.callback_query
    d = deps(context)
    choice = keyboards.parse_choice(query.data)
    menu: Message | None = query.message if isinstance(query.message, Message) else None
    source = menu.reply_to_message if menu else None
    operation = d.operations.get(choice.operation) if choice else None
    if choice is None or operation is None or source is None:
        await _answer(query, texts.MENU_EXPIRED, alert=True)
        return
    if source.from_user and query.from_user.id != source.from_user.id:
        await _answer(query, texts.MENU_NOT_YOURS, alert=True)
        return
    await _answer(query)
    if choice.kind == keyboards.MENU_PREFIX:
        await _menu_choice(context, operation, choice.argument, source, menu)
    else:
        await _style_choice(context, operation, choice.argument, source, menu)


async def _menu_choice(context, operation, argument: str, source: Message, menu: Message) -> None:
    images = own_images(source)
    if not images:
        await show(source, texts.MENU_EXPIRED, menu)
    elif operation.name == "expand":
        await show(source, texts.EXPAND_FROM_MENU, menu)
    elif operation.images == 2:
        await wait_for_more(context, operation, "", source, images, editable=menu)
    else:
        await start_operation(context, operation, argument, source, images, editable=menu)


async def _style_choice(context, operation, style: str, source: Message, menu: Message) -> None:
    # the picker replies to the user's own request: read its arguments again, with the style put first
    call = parse_command(source.text or source.caption, context.bot.username)
    typed = call.args if call and call.name == operation.name else ""
    images = message_images(source) if operation.images else []
    await start_operation(context, operation, f"{style} {typed}".strip(), source, images, editable=menu)
