"""python-telegram-bot's networking on aiohttp: the Bot API calls without httpx's per-request work.

PTB lets an application bring its own BaseRequest. HTTPXRequest builds an httpx request (URL parsing,
cookie handling, header models) around every call; for the small JSON calls a job makes (a reaction,
getFile, the download, sendPhoto) that was about half of each call's CPU time. This one hands PTB's
parameters straight to aiohttp's client, which the bot already uses for its HTTP transport.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import aiohttp
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData
from yarl import URL

from bot.metrics import Metrics
from bot.tg.answers import AnsweredQueries
from bot.transport import client_session, client_timeout, describe

#: any URL left in an error's text after the request's own was taken out
_ANY_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
#: what stands for the Bot API URL in an error's text
URL_PLACEHOLDER = "<Bot API URL>"

#: the last segment of an answerCallbackQuery call's URL
_ANSWER_PATH = "/answerCallbackQuery"
#: a Bot API method's name as it stands in a call's URL
_METHOD = re.compile(r"/bot[^/]+/([A-Za-z]{1,64})$")
#: the label of a file download (its URL ends with the file's path, which must never become a label)
DOWNLOAD_LABEL = "file_download"
#: the label of a URL that is neither a method call nor a download
OTHER_LABEL = "other"

#: a timeout the caller left out (BaseRequest.DEFAULT_NONE) or gave
Timeout = float | None | object


def _chosen(value: Timeout, default: float | None) -> float | None:
    """A timeout the caller gave, or this request's default when it gave none."""
    return default if value is BaseRequest.DEFAULT_NONE else value  # type: ignore[return-value]


def _body(fields: dict[str, str], files: dict) -> tuple[bytes | aiohttp.FormData, dict[str, str]]:
    """The call's parameters encoded as HTTPXRequest sends them: a form, multipart when files go with it."""
    if not files:
        # encoded here: handing aiohttp a dict builds a FormData and a MultipartWriter for every call
        return urlencode(fields).encode("ascii"), {"Content-Type": "application/x-www-form-urlencoded"}
    form = aiohttp.FormData(quote_fields=False)
    for name, value in fields.items():
        form.add_field(name, value)
    for name, (file_name, content, mime_type) in files.items():
        form.add_field(name, content, filename=file_name, content_type=mime_type)
    return form, {}


def method_label(url: str) -> str:
    """The metric label of a Bot API URL: the method's name, or one of two fixed labels."""
    path = URL(url).path
    if "/file/bot" in path:
        return DOWNLOAD_LABEL
    found = _METHOD.search(path)
    return found.group(1) if found else OTHER_LABEL


def error_text(error: BaseException, url: str) -> str:
    """What aiohttp raised, with no URL in it: a Bot API URL holds the bot token, and aiohttp's
    connect timeout ("Connection timeout to host <url>") and response errors name it."""
    text = describe(error)
    try:
        parsed = URL(url)
        forms = {url, str(parsed), parsed.raw_path, parsed.path}
    except ValueError:
        forms = {url}
    for form in sorted((form for form in forms if len(form) > 1), key=len, reverse=True):
        text = text.replace(form, URL_PLACEHOLDER)
    return _ANY_URL.sub(URL_PLACEHOLDER, text)


class AiohttpRequest(BaseRequest):
    """A BaseRequest over one aiohttp ClientSession, opened by initialize() and closed by shutdown()."""

    def __init__(self, *, connections: int, read_timeout: float | None = 5.0,
                 media_write_timeout: float | None = 20.0, connect_timeout: float | None = 5.0,
                 pool_timeout: float | None = 1.0) -> None:
        self._connections = connections
        self._read_timeout = read_timeout
        self._media_write_timeout = media_write_timeout
        self._connect_timeout = connect_timeout
        self._pool_timeout = pool_timeout
        self._session: aiohttp.ClientSession | None = None
        #: counts calls and 429s by Bot API method when set (bot.metrics.Metrics)
        self.metrics: Metrics | None = None
        #: notes the callback queries an answer was sent for, when set (bot.tg.answers)
        self.answered: AnsweredQueries | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read_timeout

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            self._session = client_session(self._connections)

    async def shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def do_request(self, url: str, method: str, request_data: RequestData | None = None,
                         read_timeout: Timeout = BaseRequest.DEFAULT_NONE,
                         write_timeout: Timeout = BaseRequest.DEFAULT_NONE,
                         connect_timeout: Timeout = BaseRequest.DEFAULT_NONE,
                         pool_timeout: Timeout = BaseRequest.DEFAULT_NONE) -> tuple[int, bytes]:
        if self._session is None or self._session.closed:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        files = request_data.multipart_data if request_data else {}
        read = _chosen(read_timeout, self._read_timeout)
        connect = _chosen(connect_timeout, self._connect_timeout)
        pool = _chosen(pool_timeout, self._pool_timeout)
        if files and read is not None:
            # aiohttp has no write timeout and its read timeout already runs while an upload goes out
            write = _chosen(write_timeout, self._media_write_timeout)
            read = None if write is None else read + write
        timeout = client_timeout(connect=connect, read=read, pool=pool)
        data, headers = (None, {}) if request_data is None else _body(request_data.json_parameters, files)
        try:
            async with self._session.request(method, url, data=data, timeout=timeout, allow_redirects=False,
                                             headers={"User-Agent": self.USER_AGENT, **headers}) as response:
                if self.metrics is not None:
                    self._count(url, response.status)
                if (self.answered is not None and request_data is not None and url.endswith(_ANSWER_PATH)
                        and response.status in (200, 400)):
                    # taken, or refused as too old or answered: never send another (a 429 or 5xx may be retried)
                    self.answered.add(str(request_data.json_parameters.get("callback_query_id")))
                return response.status, await response.read()
        # "from None": aiohttp's own error, whose text may hold the URL, must not ride along as the
        # cause that a logged traceback prints
        except TimeoutError as error:  # aiohttp's timeouts are TimeoutErrors too
            raise TimedOut(f"aiohttp.{error_text(error, url)}") from None
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{error_text(error, url)}") from None

    def _count(self, url: str, status: int) -> None:
        """Count a call by its method; never by anything else in the URL (a token, a file's path)."""
        assert self.metrics is not None
        name = method_label(url)
        self.metrics.telegram_calls.labels(name).inc()
        if status == 429:
            self.metrics.telegram_429.labels(name).inc()
