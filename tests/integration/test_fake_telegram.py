"""The fake Telegram Bot API, driven over loopback HTTP by python-telegram-bot's Bot and raw httpx."""

from __future__ import annotations

import asyncio
import datetime as dtm
import io
import time
import warnings
from collections.abc import AsyncIterator

import httpx
import pytest
import telegram
from PIL import Image
from telegram import (
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputMediaPhoto,
    ReactionTypeEmoji,
    ReplyParameters,
    Update,
)
from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, RetryAfter, TimedOut
from telegram.ext import Application, CommandHandler, ContextTypes

from tests.fakes.telegram import FakeTelegram, TgFaults, User, channel, group, private_chat
from tests.integration.conftest import ptb_bot

ALICE = User(id=1001, first_name="Alice", username="alice")
BOB = User(id=1002, first_name="Bob")
ALICE_CHAT = private_chat(ALICE)
GROUP = group(-100123, "Art club")


def image_bytes(width: int = 64, height: int = 48, fmt: str = "PNG", mode: str = "RGB") -> bytes:
    """A small encoded image made with Pillow."""
    buffer = io.BytesIO()
    Image.new(mode, (width, height), 1 if mode == "1" else (200, 120, 40)).save(buffer, fmt)
    return buffer.getvalue()


class ManualClock:
    """A clock the test moves by hand, for the rate limiter."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def retry_seconds(error: RetryAfter) -> float:
    """retry_after in seconds whichever type PTB is configured to return."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = error.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


async def make_fake(**kwargs: object) -> FakeTelegram:
    fake = FakeTelegram(**kwargs)  # type: ignore[arg-type]
    await fake.start()
    fake.user_sends(ALICE_CHAT, ALICE, text="hello")  # makes the chat known, as Telegram requires
    return fake


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    fake = await make_fake()
    yield fake
    await fake.stop()


@pytest.fixture
async def http(fake: FakeTelegram) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{fake.url}/bot{fake.token}", timeout=5) as client:
        yield client


# --- round trips with PTB -------------------------------------------------------------------------


async def test_get_me(fake: FakeTelegram, bot: telegram.Bot) -> None:
    me = await bot.get_me()
    assert (me.id, me.username, me.is_bot) == (123456, "aiart_test_bot", True)
    assert fake.calls[0].method == "getMe" and fake.calls[0].ok


