"""Result videos: what Telegram's sendVideo needs to know of an MP4 (size, length) and its thumbnail (PyAV).

Like `bot.images` for pictures, this reads files from outside (the service's results) and trusts nothing:
only an MP4 (or MOV) container with a video stream is accepted, probing reads the header and decodes one
frame, and the thumbnail follows Telegram's rules for one: a JPEG under 200 kB, at most 320 px a side.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import av
from PIL import Image

#: Telegram's rules for a video's thumbnail
THUMBNAIL_SIDE = 320
THUMBNAIL_MAX_BYTES = 200 * 1024
#: the largest frame probed (4K UHD; the models make 1080p at most): a tiny file can declare a giant frame, and
#: decoding one 8192 x 8192 frame to a thumbnail took 7 s and 1 GB of memory
MAX_VIDEO_PIXELS = 3840 * 2160
#: Telegram's limits for a live photo's video (sendLivePhoto): a live photo is a still and its short motion
LIVE_PHOTO_MAX_BYTES = 10 * 1024 * 1024
LIVE_PHOTO_MAX_SECONDS = 10
#: containers FFmpeg's mov demuxer names for MP4 and QuickTime files
_CONTAINERS = {"mov", "mp4", "m4a", "3gp", "3g2", "mj2"}


class VideoRejected(ValueError):
    """A result that is not a playable MP4 video."""


@dataclass(frozen=True)
class VideoInfo:
    """What sendVideo is told of a video: its frame size and whole seconds, and a JPEG thumbnail."""

    width: int
    height: int
    duration: int
    codec: str
    thumbnail: bytes

    @property
    def first_frame_size(self) -> tuple[int, int]:
        """The width and height a player shows."""
        return self.width, self.height


def fits_live_photo(seconds: int, size: int) -> tuple[bool, bool]:
    """Whether a video of this length (whole seconds, as sendVideo was told) and size may be a live photo's:
    (short enough, small enough)."""
    return seconds <= LIVE_PHOTO_MAX_SECONDS, size <= LIVE_PHOTO_MAX_BYTES


def probe(path: Path) -> VideoInfo:
    """The size, length and thumbnail of an MP4 file; VideoRejected when it is not one."""
    with _opened(str(path)) as container:
        stream = container.streams.video[0]
        picture = _first_frame(container, stream)
        return VideoInfo(width=stream.codec_context.width, height=stream.codec_context.height,
                         duration=max(1, round(_seconds(container, stream))), codec=stream.codec_context.name,
                         thumbnail=thumbnail(picture))


def still(data: bytes) -> bytes:
    """A video's first frame as a full-size JPEG (a live photo's static photo); VideoRejected when there is none."""
    with _opened(io.BytesIO(data)) as container:
        picture = _first_frame(container, container.streams.video[0]).convert("RGB")
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=90)
        return buffer.getvalue()


@contextlib.contextmanager
def _opened(source: str | io.BytesIO) -> Iterator[av.container.InputContainer]:
    """An MP4 container with a video stream of at most MAX_VIDEO_PIXELS; any failure to read it is VideoRejected."""
    try:
        with av.open(source, "r") as container:
            if not _CONTAINERS & set(container.format.name.split(",")):
                raise VideoRejected(f"not an MP4 file ({container.format.name})")
            if not container.streams.video:
                raise VideoRejected("the file holds no video stream")
            codec = container.streams.video[0].codec_context
            _check_frame(codec.width, codec.height)
            yield container
    except VideoRejected:
        raise
    except (av.FFmpegError, OSError, ValueError, StopIteration) as error:
        raise VideoRejected(f"cannot read the video: {type(error).__name__}") from None


def _first_frame(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> Image.Image:
    first = next(container.decode(stream), None)
    if first is None:
        raise VideoRejected("the video has no frame")
    _check_frame(first.width, first.height)  # the codec's own header may differ from the container's
    return first.to_image()


def _check_frame(width: int, height: int) -> None:
    if width * height > MAX_VIDEO_PIXELS:
        raise VideoRejected(f"a frame of {width} x {height} is larger than the bot handles")


def _seconds(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / av.time_base
    return 0.0


def thumbnail(picture: Image.Image) -> bytes:
    """A JPEG of the picture within Telegram's thumbnail rules (320 px a side, under 200 kB)."""
    small = picture.convert("RGB")
    small.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE), Image.Resampling.BICUBIC)
    for quality in (85, 70, 50, 30):
        buffer = io.BytesIO()
        small.save(buffer, "JPEG", quality=quality)
        if buffer.tell() < THUMBNAIL_MAX_BYTES:
            return buffer.getvalue()
    raise VideoRejected("no thumbnail under Telegram's size limit")
