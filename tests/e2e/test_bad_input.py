"""The bad-input corpus, end to end: hostile files, odd messages and stale buttons against the real bot.

Every case gets a short reply that says what happened and what to send instead, and leaves every job
row of the chat in a final state (requests refused in the chat are kept as FAILED rows). The table
in docs/bad-input.md lists the same cases with the replies they get.

The fake Bot API models text, photo and document messages; stickers, voice messages, documents
without a declared size and callback queries for buttons that no longer exist are injected as raw
updates through its state (`raw_message`, `raw_press`), exactly as Telegram would deliver them.
"""

from __future__ import annotations

import asyncio
import io
import secrets
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageOps
from sqlalchemy import select

from bot.store import FINAL_STATES, create_engine, session_factory
from bot.store.models import Job
from bot.tg import pending
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import media, wait_handled, wait_media
from tests.fakes import samples
from tests.fakes.telegram import Chat, FakeTelegram, User, channel, group, private_chat

ALICE_CHAT = private_chat(ALICE)
GROUP = group(-100500, "Photo club")
CHANNEL = channel(-100777, "Photo news")
MB = 1024 * 1024
DOCS = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"

# ---- files users send ---------------------------------------------------------------------------

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + b"\x00\x00\x00\x08free" + bytes(512)


def zip_of_photos() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("holiday/1.jpg", samples.jpeg(64, 64))
    return buffer.getvalue()


def png_bytes(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 30)).save(buffer, "PNG")
    return buffer.getvalue()


# ---- raw updates for what the fake's user_sends does not model ---------------------------------

def raw_message(telegram: FakeTelegram, chat: Chat, user: User, *, reply_to: dict[str, Any] | None = None,
                caption: str | None = None, text: str | None = None, **fields: Any) -> dict[str, Any]:
    """A message with arbitrary fields (sticker, voice, document without file_size, ...), as an update."""
    state = telegram._state
    state.remember(chat, user)
    target = state.message(chat.id, reply_to["message_id"]) if reply_to else None
    stored = state.add_message(chat, user, "text", reply_to=target, caption=caption, text=text)
    payload = stored.to_dict()
    payload.update(fields)
    if reply_to is not None:
        payload["reply_to_message"] = {k: v for k, v in reply_to.items() if k != "reply_to_message"}
    state.push_update("message", payload)
    return payload


def raw_press(telegram: FakeTelegram, chat: Chat, user: User, message: dict[str, Any], data: str) -> str:
    """A callback query with any data, for a message as the client last saw it (keyboards may be stale)."""
    state = telegram._state
    state.remember(chat, user)
    query_id = str(secrets.randbits(63))
    state.callback_queries[query_id] = {"message_id": message["message_id"], "chat_id": chat.id, "data": data}
    state.push_update("callback_query", {"id": query_id, "from": user.to_dict(), "message": message,
                                         "chat_instance": "4242", "data": data})
    return query_id


def sticker(telegram: FakeTelegram, *, animated: bool) -> dict[str, Any]:
    file_id = "CAACAgIAAxkBAAnimated" if animated else telegram.add_file(samples.webp(512, 512))
    return {"file_id": file_id, "file_unique_id": "AgADsticker", "type": "regular", "width": 512, "height": 512,
            "is_animated": animated, "is_video": False, "emoji": "😺"}


def voice() -> dict[str, Any]:
    return {"file_id": "AwACAgIAAxkBAAvoice", "file_unique_id": "AgADvoice", "duration": 3, "mime_type": "audio/ogg"}


def undeclared_document(telegram: FakeTelegram, data: bytes, name: str, mime: str) -> dict[str, Any]:
    """A Document whose file_size is missing (it is optional in the Bot API)."""
    document = dict(telegram._state.store_document(data, name, mime))
    document.pop("file_size")
    return document


# ---- the database -------------------------------------------------------------------------------

