"""Animate: a photo brought to life as a short video, a video from a start frame to an end frame, or (three or
four photos) a video of the people and things in them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from bot.i18n import N_, Text, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations import videos
from bot.operations.catalogue import Args, InputImage, Operation, ResultKind, option
from bot.operations.styles import StyleCatalogue
from bot.operations.videos import (
    CHARACTER2VIDEO,
    IMG2VIDEO,
    STARTEND2VIDEO,
    VideoRequest,
    build_video,
    parse_video_args,
    typical_seconds,
    video_group,
)

#: the longest side handed to the service: video models work at 1080p at most
MAX_INPUT_SIDE = 2048
#: a video job's deadline: tasks take minutes, and the service may queue them
DEADLINE_S = 1800.0
#: the endpoints its jobs go to
KINDS = (IMG2VIDEO, STARTEND2VIDEO, CHARACTER2VIDEO)
#: reference images a character video takes (the provider's client requires at least two)
MAX_CHARACTER_IMAGES = 4


@dataclass(frozen=True)
class ImageToVideoRequest(VideoRequest):
    """One photo brought to life; the prompt says how it moves."""

    path: ClassVar[str] = "/v1/aiart/img2video/{model_id}"
    kind: ClassVar[str] = IMG2VIDEO
    image_count: ClassVar[tuple[int, int]] = (1, 1)


@dataclass(frozen=True)
class StartEndVideoRequest(VideoRequest):
    """A video from a start frame to an end frame."""

    path: ClassVar[str] = "/v1/aiart/startend2video/{model_id}"
    kind: ClassVar[str] = STARTEND2VIDEO
    image_count: ClassVar[tuple[int, int]] = (2, 2)


@dataclass(frozen=True)
class CharacterVideoRequest(VideoRequest):
    """A video of the people or things in three or more reference images."""

    path: ClassVar[str] = "/v1/aiart/character2video/{model_id}"
    kind: ClassVar[str] = CHARACTER2VIDEO
    image_count: ClassVar[tuple[int, int]] = (2, MAX_CHARACTER_IMAGES)


#: the request each endpoint takes
REQUESTS: dict[str, type[VideoRequest]] = {IMG2VIDEO: ImageToVideoRequest, STARTEND2VIDEO: StartEndVideoRequest,
                                           CHARACTER2VIDEO: CharacterVideoRequest}


def kind_of(images: int) -> str:
    """The endpoint a job of so many photos goes to: one photo, two frames, or three and more references."""
    return IMG2VIDEO if images <= 1 else STARTEND2VIDEO if images == 2 else CHARACTER2VIDEO


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; models, lengths and resolution are the catalogue's "video" section."""
    group = video_group(styles)

    def parse(text: str) -> Args:
        return parse_video_args(group, KINDS, text, example="/animate 10s she smiles")

    def build(args: Args, images: Sequence[InputImage]) -> VideoRequest:
        return build_video(group, REQUESTS[kind_of(len(images))], args, images)

    def describe(args: Args) -> Text:
        if args.get("prompt"):
            return lazy(N_("Animate ({model}, {seconds} s): {prompt}"), model=group.label(args["model"]),
                        seconds=args["duration"], prompt=args["prompt"][:300])
        return lazy(N_("Animate ({model}, {seconds} s)"), model=group.label(args["model"]), seconds=args["duration"])

    default = group.styles.get(group.default or "") or next(iter(group.styles.values()))
    return Operation(
        name="animate", title=N_("Animate"), summary=N_("Bring a photo to life as a short video, or go from one "
                                                      "photo to a second"),
        usage=N_("/animate [model] [length, e.g. 10s] [how it moves]"), images=1, max_images=MAX_CHARACTER_IMAGES,
        request_type=ImageToVideoRequest, parser=parse, builder=build, describe=describe,
        limits=replace(DEFAULT_LIMITS, max_side=MAX_INPUT_SIDE),
        result=ResultKind.VIDEO, image_names=(N_("photo"), N_("end frame")), noun=N_("Animation"),
        typical_seconds=typical_seconds(default), deadline_s=DEADLINE_S, time_by_pixels=False,
        typical_of=lambda args: typical_seconds(group.styles[args["model"]]), pick=videos.pick(group, KINDS, kind_of),
        longer=lambda args: videos.longer(group, args),
        alternatives=lambda args, images: videos.alternatives(group, kind_of(images), args),
        check=lambda args, images: videos.check_model(group, kind_of(images), args),
        cli=(option("--model"), option("--length", help="e.g. 10s"), option("--prompt")))
