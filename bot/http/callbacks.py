"""The service's task callbacks: a callback only makes that task's next status check due now.

The service signs nothing (see aiart-api.md, "Webhooks"): the path is the secret, and an optional
allowlist checks the sender's address: the peer's, or, when the peer is one of the trusted proxies
(TRUSTED_PROXIES), the address X-Forwarded-For names beyond them. A client that reaches the bot
directly is judged by its own address, whatever header it sends. Whatever the body says, the poll decides: a forged or
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


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def networks(entries: Collection[str]) -> list[Network]:
    """Addresses or networks ("10.0.0.0/8", "::1") as networks; ValueError names an entry that is neither."""
    return [ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip()]


def _address(text: str | None) -> Address | None:
    try:
        address = ipaddress.ip_address((text or "").strip())
    except ValueError:
        return None
    # an IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d; IPv4 networks must still match it
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return mapped or address


def sender_address(request: web.Request, *, proxies: Collection[Network] = ()) -> Address | None:
    """The address the callback came from: the peer's; when the peer is a trusted proxy, the rightmost
    X-Forwarded-For address that is not one of the trusted proxies (what the first of them saw)."""
    address = _address(request.remote)
    if address is None or not _within(address, proxies):
        return address  # a direct client: any X-Forwarded-For it sent is its own word
    forwarded = ",".join(request.headers.getall("X-Forwarded-For", []))
    for entry in reversed([entry for entry in forwarded.split(",") if entry.strip()]):
        address = _address(entry)
        if address is None or not _within(address, proxies):
            return address  # garbage in the chain is no address at all
    return address


def _within(address: Address, nets: Collection[Network]) -> bool:
    return any(address in network for network in nets)


def callback_handler(poll_now: PollNow, *, allowed_ips: Collection[str] = (), trusted_proxies: Collection[str] = (),
                     on_result: Callable[[str], None] | None = None) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler of AIART_WEBHOOK_PATH."""
    allowed = networks(allowed_ips)
    proxies = networks(trusted_proxies)

    def record(outcome: str) -> None:
        if on_result is not None:
            on_result(outcome)

    async def handle(request: web.Request) -> web.Response:
        if request.method != "POST":
            raise web.HTTPMethodNotAllowed(request.method, ["POST"])
        if allowed:
            address = sender_address(request, proxies=proxies)
            if address is None or not _within(address, allowed):
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
