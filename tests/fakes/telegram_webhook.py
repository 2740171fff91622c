"""setWebhook, deleteWebhook, getWebhookInfo, and delivery of updates by POST, as Telegram does them.

Modelled on the Bot API documentation:
- `url` must be HTTPS (an empty one removes the webhook). Telegram cannot reach a test's loopback
  server over HTTPS, so `allow_http_loopback` (off by default, switched on explicitly by a test or
  the harness) lets an http:// URL to 127.0.0.1, ::1 or localhost through; any other http URL is
  refused as Telegram refuses it.
- `secret_token`: 1-256 characters of A-Z, a-z, 0-9, _ and -; sent with every delivery in the
  X-Telegram-Bot-Api-Secret-Token header.
- `allowed_updates` replaces the kinds delivered (as getUpdates' parameter does); `max_connections`
  1-100 (default 40) bounds deliveries in flight; `drop_pending_updates` forgets the queue.
- While a webhook is set, getUpdates answers 409 Conflict.
- A delivery answered anything but 2xx (or not answered) stays queued and is retried after a pause
  that grows (Telegram retries for a while; the pause here is scaled down for tests); the error
  shows in getWebhookInfo's last_error_date / last_error_message.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tests.fakes.telegram_models import ApiError, bad_request
from tests.fakes.telegram_params import str_param
from tests.fakes.telegram_state import TelegramState

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_CONFLICT = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"


#: the ports Telegram delivers webhooks to (None: the scheme's own, 443)
WEBHOOK_PORTS = (None, 80, 88, 443, 8443)


@dataclass
class Delivery:
    """One POST of an update to the webhook, as the bot answered it."""

    update_id: int
    status: int  # 0: no answer (connection refused, dropped, timed out)
    time: float = field(default_factory=time.monotonic)


class WebhookDelivery:
    """The webhook's settings and the task that POSTs queued updates to it."""

    def __init__(self, state: TelegramState, *, retry_delay: float = 0.2, max_retry_delay: float = 2.0) -> None:
        self._state = state
        self.allow_http_loopback = False
        self.url = ""
        self.secret: str | None = None
        self.max_connections = 40
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.deliveries: list[Delivery] = []
        self.last_error: tuple[int, str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def active(self) -> bool:
        """Whether a webhook is set (getUpdates then answers 409)."""
        return bool(self.url)

    # --- methods ------------------------------------------------------------------------------

    async def set_webhook(self, params: dict[str, Any], files: Any) -> bool:
        """setWebhook."""
        url = str_param(params, "url")
        if url is None:
            raise bad_request("parameter \"url\" is required")
        secret = str_param(params, "secret_token")
        if secret is not None and not _SECRET.match(secret):
            raise bad_request("secret token contains unallowed characters")
        allowed = params.get("allowed_updates")
        if allowed is not None and (not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed)):
            raise bad_request("can't parse allowed_updates JSON object")
        max_connections = params.get("max_connections", 40)
        if not isinstance(max_connections, int) or not 1 <= max_connections <= 100:
            raise bad_request("invalid max_connections specified")
        if url:
            self._check_url(url)
        if params.get("drop_pending_updates"):
            self._state.updates.clear()
        if allowed is not None:
            self._state.allowed_updates = frozenset(allowed) or None
        self.url, self.secret, self.max_connections = url, secret, max_connections
        self.last_error = None
        if url and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._deliver())
        self._state.wake_pollers()  # a waiting getUpdates ends (with a conflict), and delivery starts
        return True

    async def delete_webhook(self, params: dict[str, Any], files: Any) -> bool:
        """deleteWebhook: no webhook from now on; drop_pending_updates clears the queue."""
        self.url, self.secret = "", None
        if params.get("drop_pending_updates"):
            self._state.updates.clear()
        self._state.wake_pollers()
        return True

    async def get_webhook_info(self, params: dict[str, Any], files: Any) -> dict[str, Any]:
        """getWebhookInfo."""
        info: dict[str, Any] = {"url": self.url, "has_custom_certificate": False,
                                "pending_update_count": len(self._state.updates)}
        if self.url:
            info["max_connections"] = self.max_connections
            if self._state.allowed_updates:
                info["allowed_updates"] = sorted(self._state.allowed_updates)
        if self.last_error is not None:
            info["last_error_date"], info["last_error_message"] = self.last_error
        return info

    def refuse_polling(self) -> None:
        """getUpdates while a webhook is set: 409, as Telegram answers."""
        if self.active:
            raise ApiError(409, _CONFLICT)

    def _check_url(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme == "https" and parts.hostname:
            if parts.port not in WEBHOOK_PORTS:
                raise bad_request("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")
            return
        if parts.scheme == "http" and self.allow_http_loopback and parts.hostname in _LOOPBACK:
            return
        raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")

    # --- delivery -----------------------------------------------------------------------------

    async def _deliver(self) -> None:
        failures = 0
        while self.url:
            batch = list(self._state.updates[:self.max_connections])
            if not batch:
                await self._state.next_update(1.0)
                continue
            url, secret = self.url, self.secret
            answers = await asyncio.gather(*(self._post(url, secret, update) for update in batch))
            delivered = {update["update_id"] for update, ok in zip(batch, answers, strict=True) if ok}
            self._state.updates = [u for u in self._state.updates if u["update_id"] not in delivered]
            if len(delivered) < len(batch):
                failures += 1
                await asyncio.sleep(min(self.max_retry_delay, self.retry_delay * 2 ** min(failures - 1, 6)))
            else:
                failures = 0

    async def _post(self, url: str, secret: str | None, update: dict[str, Any]) -> bool:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        headers = {SECRET_HEADER: secret} if secret else {}
        try:
            async with self._session.post(url, json=update, headers=headers) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            status, reason = 0, f"Connection failed: {type(error).__name__}"
        else:
            reason = f"Wrong response from the webhook: {status}"
        self.deliveries.append(Delivery(update["update_id"], status))
        if 200 <= status < 300:
            return True
        self.last_error = (int(time.time()), reason)
        return False

    async def close(self) -> None:
        """Stop delivering."""
        self.url = ""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
