"""The sandbox's HTTP interface (aiohttp): routes, API-key check, rate limit and fault injection.

Every /v1 request passes, in order: the rate limit (429), the API key (401), fault injection, the
route. Errors on /v1 are JSON envelopes. The live answer to an unknown taskId is undocumented; the
sandbox gives HTTP 400 with code "400" (a bad parameter, the closest documented signal). Result,
static and upload files need no key, like the provider's CDN.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.aiart.client import SANDBOX_HEADER
from bot.sandbox.config import SandboxConfig
from bot.sandbox.faults import FaultInjector, immediate_fault_response
from bot.sandbox.lifecycle import TaskRunner
from bot.sandbox.operations import SandboxOperation, operations
from bot.sandbox.payloads import PayloadError, TaskSpec
from bot.sandbox.ratelimit import TokenBucket, retry_after_header
from bot.sandbox.responses import envelope, error_response, task_data
from bot.sandbox.state import (
    BUSINESS_ID,
    CONTENT_TYPES,
    RECORDED_BODY_LIMIT,
    HeaderDict,
    ReceivedRequest,
    SandboxState,
    StoredFile,
    now_ms,
)

logger = logging.getLogger("bot.sandbox")

UPLOAD_SUFFIXES = ("jpg", "jpeg", "png", "webp")
#: the upload kinds the provider's own client sends (`fotor-sdk`: one per kind of task)
UPLOAD_TYPES = ("img2img", "img_upscale", "bg_remove", "img2video")


@dataclass
class ServiceContext:
    """What the routes work with."""

    config: SandboxConfig
    state: SandboxState
    faults: FaultInjector
    tasks: TaskRunner
    limiter: TokenBucket | None
    base_url: Callable[[], str]


def build_app(context: ServiceContext) -> web.Application:
    """The aiohttp application serving the service's interface."""
    routes = ServiceRoutes(context)
    # room for a JSON body carrying two BASE64 images of the maximum size
    app = web.Application(middlewares=[routes.record, routes.announce, routes.gate],
                          client_max_size=context.config.max_image_bytes * 3 + 1024 * 1024)
    for operation in operations(context.config.extra_operations).values():
        app.router.add_post(operation.path, routes.task_creator(operation))
    app.router.add_get("/v1/aiart/tasks/{task_id}", routes.get_task)
    app.router.add_get("/v1/aiart/credentials", routes.get_sdk_token)
    app.router.add_get("/v1/credits", routes.get_credits)
    app.router.add_get("/v1/upload/sign", routes.sign_upload)
    app.router.add_put("/upload/{token}", routes.receive_upload)
    app.router.add_get("/uploads/{name}", routes.get_upload)
    app.router.add_get("/files/{name}", routes.get_result_file)
    app.router.add_get("/static/sandbox/{name}", routes.get_result_file)
    return app


