"""Async client for the image service: typed calls over one shared httpx client, with error mapping and retries.

POSTs create paid tasks and are not idempotent, so they are resent only when the service surely did not
process them (the connection failed, or it answered 429). GETs and the upload PUT are idempotent and are
retried on every retryable error with full-jitter exponential backoff (bot.backoff), never before
Retry-After: a 429 that asks for longer than the policy's `max_delay` ends the call with RateLimited.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote, urlsplit

import httpx
from pydantic import SecretStr

from bot.aiart.errors import (
    AiartError,
    APIError,
    BadRequest,
    ConnectError,
    MalformedResponse,
    NoCredits,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
    Unauthorized,
)
from bot.aiart.models import Credits, Request, Task, TaskState, UploadSlot
from bot.backoff import full_jitter

logger = logging.getLogger("bot.aiart")

SUCCESS_CODE = "000"
NO_CREDITS_CODE = "510"
UNKNOWN_ERROR_CODE = "999"
DEFAULT_STATIC_URL = "https://pub-static.fotor.com"
#: a sandbox adds this header to its answers, so a client knows its pictures are test pictures
SANDBOX_HEADER = "X-Aiart-Sandbox"

_STATUS_STATES = {0: TaskState.RUNNING, 1: TaskState.COMPLETED, 2: TaskState.FAILED}
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a retryable call is tried again."""

    attempts: int = 4  # total tries for a retryable call
    base_delay: float = 0.5  # exponential backoff base, full jitter
    max_delay: float = 30.0  # cap on one wait; a Retry-After beyond it ends the call instead

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("delays must not be negative")

    def delay(self, attempt: int, error: AiartError, rng: random.Random) -> float | None:
        """The wait after failed try number `attempt` (1-based), at least what a 429 asked for (bot.backoff);
        None when that is longer than `max_delay`: not waited out inside the call."""
        retry_after = error.retry_after if isinstance(error, RateLimited) else None
        if retry_after is not None and retry_after > self.max_delay:
            return None
        return full_jitter(attempt, base=self.base_delay, cap=self.max_delay, rng=rng, retry_after=retry_after)


class _Envelope(NamedTuple):
    data: dict[str, Any]
    msg: str | None


def _retry_idempotent(error: AiartError) -> bool:
    return error.retryable


def _retry_unprocessed(error: AiartError) -> bool:
    # a POST may be resent only when the service surely did not act on it: a task costs a token
    return isinstance(error, (ConnectError, RateLimited))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def public_result_url(url: str, static_url: str = DEFAULT_STATIC_URL) -> str | None:
    """The fetchable form of a result URL: s3://<bucket>/<path> becomes <static_url>/<path>; None if unusable."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") and parts.netloc:
        return url
    if scheme == "s3":
        path = url[len("s3://"):].partition("/")[2]
        return f"{static_url.rstrip('/')}/{path}" if path else None
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _result_urls(data: dict[str, Any], static_url: str) -> tuple[str, ...]:
    candidates: list[Any] = [data.get("resultUrl")]
    groups = data.get("avatarResult")
    for group in groups if isinstance(groups, list) else ():
        images = group.get("images") if isinstance(group, dict) else None
        for image in images if isinstance(images, list) else ():
            if isinstance(image, dict):
                candidates.append(image.get("url"))
    urls = (public_result_url(url, static_url) for url in candidates if _text(url))
    return tuple(url for url in urls if url)


def parse_task(data: dict[str, Any], task_id: str, *, envelope_msg: str | None = None,
               static_url: str = DEFAULT_STATIC_URL) -> Task:
    """A Task from the task query's data; a completed task without any result URL is malformed."""
    raw_status = _as_int(data.get("status"))
    state = _STATUS_STATES.get(raw_status, TaskState.UNKNOWN) if raw_status is not None else TaskState.UNKNOWN
    result_urls: tuple[str, ...] = ()
    reason: str | None = None
    nsfw = False
    if state is TaskState.COMPLETED:
        result_urls = _result_urls(data, static_url)
        if not result_urls:
            raise MalformedResponse(f"GET /v1/aiart/tasks/{task_id}: completed task has no result URL")
    elif state is TaskState.FAILED:
        reason = _text(data.get("msg")) or _text(envelope_msg) or "the service reported the task as failed"
        nsfw = data.get("hasHsfw") is True
    return Task(
        task_id=_text(data.get("taskId")) or task_id,
        state=state,
        raw_status=raw_status,
        result_urls=result_urls,
        reason=reason,
        nsfw=nsfw,
        type=_text(data.get("type")),
        created_ms=_as_int(data.get("createTime")),
        updated_ms=_as_int(data.get("updateTime")),
        credits_increment=_as_int(data.get("creditsIncrement")),
    )


