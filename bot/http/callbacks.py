"""The service's task callbacks: a callback only makes that task's next status check due now.

The service signs nothing (see aiart-api.md, "Webhooks"): the path is the secret, and an optional
allowlist checks the sender's address (the peer's, or with `trust_forwarded` the first address of
X-Forwarded-For that a proxy in front added). Whatever the body says, the poll decides: a forged or
repeated callback costs one early status check, a lost one costs the time until the next scheduled
check. Every callback is answered 200 (an unknown task too, so a prober learns nothing), except one
from outside the allowlist (403) or one that is not JSON with a taskId (400).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, Collection

from aiohttp import web

from bot.http.bodies import json_object

log = logging.getLogger(__name__)

MAX_CALLBACK_BYTES = 64 * 1024

#: takes a task id; True when it made a running job's check due now
PollNow = Callable[[str], Awaitable[bool]]


def _networks(allowed: Collection[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(entry.strip(), strict=False) for entry in allowed if entry.strip()]


def sender_address(request: web.Request, *, trust_forwarded: bool) -> str | None:
    """The address the callback came from: the peer's, or the client a trusted proxy names in X-Forwarded-For."""
    if trust_forwarded:
        forwarded = request.headers.get("X-Forwarded-For", "")
        # the rightmost entry is the one the proxy in front of the bot appended; earlier ones are the client's word
        entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
        if entries:
            return entries[-1]
    return request.remote


def callback_handler(poll_now: PollNow, *, allowed_ips: Collection[str] = (), trust_forwarded: bool = False,
                     on_result: Callable[[str], None] | None = None) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler of AIART_WEBHOOK_PATH."""
    networks = _networks(allowed_ips)

    def record(outcome: str) -> None:
        if on_result is not None:
            on_result(outcome)

    async def handle(request: web.Request) -> web.Response:
        if request.method != "POST":
            raise web.HTTPMethodNotAllowed(request.method, ["POST"])
        if networks:
            address = sender_address(request, trust_forwarded=trust_forwarded)
            try:
                ip = ipaddress.ip_address(address or "")
            except ValueError:
                ip = None
            if ip is None or not any(ip in network for network in networks):
                record("refused")
                return web.Response(status=403)
        body = await json_object(request, MAX_CALLBACK_BYTES)
        task_id = body.get("taskId") if body is not None else None
        if not isinstance(task_id, str) or not task_id or len(task_id) > 255:
            record("malformed")
            return web.Response(status=400)
        try:
            moved = await poll_now(task_id)
        except Exception:  # the scheduled poll still comes: a callback is only a shortcut
            log.warning("could not bring the check of task %s forward", task_id, exc_info=True)
            moved = False
        record("poll_now" if moved else "ignored")
        return web.json_response({"code": "000"})

    return handle
