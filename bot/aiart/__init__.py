"""Client for the asynchronous AI image service: answers, errors and the HTTP client.

The typed requests, one per operation, live in `bot.aiart.models`.
"""

from __future__ import annotations

from bot.aiart.client import (
    DEFAULT_STATIC_URL,
    AiartClient,
    RetryPolicy,
    parse_retry_after,
    parse_task,
    public_result_url,
)
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
from bot.aiart.models import Credits, ImageRef, Request, Task, TaskState, UploadSlot

__all__ = [
    "DEFAULT_STATIC_URL",
    "APIError",
    "AiartClient",
    "AiartError",
    "BadRequest",
    "ConnectError",
    "Credits",
    "ImageRef",
    "MalformedResponse",
    "NoCredits",
    "RateLimited",
    "Request",
    "RetryPolicy",
    "ServerError",
    "Task",
    "TaskState",
    "Timeout",
    "TransportError",
    "Unauthorized",
    "UploadSlot",
    "parse_retry_after",
    "parse_task",
    "public_result_url",
]
