"""Telegram's webhook: a request is taken only with the right secret header, and answered 200 only once stored.

Telegram sends the secret given to setWebhook in `X-Telegram-Bot-Api-Secret-Token`. A request
without it, or with another, is refused (401) before its body is read, so nothing of it is stored.
An update is answered 200 once `accept` has recorded it durably (the inbox); when recording fails
the answer is 503 and Telegram sends the update again later.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.http.bodies import json_object

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: Telegram's limit on a webhook body is not published; real updates are a few kilobytes
MAX_UPDATE_BYTES = 1024 * 1024

AcceptUpdate = Callable[[dict[str, Any]], Awaitable[None]]


def derive_webhook_secret(bot_token: str) -> str:
    """A webhook secret every replica derives alike from the bot token (HMAC-SHA256, 43 characters of A-Z a-z 0-9 _ -)."""
    digest = hmac.new(bot_token.encode(), b"aiart-bot telegram webhook secret v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _secret_given(request: web.Request) -> bytes:
    """The secret header's bytes as sent (any bytes at all: a header need not be UTF-8, nor even text)."""
    name = SECRET_HEADER.lower().encode()
    return next((value for key, value in request.raw_headers if key.lower() == name), b"")


def webhook_handler(secret: str, accept: AcceptUpdate) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler of the webhook path."""
    expected = secret.encode()

    async def handle(request: web.Request) -> web.Response:
        if request.method != "POST":
            raise web.HTTPMethodNotAllowed(request.method, ["POST"])
        if not hmac.compare_digest(_secret_given(request), expected):
            # nothing about the request is logged: a probe learns nothing, and the header is a secret
            log.warning("refused a webhook request without the right secret token")
            return web.Response(status=401)
        update = await json_object(request, MAX_UPDATE_BYTES)
        update_id = update.get("update_id") if update is not None else None
        # an id the database can hold (a BIGINT), as Telegram's are: any other would fail its insert with a traceback
        if not isinstance(update_id, int) or isinstance(update_id, bool) or not 0 <= update_id < 2**63:
            return web.Response(status=400)
        try:
            await accept(update)
        except Exception:
            log.exception("could not record update %s; Telegram will send it again", update.get("update_id"))
            return web.Response(status=503)
        return web.Response(status=200)

    return handle
