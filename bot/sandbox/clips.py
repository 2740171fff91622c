"""The sandbox's videos: frames drawn with Pillow, encoded as H.264 MP4 with PyAV (FFmpeg in its wheel).

The service renders at the asked resolution; the sandbox renders a quarter of it at a few frames a second,
so a five-second clip encodes in a fraction of a second and stays a few tens of kilobytes. What callers rely
on is the container and codec (H.264 in MP4, moov first so Telegram can stream it), the length in seconds,
the aspect ratio and, for a photo, that the first frame is the photo.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import av
from PIL import Image, ImageDraw, ImageOps

from bot.sandbox.effects import colour_for, draw_caption, gradient, to_rgb

FPS = 8
#: the sandbox draws this fraction of the asked resolution's short side
SCALE = 4
SHORT_SIDES = {"480p": 480, "720p": 720, "1080p": 1080}
#: how far the slow zoom goes by the last frame
ZOOM = 0.15

Frames = Callable[[int, int], Image.Image]  # (index, count) -> frame


def frame_size(ratio: float, resolution: str) -> tuple[int, int]:
    """An even width and height of the given aspect ratio (width / height) at the sandbox's scale."""
    short = SHORT_SIDES[resolution] // SCALE
    if ratio >= 1:
        width, height = short * ratio, short
    else:
        width, height = short, short / ratio
    return max(2, round(width / 2) * 2), max(2, round(height / 2) * 2)


def ratio_of(text: str) -> float:
    """The width / height of an aspect ratio such as 16:9."""
    width, height = (int(part) for part in text.split(":"))
    return width / height


def encode(frames: Frames, size: tuple[int, int], seconds: int, *, filler: int = 0) -> bytes:
    """An MP4 of `seconds` at FPS frames a second; `filler` bytes of a free box make it as large as asked."""
    with tempfile.TemporaryDirectory(prefix="sandbox-clip-") as folder:
        path = Path(folder) / "clip.mp4"
        _write(path, frames, size, seconds)
        data = path.read_bytes()
    if filler > 0:
        # a top-level "free" box: players skip it, so the file stays a valid video of the same length
        data += (filler + 8).to_bytes(4, "big") + b"free" + bytes(filler)
    return data


def _write(path: Path, frames: Frames, size: tuple[int, int], seconds: int) -> None:
    # moov before the media data, so Telegram and browsers play it while it downloads; FFmpeg moves it
    # there in a second pass over a real file (an in-memory buffer cannot be reopened for it)
    with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "23"}
        count = seconds * FPS
        for index in range(count):
            frame = av.VideoFrame.from_image(frames(index, count).convert("RGB"))
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def zoom_and_pan(photo: Image.Image, size: tuple[int, int]) -> Frames:
    """A slow zoom towards the middle with a little drift; the first frame is the whole photo."""
    base = ImageOps.fit(to_rgb(photo), size, Image.Resampling.BICUBIC)
    # zoom from a copy twice the size, so late frames are not blurred up from the small one
    large = base.resize((size[0] * 2, size[1] * 2), Image.Resampling.BICUBIC)

    def frame(index: int, count: int) -> Image.Image:
        if index == 0:
            return base
        progress = index / max(1, count - 1)
        scale = 1 - ZOOM * progress
        width, height = large.width * scale, large.height * scale
        drift = math.sin(progress * math.pi) * (large.width - width) / 4
        left = (large.width - width) / 2 + drift
        top = (large.height - height) / 2
        return large.resize(size, Image.Resampling.BILINEAR, box=(left, top, left + width, top + height))

    return frame


def crossfade(pictures: list[Image.Image], size: tuple[int, int]) -> Frames:
    """From the first picture through each next one, evenly; the first frame is the first, the last the last."""
    fitted = [ImageOps.fit(to_rgb(picture), size, Image.Resampling.BICUBIC) for picture in pictures]

    def frame(index: int, count: int) -> Image.Image:
        position = index / max(1, count - 1) * (len(fitted) - 1)
        left = min(int(position), len(fitted) - 2)
        return Image.blend(fitted[left], fitted[left + 1], position - left)

    return frame


def scene(prompt: str, model_id: str, size: tuple[int, int]) -> Frames:
    """A drawn scene: a sky of the prompt's colours, a sun crossing it and the prompt written over it."""
    sky = gradient(size, colour_for(model_id), colour_for(prompt))
    radius = max(4, min(size) // 8)

    def frame(index: int, count: int) -> Image.Image:
        picture = sky.copy()
        progress = index / max(1, count - 1)
        x = radius + progress * (size[0] - 2 * radius)
        y = size[1] * 0.6 - math.sin(progress * math.pi) * size[1] * 0.35
        ImageDraw.Draw(picture).ellipse((x - radius, y - radius, x + radius, y + radius), fill=(255, 236, 150))
        draw_caption(picture, prompt)
        return picture

    return frame


def frames_of(frames: Frames, count: int) -> Iterator[Image.Image]:
    """Every frame, in order (for tests and previews)."""
    return (frames(index, count) for index in range(count))