async def job_rows(settings) -> list[tuple[str, str, str]]:
    """(operation, state, why) of every job, oldest first: why is "refused" or the failure's kind, if any."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(
                select(Job.operation, Job.state, Job.refused, Job.failure_kind).order_by(Job.id))).all()
        return [(operation, str(state), "refused" if refused else kind or "") for operation, state, refused, kind in rows]
    finally:
        await engine.dispose()


async def settled_rows(settings, count: int, timeout: float = 15.0) -> list[tuple[str, str, str]]:
    """The job rows once there are `count` and every one is final.

    Both the chat side and the worker write a refusal's row just after telling the user, so the row
    may trail the reply by a moment.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        rows = await job_rows(settings)
        if len(rows) >= count and all(state in FINAL_STATES for _, state, _ in rows):
            return rows
        assert loop.time() < deadline, f"expected {count} finished job(s), found {rows}"
        await asyncio.sleep(0.05)


def row_summary(rows: list[tuple[str, str, str]]) -> list[str]:
    """Each row as operation:state:why ("refused", "bad_input", or empty)."""
    return [f"{operation}:{state}:{why}" for operation, state, why in rows]


# ---- waiting for the bot ------------------------------------------------------------------------

def bot_texts(telegram: FakeTelegram, chat_id: int) -> list[Any]:
    return [m for m in telegram.sent(chat_id) if m.text is not None and not m.deleted]


async def reply_to(telegram: FakeTelegram, chat_id: int, message_id: int, fragment: str, timeout: float = 15.0) -> str:
    """The bot's text reply to one message that contains `fragment`."""
    def found() -> list[str]:
        return [m.text for m in bot_texts(telegram, chat_id)
                if fragment in m.text and m.reply_to_message_id == message_id]
    await telegram.wait_for(lambda: bool(found()), timeout)
    return found()[0]


def assert_tidy(telegram: FakeTelegram, chat_id: int) -> None:
    """No status message left standing and no "something went wrong" (a handler that crashed)."""
    leftovers = [m.text for m in bot_texts(telegram, chat_id) if m.text.startswith("⏳")]
    assert leftovers == []
    assert not any("went wrong" in m.text for m in bot_texts(telegram, chat_id))


async def answer_of(telegram: FakeTelegram, query_id: str, timeout: float = 10.0) -> dict[str, Any]:
    await telegram.wait_for(lambda: query_id in telegram.callback_answers, timeout)
    return telegram.callback_answers[query_id]


async def menu_for(telegram: FakeTelegram, chat: Chat, user: User, photo: bytes) -> tuple[dict, Any]:
    """Send a photo without a command; the photo and the bot's menu under it."""
    sent = telegram.user_sends(chat, user, photo=photo)
    await reply_to(telegram, chat.id, sent["message_id"], "What should I do")
    menu = next(m for m in telegram.sent(chat.id) if m.reply_markup and m.reply_to_message_id == sent["message_id"])
    return sent, menu


# ---- what users send ------------------------------------------------------------------------------

#: one user action: given the fake, the chat and the user, send something; returns the message to be answered
Act = Callable[[FakeTelegram, Chat, User], dict[str, Any]]
#: file bytes, or a function making them (big samples are made when a test runs, not at collection)
Data = bytes | Callable[[], bytes]


def _bytes(data: Data) -> bytes:
    return data() if callable(data) else data


def photo(data: Data, caption: str | None = None) -> Act:
    return lambda tg, chat, user: tg.user_sends(chat, user, photo=_bytes(data), caption=caption)


def document(data: Data, name: str, mime: str, caption: str | None = "/upscale 2") -> Act:
    return lambda tg, chat, user: tg.user_sends(chat, user, document=(_bytes(data), name, mime), caption=caption)


def text(message: str) -> Act:
    return lambda tg, chat, user: tg.user_sends(chat, user, text=message)


