"""The sandbox driven by the provider's own PyPI client (`fotor-sdk`): every request it makes is accepted."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import av
import httpx
import pytest
from fotor_sdk import (
    FotorClient,
    TaskStatus,
    background_remove,
    image2image,
    image_upscale,
    multiple_image2video,
    single_image2video,
    start_end_frame2video,
    text2image,
    text2video,
)
from fotor_sdk.upload import upload_image_sync
from PIL import Image

from bot.aiart import AiartClient
from bot.operations.animate import CharacterVideoRequest, ImageToVideoRequest, StartEndVideoRequest
from bot.operations.video import TextToVideoRequest
from bot.operations.videos import VideoRequest
from bot.sandbox import Sandbox
from tests.integration.conftest import SANDBOX_KEY as API_KEY


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


async def video_seconds(url: str | None) -> float:
    assert url
    async with httpx.AsyncClient() as http:
        response = await http.get(url)
    response.raise_for_status()
    with av.open(io.BytesIO(response.content)) as container:
        assert container.streams.video[0].codec_context.name == "h264"
        return container.duration / 1_000_000


def posted(sandbox: Sandbox, path: str) -> list[dict]:
    return [json.loads(r.body) for r in sandbox.received if r.method == "POST" and r.path == path]


async def test_every_video_endpoint_as_the_client_calls_it(client: FotorClient, sandbox: Sandbox,
                                                           photo_file: Path) -> None:
    """text2video, single_image2video, start_end_frame2video and multiple_image2video, each with its model."""
    common = {"duration": 2, "resolution": "480p", "aspect_ratio": "16:9"}
    one = await upload(sandbox, photo_file, "single_image2video")
    two = [await upload(sandbox, photo_file, "start_end_frame2video") for _ in range(2)]
    results = [
        await text2video(client, prompt="a paper boat", model_id="doubao-seedance-2-0-260128", **common),
        await single_image2video(client, prompt="she smiles", model_id="kling-v3", image_url=one, **common),
        await start_end_frame2video(client, prompt="", model_id="viduq2-turbo", start_image_url=two[0],
                                    end_image_url=two[1], **common),
        await multiple_image2video(client, prompt="they meet", model_id="kling-v3-omni", image_urls=two, **common),
    ]
    for result in results:
        assert result.status is TaskStatus.COMPLETED, result.error
        assert await video_seconds(result.result_url) == pytest.approx(2, abs=0.2)
    # the sandbox's tokens per second for each model, times two seconds
    assert [result.creditsIncrement for result in results] == [20, 24, 12, 28]


async def test_an_unknown_video_model_fails_as_the_client_sees_errors(client: FotorClient) -> None:
    with pytest.raises(Exception, match="is not a text2video model"):
        await text2video(client, prompt="a paper boat", model_id="flux-2-pro", duration=2)


A, B = "https://cdn.example/a.jpg", "https://cdn.example/b.jpg"


@pytest.mark.parametrize(("request_type", "call", "model", "images", "refs"), [
    (TextToVideoRequest, text2video, "kling-v3", {}, ()),
    (ImageToVideoRequest, single_image2video, "kling-v3", {"image_url": A}, (A,)),
    (StartEndVideoRequest, start_end_frame2video, "kling-video-o1", {"start_image_url": A, "end_image_url": B},
     (A, B)),
    (CharacterVideoRequest, multiple_image2video, "kling-video-o1", {"image_urls": [A, B]}, (A, B)),
])
async def test_the_bot_sends_the_body_and_path_the_provider_client_sends(
        client: FotorClient, sandbox: Sandbox, request_type: type[VideoRequest], call, model: str, images: dict,
        refs: tuple[str, ...]) -> None:
    await call(client, prompt="slowly", model_id=model, duration=5, resolution="720p", aspect_ratio="9:16", **images)
    request = request_type(model_id=model, prompt="slowly", duration=5, resolution="720p", aspect_ratio="9:16",
                           images=refs)
    async with httpx.AsyncClient() as http:
        await AiartClient(http, base_url=sandbox.base_url, api_key=API_KEY).submit(request)
    theirs, ours = posted(sandbox, request.endpoint)
    assert ours == theirs
