"""Downloading result images from the service's CDN, promptly and with a size cap."""

from __future__ import annotations

import httpx

from bot.images import sniff_mime
from bot.jobs.notifier import ResultFile

MAX_RESULT_BYTES = 50 * 1024 * 1024
_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


class ResultUnavailable(Exception):
    """A result could not be downloaded; `permanent` when trying again cannot help."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


class ResultFetcher:
    """Fetches result URLs with a shared client (no credentials are sent: they are public CDN links)."""

    def __init__(self, http: httpx.AsyncClient, *, max_bytes: int = MAX_RESULT_BYTES) -> None:
        self._http = http
        self._max_bytes = max_bytes

    async def fetch(self, url: str, *, name: str) -> ResultFile:
        """Download one result; `name` is the file name without suffix."""
        try:
            async with self._http.stream("GET", url) as response:
                if response.status_code in (404, 410, 403):
                    raise ResultUnavailable(f"result link answered {response.status_code}", permanent=True)
                if response.status_code != 200:
                    raise ResultUnavailable(f"result link answered {response.status_code}", permanent=False)
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self._max_bytes:
                        raise ResultUnavailable("result is larger than the bot handles", permanent=True)
                    chunks.append(chunk)
        except httpx.HTTPError as error:
            raise ResultUnavailable(f"result download failed: {type(error).__name__}", permanent=False) from error
        data = b"".join(chunks)
        mime = sniff_mime(data)
        if mime is None:
            raise ResultUnavailable("result is not an image", permanent=True)
        return ResultFile(data=data, file_name=f"{name}.{_SUFFIX.get(mime, 'bin')}", mime=mime)
