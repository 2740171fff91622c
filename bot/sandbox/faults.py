"""Fault injection: seeded decisions about which /v1 requests fail, and how.

Kinds: "500" (HTTP 500, envelope code 999), "429" (Retry-After 1), "timeout" (stall, then answer),
"drop" (close the connection without an answer), "malformed" (HTTP 200 with truncated JSON).
"""

from __future__ import annotations

import random

from aiohttp import web

from bot.sandbox.config import FaultConfig
from bot.sandbox.responses import error_response

MALFORMED_BODY = '{"code": "000", "data": '


class FaultInjector:
    """Decides, reproducibly for a given seed, which requests and tasks fail."""

    def __init__(self, config: FaultConfig) -> None:
        self.config = config
        # separate streams, so task failures do not shift which requests get faults
        self._requests = random.Random(config.seed)
        self._tasks = random.Random(None if config.seed is None else config.seed + 1)

    def pick(self) -> str | None:
        """The fault kind for the next /v1 request, or None for a normal answer."""
        if self.config.rate <= 0 or not self.config.kinds:
            return None
        if self._requests.random() >= self.config.rate:
            return None
        return self._requests.choice(self.config.kinds)

    def fails_task(self) -> bool:
        """Whether the next created task is to end in status 2."""
        return self.config.fail_task_rate > 0 and self._tasks.random() < self.config.fail_task_rate


def immediate_fault_response(kind: str, request: web.Request) -> web.StreamResponse:
    """The answer for a fault that replaces the request's handling (every kind but "timeout")."""
    if kind == "500":
        return error_response(500, "999", "internal server error (sandbox fault)")
    if kind == "429":
        return error_response(429, "429", "too many requests (sandbox fault)", headers={"Retry-After": "1"})
    if kind == "malformed":
        return web.Response(status=200, text=MALFORMED_BODY, content_type="application/json")
    if kind == "drop":
        if request.transport is not None:
            request.transport.close()
        # nothing reaches the client once the transport is closed
        return web.Response(status=204)
    raise ValueError(f"fault kind {kind} has no immediate response")
