"""Inline mode in the fake Bot API: inline queries, answerInlineQuery, chosen results, inline messages.

As Telegram behaves: a query must be answered within INLINE_ANSWER_TIMEOUT_S, once; an answer holds at most
50 results with unique ids of 1-64 bytes and a next_offset of at most 64 bytes; a chosen result comes to
the bot only with inline feedback on (BotFather's /setinlinefeedback), with an inline_message_id only
when the result carried an inline keyboard. Inline messages are edited with inline_message_id (the
answer is `true`); editing one takes no upload (a file id or an HTTP URL Telegram fetches).
"""

from __future__ import annotations

import itertools
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.fakes.telegram_checks import check_reply_markup, inline_markup_for_edit, is_photo, message_text
from tests.fakes.telegram_models import ApiError, User, bad_request
from tests.fakes.telegram_state import TelegramState

MAX_RESULTS = 50
MAX_RESULT_ID_BYTES = 64
MAX_NEXT_OFFSET_BYTES = 64
#: Telegram drops an answer given later than about 10 s after the query
INLINE_ANSWER_TIMEOUT_S = 10.0
QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"
#: what Telegram answers an upload into an inline message (tdlib's refusal, tdlib/td issue 3157)
_UPLOAD_REFUSED = "Invalid message content specified"
_START_PARAMETER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_RESULT_TYPES = frozenset({
    "article", "audio", "contact", "document", "game", "gif", "location", "mpeg4_gif", "photo", "sticker",
    "venue", "video", "voice",
})


def check_inline_result(value: Any) -> dict[str, Any]:
    """An InlineQueryResult as the Bot API server parses it (answerInlineQuery, savePreparedInlineMessage), with
    its error texts (tdlib/telegram-bot-api, first letter lowered): a known type and an id of 1-64 bytes; an
    article needs title and input_message_content (or the legacy message_text); a photo photo_url or, cached,
    photo_file_id; a document title and document_url with mime_type or document_file_id; a video title and
    video_file_id or video_url with mime_type and thumbnail_url; an inline keyboard without web_app buttons (the
    message may land in any chat). The result, its type lowered."""
    if not isinstance(value, dict):
        raise bad_request("inline query result must be an object")
    kind, result_id = value.get("type"), value.get("id")
    if not isinstance(kind, str):
        raise bad_request('can\'t find field "type"')
    if not isinstance(result_id, str):
        raise bad_request('can\'t find field "id"')
    if not 1 <= len(result_id.encode()) <= MAX_RESULT_ID_BYTES:
        raise bad_request("RESULT_ID_INVALID")
    kind = kind.lower()
    if kind not in _RESULT_TYPES:
        raise bad_request(f'type "{kind}" is unsupported for the inline query result')
    content = value.get("input_message_content")
    if content is not None and not isinstance(content, dict):
        raise bad_request('field "input_message_content" must be of type Object')
    if kind == "article":
        if content is None and not isinstance(value.get("message_text"), str):
            raise bad_request('can\'t find field "message_text"')
        _required(value, "title")
    if kind == "photo" and not _given(value, "photo_url"):
        _required(value, "photo_file_id")
    if kind == "document":
        _required(value, "title")
        if not _given(value, "document_file_id"):
            _required(value, "document_url")
            _required(value, "mime_type")
    if kind == "video":
        _required(value, "title")
        if not _given(value, "video_file_id"):
            _required(value, "video_url")
            _required(value, "mime_type")
            _required(value, "thumbnail_url")
    check_reply_markup(value.get("reply_markup"), None)
    return {**value, "type": kind}


def _given(value: dict[str, Any], field: str) -> bool:
    return isinstance(value.get(field), str) and bool(value[field])


def _required(value: dict[str, Any], field: str) -> None:
    if not _given(value, field):
        raise bad_request(f'can\'t find field "{field}"')


def check_results_button(button: Any) -> None:
    """Raise Telegram's 400 for an InlineQueryResultsButton it would refuse (text, and a start_parameter of
    1-64 characters A-Z, a-z, 0-9, _ and -, or a web_app)."""
    if button is None:
        return
    if not isinstance(button, dict) or not isinstance(button.get("text"), str) or not button["text"]:
        raise bad_request("BUTTON_TEXT_INVALID")
    if ("start_parameter" in button) == ("web_app" in button):
        raise bad_request("BUTTON_TYPE_INVALID")
    parameter = button.get("start_parameter")
    if parameter is not None and not _START_PARAMETER.fullmatch(str(parameter)):
        raise bad_request("START_PARAM_INVALID")