async def test_send_message_with_keyboard_replies_and_shares_the_id_counter(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Upscale", callback_data="op:upscale")]])
    sent = await bot.send_message(ALICE_CHAT.id, "Pick one", reply_markup=keyboard,
                                  reply_parameters=ReplyParameters(message_id=1))
    assert sent.message_id == 2  # the user's "hello" took id 1
    assert sent.reply_to_message is not None and sent.reply_to_message.text == "hello"
    assert sent.reply_markup == keyboard
    [record] = fake.sent(ALICE_CHAT.id)
    assert (record.kind, record.text, record.reply_to_message_id) == ("text", "Pick one", 1)
    assert record.reply_markup == {"inline_keyboard": [[{"text": "Upscale", "callback_data": "op:upscale"}]]}


async def test_parse_mode_shows_the_text_and_rejects_bad_markup(bot: telegram.Bot) -> None:
    # the bot sends plain text: the fake checks markup only as far as Telegram surely refuses it
    sent = await bot.send_message(ALICE_CHAT.id, "<b>Done</b> &amp; <i>saved</i>", parse_mode="HTML")
    assert sent.text == "Done & saved"
    for broken in ("<b>unclosed", "<b>x</i>", "line<br>break"):
        with pytest.raises(BadRequest, match="(?i)can't parse entities"):
            await bot.send_message(ALICE_CHAT.id, broken, parse_mode="HTML")
    with pytest.raises(BadRequest, match="(?i)character '.' is reserved"):
        await bot.send_message(ALICE_CHAT.id, "Done in 1.5 s", parse_mode="MarkdownV2")
    escaped = await bot.send_message(ALICE_CHAT.id, "*Done* in 1\\.5 s", parse_mode="MarkdownV2")
    assert escaped.text == "Done in 1.5 s"
    with pytest.raises(BadRequest, match="(?i)unsupported parse_mode"):
        await bot.send_message(ALICE_CHAT.id, "Done", parse_mode="BBCode")
    longest = await bot.send_message(ALICE_CHAT.id, "<b>x</b>" + "y" * 4095, parse_mode="HTML")
    assert len(longest.text) == 4096  # counted without the markup
    with pytest.raises(BadRequest, match="(?i)message is too long"):
        await bot.send_message(ALICE_CHAT.id, "y" * 4097)


async def test_send_photo_bytes(fake: FakeTelegram, bot: telegram.Bot) -> None:
    data = image_bytes(640, 480)
    sent = await bot.send_photo(ALICE_CHAT.id, data, caption="result", reply_to_message_id=1)
    sizes = [(p.width, p.height) for p in sent.photo]
    assert sizes[-1] == (640, 480) and len(sizes) >= 2 and sizes == sorted(sizes)
    assert sent.caption == "result"
    [record] = fake.sent(ALICE_CHAT.id)
    assert (record.kind, record.media, record.reply_to_message_id) == ("photo", data, 1)


async def test_send_document(fake: FakeTelegram, bot: telegram.Bot) -> None:
    data = image_bytes(fmt="PNG")
    sent = await bot.send_document(ALICE_CHAT.id, data, filename="result.png", caption="original")
    assert sent.document.file_name == "result.png"
    assert sent.document.mime_type == "image/png"
    assert sent.document.file_size == len(data)
    [record] = fake.sent(ALICE_CHAT.id)
    assert (record.kind, record.media, record.file_name) == ("document", data, "result.png")


async def test_send_media_group_of_three_photos(fake: FakeTelegram, bot: telegram.Bot) -> None:
    photos = [image_bytes(32 + i, 32) for i in range(3)]
    sent = await bot.send_media_group(ALICE_CHAT.id, [InputMediaPhoto(p) for p in photos])
    assert len(sent) == 3
    assert len({m.media_group_id for m in sent}) == 1 and sent[0].media_group_id
    assert [m.photo[-1].width for m in sent] == [32, 33, 34]
    records = fake.sent(ALICE_CHAT.id)
    assert [r.kind for r in records] == ["media_group_item"] * 3
    assert [r.media for r in records] == photos
    assert {r.media_kind for r in records} == {"photo"}


async def test_media_group_size_and_mixing_rules(fake: FakeTelegram, http: httpx.AsyncClient) -> None:
    photo_id = fake.add_file(image_bytes())
    doc_id = fake.add_file(b"%PDF-1.4 tiny")
    cases = {
        "media group must contain 2-10 items": [{"type": "photo", "media": photo_id}],
        "too much messages to send as an album": [{"type": "photo", "media": photo_id}] * 11,
        "document can't be mixed with other media types": [
            {"type": "photo", "media": photo_id}, {"type": "document", "media": doc_id}],
    }
    for reason, media in cases.items():
        response = await http.post("/sendMediaGroup", json={"chat_id": ALICE_CHAT.id, "media": media})
        assert response.status_code == 400
        assert response.json() == {"ok": False, "error_code": 400, "description": f"Bad Request: {reason}"}
    assert fake.sent(ALICE_CHAT.id) == []


async def test_edit_message_text_and_not_modified(fake: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(ALICE_CHAT.id, "Queued")
    edited = await bot.edit_message_text("Running", chat_id=ALICE_CHAT.id, message_id=sent.message_id)
    assert edited.text == "Running" and edited.edit_date is not None
    with pytest.raises(BadRequest, match="(?i)message is not modified"):
        await bot.edit_message_text("Running", chat_id=ALICE_CHAT.id, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="(?i)message to edit not found"):
        await bot.edit_message_text("x", chat_id=ALICE_CHAT.id, message_id=999)
    with pytest.raises(BadRequest, match="(?i)message can't be edited"):
        await bot.edit_message_text("x", chat_id=ALICE_CHAT.id, message_id=1)  # the user's message
    [record] = fake.sent(ALICE_CHAT.id)
    assert (record.text, record.edited) == ("Running", True)


async def test_edit_without_markup_removes_the_keyboard(fake: FakeTelegram, bot: telegram.Bot) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Cancel", callback_data="cancel")]])
    sent = await bot.send_message(ALICE_CHAT.id, "Working", reply_markup=keyboard)
    await bot.edit_message_text("Working", chat_id=ALICE_CHAT.id, message_id=sent.message_id)
    assert fake.sent(ALICE_CHAT.id)[0].reply_markup is None


async def test_delete_message(fake: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(ALICE_CHAT.id, "temporary")
    assert await bot.delete_message(ALICE_CHAT.id, sent.message_id) is True
    assert fake.sent(ALICE_CHAT.id)[0].deleted
    with pytest.raises(BadRequest, match="(?i)message to delete not found"):
        await bot.delete_message(ALICE_CHAT.id, sent.message_id)
    with pytest.raises(BadRequest, match="(?i)message to edit not found"):
        await bot.edit_message_text("late", chat_id=ALICE_CHAT.id, message_id=sent.message_id)


async def test_user_message_in_group_needs_admin_to_delete(fake: FakeTelegram, bot: telegram.Bot) -> None:
    posted = fake.user_sends(GROUP, BOB, text="spam")
    with pytest.raises(BadRequest, match="(?i)message can't be deleted"):
        await bot.delete_message(GROUP.id, posted["message_id"])
    fake.chat_admins[GROUP.id] = {fake.bot_user.id, BOB.id}
    assert await bot.delete_message(GROUP.id, posted["message_id"])
    member = await bot.get_chat_member(GROUP.id, BOB.id)
    assert member.status == "administrator"
    assert (await bot.get_chat_member(ALICE_CHAT.id, ALICE.id)).status == "member"


async def test_set_my_commands(fake: FakeTelegram, bot: telegram.Bot) -> None:
    commands = [BotCommand("upscale", "Upscale a photo"), BotCommand("help", "How to use the bot")]
    assert await bot.set_my_commands(commands)
    assert list(await bot.get_my_commands()) == commands
    assert fake.my_commands()[0] == {"command": "upscale", "description": "Upscale a photo"}
    with pytest.raises(BadRequest, match="(?i)bot_command_invalid"):
        await bot.set_my_commands([BotCommand("Upscale!", "bad name")])
    with pytest.raises(BadRequest, match="(?i)bot_command_description_invalid"):
        await bot.set_my_commands([BotCommand("long", "x" * 257)])


async def test_get_file_and_download_user_photo(fake: FakeTelegram, bot: telegram.Bot) -> None:
    data = image_bytes(400, 300, fmt="JPEG")
    message = fake.user_sends(ALICE_CHAT, ALICE, photo=data, caption="/restore")
    assert message["caption_entities"] == [{"type": "bot_command", "offset": 0, "length": 8}]
    largest = message["photo"][-1]
    assert (largest["width"], largest["height"]) == (400, 300)
    file = await bot.get_file(largest["file_id"])
    assert file.file_size == len(data)
    buffer = io.BytesIO()
    await file.download_to_memory(buffer)
    assert buffer.getvalue() == data
    assert fake.file_downloads == 1 and fake.downloads[0].file_id == largest["file_id"]
    assert fake.downloads[0].file_path.startswith("photos/")


async def test_download_faults_are_opt_in(fake: FakeTelegram, bot: telegram.Bot) -> None:
    file = await bot.get_file(fake.add_file(image_bytes()))
    fake.faults = TgFaults(rate=1.0, kinds=("500",), methods=frozenset({"sendMessage"}))
    assert await file.download_as_bytearray() == bytearray(image_bytes())
    fake.faults = TgFaults(rate=1.0, kinds=("500",), methods=frozenset({"download"}))
    with pytest.raises(NetworkError):
        await file.download_as_bytearray()
    assert fake.file_downloads == 1 and fake.stats["fault_500"] == 1


async def test_get_file_refuses_files_over_20_mb(fake: FakeTelegram, bot: telegram.Bot) -> None:
    file_id = fake.add_file(b"\0" * (20 * 1024 * 1024 + 1))
    with pytest.raises(BadRequest, match="(?i)file is too big"):
        await bot.get_file(file_id)
    with pytest.raises(BadRequest, match="(?i)wrong file_id"):
        await bot.get_file("no-such-file")


async def test_photo_by_file_id(fake: FakeTelegram, bot: telegram.Bot) -> None:
    data = image_bytes(50, 40)
    file_id = fake.add_file(data)
    by_id = await bot.send_photo(ALICE_CHAT.id, file_id)
    assert by_id.photo[-1].file_id == file_id
    assert [r.media for r in fake.sent(ALICE_CHAT.id)] == [data]
    with pytest.raises(BadRequest, match="(?i)wrong file identifier"):
        await bot.send_photo(ALICE_CHAT.id, "AgACunknown")


async def test_callback_query_round_trip(fake: FakeTelegram, bot: telegram.Bot) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("2x", callback_data="up:2")]])
    sent = await bot.send_message(ALICE_CHAT.id, "Scale?", reply_markup=keyboard)
    await bot.get_updates(offset=10**9, timeout=0)  # confirm the setup message
    query_id = fake.user_presses(ALICE_CHAT, ALICE, sent.message_id, "up:2")
    [update] = await bot.get_updates(timeout=1)
    assert update.callback_query.id == query_id and update.callback_query.data == "up:2"
    assert update.callback_query.message.message_id == sent.message_id
    assert await bot.answer_callback_query(query_id, text="Scaling")
    assert fake.callback_answers[query_id]["text"] == "Scaling"
    with pytest.raises(BadRequest, match="(?i)query is too old"):
        await bot.answer_callback_query(query_id)
    with pytest.raises(ValueError, match="no button"):
        fake.user_presses(ALICE_CHAT, ALICE, sent.message_id, "up:9")


