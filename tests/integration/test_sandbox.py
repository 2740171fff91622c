"""The embedded sandbox over real HTTP on loopback, driven with plain httpx."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import mimetypes
import socket
import struct
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from aiohttp import web
from PIL import Image

from bot.aiart import AiartClient
from bot.aiart.client import SANDBOX_HEADER
from bot.sandbox import FaultConfig, Sandbox, SandboxConfig, serve
from bot.sandbox.faults import FaultInjector
from tests.fakes import samples

API_KEY = "test-sandbox-key"
FAST = 0.05


def encode(image: Image.Image, fmt: str = "JPEG", **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def photo(size: tuple[int, int] = (200, 150), background: str = "white") -> Image.Image:
    """A plain background with a red block in the middle: a 'subject' for the background remover."""
    image = Image.new("RGB", size, background)
    width, height = size
    image.paste((200, 30, 30), (width // 4, height // 4, width * 3 // 4, height * 3 // 4))
    return image


def http_client(**options: Any) -> httpx.AsyncClient:
    """A client for plain HTTP on loopback (verify=False skips loading CA certificates, ~30 ms each)."""
    return httpx.AsyncClient(timeout=10, verify=False, **options)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PHOTO_BYTES = encode(photo())
PHOTO = b64(PHOTO_BYTES)
MASK = b64(encode(Image.new("L", (50, 50), 255), "PNG"))
#: stands in a parametrised body for PHOTO handed over by upload (no sandbox runs at collection)
UPLOADED_PHOTO = "<PHOTO uploaded to the sandbox>"


@asynccontextmanager
async def running(config: SandboxConfig) -> AsyncIterator[tuple[Sandbox, httpx.AsyncClient]]:
    sandbox = Sandbox(config)
    await sandbox.start()
    try:
        async with http_client(base_url=sandbox.base_url, headers={"Authorization": f"Bearer {API_KEY}"}) as client:
            yield sandbox, client
    finally:
        await sandbox.stop()


@pytest.fixture
async def sandbox_and_client() -> AsyncIterator[tuple[Sandbox, httpx.AsyncClient]]:
    async with running(SandboxConfig(api_key=API_KEY, task_seconds=FAST)) as pair:
        yield pair


@pytest.fixture
def sandbox(sandbox_and_client: tuple[Sandbox, httpx.AsyncClient]) -> Sandbox:
    return sandbox_and_client[0]


@pytest.fixture
def client(sandbox_and_client: tuple[Sandbox, httpx.AsyncClient]) -> httpx.AsyncClient:
    return sandbox_and_client[1]


JPEG = {"Content-Type": "image/jpeg"}
PNG = {"Content-Type": "image/png"}


def content_type(suffix: str) -> dict[str, str]:
    """The header the provider's client sends with a PUT of a file with this suffix."""
    return {"Content-Type": mimetypes.guess_type(f"x.{suffix}")[0] or "application/octet-stream"}


async def upload(client: httpx.AsyncClient, content: bytes, suffix: str = "jpg") -> str:
    """Hand image bytes over the way the bot does: sign an upload slot, PUT the bytes, return data.url."""
    signed = await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": suffix})
    assert signed.status_code == 200, signed.text
    slot = signed.json()["data"]
    # the PUT goes without the API key, as the bot's does
    async with http_client() as anonymous:
        stored = await anonymous.put(slot["upload_url"], content=content, headers=content_type(suffix))
    assert stored.status_code == 200, stored.text
    return slot["url"]


