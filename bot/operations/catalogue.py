"""One entry per operation: its command, arguments, input rules, request, menu buttons and shell options.

Adding an operation means its request model (`bot.aiart.models`), one `Operation` in `build_catalogue`,
and its renderer in the sandbox (`bot.sandbox.operations`); every other part of the bot reads this entry.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.aiart import models as api
from bot.i18n import N_, Text, lazy, nlazy
from bot.images import DEFAULT_LIMITS, RETOUCH_LIMITS, ImageLimits
from bot.operations.styles import StyleCatalogue

Args = dict[str, Any]

#: results larger than this on a side are not asked for (the service bounds upscales by max width/height)
UPSCALE_MAX_SIDE = 8192


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

    Where the bot does not ask (a typed command), the parser's default is used, as the usage says.
    """

    #: the question above the buttons (a msgid)
    question: str
    #: for an argument text: (label, the argument text with that choice); [] when the text gives it already
    offer: Callable[[str], list[tuple[Text, str]]]


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
    #: the argument text's parser; a styled one raises StyleMissing when no style is typed
    parser: Callable[[str], Args]
    build: Callable[[Args, Sequence[InputImage]], api.Request]
    describe: Callable[[Args], Text]
    request_type: type[api.Request]
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
    #: how many result images a job makes (each costs one service token)
    outputs: Callable[[Args], int] = field(default=lambda args: 1)
    #: the title as a noun, for sentences ("Colorizing needs a photo"), a msgid; None: the title is one already
    noun: str | None = None

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

    def parse(self, text: str) -> Args:
        """The arguments of an argument text; a missing style is the fallback's, if the operation has one."""
        try:
            return self.parser(text)
        except StyleMissing:
            if self.style_fallback is None:
                raise
            return self.parser(f"{self.style_fallback} {text}")

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


def _no_args(text: str) -> Args:
    return {}


_FACTOR = re.compile(r"^[x×]?\s*(\d{1,3}(?:\.0)?)\s*[x×]?$", re.IGNORECASE)


def _parse_upscale(text: str) -> Args:
    text = text.strip()
    if not text:
        return {"factor": 2}
    match = _FACTOR.match(text)
    factor = int(float(match.group(1))) if match else None
    if factor not in (2, 4):
        raise ArgumentError(N_("The upscale factor must be 2 or 4, for example /upscale 2"))
    return {"factor": factor}


def _build_upscale(args: Args, images: Sequence[InputImage]) -> api.Request:
    image = images[0]
    factor = args["factor"]
    return api.UpscaleRequest(image=image.ref, factor=factor,
                              max_width=min(image.width * factor, UPSCALE_MAX_SIDE),
                              max_height=min(image.height * factor, UPSCALE_MAX_SIDE))


_REMOVE_BG_ACTIONS = {"auto": "auto", "body": "SegmentBody", "person": "SegmentBody",
                      "object": "SegmentCommonImage", "thing": "SegmentCommonImage"}


def _parse_removebg(text: str) -> Args:
    word = text.strip().lower()
    if not word:
        return {"mode": "auto"}
    if word not in _REMOVE_BG_ACTIONS:
        raise ArgumentError(N_("Choose auto, body or object, for example /removebg body"))
    return {"mode": word}


def _parse_expand(text: str) -> Args:
    parts = text.replace(",", " ").split()
    if len(parts) not in (1, 4) or not all(re.fullmatch(r"\d{1,6}", part) for part in parts):
        raise ArgumentError(N_("Give the padding in pixels: four numbers (left, top, right, bottom) or one for "
                               "every side, for example /expand 100 0 100 0."))
    sides = [int(part) for part in parts] * (4 if len(parts) == 1 else 1)
    if any(side > api.MAX_PADDING for side in sides):
        raise ArgumentError(N_("Padding can be at most {most} pixels a side."), most=api.MAX_PADDING)
    if not any(sides):
        raise ArgumentError(N_("At least one side needs some padding, for example /expand 100 0 100 0."))
    return dict(zip(("left", "top", "right", "bottom"), sides, strict=True))


#: the /expand presets: (label, width part, height part) of the aspect ratios offered
_EXPAND_RATIOS = ((N_("Square"), 1, 1), ("4:3", 4, 3), ("16:9", 16, 9), ("9:16", 9, 16))
#: the "margin on every side" preset, as a share of the longer side
_EXPAND_MARGIN_SHARE = 0.1