def replying(first: Act, command: str) -> Act:
    """Send `first`, then `command` as a reply to it."""
    def act(tg: FakeTelegram, chat: Chat, user: User) -> dict[str, Any]:
        target = first(tg, chat, user)
        return tg.user_sends(chat, user, text=command, reply_to=target["message_id"])
    return act


def replying_to_sticker(animated: bool) -> Act:
    def act(tg: FakeTelegram, chat: Chat, user: User) -> dict[str, Any]:
        target = raw_message(tg, chat, user, sticker=sticker(tg, animated=animated))
        return raw_message(tg, chat, user, text="/upscale 2", reply_to=target)
    return act


def voice_with(caption: str | None) -> Act:
    return lambda tg, chat, user: raw_message(tg, chat, user, caption=caption, voice=voice())


def undeclared_huge(tg: FakeTelegram, chat: Chat, user: User) -> dict[str, Any]:
    document_ = undeclared_document(tg, samples.huge_jpeg_over(20 * MB), "big.jpg", "image/jpeg")
    return raw_message(tg, chat, user, caption="/upscale 2", document=document_)


def channel_post(text_: str | None = None, photo_: bytes | None = None) -> Act:
    return lambda tg, chat, user: tg.channel_posts(chat, text=text_, photo=photo_)


# ---- the table ----------------------------------------------------------------------------------

WHERE = {"private": (ALICE_CHAT, ALICE), "group": (GROUP, BOB), "channel": (CHANNEL, ALICE)}


@dataclass(frozen=True)
class Case:
    """One bad input: what the user sends, a fragment of the bot's reply (None: silence), the job rows left."""

    id: str
    act: Act
    reply: str | None
    rows: tuple[str, ...] = ()
    where: str = "private"


REFUSED = "failed:refused"    # refused in the chat, before anything was queued
BAD_INPUT = "failed:bad_input"  # queued, then refused by the worker once it looked inside the file
NOT_AN_IMAGE = "not an image I can use"
NEEDS_PHOTO = "needs a photo. Send the photo with"
OVER_20_MB = lambda: samples.huge_jpeg_over(20 * MB)  # noqa: E731
PHOTO = samples.jpeg(100, 80)

