"""Video requests and models, shared by /animate (one photo or two frames) and /video (a description).

The four video endpoints and their body are the provider's own client's (`fotor-sdk` 0.1.10, `tasks.py`):
`{prompt, duration, resolution, aspect_ratio, scenes: "normal", enableAudio}` plus `imageUrls` where images
are taken, each POSTed to `/v1/aiart/<kind>/{model_id}`. The service publishes no per-model durations or
resolutions, so the models the bot offers, their lengths and usual time are operator data: the "video"
section of the style catalogue (styles.json).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from bot.aiart.models import MAX_PROMPT_CHARS, ImageRef, Request, require, require_image, require_prompt
from bot.i18n import N_, Text, lazy
from bot.operations.catalogue import ArgumentError, InputImage, Pick
from bot.operations.parsing import leading_words
from bot.operations.styles import Style, StyleCatalogue, StyleGroup, load_catalogue

#: the video endpoints, by the service's name for each
TEXT2VIDEO = "text2video"
IMG2VIDEO = "img2video"
STARTEND2VIDEO = "startend2video"
CHARACTER2VIDEO = "character2video"
#: what the provider's client sends and the bot offers: lengths in whole seconds, resolutions, aspect ratios
MAX_VIDEO_SECONDS = 15
RESOLUTIONS = ("480p", "720p", "1080p")
ASPECT_RATIOS = ("16:9", "9:16", "1:1", "4:3", "3:4", "21:9")
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SECONDS = re.compile(r"^(\d{1,2})s$")


@dataclass(frozen=True)
class VideoRequest(Request):
    """A video task: the provider client's body, POSTed to the endpoint of `kind` with the model in the path."""

    #: the endpoint's name (text2video, img2video, ...), which the path holds before the model
    kind: ClassVar[str] = TEXT2VIDEO
    #: the upload slot's type the provider's client uses for every video input
    upload_type: ClassVar[str] = "img2video"
    #: how many images the endpoint takes: (least, most)
    image_count: ClassVar[tuple[int, int]] = (0, 0)
    model_id: str
    prompt: str = ""
    duration: int = 5
    resolution: str = "720p"
    aspect_ratio: str = "16:9"
    images: tuple[ImageRef, ...] = ()
    enable_audio: bool = False

    def __post_init__(self) -> None:
        require(bool(_MODEL_ID.match(self.model_id)), "model_id must be a plain identifier")
        require_prompt(self.prompt, required=self.kind == TEXT2VIDEO)
        require(isinstance(self.duration, int) and 1 <= self.duration <= MAX_VIDEO_SECONDS,
                f"duration must be 1..{MAX_VIDEO_SECONDS} seconds")
        require(self.resolution in RESOLUTIONS, f"resolution must be one of {', '.join(RESOLUTIONS)}")
        require(self.aspect_ratio in ASPECT_RATIOS, f"aspect_ratio must be one of {', '.join(ASPECT_RATIOS)}")
        least, most = self.image_count
        require(least <= len(self.images) <= most, f"{self.kind} takes {least}..{most} images")
        for image in self.images:
            require_image(image)

    @property
    def endpoint(self) -> str:
        return self.path.format(model_id=self.model_id)

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": self.prompt, "duration": self.duration, "resolution": self.resolution,
                                "aspect_ratio": self.aspect_ratio, "scenes": "normal",
                                "enableAudio": self.enable_audio}
        if self.image_count[1]:
            body["imageUrls"] = list(self.images)
        return body


def video_group(styles: StyleCatalogue) -> StyleGroup:
    """The video models: the operator's "video" section, or the shipped one where their file has none."""
    group = styles.groups.get("video")
    return group if group is not None else load_catalogue().group("video")


def models_for(group: StyleGroup, kind: str) -> list[Style]:
    """The models that serve an endpoint, in catalogue order."""
    return [style for style in group.styles.values() if kind in style.extra.get("kinds", ())]


def durations(style: Style) -> list[int]:
    """The lengths (seconds) the operator offers for a model."""
    return [int(seconds) for seconds in style.extra.get("durations", [5])]


def typical_seconds(style: Style) -> float:
    """How long a task of this model usually takes."""
    return float(style.extra.get("typical_seconds", 90))


def parse_video_args(group: StyleGroup, kinds: Sequence[str], text: str, *, example: str) -> dict[str, Any]:
    """Leading words naming a model, a length ("10s") and an aspect ratio, then the words of the prompt."""
    offered = {style.key for kind in kinds for style in models_for(group, kind)}
    words = text.split()
    found = leading_words(words, model=lambda word: word in offered,
                          duration=lambda word: bool(_SECONDS.match(word)),
                          ratio=lambda word: word in ASPECT_RATIOS)
    # untyped, the default model, else the first that serves every endpoint of the operation, else any offered
    everywhere = {style.key for style in group.styles.values() if set(kinds) <= set(style.extra.get("kinds", ()))}
    model_key = found["model"] or next((key for keys in (everywhere, offered)
                                        for key in [group.default, *group.styles] if key in keys), None)
    if model_key is None:
        raise ArgumentError(N_("No video model is offered for this; ask the bot's operator."))
    style = group.styles[model_key]
    lengths = durations(style)
    seconds = int(_SECONDS.match(found["duration"]).group(1)) if found["duration"] else int(
        group.settings.get("default_duration", lengths[0]))
    if seconds not in lengths:
        raise ArgumentError(N_("{model} makes videos of {lengths} seconds; for example {example}"),
                            model=style.label, lengths=", ".join(map(str, lengths)), example=example)
    prompt = " ".join(words)
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ArgumentError(N_("That description is {length} characters long; please keep it under {most}."),
                            length=len(prompt), most=MAX_PROMPT_CHARS)
    return {"model": model_key, "duration": seconds, "ratio": found["ratio"], "prompt": prompt}


