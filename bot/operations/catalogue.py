"""What an operation's entry holds: its command, arguments, input rules, request, menu buttons and shell options.

Each operation builds its entry in its own module (`bot.operations.<name>`), which `bot.operations.registry`
collects; every other part of the bot reads the entries.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.aiart import models as api
from bot.i18n import N_, Text
from bot.images import DEFAULT_LIMITS, ImageLimits

Args = dict[str, Any]


class ArgumentError(ValueError):
    """Arguments a user typed that cannot be used; the message (a msgid with its fields) says what to type instead.

    The parsers do not know the user's language: `text` is rendered where it is (`str()` is English).
    """

    def __init__(self, message: str, /, **fields: object) -> None:
        self.text = Text(message, fields)
        super().__init__(str(self.text))


class StyleMissing(ArgumentError):
    """No style was typed: the bot offers a keyboard of styles instead of failing."""


class ResultKind(enum.StrEnum):
    """How results are delivered."""

    PHOTO = "photo"                # a photo, or a document when too large for a photo
    PNG_DOCUMENT = "png_document"  # a PNG file, keeping transparency
    ALBUM = "album"                # several images
    VIDEO = "video"                # an H.264 MP4, sent as a Telegram video (a link when too large)


@dataclass(frozen=True)
class InputImage:
    """An input image as handed to the service: a reference and its size after normalising."""

    ref: api.ImageRef
    width: int
    height: int


@dataclass(frozen=True)
class MenuButton:
    """A button of the menu under a photo sent without a command: its label and the argument text it types."""

    label: str
    argument: str = ""


@dataclass(frozen=True)
class Pick:
    """An argument a person would rather pick than type, offered as buttons where the bot is asking anyway
    (after the photo menu or a style picker) and the argument text leaves it out.

    Where the bot does not ask (a typed command), the parser's default is used, as the usage says; a priced
    choice is asked for a typed command too, so that its price is seen before anything is spent.
    """

    #: the question above the buttons (a msgid)
    question: str
    #: for an argument text and the number of input images: (label, the argument text with that choice);
    #: [] when the text gives it already
    offer: Callable[[str, int], list[tuple[Text, str]]]
    #: whether each button also shows what a job with that choice costs (choices that differ in price)
    priced: bool = False
    #: whether a button's argument text is the choice alone, the typed words being read again from the request
    #: when it is pressed (a video's description would not fit in a button's data)
    choice_only: bool = False


@dataclass(frozen=True)
class CliOption:
    """An option of `python -m bot try <operation>`: argparse's flag and keywords.

    The command text a chat user would type is the options' values joined in this order.
    """

    flag: str
    keywords: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """Everything the bot knows about one operation.

    `title`, `summary`, `usage`, menu labels and `image_names` are msgids (rendered with `bot.i18n.tr`);
    `describe` gives a `Text` for the status line and the result's caption.
    """

    name: str
    title: str
    summary: str
    usage: str
    #: how many images the operation needs
    images: int
    #: the service request a job of it sends
    request_type: type[api.Request]
    describe: Callable[[Args], Text]
    #: the argument text's parser; a styled one raises StyleMissing when no style is typed; by default none are
    #: taken (whatever follows the command is ignored)
    parser: Callable[[str], Args] = field(default=lambda text: {})
    #: the request for the parsed arguments and input images; None: the first image and the arguments as its fields
    builder: Callable[[Args, Sequence[InputImage]], api.Request] | None = None
    limits: ImageLimits = DEFAULT_LIMITS
    result: ResultKind = ResultKind.PHOTO
    style_group: str | None = None
    #: the argument that holds the style group's choice (a style, or /generate's model)
    style_argument: str = "style"
    #: the style used when none is typed nor chosen in /settings; None: the bot asks with a picker
    style_fallback: str | None = None
    #: the photo menu's buttons for this operation; None: one button with the title, (): not offered there
    menu: tuple[MenuButton, ...] | None = None
    image_names: tuple[str, ...] = (N_("photo"),)
    #: how many images it takes at most (more than `images` where some are optional references)
    max_images: int | None = None
    cli: tuple[CliOption, ...] = ()
    #: argument texts a person may pick as their default in /settings (used when they type none), each shown
    #: with the photo-menu label of the button with that argument
    default_choices: tuple[str, ...] = ()
    #: arguments offered as buttons when none are typed, for a photo of (width, height): (label, argument text)
    presets: Callable[[int, int], list[tuple[Text, str]]] | None = None
    #: an argument offered as buttons where the bot is asking anyway and the text leaves it out
    pick: Pick | None = None
    #: a typical task duration, used to place the first status check before any are measured
    typical_seconds: float = 10.0
    #: the typical duration for a job's arguments (a video's model), when it depends on them
    typical_of: Callable[[Args], float] | None = None
    #: whether the service's time grows with the input's pixels (image work); a video's does not
    time_by_pixels: bool = True
    #: how many result images a job makes (each costs one service token)
    outputs: Callable[[Args], int] = field(default=lambda args: 1)
    #: the title as a noun, for sentences ("Colorizing needs a photo"), a msgid; None: the title is one already
    noun: str | None = None
    #: what inline mode's "Generate" queues (`@bot <description>` in any chat): one text-only operation
    inline: bool = False
    #: the same job made longer (a video's next length), None when it cannot be; None: no such follow-up
    longer: Callable[[Args], Args | None] | None = None
    #: the same job (of so many input images) with each other choice of model and length that can make it:
    #: (label, arguments); None: no such follow-up
    alternatives: Callable[[Args, int], list[tuple[Text, Args]]] | None = None
    #: raises ArgumentError where the arguments cannot make a job of so many input images (a video model
    #: that does not serve the endpoint those images go to); None: any arguments the parser gives can
    check: Callable[[Args, int], None] | None = None
    #: seconds a job may take from queueing to its result; None: the operator's JOB_DEADLINE_S
    deadline_s: float | None = None
    #: the Mini App screen that queues this operation ("paint": a painted mask, "frame": paddings); None: none
    mini_app: str | None = None

    @property
    def title_noun(self) -> str:
        """The operation's name (a msgid) for use inside a sentence, where a verb-like button title reads wrong."""
        return self.title if self.noun is None else self.noun

    @property
    def accepts_base64(self) -> bool:
        """Whether the service takes this operation's images as BASE64 (else they go by URL)."""
        return self.request_type.accepts_base64

    @property
    def most_images(self) -> int:
        """How many images one job of this operation takes at most."""
        return self.images if self.max_images is None else self.max_images

    def usual_seconds(self, args: Args) -> float:
        """How long a task with these arguments typically takes."""
        return self.typical_seconds if self.typical_of is None else self.typical_of(args)

    def build(self, args: Args, images: Sequence[InputImage]) -> api.Request:
        """The service request for a job's arguments and its input images."""
        if self.builder is None:
            return self.request_type(images[0].ref, **args)
        return self.builder(args, images)

    def parse(self, text: str) -> Args:
        """The arguments of an argument text; a missing style is the fallback's, if the operation has one."""
        try:
            return self.parser(text)
        except StyleMissing:
            if self.style_fallback is None:
                raise
            return self.parser(f"{self.style_fallback} {text}")

    def refusal(self, args: Args, images: int) -> Text | None:
        """Why these arguments cannot make a job of so many input images (see `check`); None when they can."""
        if self.check is None:
            return None
        try:
            self.check(args, images)
        except ArgumentError as error:
            return error.text
        return None

    def lacks_style(self, text: str) -> bool:
        """Whether the argument text names no style where the operation takes one (a default may fill it in)."""
        if self.style_group is None:
            return False
        try:
            self.parser(text)
        except StyleMissing:
            return True
        except ArgumentError:  # something else is wrong: the parser's message says what
            pass
        return False

    def choice_label(self, choice: str) -> str | None:
        """The photo menu's label (a msgid) of an argument text among `default_choices`, if the menu has one."""
        return next((button.label for button in self.menu_buttons if button.argument == choice), None)

    @property
    def menu_buttons(self) -> tuple[MenuButton, ...]:
        """The photo menu's buttons for this operation (none when it takes no photo)."""
        if self.images == 0:
            return ()
        return (MenuButton(self.title),) if self.menu is None else self.menu

    def command_text(self, values: Mapping[str, Any]) -> str:
        """The argument text a chat user would type, from the values of this operation's CLI options."""
        words: list[str] = []
        for option in self.cli:
            value = values.get(option.flag.lstrip("-").replace("-", "_"))
            for part in value if isinstance(value, list | tuple) else (value,):
                if part is not None and str(part) != "":
                    words.append(str(part))
        return " ".join(words)


def option(flag: str, **keywords: Any) -> CliOption:
    """A `python -m bot try` option: argparse's flag and keywords."""
    return CliOption(flag, keywords)
