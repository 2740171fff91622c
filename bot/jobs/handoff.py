"""Getting a user's image to the service without ever giving it a Telegram file URL."""

from __future__ import annotations

import logging
from typing import Protocol

from bot.aiart import AiartClient
from bot.aiart.errors import APIError, Unauthorized
from bot.images import PreparedImage

log = logging.getLogger(__name__)


class MediaLinks(Protocol):
    """The bot's own short-lived signed URLs (available when PUBLIC_URL is set)."""

    def link(self, data: bytes, mime: str) -> str:
        """A URL that serves `data` for a short time."""


class ImageHandoff:
    """Turns a prepared image into what the service accepts: BASE64, an uploaded URL, or a signed link."""

    def __init__(self, client: AiartClient, media: MediaLinks | None = None) -> None:
        self._client = client
        self._media = media

    async def reference(self, image: PreparedImage, *, accepts_base64: bool) -> str:
        """BASE64 where the operation accepts it; else the service's upload; else our signed link."""
        if accepts_base64:
            return image.base64()
        try:
            return await self._client.upload(image.data, suffix=image.suffix)
        except Unauthorized:
            raise
        except APIError as error:
            if self._media is None:
                raise
            # the upload endpoint is undocumented for the live service; our own link is the fallback
            log.warning("service upload refused (%s); handing over a signed link instead", error.status_code)
            return self._media.link(image.data, image.mime)