def nearest_ratio(width: int, height: int) -> str:
    """The offered aspect ratio closest to a picture's."""
    def distance(ratio: str) -> float:
        a, b = (int(part) for part in ratio.split(":"))
        return abs(a / b - width / height)
    return min(ASPECT_RATIOS, key=distance)


def build_video(group: StyleGroup, kind: type[VideoRequest], args: dict[str, Any],
                images: Sequence[InputImage]) -> VideoRequest:
    """The request of the given kind for a video job, with the model's id, the job's length and aspect ratio."""
    # never another model than the job's: its price is the chosen model's (queueing checks it; this is the guard)
    check_model(group, kind.kind, args)
    style = group.styles[args["model"]]
    ratio = args.get("ratio") or (nearest_ratio(images[0].width, images[0].height) if images
                                  else group.settings.get("default_ratio", "16:9"))
    return kind(model_id=style.template_id, prompt=args.get("prompt", ""), duration=args["duration"],
                resolution=str(group.settings.get("resolution", "720p")), aspect_ratio=ratio,
                images=tuple(image.ref for image in images))


#: a model and length to pick, as a button (the bot adds the price)
CHOICE = N_("{model} · {seconds} s")
PICK_QUESTION = N_("Pick a model and length (the price is shown on each):")


#: what each endpoint makes, for a sentence ("Kling v3 cannot make a video from two frames")
KIND_NAMES = {TEXT2VIDEO: N_("a video from a description"), IMG2VIDEO: N_("a video from one photo"),
              STARTEND2VIDEO: N_("a video from two frames"), CHARACTER2VIDEO: N_("a video from several photos")}


def check_model(group: StyleGroup, kind: str, args: dict[str, Any]) -> None:
    """Raise ArgumentError, naming the models that can, when the job's model does not serve its endpoint."""
    style = group.get(str(args.get("model", "")))
    if style is not None and kind in style.extra.get("kinds", ()):
        return
    able = models_for(group, kind)
    if not able:
        raise ArgumentError(N_("No video model is offered for this; ask the bot's operator."))
    raise ArgumentError(N_("{model} cannot make {kind}; one of these can: {models}."),
                        model=style.label if style is not None else str(args.get("model", "")),
                        kind=lazy(KIND_NAMES[kind]), models=", ".join(able_style.label for able_style in able))


def choices(group: StyleGroup, kinds: Sequence[str]) -> list[tuple[Style, int]]:
    """Every offered model for these endpoints with each of its lengths, in catalogue order."""
    seen: dict[str, Style] = {}
    for kind in kinds:
        for style in models_for(group, kind):
            seen.setdefault(style.key, style)
    return [(style, seconds) for style in seen.values() for seconds in durations(style)]


def pick(group: StyleGroup, kinds: Sequence[str], kind_of: Callable[[int], str]) -> Pick | None:
    """The model-and-length buttons, each for the endpoint a job's images go to (`kind_of` their number); None
    when no model is offered. A button carries the choice alone: the typed description is read again. One
    choice is no question: the bot takes it at once."""
    if not choices(group, kinds):
        return None
    names = {style.key for style, _ in choices(group, kinds)}

    def offer(text: str, images: int = 1) -> list[tuple[Text, str]]:
        words = text.split()
        found = leading_words(list(words), model=lambda word: word in names,
                              duration=lambda word: bool(_SECONDS.match(word)))
        offered = choices(group, [kind_of(images)])
        if found["model"] or found["duration"]:
            return []
        return [(lazy(CHOICE, model=style.label, seconds=seconds), f"{style.key} {seconds}s")
                for style, seconds in offered]

    return Pick(PICK_QUESTION, offer, priced=True, choice_only=True)


def longer(group: StyleGroup, args: dict[str, Any]) -> dict[str, Any] | None:
    """The job's arguments with its model's next longer length; None at the longest."""
    style = group.get(str(args.get("model", "")))
    if style is None:
        return None
    more = [seconds for seconds in durations(style) if seconds > int(args.get("duration", 0))]
    return {**args, "duration": more[0]} if more else None


def alternatives(group: StyleGroup, kind: str, args: dict[str, Any]) -> list[tuple[Text, dict[str, Any]]]:
    """The job's arguments with every other model and length that serves its endpoint, with labels."""
    return [(lazy(CHOICE, model=style.label, seconds=seconds), {**args, "model": style.key, "duration": seconds})
            for style, seconds in choices(group, [kind])
            if (style.key, seconds) != (args.get("model"), args.get("duration"))]
