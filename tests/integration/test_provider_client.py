"""The sandbox driven by the provider's own PyPI client (`fotor-sdk`): every request it makes is accepted."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fotor_sdk import FotorClient, TaskStatus, background_remove, image2image, image_upscale, text2image
from fotor_sdk.upload import upload_image_sync
from PIL import Image

from bot.sandbox import Sandbox, SandboxConfig

API_KEY = "provider-client-key"


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    sandbox = Sandbox(SandboxConfig(api_key=API_KEY, task_seconds=0.05))
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


@pytest.fixture
def client(sandbox: Sandbox) -> FotorClient:
    return FotorClient(API_KEY, endpoint=sandbox.base_url, poll_interval=0.05, max_poll_seconds=20)


@pytest.fixture
def photo_file(tmp_path: Path) -> Path:
    path = tmp_path / "photo.jpg"
    Image.new("RGB", (320, 240), (40, 120, 200)).save(path, "JPEG")
    return path


async def upload(sandbox: Sandbox, path: Path, task_type: str) -> str:
    """Upload a file the way the provider's client does (its sync helper, off the event loop)."""
    result = await asyncio.to_thread(upload_image_sync, path, task_type=task_type, api_key=API_KEY,
                                     endpoint=sandbox.base_url)
    return result.file_url


async def result_size(url: str | None) -> tuple[int, int]:
    assert url
    async with httpx.AsyncClient() as http:
        response = await http.get(url)
    response.raise_for_status()
    return Image.open(io.BytesIO(response.content)).size


@pytest.mark.parametrize(("task_type", "upload_type"), [("image_upscale", "img_upscale"),
                                                        ("background_remove", "bg_remove"),
                                                        ("image2image", "img2img"),
                                                        ("single_image2video", "img2video")])
async def test_uploads_of_every_kind_the_client_sends_are_accepted(sandbox: Sandbox, photo_file: Path,
                                                                   task_type: str, upload_type: str) -> None:
    url = await upload(sandbox, photo_file, task_type)
    sign = next(r for r in sandbox.received if r.path == "/v1/upload/sign")
    assert f"type={upload_type}" in sign.query_string
    put = next(r for r in sandbox.received if r.method == "PUT")
    assert put.headers["Content-Type"] == "image/jpeg"
    async with httpx.AsyncClient() as http:
        assert (await http.get(url)).content == photo_file.read_bytes()


async def test_upscale_and_background_removal_as_the_client_sends_them(client: FotorClient, sandbox: Sandbox,
                                                                       photo_file: Path) -> None:
    upscaled = await image_upscale(client, image_url=await upload(sandbox, photo_file, "image_upscale"))
    assert upscaled.status is TaskStatus.COMPLETED, upscaled.error
    assert await result_size(upscaled.result_url) == (640, 480)
    cut_out = await background_remove(client, image_url=await upload(sandbox, photo_file, "background_remove"))
    assert cut_out.status is TaskStatus.COMPLETED, cut_out.error
    assert await result_size(cut_out.result_url) == (320, 240)


@pytest.mark.parametrize(("model", "ratio", "resolution", "size"), [
    ("seedream-4-5-251128", "16:9", "4k", (5461, 3072)),  # above 4096 px on a side
    ("gemini-3-pro-image-preview", "9:16", "2k", (1536, 2752)),
    ("flux-2-pro", "1:1", "1k", (1024, 1024)),
])
async def test_generation_at_the_sizes_the_client_computes(client: FotorClient, model: str, ratio: str,
                                                           resolution: str, size: tuple[int, int]) -> None:
    result = await text2image(client, prompt="a lighthouse at dawn", model_id=model, aspect_ratio=ratio,
                              resolution=resolution)
    assert result.status is TaskStatus.COMPLETED, result.error
    assert await result_size(result.result_url) == size


async def test_generation_with_several_reference_images(client: FotorClient, sandbox: Sandbox,
                                                        photo_file: Path) -> None:
    references = [await upload(sandbox, photo_file, "image2image") for _ in range(3)]
    result = await image2image(client, prompt="the three of them together", model_id="flux-2-pro",
                               image_urls=references, aspect_ratio="4:3")
    assert result.status is TaskStatus.COMPLETED, result.error
    assert await result_size(result.result_url) == (1184, 880)
    post = next(r for r in sandbox.received if r.path == "/v1/aiart/imagegeneration/flux-2-pro")
    assert post.headers["Accept"] == "application/json"