async def test_chat_action_and_reaction_validation(fake: FakeTelegram, bot: telegram.Bot) -> None:
    assert await bot.send_chat_action(ALICE_CHAT.id, "upload_photo")
    assert await bot.set_message_reaction(ALICE_CHAT.id, 1, [ReactionTypeEmoji("👍")])
    with pytest.raises(BadRequest, match="(?i)wrong parameter action"):
        await bot.send_chat_action(ALICE_CHAT.id, "dancing")
    with pytest.raises(BadRequest, match="(?i)reaction_invalid"):
        await bot.set_message_reaction(ALICE_CHAT.id, 1, "🦖")


# --- getUpdates -----------------------------------------------------------------------------------


async def test_long_poll_returns_a_command_and_confirms_offsets(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    first = await bot.get_updates(timeout=0)
    assert [u.message.text for u in first] == ["hello"]
    poll = asyncio.create_task(bot.get_updates(offset=first[-1].update_id + 1, timeout=5))
    await asyncio.sleep(0.1)
    assert not poll.done()  # nothing new yet: the request is held open
    started = time.monotonic()
    fake.user_sends(ALICE_CHAT, ALICE, text="/upscale@aiart_test_bot 4")
    [update] = await asyncio.wait_for(poll, 2)
    assert time.monotonic() - started < 1.0
    assert update.update_id == first[-1].update_id + 1
    assert update.message.text == "/upscale@aiart_test_bot 4"
    [entity] = update.message.entities
    assert (entity.type, entity.offset, entity.length) == ("bot_command", 0, len("/upscale@aiart_test_bot"))
    assert await bot.get_updates(offset=update.update_id + 1, timeout=0) == ()
    assert fake.pending_updates == 0


async def test_long_poll_answers_empty_within_its_timeout(http: httpx.AsyncClient) -> None:
    await http.post("/getUpdates", data={"offset": "-1", "timeout": "0"})
    await http.post("/getUpdates", data={"offset": "999999999", "timeout": "0"})
    started = time.monotonic()
    response = await http.post("/getUpdates", data={"timeout": "0.3"})
    assert 0.25 <= time.monotonic() - started < 2.0
    assert response.json() == {"ok": True, "result": []}


async def test_second_get_updates_terminates_the_first_with_409(
    fake: FakeTelegram, bot: telegram.Bot, http: httpx.AsyncClient
) -> None:
    await bot.get_updates(offset=10**9, timeout=0)
    first = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.1)
    second = await http.post("/getUpdates", json={"timeout": 0})
    assert second.json() == {"ok": True, "result": []}
    with pytest.raises(Conflict, match="terminated by other getUpdates request"):
        await asyncio.wait_for(first, 2)
    assert fake.stats["409"] == 1