async def _json_object(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise PayloadError("request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise PayloadError("request body must be a JSON object")
    return body


def _file_response(stored: StoredFile | None) -> web.Response:
    if stored is None:
        raise web.HTTPNotFound()
    return web.Response(body=stored.data, content_type=stored.content_type)


class ServiceRoutes:
    """Request handlers and middlewares over one sandbox's state."""

    def __init__(self, context: ServiceContext) -> None:
        self._context = context
        self._state = context.state
        self._config = context.config

    @web.middleware
    async def record(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Remember every request (body truncated), and log it without its headers."""
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            self._remember(request, b"")
            logger.debug("sandbox %s %s -> 413", request.method, request.path)
            return error_response(413, "413", "request body too large")
        self._remember(request, body)
        response = await handler(request)
        logger.debug("sandbox %s %s -> %s", request.method, request.path, response.status)
        return response

    def _remember(self, request: web.Request, body: bytes) -> None:
        self._state.remember(ReceivedRequest(
            method=request.method, path=request.path, query_string=request.query_string,
            headers=HeaderDict(request.headers.items()), body=body[:RECORDED_BODY_LIMIT]))

    @web.middleware
    async def announce(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Mark every /v1 answer, errors included, as the sandbox's."""
        response = await handler(request)
        if self._config.announce and request.path.startswith("/v1/"):
            response.headers[SANDBOX_HEADER] = "1"
        return response

    @web.middleware
    async def gate(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Rate limit, API key and fault injection for /v1; envelopes for every /v1 error."""
        if not request.path.startswith("/v1/"):
            return await handler(request)
        if self._context.limiter is not None:
            wait = self._context.limiter.take()
            if wait is not None:
                return error_response(429, "429", "too many requests",
                                      headers={"Retry-After": retry_after_header(wait)})
        if not self._authorized(request):
            return error_response(401, "401", "missing or invalid API key")
        fault = self._context.faults.pick()
        if fault is not None:
            self._state.faults_injected[fault] += 1
            logger.info("sandbox injects fault %s into %s %s", fault, request.method, request.path)
            if fault != "timeout":
                return immediate_fault_response(fault, request)
        stall = self._config.faults.timeout_seconds if fault == "timeout" else 0.0
        # a stalled POST has created its task already: the answer is what gets lost
        if stall and request.method != "POST":
            await asyncio.sleep(stall)
        try:
            response = await handler(request)
        except PayloadError as error:
            response = error_response(400, "400", str(error))
        except web.HTTPException as error:
            response = error_response(error.status, str(error.status), error.reason)
        if stall and request.method == "POST":
            await asyncio.sleep(stall)
        return response

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(),
                                                                 self._config.api_key.encode())

    def task_creator(self, operation: SandboxOperation) -> Callable[[web.Request], Any]:
        """The handler of one operation's POST: validate the body, check credits, create the task."""

        async def create_task(request: web.Request) -> web.Response:
            return self._create(operation.parse(await _json_object(request), **request.match_info))

        return create_task

    def _create(self, spec: TaskSpec) -> web.Response:
        if self._state.credits_remaining < max(1, spec.tokens):
            return envelope(None, code="510", msg="No enough credits")
        task = self._context.tasks.create(spec)
        return envelope({"taskId": task.task_id})

    async def get_task(self, request: web.Request) -> web.Response:
        """GET /v1/aiart/tasks/{taskId}."""
        task = self._state.tasks.get(request.match_info["task_id"])
        if task is None:
            return error_response(400, "400", "taskId not found")
        task.polls += 1
        self._context.tasks.settle(task)
        return envelope(task_data(task))

    async def get_credits(self, request: web.Request) -> web.Response:
        """GET /v1/credits."""
        return envelope({"businessId": BUSINESS_ID, "total": self._state.credits_total,
                         "remaining": self._state.credits_remaining})

    async def get_sdk_token(self, request: web.Request) -> web.Response:
        """GET /v1/aiart/credentials?timeout=<seconds>: a temporary token for the editor SDK."""
        raw = request.query.get("timeout", "3600")
        if not raw.isdigit() or int(raw) <= 0:
            raise PayloadError("timeout must be a positive integer")
        return envelope({"token": secrets.token_hex(16), "expire": now_ms() + int(raw) * 1000})

    async def sign_upload(self, request: web.Request) -> web.Response:
        """GET /v1/upload/sign?type=img2img&suffix=jpg: a URL to PUT the bytes to while the slot lives."""
        if request.query.get("type") not in UPLOAD_TYPES:
            raise PayloadError(f"type must be one of {', '.join(UPLOAD_TYPES)}")
        suffix = request.query.get("suffix", "").lower()
        if suffix not in UPLOAD_SUFFIXES:
            raise PayloadError(f"suffix must be one of {', '.join(UPLOAD_SUFFIXES)}")
        token, name = self._state.upload_slots.open(suffix)
        base = self._context.base_url()
        return envelope({"upload_url": f"{base}/upload/{token}", "url": f"{base}/uploads/{name}"})

    async def receive_upload(self, request: web.Request) -> web.Response:
        """PUT /upload/{token}: store the raw bytes; until the slot expires a repeat PUT replaces them."""
        body = await request.read()
        if len(body) > self._config.max_image_bytes:
            return error_response(413, "413", "image too large")
        name = self._state.upload_slots.name_for(request.match_info["token"])
        if name is None:
            return error_response(403, "403", "unknown or expired upload token")
        if not body:
            return error_response(400, "400", "empty upload")
        suffix = name.rsplit(".", 1)[-1]
        content_type = CONTENT_TYPES.get(suffix, "application/octet-stream")
        if request.headers.get("Content-Type", "").split(";")[0].strip().lower() != content_type:
            # a presigned URL is signed for its file's type, like the storage behind the live service
            return error_response(403, "403", f"Content-Type must be {content_type} for a .{suffix} upload")
        self._state.uploads.put(name, body, content_type)
        return web.Response(status=200)

    async def get_upload(self, request: web.Request) -> web.Response:
        """GET /uploads/{name}: an uploaded image."""
        return _file_response(self._state.uploads.get(request.match_info["name"]))

    async def get_result_file(self, request: web.Request) -> web.Response:
        """GET /files/{name} and /static/sandbox/{name}: a result image."""
        return _file_response(self._state.results.get(request.match_info["name"]))