CASES = [
    # files that are not images, refused from what Telegram tells about them
    Case("pdf-with-command", document(PDF, "report.pdf", "application/pdf"), NOT_AN_IMAGE, (f"upscale:{REFUSED}",)),
    Case("zip-with-command", document(zip_of_photos(), "photos.zip", "application/zip", "/colorize"),
         NOT_AN_IMAGE, (f"colorize:{REFUSED}",)),
    Case("text-file-with-command", document(b"my photo\n", "notes.txt", "text/plain", "/restore"),
         NOT_AN_IMAGE, (f"restore:{REFUSED}",)),
    Case("pdf-without-command", document(PDF, "report.pdf", "application/pdf", None), NOT_AN_IMAGE),
    Case("video-named-jpg", document(MP4, "clip.jpg", "video/mp4"), NOT_AN_IMAGE, (f"upscale:{REFUSED}",)),
    Case("empty-file", document(b"", "empty.jpg", "image/jpeg"), "That file is empty", (f"upscale:{REFUSED}",)),
    Case("over-20mb-declared", document(OVER_20_MB, "big.jpg", "image/jpeg"), "over 20 MB", (f"upscale:{REFUSED}",)),
    Case("over-20mb-without-command", document(OVER_20_MB, "big.jpg", "image/jpeg", None), "over 20 MB"),
    # files that claim to be images: the worker downloads and inspects them
    Case("over-20mb-undeclared", undeclared_huge, "over 20 MB", (f"upscale:{BAD_INPUT}",)),
    Case("truncated-jpeg", document(samples.truncated_jpeg(), "cut.jpg", "image/jpeg"),
         "damaged or incomplete", (f"upscale:{BAD_INPUT}",)),
    Case("text-renamed-jpg", document(samples.text_renamed_jpg(), "holiday.jpg", "image/jpeg"),
         "not an image I can read", (f"upscale:{BAD_INPUT}",)),
    Case("video-with-image-mime", document(MP4, "clip.jpg", "image/jpeg"),
         "not an image I can read", (f"upscale:{BAD_INPUT}",)),
    Case("decompression-bomb", document(samples.decompression_bomb_png, "bomb.png", "image/png"),
         "too large", (f"upscale:{BAD_INPUT}",)),
    Case("huge-dimensions", document(lambda: samples.decompression_bomb_png(9000, 5000), "huge.png", "image/png"),
         "too large (9000×5000 pixels)", (f"upscale:{BAD_INPUT}",)),
    Case("tiny-1x1", photo(samples.tiny(), "/upscale 2"), "too small (1×1 pixels)", (f"upscale:{BAD_INPUT}",)),
    Case("too-small-for-retouch", photo(PHOTO, "/retouch"), "at least 129 pixels", (f"retouch:{BAD_INPUT}",)),
    Case("extreme-aspect", document(samples.extreme_aspect(10, 1000), "strip.png", "image/png"),
         "too long and narrow", (f"upscale:{BAD_INPUT}",)),
    Case("animated-gif", document(samples.animated_gif(), "cat.gif", "image/gif"),
         "GIF images are not supported", (f"upscale:{BAD_INPUT}",)),
    Case("animated-webp", document(samples.animated_webp(), "wave.webp", "image/webp"),
         "Animated images are not supported", (f"upscale:{BAD_INPUT}",)),
    Case("animated-png", document(samples.animated_png(), "blink.png", "image/png"),
         "Animated images are not supported", (f"upscale:{BAD_INPUT}",)),
    Case("heic-document", document(samples.heic_like(), "IMG_0001.HEIC", "image/heic"),
         "Send it as a photo rather than a file", (f"upscale:{BAD_INPUT}",)),
    Case("svg-document", document(samples.svg(), "logo.svg", "image/svg+xml"),
         "SVG drawings are not supported", (f"upscale:{BAD_INPUT}",)),
    Case("tiff-document", document(samples.still_image("TIFF"), "scan.tiff", "image/tiff"),
         "TIFF images are not supported", (f"upscale:{BAD_INPUT}",)),
    # arguments
    Case("upscale-7", photo(PHOTO, "/upscale 7"), "must be 2 or 4", (f"upscale:{REFUSED}",)),
    Case("expand-minus-5-a", photo(PHOTO, "/expand -5 a"), "Give the padding in pixels", (f"expand:{REFUSED}",)),
    # a photo of known size gets presets to pick (tests/e2e/test_groups_and_presets.py); a file of unknown size
    Case("expand-without-numbers", document(PHOTO, "scan.jpg", "image/jpeg", "/expand"), "Give the padding in pixels",
         (f"expand:{REFUSED}",)),
    Case("expand-too-far", photo(PHOTO, "/expand 99999"), "at most 2048 pixels", (f"expand:{REFUSED}",)),
    Case("imagine-empty", text("/imagine"), "Describe what you want", (f"imagine:{REFUSED}",)),
    Case("imagine-only-whitespace", text("/imagine   \n  "), "Describe what you want", (f"imagine:{REFUSED}",)),
    Case("imagine-style-without-prompt", text("/imagine anime"), "Describe what you want", (f"imagine:{REFUSED}",)),
    Case("imagine-5000-characters", text("/imagine anime " + "a cat on a roof " * 313),
         "characters long; please keep it under 1000", (f"imagine:{REFUSED}",)),
    Case("imagine-unknown-style", text("/imagine cubism a cat"), "Pick a style"),
    Case("art-unknown-style", photo(PHOTO, "/art vangogh"), "I don't know the style 'vangogh'", (f"art:{REFUSED}",)),
    Case("art-description-too-long", photo(PHOTO, "/art oil " + "stormy sea " * 92), "under 1000 characters",
         (f"art:{REFUSED}",)),
    Case("headshot-unknown-style", photo(PHOTO, "/headshot wizard"), "I don't know the headshot style 'wizard'",
         (f"headshot:{REFUSED}",)),
    Case("headshot-count-99", photo(PHOTO, "/headshot business 99"), "The count must be between 1 and",
         (f"headshot:{REFUSED}",)),
    Case("removebg-unknown-mode", photo(PHOTO, "/removebg purple"), "Choose auto, body or object",
         (f"removebg:{REFUSED}",)),
    # a command without the image it needs
    Case("command-without-photo", text("/colorize"), NEEDS_PHOTO, (f"colorize:{REFUSED}",)),
    Case("command-replying-to-text", replying(text("look at this"), "/upscale 2"), NEEDS_PHOTO,
         (f"upscale:{REFUSED}",)),
    Case("command-replying-to-pdf", replying(document(PDF, "report.pdf", "application/pdf", None), "/upscale 2"),
         NOT_AN_IMAGE, (f"upscale:{REFUSED}",)),
    Case("command-replying-to-animated-sticker", replying_to_sticker(animated=True), NEEDS_PHOTO,
         (f"upscale:{REFUSED}",)),
    Case("voice-with-command-caption", voice_with("/upscale 2"), NEEDS_PHOTO, (f"upscale:{REFUSED}",)),
    # messages that are not requests
    Case("voice-without-caption", voice_with(None), "I work with photos"),
    Case("plain-text", text("make it prettier please"), "Send me a photo to edit"),
    Case("unknown-command-with-photo", photo(PHOTO, "/sharpen"), "I don't know that command"),
    Case("lone-slash", text("/"), "I don't know that command"),
    Case("non-latin-command", text("/увеличить 2"), "I don't know that command"),
    Case("other-bots-command-in-group", photo(PHOTO, "/upscale@other_bot 2"), None, where="group"),
    Case("unknown-command-for-us-in-group", photo(PHOTO, "/sharpen@aiart_test_bot"), "I don't know that command",
         where="group"),
    Case("channel-post-with-command", channel_post("/upscale 2"), "not in channels", where="channel"),
    Case("channel-post-photo", channel_post(photo_=PHOTO), None, where="channel"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_bad_input_gets_a_clear_reply_and_no_unfinished_job(case: Case, bot, telegram, settings):
    chat, user = WHERE[case.where]
    sent = case.act(telegram, chat, user)
    if case.reply is not None:
        answer = await reply_to(telegram, chat.id, sent["message_id"], case.reply)
        assert len(answer) <= 400  # short
    await wait_handled(telegram)  # a reply or a row, if the bot wrongly made one, is there by now
    if case.reply is None:
        assert bot_texts(telegram, chat.id) == []
    assert media(telegram, chat.id) == []
    assert row_summary(await settled_rows(settings, len(case.rows))) == list(case.rows)
    assert_tidy(telegram, chat.id)


# ---- odd but valid images: they must work ---------------------------------------------------------

RED, BLUE = (220, 30, 30), (30, 30, 220)
CORNERS = [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)]


def colours(image: Image.Image) -> list[str]:
    """The nearer of red and blue at the middle of each quarter of the image."""
    rgb = image.convert("RGB")
    def nearest(colour: tuple[int, int, int]) -> str:
        to_red, to_blue = (sum(abs(a - b) for a, b in zip(colour, ref, strict=True)) for ref in (RED, BLUE))
        return "red" if to_red < to_blue else "blue"
    return [nearest(rgb.getpixel((int(rgb.width * fx), int(rgb.height * fy)))) for fx, fy in CORNERS]


@dataclass(frozen=True)
class Odd:
    """A valid image in an unusual form, and the size its /upscale 2 result must have."""

    id: str
    act: Act
    size: tuple[int, int]
    upright_from: bytes | None = None  # the original, for checking the result shows what a viewer shows


EXIF_6, EXIF_8, EXIF_3 = (samples.exif_rotated_jpeg(orientation) for orientation in (6, 8, 3))

ODDITIES = [
    Odd("cmyk-jpeg", document(samples.cmyk_jpeg(64, 48), "print.jpg", "image/jpeg"), (128, 96)),
    Odd("16-bit-grey-png", document(samples.png16(96, 64), "scan16.png", "image/png"), (192, 128)),
    Odd("16-bit-colour-png", document(samples.png16(96, 64, color=True), "scan48.png", "image/png"), (192, 128)),
    Odd("png-named-jpg", document(png_bytes(80, 60), "photo.jpg", "image/jpeg"), (160, 120)),
    Odd("jpeg-without-extension", document(samples.jpeg(80, 60), "IMG_1234", "application/octet-stream"), (160, 120)),
    Odd("multi-picture-jpeg", document(samples.mpo(64, 48), "IMG_3D.jpg", "image/jpeg"), (128, 96)),
    Odd("static-sticker", replying_to_sticker(animated=False), (1024, 1024)),
    Odd("exif-rotated-6-document", document(EXIF_6, "portrait.jpg", "image/jpeg"), (320, 640), EXIF_6),
    Odd("exif-rotated-8-document", document(EXIF_8, "portrait.jpg", "image/jpeg"), (320, 640), EXIF_8),
    Odd("exif-rotated-3-photo", photo(EXIF_3, "/upscale 2"), (640, 320), EXIF_3),
]


async def test_odd_but_valid_images_succeed_upright(bot, telegram, settings):
    # one user and chat per image, all at once: each case waits on the service, not on the others
    users = [User(3000 + index, f"Odd{index}") for index in range(len(ODDITIES))]
    sent = [odd.act(telegram, private_chat(user), user) for odd, user in zip(ODDITIES, users, strict=True)]

    def undelivered() -> list[str]:
        return [odd.id for odd, user in zip(ODDITIES, users, strict=True) if not media(telegram, user.id)]
    try:
        await telegram.wait_for(lambda: not undelivered(), 30)
    except AssertionError:
        pytest.fail(f"no result for {undelivered()}; replies: "
                    f"{ {odd.id: [m.text for m in bot_texts(telegram, u.id)] for odd, u in zip(ODDITIES, users)} }")
    for odd, user, request in zip(ODDITIES, users, sent, strict=True):
        [result] = media(telegram, user.id)
        assert result.reply_to_message_id == request["message_id"], odd.id
        assert size_of(result.media) == odd.size, odd.id
        with Image.open(io.BytesIO(result.media)) as image:
            assert image.mode == "RGB", odd.id
            assert image.getexif().get(0x0112) in (None, 1), odd.id  # nothing left for a viewer to rotate again
            if odd.upright_from is not None:
                with Image.open(io.BytesIO(odd.upright_from)) as original:
                    assert colours(image) == colours(ImageOps.exif_transpose(original)), odd.id
    assert row_summary(await settled_rows(settings, len(ODDITIES))) == ["upscale:delivered:"] * len(ODDITIES)
    for user in users:
        await telegram.wait_for(lambda: not [m for m in bot_texts(telegram, user.id) if m.text.startswith("⏳")])
        assert_tidy(telegram, user.id)


# ---- two-image requests left half-done --------------------------------------------------------------

async def test_faceswap_with_one_photo_then_nothing(bot, telegram, settings):
    sent = telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(200, 200), caption="/faceswap")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "Now send the template photo")
    status = telegram.user_sends(ALICE_CHAT, ALICE, text="/status")
    await reply_to(telegram, ALICE_CHAT.id, status["message_id"], "No jobs in progress")
    assert await job_rows(settings) == []
    cancel = telegram.user_sends(ALICE_CHAT, ALICE, text="/cancel")
    await reply_to(telegram, ALICE_CHAT.id, cancel["message_id"], "no longer waiting for photos")
    # the next photo is a new request, not the template of the abandoned swap
    await menu_for(telegram, ALICE_CHAT, ALICE, samples.jpeg(120, 90))
    assert await job_rows(settings) == []


