"""Probing a result video from outside: a small file must not make the bot decode a giant frame."""

from __future__ import annotations

from pathlib import Path

import av
import pytest
from PIL import Image

from bot.videos import MAX_VIDEO_PIXELS, VideoRejected, probe


def mp4(path: Path, width: int, height: int) -> Path:
    """A one-frame H.264 MP4 of this size (black compresses to a few kB whatever the size)."""
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=1)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        frame = av.VideoFrame.from_image(Image.new("RGB", (width, height)))
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    return path


def test_a_1080p_video_is_probed(tmp_path):
    info = probe(mp4(tmp_path / "hd.mp4", 1920, 1080))
    assert (info.width, info.height) == (1920, 1080)


def test_a_small_file_of_a_giant_frame_is_refused_before_it_is_decoded(tmp_path):
    # an 8192 x 8192 one of 200 kB took 7 s and 1 GB of memory to probe; this one is just over the cap
    width = 4096
    height = MAX_VIDEO_PIXELS // width // 2 * 2 + 16
    path = mp4(tmp_path / "giant.mp4", width, height)
    assert path.stat().st_size < 200_000
    with pytest.raises(VideoRejected, match="frame"):
        probe(path)
