"""The HTTP server's guards on real sockets: the webhook's secret as bytes, X-Forwarded-For only from trusted proxies,
and the settings behind them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pydantic import ValidationError

from bot.config import LOOPBACK, Settings
from bot.http.callbacks import callback_handler
from bot.http.webhook import SECRET_HEADER, webhook_handler

SECRET = "right-secret_0123456789"
ALLOWED = "54.212.95.175"


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[TestClient, list[dict[str, Any]]]]:
    accepted: list[dict[str, Any]] = []

    async def accept(update: dict[str, Any]) -> None:
        accepted.append(update)

    app = web.Application()
    app.router.add_route("*", "/hook", webhook_handler(SECRET, accept))
    async with TestClient(TestServer(app)) as client:
        yield client, accepted


async def raw_post(client: TestClient, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> int:
    """POST with header bytes exactly as given (an HTTP client library would refuse or re-encode some)."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    lines = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: " + f"{client.host}:{client.port}".encode(),
             b"Content-Type: application/json", b"Content-Length: " + str(len(body)).encode(), b"Connection: close"]
    lines += [name + b": " + value for name, value in headers]
    writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


@pytest.mark.parametrize("value", [b"\xff\xfe\xfd", b"caf\xe9", SECRET.encode() + b"\x80"])
async def test_a_secret_header_that_is_not_utf8_is_refused_not_an_error(webhook, value):
    client, accepted = webhook
    body = b'{"update_id": 1, "message": {}}'
    assert await raw_post(client, "/hook", [(SECRET_HEADER.encode(), value)], body) == 401
    assert accepted == []
    assert await raw_post(client, "/hook", [(SECRET_HEADER.encode(), SECRET.encode())], body) == 200
    assert [update["update_id"] for update in accepted] == [1]


async def callback_status(proxies: frozenset[str], forwarded: list[str]) -> int:
    async def poll_now(task_id: str) -> bool:
        return True

    app = web.Application()
    app.router.add_route("*", "/cb", callback_handler(poll_now, allowed_ips=[ALLOWED], trusted_proxies=proxies))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        headers = [("X-Forwarded-For", value) for value in forwarded]
        async with client.post("/cb", json={"taskId": "t"}, headers=headers) as response:
            return response.status


@pytest.mark.parametrize(("proxies", "forwarded", "status"), [
    # no trusted proxy: the header is the client's own word, and the client (loopback) is not allowed
    (frozenset(), [ALLOWED], 403),
    (frozenset({"10.0.0.0/8"}), [ALLOWED], 403),
    # the peer is a trusted proxy: the address it appended counts
    (frozenset({"127.0.0.1/32"}), [ALLOWED], 200),
    (frozenset({"127.0.0.1/32"}), ["203.0.113.9"], 403),
    # what the client wrote on the left is passed over: the proxy appended the real address on the right
    (frozenset({"127.0.0.1/32"}), [f"{ALLOWED}, 203.0.113.9"], 403),
    # a chain of trusted proxies: the first address that is not one of them
    (frozenset({"127.0.0.1/32", "10.0.0.0/8"}), [f"{ALLOWED}, 10.1.2.3"], 200),
    (frozenset({"127.0.0.1/32", "10.0.0.0/8"}), [f"{ALLOWED}", "10.1.2.3"], 200),  # the header twice
    (frozenset({"127.0.0.1/32"}), ["not-an-address"], 403),
    (frozenset({"127.0.0.1/32"}), [], 403),  # a trusted proxy that names no one: its own address
])
async def test_forwarded_addresses_are_believed_only_from_trusted_proxies(proxies, forwarded, status):
    assert await callback_status(proxies, forwarded) == status


def test_trusted_proxies_is_read_from_the_environment_at_start_up(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.5, 172.16.0.0/12; ::1")
    settings = Settings(_env_file=None)
    assert settings.trusted_proxies == frozenset({"10.0.0.5/32", "172.16.0.0/12", "::1/128"})
    assert settings.forwarding_proxies == settings.trusted_proxies
    monkeypatch.setenv("AIART_WEBHOOK_TRUST_FORWARDED", "true")  # the older switch changes nothing beside it
    assert Settings(_env_file=None).forwarding_proxies == settings.trusted_proxies


def test_the_older_switch_alone_trusts_a_proxy_on_this_host_only(monkeypatch):
    monkeypatch.delenv("TRUSTED_PROXIES", raising=False)
    assert Settings(_env_file=None).forwarding_proxies == frozenset()
    monkeypatch.setenv("AIART_WEBHOOK_TRUST_FORWARDED", "true")
    assert Settings(_env_file=None).forwarding_proxies == LOOPBACK


def test_a_trusted_proxy_that_is_no_address_stops_the_start_with_its_name(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.5, proxy.example")
    with pytest.raises(ValidationError, match="trusted_proxies"):
        Settings(_env_file=None)