async def test_faceswap_then_non_image_then_text_keeps_waiting(bot, telegram, settings):
    start = telegram.user_sends(ALICE_CHAT, ALICE, text="/faceswap")
    await reply_to(telegram, ALICE_CHAT.id, start["message_id"], "Send the face photo now")
    pdf = telegram.user_sends(ALICE_CHAT, ALICE, document=(PDF, "face.pdf", "application/pdf"))
    answer = await reply_to(telegram, ALICE_CHAT.id, pdf["message_id"], NOT_AN_IMAGE)
    assert "still waiting for the face photo" in answer
    chat = telegram.user_sends(ALICE_CHAT, ALICE, text="here it comes")
    await reply_to(telegram, ALICE_CHAT.id, chat["message_id"], "still waiting for the face photo")
    assert await job_rows(settings) == []
    face = telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(200, 200))
    await reply_to(telegram, ALICE_CHAT.id, face["message_id"], "Now send the template photo")
    telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(240, 160))
    [result] = await wait_media(telegram, ALICE_CHAT.id)
    assert size_of(result.media) == (240, 160)
    assert row_summary(await settled_rows(settings, 1)) == ["faceswap:delivered:"]


async def test_faceswap_request_times_out(bot, telegram, settings, monkeypatch):
    monkeypatch.setattr(pending, "PENDING_FOR", timedelta(seconds=0.3))
    sent = telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(200, 200), caption="/faceswap")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "Now send the template photo")
    await asyncio.sleep(0.5)
    late = telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(240, 160))
    answer = await reply_to(telegram, ALICE_CHAT.id, late["message_id"], "face swap request expired")
    assert "Send /faceswap to start again" in answer and "What should I do with this photo?" in answer
    assert telegram.sent(ALICE_CHAT.id)[-1].reply_markup is not None  # the late photo gets the menu
    assert await job_rows(settings) == []


