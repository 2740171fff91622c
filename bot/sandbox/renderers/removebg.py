"""The sandbox's background removal (/v1/aiart/backgroundremover): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageStat

from bot.sandbox.effects import encode_png, to_rgb
from bot.sandbox.payloads import REMOVE_BG_ACTIONS, TaskSpec, choice_field, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation


def _border_colour(image: Image.Image) -> tuple[int, ...]:
    width, height = image.size
    strips = [image.crop((0, 0, width, 1)), image.crop((0, height - 1, width, height)),
              image.crop((0, 0, 1, height)), image.crop((width - 1, 0, width, height))]
    means = [ImageStat.Stat(strip).mean for strip in strips]
    return tuple(int(sum(channel) / len(means)) for channel in zip(*means))


def remove_background(image: Image.Image) -> Image.Image:
    """An RGBA image of the same size: the border colour and everything outside a centred oval clear."""
    rgb = to_rgb(image)
    width, height = rgb.size
    backdrop = Image.new("RGB", rgb.size, _border_colour(rgb))
    distance = ImageChops.difference(rgb, backdrop).convert("L")
    foreground = distance.point(lambda value: 255 if value > 40 else 0)
    oval = Image.new("L", rgb.size, 0)
    ImageDraw.Draw(oval).ellipse((width * 0.05, height * 0.05, width * 0.95, height * 0.95), fill=255)
    subject = ImageChops.multiply(foreground, oval)
    # a near-uniform picture has no "subject" by colour: keep the oval so the result is not empty
    if ImageStat.Stat(subject).mean[0] < 255 * 0.02:
        subject = oval
    result = rgb.convert("RGBA")
    result.putalpha(subject.filter(ImageFilter.GaussianBlur(1)))
    return result


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl")
    action = choice_field(body, "action", REMOVE_BG_ACTIONS, default="auto")
    return TaskSpec("backgroundremover", {"image": image}, {"action": action})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return Rendering((encode_png(remove_background(images["image"])),))


SANDBOX = SandboxOperation("backgroundremover", "/v1/aiart/backgroundremover", parse, render)
