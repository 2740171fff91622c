"""From a user's request to a job: parse its arguments (the user's defaults filled in), check its images,
ask for what is missing (a style, a preset, a choice), and hand it on to be queued, or to wait for more images."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

from telegram import InlineKeyboardMarkup, Message

from bot.chats.people import argument_setting, style_setting
from bot.credits.texts import cost_note
from bot.i18n import lazy, tr
from bot.operations.catalogue import ArgumentError, Operation, ResultKind, StyleMissing
from bot.tg import keyboards, presets, texts
from bot.tg.albums import collect_album
from bot.tg.context import CustomContext, conversations, deps, language_for, person_settings
from bot.tg.inputs import FileInput, own_images, problem_with
from bot.tg.pairs import wait_for_more
from bot.tg.queueing import queue, refuse
from bot.tg.replies import show

PICKER_IMAGES_KEY = "picker"
#: how long a style picker's images are remembered (Telegram does not nest reply_to_message)
PICKER_KEPT_FOR = timedelta(days=2)


async def start_operation(context: CustomContext, operation: Operation, args_text: str,
                          source: Message, images: list[FileInput], *, editable: Message | None = None) -> None:
    """Parse, check and queue one operation for the user who sent `source`."""
    d = deps(context)
    language = await language_for(context, source)
    args_text = await _with_defaults(context, operation, args_text, source)
    try:
        args = operation.parse(args_text)
    except StyleMissing:
        group = d.styles.group(operation.style_group)
        await ask(context, source, tr(language, texts.STYLE_PROMPT), editable,
                  keyboards.style_picker(language, operation.name, group), images)
        return
    except ArgumentError as error:
        if await offer_presets(context, operation, args_text, source, images, editable):
            return
        await refuse(context, source, operation, tr(language, texts.USAGE_LINE, reason=error.text,
                                                    usage=tr(language, operation.usage)), editable=editable)
        return
    if (operation.result is ResultKind.VIDEO and operation.most_images >= 2 and len(images) == 1
            and not source.media_group_id and own_images(source) and (earlier := own_images(source.reply_to_message))):
        # a photo replying to a photo: a video from the earlier one (the first frame) to this one (the last)
        images = earlier + images
    for image in images:
        if (problem := problem_with(image)) is not None:
            await refuse(context, source, operation, tr(language, problem), args=args, editable=editable)
            return
    if operation.images == 1 and not images:
        await refuse(context, source, operation,
                     tr(language, texts.NEED_IMAGE, title=tr(language, operation.title_noun),
                        usage=tr(language, operation.usage)), args=args,
                     editable=editable)
        return
    if operation.images == 2 and len(images) < 2:
        await wait_for_more(context, operation, args_text, source, images, editable=editable)
        return
    if editable is None and source.media_group_id and images and operation.most_images > max(operation.images, 1):
        # optional extra images (reference photos) come as an album: the rest of it is on its way
        await collect_album(context, operation, args_text, source, images)
        return
    asks = editable is not None or (operation.pick is not None and operation.pick.priced)
    if asks and await offer_pick(context, operation, args_text, source, images, editable):
        return
    await queue(context, operation, args, source, [image.file_id for image in images[:operation.most_images]],
                editable=editable)


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


def picked_text(operation: Operation, argument: str, typed: str) -> str:
    """The argument text of a picked button: its own, or (a choice alone) the choice before the typed words."""
    if operation.pick is not None and operation.pick.choice_only:
        return f"{argument} {typed}".strip()
    return argument


async def offer_presets(context: CustomContext, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput], editable: Message | None) -> bool:
    """No arguments typed, on a photo of known size: offer the operation's presets as buttons; True when offered."""
    if operation.presets is None or args_text.strip() or len(images) != 1:
        return False
    size = presets.photo_size(source)
    language = await language_for(context, source)
    markup = presets.preset_keyboard(language, *size, operation) if size else None
    if markup is None:
        return False
    await ask(context, source, tr(language, texts.PRESET_PICK, title=tr(language, operation.title)), editable, markup,
              images)
    return True


async def _with_defaults(context: CustomContext, operation: Operation, args_text: str,
                         source: Message) -> str:
    """The argument text with the user's defaults (/settings) where they gave none: a style, a default choice."""
    d = deps(context)
    if source.from_user is None or source.sender_chat is not None:
        return args_text
    wants_choice = bool(operation.default_choices) and not args_text.strip()
    if not wants_choice and not operation.lacks_style(args_text):
        return args_text  # nothing a setting could fill in: no settings read
    settings = await person_settings(context, source)
    if wants_choice and (chosen := str(settings.get(argument_setting(operation.name), ""))) in operation.default_choices:
        args_text = chosen
    style = settings.get(style_setting(operation.style_group)) if operation.style_group else None
    if style and d.styles.group(operation.style_group).get(style) and operation.lacks_style(args_text):
        args_text = f"{style} {args_text}".strip()
    return args_text


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