# ---- buttons from old or foreign keyboards ------------------------------------------------------------

@pytest.mark.parametrize("stale", ["unknown-data", "retired-operation", "photo-deleted", "inaccessible-message"])
async def test_stale_menu_buttons_are_answered_with_an_alert(stale, bot, telegram, settings):
    _, menu = await menu_for(telegram, ALICE_CHAT, ALICE, samples.jpeg(120, 90))
    message = telegram.message(ALICE_CHAT.id, menu.message_id)
    data = {"unknown-data": "v1|upscale|2", "retired-operation": "op:sharpen"}.get(stale, "op:upscale:2")
    if stale == "photo-deleted":
        message.pop("reply_to_message")  # Telegram leaves the reply out once the photo is deleted
    if stale == "inaccessible-message":
        message = {"message_id": menu.message_id, "chat": ALICE_CHAT.to_dict(), "date": 0}
    answer = await answer_of(telegram, raw_press(telegram, ALICE_CHAT, ALICE, message, data))
    assert answer == {"text": "This menu has expired. Send your photo or command again.", "show_alert": True,
                      "url": None}
    assert await job_rows(settings) == []


async def test_someone_elses_style_picker_in_a_group(bot, telegram, settings):
    sent = telegram.user_sends(GROUP, BOB, photo=samples.jpeg(200, 200), caption="/headshot")
    await reply_to(telegram, GROUP.id, sent["message_id"], "Pick a style")
    picker = next(m for m in telegram.sent(GROUP.id) if m.reply_markup)
    query = telegram.user_presses(GROUP, ALICE, picker.message_id, "st:headshot:business")
    answer = await answer_of(telegram, query)
    assert answer["text"] == "This menu belongs to someone else's photo." and answer["show_alert"]
    assert telegram.message(GROUP.id, picker.message_id)["reply_markup"]  # still there for Bob
    assert await job_rows(settings) == []


