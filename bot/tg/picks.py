"""Questions asked with buttons before a job is queued (a headshot count, a video's model and length): the
buttons, the images they were asked about, and the argument text a pressed one stands for."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

from telegram import InlineKeyboardMarkup, Message

from bot.credits.texts import cost_note
from bot.i18n import lazy, tr
from bot.operations.catalogue import Operation
from bot.tg import keyboards, texts
from bot.tg.context import CustomContext, conversations, deps, language_for
from bot.tg.inputs import FileInput
from bot.tg.replies import show

PICKER_IMAGES_KEY = "picker"
#: how long a style picker's images are remembered (Telegram does not nest reply_to_message)
PICKER_KEPT_FOR = timedelta(days=2)


async def ask(context: CustomContext, source: Message, text: str, editable: Message | None,
              markup: InlineKeyboardMarkup, images: list[FileInput]) -> None:
    """Show a question with buttons (editing the menu being answered), keeping the images it was asked about."""
    picker = await show(source, text, editable, markup)
    if picker is not None and images:
        await remember_picker_images(context, picker.chat_id, picker.message_id, images)


async def offer_pick(context: CustomContext, operation: Operation, args_text: str, source: Message,
                     images: list[FileInput], editable: Message | None) -> bool:
    """An argument left out that the operation offers as buttons (a headshot count, a video's model and length):
    offer them; True when offered. Asked where the bot asks anyway (a menu or picker being answered), and for a
    typed command where the choices differ in price; otherwise a typed command's parser default stands."""
    pick = operation.pick
    if pick is None:
        return False
    language = await language_for(context, source)
    offered = pick.offer(args_text, min(len(images), operation.most_images))
    if len(offered) < 2:
        return False  # nothing to choose (`sole_choice` takes a single one)
    if pick.priced:
        # choices that differ in price show it before anything is spent
        policy = deps(context).credits.policy
        offered = [(lazy(texts.PRICED_CHOICE, choice=label, cost=cost_note(language, policy.price(
            operation.name, operation.parse(picked_text(operation, argument, args_text))))), argument)
                   for label, argument in offered]
    # a priced choice is a long label: one a row
    markup = keyboards.argument_keyboard(language, keyboards.PICK_PREFIX, operation, offered,
                                         per_row=1 if pick.priced else 3)
    if markup is None:
        return False
    await ask(context, source, tr(language, pick.question), editable, markup, images)
    return True


def sole_choice(operation: Operation, args_text: str, images: int) -> str | None:
    """The argument text with the only choice the operation offers for it (the only video model and length for
    two frames, say), which is taken at once; None when the text gives it or there are several to ask about."""
    if operation.pick is None:
        return None
    offered = operation.pick.offer(args_text, min(images, operation.most_images))
    return picked_text(operation, offered[0][1], args_text) if len(offered) == 1 else None


def picked_text(operation: Operation, argument: str, typed: str) -> str:
    """The argument text of a picked button: its own, or (a choice alone) the choice before the typed words."""
    if operation.pick is not None and operation.pick.choice_only:
        return f"{argument} {typed}".strip()
    return argument


async def remember_picker_images(context: CustomContext, chat_id: int, picker_id: int,
                                 images: list[FileInput]) -> None:
    """Keep the images a style picker was shown for: when its button is pressed, the picker's
    reply_to_message (the user's command) comes without the photo that command replied to."""
    await conversations(context).put(chat_id, PICKER_IMAGES_KEY, picker_id,
                                     {"images": [asdict(image) for image in images]}, keep_for=PICKER_KEPT_FOR)


async def picker_images(context: CustomContext, chat_id: int, picker_id: int) -> list[FileInput]:
    """The images remembered for a style picker (none for a picker without images, or once it expired)."""
    data = await conversations(context).get(chat_id, PICKER_IMAGES_KEY, picker_id)
    return [] if data is None else [FileInput(**image) for image in data["images"]]
