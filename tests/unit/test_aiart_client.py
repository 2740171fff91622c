"""Unit tests of the image-service client against httpx.MockTransport: requests sent, errors mapped, retries."""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from bot.aiart import (
    AiartClient,
    APIError,
    BadRequest,
    ConnectError,
    MalformedResponse,
    NoCredits,
    RateLimited,
    RetryPolicy,
    ServerError,
    TaskState,
    Timeout,
    TransportError,
    Unauthorized,
    parse_retry_after,
    public_result_url,
)
from bot.operations.art import Img2ImgRequest
from bot.operations.colorize import ColorizeRequest
from bot.operations.expand import ExpandRequest
from bot.operations.faceswap import FaceSwapRequest
from bot.operations.generate import ImageGenerationRequest
from bot.operations.headshot import HeadshotRequest, HeadshotTemplate
from bot.operations.imagine import Text2ImgRequest
from bot.operations.removebg import RemoveBackgroundRequest
from bot.operations.replace import ReplaceRequest
from bot.operations.restore import RestoreRequest
from bot.operations.retouch import RetouchRequest
from bot.operations.upscale import UpscaleRequest

KEY = "sk-unit-test-secret-4242"
BASE = "https://api.example.test/"
TASK_ID = "0123456789abcdef0123456789abcdef"
IMG = "https://img.example.test/in.jpg"
IMG2 = "https://img.example.test/ref.png"

Reply = Callable[[httpx.Request], httpx.Response]


def envelope(data: Any, code: Any = "000", msg: str = "success", status: int = 200,
             headers: dict[str, str] | None = None) -> Reply:
    """A reply carrying the service's JSON envelope."""
    return lambda request: httpx.Response(status, json={"code": code, "msg": msg, "data": data}, headers=headers)


def ok(data: Any) -> Reply:
    return envelope(data)


def raw(status: int, content: bytes = b"", headers: dict[str, str] | None = None) -> Reply:
    return lambda request: httpx.Response(status, content=content, headers=headers)


def fail(error: type[httpx.TransportError]) -> Reply:
    def reply(request: httpx.Request) -> httpx.Response:
        raise error("simulated", request=request)
    return reply


