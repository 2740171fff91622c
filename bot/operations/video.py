"""Video: a short video drawn from a description."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from bot.i18n import N_, lazy
from bot.operations import videos
from bot.operations.catalogue import Args, InputImage, Operation, ResultKind, option
from bot.operations.parsing import check_prompt
from bot.operations.styles import StyleCatalogue
from bot.operations.videos import TEXT2VIDEO, VideoRequest, build_video, parse_video_args, typical_seconds, video_group

#: a video job's deadline: tasks take minutes, and the service may queue them
DEADLINE_S = 1800.0
#: the endpoints its jobs go to
KINDS = (TEXT2VIDEO,)
_EXAMPLE = "/video a paper boat sailing down a rainy street"


@dataclass(frozen=True)
class TextToVideoRequest(VideoRequest):
    """A video from a description."""

    path: ClassVar[str] = "/v1/aiart/text2video/{model_id}"
    kind: ClassVar[str] = TEXT2VIDEO


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; models, lengths and resolution are the catalogue's "video" section."""
    group = video_group(styles)

    def parse(text: str) -> Args:
        args = parse_video_args(group, KINDS, text, example=_EXAMPLE)
        return {**args, "prompt": check_prompt(args["prompt"], example=_EXAMPLE)}

    def build(args: Args, images: Sequence[InputImage]) -> VideoRequest:
        return build_video(group, TextToVideoRequest, args, ())

    default = group.styles.get(group.default or "") or next(iter(group.styles.values()))
    return Operation(
        name="video", title=N_("Video"), summary=N_("Make a short video from a description"),
        usage=N_("/video [model] [length, e.g. 10s] [ratio, e.g. 9:16] <description>"), images=0,
        request_type=TextToVideoRequest, parser=parse, builder=build,
        describe=lambda args: lazy(N_("Video ({model}, {seconds} s): {prompt}"), model=group.label(args["model"]),
                                   seconds=args["duration"], prompt=args["prompt"][:300]),
        result=ResultKind.VIDEO, image_names=(), noun=N_("Video from a description"),
        typical_seconds=typical_seconds(default), deadline_s=DEADLINE_S, time_by_pixels=False,
        typical_of=lambda args: typical_seconds(group.styles[args["model"]]), pick=videos.pick(group, KINDS, lambda images: TEXT2VIDEO),
        longer=lambda args: videos.longer(group, args),
        alternatives=lambda args, images: videos.alternatives(group, TEXT2VIDEO, args),
        check=lambda args, images: videos.check_model(group, TEXT2VIDEO, args),
        cli=(option("--model"), option("--length", help="e.g. 10s"), option("--ratio"),
             option("--prompt", required=True)))
