"""Headshot: headshots of a portrait in a style, as many as asked for."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, Text, lazy, nlazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, InputImage, Operation, Pick, ResultKind, option
from bot.operations.parsing import first_style
from bot.operations.styles import StyleCatalogue

#: the counts offered as buttons when the section names none
_COUNTS = (1, 2, 4)


@dataclass(frozen=True)
class HeadshotTemplate:
    """One headshot style and how many images to make in it."""

    template_id: str
    num: int = 1

    def __post_init__(self) -> None:
        require(bool(self.template_id), "template_id must not be empty")
        require(1 <= self.num <= 10, "headshot count must be between 1 and 10")


@dataclass(frozen=True)
class HeadshotRequest(Request):
    """AI Headshot: `num` images for each template; results come in avatarResult."""

    path: ClassVar[str] = "/v1/aiart/avatar"
    image: ImageRef
    templates: tuple[HeadshotTemplate, ...]

    def __post_init__(self) -> None:
        require_image(self.image)
        require(len(self.templates) >= 1, "at least one headshot template is needed")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image,
                "avatarTemplateParams": [{"templateId": t.template_id, "num": t.num} for t in self.templates]}


def entry(styles: StyleCatalogue) -> Operation:
    """The catalogue entry; its styles, counts and their limits are the catalogue's "headshot" section."""
    group = styles.group("headshot")
    most = int(group.settings.get("max_count", 10))

    def parse(text: str) -> Args:
        words = text.split()
        style = first_style(group, words, N_("I don't know the headshot style {style}. Styles: {styles}"))
        count = min(int(group.settings.get("default_count", 1)), most)
        if len(words) > 2 or (len(words) == 2 and not re.fullmatch(r"\d{1,3}", words[1])):
            raise ArgumentError(N_("Use /headshot <style> [count], for example {example}"),
                                example=f"/headshot {style.key} 2")
        if len(words) == 2:
            count = int(words[1])
            if not 1 <= count <= most:
                raise ArgumentError(N_("The count must be between 1 and {most}."), most=most)
        return {"style": style.key, "count": count}

    def counts(text: str, images: int = 1) -> list[tuple[Text, str]]:
        """A style without a count: the section's `count_choices` (within `max_count`) as (label, argument text)."""
        words = text.split()
        if len(words) != 1:  # no style yet (the picker asks first), or a count typed
            return []
        offered = [int(count) for count in group.settings.get("count_choices", _COUNTS) if 1 <= int(count) <= most]
        return [(nlazy("{count} headshot", "{count} headshots", count), f"{words[0]} {count}") for count in offered]

    def build(args: Args, images: Sequence[InputImage]) -> HeadshotRequest:
        template = HeadshotTemplate(group.get(args["style"]).template_id, args["count"])
        return HeadshotRequest(image=images[0].ref, templates=(template,))

    return Operation(
        name="headshot", title=N_("Headshot"), summary=N_("Make headshots in a style"),
        usage=N_("/headshot <style> [count]"), images=1, request_type=HeadshotRequest, parser=parse, builder=build,
        describe=lambda args: lazy(N_("Headshot: {style} ×{count}"), style=group.label(args["style"]),
                                   count=args["count"]),
        limits=replace(DEFAULT_LIMITS, max_side=2048), result=ResultKind.ALBUM, style_group="headshot",
        typical_seconds=40, outputs=lambda args: args["count"],
        # each headshot costs: where the bot asks for a style it asks how many too; typed, the default
        pick=Pick(N_("How many headshots?"), counts),
        cli=(option("--style", required=True), option("--count", type=int)))
