"""From a user's request to a job: parse its arguments (the user's defaults filled in), check its images,
ask for what is missing (a style, a preset, a choice), and hand it on to be queued, or to wait for more images."""

from __future__ import annotations

from telegram import Message

from bot.chats.people import argument_setting, style_setting
from bot.i18n import tr
from bot.operations.catalogue import ArgumentError, Operation, ResultKind, StyleMissing
from bot.tg import keyboards, presets, texts
from bot.tg.albums import collect_album
from bot.tg.context import CustomContext, deps, language_for, person_settings
from bot.tg.inputs import FileInput, own_images, problem_with
from bot.tg.pairs import wait_for_more
from bot.tg.picks import ask, offer_pick, sole_choice
from bot.tg.queueing import queue, refuse


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
    if asks and (only := sole_choice(operation, args_text, len(images))) is not None:
        args_text, args = only, operation.parse(only)
    elif asks and await offer_pick(context, operation, args_text, source, images, editable):
        return
    await queue(context, operation, args, source, [image.file_id for image in images[:operation.most_images]],
                editable=editable)


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
