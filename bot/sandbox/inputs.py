"""Turning an input image field (an http(s) URL, BASE64 data or a data: URI) into bytes."""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections.abc import Callable

import httpx

from bot.sandbox.operations import InputError

FETCH_TIMEOUT_S = 20.0
#: BASE64 strings longer than this are decoded in a worker thread, to keep the event loop free
INLINE_DECODE_LIMIT = 256 * 1024
_WHITESPACE = re.compile(r"\s+")


def decode_base64(value: str, max_bytes: int) -> bytes:
    """Bytes of BASE64 image data, optionally wrapped as a data: URI."""
    if value.startswith("data:"):
        header, _, value = value.partition(",")
        if ";base64" not in header:
            raise InputError("image data URI is not BASE64-encoded")
    compact = _WHITESPACE.sub("", value)
    # a cheap size check before decoding: 4 characters carry 3 bytes
    if len(compact) // 4 * 3 > max_bytes + 3:
        raise InputError(f"image is larger than {max_bytes} bytes")
    compact += "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(compact)
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise InputError("image is neither an http(s) URL nor valid BASE64 data") from None


class ImageLoader:
    """Loads input images; URLs the sandbox itself serves are read without a network round trip."""

    def __init__(self, max_bytes: int, local_file: Callable[[str], bytes | None]) -> None:
        self._max_bytes = max_bytes
        self._local_file = local_file
        # made on first use: most sandboxes only ever see BASE64 or their own uploads
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        """Close the HTTP client, if one was made."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def load(self, reference: str) -> bytes:
        """The bytes an image field refers to; raises InputError with a reason fit for the task."""
        if reference.lower().startswith(("http://", "https://")):
            local = self._local_file(reference)
            data = local if local is not None else await self._fetch(reference)
        elif len(reference) > INLINE_DECODE_LIMIT:
            data = await asyncio.to_thread(decode_base64, reference, self._max_bytes)
        else:
            data = decode_base64(reference, self._max_bytes)
        if len(data) > self._max_bytes:
            raise InputError(f"image is larger than {self._max_bytes} bytes")
        return data

    async def _fetch(self, url: str) -> bytes:
        # the reason never repeats the URL: it may carry someone's credentials
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=True, trust_env=False)
        try:
            async with self._client.stream("GET", url) as response:
                if response.status_code >= 400:
                    raise InputError(f"could not fetch the image: HTTP {response.status_code}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self._max_bytes:
                    raise InputError(f"image is larger than {self._max_bytes} bytes")
                chunks: list[bytes] = []
                received = 0
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    if received > self._max_bytes:
                        raise InputError(f"image is larger than {self._max_bytes} bytes")
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.TimeoutException:
            raise InputError("could not fetch the image: timed out") from None
        except (httpx.HTTPError, ValueError) as error:
            raise InputError(f"could not fetch the image: {type(error).__name__}") from None
