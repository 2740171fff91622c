"""A Chrome DevTools Protocol client over one websocket (aiohttp): commands, answers and events per session."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import aiohttp

Listener = Callable[[dict[str, Any]], None]
COMMAND_TIMEOUT = 30.0


class CdpError(RuntimeError):
    """The browser refused a command, or the connection went away."""


class CdpConnection:
    """The browser's DevTools websocket; sessions (one per page) share it, as with `flatten: true`."""

    def __init__(self, session: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._http = session
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._listeners: dict[tuple[str | None, str], list[Listener]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str) -> CdpConnection:
        """Open the browser-level websocket at `url` (ws://127.0.0.1:<port>/devtools/browser/<id>)."""
        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(url, max_msg_size=0, autoping=True)
        except BaseException:
            await session.close()
            raise
        return cls(session, ws)

    async def send(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None,
                   timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        """Run a command (in a page's session when given) and return its result."""
        if self._reader.done():
            raise CdpError(f"{method}: the DevTools connection is closed")
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = answer
        try:
            await self._ws.send_str(json.dumps(message))
            reply = await asyncio.wait_for(answer, timeout)
        finally:
            self._pending.pop(message_id, None)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error'].get('message')} {reply['error'].get('data', '')}".strip())
        return reply.get("result", {})

    def on(self, method: str, listener: Listener, *, session_id: str | None = None) -> None:
        """Call `listener(params)` for every `method` event of a session (None: the browser's own)."""
        self._listeners.setdefault((session_id, method), []).append(listener)

    def off(self, method: str, listener: Listener, *, session_id: str | None = None) -> None:
        """Stop calling a listener."""
        listeners = self._listeners.get((session_id, method), [])
        if listener in listeners:
            listeners.remove(listener)

    async def close(self) -> None:
        """Close the websocket and fail what still waits for an answer."""
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._http.close()

    async def _read(self) -> None:
        try:
            async for frame in self._ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    continue
                message = json.loads(frame.data)
                if "id" in message:
                    waiter = self._pending.get(message["id"])
                    if waiter is not None and not waiter.done():
                        waiter.set_result(message)
                    continue
                key = (message.get("sessionId"), message.get("method", ""))
                for listener in list(self._listeners.get(key, [])):
                    listener(message.get("params", {}))
        finally:
            for waiter in self._pending.values():
                if not waiter.done():
                    waiter.set_exception(CdpError("the DevTools connection closed before answering"))