async def test_user_edits_and_channel_posts_become_updates(fake: FakeTelegram, bot: telegram.Bot) -> None:
    news = channel(-100777, "News")
    fake.user_edits(ALICE_CHAT, ALICE, 1, text="/start")
    fake.channel_posts(news, text="fresh post")
    updates = await bot.get_updates(timeout=0)
    assert [u.message.text for u in updates if u.message] == ["hello"]
    edited = next(u.edited_message for u in updates if u.edited_message)
    assert edited.text == "/start" and edited.entities[0].type == "bot_command"
    post = next(u.channel_post for u in updates if u.channel_post)
    assert post.text == "fresh post" and post.sender_chat.id == news.id


# --- strictness -----------------------------------------------------------------------------------


async def test_wrong_token_and_unknown_method(fake: FakeTelegram, http: httpx.AsyncClient) -> None:
    async with httpx.AsyncClient() as raw:
        response = await raw.post(f"{fake.url}/bot123456:WRONG/getMe")
    assert response.status_code == 401
    assert response.json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}
    with pytest.raises(InvalidToken):
        async with ptb_bot(fake, token="123456:WRONG"):
            pass
    response = await http.post("/sendSticker", json={"chat_id": ALICE_CHAT.id})
    assert (response.status_code, response.json()["description"]) == (404, "Not Found")
    response = await http.post("/sendmessage", json={"chat_id": ALICE_CHAT.id, "text": "ok"})
    assert response.json()["ok"] is True  # method names are case-insensitive, as in Telegram


