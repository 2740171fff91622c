"""Follow-up buttons under a delivered result, and their callback data.

The data names a stored job and an action, nothing kept in memory, so a button works after a restart
and on any replica: ``fu:<job id>:a`` (again), ``fu:<job id>:s[:<style>]`` (another style: the picker,
then a style), ``fu:<job id>:n:<operation>:<argument>[:<picture>]`` (a next operation on a result),
and under a video ``fu:<job id>:l`` (longer), ``fu:<job id>:m[:<model>:<seconds>]`` (another model and
length: named, so a stale button naming a model that cannot make the job is refused, never taken for another)
and ``fu:<job id>:p`` (the same video as a live photo: an animated photo short enough for one).
Which operations come next is read from the catalogue: every one that takes one image and has a photo-menu
button whose argument text is complete (so upscale, retouch, background removal, ... but not expand, which
needs numbers, nor the styled ones, which need a style), and every video one (animate) beyond those.
A next operation that offers a priced choice (animate's models and lengths) asks it first, with the same
``n`` data carrying the picked argument text (``fu:<job id>:n:animate:kling 10s``); with one choice only, its
button takes that choice at once and says its price. A video's buttons fit a video: again, longer, another
model; never an operation on a picture. Those that spend at once say what they cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.credits.texts import cost_note
from bot.i18n import Text, render, tr
from bot.jobs.notifier import ResultFile
from bot.operations.catalogue import Args, ArgumentError, Operation, ResultKind
from bot.operations.styles import StyleCatalogue
from bot.store import JobRecord
from bot.tg import texts
from bot.tg.keyboards import rows, style_label
from bot.tg.miniapp import AppLinks
from bot.tg.picks import picked_text
from bot.videos import fits_live_photo

#: what a job of an operation with these arguments costs (the credit policy's `price`)
Price = Callable[[str, Args], int]

PREFIX = "fu"
AGAIN, STYLE, NEXT, LONGER, MODEL, LIVE_PHOTO = "a", "s", "n", "l", "m", "p"
#: next-operation buttons under one result at most
MAX_NEXT = 6
CALLBACK_MAX_BYTES = 64
#: job ids are 64-bit database integers: a crafted larger one must name no job, not overflow the query
MAX_JOB_ID = 2**63 - 1


@dataclass(frozen=True)
class FollowUp:
    """A pressed follow-up button."""

    job_id: int
    action: str
    operation: str = ""
    argument: str = ""
    picture: int | None = None
    #: another model's length (the model is `argument`)
    seconds: int | None = None


def parse(data: str | None) -> FollowUp | None:
    """Decode follow-up callback data; None for anything else."""
    if not data or not data.startswith(PREFIX + ":") or len(data.encode()) > CALLBACK_MAX_BYTES:
        return None
    parts = data.split(":")
    if len(parts) < 3 or not (parts[1].isascii() and parts[1].isdecimal()) or int(parts[1]) > MAX_JOB_ID:
        return None
    job_id, action = int(parts[1]), parts[2]
    if action in (AGAIN, LONGER, LIVE_PHOTO) and len(parts) == 3:
        return FollowUp(job_id, action)
    if action == MODEL and len(parts) == 3:
        return FollowUp(job_id, MODEL)
    if action == MODEL and len(parts) == 5 and parts[3] and parts[4].isdecimal():
        return FollowUp(job_id, MODEL, argument=parts[3], seconds=int(parts[4]))
    if action == STYLE and len(parts) in (3, 4):
        return FollowUp(job_id, STYLE, argument=parts[3] if len(parts) == 4 else "")
    if action == NEXT and len(parts) in (5, 6):
        picture = parts[5] if len(parts) == 6 else None
        if picture is not None and not picture.isdecimal():
            return None
        return FollowUp(job_id, NEXT, parts[3], parts[4], int(picture) if picture is not None else None)
    return None


def _data(*parts: object) -> str | None:
    data = ":".join(str(part) for part in parts)
    return data if len(data.encode()) <= CALLBACK_MAX_BYTES else None


def next_operations(operations: Mapping[str, Operation]) -> list[tuple[Operation, str, str]]:
    """(operation, button label (a msgid), argument text) for what makes sense on one result image: the picture
    operations (at most MAX_NEXT), then the video ones."""
    found, videos = [], []
    for operation in operations.values():
        if operation.images != 1:
            continue
        for button in operation.menu_buttons:
            try:
                operation.parse(button.argument)
            except ArgumentError:  # a style or numbers are missing: not one tap
                continue
            (videos if operation.result is ResultKind.VIDEO else found).append(
                (operation, button.label, button.argument))
    return found[:MAX_NEXT] + videos


def choices(operation: Operation, argument: str) -> list[tuple[Text, str]]:
    """(label, argument text) of each choice a next operation's button leaves to pick on one picture (a video's
    models and lengths); [] where the argument text gives it, or the operation has none."""
    if operation.pick is None:
        return []
    return [(label, picked_text(operation, choice, argument)) for label, choice in operation.pick.offer(argument, 1)]


def priced(language: str, label: str | Text, credits: int) -> str:
    """A button's label with what pressing it spends ("Again · 12 credits")."""
    return tr(language, texts.PRICED_CHOICE, choice=label, cost=cost_note(language, credits))


def _next_label(language: str, operation: Operation, label: str, argument: str, price: Price) -> str:
    """A next operation's label; with the price where its priced choice has one option, which one tap spends."""
    offered = choices(operation, argument)
    if len(offered) != 1 or operation.pick is None or not operation.pick.priced:
        return tr(language, label)
    try:
        args = operation.parse(offered[0][1])
    except ArgumentError:  # an offered choice its parser refuses: the plain label, never a failed delivery
        return tr(language, label)
    return priced(language, tr(language, label), price(operation.name, args))