class AiartClient:
    """Typed client for the image service over an injected, shared httpx.AsyncClient."""

    def __init__(self, http: httpx.AsyncClient, *, base_url: str, api_key: SecretStr | str,
                 static_url: str = DEFAULT_STATIC_URL, retry: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 rng: random.Random | None = None) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        self._static_url = static_url.rstrip("/")
        self._retry = retry
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._sandbox = False

    @property
    def sandbox(self) -> bool:
        """Whether the service has said (SANDBOX_HEADER) it is a sandbox, not the real service."""
        return self._sandbox

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r}, static_url={self._static_url!r})"

    # --- service calls -------------------------------------------------------------------------------

    async def submit(self, request: Request) -> str:
        """POST an operation request; returns the new task's id."""
        return await self._service_call("POST", request.endpoint, _task_id_of, body=request.payload(),
                                        policy=self._retry, retry_if=_retry_unprocessed)

    async def get_task(self, task_id: str, *, retry: RetryPolicy | None = None) -> Task:
        """GET one task's state and, once completed, its public result URLs."""
        if not task_id:
            raise ValueError("task_id must not be empty")
        # quoted so an odd id can never reach another path of the service
        path = f"/v1/aiart/tasks/{quote(task_id, safe='')}"

        def parse(envelope: _Envelope, label: str) -> Task:
            return parse_task(envelope.data, task_id, envelope_msg=envelope.msg, static_url=self._static_url)

        return await self._service_call("GET", path, parse, policy=retry or self._retry,
                                        retry_if=_retry_idempotent)

    async def credits(self, *, retry: RetryPolicy | None = None) -> Credits:
        """GET the account's token balance."""
        return await self._service_call("GET", "/v1/credits", _credits_of, policy=retry or self._retry,
                                        retry_if=_retry_idempotent)

    async def upload(self, data: bytes, *, suffix: str = "jpg", upload_type: str = Request.upload_type,
                     content_type: str = "image/jpeg") -> str:
        """Store image bytes with the service (signed slot, then PUT); returns the URL to pass as an image.

        `upload_type` is the slot's kind as the provider's own client names it per operation
        (`Request.upload_type`); `content_type` goes on the PUT, as that client sends it.
        """
        if not data:
            raise ValueError("upload data must not be empty")
        if not (suffix.isascii() and suffix.isalnum()):
            raise ValueError("suffix must be a short alphanumeric file extension")
        if not upload_type.replace("_", "").isalnum():
            raise ValueError("upload_type must be a plain word such as img2img")
        slot = await self._sign_upload(suffix, upload_type)
        await self._put_upload(slot.upload_url, data, content_type)
        return slot.url

    # --- plumbing --------------------------------------------------------------------------------------

    async def _sign_upload(self, suffix: str, upload_type: str) -> UploadSlot:
        return await self._service_call("GET", "/v1/upload/sign", _upload_slot_of,
                                        params={"type": upload_type, "suffix": suffix},
                                        policy=self._retry, retry_if=_retry_idempotent)

    async def _put_upload(self, upload_url: str, data: bytes, content_type: str) -> None:
        target = urlsplit(upload_url)
        # the query of a presigned URL is its signature: keep it out of labels and logs
        label = f"PUT {target.netloc}{target.path}"

        async def once() -> None:
            # the type of the file, as the provider's client sends it: a presigned URL may be signed with it
            request = self._http.build_request("PUT", upload_url, content=data,
                                               headers={"Content-Type": content_type})
            # the slot lives on storage outside the service; the key must never travel there
            request.headers.pop("Authorization", None)
            response = await self._send(request, label)
            if not response.is_success:
                raise self._status_error(response, label)

        await self._retrying(label, once, self._retry, _retry_idempotent)

    async def _service_call(self, method: str, path: str, parse: Callable[[_Envelope, str], _T], *,
                            params: dict[str, str] | None = None, body: dict[str, Any] | None = None,
                            policy: RetryPolicy, retry_if: Callable[[AiartError], bool]) -> _T:
        label = f"{method} {path}"

        # parsing happens inside the retried step, so an unusable answer to a GET is asked for again
        async def once() -> _T:
            request = self._http.build_request(
                method, self._base_url + path, params=params, json=body,
                headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"})
            response = await self._send(request, label)
            return parse(self._unwrap(response, label), label)

        return await self._retrying(label, once, policy, retry_if)

    async def _retrying(self, label: str, once: Callable[[], Awaitable[_T]], policy: RetryPolicy,
                        retry_if: Callable[[AiartError], bool]) -> _T:
        attempt = 1
        while True:
            try:
                result = await once()
            except AiartError as error:
                wait = policy.delay(attempt, error, self._rng)
                if attempt >= policy.attempts or not retry_if(error) or wait is None:
                    logger.debug("%s -> %s (try %d/%d), giving up", label, type(error).__name__,
                                 attempt, policy.attempts)
                    raise
                logger.debug("%s -> %s (try %d/%d), retrying in %.2fs", label, type(error).__name__,
                             attempt, policy.attempts, wait)
                await self._sleep(wait)
                attempt += 1
            else:
                logger.debug("%s -> ok (try %d)", label, attempt)
                return result

    async def _send(self, request: httpx.Request, label: str) -> httpx.Response:
        try:
            response = await self._http.send(request)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise ConnectError(self._redact(f"{label}: could not connect: {type(exc).__name__} {exc}")) from exc
        except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:
            raise Timeout(self._redact(f"{label}: timed out: {type(exc).__name__}")) from exc
        except httpx.TransportError as exc:
            raise TransportError(self._redact(f"{label}: transport failed: {type(exc).__name__} {exc}")) from exc
        if response.headers.get(SANDBOX_HEADER):
            self._sandbox = True
        return response

    def _unwrap(self, response: httpx.Response, label: str) -> _Envelope:
        if not response.is_success:
            raise self._status_error(response, label)
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedResponse(f"{label}: HTTP {response.status_code} body is not JSON") from exc
        if not isinstance(body, dict):
            raise MalformedResponse(f"{label}: answer is not a JSON object")
        code, msg = _code_of(body.get("code")), _text(body.get("msg"))
        if code is None:
            raise MalformedResponse(f"{label}: answer has no code")
        if code != SUCCESS_CODE:
            message = self._message(label, response.status_code, code, msg)
            if code == NO_CREDITS_CODE:
                raise NoCredits(message, status_code=response.status_code, code=code)
            if code == UNKNOWN_ERROR_CODE:
                raise ServerError(message, status_code=response.status_code, code=code)
            raise APIError(message, status_code=response.status_code, code=code)
        data = body.get("data")
        if not isinstance(data, dict):
            raise MalformedResponse(f"{label}: answer has no data object")
        return _Envelope(data, msg)

    def _status_error(self, response: httpx.Response, label: str) -> APIError:
        code, msg = _error_details(response)
        status = response.status_code
        message = self._message(label, status, code, msg)
        if status == 400:
            return BadRequest(message, status_code=status, code=code)
        if status == 401:
            return Unauthorized(message, status_code=status, code=code)
        if status == 429:
            return RateLimited(message, status_code=status, code=code,
                               retry_after=parse_retry_after(response.headers.get("Retry-After")))
        if status >= 500:
            return ServerError(message, status_code=status, code=code)
        return APIError(message, status_code=status, code=code)

    def _message(self, label: str, status: int, code: str | None, msg: str | None) -> str:
        text = f"{label}: HTTP {status}"
        if code is not None:
            text += f" code {code}"
        if msg:
            text += f": {msg}"
        return self._redact(text)

    def _redact(self, text: str) -> str:
        # a service echoing the request back must not put the key into an exception
        key = self._api_key.get_secret_value()
        return text.replace(key, "***") if key else text


def _task_id_of(envelope: _Envelope, label: str) -> str:
    task_id = envelope.data.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise MalformedResponse(f"{label}: answer has no taskId string")
    return task_id


def _credits_of(envelope: _Envelope, label: str) -> Credits:
    total, remaining = _as_int(envelope.data.get("total")), _as_int(envelope.data.get("remaining"))
    if total is None or remaining is None:
        raise MalformedResponse(f"{label}: total and remaining must be integers")
    return Credits(total=total, remaining=remaining, business_id=_text(envelope.data.get("businessId")))


def _upload_slot_of(envelope: _Envelope, label: str) -> UploadSlot:
    upload_url, url = _text(envelope.data.get("upload_url")), _text(envelope.data.get("url"))
    if upload_url is None or url is None or urlsplit(upload_url).scheme.lower() not in ("http", "https"):
        raise MalformedResponse(f"{label}: answer lacks an http(s) upload_url and a url")
    return UploadSlot(upload_url=upload_url, url=url)


def _code_of(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    # tolerate a numeric code: 0 and 510 read as "000" and "510"
    number = _as_int(value)
    return f"{number:03d}" if number is not None and number >= 0 else None


def _error_details(response: httpx.Response) -> tuple[str | None, str | None]:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, None
    if not isinstance(body, dict):
        return None, None
    return _code_of(body.get("code")), _text(body.get("msg"))
