"""Imagine: a picture drawn from a description, in a style and size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from bot.aiart.models import Request, require, require_prompt
from bot.i18n import N_, lazy
from bot.operations.catalogue import Args, InputImage, Operation, StyleMissing, option
from bot.operations.parsing import PICK_STYLE, check_prompt, leading_words
from bot.operations.styles import StyleCatalogue


@dataclass(frozen=True)
class Text2ImgRequest(Request):
    """Text to Image."""

    path: ClassVar[str] = "/v1/aiart/text2img"
    content: str
    template_id: str
    size_id: str = "1:1"
    negative_prompt: str = ""

    def __post_init__(self) -> None:
        require_prompt(self.content, required=True)
        require_prompt(self.negative_prompt, required=False, name="negative prompt")
        require(bool(self.template_id), "template_id must not be empty")
        require(bool(self.size_id), "size_id must not be empty")

    def payload(self) -> dict[str, Any]:
        body = {"content": self.content, "sizeId": self.size_id, "templateId": self.template_id}
        if self.negative_prompt:
            body["negativePrompt"] = self.negative_prompt
        return body


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; its styles and sizes are the catalogue's "imagine" section."""
    group = styles.group("imagine")
    sizes = tuple(group.settings.get("sizes") or ("1:1",))

    def parse(text: str) -> Args:
        words = text.split()
        # leading words may name a style and a size: "/imagine anime 16:9 a cat on a roof"
        found = leading_words(words, style=lambda word: group.get(word) is not None, size=sizes.__contains__)
        prompt = check_prompt(" ".join(words), example="/imagine a lighthouse at dawn")
        args = {"prompt": prompt, "size": found["size"] or group.settings.get("default_size", sizes[0])}
        if found["style"] is None:
            raise StyleMissing(PICK_STYLE)
        args["style"] = found["style"]
        return args

    def build(args: Args, images: Sequence[InputImage]) -> Text2ImgRequest:
        return Text2ImgRequest(content=args["prompt"], template_id=group.get(args["style"]).template_id,
                               size_id=args["size"])

    return Operation(
        name="imagine", title=N_("Imagine"), summary=N_("Draw a picture from a description"),
        usage=N_("/imagine [style] [size] <description>"), images=0, request_type=Text2ImgRequest, parser=parse,
        builder=build,
        describe=lambda args: lazy(N_("Imagine ({style}, {size}): {prompt}"), style=group.label(args["style"]),
                                   size=args["size"], prompt=args["prompt"][:300]),
        style_group="imagine", image_names=(), typical_seconds=15, noun=N_("Drawing from a description"), inline=True,
        cli=(option("--style"), option("--size"), option("--prompt", required=True)))