async def test_chat_not_found_and_reply_to_unknown_message(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match="(?i)chat not found"):
        await bot.send_message(424242, "who?")
    with pytest.raises(BadRequest, match="(?i)message to be replied not found"):
        await bot.send_message(ALICE_CHAT.id, "re", reply_to_message_id=77)
    sent = await bot.send_message(
        ALICE_CHAT.id, "re", reply_parameters=ReplyParameters(77, allow_sending_without_reply=True)
    )
    assert sent.reply_to_message is None
    assert [r.text for r in fake.sent(ALICE_CHAT.id)] == ["re"]


async def test_caption_limit(bot: telegram.Bot) -> None:
    photo = image_bytes(20, 20)
    assert (await bot.send_photo(ALICE_CHAT.id, photo, caption="c" * 1024)).caption == "c" * 1024
    with pytest.raises(BadRequest, match="(?i)message caption is too long"):
        await bot.send_photo(ALICE_CHAT.id, photo, caption="c" * 1025)


async def test_callback_data_limit_and_malformed_keyboard(fake: FakeTelegram, bot: telegram.Bot,
                                                          http: httpx.AsyncClient) -> None:
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="d" * 65)]])
    with pytest.raises(BadRequest, match="(?i)button_data_invalid"):
        await bot.send_message(ALICE_CHAT.id, "menu", reply_markup=too_long)
    malformed = {"inline_keyboard": [{"text": "not in a row", "callback_data": "a"}]}
    response = await http.post(
        "/sendMessage", json={"chat_id": ALICE_CHAT.id, "text": "m", "reply_markup": malformed}
    )
    assert response.json()["description"] == "Bad Request: BUTTON_DATA_INVALID"
    assert fake.sent(ALICE_CHAT.id) == []


async def test_photo_dimension_and_content_checks(fake: FakeTelegram, bot: telegram.Bot) -> None:
    assert await bot.send_photo(ALICE_CHAT.id, image_bytes(400, 20))  # aspect 20 is still fine
    for width, height in ((420, 20), (6000, 4001)):
        with pytest.raises(BadRequest, match="(?i)photo_invalid_dimensions"):
            await bot.send_photo(ALICE_CHAT.id, image_bytes(width, height, mode="1"))
    with pytest.raises(BadRequest, match="(?i)image_process_failed"):
        await bot.send_photo(ALICE_CHAT.id, b"definitely not an image", filename="x.jpg")
    assert len(fake.sent(ALICE_CHAT.id)) == 1