def keyboard(job: JobRecord, operation: Operation, results: Sequence[ResultFile], operations: Mapping[str, Operation],
             price: Price, app: AppLinks | None = None, bot_username: str | None = None) -> InlineKeyboardMarkup:
    """The buttons under the delivered `results` of `job` (with the Mini App's, when it is on)."""
    lang = job.language
    again = tr(lang, texts.FU_AGAIN)
    if operation.result is ResultKind.VIDEO:  # a video's again spends many credits at once: say how many
        again = priced(lang, again, price(operation.name, dict(job.args)))
    first = [InlineKeyboardButton(again, callback_data=_data(PREFIX, job.id, AGAIN))]
    if operation.result is ResultKind.VIDEO:
        return video_keyboard(job, operation, first, price, live_photo=_live_photo_fits(job, results))
    if operation.style_group is not None:
        first.append(InlineKeyboardButton(tr(lang, texts.FU_OTHER_STYLE), callback_data=_data(PREFIX, job.id, STYLE)))
    following = [InlineKeyboardButton(_next_label(lang, next_op, label, argument, price), callback_data=data)
                 for next_op, label, argument in next_operations(operations)
                 if (data := _data(PREFIX, job.id, NEXT, next_op.name, argument)) is not None]
    app_row = app.result_row(job, bot_username) if app is not None else []
    return InlineKeyboardMarkup([first, *rows(following, 3), *([app_row] if app_row else [])])


def _live_photo_fits(job: JobRecord, results: Sequence[ResultFile]) -> bool:
    """Whether the video animates a photo and fits a live photo: uploaded, 10 s or shorter and 10 MB at most."""
    video = results[0].video if len(results) == 1 else None
    return bool(job.inputs) and video is not None and all(fits_live_photo(video.duration, results[0].size))


def video_keyboard(job: JobRecord, operation: Operation, first: list[InlineKeyboardButton],
                   price: Price, *, live_photo: bool) -> InlineKeyboardMarkup:
    """Under a video: again, longer (while its model makes longer ones), another model and length, what spends
    at once with its price; and a live photo (free) when the video animates a photo and is short enough for one."""
    lang = job.language
    if operation.alternatives is not None and operation.alternatives(dict(job.args), len(job.inputs)):
        first.append(InlineKeyboardButton(tr(lang, texts.FU_OTHER_MODEL), callback_data=_data(PREFIX, job.id, MODEL)))
    rows_ = rows(first, 2)  # a priced label may not fit beside another
    if operation.longer is not None and (longer := operation.longer(dict(job.args))) is not None:
        label = priced(lang, tr(lang, texts.FU_LONGER, seconds=longer["duration"]), price(operation.name, longer))
        rows_.append([InlineKeyboardButton(label, callback_data=_data(PREFIX, job.id, LONGER))])
    if live_photo:
        rows_.append([InlineKeyboardButton(tr(lang, texts.FU_LIVE_PHOTO),
                                           callback_data=_data(PREFIX, job.id, LIVE_PHOTO))])
    return InlineKeyboardMarkup(rows_)


def model_keyboard(job: JobRecord, operation: Operation, price: Callable[[Args], int]) -> InlineKeyboardMarkup:
    """The other models and lengths for a video's job, each with its price; a press makes that job."""
    lang = job.language
    offered = operation.alternatives(dict(job.args), len(job.inputs)) if operation.alternatives is not None else []
    buttons = [InlineKeyboardButton(tr(lang, texts.PRICED_CHOICE, choice=label, cost=cost_note(lang, price(args))),
                                    callback_data=data)
               for label, args in offered
               if (data := _data(PREFIX, job.id, MODEL, args["model"], args["duration"])) is not None]
    return InlineKeyboardMarkup(rows(buttons, 1))


def pick_keyboard(job: JobRecord, choice: FollowUp, operation: Operation, price: Price) -> InlineKeyboardMarkup:
    """A next operation's choices for the picture `choice` names (a video's models and lengths), each with its
    price where they differ in it; a press makes that job."""
    lang = job.language
    is_priced = operation.pick is not None and operation.pick.priced
    buttons = [InlineKeyboardButton(priced(lang, label, price(operation.name, operation.parse(text))) if is_priced
                                    else render(lang, label), callback_data=data)
               for label, text in choices(operation, choice.argument)
               if (data := _data(PREFIX, job.id, NEXT, operation.name, text,
                                 *([] if choice.picture is None else [choice.picture]))) is not None]
    # a priced choice is a long label: one a row
    return InlineKeyboardMarkup(rows(buttons, 1 if is_priced else 3))


def style_keyboard(job: JobRecord, operation: Operation, styles: StyleCatalogue) -> InlineKeyboardMarkup:
    """The styles of the job's operation, each making a new job with the same input in that style."""
    group = styles.group(operation.style_group)
    buttons = [InlineKeyboardButton(style_label(job.language, style), callback_data=data) for style in group.styles.values()
               if (data := _data(PREFIX, job.id, STYLE, style.key)) is not None]
    return InlineKeyboardMarkup(rows(buttons, 2))


def picture_keyboard(job: JobRecord, choice: FollowUp) -> InlineKeyboardMarkup:
    """Which of a job's several results a next operation should take."""
    buttons = [InlineKeyboardButton(tr(job.language, texts.FU_PICTURE, number=index + 1), callback_data=data)
               for index in range(len(job.result_files))
               if (data := _data(PREFIX, job.id, NEXT, choice.operation, choice.argument, index)) is not None]
    return InlineKeyboardMarkup(rows(buttons, 5))