async def with_uploaded_photo(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    """The body with every UPLOADED_PHOTO replaced by the URL of PHOTO uploaded to this sandbox."""
    return {name: await upload(client, PHOTO_BYTES) if value == UPLOADED_PHOTO else value
            for name, value in body.items()}


async def create(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> str:
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    envelope = response.json()
    assert envelope["code"] == "000" and envelope["msg"] == "success"
    task_id = envelope["data"]["taskId"]
    assert len(task_id) == 32 and all(c in "0123456789abcdef" for c in task_id)
    return task_id


async def finish(client: httpx.AsyncClient, task_id: str, limit_s: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        response = await client.get(f"/v1/aiart/tasks/{task_id}")
        assert response.status_code == 200
        data = response.json()["data"]
        if data["status"] != 0:
            return data
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} still running after {limit_s} s")


async def run(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return await finish(client, await create(client, path, body))


async def download(url: str) -> tuple[Image.Image, httpx.Response]:
    # a fresh client without the API key: result files are public like a CDN
    async with http_client() as anonymous:
        response = await anonymous.get(url)
    assert response.status_code == 200, url
    return Image.open(io.BytesIO(response.content)), response


async def result_image(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Image.Image:
    data = await run(client, path, body)
    assert data["status"] == 1, data
    image, _ = await download(data["resultUrl"])
    return image


def upscale_body(image: str = PHOTO, factor: float = 2, max_side: int = 4096) -> dict[str, Any]:
    return {
        "upscaling_resize": factor,
        "userImageUrl": image,
        "max_image_width": max_side,
        "max_image_height": max_side,
    }


# --- task lifecycle ---------------------------------------------------------------------------


async def test_task_reports_running_then_completed_with_timestamps_and_polls() -> None:
    async with running(SandboxConfig(api_key=API_KEY, task_seconds=0.4)) as (sandbox, client):
        task_id = await create(client, "/v1/aiart/imgupscale", upscale_body())
        first = (await client.get(f"/v1/aiart/tasks/{task_id}")).json()
        assert first["code"] == "000"
        assert first["data"]["status"] == 0
        assert first["data"]["resultUrl"] == ""
        assert first["data"]["type"] == "imgupscale"
        done = await finish(client, task_id)
        task = sandbox.tasks[task_id]
    assert done["status"] == 1
    assert done["taskId"] == task_id and done["businessId"]
    assert done["updateTime"] - done["createTime"] >= 350
    assert done["resultUrl"].startswith(f"{sandbox.base_url}/files/")
    assert task.completed_at is not None and task.completed_at - task.created_at >= 0.39
    assert task.polls >= 2 and task.status == 1 and len(task.result_files) == 1


async def test_task_duration_callable_overrides_task_seconds() -> None:
    seen: list[str] = []

    def duration(operation: str, task_id: str) -> float:
        seen.append(operation)
        return 0.0 if operation == "colorize" else 60.0

    async with running(SandboxConfig(api_key=API_KEY, task_seconds=60, task_duration=duration)) as (
        _,
        client,
    ):
        photo_url = await upload(client, PHOTO_BYTES)
        quick = await create(client, "/v1/aiart/colorize", {"userImageUrl": photo_url})
        slow = await create(client, "/v1/aiart/retouchskin", {"userImageUrl": photo_url})
        assert (await finish(client, quick))["status"] == 1
        assert (await client.get(f"/v1/aiart/tasks/{slow}")).json()["data"]["status"] == 0
    assert seen == ["colorize", "retouchskin"]


async def test_task_duration_may_depend_on_the_input_size() -> None:
    seen: list[tuple[str, int | None]] = []

    def duration(operation: str, task_id: str, input_pixels: int | None) -> float:
        seen.append((operation, input_pixels))
        return 0.0 if (input_pixels or 0) < 10_000 else 60.0

    async with running(SandboxConfig(api_key=API_KEY, task_seconds=60, task_duration_by_size=duration)) as (_, client):
        small = await create(client, "/v1/aiart/colorize", {"userImageUrl": await upload(client, samples.jpeg(64, 48))})
        large = await create(client, "/v1/aiart/colorize",
                             {"userImageUrl": await upload(client, samples.jpeg(200, 150))})
        assert (await finish(client, small))["status"] == 1
        assert (await client.get(f"/v1/aiart/tasks/{large}")).json()["data"]["status"] == 0
    assert sorted(seen) == [("colorize", 64 * 48), ("colorize", 200 * 150)]


async def test_unknown_operation_is_a_404_envelope(sandbox: Sandbox, client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/aiart/babygenerator", json={})
    assert response.status_code == 404 and response.json()["code"] == "404"
    assert sandbox.tasks == {}


async def test_unknown_task_id_is_a_400_envelope(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/v1/aiart/tasks/{'0' * 32}")
    assert response.status_code == 400
    assert response.json() == {"code": "400", "msg": "taskId not found", "data": None}


# --- geometry of every operation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("factor", "max_side", "expected"),
    [
        (2, 4096, (400, 300)),
        (2.0, 4096, (400, 300)),
        (4, 4096, (800, 600)),
        (4, 500, (500, 375)),
    ],
)
async def test_upscale_multiplies_and_caps_proportionally(
    client: httpx.AsyncClient, factor: float, max_side: int, expected: tuple[int, int]
) -> None:
    image = await result_image(client, "/v1/aiart/imgupscale", upscale_body(factor=factor, max_side=max_side))
    assert image.size == expected
    assert image.format == "JPEG"


async def test_upscale_cap_uses_the_tighter_of_width_and_height(client: httpx.AsyncClient) -> None:
    body = {"upscaling_resize": 4, "userImageUrl": PHOTO, "max_image_width": 2048, "max_image_height": 300}
    image = await result_image(client, "/v1/aiart/imgupscale", body)
    assert image.size == (400, 300)


async def test_expand_adds_the_padding(client: httpx.AsyncClient) -> None:
    body = {
        "imageUrl": await upload(client, PHOTO_BYTES),
        "padImgLeft": 10,
        "padImgTop": 20,
        "padImgRight": 30,
        "padImgBottom": 40,
    }
    image = await result_image(client, "/v1/aiart/extender", body)
    assert image.size == (240, 210)
    # the original sits where the padding puts it: its red block is still at the shifted centre
    red, green, _ = image.convert("RGB").getpixel((10 + 100, 20 + 75))
    assert red > 150 and green < 100


async def test_background_removal_gives_an_rgba_png_with_clear_corners(client: httpx.AsyncClient) -> None:
    data = await run(client, "/v1/aiart/backgroundremover", {"userImageUrl": PHOTO, "action": "auto"})
    image, response = await download(data["resultUrl"])
    assert response.headers["content-type"] == "image/png"
    assert image.format == "PNG" and image.mode == "RGBA" and image.size == (200, 150)
    assert image.getpixel((0, 0))[3] == 0 and image.getpixel((199, 149))[3] == 0
    assert image.getpixel((100, 75))[3] == 255


async def test_headshots_come_as_s3_urls_served_under_static(
    sandbox: Sandbox, client: httpx.AsyncClient
) -> None:
    body = {
        "userImageUrl": await upload(client, PHOTO_BYTES),
        "avatarTemplateParams": [{"templateId": "business", "num": 2}, {"templateId": "cartoon", "num": 3}],
    }
    data = await run(client, "/v1/aiart/avatar", body)
    assert data["status"] == 1 and data["type"] == "avatar" and data["resultUrl"] == ""
    groups = data["avatarResult"]
    assert [(group["templateId"], len(group["images"])) for group in groups] == [
        ("business", 2),
        ("cartoon", 3),
    ]
    prefix = "s3://img-pub-fotor/"
    urls = [image["url"] for group in groups for image in group["images"]]
    assert all(url.startswith(prefix + "sandbox/") for url in urls)
    colours = set()
    for url in urls:
        image, _ = await download(f"{sandbox.static_url}/{url.removeprefix(prefix)}")
        assert image.size == (512, 512) and image.format == "JPEG"
        colours.add(image.convert("RGB").getpixel((5, 5)))
    assert len(colours) > 1  # each template has its own tint
    assert sandbox.credits_remaining == 1000 - 5


async def test_restoration_multiplies_by_upscale(client: httpx.AsyncClient) -> None:
    body = {
        "userImageUrl": await upload(client, PHOTO_BYTES),
        "faceUpsample": True,
        "backgroundEnhance": True,
        "upscale": 2,
        "fidelityWeight": 0.5,
    }
    image = await result_image(client, "/v1/aiart/restoration", body)
    assert image.size == (400, 300)


@pytest.mark.parametrize(
    ("size_id", "expected"),
    [
        ("1:1", (1024, 1024)),
        ("4:3", (1024, 768)),
        ("3:4", (768, 1024)),
        ("16:9", (1024, 576)),
        ("9:16", (576, 1024)),
        ("bb43a4fa-105c-444a-9485-2707e147a538", (1024, 1024)),
    ],
)
async def test_text2img_size_follows_size_id(
    client: httpx.AsyncClient, size_id: str, expected: tuple[int, int]
) -> None:
    body = {"content": "a lighthouse at dusk", "sizeId": size_id, "templateId": "efd34eb3"}
    image = await result_image(client, "/v1/aiart/text2img", body)
    assert image.size == expected and image.format == "JPEG"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/aiart/retouchskin", {"userImageUrl": UPLOADED_PHOTO}),
        ("/v1/aiart/img2img", {"userImageUrl": PHOTO, "templateId": "anime", "strength": 0.7}),
        (
            "/v1/aiart/colorize",
            {"userImageUrl": UPLOADED_PHOTO, "modelName": "stable", "renderFactor": 35, "watermarked": False},
        ),
        ("/v1/aiart/replacer", {"imageUrl": PHOTO, "content": "a blue cat", "maskImageUrl": MASK}),
    ],
)
async def test_filters_keep_the_input_size_and_change_pixels(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    image = await result_image(client, path, await with_uploaded_photo(client, body))
    assert image.size == (200, 150)
    assert image.convert("RGB").tobytes() != photo().tobytes()


async def test_img2img_png_format_is_honoured(client: httpx.AsyncClient) -> None:
    body = {"userImageUrl": PHOTO, "templateId": "anime", "format": "png"}
    assert (await result_image(client, "/v1/aiart/img2img", body)).format == "PNG"


async def test_colorize_turns_grey_into_colour(client: httpx.AsyncClient) -> None:
    grey = await upload(client, encode(Image.linear_gradient("L").resize((160, 160)), "PNG"), "png")
    image = (await result_image(client, "/v1/aiart/colorize", {"userImageUrl": grey})).convert("RGB")
    red, green, blue = image.getpixel((80, 80))
    assert red - blue > 40


async def test_faceswap_keeps_the_template_size(client: httpx.AsyncClient) -> None:
    template = b64(encode(photo((300, 240), background="navy")))
    body = {"userImageUrl": PHOTO, "templateImageUrl": template}
    assert (await result_image(client, "/v1/aiart/faceswap", body)).size == (300, 240)


async def test_image_generation_uses_width_and_height(client: httpx.AsyncClient) -> None:
    body = {
        "width": 640,
        "height": 320,
        "quality": "standard",
        "content": [{"type": "text", "text": "a red fox"}, {"type": "image_url", "url": PHOTO}],
    }
    data = await run(client, "/v1/aiart/imagegeneration/some-model", body)
    image, _ = await download(data["resultUrl"])
    assert image.size == (640, 320) and data["type"] == "imagegeneration"


async def test_exif_orientation_is_applied(client: httpx.AsyncClient) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, shown rotated 90° to portrait
    rotated = b64(encode(photo((200, 100)), exif=exif.tobytes()))
    image = await result_image(client, "/v1/aiart/imgupscale", upscale_body(rotated))
    assert image.size == (200, 400)


# --- authentication, validation, credits, rate limit -------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": API_KEY}])
async def test_missing_or_wrong_key_is_401(sandbox: Sandbox, headers: dict[str, str]) -> None:
    async with http_client(base_url=sandbox.base_url, headers=headers) as anonymous:
        for response in (
            await anonymous.post("/v1/aiart/imgupscale", json=upscale_body()),
            await anonymous.get("/v1/credits"),
        ):
            assert response.status_code == 401
            body = response.json()
            assert body["code"] == "401" and body["data"] is None and body["msg"]
    assert sandbox.tasks == {}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/aiart/imgupscale", upscale_body(factor=3), "upscaling_resize"),
        ("/v1/aiart/imgupscale", upscale_body(factor=2.5), "upscaling_resize"),
        (
            "/v1/aiart/imgupscale",
            {"upscaling_resize": 2, "userImageUrl": PHOTO, "max_image_width": 100},
            "max_image_height",
        ),
        ("/v1/aiart/imgupscale", upscale_body(image=""), "userImageUrl"),
        ("/v1/aiart/img2img", {"userImageUrl": PHOTO, "templateId": "a", "strength": 1.5}, "strength"),
        ("/v1/aiart/img2img", {"userImageUrl": PHOTO}, "templateId"),
        ("/v1/aiart/extender", {"imageUrl": UPLOADED_PHOTO, "padImgLeft": -1}, "padImgLeft"),
        ("/v1/aiart/extender", {"imageUrl": UPLOADED_PHOTO, "padImgTop": 2.5}, "padImgTop"),
        (
            "/v1/aiart/avatar",
            {"userImageUrl": UPLOADED_PHOTO, "avatarTemplateParams": [{"templateId": "a", "num": 0}]},
            "num",
        ),
        ("/v1/aiart/avatar", {"userImageUrl": UPLOADED_PHOTO}, "avatarTemplateParams"),
        ("/v1/aiart/backgroundremover", {"userImageUrl": PHOTO, "action": "everything"}, "action"),
        (
            "/v1/aiart/restoration",
            {"userImageUrl": UPLOADED_PHOTO, "faceUpsample": True, "upscale": 2, "fidelityWeight": 0.5},
            "backgroundEnhance",
        ),
        ("/v1/aiart/text2img", {"content": "  ", "templateId": "a"}, "content"),
        ("/v1/aiart/faceswap", {"userImageUrl": PHOTO}, "templateImageUrl"),
        ("/v1/aiart/replacer", {"imageUrl": PHOTO, "content": "x"}, "maskImageUrl"),
        ("/v1/aiart/colorize", {"userImageUrl": "ftp://example.com/a.jpg"}, "userImageUrl"),
        (
            "/v1/aiart/imagegeneration/m",
            {"width": 10, "height": 512, "content": [{"type": "text", "text": "x"}]},
            "width",
        ),
    ],
)
async def test_bad_fields_are_400_naming_the_field(
    sandbox: Sandbox, client: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    response = await client.post(path, json=await with_uploaded_photo(client, body))
    assert response.status_code == 400
    envelope = response.json()
    assert envelope["code"] == "400" and envelope["data"] is None
    assert field in envelope["msg"]
    assert sandbox.tasks == {}


RESTORE_PARAMS = {"faceUpsample": True, "backgroundEnhance": False, "upscale": 1, "fidelityWeight": 0.6}


@pytest.mark.parametrize(
    ("path", "field", "other_fields"),
    [
        ("/v1/aiart/retouchskin", "userImageUrl", {}),
        ("/v1/aiart/avatar", "userImageUrl", {"avatarTemplateParams": [{"templateId": "a", "num": 1}]}),
        ("/v1/aiart/colorize", "userImageUrl", {}),
        ("/v1/aiart/restoration", "userImageUrl", RESTORE_PARAMS),
        ("/v1/aiart/extender", "imageUrl", {"padImgLeft": 8}),
    ],
)
@pytest.mark.parametrize(
    "base64_image", [PHOTO, "data:image/jpeg;base64," + PHOTO], ids=["base64", "data-uri"]
)
async def test_url_only_fields_refuse_base64_with_400_naming_the_field(
    sandbox: Sandbox,
    client: httpx.AsyncClient,
    path: str,
    field: str,
    other_fields: dict[str, Any],
    base64_image: str,
) -> None:
    refused = await client.post(path, json={field: base64_image, **other_fields})
    assert refused.status_code == 400
    assert refused.json() == {"code": "400", "msg": f"{field} must be an http(s) image URL", "data": None}
    assert sandbox.tasks == {}
    # the same request with the same image handed over by URL is taken: only the BASE64 was refused
    task_id = await create(client, path, {field: await upload(client, PHOTO_BYTES), **other_fields})
    assert list(sandbox.tasks) == [task_id]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/aiart/imgupscale", upscale_body()),
        ("/v1/aiart/img2img", {"userImageUrl": PHOTO, "templateId": "anime"}),
        ("/v1/aiart/backgroundremover", {"userImageUrl": PHOTO}),
        ("/v1/aiart/faceswap", {"userImageUrl": PHOTO, "templateImageUrl": PHOTO}),
        ("/v1/aiart/replacer", {"imageUrl": PHOTO, "content": "a blue cat", "maskImageUrl": MASK}),
    ],
)
async def test_base64_fields_still_accept_base64(
    sandbox: Sandbox, client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    data = await run(client, path, body)
    assert data["status"] == 1 and data["resultUrl"].startswith(f"{sandbox.base_url}/files/")
    # no upload was involved: the BASE64 in the body was the image
    assert not any(request.path.startswith("/v1/upload/") for request in sandbox.received)


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]"])
async def test_body_that_is_not_a_json_object_is_400(client: httpx.AsyncClient, content: bytes) -> None:
    response = await client.post(
        "/v1/aiart/retouchskin", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and "JSON" in response.json()["msg"]


async def test_credits_run_out_into_code_510() -> None:
    async with running(SandboxConfig(api_key=API_KEY, task_seconds=0, credits=2)) as (sandbox, client):
        body = {"userImageUrl": await upload(client, PHOTO_BYTES)}
        for _ in range(2):
            assert (await run(client, "/v1/aiart/colorize", body))["status"] == 1
        credits = (await client.get("/v1/credits")).json()["data"]
        response = await client.post("/v1/aiart/colorize", json=body)
    assert credits["total"] == 2 and credits["remaining"] == 0 and credits["businessId"]
    assert response.status_code == 200
    assert response.json() == {"code": "510", "msg": "No enough credits", "data": None}
    assert len(sandbox.tasks) == 2


async def test_failed_tasks_are_not_charged(sandbox: Sandbox, client: httpx.AsyncClient) -> None:
    data = await run(client, "/v1/aiart/text2img", {"content": "sandbox-fail please", "templateId": "a"})
    assert data["status"] == 2 and data["msg"] == "generation failed"
    assert sandbox.credits_remaining == 1000


async def test_rate_limit_answers_429_with_retry_after() -> None:
    async with running(SandboxConfig(api_key=API_KEY, rate_limit_per_s=0.5)) as (_, client):
        assert (await client.get("/v1/credits")).status_code == 200
        limited = await client.get("/v1/credits")
    assert limited.status_code == 429
    assert limited.json()["code"] == "429"
    assert int(limited.headers["Retry-After"]) == 2


# --- failing tasks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        (b64(b"definitely not an image"), "cannot decode"),
        ("%%%not base64%%%", "BASE64"),
        (b64(encode(photo())[:300]), "cannot decode"),
    ],
)
async def test_undecodable_input_fails_the_task_with_a_reason(
    client: httpx.AsyncClient, image: str, reason: str
) -> None:
    data = await run(client, "/v1/aiart/imgupscale", upscale_body(image))
    assert data["status"] == 2 and reason in data["msg"] and data["resultUrl"] == ""