class FakeService:
    """Replies in order (the last one repeats), records every request and every backoff sleep."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[httpx.Request] = []
        self.sleeps: list[float] = []

    def will(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def handler(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply(request)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


MakeClient = Callable[..., AiartClient]


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
async def make_client(service: FakeService) -> AsyncIterator[MakeClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(service.handler)) as http:
        def build(**overrides: Any) -> AiartClient:
            options: dict[str, Any] = {"base_url": BASE, "api_key": KEY, "sleep": service.sleep,
                                       "rng": random.Random(1234)}
            options.update(overrides)
            return AiartClient(http, **options)
        yield build


@pytest.fixture
def client(make_client: MakeClient) -> AiartClient:
    return make_client()


def assert_authorized(request: httpx.Request) -> None:
    assert request.headers["Authorization"] == f"Bearer {KEY}"


# --- requests sent -----------------------------------------------------------------------------------

OPERATIONS: list[tuple[str, Callable[[AiartClient], Awaitable[str]], str, dict[str, Any]]] = [
    ("upscale", lambda c: c.submit(UpscaleRequest(IMG, factor=4, max_width=2048, max_height=1024)), "/v1/aiart/imgupscale",
     {"upscaling_resize": 4, "userImageUrl": IMG, "max_image_width": 2048, "max_image_height": 1024}),
    ("retouch", lambda c: c.submit(RetouchRequest(IMG)), "/v1/aiart/retouchskin", {"userImageUrl": IMG}),
    ("text2img", lambda c: c.submit(Text2ImgRequest("a red fox", "tpl-1", "16:9", "blur")), "/v1/aiart/text2img",
     {"content": "a red fox", "sizeId": "16:9", "templateId": "tpl-1", "negativePrompt": "blur"}),
    ("img2img", lambda c: c.submit(Img2ImgRequest(IMG, "tpl-2", content="oil", strength=0.7, format="png")),
     "/v1/aiart/img2img",
     {"userImageUrl": IMG, "templateId": "tpl-2", "strength": 0.7, "content": "oil", "format": "png"}),
    ("removebg", lambda c: c.submit(RemoveBackgroundRequest(IMG, "SegmentBody")), "/v1/aiart/backgroundremover",
     {"userImageUrl": IMG, "action": "SegmentBody"}),
    ("headshot", lambda c: c.submit(HeadshotRequest(IMG, (HeadshotTemplate("biz", 2), HeadshotTemplate("toon")))),
     "/v1/aiart/avatar",
     {"userImageUrl": IMG, "avatarTemplateParams": [{"templateId": "biz", "num": 2},
                                                    {"templateId": "toon", "num": 1}]}),
    ("colorize", lambda c: c.submit(ColorizeRequest(IMG)), "/v1/aiart/colorize",
     {"userImageUrl": IMG, "modelName": "stable", "renderFactor": 35, "watermarked": False}),
    ("restore", lambda c: c.submit(RestoreRequest(IMG, upscale=1, fidelity_weight=0.75)), "/v1/aiart/restoration",
     {"userImageUrl": IMG, "faceUpsample": True, "backgroundEnhance": True, "upscale": 1,
      "fidelityWeight": 0.75}),
    ("faceswap", lambda c: c.submit(FaceSwapRequest(IMG, "https://img.example.test/tpl.jpg")), "/v1/aiart/faceswap",
     {"userImageUrl": IMG, "templateImageUrl": "https://img.example.test/tpl.jpg"}),
    ("expand", lambda c: c.submit(ExpandRequest(IMG, left=10, bottom=20)), "/v1/aiart/extender",
     {"imageUrl": IMG, "padImgLeft": 10, "padImgTop": 0, "padImgRight": 0, "padImgBottom": 20}),
    ("replace", lambda c: c.submit(ReplaceRequest(IMG, "https://img.example.test/mask.png", "a hat")), "/v1/aiart/replacer",
     {"imageUrl": IMG, "maskImageUrl": "https://img.example.test/mask.png", "content": "a hat"}),
    ("generate", lambda c: c.submit(ImageGenerationRequest("m-1", "a cat", 512, 768, images=(IMG, IMG2))),
     "/v1/aiart/imagegeneration/m-1",
     {"width": 512, "height": 768, "quality": "medium",
      "content": [{"type": "text", "text": "a cat"}, {"type": "image_url", "url": IMG},
                  {"type": "image_url", "url": IMG2}]}),
    ("generate-4k", lambda c: c.submit(ImageGenerationRequest("seedream-4-5-251128", "a cat", 5461, 3072)),
     "/v1/aiart/imagegeneration/seedream-4-5-251128",
     {"width": 5461, "height": 3072, "quality": "medium", "content": [{"type": "text", "text": "a cat"}]}),
]


@pytest.mark.parametrize(("call", "path", "payload"), [op[1:] for op in OPERATIONS],
                         ids=[op[0] for op in OPERATIONS])
async def test_operation_posts_payload_with_auth_and_returns_task_id(
        client: AiartClient, service: FakeService, call: Callable[[AiartClient], Awaitable[str]],
        path: str, payload: dict[str, Any]) -> None:
    service.will(ok({"taskId": TASK_ID}))
    assert await call(client) == TASK_ID
    request = service.last
    assert request.method == "POST"
    assert str(request.url) == "https://api.example.test" + path
    assert json.loads(request.content) == payload
    assert request.headers["Content-Type"] == "application/json"
    assert_authorized(request)


async def test_get_task_completed_reads_all_fields(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"taskId": TASK_ID, "status": 1, "resultUrl": "https://cdn.example.test/out.jpg",
                     "type": "imgupscale", "createTime": 1700000000000, "updateTime": 1700000004000}))
    task = await client.get_task(TASK_ID)
    assert service.last.method == "GET"
    assert str(service.last.url) == f"https://api.example.test/v1/aiart/tasks/{TASK_ID}"
    assert service.last.content == b""
    assert_authorized(service.last)
    assert (task.task_id, task.state, task.raw_status) == (TASK_ID, TaskState.COMPLETED, 1)
    assert task.result_urls == ("https://cdn.example.test/out.jpg",)
    assert (task.type, task.created_ms, task.updated_ms) == ("imgupscale", 1700000000000, 1700000004000)
    assert task.finished and task.reason is None and not task.nsfw


async def test_headshot_results_are_rewritten_from_s3_in_order(make_client: MakeClient,
                                                              service: FakeService) -> None:
    client = make_client(static_url="https://static.example.test/")
    service.will(ok({"status": 1, "resultUrl": "", "type": "avatar", "avatarResult": [
        {"templateId": "biz", "images": [{"url": "s3://img-pub-fotor/a/b.jpg"},
                                         {"url": "https://cdn.example.test/c.jpg"}]},
        {"templateId": "toon", "images": [{"url": "s3://other-bucket/d/e/f.png"}]},
    ]}))
    task = await client.get_task(TASK_ID)
    assert task.result_urls == ("https://static.example.test/a/b.jpg", "https://cdn.example.test/c.jpg",
                                "https://static.example.test/d/e/f.png")


def test_public_result_url_drops_bucket_and_rejects_unusable_urls() -> None:
    assert public_result_url("s3://img-pub-fotor/a/b.jpg") == "https://pub-static.fotor.com/a/b.jpg"
    assert public_result_url("https://x.test/y.png") == "https://x.test/y.png"
    assert public_result_url("s3://bucket-only") is None
    assert public_result_url("file:///etc/passwd") is None


@pytest.mark.parametrize(("status", "state", "raw_status"), [
    (0, TaskState.RUNNING, 0), (2, TaskState.FAILED, 2), (7, TaskState.UNKNOWN, 7), (-1, TaskState.UNKNOWN, -1),
    (None, TaskState.UNKNOWN, None), ("1", TaskState.UNKNOWN, None), (True, TaskState.UNKNOWN, None),
])
async def test_status_values_map_to_states(client: AiartClient, service: FakeService, status: Any,
                                           state: TaskState, raw_status: int | None) -> None:
    service.will(ok({"taskId": TASK_ID, "status": status, "resultUrl": "https://cdn.example.test/x.jpg"}))
    task = await client.get_task(TASK_ID)
    assert (task.state, task.raw_status) == (state, raw_status)
    assert task.result_urls == ()  # results only count on a completed task


async def test_missing_status_is_unknown(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"taskId": TASK_ID}))
    task = await client.get_task(TASK_ID)
    assert task.state is TaskState.UNKNOWN and not task.finished


@pytest.mark.parametrize(("data", "envelope_msg", "reason", "nsfw"), [
    ({"status": 2, "msg": "face not found", "hasHsfw": False}, "success", "face not found", False),
    ({"status": 2, "hasHsfw": True}, "content rejected", "content rejected", True),
    ({"status": 2}, "", "the service reported the task as failed", False),
])
async def test_failed_task_reason_and_nsfw(client: AiartClient, service: FakeService, data: dict[str, Any],
                                           envelope_msg: str, reason: str, nsfw: bool) -> None:
    service.will(envelope(data, msg=envelope_msg))
    task = await client.get_task(TASK_ID)
    assert (task.state, task.reason, task.nsfw) == (TaskState.FAILED, reason, nsfw)


async def test_completed_task_without_result_is_malformed(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"status": 1, "resultUrl": "", "avatarResult": []}))
    with pytest.raises(MalformedResponse):
        await client.get_task(TASK_ID, retry=RetryPolicy(attempts=2))
    assert len(service.requests) == 2  # the per-call policy replaced the client's 4 tries


async def test_task_id_cannot_escape_the_task_path(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"status": 0}))
    await client.get_task("../../credits")
    assert service.last.url.raw_path == b"/v1/aiart/tasks/..%2F..%2Fcredits"


async def test_credits(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"businessId": "biz-9", "total": 100, "remaining": 42}))
    credits = await client.credits()
    assert (credits.total, credits.remaining, credits.business_id) == (100, 42, "biz-9")
    assert service.last.method == "GET" and service.last.url.path == "/v1/credits"
    assert_authorized(service.last)


async def test_upload_signs_then_puts_bytes_without_the_key(client: AiartClient, service: FakeService) -> None:
    slot = {"upload_url": "https://bucket.example.test/up/1.jpg?X-Amz-Signature=abc",
            "url": "https://u.test/1.jpg"}
    service.will(ok(slot), raw(200))
    uploaded = await client.upload(b"\x89PNG-bytes", suffix="png", upload_type="img_upscale", content_type="image/png")
    assert uploaded == "https://u.test/1.jpg"
    sign, put = service.requests
    assert (sign.method, sign.url.path, dict(sign.url.params)) == ("GET", "/v1/upload/sign",
                                                                   {"type": "img_upscale", "suffix": "png"})
    assert_authorized(sign)
    assert (put.method, str(put.url), put.content) == ("PUT", slot["upload_url"], b"\x89PNG-bytes")
    assert put.headers["Content-Type"] == "image/png"
    assert "Authorization" not in put.headers


def test_upload_types_are_those_of_the_providers_client() -> None:
    assert UpscaleRequest.upload_type == "img_upscale"
    assert RemoveBackgroundRequest.upload_type == "bg_remove"
    assert Img2ImgRequest.upload_type == ImageGenerationRequest.upload_type == "img2img"


async def test_upload_put_drops_a_default_authorization_header(service: FakeService) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(transport=httpx.MockTransport(service.handler), headers=headers) as http:
        client = AiartClient(http, base_url=BASE, api_key=KEY, sleep=service.sleep)
        service.will(ok({"upload_url": "https://bucket.example.test/p", "url": "https://u.test/p"}), raw(200))
        await client.upload(b"data")
    assert "Authorization" not in service.last.headers


@pytest.mark.parametrize("slot", [{"url": "https://u.test/p"},
                                  {"upload_url": "ftp://x/p", "url": "https://u.test/p"},
                                  {"upload_url": "https://bucket.example.test/p", "url": ""}],
                         ids=["no-upload-url", "not-http", "empty-url"])
async def test_unusable_upload_slot_is_malformed_and_asked_again(client: AiartClient, service: FakeService,
                                                                 slot: dict[str, str]) -> None:
    service.will(ok(slot))
    with pytest.raises(MalformedResponse):
        await client.upload(b"data")
    assert [r.method for r in service.requests] == ["GET"] * 4  # nothing was PUT anywhere


async def test_upload_rejects_bad_arguments_before_any_request(client: AiartClient, service: FakeService) -> None:
    with pytest.raises(ValueError):
        await client.upload(b"")
    with pytest.raises(ValueError):
        await client.upload(b"data", suffix="../x")
    assert service.requests == []


async def test_upload_put_is_retried_like_a_get(client: AiartClient, service: FakeService) -> None:
    service.will(ok({"upload_url": "https://bucket.example.test/p", "url": "https://u.test/p"}),
                 raw(503), fail(httpx.ReadError), raw(200))
    assert await client.upload(b"data") == "https://u.test/p"
    assert [r.method for r in service.requests] == ["GET", "PUT", "PUT", "PUT"]
    assert len(service.sleeps) == 2


# --- error mapping -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "error", "status_code", "code"), [
    (envelope(None, code="400", msg="bad field", status=400), BadRequest, 400, "400"),
    (envelope(None, code="401", msg="bad key", status=401), Unauthorized, 401, "401"),
    (envelope(None, code="429", msg="slow down", status=429), RateLimited, 429, "429"),
    (envelope(None, code="500", msg="oops", status=500), ServerError, 500, "500"),
    (raw(502, b"<html>bad gateway</html>"), ServerError, 502, None),
    (envelope(None, code="404", msg="no route", status=404), APIError, 404, "404"),
    (envelope({}, code="510", msg="No enough credits"), NoCredits, 200, "510"),
    (envelope({}, code="999", msg="unknown error"), ServerError, 200, "999"),
    (envelope({}, code="123", msg="odd thing"), APIError, 200, "123"),
], ids=["400", "401", "429", "500", "502-html", "404", "510", "999", "other-code"])
async def test_error_mapping(make_client: MakeClient, service: FakeService, reply: Reply,
                             error: type[APIError], status_code: int, code: str | None) -> None:
    client = make_client(retry=RetryPolicy(attempts=1))
    service.will(reply)
    with pytest.raises(error) as caught:
        await client.credits()
    assert type(caught.value) is error
    assert (caught.value.status_code, caught.value.code) == (status_code, code)
    assert "GET /v1/credits" in str(caught.value) and KEY not in str(caught.value)


async def test_error_message_carries_the_service_msg_but_never_the_key(client: AiartClient,
                                                                       service: FakeService) -> None:
    service.will(envelope(None, code="401", msg=f"key {KEY} is invalid", status=401))
    with pytest.raises(Unauthorized) as caught:
        await client.credits()
    assert "is invalid" in str(caught.value)
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)


@pytest.mark.parametrize("reply", [
    raw(200, b"not json"), raw(200, b"[1, 2]"), envelope(None), raw(200, b'{"code": "000", "msg": "ok"}'),
    ok({"noTaskId": 1}), ok({"taskId": 12345}), ok({"taskId": ""}), raw(200, b'{"msg": "no code"}'),
], ids=["not-json", "array", "data-null", "no-data", "no-taskid", "taskid-int", "taskid-empty", "no-code"])
async def test_malformed_answers(client: AiartClient, service: FakeService, reply: Reply) -> None:
    service.will(reply)
    with pytest.raises(MalformedResponse):
        await client.submit(RetouchRequest(IMG))
    assert len(service.requests) == 1  # a POST is never resent on a malformed answer


@pytest.mark.parametrize(("raised", "error"), [
    (httpx.ConnectError, ConnectError), (httpx.ConnectTimeout, ConnectError), (httpx.PoolTimeout, ConnectError),
    (httpx.ReadTimeout, Timeout), (httpx.WriteTimeout, Timeout),
    (httpx.ReadError, TransportError), (httpx.RemoteProtocolError, TransportError),
])
async def test_transport_error_mapping(make_client: MakeClient, service: FakeService,
                                       raised: type[httpx.TransportError], error: type[TransportError]) -> None:
    client = make_client(retry=RetryPolicy(attempts=1))
    service.will(fail(raised))
    with pytest.raises(error) as caught:
        await client.credits()
    assert type(caught.value) is error
    assert isinstance(caught.value.__cause__, raised)


# --- retries -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "error"), [
    (raw(500), ServerError), (raw(429), RateLimited), (fail(httpx.ReadError), TransportError),
    (raw(200, b"<html>"), MalformedResponse), (envelope({}, code="999"), ServerError),
], ids=["5xx", "429", "transport", "malformed", "code-999"])
async def test_get_retries_retryable_errors_up_to_attempts(client: AiartClient, service: FakeService,
                                                           reply: Reply, error: type[Exception]) -> None:
    service.will(reply)
    with pytest.raises(error):
        await client.credits()
    assert len(service.requests) == 4
    assert len(service.sleeps) == 3


async def test_get_recovers_after_transient_errors(client: AiartClient, service: FakeService) -> None:
    service.will(raw(503), fail(httpx.ConnectError), ok({"total": 5, "remaining": 5}))
    assert (await client.credits()).remaining == 5
    assert len(service.requests) == 3


async def test_backoff_is_full_jitter_under_an_exponential_cap(make_client: MakeClient,
                                                               service: FakeService) -> None:
    client = make_client(retry=RetryPolicy(attempts=6, base_delay=1.0, max_delay=5.0))
    service.will(raw(500))
    with pytest.raises(ServerError):
        await client.credits()
    caps = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert len(service.sleeps) == len(caps)
    assert all(0.0 <= wait <= cap for wait, cap in zip(service.sleeps, caps, strict=True))
    assert len(set(service.sleeps)) == len(caps)  # jittered, not a fixed schedule


async def test_retry_after_seconds_is_honoured(client: AiartClient, service: FakeService) -> None:
    service.will(raw(429, headers={"Retry-After": "7"}), ok({"total": 1, "remaining": 1}))
    await client.credits()
    assert len(service.sleeps) == 1 and service.sleeps[0] >= 7


async def test_a_retry_after_beyond_max_delay_ends_the_call_instead_of_retrying_early(
        client: AiartClient, service: FakeService) -> None:
    # never sooner than asked (bot.backoff): the caller (the worker) reschedules the work for after it
    service.will(raw(429, headers={"Retry-After": "3600"}), ok({"total": 1, "remaining": 1}))
    with pytest.raises(RateLimited) as caught:
        await client.credits()
    assert caught.value.retry_after == 3600 and service.sleeps == [] and len(service.requests) == 1


async def test_retry_after_http_date_is_read(make_client: MakeClient, service: FakeService) -> None:
    client = make_client(retry=RetryPolicy(attempts=1))
    service.will(raw(429, headers={"Retry-After": email.utils.formatdate(time.time() + 20, usegmt=True)}))
    with pytest.raises(RateLimited) as caught:
        await client.credits()
    assert caught.value.retry_after is not None and 15 <= caught.value.retry_after <= 21


def test_parse_retry_after_edge_cases() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # already past


@pytest.mark.parametrize("reply", [
    envelope(None, code="400", status=400), envelope(None, code="401", status=401), envelope({}, code="510"),
], ids=["400", "401", "510"])
async def test_get_never_retries_client_errors(client: AiartClient, service: FakeService, reply: Reply) -> None:
    service.will(reply)
    with pytest.raises(APIError):
        await client.get_task(TASK_ID)
    assert len(service.requests) == 1 and service.sleeps == []


@pytest.mark.parametrize(("reply", "error"), [
    (raw(500), ServerError), (envelope({}, code="999"), ServerError), (fail(httpx.ReadTimeout), Timeout),
    (fail(httpx.ReadError), TransportError), (envelope(None, code="400", status=400), BadRequest),
], ids=["5xx", "code-999", "read-timeout", "read-error", "400"])
async def test_post_is_not_resent_when_it_may_have_been_processed(client: AiartClient, service: FakeService,
                                                                  reply: Reply, error: type[Exception]) -> None:
    service.will(reply, ok({"taskId": TASK_ID}))
    with pytest.raises(error):
        await client.submit(RetouchRequest(IMG))
    assert len(service.requests) == 1 and service.sleeps == []


async def test_post_is_resent_after_connect_error(client: AiartClient, service: FakeService) -> None:
    service.will(fail(httpx.ConnectError), fail(httpx.ConnectTimeout), ok({"taskId": TASK_ID}))
    assert await client.submit(RetouchRequest(IMG)) == TASK_ID
    assert len(service.requests) == 3 and len(service.sleeps) == 2


async def test_post_is_resent_after_429_honouring_retry_after(client: AiartClient, service: FakeService) -> None:
    service.will(raw(429, headers={"Retry-After": "12"}), ok({"taskId": TASK_ID}))
    assert await client.submit(RetouchRequest(IMG)) == TASK_ID
    assert len(service.requests) == 2 and service.sleeps[0] >= 12
    assert service.requests[0].content == service.requests[1].content


async def test_post_gives_up_after_attempts(client: AiartClient, service: FakeService) -> None:
    service.will(fail(httpx.ConnectError))
    with pytest.raises(ConnectError):
        await client.submit(RetouchRequest(IMG))
    assert len(service.requests) == 4


# --- secrets -----------------------------------------------------------------------------------------

async def test_repr_hides_the_key(make_client: MakeClient) -> None:
    for key in (KEY, SecretStr(KEY)):
        client = make_client(api_key=key)
        assert KEY not in repr(client) and KEY not in str(client)
        assert "api.example.test" in repr(client)


async def test_debug_logs_name_calls_but_never_the_key(client: AiartClient, service: FakeService,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    service.will(raw(503), ok({"total": 1, "remaining": 1}))
    with caplog.at_level(logging.DEBUG):
        await client.credits()
    mine = [r.getMessage() for r in caplog.records if r.name == "bot.aiart"]
    assert any("GET /v1/credits -> ServerError" in m for m in mine)
    assert any("GET /v1/credits -> ok" in m for m in mine)
    assert all(KEY not in r.getMessage() for r in caplog.records)


def test_retry_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay=-1)