async def test_a_double_tap_on_a_menu_makes_one_job(bot, telegram, settings):
    _, menu = await menu_for(telegram, ALICE_CHAT, ALICE, samples.jpeg(120, 90))
    as_seen = telegram.message(ALICE_CHAT.id, menu.message_id)  # the client's copy, keyboard included
    first = telegram.user_presses(ALICE_CHAT, ALICE, menu.message_id, "op:upscale:2")
    second = raw_press(telegram, ALICE_CHAT, ALICE, as_seen, "op:upscale:2")
    answers = [await answer_of(telegram, query) for query in (first, second)]
    # whichever press is handled first runs; the other is told why nothing more happens
    refused = [a for a in answers if a["text"] and a["text"].startswith("You already chose from this menu")]
    assert len(refused) == 1 and refused[0]["show_alert"]
    [result] = await wait_media(telegram, ALICE_CHAT.id)
    assert size_of(result.media) == (240, 180)
    # both presses are answered, so handled: one job, delivered once, and nothing left to deliver
    assert row_summary(await settled_rows(settings, 1)) == ["upscale:delivered:"]
    assert len(media(telegram, ALICE_CHAT.id)) == 1


async def test_forged_button_argument_is_refused(bot, telegram, settings):
    _, menu = await menu_for(telegram, ALICE_CHAT, ALICE, samples.jpeg(120, 90))
    message = telegram.message(ALICE_CHAT.id, menu.message_id)
    await answer_of(telegram, raw_press(telegram, ALICE_CHAT, ALICE, message, "op:upscale:7"))
    await telegram.wait_for(lambda: "must be 2 or 4" in (telegram.message(ALICE_CHAT.id, menu.message_id)["text"]))
    assert row_summary(await settled_rows(settings, 1)) == [f"upscale:{REFUSED}"]