def png_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims width × height pixels (a decompression bomb's shape)."""
    data = bytearray(encode(Image.new("L", (1, 1)), "PNG"))
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


async def test_images_with_too_many_pixels_are_refused_before_decoding(client: httpx.AsyncClient) -> None:
    data = await run(client, "/v1/aiart/imgupscale", upscale_body(b64(png_claiming(20000, 20000))))
    assert data["status"] == 2 and "too many pixels" in data["msg"]


async def test_data_uri_input_is_accepted(client: httpx.AsyncClient) -> None:
    uri = "data:image/jpeg;base64," + PHOTO
    # a data URI is BASE64, so it goes to a field that takes BASE64
    body = {"userImageUrl": uri, "templateId": "anime", "strength": 0.3}
    image = await result_image(client, "/v1/aiart/img2img", body)
    assert image.size == (200, 150)


async def test_retouch_rejects_inputs_outside_the_documented_resolution(client: httpx.AsyncClient) -> None:
    small = await upload(client, encode(photo((100, 100))))
    data = await run(client, "/v1/aiart/retouchskin", {"userImageUrl": small})
    assert data["status"] == 2 and "resolution" in data["msg"]


async def test_nsfw_trigger_fails_with_has_hsfw(client: httpx.AsyncClient) -> None:
    data = await run(
        client, "/v1/aiart/img2img", {"userImageUrl": PHOTO, "templateId": "a", "content": "sandbox-nsfw"}
    )
    assert data["status"] == 2 and data["hasHsfw"] is True


async def test_fail_task_rate_fails_every_task() -> None:
    config = SandboxConfig(api_key=API_KEY, task_seconds=0, faults=FaultConfig(fail_task_rate=1.0, seed=1))
    async with running(config) as (sandbox, client):
        data = await run(client, "/v1/aiart/colorize", {"userImageUrl": await upload(client, PHOTO_BYTES)})
    assert data["status"] == 2 and data["msg"] and sandbox.credits_remaining == 1000


# --- image sources: upload and URL --------------------------------------------------------------


async def test_upload_flow_serves_the_bytes_and_feeds_a_task(
    sandbox: Sandbox, client: httpx.AsyncClient
) -> None:
    slot = (await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "jpg"})).json()["data"]
    assert slot["upload_url"].startswith(f"{sandbox.base_url}/upload/")
    assert slot["url"].startswith(f"{sandbox.base_url}/uploads/") and slot["url"].endswith(".jpg")
    content = encode(photo((120, 90)))
    async with http_client() as anonymous:
        assert (await anonymous.get(slot["url"])).status_code == 404
        assert (await anonymous.put(slot["upload_url"], content=content, headers=JPEG)).status_code == 200
        assert (await anonymous.put(f"{sandbox.base_url}/upload/unknown", content=content)).status_code == 403
        served = await anonymous.get(slot["url"])
    assert served.content == content and served.headers["content-type"] == "image/jpeg"
    image = await result_image(client, "/v1/aiart/imgupscale", upscale_body(slot["url"]))
    assert image.size == (240, 180)


