"""The sandbox's video endpoints over real HTTP on loopback: the provider client's bodies, real MP4s, its errors."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import av
import httpx
import pytest
from PIL import Image, ImageChops, ImageStat

from bot.aiart import AiartClient
from bot.aiart.models import TaskState
from bot.operations.animate import ImageToVideoRequest, StartEndVideoRequest
from bot.operations.video import TextToVideoRequest
from bot.sandbox import Sandbox, SandboxConfig
from tests.integration.conftest import SANDBOX_KEY as API_KEY


@pytest.fixture
async def http(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=sandbox.base_url, timeout=20, verify=False,
                                 headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        yield client


@pytest.fixture
def aiart(sandbox: Sandbox, http: httpx.AsyncClient) -> AiartClient:
    return AiartClient(http, base_url=sandbox.base_url, api_key=API_KEY)


def jpeg(size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    image = Image.new("RGB", size, colour)
    # a bright block off the middle, so a frame of the photo is told apart from a flat colour
    image.paste((250, 250, 250), (size[0] // 8, size[1] // 8, size[0] // 3, size[1] // 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=95)
    return buffer.getvalue()


async def finished(aiart: AiartClient, task_id: str) -> tuple[bytes, int | None]:
    """The finished task's video bytes and its creditsIncrement."""
    for _ in range(400):
        task = await aiart.get_task(task_id)
        if task.finished:
            break
        await asyncio.sleep(0.05)
    assert task.state is TaskState.COMPLETED, task.reason
    async with httpx.AsyncClient() as plain:
        response = await plain.get(task.result_urls[0])
    assert response.headers["Content-Type"] == "video/mp4"
    return response.content, task.credits_increment


def frames(data: bytes) -> tuple[av.video.stream.VideoStream, list[Image.Image], float]:
    container = av.open(io.BytesIO(data))
    stream = container.streams.video[0]
    pictures = [frame.to_image() for frame in container.decode(video=0)]
    return stream, pictures, container.duration / 1_000_000