# --- flood limits and faults ----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_private_chat_limit_gives_retry_after() -> None:
    clock = ManualClock()
    fake = await make_fake(rate_limits=True, clock=clock)
    try:
        async with ptb_bot(fake) as bot:
            for _ in range(3):  # the burst
                await bot.send_message(ALICE_CHAT.id, "ok")
            with pytest.raises(RetryAfter) as refused:
                await bot.send_message(ALICE_CHAT.id, "too fast")
            assert retry_seconds(refused.value) == 1
            clock.now += 1.0
            await bot.send_message(ALICE_CHAT.id, "after waiting")
        assert fake.stats["429"] == 1
        assert [r.text for r in fake.sent(ALICE_CHAT.id)] == ["ok", "ok", "ok", "after waiting"]
    finally:
        await fake.stop()


async def test_group_and_bot_wide_limits() -> None:
    clock = ManualClock()
    fake = await make_fake(rate_limits=True, clock=clock)
    try:
        fake.user_sends(GROUP, BOB, text="hi")
        async with httpx.AsyncClient(base_url=f"{fake.url}/bot{fake.token}") as http:
            for _ in range(20):
                response = await http.post("/sendMessage", json={"chat_id": GROUP.id, "text": "g"})
                assert response.status_code == 200
                clock.now += 0.5
            response = await http.post("/sendMessage", json={"chat_id": GROUP.id, "text": "g"})
            assert response.status_code == 429
            assert response.json() == {  # the first of the 20 leaves the window at 60 s
                "ok": False, "error_code": 429, "description": "Too Many Requests: retry after 50",
                "parameters": {"retry_after": 50},
            }
            users = [User(id=5000 + i) for i in range(31)]
            for user in users:
                fake.user_sends(private_chat(user), user, text="hi")
            clock.now += 60
            codes = [
                (await http.post("/sendMessage", json={"chat_id": u.id, "text": "x"})).status_code
                for u in users
            ]
        assert codes == [200] * 30 + [429]
        assert fake.stats["429"] == 2
    finally:
        await fake.stop()