async def test_repeated_upload_put_replaces_the_bytes_like_s3(client: httpx.AsyncClient) -> None:
    slot = (await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "png"})).json()["data"]
    first, second = encode(photo((60, 40)), "PNG"), encode(photo((90, 70)), "PNG")
    async with http_client() as anonymous:
        assert (await anonymous.put(slot["upload_url"], content=first, headers=PNG)).status_code == 200
        # a client retrying after a lost answer, or sending new bytes, gets 200 again
        assert (await anonymous.put(slot["upload_url"], content=first, headers=PNG)).status_code == 200
        assert (await anonymous.get(slot["url"])).content == first
        assert (await anonymous.put(slot["upload_url"], content=second, headers=PNG)).status_code == 200
        served = await anonymous.get(slot["url"])
        empty = await anonymous.put(slot["upload_url"], content=b"")
        # a refused empty PUT neither closes the slot nor wipes the bytes
        assert (await anonymous.get(slot["url"])).content == second
        assert (await anonymous.put(slot["upload_url"], content=first, headers=PNG)).status_code == 200
    assert served.content == second and served.headers["content-type"] == "image/png"
    assert empty.status_code == 400
    image = await result_image(client, "/v1/aiart/imgupscale", upscale_body(slot["url"]))
    assert image.size == (120, 80)


