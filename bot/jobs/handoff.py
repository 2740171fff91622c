"""Getting a user's image to the service without ever giving it a Telegram file URL (it carries the bot token).

Three ways, chosen by IMAGE_HANDOFF:

    auto        BASE64 where the operation accepts it; else the service's upload endpoint; if the
                service refuses the upload, the bot's own signed link (when PUBLIC_URL is set)
    upload      always the service's upload endpoint (no BASE64), falling back like auto
    signed_url  always the bot's own signed link (for a service without an upload endpoint)
"""

from __future__ import annotations

import logging
from typing import Literal, Protocol

from bot.aiart import AiartClient, Request
from bot.aiart.errors import APIError, Unauthorized
from bot.images import PreparedImage

log = logging.getLogger(__name__)

HandoffMode = Literal["auto", "upload", "signed_url"]


class MediaLinks(Protocol):
    """The bot's own short-lived signed URLs (available when PUBLIC_URL is set)."""

    def link(self, data: bytes, mime: str) -> str:
        """A URL that serves `data` for a short time."""


class ImageHandoff:
    """Turns a prepared image into what the service accepts: BASE64, an uploaded URL, or a signed link."""

    def __init__(self, client: AiartClient, media: MediaLinks | None = None, *, mode: HandoffMode = "auto") -> None:
        if mode == "signed_url" and media is None:
            raise ValueError("signed_url hand-off needs media links (set PUBLIC_URL)")
        self._client = client
        self._media = media
        self._mode = mode

    async def reference(self, image: PreparedImage, request_type: type[Request]) -> str:
        """The image as the configured mode hands it over to an operation (see the module docstring)."""
        if self._mode == "signed_url" and self._media is not None:  # __init__ made sure it is set
            return self._media.link(image.data, image.mime)
        if request_type.accepts_base64 and self._mode == "auto":
            return image.base64()
        try:
            return await self._client.upload(image.data, suffix=image.suffix, upload_type=request_type.upload_type,
                                             content_type=image.mime)
        except Unauthorized:
            raise
        except APIError as error:
            if self._media is None:
                raise
            # the upload endpoint is undocumented for the live service; our own link is the fallback
            log.warning("service upload refused (HTTP %s); handing over a signed link instead", error.status_code)
            return self._media.link(image.data, image.mime)
