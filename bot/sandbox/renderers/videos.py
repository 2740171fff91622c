"""The sandbox's four video endpoints (/v1/aiart/{text2video,img2video,startend2video,character2video}/{model_id}).

Bodies are read as the provider's own client sends them (`fotor-sdk` 0.1.10): `prompt`, `duration`,
`resolution`, `aspect_ratio`, `scenes`, `enableAudio` and, for the image endpoints, `imageUrls`; each endpoint
takes the models that client sends to it (its defaults and fallbacks). The service publishes no price list:
a finished video reports `creditsIncrement` as the sandbox's own tokens per second of the model times the
length. A prompt holding `sandbox-size-<n>mb` pads the MP4 to about n MB (a free box), for size limits.
"""

from __future__ import annotations

import re
from typing import Any

from bot.sandbox import clips
from bot.sandbox.effects import Rendered
from bot.sandbox.payloads import (
    PayloadError,
    TaskSpec,
    boolean_field,
    choice_field,
    field_value,
    image_field,
    integer_field,
    text_field,
)
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation

MAX_SECONDS = 15
RESOLUTIONS = tuple(clips.SHORT_SIDES)
ASPECT_RATIOS = ("16:9", "9:16", "1:1", "4:3", "3:4", "21:9")
_SEEDANCE = ("doubao-seedance-2-0-260128", "seedance-1-5-pro-251215")
#: the models each endpoint takes: what the provider's client sends there, first choice and fallback
MODELS = {
    "text2video": (*_SEEDANCE, "kling-v3"),
    "img2video": (*_SEEDANCE, "kling-v3"),
    "startend2video": ("doubao-seedance-2-0-260128", "kling-video-o1", "viduq2-turbo"),
    "character2video": ("doubao-seedance-2-0-260128", "kling-v3-omni", "kling-video-o1"),
}
#: (least, most) images per endpoint; the provider's client requires two or more for character videos
IMAGE_COUNTS = {"text2video": (0, 0), "img2video": (1, 1), "startend2video": (2, 2), "character2video": (2, 4)}
#: the sandbox's tokens per second of video, by model
TOKENS_PER_SECOND = {"doubao-seedance-2-0-260128": 10, "seedance-1-5-pro-251215": 8, "kling-v3": 12,
                     "kling-v3-omni": 14, "kling-video-o1": 12, "viduq2-turbo": 6}
_PADDING = re.compile(r"sandbox-size-(\d{1,4})mb")


def parser(kind: str):
    """The body reader of one video endpoint."""

    def parse(body: dict[str, Any], model_id: str) -> TaskSpec:
        if model_id not in MODELS[kind]:
            raise PayloadError(f"model_id {model_id[:64]!r} is not a {kind} model; use one of "
                               f"{', '.join(MODELS[kind])}")
        least, most = IMAGE_COUNTS[kind]
        prompt = text_field(body, "prompt", required=kind == "text2video")
        params = {"model_id": model_id, "prompt": prompt,
                  "duration": integer_field(body, "duration", required=False, default=5, minimum=1,
                                            maximum=MAX_SECONDS),
                  "resolution": choice_field(body, "resolution", RESOLUTIONS, "1080p"),
                  "aspect_ratio": choice_field(body, "aspect_ratio", ASPECT_RATIOS, "16:9"),
                  "scenes": text_field(body, "scenes", default="normal"),
                  "audio": boolean_field(body, "enableAudio", required=False)}
        images: dict[str, str] = {}
        if most:
            urls = field_value(body, "imageUrls", required=True)
            if not isinstance(urls, list) or not least <= len(urls) <= most:
                raise PayloadError(f"imageUrls must be an array of {least}..{most} image URLs" if least != most
                                   else f"imageUrls must be an array of {least} image URL(s)")
            for index, url in enumerate(urls):
                try:
                    images[f"image{index + 1}"] = image_field({"url": url}, "url", url_only=True)
                except PayloadError as error:
                    raise PayloadError(f"imageUrls[{index}]: {error}") from None
        elif "imageUrls" in body:
            raise PayloadError("imageUrls is not taken by text2video")
        return TaskSpec(kind, images, params, prompt=prompt, tokens=cost(model_id, params["duration"]))

    return parse


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    """The clip: a zoom over one photo, a crossfade through several, a drawn scene for a description."""
    pictures = [images[role] for role in sorted(images)]
    if pictures:
        first = pictures[0]
        size = clips.frame_size(first.width / first.height, params["resolution"])
        frames = clips.zoom_and_pan(first, size) if len(pictures) == 1 else clips.crossfade(pictures, size)
    else:
        size = clips.frame_size(clips.ratio_of(params["aspect_ratio"]), params["resolution"])
        frames = clips.scene(params["prompt"], params["model_id"], size)
    padding = _PADDING.search(params["prompt"])
    filler = int(padding.group(1)) * 1024 * 1024 if padding else 0
    data = clips.encode(frames, size, params["duration"], filler=filler)
    return Rendering((Rendered(data, "mp4"),), tokens=cost(params["model_id"], params["duration"]))


def cost(model_id: str, seconds: int) -> int:
    """The sandbox's tokens for a video of that model and length."""
    return TOKENS_PER_SECOND[model_id] * seconds


def endpoint(kind: str, path: str) -> SandboxOperation:
    """The sandbox's endpoint for one kind of video at its path."""
    return SandboxOperation(kind, path, parser(kind), render)
