"""`python -m bot try`: the operator's smoke test, run as a real process against the embedded sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tests.fakes import samples


def run_try(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AIART_", "TELEGRAM_"))}
    env["SANDBOX_TASK_SECONDS"] = "0.3"
    return subprocess.run([sys.executable, "-m", "bot", "try", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    path = tmp_path / "photo.jpg"
    path.write_bytes(samples.jpeg(321, 123))
    return path


def test_upscale_with_no_configuration_doubles_the_image(tmp_path, photo):
    done = run_try(tmp_path, "upscale", "photo.jpg", "--factor", "2", "--out", "big.png")
    assert done.returncode == 0, done.stderr
    with Image.open(tmp_path / "big.png") as result:
        assert result.size == (642, 246)
        assert result.format == "PNG"
    assert "embedded sandbox" in done.stdout and "wrote big.png" in done.stdout


def test_headshot_writes_one_file_per_image(tmp_path, photo):
    done = run_try(tmp_path, "headshot", "photo.jpg", "--style", "business", "--count", "3", "--out", "h.jpg")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("h-*.jpg")) == ["h-1.jpg", "h-2.jpg", "h-3.jpg"]


def test_imagine_uses_the_default_style_when_none_is_given(tmp_path):
    done = run_try(tmp_path, "imagine", "--prompt", "a lighthouse", "--size", "9:16", "--out", "pic.jpg")
    assert done.returncode == 0, done.stderr
    with Image.open(tmp_path / "pic.jpg") as result:
        assert result.height > result.width


def test_a_broken_image_is_refused_with_a_reason(tmp_path):
    (tmp_path / "broken.jpg").write_bytes(samples.truncated_jpeg())
    done = run_try(tmp_path, "colorize", "broken.jpg", "--out", "out.jpg")
    assert done.returncode == 2
    assert "error:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jpg").exists()


def test_help_lists_every_operation_with_its_options():
    done = subprocess.run([sys.executable, "-m", "bot", "try", "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    for line in ("upscale IMAGE [--factor {2,4}]", "expand IMAGE --pad LEFT TOP RIGHT BOTTOM", "faceswap IMAGE TEMPLATE",
                 "replace IMAGE MASK --prompt PROMPT", "headshot IMAGE --style STYLE [--count COUNT]"):
        assert line in done.stdout


def test_a_video_model_that_cannot_take_two_frames_is_refused_naming_those_that_can(tmp_path, photo):
    done = run_try(tmp_path, "animate", "photo.jpg", "photo.jpg", "--model", "kling", "--out", "clip.mp4")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Kling v3 cannot make a video from two frames; one of these can: Seedance 2.0, Vidu Q2 Turbo." in done.stderr
    assert not (tmp_path / "clip.mp4").exists()