@dataclass
class InlineQuery:
    """A query a user typed, and the answer the bot gave it."""

    query_id: str
    user: User
    query: str
    offset: str
    at: float
    answer: dict[str, Any] | None = None
    #: when the answer came (the fake's clock), for the benchmark's answer times
    answered_at: float | None = None


@dataclass
class InlineMessage:
    """What an inline message shows now: text or a photo with a caption, and its keyboard."""

    inline_message_id: str
    text: str | None = None
    photo: bytes | None = None
    photo_file_id: str | None = None
    caption: str | None = None
    reply_markup: dict[str, Any] | None = None
    edits: list[str] = field(default_factory=list)


class InlineMode:
    """The inline side of the fake: users type and choose; the bot answers and edits."""

    def __init__(self, state: TelegramState, clock: Callable[[], float] = time.monotonic) -> None:
        self._state = state
        self._clock = clock
        #: BotFather's /setinline: off (a new bot's default), nobody can type `@bot …` and getMe says so
        self.enabled = False
        #: BotFather's /setinlinefeedback: off, the bot never hears of chosen results
        self.feedback = True
        self.queries: dict[str, InlineQuery] = {}
        self.messages: dict[str, InlineMessage] = {}
        self._ids = itertools.count(1)

    # --- users acting -----------------------------------------------------------------------------

    def user_types(self, user: User, query: str, *, offset: str = "") -> str:
        """A user types `@bot query` (or scrolls to `offset`): queues an inline_query, returns its id."""
        if not self.enabled:
            raise ValueError("inline mode is off for this bot (BotFather's /setinline): nobody can type @bot")
        self._state.users[user.id] = user
        query_id = str(secrets.randbits(63))
        self.queries[query_id] = InlineQuery(query_id, user, query, offset, self._clock())
        self._state.push_update("inline_query", {"id": query_id, "from": user.to_dict(), "query": query,
                                                 "offset": offset, "chat_type": "sender"})
        return query_id

    def user_chooses(self, query_id: str, result_id: str) -> InlineMessage | None:
        """The user picks an answered result: the message is sent; the bot hears of it with feedback on."""
        query = self.queries[query_id]
        if query.answer is None:
            raise ValueError(f"query {query_id} has no answer to choose from")
        result = next((r for r in query.answer["results"] if r["id"] == result_id), None)
        if result is None:
            raise ValueError(f"query {query_id} has no result {result_id!r}")
        message = self._sent_from(result)
        chosen: dict[str, Any] = {"result_id": result_id, "from": query.user.to_dict(), "query": query.query}
        if message is not None:
            chosen["inline_message_id"] = message.inline_message_id
        if self.feedback:
            self._state.push_update("chosen_inline_result", chosen)
        return message

    def _sent_from(self, result: dict[str, Any]) -> InlineMessage | None:
        """The message a chosen result becomes; only one with a keyboard can be named later (and is kept)."""
        markup = result.get("reply_markup")
        if not markup:
            return None
        inline_id = f"AgAAA{next(self._ids):08d}{secrets.token_hex(8)}"
        message = InlineMessage(inline_id, reply_markup=markup)
        content = result.get("input_message_content")
        if content is not None:
            message.text = content["message_text"]
        elif result.get("photo_file_id"):
            message.photo_file_id = result["photo_file_id"]
            message.caption = result.get("caption")
        self.messages[inline_id] = message
        return message

    # --- methods ----------------------------------------------------------------------------------

    async def answer_inline_query(self, params: dict[str, Any], files: Any) -> bool:
        """answerInlineQuery: once per query, in time, with valid results."""
        query = self.queries.get(str(params.get("inline_query_id")))
        if query is None or query.answer is not None or self._clock() - query.at > INLINE_ANSWER_TIMEOUT_S:
            raise bad_request(QUERY_INVALID)
        results = params.get("results")
        if not isinstance(results, list):
            raise bad_request("can't parse inline query results JSON object")
        if len(results) > MAX_RESULTS:
            raise bad_request("RESULTS_TOO_MUCH")
        results = [check_inline_result(result) for result in results]
        ids = [result["id"] for result in results]
        if len(set(ids)) != len(ids):
            raise bad_request("RESULT_ID_DUPLICATE")
        check_results_button(params.get("button"))
        next_offset = params.get("next_offset") or ""
        if len(str(next_offset).encode("utf-8")) > MAX_NEXT_OFFSET_BYTES:
            raise bad_request("NEXT_OFFSET_INVALID")
        for result in results:
            if result["type"] == "photo" and result.get("photo_file_id") and result["photo_file_id"] not in self._state.files:
                raise bad_request("wrong file identifier/HTTP URL specified")
        query.answer = {"results": results, "next_offset": str(next_offset), "button": params.get("button"),
                        "is_personal": bool(params.get("is_personal")), "cache_time": params.get("cache_time")}
        query.answered_at = self._clock()
        return True

    def _message(self, params: dict[str, Any]) -> InlineMessage:
        message = self.messages.get(str(params.get("inline_message_id")))
        if message is None:
            raise bad_request("MESSAGE_ID_INVALID")
        return message

    async def edit_text(self, params: dict[str, Any]) -> bool:
        """editMessageText with inline_message_id (a text message only)."""
        message = self._message(params)
        if message.text is None:
            raise bad_request("there is no text in the message to edit")
        text, _ = message_text(params, too_long="MESSAGE_TOO_LONG")
        markup = inline_markup_for_edit(params.get("reply_markup"), None)
        if (text, markup) == (message.text, message.reply_markup):
            raise bad_request("message is not modified: specified new message content and reply markup are "
                              "exactly the same as a current content and reply markup of the message")
        message.text, message.reply_markup = text, markup
        message.edits.append("text")
        return True

    async def edit_media(self, params: dict[str, Any]) -> bool:
        """editMessageMedia with inline_message_id: a file id or a URL, never an upload; text gains the media."""
        message = self._message(params)
        media = params.get("media")
        if not isinstance(media, dict) or media.get("type") != "photo":
            raise bad_request("can't parse InputMedia JSON object" if not isinstance(media, dict)
                              else "media types other than photo are not modelled by the fake")
        value = media.get("media")
        if not isinstance(value, str) or not value:
            raise bad_request("there is no media in the request")
        if value.startswith("attach://"):
            raise bad_request(_UPLOAD_REFUSED)
        if value.startswith(("http://", "https://")):
            data = await _fetch(value)
            file_id = self._state.store_photo(data)[-1]["file_id"]
        else:
            stored = self._state.files.get(value)
            if stored is None or stored.kind != "photo":
                raise bad_request("wrong file identifier/HTTP URL specified")
            data, file_id = stored.data, value
        message.photo, message.photo_file_id = data, file_id
        message.caption = media.get("caption")
        message.text = None  # a text message that gains media shows its caption instead
        message.reply_markup = inline_markup_for_edit(params.get("reply_markup"), None)
        message.edits.append("media")
        return True


async def _fetch(url: str) -> bytes:
    """Telegram downloads a media URL itself; a failure is its 400."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            if response.status != 200:
                raise bad_request("failed to get HTTP URL content")
            data = await response.read()
    except aiohttp.ClientError as error:
        raise bad_request("failed to get HTTP URL content") from error
    if not is_photo(data):
        raise bad_request("wrong type of the web page content")
    return data


def route_edits(edit_text: Callable[..., Any], inline: InlineMode) -> Callable[..., Any]:
    """editMessageText: by inline_message_id to the inline side, else to the chat messages' edit."""
    async def edit(params: dict[str, Any], files: Any) -> Any:
        if params.get("inline_message_id") is not None:
            return await inline.edit_text(params)
        return await edit_text(params, files)
    return edit


async def edit_message_media(inline: InlineMode, params: dict[str, Any]) -> bool:
    """editMessageMedia: only inline messages are modelled (chat results are sent, never edited)."""
    if params.get("inline_message_id") is None:
        raise ApiError(400, "Bad Request: editing chat messages' media is not modelled by the fake")
    return await inline.edit_media(params)