async def test_flood_calls_count_only_chat_changing_methods(fake: FakeTelegram, bot: telegram.Bot) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Go", callback_data="go")]])
    sent = await bot.send_message(ALICE_CHAT.id, "a", reply_markup=keyboard)
    await bot.answer_callback_query(fake.user_presses(ALICE_CHAT, ALICE, sent.message_id, "go"))
    await bot.edit_message_text("b", chat_id=ALICE_CHAT.id, message_id=sent.message_id)
    await bot.send_chat_action(ALICE_CHAT.id, "typing")
    await bot.set_message_reaction(ALICE_CHAT.id, 1, [ReactionTypeEmoji("👍")])
    await bot.delete_message(ALICE_CHAT.id, sent.message_id)
    await bot.get_updates(timeout=0)
    await bot.set_my_commands([BotCommand("help", "Help")])
    await bot.get_file(fake.add_file(image_bytes()))
    assert fake.flood_calls() == 5
    assert len(fake.calls) == 10  # getMe from initialize + the nine above


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_fault_500_and_429_create_nothing(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.faults = TgFaults(rate=1.0, kinds=("500",), methods=frozenset({"sendMessage"}))
    with pytest.raises(NetworkError, match="Internal Server Error"):
        await bot.send_message(ALICE_CHAT.id, "lost")
    fake.faults = TgFaults(rate=1.0, kinds=("429",), retry_after=7, methods=frozenset({"sendMessage"}))
    with pytest.raises(RetryAfter) as refused:
        await bot.send_message(ALICE_CHAT.id, "lost")
    assert retry_seconds(refused.value) == 7
    assert await bot.get_me()  # not in `methods`: served normally
    assert fake.sent(ALICE_CHAT.id) == []
    assert (fake.stats["fault_500"], fake.stats["fault_429"], fake.stats["429"]) == (1, 1, 1)
    assert [c.fault for c in fake.calls if c.method == "sendMessage"] == ["500", "429"]


async def test_fault_drop_closes_the_connection_without_sending(fake: FakeTelegram, bot: telegram.Bot,
                                                                http: httpx.AsyncClient) -> None:
    fake.faults = TgFaults(rate=1.0, kinds=("drop",))
    with pytest.raises(httpx.RemoteProtocolError):
        await http.post("/sendMessage", json={"chat_id": ALICE_CHAT.id, "text": "dropped"})
    with pytest.raises(NetworkError):
        await bot.send_message(ALICE_CHAT.id, "dropped too")
    assert fake.sent(ALICE_CHAT.id) == [] and fake.stats["fault_drop"] == 2


async def test_fault_timeout_processes_after_the_client_gave_up(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    fake.faults = TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=0.4)
    with pytest.raises(TimedOut):
        await bot.send_message(ALICE_CHAT.id, "slow", read_timeout=0.1)
    assert fake.sent(ALICE_CHAT.id) == []
    await fake.wait_for(lambda: len(fake.sent(ALICE_CHAT.id)) == 1, timeout=3)
    assert fake.sent(ALICE_CHAT.id)[0].text == "slow"  # the duplicate window a retry would hit


async def test_seeded_faults_are_reproducible_and_spare_get_updates() -> None:
    outcomes = []
    for _ in range(2):
        fake = await make_fake(faults=TgFaults(rate=0.5, kinds=("500",), seed=7))
        try:
            async with httpx.AsyncClient(base_url=f"{fake.url}/bot{fake.token}") as http:
                send = {"chat_id": ALICE_CHAT.id, "text": "x"}
                codes = [(await http.post("/sendMessage", json=send)).status_code for _ in range(20)]
                polls = [(await http.post("/getUpdates", json={"timeout": 0})).status_code for _ in range(5)]
            outcomes.append(codes)
            assert polls == [200] * 5
            assert len(fake.sent(ALICE_CHAT.id)) == codes.count(200)
        finally:
            await fake.stop()
    assert outcomes[0] == outcomes[1]
    assert 0 < outcomes[0].count(500) < 20


async def test_wait_for_dumps_recent_calls_without_the_token(fake: FakeTelegram, bot: telegram.Bot) -> None:
    await bot.send_message(ALICE_CHAT.id, "visible")
    with pytest.raises(AssertionError) as failure:
        await fake.wait_for(lambda: False, timeout=0.1)
    dump = str(failure.value)
    assert "sendMessage" in dump and "visible" in dump
    assert fake.token not in dump and fake.token not in repr(fake)


async def test_updates_parse_as_ptb_objects(fake: FakeTelegram, bot: telegram.Bot) -> None:
    doc = fake.user_sends(GROUP, BOB, document=(b"%PDF-1.4", "scan.pdf", "application/pdf"), caption="see",
                          reply_to=None)
    reply = fake.user_sends(GROUP, ALICE, text="/art@aiart_test_bot anime", reply_to=doc["message_id"])
    async with httpx.AsyncClient() as http:
        raw = await http.post(f"{fake.url}/bot{fake.token}/getUpdates", json={"timeout": 0})
    updates = [Update.de_json(u, bot) for u in raw.json()["result"]]
    parsed = updates[-1].message
    assert parsed.chat.type == "supergroup" and parsed.chat.title == "Art club"
    assert parsed.reply_to_message.document.file_name == "scan.pdf"
    assert parsed.reply_to_message.message_id == doc["message_id"]
    assert reply["message_id"] == doc["message_id"] + 1


async def test_ptb_application_polls_replies_and_stops_cleanly(fake: FakeTelegram) -> None:
    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await update.effective_message.reply_text(f"Hi {update.effective_user.first_name}", do_quote=True)

    errors: list[object] = []

    async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        errors.append(context.error)

    app = (Application.builder().token(fake.token).base_url(f"{fake.url}/bot")
           .base_file_url(f"{fake.url}/file/bot").build())
    app.add_handler(CommandHandler("start", start))
    app.add_error_handler(on_error)
    async with app:
        await app.start()
        await app.updater.start_polling(poll_interval=0, timeout=2, drop_pending_updates=True,
                                        error_callback=errors.append)
        fake.user_sends(ALICE_CHAT, ALICE, text="/start")
        await fake.wait_for(lambda: len(fake.sent(ALICE_CHAT.id)) == 1, timeout=5)
        await app.updater.stop()
        await app.stop()
    [reply] = fake.sent(ALICE_CHAT.id)
    assert (reply.text, reply.reply_to_message_id) == ("Hi Alice", 2)
    assert errors == [] and fake.pending_updates == 0
    assert fake.stats["409"] == 0  # PTB's final offset-confirming poll supersedes only an abandoned one
