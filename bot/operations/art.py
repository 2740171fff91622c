"""Art effect: a photo repainted in an art style, optionally with a description."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import MAX_PROMPT_CHARS, ImageRef, Request, require, require_image, require_prompt
from bot.i18n import N_, Text, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, InputImage, Operation, option
from bot.operations.parsing import first_style
from bot.operations.styles import StyleCatalogue


@dataclass(frozen=True)
class Img2ImgRequest(Request):
    """Image to Image (AI art effects)."""

    path: ClassVar[str] = "/v1/aiart/img2img"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    template_id: str
    content: str = ""
    negative_prompt: str = ""
    strength: float = 0.5
    format: str | None = None

    def __post_init__(self) -> None:
        require_image(self.image)
        require(bool(self.template_id), "template_id must not be empty")
        require_prompt(self.content, required=False)
        require_prompt(self.negative_prompt, required=False, name="negative prompt")
        require(0.0 <= self.strength <= 1.0, "strength must be between 0 and 1")
        require(self.format in (None, "jpg", "png"), "format must be jpg or png")

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {"userImageUrl": self.image, "templateId": self.template_id,
                                "strength": self.strength}
        if self.content:
            body["content"] = self.content
        if self.negative_prompt:
            body["negativePrompt"] = self.negative_prompt
        if self.format:
            body["format"] = self.format
        return body


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; its styles are the catalogue's "art" section."""
    group = styles.group("art")

    def describe(args: Args) -> Text:
        """The caption: the style (its translated label), and the description when there is one."""
        style = group.label(args["style"])
        if args.get("prompt"):
            return lazy(N_("{title}: {style} — {prompt}"), title=lazy(N_("Art")), style=style,
                        prompt=args["prompt"][:200])
        return lazy(N_("{title}: {style}"), title=lazy(N_("Art")), style=style)

    def parse(text: str) -> Args:
        words = text.split()
        style = first_style(group, words, N_("I don't know the style {style}. Styles: {styles}"))
        prompt = " ".join(words[1:])
        if len(prompt) > MAX_PROMPT_CHARS:
            raise ArgumentError(N_("Please keep the description under {most} characters."), most=MAX_PROMPT_CHARS)
        return {"style": style.key, "prompt": prompt}

    def build(args: Args, images: Sequence[InputImage]) -> Img2ImgRequest:
        return Img2ImgRequest(image=images[0].ref, template_id=group.get(args["style"]).template_id,
                              content=args.get("prompt", ""))

    return Operation(
        name="art", title=N_("Art effect"), summary=N_("Repaint a photo in an art style"),
        usage=N_("/art <style> [description]"), images=1, request_type=Img2ImgRequest, parser=parse, builder=build,
        describe=describe, limits=replace(DEFAULT_LIMITS, max_side=1536), style_group="art", typical_seconds=15,
        cli=(option("--style", required=True), option("--prompt", default="")))
