"""A fake Telegram Bot API server on loopback, strict enough to reject what Telegram rejects.

Point a real client at it::

    async with FakeTelegram() as fake:
        bot = telegram.Bot(fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")
        fake.user_sends(private_chat(alice), alice, text="/start")
        ...
        await fake.wait_for(lambda: fake.sent(alice.id))

Tests act as users (`user_sends`, `user_presses`, ...), which queues updates for getUpdates, and
inspect what the bot did through `calls`, `sent(chat_id)`, `downloads` and `stats`. Optional
Telegram flood limits (`rate_limits=True`) and seeded random faults (`TgFaults`) model the
failures a bot must survive. Modules: models, checks (validation), params (request decoding), limits
(flood and faults), state (the world), sending and methods (the API).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fakes.telegram_checks import is_photo
from tests.fakes.telegram_guest import GuestMode
from tests.fakes.telegram_inline import InlineMode, edit_message_media, route_edits
from tests.fakes.telegram_limits import FILE_DOWNLOAD, FLOOD_METHODS, FaultPlan, LimitHit, RateLimiter
from tests.fakes.telegram_members import ChatMembers
from tests.fakes.telegram_menu import MenuButtons
from tests.fakes.telegram_methods import BotApi
from tests.fakes.telegram_models import (
    MAX_DOCUMENT_UPLOAD_BYTES,
    ApiCall,
    ApiError,
    Chat,
    FileDownload,
    SentMessage,
    StoredMessage,
    TgFaults,
    User,
    channel,
    group,
    private_chat,
    too_many_requests,
)
from tests.fakes.telegram_params import decode_request
from tests.fakes.telegram_payments import Payments
from tests.fakes.telegram_prepared import PreparedMessages
from tests.fakes.telegram_privacy import my_chat_member, seen_by_bot
from tests.fakes.telegram_profile import BotProfile
from tests.fakes.telegram_sending import MessageSender
from tests.fakes.telegram_state import TelegramState
from tests.fakes.telegram_video import VideoSender
from tests.fakes.telegram_webhook import WebhookDelivery

__all__ = [
    "ApiCall", "Chat", "FakeTelegram", "FileDownload", "SentMessage", "TgFaults", "User",
    "channel", "group", "private_chat",
]

logger = logging.getLogger(__name__)

DEFAULT_TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"
_MAX_REQUEST_BYTES = MAX_DOCUMENT_UPLOAD_BYTES + 4 * 1024 * 1024  # multipart overhead on top
_DUMP_CALLS = 30


class FakeTelegram:
    """The fake Bot API server: HTTP on loopback, users acting from the test, records of the bot."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        bot_username: str = "aiart_test_bot",
        rate_limits: bool = False,
        faults: TgFaults | None = None,
        clock: Callable[[], float] = time.monotonic,
        privacy_mode: bool = False,
    ) -> None:
        bot_id_text = token.split(":", 1)[0]
        self._token = token
        self.bot_user = User(id=int(bot_id_text) if bot_id_text.isdigit() else 123456,
                             first_name="AI Art Test", username=bot_username, is_bot=True)
        self.rate_limits = rate_limits
        #: the bot's privacy mode (BotFather's /setprivacy; on for bots by default, off here so tests see
        #: every group message unless they turn it on): in groups only what Telegram delivers reaches the bot
        self.privacy_mode = privacy_mode
        self._clock = clock
        self._state = TelegramState(self.bot_user)
        self._api = BotApi(self._state, bot_username)
        self._limiter = RateLimiter(clock)
        self._fault_plan: FaultPlan | None = None
        self.faults = faults
        self.calls: list[ApiCall] = []
        #: seconds a method's answer spends on the way back, after Telegram applied it (people see its effect
        #: first: a guest answer's buttons can be pressed before the bot has read the answer)
        self.answer_latency: dict[str, float] = {}
        self.downloads: list[FileDownload] = []
        self.stats: dict[str, int] = {
            "429": 0, "409": 0, "faults": 0, "fault_500": 0, "fault_429": 0,
            "fault_timeout": 0, "fault_drop": 0, "internal_errors": 0,
        }
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._stopping = asyncio.Event()
        #: setWebhook and its deliveries (tests/fakes/telegram_webhook.py)
        self.webhook = WebhookDelivery(self._state)
        polling = self._api.get_updates

        async def get_updates(params: dict[str, Any], files: Any) -> Any:
            self.webhook.refuse_polling()
            return await polling(params, files)

        self._api.register("getUpdates", get_updates)
        self._api.register("setWebhook", self.webhook.set_webhook)
        self._api.register("deleteWebhook", self.webhook.delete_webhook)
        self._api.register("getWebhookInfo", self.webhook.get_webhook_info)
        #: inline mode (tests/fakes/telegram_inline.py): users type and choose, the bot answers and edits
        self.inline = InlineMode(self._state, clock)
        self._api.inline = self.inline
        self._api.register("answerInlineQuery", self.inline.answer_inline_query)
        self._api.register("editMessageText", route_edits(self._api.edit_message_text, self.inline))
        self._api.register("editMessageMedia", lambda params, files: edit_message_media(self.inline, params))
        #: guest mode (tests/fakes/telegram_guest.py): people summon the bot in chats it is not in; it answers once
        self.guest = GuestMode(self._state, self.inline, privacy_mode=lambda: self.privacy_mode, clock=clock)
        self._api.guest = self.guest
        self._api.register("answerGuestQuery", self.guest.answer_guest_query)
        #: videos (tests/fakes/telegram_video.py)
        videos = VideoSender(self._state, MessageSender(self._state))
        self._api.register("sendVideo", videos.send_video)
        self._api.register("sendLivePhoto", videos.send_live_photo)

    def __repr__(self) -> str:
        return f"<FakeTelegram url={self._url} bot=@{self.bot_user.username} calls={len(self.calls)}>"

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host:port (0 = any free port); returns the URL root."""
        app = web.Application(client_max_size=_MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # No access log: request paths carry the bot token.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        self._url = f"http://{host}:{self._runner.addresses[0][1]}"
        return self._url

    async def stop(self) -> None:
        """Answer pending long polls, abandon stalled requests, and close the server."""
        self._state.stopping = True
        self._stopping.set()
        self._state.wake_pollers()
        await self.webhook.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """URL root: the bot calls {url}/bot<token>/<method>, files live at {url}/file/bot<token>/<path>."""
        if self._url is None:
            raise RuntimeError("FakeTelegram is not started")
        return self._url

    @property
    def token(self) -> str:
        """The token the fake accepts (a test value, never a real secret)."""
        return self._token

    @property
    def limit_hits(self) -> list[LimitHit]:
        """Each 429 the flood limits gave: which limit, in which chat, after which calls."""
        return self._limiter.hits

    @property
    def faults(self) -> TgFaults | None:
        """Current fault settings; assign to switch faults on or off mid-test."""
        return self._fault_plan.faults if self._fault_plan else None

    @faults.setter
    def faults(self, faults: TgFaults | None) -> None:
        self._fault_plan = FaultPlan(faults) if faults is not None else None

    # --- acting as users -------------------------------------------------------------------------

    def user_sends(
        self, chat: Chat, user: User, *, text: str | None = None, caption: str | None = None,
        photo: bytes | None = None, document: tuple[bytes, str, str] | None = None,
        reply_to: int | None = None, media_group_id: str | None = None,
        entities_for_commands: bool = True,
    ) -> dict[str, Any]:
        """A user writes in a chat: queues a "message" update and returns the Message."""
        if chat.type == "channel":
            raise ValueError("users do not write in channels; use channel_posts")
        message = self._state.user_message(
            chat, user, text=text, caption=caption, photo=photo, document=document,
            reply_to=reply_to, media_group_id=media_group_id,
            entities_for_commands=entities_for_commands,
        )
        return self._publish("message", message)

    def user_edits(self, chat: Chat, user: User | None, message_id: int, *, text: str | None = None,
                   caption: str | None = None) -> dict[str, Any]:
        """A user (None: the channel) edits a message: queues "edited_message" / "edited_channel_post"."""
        message = self._state.user_edit(chat, user, message_id, text=text, caption=caption)
        kind = "edited_channel_post" if chat.type == "channel" else "edited_message"
        return self._publish(kind, message)

    def user_presses(self, chat: Chat, user: User, message_id: int, data: str) -> str:
        """A user presses an inline button of a bot message: queues a callback query, returns its id."""
        return self._state.user_press(chat, user, message_id, data)

    def channel_posts(self, chat: Chat, *, text: str | None = None,
                      photo: bytes | None = None) -> dict[str, Any]:
        """A post appears in a channel: queues a "channel_post" update."""
        if chat.type != "channel":
            raise ValueError("channel_posts needs a channel chat")
        message = self._state.user_message(
            chat, None, text=text, caption=None, photo=photo, document=None, reply_to=None,
            media_group_id=None, entities_for_commands=True,
        )
        return self._publish("channel_post", message)

    def add_file(self, data: bytes) -> str:
        """Store bytes as if someone uploaded them; returns a file_id (images become photos)."""
        if is_photo(data):
            return self._state.store_photo(data)[-1]["file_id"]
        return self._state.store_document(data, "file.bin", None)["file_id"]

    def file_bytes(self, file_id: str) -> bytes:
        """The bytes Telegram keeps under a file_id (what getFile would serve)."""
        return self._state.files[file_id].data

    def _publish(self, kind: str, message: StoredMessage) -> dict[str, Any]:
        payload = message.to_dict()
        admins = self._state.chat_admins.get(message.chat.id, set())
        if kind != "message" or seen_by_bot(message, self.bot_user, privacy_mode=self.privacy_mode, admins=admins):
            self._state.push_update(kind, payload)
        return payload

    def redeliver(self, payload: dict[str, Any]) -> None:
        """Telegram sends again the update that carried `payload` (one a crashed bot never confirmed)."""
        self._state.redeliver(payload)

    def bot_added(self, chat: Chat, by: User, *, status: str = "member") -> dict[str, Any]:
        """`by` adds the bot to a group: queues a "my_chat_member" update (left -> `status`)."""
        self._state.remember(chat, by)
        update = my_chat_member(chat, by, self.bot_user, "left", status)
        self._state.push_update("my_chat_member", update)
        return update

    # --- what the bot did -------------------------------------------------------------------------

    def sent(self, chat_id: int) -> list[SentMessage]:
        """Messages the bot sent into a chat, in order, with edits applied and deletions flagged."""
        messages = self._state.messages.get(chat_id, {}).values()
        return [SentMessage.of(m) for m in messages if m.from_bot]

    def message(self, chat_id: int, message_id: int) -> dict[str, Any] | None:
        """Any message (user's or bot's) as Telegram would serialise it now; None if unknown/deleted."""
        stored = self._state.message(chat_id, message_id)
        return stored.to_dict() if stored else None

    def flood_calls(self) -> int:
        """Calls, answered or refused, of methods that count toward Telegram's flood limits."""
        return sum(1 for call in self.calls if call.method in FLOOD_METHODS)

    @property
    def file_downloads(self) -> int:
        """How many files the bot downloaded."""
        return len(self.downloads)

    @property
    def chat_admins(self) -> dict[int, set[int]]:
        """chat id -> user ids getChatMember reports as "administrator" (the bot's id: it may delete)."""
        return self._state.chat_admins

    @property
    def members(self) -> ChatMembers:
        """Group owners, joins, leaves and bans, as getChatMember reports them."""
        return self._api.members

    @property
    def payments(self) -> Payments:
        """Telegram Stars: invoices the bot sent, users paying (`user_pays`), charges and refunds."""
        return self._api.payments

    @property
    def menu_buttons(self) -> MenuButtons:
        """The menu buttons the bot set (setChatMenuButton): `default`, `per_chat`, and `shown(chat_id)`."""
        return self._api.menu_buttons

    @property
    def prepared_messages(self) -> PreparedMessages:
        """Messages the bot prepared for Mini App users to share (savePreparedInlineMessage), in `saved`."""
        return self._api.prepared

    @property
    def callback_answers(self) -> dict[str, dict[str, Any]]:
        """callback query id -> the bot's answer (text, show_alert, url)."""
        return self._state.callback_answers

    @property
    def pending_updates(self) -> int:
        """Updates queued and not yet confirmed by a getUpdates offset."""
        return len(self._state.updates)

    @property
    def profile(self) -> BotProfile:
        """The bot's descriptions per language (setMyDescription, setMyShortDescription)."""
        return self._api.profile

    def my_commands(
        self, scope: dict[str, Any] | None = None, language_code: str = ""
    ) -> list[dict[str, str]]:
        """The command list the bot set for a scope and language."""
        return self._api.commands(scope, language_code)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Poll `predicate` every 20 ms; AssertionError with recent calls if it stays false."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if loop.time() >= deadline:
                raise AssertionError(f"condition not met within {timeout} s\n{self.describe()}")
            await asyncio.sleep(0.02)

    def describe(self, last: int = _DUMP_CALLS) -> str:
        """Recent calls, stats and queue size, for failure messages."""
        lines = [f"stats={self.stats} pending_updates={self.pending_updates} downloads={self.file_downloads}",
                 *(str(hit) for hit in self.limit_hits),
                 f"last {min(last, len(self.calls))} of {len(self.calls)} calls:"]
        lines += [f"  {call.summary()}" for call in self.calls[-last:]]
        return "\n".join(lines)

    # --- HTTP ------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/file/bot"):
            return await self._serve_file(request, path.removeprefix("/file/bot"))
        if not path.startswith("/bot"):
            return _json_error(ApiError(404, "Not Found"))
        token, _, method = path.removeprefix("/bot").partition("/")
        call = ApiCall(method=method, params={}, files={}, time=self._clock())
        self.calls.append(call)
        try:
            result = await self._serve_method(request, token, call)
        except ApiError as error:
            if error.code == 409 and (request.transport is None or request.transport.is_closing()):
                # The superseded poll was already abandoned by its client (e.g. PTB stopping):
                # nobody sees this conflict, so it is recorded but not counted.
                call.error, call.status = error.payload(), error.code
                return _json_error(error)
            return self._refuse(call, error)
        except web.HTTPRequestEntityTooLarge:
            return self._refuse(call, ApiError(413, "Request Entity Too Large"))
        except Exception as error:  # a bug in the fake must show up in the test, not hang the bot
            logger.exception("fake Telegram failed on %s", call.method)
            self.stats["internal_errors"] += 1
            bug = ApiError(500, f"Internal Server Error: fake bug {type(error).__name__}")
            return self._refuse(call, bug)
        call.result, call.status = result, 200
        if (latency := self.answer_latency.get(call.method)) is not None:
            await asyncio.sleep(latency)
        return web.json_response({"ok": True, "result": result})

    async def _serve_method(self, request: web.Request, token: str, call: ApiCall) -> Any:
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            raise ApiError(401, "Unauthorized")
        method = self._api.canonical(call.method)
        if method is None:
            raise ApiError(404, "Not Found")
        call.method = method
        decoded = await decode_request(request)
        call.params, call.files = decoded.params, decoded.files
        await self._maybe_fault(request, method, call)
        if self.rate_limits and method in FLOOD_METHODS:
            chat_id = call.params.get("chat_id")
            chat = self._state.chats.get(chat_id) if isinstance(chat_id, int) else None
            retry_after = self._limiter.admit(chat)
            if retry_after is not None:
                raise too_many_requests(retry_after)
        return await self._api.call(method, call.params, call.files)

    def _refuse(self, call: ApiCall, error: ApiError) -> web.Response:
        if error.code in (409, 429):
            self.stats[str(error.code)] += 1
        call.error, call.status = error.payload(), error.code
        return _json_error(error)

    async def _maybe_fault(self, request: web.Request, method: str, call: ApiCall | None) -> None:
        """Apply the fault the plan picks: raise 500/429, drop the connection, or stall."""
        plan = self._fault_plan
        fault = plan.pick(method) if plan is not None else None
        if plan is None or fault is None:
            return
        self.stats["faults"] += 1
        self.stats[f"fault_{fault}"] += 1
        if call is not None:
            call.fault = fault
        if fault == "500":
            raise ApiError(500, "Internal Server Error")
        if fault == "429":
            raise too_many_requests(plan.faults.retry_after)
        if fault == "timeout":
            try:
                await asyncio.wait_for(self._stopping.wait(), plan.faults.timeout_seconds)
            except TimeoutError:
                return  # process after the stall: the client may have given up meanwhile
        if call is not None:
            call.status, call.error = 0, {"description": "connection dropped without an answer"}
        _drop_connection(request)

    async def _serve_file(self, request: web.Request, rest: str) -> web.StreamResponse:
        token, _, file_path = rest.partition("/")
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            return _json_error(ApiError(401, "Unauthorized"))
        stored = self._state.files_by_path.get(file_path)
        if stored is None:
            return _json_error(ApiError(404, "Not Found"))
        try:
            await self._maybe_fault(request, FILE_DOWNLOAD, None)
        except ApiError as error:
            if error.code == 429:
                self.stats["429"] += 1
            return _json_error(error)
        self.downloads.append(FileDownload(stored.file_id, file_path, stored.size, self._clock()))
        return web.Response(body=stored.data, content_type="application/octet-stream")


def _json_error(error: ApiError) -> web.Response:
    return web.json_response(error.payload(), status=error.code)


def _drop_connection(request: web.Request) -> None:
    """Close the socket without an answer; cancelling the handler stops aiohttp from replying."""
    if request.transport is not None:
        request.transport.close()
    raise asyncio.CancelledError
