"""The Mini App's picture copies (bot.http.app_pictures.scaled_copy): a JPEG is decoded at the smallest scale that
still covers the copy, since the decode is what Paint's first open waits for on a phone."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image, ImageOps

from bot.http import app_pictures
from tests.fakes.samples import jpeg


@pytest.mark.parametrize(("size", "decoded", "copy"), [("display", (1280, 960), (1080, 810)),
                                                       ("thumb", (320, 240), (320, 240))])
def test_a_landscape_photo_is_decoded_at_the_copys_scale_not_the_squares(
        monkeypatch: pytest.MonkeyPatch, size: str, decoded: tuple[int, int], copy: tuple[int, int]) -> None:
    """A 2560×1920 photo asked for in a 1080 px square decoded in full (960 < 1080 forbade the half scale), and
    resizing the full photo took most of Paint's first second."""
    seen = []

    def upright(image: Image.Image) -> Image.Image:
        seen.append(image.size)
        return ImageOps.exif_transpose(image)

    monkeypatch.setattr(app_pictures, "ImageOps", SimpleNamespace(exif_transpose=upright))
    made = app_pictures.scaled_copy(jpeg(2560, 1920), size, '"e"')
    assert seen == [decoded]
    assert made.original == (2560, 1920)
    assert Image.open(io.BytesIO(made.data)).size == copy


def test_a_rotated_portrait_photo_comes_upright_at_its_full_size() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored on its side: turned a quarter to be seen
    made = app_pictures.scaled_copy(jpeg(2560, 1920, exif=exif), "display", '"e"')
    assert made.original == (1920, 2560)
    assert Image.open(io.BytesIO(made.data)).size == (810, 1080)


def test_the_first_copy_in_a_process_loads_no_other_image_formats() -> None:
    """Saving the first WebP copy made Pillow import every format plugin it has (Image.init), 0.3-0.5 s of the
    first Paint a process serves."""
    script = """
from PIL import Image
from bot.http import app_pictures
from tests.fakes.samples import jpeg
loaded = []
everything = Image.init
Image.init = lambda: loaded.append(True) or everything()
photo = jpeg(640, 480)
app_pictures.scaled_copy(photo, "display", '"e"')
print(len(loaded))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "0", done.stderr