def difference(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference per channel, 0..255."""
    return sum(ImageStat.Stat(ImageChops.difference(a.convert("RGB"), b.convert("RGB"))).mean) / 3


async def test_one_photo_becomes_an_h264_clip_of_its_length_whose_first_frame_is_the_photo(
        aiart: AiartClient, sandbox: Sandbox) -> None:
    photo = jpeg((600, 400), (30, 90, 200))
    url = await aiart.upload(photo, upload_type=ImageToVideoRequest.upload_type)
    task_id = await aiart.submit(ImageToVideoRequest(model_id="kling-v3", prompt="waves roll in", duration=2,
                                                     resolution="480p", images=(url,)))
    data, cost = await finished(aiart, task_id)
    stream, pictures, seconds = frames(data)
    assert stream.codec_context.name == "h264" and stream.codec_context.pix_fmt == "yuv420p"
    assert seconds == pytest.approx(2, abs=0.2) and len(pictures) >= 8
    assert stream.width / stream.height == pytest.approx(600 / 400, rel=0.02)
    expected = Image.open(io.BytesIO(photo)).resize((stream.width, stream.height))
    assert difference(pictures[0], expected) < 6
    assert difference(pictures[-1], expected) > difference(pictures[0], expected)  # it moves
    assert data.index(b"moov") < data.index(b"mdat")  # streamable: the index comes first
    assert cost == 12 * 2  # the sandbox's rate for kling-v3, per second
    assert sandbox.state.credits_remaining == sandbox.state.credits_total - cost


async def test_two_frames_go_from_the_first_to_the_second(aiart: AiartClient) -> None:
    start, end = jpeg((320, 240), (200, 30, 30)), jpeg((320, 240), (30, 200, 30))
    refs = tuple([await aiart.upload(image, upload_type="img2video") for image in (start, end)])
    task_id = await aiart.submit(StartEndVideoRequest(model_id="viduq2-turbo", duration=2, resolution="480p",
                                                      images=refs))
    _, pictures, _ = frames((await finished(aiart, task_id))[0])
    size = pictures[0].size
    assert difference(pictures[0], Image.open(io.BytesIO(start)).resize(size)) < 6
    assert difference(pictures[-1], Image.open(io.BytesIO(end)).resize(size)) < 6


@pytest.mark.parametrize(("ratio", "size"), [("16:9", (480, 270)), ("9:16", (270, 480)), ("1:1", (270, 270))])
async def test_a_description_is_drawn_at_the_asked_aspect_ratio(aiart: AiartClient, ratio: str,
                                                                size: tuple[int, int]) -> None:
    task_id = await aiart.submit(TextToVideoRequest(model_id="doubao-seedance-2-0-260128", prompt="a paper boat",
                                                    duration=1, resolution="1080p", aspect_ratio=ratio))
    stream, pictures, _ = frames((await finished(aiart, task_id))[0])
    assert (stream.width, stream.height) == size
    assert difference(pictures[0], pictures[-1]) > 1  # the sun moves


async def test_a_size_trigger_pads_the_clip_and_it_still_plays(aiart: AiartClient) -> None:
    task_id = await aiart.submit(TextToVideoRequest(model_id="kling-v3", prompt="rain sandbox-size-3mb",
                                                    duration=1, resolution="480p"))
    data, _ = await finished(aiart, task_id)
    assert 3 * 1024 * 1024 < len(data) < 4 * 1024 * 1024
    assert len(frames(data)[1]) == 8


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/aiart/text2video/flux-2-pro", {"prompt": "x"}, "is not a text2video model"),
    ("/v1/aiart/startend2video/kling-v3", {"imageUrls": ["http://a/1.jpg", "http://a/2.jpg"]},
     "is not a startend2video model"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": ""}, "prompt must not be empty"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "duration": 60}, "duration must be at most 15"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "duration": 2.5}, "duration must be an integer"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "resolution": "4k"}, "resolution must be one of"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "aspect_ratio": "auto"}, "aspect_ratio must be one of"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "enableAudio": "yes"}, "enableAudio must be true or false"),
    ("/v1/aiart/text2video/kling-v3", {"prompt": "x", "imageUrls": []}, "imageUrls is not taken"),
    ("/v1/aiart/img2video/kling-v3", {"prompt": "x"}, "imageUrls is required"),
    ("/v1/aiart/img2video/kling-v3", {"imageUrls": ["http://a/1.jpg", "http://a/2.jpg"]},
     "imageUrls must be an array of 1 image URL"),
    ("/v1/aiart/img2video/kling-v3", {"imageUrls": ["aGVsbG8="]}, "imageUrls[0]: url must be an http(s) image URL"),
    ("/v1/aiart/startend2video/viduq2-turbo", {"imageUrls": ["http://a/1.jpg"]}, "imageUrls must be an array of 2"),
    ("/v1/aiart/character2video/kling-v3-omni", {"imageUrls": ["http://a/1.jpg"] * 5},
     "imageUrls must be an array of 2..4"),
])
async def test_bad_video_bodies_are_400_naming_the_field(http: httpx.AsyncClient, path: str, body: dict,
                                                         message: str) -> None:
    response = await http.post(path, json=body)
    assert response.status_code == 400
    assert message in response.json()["msg"]


async def test_a_video_the_account_cannot_pay_for_is_refused_with_510() -> None:
    sandbox = Sandbox(SandboxConfig(api_key=API_KEY, task_seconds=0.05, credits=59))
    await sandbox.start()
    try:
        async with httpx.AsyncClient(base_url=sandbox.base_url, headers={"Authorization": f"Bearer {API_KEY}"}) as http:
            refused = await http.post("/v1/aiart/text2video/kling-v3", json={"prompt": "x", "duration": 5})
            taken = await http.post("/v1/aiart/text2video/viduq2-turbo", json={"prompt": "x", "duration": 5})
    finally:
        await sandbox.stop()
    assert refused.json()["code"] == "510" and refused.json()["msg"] == "No enough credits"
    assert taken.status_code == 400  # viduq2-turbo draws only between two frames


async def test_a_failed_video_reports_its_reason(aiart: AiartClient) -> None:
    task_id = await aiart.submit(TextToVideoRequest(model_id="kling-v3", prompt="sandbox-fail", duration=1))
    for _ in range(200):
        task = await aiart.get_task(task_id)
        if task.finished:
            break
        await asyncio.sleep(0.05)
    assert task.state is TaskState.FAILED and task.reason == "generation failed"
    assert task.credits_increment is None