def _expand_presets(max_side: int) -> Callable[[int, int], list[tuple[Text, str]]]:
    """Paddings that make a photo square, 4:3, 16:9 or 9:16, or give it a margin, within the limits."""

    def presets(width: int, height: int) -> list[tuple[Text, str]]:
        # the size the worker hands the service: the photo fitted into the operation's longest side
        if max(width, height) > max_side:
            scale = max_side / max(width, height)
            width, height = max(1, round(width * scale)), max(1, round(height * scale))
        offered: list[tuple[Text, tuple[int, ...]]] = []
        for label, a, b in _EXPAND_RATIOS:
            if width * b < height * a:
                extra = round(height * a / b) - width
                padding: tuple[int, ...] = (extra // 2, 0, extra - extra // 2, 0)
            else:
                extra = round(width * b / a) - height
                padding = (0, extra // 2, 0, extra - extra // 2)
            offered.append((lazy(label), padding))
        margin = max(1, round(_EXPAND_MARGIN_SHARE * max(width, height)))
        offered.append((lazy(N_("Margin {pixels} px"), pixels=margin), (margin,) * 4))
        return [(label, " ".join(map(str, padding))) for label, padding in offered
                if any(padding) and max(padding) <= api.MAX_PADDING]

    return presets


def _check_prompt(prompt: str, *, example: str) -> str:
    prompt = " ".join(prompt.split())
    if not prompt:
        raise ArgumentError(N_("Describe what you want, for example {example}"), example=example)
    if len(prompt) > api.MAX_PROMPT_CHARS:
        raise ArgumentError(N_("That description is {length} characters long; please keep it under {most}."),
                            length=len(prompt), most=api.MAX_PROMPT_CHARS)
    return prompt


#: the counts /headshot offers as buttons when the section names none
_HEADSHOT_COUNTS = (1, 2, 4)
_RATIO = re.compile(r"^\d{1,2}:\d{1,2}$")
_RESOLUTION = re.compile(r"^\d[kK]$")


@dataclass(frozen=True)
class _Catalogued:
    """Parsers and builders that need the style catalogue."""

    styles: StyleCatalogue

    def parse_imagine(self, text: str) -> Args:
        group = self.styles.group("imagine")
        sizes = tuple(group.settings.get("sizes") or ("1:1",))
        words = text.split()
        style = size = None
        # leading words may name a style and a size: "/imagine anime 16:9 a cat on a roof"
        while words and (style is None or size is None):
            word = words[0].lower()
            if style is None and group.get(word):
                style = word
            elif size is None and word in sizes:
                size = word
            else:
                break
            words.pop(0)
        prompt = _check_prompt(" ".join(words), example="/imagine a lighthouse at dawn")
        args = {"prompt": prompt, "size": size or group.settings.get("default_size", sizes[0])}
        if style is None:
            raise StyleMissing(_pick("imagine"))
        args["style"] = style
        return args

    def build_imagine(self, args: Args, images: Sequence[InputImage]) -> api.Request:
        style = self.styles.group("imagine").get(args["style"])
        return api.Text2ImgRequest(content=args["prompt"], template_id=style.template_id, size_id=args["size"])

    def parse_art(self, text: str) -> Args:
        group = self.styles.group("art")
        words = text.split()
        if not words:
            raise StyleMissing(_pick("art"))
        style = group.get(words[0])
        if style is None:
            raise ArgumentError(N_("I don't know the style {style}. Styles: {styles}"), style=repr(words[0][:32]),
                                styles=", ".join(group.names()))
        prompt = " ".join(words[1:])
        if len(prompt) > api.MAX_PROMPT_CHARS:
            raise ArgumentError(N_("Please keep the description under {most} characters."), most=api.MAX_PROMPT_CHARS)
        return {"style": style.key, "prompt": prompt}

    def build_art(self, args: Args, images: Sequence[InputImage]) -> api.Request:
        style = self.styles.group("art").get(args["style"])
        return api.Img2ImgRequest(image=images[0].ref, template_id=style.template_id, content=args.get("prompt", ""))

    def parse_headshot(self, text: str) -> Args:
        group = self.styles.group("headshot")
        words = text.split()
        if not words:
            raise StyleMissing(_pick("headshot"))
        style = group.get(words[0])
        if style is None:
            raise ArgumentError(N_("I don't know the headshot style {style}. Styles: {styles}"),
                                style=repr(words[0][:32]), styles=", ".join(group.names()))
        most = int(group.settings.get("max_count", 10))
        count = min(int(group.settings.get("default_count", 1)), most)
        if len(words) > 2 or (len(words) == 2 and not re.fullmatch(r"\d{1,3}", words[1])):
            raise ArgumentError(N_("Use /headshot <style> [count], for example {example}"),
                                example=f"/headshot {style.key} 2")
        if len(words) == 2:
            count = int(words[1])
            if not 1 <= count <= most:
                raise ArgumentError(N_("The count must be between 1 and {most}."), most=most)
        return {"style": style.key, "count": count}

    def headshot_counts(self, text: str) -> list[tuple[Text, str]]:
        """A style without a count: the section's `count_choices` (within `max_count`) as (label, argument text)."""
        words = text.split()
        if len(words) != 1:  # no style yet (the picker asks first), or a count typed
            return []
        group = self.styles.group("headshot")
        most = int(group.settings.get("max_count", 10))
        counts = [int(count) for count in group.settings.get("count_choices", _HEADSHOT_COUNTS) if 1 <= int(count) <= most]
        return [(nlazy("{count} headshot", "{count} headshots", count), f"{words[0]} {count}")
                for count in counts]

    def build_headshot(self, args: Args, images: Sequence[InputImage]) -> api.Request:
        style = self.styles.group("headshot").get(args["style"])
        return api.HeadshotRequest(image=images[0].ref,
                                   templates=(api.HeadshotTemplate(style.template_id, args["count"]),))

    def parse_generate(self, text: str) -> Args:
        group = self.styles.group("generate")
        words = text.split()
        model = ratio = resolution = None
        # leading words may name a model, an aspect ratio and a resolution: "/generate seedream 16:9 4k a fox"
        while words:
            word = words[0].lower()
            if model is None and group.get(word):
                model = word
            elif ratio is None and _RATIO.match(word):
                ratio = word
            elif resolution is None and _RESOLUTION.match(word):
                resolution = word
            else:
                break
            words.pop(0)
        prompt = _check_prompt(" ".join(words), example="/generate a lighthouse at dawn")
        if model is None:  # the entry's style_fallback (the section's default) fills it in where there is one
            raise StyleMissing(_pick("generate"))
        style = group.get(model)
        ratios = style.extra.get("ratios", {})
        ratio = ratio or group.settings.get("default_ratio", "1:1")
        if ratio not in ratios:
            raise ArgumentError(N_("{model} draws in {ratios}; for example {example}"), model=style.label,
                                ratios=", ".join(ratios), example=f"/generate {model} 16:9 a lighthouse")
        resolutions = style.extra.get("resolutions") or ["1k"]
        resolution = resolution or style.extra.get("default_resolution", resolutions[0])
        if resolution not in resolutions:
            raise ArgumentError(N_("{model} draws at {resolutions}."), model=style.label,
                                resolutions=", ".join(resolutions))
        return {"model": model, "ratio": ratio, "resolution": resolution, "prompt": prompt}

    def build_generate(self, args: Args, images: Sequence[InputImage]) -> api.Request:
        style = self.styles.group("generate").get(args["model"])
        width, height = generation_size(style.extra, args["ratio"], args["resolution"])
        return api.ImageGenerationRequest(model_id=style.template_id, prompt=args["prompt"], width=width,
                                          height=height, images=tuple(image.ref for image in images))


def generation_size(rules: Mapping[str, Any], ratio: str, resolution: str) -> tuple[int, int]:
    """A model's width and height for a ratio and resolution, computed as the provider's client does.

    The 1k base size of the ratio times the resolution's k, then fitted into the model's pixel budget
    (keeping the ratio) and its longest side.
    """
    base_width, base_height = rules["ratios"][ratio]
    k = int(resolution[:-1])
    width, height = base_width * k, base_height * k
    a, b = (int(part) for part in ratio.split(":"))
    if (least := rules.get("min_pixels")) and width * height < least:
        height = math.ceil(math.sqrt(least * b / a))
        width = math.ceil(height * a / b)
        while width * height < least:
            if width / height < a / b:
                width += 1
            else:
                height += 1
    if (most := rules.get("max_pixels")) and width * height > most:
        height = int(math.sqrt(most * b / a))
        width = int(height * a / b)
        while width * height > most:
            if width >= height:
                width -= 1
            else:
                height -= 1
    if (longest := rules.get("max_long_side")) and max(width, height) > longest:
        scale = longest / max(width, height)
        width, height = max(1, int(width * scale)), max(1, int(height * scale))
    return width, height


def _pick(group: str) -> str:
    return N_("Pick a style below.")


def _parse_replace(text: str) -> Args:
    return {"prompt": _check_prompt(text, example="/replace a red umbrella")}


def _style_caption(title: str) -> Callable[[Args], Text]:
    return lambda args: (lazy(N_("{title}: {style} — {prompt}"), title=lazy(title), style=args["style"],
                              prompt=args["prompt"][:200]) if args.get("prompt")
                         else lazy(N_("{title}: {style}"), title=lazy(title), style=args["style"]))


def _option(flag: str, **keywords: Any) -> CliOption:
    return CliOption(flag, keywords)


def build_catalogue(styles: StyleCatalogue) -> dict[str, Operation]:
    """All operations, keyed by command name, in the order menus show them."""
    c = _Catalogued(styles)
    # Numbers a person would rather pick than type: the headshot count is a `pick` (it sets the cost, and the
    # style keyboard is asking anyway); the upscale factor (menu buttons, /settings), /imagine's size and
    # /generate's ratio and resolution keep their defaults, since asking would add a step to every request.
    operations = [
        Operation("upscale", N_("Upscale"), N_("Enlarge a photo 2× or 4×"), N_("/upscale [2|4]"), 1,
                  _parse_upscale, _build_upscale, lambda a: lazy(N_("Upscale ×{factor}"), factor=a["factor"]),
                  api.UpscaleRequest, limits=replace(DEFAULT_LIMITS, max_side=2048), typical_seconds=8,
                  menu=(MenuButton(N_("Upscale 2×"), "2"), MenuButton(N_("Upscale 4×"), "4")), default_choices=("2", "4"), noun=N_("Upscaling"),
                  cli=(_option("--factor", type=int, choices=(2, 4), default=2),)),
        Operation("retouch", N_("Skin retouch"), N_("Smooth skin in a portrait"), N_("/retouch"), 1,
                  _no_args, lambda a, i: api.RetouchRequest(image=i[0].ref), lambda a: lazy(N_("Skin retouch")),
                  api.RetouchRequest, limits=RETOUCH_LIMITS, typical_seconds=8),
        Operation("imagine", N_("Imagine"), N_("Draw a picture from a description"),
                  N_("/imagine [style] [size] <description>"), 0, c.parse_imagine, c.build_imagine,
                  lambda a: lazy(N_("Imagine ({style}, {size}): {prompt}"), style=a["style"], size=a["size"],
                                 prompt=a["prompt"][:300]), api.Text2ImgRequest,
                  style_group="imagine", image_names=(), typical_seconds=15, noun=N_("Drawing from a description"),
                  cli=(_option("--style"), _option("--size"), _option("--prompt", required=True))),
        Operation("art", N_("Art effect"), N_("Repaint a photo in an art style"), N_("/art <style> [description]"), 1,
                  c.parse_art, c.build_art, _style_caption(N_("Art")), api.Img2ImgRequest,
                  limits=replace(DEFAULT_LIMITS, max_side=1536), style_group="art", typical_seconds=15,
                  cli=(_option("--style", required=True), _option("--prompt", default=""))),
        Operation("removebg", N_("Remove background"), N_("Cut out the subject (transparent PNG)"),
                  N_("/removebg [auto|body|object]"), 1, _parse_removebg,
                  lambda a, i: api.RemoveBackgroundRequest(image=i[0].ref, action=_REMOVE_BG_ACTIONS[a["mode"]]),
                  lambda a: (lazy(N_("Background removed")) if a["mode"] == "auto"
                             else lazy(N_("Background removed ({mode})"), mode=a["mode"])),
                  api.RemoveBackgroundRequest, limits=replace(DEFAULT_LIMITS, max_side=4096),
                  result=ResultKind.PNG_DOCUMENT, typical_seconds=6, noun=N_("Background removal"),
                  cli=(_option("--mode", choices=("auto", "body", "object"), default="auto"),)),
        Operation("headshot", N_("Headshot"), N_("Make headshots in a style"), N_("/headshot <style> [count]"), 1,
                  c.parse_headshot, c.build_headshot,
                  lambda a: lazy(N_("Headshot: {style} ×{count}"), style=a["style"], count=a["count"]),
                  api.HeadshotRequest, limits=replace(DEFAULT_LIMITS, max_side=2048), result=ResultKind.ALBUM,
                  style_group="headshot", typical_seconds=40, outputs=lambda a: a["count"],
                  # each headshot costs: where the bot asks for a style it asks how many too; typed, the default
                  pick=Pick(N_("How many headshots?"), c.headshot_counts),
                  cli=(_option("--style", required=True), _option("--count", type=int))),
        Operation("colorize", N_("Colorize"), N_("Add colour to a black-and-white photo"), N_("/colorize"), 1,
                  _no_args, lambda a, i: api.ColorizeRequest(image=i[0].ref), lambda a: lazy(N_("Colorized")),
                  api.ColorizeRequest, limits=replace(DEFAULT_LIMITS, max_side=4096), typical_seconds=8,
                  noun=N_("Colorizing")),
        Operation("restore", N_("Restore"), N_("Repair an old or damaged photo"), N_("/restore"), 1,
                  _no_args, lambda a, i: api.RestoreRequest(image=i[0].ref), lambda a: lazy(N_("Restored")),
                  api.RestoreRequest, limits=replace(DEFAULT_LIMITS, max_side=2048), typical_seconds=10,
                  noun=N_("Restoration")),
        Operation("faceswap", N_("Face swap"), N_("Put a face into another photo"), N_("/faceswap"), 2,
                  _no_args, lambda a, i: api.FaceSwapRequest(image=i[0].ref, template_image=i[1].ref),
                  lambda a: lazy(N_("Face swap")), api.FaceSwapRequest, limits=replace(DEFAULT_LIMITS, max_side=2048),
                  image_names=(N_("face photo"), N_("template photo")), typical_seconds=10),
        Operation("expand", N_("Expand"), N_("Extend a photo beyond its edges"),
                  N_("/expand <left> <top> <right> <bottom>"), 1,
                  _parse_expand, lambda a, i: api.ExpandRequest(image=i[0].ref, **a),
                  lambda a: lazy(N_("Expanded by {left}/{top}/{right}/{bottom} px"), **a), api.ExpandRequest,
                  limits=replace(DEFAULT_LIMITS, max_side=2048), typical_seconds=12, presets=_expand_presets(2048),
                  noun=N_("Expansion"),
                  cli=(_option("--pad", nargs=4, type=int, metavar=("LEFT", "TOP", "RIGHT", "BOTTOM"),
                               required=True),)),
        Operation("replace", N_("Replace"), N_("Paint something where a mask is white"),
                  N_("/replace <what to paint>"), 2, _parse_replace,
                  lambda a, i: api.ReplaceRequest(image=i[0].ref, mask=i[1].ref, content=a["prompt"]),
                  lambda a: lazy(N_("Replace: {prompt}"), prompt=a["prompt"][:300]), api.ReplaceRequest,
                  limits=replace(DEFAULT_LIMITS, max_side=2048), menu=(), image_names=(N_("photo"), N_("mask")),
                  typical_seconds=15, noun=N_("Replacement"), cli=(_option("--prompt", required=True),)),
        Operation("generate", N_("Generate"), N_("Draw a picture with a chosen model, optionally from reference photos"),
                  N_("/generate [model] [ratio] [resolution] <description>"), 0, c.parse_generate, c.build_generate,
                  lambda a: lazy(N_("Generate ({model}, {ratio}, {resolution}): {prompt}"), model=a["model"],
                                 ratio=a["ratio"], resolution=a["resolution"], prompt=a["prompt"][:300]),
                  api.ImageGenerationRequest, limits=replace(DEFAULT_LIMITS, max_side=2048),
                  style_group="generate", style_argument="model", style_fallback=styles.group("generate").default,
                  image_names=(N_("reference photo"),), noun=N_("Generation"),
                  max_images=int(styles.group("generate").settings.get("max_references", 4)), typical_seconds=20,
                  cli=(_option("--model"), _option("--ratio"), _option("--resolution"),
                       _option("--prompt", required=True))),
    ]
    return {operation.name: operation for operation in operations}
