"""Generate: a picture drawn by a chosen model, optionally from reference photos."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image, require_prompt
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, InputImage, Operation, StyleMissing, option
from bot.operations.parsing import PICK_STYLE, check_prompt, leading_words
from bot.operations.styles import StyleCatalogue

#: generation sizes the provider's client computes reach 6272 px on a side and about 16.8 MP
MAX_GENERATION_SIDE = 8192
MAX_GENERATION_PIXELS = 17_000_000
#: reference images one generation request carries at most (the service states no number)
MAX_REFERENCE_IMAGES = 4
_RATIO = re.compile(r"^\d{1,2}:\d{1,2}$")
_RESOLUTION = re.compile(r"^\d[kK]$")


@dataclass(frozen=True)
class ImageGenerationRequest(Request):
    """Image Generation with a given model, from a prompt and optional reference images."""

    path: ClassVar[str] = "/v1/aiart/imagegeneration/{model_id}"
    model_id: str
    prompt: str
    width: int = 1024
    height: int = 1024
    images: tuple[ImageRef, ...] = ()
    #: what the provider's own client always sends
    quality: str = "medium"

    def __post_init__(self) -> None:
        require(bool(self.model_id) and self.model_id.replace("-", "").replace(".", "").replace("_", "").isalnum(),
                "model_id must be a plain identifier")
        require_prompt(self.prompt, required=True)
        require(64 <= self.width <= MAX_GENERATION_SIDE and 64 <= self.height <= MAX_GENERATION_SIDE,
                f"width and height must be 64..{MAX_GENERATION_SIDE}")
        require(self.width * self.height <= MAX_GENERATION_PIXELS,
                f"width × height must be at most {MAX_GENERATION_PIXELS} pixels")
        require(len(self.images) <= MAX_REFERENCE_IMAGES, f"at most {MAX_REFERENCE_IMAGES} reference images")
        for image in self.images:
            require_image(image, "reference image")

    @property
    def endpoint(self) -> str:
        return self.path.format(model_id=self.model_id)

    def payload(self) -> dict[str, Any]:
        content: list[dict[str, str]] = [{"type": "text", "text": self.prompt}]
        content += [{"type": "image_url", "url": image} for image in self.images]
        return {"width": self.width, "height": self.height, "content": content, "quality": self.quality}


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


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; its models, their ratios and resolutions are the catalogue's "generate" section."""
    group = styles.group("generate")

    def parse(text: str) -> Args:
        words = text.split()
        # leading words may name a model, an aspect ratio and a resolution: "/generate seedream 16:9 4k a fox"
        found = leading_words(words, model=lambda word: group.get(word) is not None,
                              ratio=lambda word: bool(_RATIO.match(word)),
                              resolution=lambda word: bool(_RESOLUTION.match(word)))
        prompt = check_prompt(" ".join(words), example="/generate a lighthouse at dawn")
        model = found["model"]
        if model is None:  # the entry's style_fallback (the section's default) fills it in where there is one
            raise StyleMissing(PICK_STYLE)
        style = group.get(model)
        ratios = style.extra.get("ratios", {})
        ratio = found["ratio"] or group.settings.get("default_ratio", "1:1")
        if ratio not in ratios:
            raise ArgumentError(N_("{model} draws in {ratios}; for example {example}"), model=style.label,
                                ratios=", ".join(ratios), example=f"/generate {model} 16:9 a lighthouse")
        resolutions = style.extra.get("resolutions") or ["1k"]
        resolution = found["resolution"] or style.extra.get("default_resolution", resolutions[0])
        if resolution not in resolutions:
            raise ArgumentError(N_("{model} draws at {resolutions}."), model=style.label,
                                resolutions=", ".join(resolutions))
        return {"model": model, "ratio": ratio, "resolution": resolution, "prompt": prompt}

    def build(args: Args, images: Sequence[InputImage]) -> ImageGenerationRequest:
        style = group.get(args["model"])
        width, height = generation_size(style.extra, args["ratio"], args["resolution"])
        return ImageGenerationRequest(model_id=style.template_id, prompt=args["prompt"], width=width, height=height,
                                      images=tuple(image.ref for image in images))

    return Operation(
        name="generate", title=N_("Generate"),
        summary=N_("Draw a picture with a chosen model, optionally from reference photos"),
        usage=N_("/generate [model] [ratio] [resolution] <description>"), images=0,
        request_type=ImageGenerationRequest, parser=parse, builder=build,
        describe=lambda args: lazy(N_("Generate ({model}, {ratio}, {resolution}): {prompt}"),
                                   model=group.label(args["model"]),
                                   ratio=args["ratio"], resolution=args["resolution"], prompt=args["prompt"][:300]),
        limits=replace(DEFAULT_LIMITS, max_side=2048), style_group="generate", style_argument="model",
        style_fallback=group.default, image_names=(N_("reference photo"),), noun=N_("Generation"),
        max_images=int(group.settings.get("max_references", 4)), typical_seconds=20,
        cli=(option("--model"), option("--ratio"), option("--resolution"), option("--prompt", required=True)))