async def test_upload_slot_expires_into_403_and_keeps_what_was_uploaded() -> None:
    config = SandboxConfig(api_key=API_KEY, task_seconds=0, upload_slot_seconds=0.2)
    async with running(config) as (sandbox, client), http_client() as anonymous:
        used, unused = [
            (await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "jpg"})).json()["data"]
            for _ in range(2)
        ]
        content = encode(photo((120, 90)))
        assert (await anonymous.put(used["upload_url"], content=content, headers=JPEG)).status_code == 200
        await asyncio.sleep(0.25)
        late_retry = await anonymous.put(used["upload_url"], content=content, headers=JPEG)
        late_first = await anonymous.put(unused["upload_url"], content=content, headers=JPEG)
        served = await anonymous.get(used["url"])
        # signing again forgets the expired slots a long-running sandbox would otherwise pile up
        await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "jpg"})
        live_slots = len(sandbox.state.upload_slots)
    for refused in (late_retry, late_first):
        assert refused.status_code == 403
        assert refused.json() == {"code": "403", "msg": "unknown or expired upload token", "data": None}
    assert served.status_code == 200 and served.content == content
    assert live_slots == 1


def test_upload_slot_lifetime_defaults_to_fifteen_minutes_and_must_be_positive() -> None:
    assert SandboxConfig().upload_slot_seconds == 15 * 60
    with pytest.raises(ValueError, match="upload_slot_seconds"):
        SandboxConfig(upload_slot_seconds=0)