# ---- edits ------------------------------------------------------------------------------------------

async def test_edited_command_is_not_run_again(bot, telegram, settings):
    sent = telegram.user_sends(ALICE_CHAT, ALICE, text="/help")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "Commands:")
    telegram.user_edits(ALICE_CHAT, ALICE, sent["message_id"], text="/upscale 4")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "I don't act on edited messages")
    assert await job_rows(settings) == []


async def test_edited_caption_fixing_a_typo_asks_for_a_new_message(bot, telegram, settings):
    sent = telegram.user_sends(ALICE_CHAT, ALICE, photo=samples.jpeg(100, 80), caption="/upscale 7")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "must be 2 or 4")
    telegram.user_edits(ALICE_CHAT, ALICE, sent["message_id"], caption="/upscale 2")
    await reply_to(telegram, ALICE_CHAT.id, sent["message_id"], "Send the command again as a new message")
    await wait_handled(telegram)
    assert media(telegram, ALICE_CHAT.id) == []
    assert row_summary(await settled_rows(settings, 1)) == [f"upscale:{REFUSED}"]


# ---- the documentation --------------------------------------------------------------------------------

SCENARIOS = [
    "faceswap-one-photo-then-nothing", "faceswap-then-non-image", "faceswap-timed-out",
    "stale-unknown-data", "stale-retired-operation", "stale-photo-deleted", "stale-inaccessible-message",
    "someone-elses-menu-in-group", "double-tap", "forged-button-argument", "edited-command", "edited-caption",
]


def test_every_case_is_in_the_documented_table():
    table = DOCS.read_text(encoding="utf-8")
    ids = [case.id for case in CASES] + [odd.id for odd in ODDITIES] + SCENARIOS
    assert len(ids) >= 30
    missing = [case_id for case_id in ids if f"| `{case_id}` |" not in table]
    assert missing == []