async def test_upload_sign_validates_its_query(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "exe"})
    assert response.status_code == 400 and "suffix" in response.json()["msg"]
    # no release of the provider's client sends type=image
    response = await client.get("/v1/upload/sign", params={"type": "image", "suffix": "jpg"})
    assert response.status_code == 400 and "img_upscale" in response.json()["msg"]


async def test_upload_put_must_name_the_files_type(client: httpx.AsyncClient) -> None:
    slot = (await client.get("/v1/upload/sign", params={"type": "bg_remove", "suffix": "png"})).json()["data"]
    content = encode(photo((60, 40)), "PNG")
    async with http_client() as anonymous:
        untyped = await anonymous.put(slot["upload_url"], content=content)
        mistyped = await anonymous.put(slot["upload_url"], content=content, headers=JPEG)
        typed = await anonymous.put(slot["upload_url"], content=content, headers=PNG)
    assert (untyped.status_code, mistyped.status_code, typed.status_code) == (403, 403, 200)
    assert "image/png" in untyped.json()["msg"]


@asynccontextmanager
async def image_host(content: bytes) -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=content, content_type="image/png")

    app = web.Application()
    app.router.add_get("/picture.png", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def test_url_input_is_fetched_over_http(client: httpx.AsyncClient) -> None:
    async with image_host(encode(photo((90, 60)), "PNG")) as host:
        image = await result_image(client, "/v1/aiart/imgupscale", upscale_body(f"{host}/picture.png"))
        missing = await run(client, "/v1/aiart/imgupscale", upscale_body(f"{host}/missing.png?secret=s3cr3t"))
    assert image.size == (180, 120)
    assert missing["status"] == 2 and "HTTP 404" in missing["msg"] and "s3cr3t" not in missing["msg"]


async def test_oversized_url_input_fails_the_task() -> None:
    config = SandboxConfig(api_key=API_KEY, task_seconds=0, max_image_bytes=1000)
    async with (
        running(config) as (_, client),
        image_host(encode(Image.effect_noise((100, 100), 64), "PNG")) as host,
    ):
        data = await run(client, "/v1/aiart/imgupscale", upscale_body(f"{host}/picture.png"))
    assert data["status"] == 2 and "larger than 1000 bytes" in data["msg"]


# --- fault injection ----------------------------------------------------------------------------


def faulty(kind: str) -> SandboxConfig:
    return SandboxConfig(
        api_key=API_KEY,
        task_seconds=0,
        faults=FaultConfig(rate=1.0, kinds=(kind,), timeout_seconds=0.3, seed=7),
    )


async def test_fault_500_answers_code_999_and_creates_no_task() -> None:
    async with running(faulty("500")) as (sandbox, client):
        response = await client.post("/v1/aiart/backgroundremover", json={"userImageUrl": PHOTO})
    assert response.status_code == 500 and response.json()["code"] == "999"
    assert sandbox.tasks == {} and sandbox.faults_injected["500"] == 1


async def test_fault_429_carries_retry_after_one() -> None:
    async with running(faulty("429")) as (sandbox, client):
        response = await client.post("/v1/aiart/backgroundremover", json={"userImageUrl": PHOTO})
    assert response.status_code == 429 and response.headers["Retry-After"] == "1"
    assert response.json()["code"] == "429"
    assert sandbox.tasks == {} and sandbox.faults_injected["429"] == 1


async def test_fault_drop_closes_the_connection() -> None:
    async with running(faulty("drop")) as (sandbox, client):
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post("/v1/aiart/backgroundremover", json={"userImageUrl": PHOTO})
    assert sandbox.tasks == {} and sandbox.faults_injected["drop"] == 1


async def test_fault_malformed_sends_truncated_json() -> None:
    async with running(faulty("malformed")) as (sandbox, client):
        response = await client.get("/v1/credits")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        response.json()
    assert sandbox.faults_injected["malformed"] == 1


async def test_fault_timeout_creates_the_task_then_stalls() -> None:
    async with running(faulty("timeout")) as (sandbox, client):
        started = time.monotonic()
        response = await client.post("/v1/aiart/backgroundremover", json={"userImageUrl": PHOTO})
        elapsed = time.monotonic() - started
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/v1/credits", timeout=0.1)
    assert elapsed >= 0.3
    assert response.status_code == 200 and response.json()["data"]["taskId"] in sandbox.tasks
    assert sandbox.faults_injected["timeout"] == 2


async def test_faults_are_seeded_and_mixed() -> None:
    def outcomes(seed: int) -> list[str | None]:
        injector = FaultInjector(FaultConfig(rate=0.5, seed=seed))
        return [injector.pick() for _ in range(200)]

    first = outcomes(3)
    assert first == outcomes(3)
    assert {"500", "429", "timeout", "drop", "malformed", None} == set(first)


# --- recording, logging, serve() ----------------------------------------------------------------


async def test_requests_are_recorded_and_the_key_is_never_logged(
    sandbox: Sandbox, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bot.sandbox")
    photo_url = await upload(client, PHOTO_BYTES)
    await run(client, "/v1/aiart/colorize", {"userImageUrl": photo_url})
    post = next(request for request in sandbox.received if request.method == "POST")
    assert post.path == "/v1/aiart/colorize"
    assert post.headers["authorization"] == f"Bearer {API_KEY}" == post.headers.get("Authorization")
    assert json.loads(post.body) == {"userImageUrl": photo_url}
    assert any(request.path.startswith("/v1/aiart/tasks/") for request in sandbox.received)
    assert API_KEY not in repr(sandbox.received) and API_KEY not in repr(sandbox.config)
    assert caplog.records and API_KEY not in caplog.text


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_serve_runs_until_cancelled() -> None:
    port = free_port()
    server = asyncio.create_task(serve(SandboxConfig(api_key=API_KEY), "127.0.0.1", port))
    try:
        async with http_client(headers={"Authorization": f"Bearer {API_KEY}"}) as client:
            for _ in range(100):
                try:
                    response = await client.get(f"http://127.0.0.1:{port}/v1/credits")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.02)
            assert response.json()["data"]["remaining"] == 1000
    finally:
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server
    with pytest.raises(httpx.ConnectError):
        async with http_client() as client:
            await client.get(f"http://127.0.0.1:{port}/v1/credits")


async def test_a_public_url_names_the_sandbox_in_the_urls_it_hands_out() -> None:
    # listening on every interface in a container, reached by others as http://sandbox:8090
    async with running(SandboxConfig(api_key=API_KEY, task_seconds=FAST, public_url="http://sandbox.test:8090/")) as (
            sandbox, _):
        async with http_client(base_url=f"http://127.0.0.1:{sandbox._runner.addresses[0][1]}",
                               headers={"Authorization": f"Bearer {API_KEY}"}) as client:
            slot = (await client.get("/v1/upload/sign", params={"type": "img2img", "suffix": "jpg"})).json()["data"]
    assert sandbox.base_url == "http://sandbox.test:8090"
    assert slot["upload_url"].startswith("http://sandbox.test:8090/upload/")
    assert slot["url"].startswith("http://sandbox.test:8090/uploads/")


@pytest.mark.parametrize("announce", [True, False])
async def test_the_sandbox_says_it_is_one_in_every_answer_and_the_client_reads_it(announce):
    async with running(SandboxConfig(api_key=API_KEY, task_seconds=FAST, announce=announce)) as (sandbox, http):
        refused = await http.get("/v1/credits", headers={"Authorization": "Bearer wrong"})
        client = AiartClient(http, base_url=sandbox.base_url, api_key=API_KEY)
        assert client.sandbox is False  # nothing heard from the service yet
        await client.credits()
    assert (SANDBOX_HEADER in refused.headers) is announce  # errors too: a wrong key still learns what it reached
    assert client.sandbox is announce
