"""Videos end to end: a photo animated, two frames, a description, against the fake Bot API and the sandbox."""

from __future__ import annotations

import asyncio
import io
import json
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import av
import pytest
from PIL import Image, ImageChops, ImageStat
from sqlalchemy import select

from bot.config import Settings
from bot.credits import CreditPolicy, CreditService, Pack
from bot.store import create_engine, session_factory
from bot.store.models import Job
from bot.tg import texts as bot_texts
from bot.tg.handlers import live_photos as live_photo_handlers
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import ALICE, BOB, POLL_TIME_SCALE
from tests.e2e.helpers import job_states, media, settled, wait_media, wait_text
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import TgFaults, User, private_chat
from tests.harness import bot_settings, settings_of

#: a video model's usual time in these tests: the sandbox's tasks take tenths of a second, not minutes
TYPICAL_SECONDS = 2


@pytest.fixture
def settings(request, tmp_path: Path, telegram: FakeTelegram, sandbox, sqlite_template: Path) -> Settings:
    """The e2e settings with the shipped catalogue, its video models' usual time shortened for the sandbox (and
    the video section changed by a test's indirect parameter, a function of it, which may return the operator's
    price file)."""
    catalogue = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8"))
    for model in catalogue["video"]["styles"].values():
        model["typical_seconds"] = TYPICAL_SECONDS
    prices = None
    if (change := getattr(request, "param", None)) is not None:
        prices = change(catalogue["video"])
    styles = tmp_path / "styles.json"
    styles.write_text(json.dumps(catalogue), encoding="utf-8")
    database = migrated_sqlite(sqlite_template, tmp_path / "bot.db")
    extra = {}
    if prices is not None:
        extra["credit_prices_file"] = tmp_path / "prices.json"
        extra["credit_prices_file"].write_text(json.dumps(prices), encoding="utf-8")
    return settings_of(bot_settings(telegram, sandbox, database, worker_id="e2e-worker", log_level="DEBUG",
                                    poll_time_scale=POLL_TIME_SCALE, styles_file=styles, **extra))


async def buy(settings: Settings, user_id: int, credits: int) -> CreditService:
    """The user bought credits (free daily credits do not pay for videos)."""
    engine = create_engine(settings.database_url)
    try:
        service = CreditService(session_factory(engine), CreditPolicy({}))
        await service.purchase(user_id, Pack(credits, 50), f"stxVideo{user_id}x{credits}")
    finally:
        await engine.dispose()


async def balance(settings: Settings, user_id: int) -> int:
    engine = create_engine(settings.database_url)
    try:
        service = CreditService(session_factory(engine), CreditPolicy({}))
        return (await service.balance(user_id, chat_id=user_id, chat_type="private")).credits
    finally:
        await engine.dispose()


async def jobs(settings: Settings) -> list[SimpleNamespace]:
    """The stored jobs, oldest first."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.__table__).order_by(Job.id))).mappings()
            return [SimpleNamespace(**row) for row in rows]
    finally:
        await engine.dispose()


def decoded(data: bytes) -> tuple[str, tuple[int, int], list[Image.Image], float]:
    """Codec, size, frames and seconds of an MP4."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frames = [frame.to_image() for frame in container.decode(stream)]
        return stream.codec_context.name, (stream.width, stream.height), frames, container.duration / 1e6


def difference(a: Image.Image, b: Image.Image) -> float:
    return sum(ImageStat.Stat(ImageChops.difference(a.convert("RGB"), b.convert("RGB"))).mean) / 3


def picture(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    """A photo with a bright block off its middle, so a frame of it is told apart from a flat colour."""
    image = Image.new("RGB", (width, height), colour)
    image.paste((250, 250, 250), (width // 8, height // 8, width // 3, height // 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=95)
    return buffer.getvalue()


def send_video_calls(telegram: FakeTelegram) -> list:
    return [call for call in telegram.calls if call.method == "sendVideo" and call.status in (None, 200)]


async def test_a_photo_animated_arrives_as_a_video_of_its_shape_whose_first_frame_is_the_photo(
        bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    photo = picture(480, 320, (30, 90, 200))
    request = telegram.user_sends(alice_chat, ALICE, photo=photo, caption="/animate seedance she smiles")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.media_kind == "video"
    assert result.reply_to_message_id == request["message_id"]
    assert result.caption.startswith("✅ Animate (Seedance 2.0, 5 s): she smiles")
    codec, size, frames, seconds = decoded(result.media)
    assert codec == "h264" and seconds == pytest.approx(5, abs=0.3)
    assert size[0] / size[1] == pytest.approx(480 / 320, rel=0.02)
    assert difference(frames[0], Image.open(io.BytesIO(photo)).resize(size)) < 8
    [call] = send_video_calls(telegram)
    assert (int(call.params["width"]), int(call.params["height"]), int(call.params["duration"])) == (*size, 5)
    assert call.params["supports_streaming"] in (True, "true")
    assert "thumbnail" in call.params or "thumbnail" in call.files
    # 5 seconds at the default 2 credits a second, from bought credits; the task's own cost is kept
    assert await balance(settings, ALICE.id) == 90
    async def delivered() -> tuple[str, int, int | None]:
        [job] = await jobs(settings)
        return job.state, job.credits, job.service_cost

    assert await settled(delivered, ("delivered", 10, 50)) == ("delivered", 10, 50)
    [job] = await jobs(settings)
    # the thumbnail Telegram keeps is the Mini App's poster: the bot may not download the video itself
    sent = telegram.message(alice_chat.id, result.message_id)["video"]
    assert job.result_files == [{"id": sent["file_id"], "kind": "video", "thumb": sent["thumbnail"]["file_id"]}]


async def test_two_frames_make_a_video_from_the_first_to_the_second(bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    telegram.user_sends(alice_chat, ALICE, photo=start, caption="/animate", media_group_id="frames")
    telegram.user_sends(alice_chat, ALICE, photo=end, media_group_id="frames")
    picker = await wait_picker(telegram, alice_chat.id)
    # the models that take two frames, each with its price, before anything is spent
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 5 s · 10 credits", "Seedance 2.0 · 10 s · 20 credits",
                                              "Vidu Q2 Turbo · 4 s · 8 credits", "Vidu Q2 Turbo · 8 s · 16 credits"]
    assert await balance(settings, ALICE.id) == 100
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Seedance 2.0 · 5 s")))
    [result] = await wait_media(telegram, alice_chat.id)
    _, size, frames, _ = decoded(result.media)
    assert difference(frames[0], Image.open(io.BytesIO(start)).resize(size)) < 8
    assert difference(frames[-1], Image.open(io.BytesIO(end)).resize(size)) < 8
    posted = [r.path for r in sandbox.received if r.method == "POST" and r.path.startswith("/v1/aiart/")]
    assert posted == ["/v1/aiart/startend2video/doubao-seedance-2-0-260128"]


async def test_a_photo_replying_to_a_photo_makes_a_video_from_the_first_to_the_second(bot, telegram, alice_chat,
                                                                                      settings):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    first = telegram.user_sends(alice_chat, ALICE, photo=start)
    telegram.user_sends(alice_chat, ALICE, photo=end, caption="/animate", reply_to=first["message_id"])
    picker = await wait_picker(telegram, alice_chat.id)
    # two frames: only the models that take two frames, each with its price, before anything is spent
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 5 s · 10 credits", "Seedance 2.0 · 10 s · 20 credits",
                                              "Vidu Q2 Turbo · 4 s · 8 credits", "Vidu Q2 Turbo · 8 s · 16 credits"]
    # a forged button naming a model that takes one photo only is refused: no job, no charge
    telegram._state.user_press(alice_chat, ALICE, picker.message_id, "ar:animate:kling 5s", crafted=True)
    refusal = await wait_text(telegram, alice_chat.id, "cannot make")
    assert "Kling v3" in refusal and "two frames" in refusal
    assert media(telegram, alice_chat.id) == [] and await balance(settings, ALICE.id) == 100
    assert [job for job in await jobs(settings) if not job.refused] == []
    # the picker's own button (a second picker: the refusal took the first one's place)
    telegram.user_sends(alice_chat, ALICE, photo=end, caption="/animate", reply_to=first["message_id"])
    picker = await wait_picker(telegram, alice_chat.id, after=picker.message_id)
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Vidu Q2 Turbo · 4 s")))
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.caption.startswith("✅ Animate (Vidu Q2 Turbo, 4 s)")
    assert await settled(lambda: balance(settings, ALICE.id), 92) == 92
    _, size, frames, _ = decoded(result.media)
    assert difference(frames[0], Image.open(io.BytesIO(start)).resize(size)) < 8
    assert difference(frames[-1], Image.open(io.BytesIO(end)).resize(size)) < 8


async def test_a_description_becomes_a_video_at_the_asked_ratio(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video kling 9:16 a paper boat on a rainy street")
    [result] = await wait_media(telegram, alice_chat.id)
    _, (width, height), _, seconds = decoded(result.media)
    assert width / height == pytest.approx(9 / 16, rel=0.02) and seconds == pytest.approx(5, abs=0.3)
    assert await balance(settings, ALICE.id) == 90


async def test_free_daily_credits_do_not_pay_for_a_video(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, text="/video seedance a paper boat")
    await wait_text(telegram, alice_chat.id, "credits")
    assert media(telegram, alice_chat.id) == [] and await jobs(settings) == []


async def test_a_failed_video_gives_the_credits_back(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video seedance sandbox-fail a paper boat")
    await wait_text(telegram, alice_chat.id, "generation failed")
    assert await settled(lambda: balance(settings, ALICE.id), 100) == 100
    [job] = await jobs(settings)
    assert job.state == "failed"


async def test_a_video_too_large_for_telegram_arrives_as_a_link(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video seedance a long storm sandbox-size-60mb")
    text = await wait_text(telegram, alice_chat.id, "larger than Telegram takes", timeout=60)
    assert "/files/" in text and ".mp4" in text
    assert send_video_calls(telegram) == [] and media(telegram, alice_chat.id) == []

    async def state() -> tuple[str, int]:
        [job] = await jobs(settings)
        return job.state, job.credits

    assert await settled(state, ("delivered", 10)) == ("delivered", 10)



async def wait_picker(telegram: FakeTelegram, chat_id: int, after: int = 0):
    """The first model-and-length picker shown in a chat after message `after`."""
    def pickers() -> list:
        return [m for m in telegram.sent(chat_id)
                if m.message_id > after and m.text and "Pick a model" in m.text and m.reply_markup]
    await telegram.wait_for(lambda: bool(pickers()))
    return pickers()[0]


def buttons(message) -> dict[str, str]:
    """callback data -> label of a message's buttons."""
    return {button["callback_data"]: button["text"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button}


async def test_a_picture_result_offers_animate_and_a_video_only_video_follow_ups(bot, telegram, alice_chat,
                                                                                 settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/colorize")
    [colorized] = await wait_media(telegram, alice_chat.id)
    animate = next(data for data in buttons(colorized) if data.endswith(":n:animate:"))
    telegram.user_presses(alice_chat, ALICE, colorized.message_id, animate)
    picker = await wait_picker(telegram, alice_chat.id, colorized.message_id)
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Seedance 2.0 · 5 s")))
    videos = await wait_media(telegram, alice_chat.id, 2)
    video = videos[1]
    assert video.media_kind == "video" and video.reply_to_message_id == colorized.message_id
    offered = buttons(video)
    # again, longer, another model and, a photo's short video, a live photo: nothing that works on a picture
    assert sorted(data.rsplit(":", 1)[1] for data in offered) == ["a", "l", "m", "p"]
    assert offered[next(d for d in offered if d.endswith(":l"))] == "⏩ Longer: 10 s · 20 credits"
    telegram.user_presses(alice_chat, ALICE, video.message_id, next(d for d in offered if d.endswith(":l")))
    longer = (await wait_media(telegram, alice_chat.id, 3))[2]
    assert decoded(longer.media)[3] == pytest.approx(10, abs=0.3)
    # 10 credits for the first video, 20 for the longer one (2 a second), the colorized picture from free credits
    assert await settled(lambda: balance(settings, ALICE.id), 70) == 70


def kling_at_three_a_second(video: dict) -> dict:
    """An operator's price file: Kling costs 3 credits a second, other models the default 2."""
    return {"video_seconds": {"models": {"kling": 3}}}


@pytest.mark.parametrize("settings", [kling_at_three_a_second], indirect=True)
async def test_again_and_longer_under_a_video_say_the_price_they_then_charge(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate kling 5s")
    [video] = await wait_media(telegram, alice_chat.id)
    offered = buttons(video)
    again, longer = (next(data for data in offered if data.endswith(suffix)) for suffix in (":a", ":l"))
    # both spend at once: the same 5 s, or 10 s, of Kling at the operator's 3 credits a second
    assert (offered[again], offered[longer]) == ("🔁 Again · 15 credits", "⏩ Longer: 10 s · 30 credits")
    assert await settled(lambda: balance(settings, ALICE.id), 85) == 85
    telegram.user_presses(alice_chat, ALICE, video.message_id, again)
    await wait_media(telegram, alice_chat.id, 2)
    assert await settled(lambda: balance(settings, ALICE.id), 70) == 70
    telegram.user_presses(alice_chat, ALICE, video.message_id, longer)
    third = (await wait_media(telegram, alice_chat.id, 3))[2]
    assert third.caption.startswith("✅ Animate (Kling v3, 10 s)")
    assert await settled(lambda: balance(settings, ALICE.id), 40) == 40
    assert [job.credits for job in await jobs(settings)] == [15, 15, 30]


async def test_animate_under_a_picture_shows_each_choice_with_its_price_and_spends_on_the_press(
        bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/colorize")
    [colorized] = await wait_media(telegram, alice_chat.id)
    animate = next(data for data, label in buttons(colorized).items() if data.endswith(":n:animate:"))
    assert buttons(colorized)[animate] == "Animate"  # several choices: their prices are on the picker
    telegram.user_presses(alice_chat, ALICE, colorized.message_id, animate)
    picker = await wait_picker(telegram, alice_chat.id, colorized.message_id)
    assert picker.reply_to_message_id == colorized.message_id
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 5 s · 10 credits", "Seedance 2.0 · 10 s · 20 credits",
                                              "Kling v3 · 5 s · 10 credits", "Kling v3 · 10 s · 20 credits"]
    # nothing is queued nor spent by showing the choices
    assert posted_videos(sandbox) == [] and [job.operation for job in await jobs(settings)] == ["colorize"]
    assert await balance(settings, ALICE.id) == 100
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 10 s")))
    video = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert video.caption.startswith("✅ Animate (Kling v3, 10 s)") and video.reply_to_message_id == colorized.message_id
    assert posted_videos(sandbox) == ["/v1/aiart/img2video/kling-v3"]
    # a video of the colorized picture, not of the photo sent
    _, size, frames, seconds = decoded(video.media)
    assert seconds == pytest.approx(10, abs=0.3)
    assert difference(frames[0], Image.open(io.BytesIO(colorized.media)).resize(size)) < 8
    assert await settled(lambda: balance(settings, ALICE.id), 80) == 80


async def test_animate_under_an_album_asks_which_picture_then_the_priced_choice(bot, telegram, alice_chat, settings,
                                                                                sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 400, (30, 90, 200)), caption="/headshot business 2")
    album = await wait_media(telegram, alice_chat.id, 2)

    await telegram.wait_for(lambda: any(m.text == bot_texts.FU_PROMPT for m in telegram.sent(alice_chat.id)))
    assert await settled(lambda: job_states(settings), [("headshot", "delivered")]) == [("headshot", "delivered")]
    keys = next(m for m in telegram.sent(alice_chat.id) if m.text == bot_texts.FU_PROMPT)

    def now():  # the buttons' message as it is now: its text and buttons change with each answer
        return next(m for m in telegram.sent(alice_chat.id) if m.message_id == keys.message_id)

    telegram.user_presses(alice_chat, ALICE, keys.message_id, next(d for d in buttons(keys) if d.endswith(":n:animate:")))
    await telegram.wait_for(lambda: now().text.startswith("Which"))
    telegram.user_presses(alice_chat, ALICE, keys.message_id, next(d for d in buttons(now()) if d.endswith(":1")))
    # the choice comes in place of the question, for the picture picked
    await telegram.wait_for(lambda: "Pick a model" in now().text)
    picker = now()
    assert "Kling v3 · 5 s · 10 credits" in buttons(picker).values()
    before = await balance(settings, ALICE.id)
    assert posted_videos(sandbox) == []
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 5 s")))
    video = (await wait_media(telegram, alice_chat.id, 3))[2]
    assert video.caption.startswith("✅ Animate (Kling v3, 5 s)")
    _, size, frames, _ = decoded(video.media)
    assert difference(frames[0], Image.open(io.BytesIO(album[1].media)).resize(size)) < 8
    assert await settled(lambda: balance(settings, ALICE.id), before - 10) == before - 10


async def test_in_a_group_the_animate_choice_is_the_owners_and_survives_a_restart(bot, telegram, group_chat, settings,
                                                                                  sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.members.make_admin(group_chat, ALICE)
    telegram.user_sends(group_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/colorize")
    [colorized] = await wait_media(telegram, group_chat.id)
    telegram.user_presses(group_chat, ALICE, colorized.message_id,
                          next(data for data in buttons(colorized) if data.endswith(":n:animate:")))
    picker = await wait_picker(telegram, group_chat.id, colorized.message_id)
    kling = next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 5 s"))
    # the choice follows the result's rules: someone else may not spend on it
    query = telegram.user_presses(group_chat, BOB, picker.message_id, kling)
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    assert telegram.callback_answers[query]["text"] == bot_texts.FU_NOT_YOURS
    assert posted_videos(sandbox) == []
    # it names the stored job, nothing kept in memory: it works after a restart
    await bot.stop()
    await bot.start()
    telegram.user_presses(group_chat, ALICE, picker.message_id, kling)
    video = (await wait_media(telegram, group_chat.id, 2))[1]
    assert video.caption.startswith("✅ Animate (Kling v3, 5 s)") and video.reply_to_message_id == colorized.message_id
    assert posted_videos(sandbox) == ["/v1/aiart/img2video/kling-v3"]


def one_photo_choice(video: dict) -> None:
    """An operator's catalogue: only Kling at 5 s animates one photo."""
    del video["styles"]["seedance"]
    video["default"] = "kling"
    video["styles"]["kling"]["durations"] = [5]


@pytest.mark.parametrize("settings", [one_photo_choice], indirect=True)
async def test_animate_with_one_choice_is_one_tap_whose_label_says_its_price(bot, telegram, alice_chat, settings,
                                                                             sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/colorize")
    [colorized] = await wait_media(telegram, alice_chat.id)
    animate = next(data for data in buttons(colorized) if data.endswith(":n:animate:"))
    assert buttons(colorized)[animate] == "Animate · 10 credits"
    telegram.user_presses(alice_chat, ALICE, colorized.message_id, animate)
    video = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert video.caption.startswith("✅ Animate (Kling v3, 5 s)") and video.reply_to_message_id == colorized.message_id
    assert posted_videos(sandbox) == ["/v1/aiart/img2video/kling-v3"]
    assert not [m for m in telegram.sent(alice_chat.id) if m.text and "Pick a model" in m.text]
    assert await settled(lambda: balance(settings, ALICE.id), 90) == 90


async def test_another_model_shows_each_choice_with_its_price_before_spending(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.user_presses(alice_chat, ALICE, video.message_id, next(d for d in buttons(video) if d.endswith(":m")))
    await wait_text(telegram, alice_chat.id, "Pick a model and length")
    picker = next(m for m in telegram.sent(alice_chat.id) if m.text and "Pick a model" in m.text)
    labels = list(buttons(picker).values())
    assert labels == ["Seedance 2.0 · 10 s · 20 credits", "Kling v3 · 5 s · 10 credits", "Kling v3 · 10 s · 20 credits"]
    assert await balance(settings, ALICE.id) == 90  # nothing spent by showing the choices
    kling = next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 5 s"))
    telegram.user_presses(alice_chat, ALICE, picker.message_id, kling)
    second = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert second.caption.startswith("✅ Animate (Kling v3, 5 s)") and second.reply_to_message_id == video.message_id


async def test_the_photo_menu_offers_models_and_lengths_with_their_prices(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)))

    def animate_menu():
        return next((m for m in telegram.sent(alice_chat.id) if any(d.startswith("op:animate") for d in buttons(m))),
                    None)

    await telegram.wait_for(lambda: animate_menu() is not None)
    menu = animate_menu()
    telegram.user_presses(alice_chat, ALICE, menu.message_id, next(d for d in buttons(menu) if d.startswith("op:animate")))
    await wait_text(telegram, alice_chat.id, "Pick a model and length")
    picker = next(m for m in telegram.sent(alice_chat.id) if m.text and "Pick a model" in m.text)
    assert "Kling v3 · 10 s · 20 credits" in buttons(picker).values()
    choice = next(data for data, label in buttons(picker).items() if label == "Kling v3 · 10 s · 20 credits")
    telegram.user_presses(alice_chat, ALICE, picker.message_id, choice)
    [video] = await wait_media(telegram, alice_chat.id)
    assert video.caption.startswith("✅ Animate (Kling v3, 10 s)")
    assert await settled(lambda: balance(settings, ALICE.id), 80) == 80


async def test_history_resends_a_video_as_a_video(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video seedance a paper boat")
    [video] = await wait_media(telegram, alice_chat.id)

    async def delivered() -> list[str]:
        return [job.state for job in await jobs(settings)]

    assert await settled(delivered, ["delivered"]) == ["delivered"]
    asked = telegram.user_sends(alice_chat, ALICE, text="/history")
    await telegram.wait_for(lambda: any(m.reply_to_message_id == asked["message_id"] for m in telegram.sent(alice_chat.id)))
    listing = next(m for m in telegram.sent(alice_chat.id) if m.reply_to_message_id == asked["message_id"])
    telegram.user_presses(alice_chat, ALICE, listing.message_id, next(iter(buttons(listing))))
    resent = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert resent.media_kind == "video" and resent.media == video.media


def posted_videos(sandbox) -> list[str]:
    """The video endpoints the bot POSTed to, in order."""
    return [r.path for r in sandbox.received if r.method == "POST" and r.path.startswith("/v1/aiart/")
            and "video" in r.path]


async def test_another_model_for_two_frames_offers_only_two_frame_models_and_charges_the_one_used(
        bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    telegram.user_sends(alice_chat, ALICE, photo=start, caption="/animate seedance 5s", media_group_id="frames")
    telegram.user_sends(alice_chat, ALICE, photo=end, media_group_id="frames")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.user_presses(alice_chat, ALICE, video.message_id, next(d for d in buttons(video) if d.endswith(":m")))
    await wait_text(telegram, alice_chat.id, "Pick a model and length")
    picker = next(m for m in telegram.sent(alice_chat.id) if m.text and "Pick a model" in m.text)
    # Kling v3 takes one photo only: it is not offered for two frames
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 10 s · 20 credits", "Vidu Q2 Turbo · 4 s · 8 credits",
                                              "Vidu Q2 Turbo · 8 s · 16 credits"]
    vidu = next(data for data, label in buttons(picker).items() if label.startswith("Vidu Q2 Turbo · 4 s"))
    telegram.user_presses(alice_chat, ALICE, picker.message_id, vidu)
    second = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert second.caption.startswith("✅ Animate (Vidu Q2 Turbo, 4 s)")
    assert posted_videos(sandbox) == ["/v1/aiart/startend2video/doubao-seedance-2-0-260128",
                                      "/v1/aiart/startend2video/viduq2-turbo"]
    # 10 credits for the first, 8 for Vidu's 4 seconds: the price of the model that made it
    assert await settled(lambda: balance(settings, ALICE.id), 82) == 82


async def test_a_model_that_cannot_take_two_frames_is_refused_before_anything_is_spent(
        bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    telegram.user_sends(alice_chat, ALICE, photo=start, caption="/animate kling 5s", media_group_id="frames")
    telegram.user_sends(alice_chat, ALICE, photo=end, media_group_id="frames")
    text = await wait_text(telegram, alice_chat.id, "Kling v3", timeout=30)
    assert "two frames" in text and "Seedance 2.0" in text and "Vidu Q2 Turbo" in text
    assert media(telegram, alice_chat.id) == [] and posted_videos(sandbox) == []
    assert await balance(settings, ALICE.id) == 100
    assert [job.state for job in await jobs(settings) if not job.refused] == []


#: a description longer than a button's data can carry with the model and length
LONG_MOTION = "she smiles slowly as the wind moves her hair and the evening light changes"


async def test_a_typed_animate_shows_the_priced_choice_before_spending(bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption=f"/animate {LONG_MOTION}")
    picker = await wait_picker(telegram, alice_chat.id)
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 5 s · 10 credits", "Seedance 2.0 · 10 s · 20 credits",
                                              "Kling v3 · 5 s · 10 credits", "Kling v3 · 10 s · 20 credits"]
    assert await balance(settings, ALICE.id) == 100 and posted_videos(sandbox) == []  # nothing spent yet
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 10 s")))
    [video] = await wait_media(telegram, alice_chat.id)
    assert video.caption.startswith(f"✅ Animate (Kling v3, 10 s): {LONG_MOTION}")
    assert posted_videos(sandbox) == ["/v1/aiart/img2video/kling-v3"]
    assert await settled(lambda: balance(settings, ALICE.id), 80) == 80


async def test_a_typed_video_shows_the_models_of_a_description(bot, telegram, alice_chat, settings, sandbox):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video 9:16 a paper boat on a rainy street")
    picker = await wait_picker(telegram, alice_chat.id)
    assert list(buttons(picker).values()) == ["Seedance 2.0 · 5 s · 10 credits", "Seedance 2.0 · 10 s · 20 credits",
                                              "Kling v3 · 5 s · 10 credits", "Kling v3 · 10 s · 20 credits"]
    telegram.user_presses(alice_chat, ALICE, picker.message_id,
                          next(data for data, label in buttons(picker).items() if label.startswith("Kling v3 · 5 s")))
    [video] = await wait_media(telegram, alice_chat.id)
    assert video.caption.startswith("✅ Video (Kling v3, 5 s): a paper boat on a rainy street")
    _, (width, height), _, _ = decoded(video.media)
    assert width / height == pytest.approx(9 / 16, rel=0.02)
    assert posted_videos(sandbox) == ["/v1/aiart/text2video/kling-v3"]


def one_two_frame_choice(video: dict) -> None:
    """An operator's catalogue: Kling (one photo) is the default, and only Vidu at 4 s takes two frames."""
    del video["styles"]["seedance"]
    video["default"] = "kling"
    video["styles"]["vidu"]["durations"] = [4]


@pytest.mark.parametrize("settings", [one_two_frame_choice], indirect=True)
async def test_the_only_model_and_length_for_two_frames_starts_at_once_at_its_price(bot, telegram, alice_chat,
                                                                                    settings, sandbox):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    telegram.user_sends(alice_chat, ALICE, photo=start, caption="/animate she waves", media_group_id="frames")
    telegram.user_sends(alice_chat, ALICE, photo=end, media_group_id="frames")
    [video] = await wait_media(telegram, alice_chat.id)
    assert video.caption.startswith("✅ Animate (Vidu Q2 Turbo, 4 s): she waves")
    assert posted_videos(sandbox) == ["/v1/aiart/startend2video/viduq2-turbo"]
    assert await settled(lambda: balance(settings, ALICE.id), 92) == 92


async def test_a_stale_another_model_button_naming_a_one_photo_model_is_refused(bot, telegram, alice_chat, settings,
                                                                                sandbox):
    await buy(settings, ALICE.id, 100)
    start, end = picture(320, 240, (200, 30, 30)), picture(320, 240, (30, 30, 200))
    telegram.user_sends(alice_chat, ALICE, photo=start, caption="/animate seedance 5s", media_group_id="frames")
    telegram.user_sends(alice_chat, ALICE, photo=end, media_group_id="frames")
    [video] = await wait_media(telegram, alice_chat.id)
    job_id = next(d for d in buttons(video) if d.endswith(":m")).split(":")[1]
    # a button from before the choices were those of the job's endpoint: it names Kling v3 and 5 seconds
    query = telegram._state.user_press(alice_chat, ALICE, video.message_id, f"fu:{job_id}:m:kling:5", crafted=True)
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    answer = telegram.callback_answers[query]
    assert "Kling v3 cannot make a video from two frames" in answer["text"] and answer.get("show_alert")
    # the choices offered now name their model and length: Vidu at 4 s makes Vidu's video at Vidu's price
    picked = telegram._state.user_press(alice_chat, ALICE, video.message_id, f"fu:{job_id}:m:vidu:4", crafted=True)
    second = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert second.caption.startswith("✅ Animate (Vidu Q2 Turbo, 4 s)") and picked in telegram.callback_answers
    assert posted_videos(sandbox)[-1] == "/v1/aiart/startend2video/viduq2-turbo"
    assert await settled(lambda: balance(settings, ALICE.id), 82) == 82


def live_photos(telegram: FakeTelegram, chat_id: int) -> list:
    return [m for m in telegram.sent(chat_id) if m.media_kind == "live_photo"]


async def test_an_animated_photo_comes_again_as_a_live_photo_of_its_first_frame_for_nothing(
        bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    photo = picture(320, 240, (30, 90, 200))
    telegram.user_sends(alice_chat, ALICE, photo=photo, caption="/animate seedance she smiles")
    [video] = await wait_media(telegram, alice_chat.id)
    live = next(data for data, label in buttons(video).items() if label == "📸 As a live photo")
    assert await settled(lambda: balance(settings, ALICE.id), 90) == 90
    telegram.user_presses(alice_chat, ALICE, video.message_id, live)
    await telegram.wait_for(lambda: bool(live_photos(telegram, alice_chat.id)))
    [sent] = live_photos(telegram, alice_chat.id)
    assert sent.reply_to_message_id == video.message_id and sent.caption == video.caption
    assert sent.media == video.media  # the same motion
    still = telegram.message(alice_chat.id, sent.message_id)["live_photo"]["photo"][-1]
    still_bytes = telegram.file_bytes(still["file_id"])
    _, size, frames, _ = decoded(video.media)
    assert (still["width"], still["height"]) == size
    assert difference(Image.open(io.BytesIO(still_bytes)), frames[0]) < 4  # the still is the first frame
    assert await balance(settings, ALICE.id) == 90  # nothing charged for it
    assert len(await jobs(settings)) == 1


async def test_a_video_too_large_for_a_live_photo_offers_none(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)),
                        caption="/animate seedance sandbox-size-11mb")
    [video] = await wait_media(telegram, alice_chat.id, timeout=40)
    assert video.media_kind == "video"
    assert "📸 As a live photo" not in buttons(video).values()  # Telegram takes one of 10 MB at most
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)),
                        caption="/animate seedance sandbox-size-60mb")
    linked = await wait_text(telegram, alice_chat.id, "larger than Telegram takes", timeout=60)
    link = next(m for m in telegram.sent(alice_chat.id) if m.text == linked)
    assert "📸 As a live photo" not in buttons(link).values()  # a link is no video to turn into one


def kling_makes_15_seconds(video: dict) -> None:
    """An operator's catalogue whose Kling also makes 15 s videos, longer than a live photo may be."""
    video["styles"]["kling"]["durations"] = [5, 10, 15]


@pytest.mark.parametrize("settings", [kling_makes_15_seconds], indirect=True)
async def test_only_a_short_video_of_a_photo_offers_a_live_photo(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, text="/video seedance a paper boat")
    [described] = await wait_media(telegram, alice_chat.id)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate kling 15s")
    longest = (await wait_media(telegram, alice_chat.id, 2))[1]
    for video in (described, longest):
        assert video.media_kind == "video"
        assert "📸 As a live photo" not in buttons(video).values()


def live_photo_button(video) -> str:
    return next(data for data, label in buttons(video).items() if label == "📸 As a live photo")


async def test_a_press_naming_another_job_on_a_video_makes_no_live_photo(bot, telegram, group_chat, settings):
    """Crafted data: Bob names his own job on Alice's video, where only she may press its buttons."""
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(group_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, group_chat.id)
    telegram.user_sends(group_chat, BOB, photo=picture(64, 48, (200, 90, 30)), caption="/colorize")
    coloured = (await wait_media(telegram, group_chat.id, 2))[1]
    bobs_job = next(data for data in buttons(coloured) if data.startswith("fu:")).split(":")[1]
    assert live_photo_button(video) != f"fu:{bobs_job}:p"
    query = telegram._state.user_press(group_chat, BOB, video.message_id, f"fu:{bobs_job}:p", crafted=True)
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    assert telegram.callback_answers[query]["text"] == "That result is no longer available. Send the photo again."
    await asyncio.sleep(1)  # a live photo made anyway would be sent by now
    assert live_photos(telegram, group_chat.id) == []


async def test_a_live_photo_press_naming_a_job_id_past_the_database_integers_is_gone(bot, telegram, alice_chat,
                                                                                    settings, caplog):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    queries = [telegram._state.user_press(alice_chat, ALICE, video.message_id, data, crafted=True)
               for data in ("fu:" + "9" * 58 + ":p", f"fu:{2 ** 63}:p", "fu:٣:p", "fu:1:p:x")]
    await telegram.wait_for(lambda: all(query in telegram.callback_answers for query in queries))
    assert "Traceback" not in caplog.text
    assert live_photos(telegram, alice_chat.id) == []


async def test_a_live_photo_being_made_holds_up_nothing_else_of_its_chat(bot, telegram, alice_chat, settings):
    """A make downloads, decodes and uploads for seconds: the person's next message is answered meanwhile."""
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.faults = TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=4, methods=frozenset({"download"}))
    query = telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    await telegram.wait_for(lambda: telegram.stats["fault_timeout"] == 1)  # the video's download stalls
    telegram.user_sends(alice_chat, ALICE, text="/balance")
    await wait_text(telegram, alice_chat.id, "Your credits", timeout=3)
    assert live_photos(telegram, alice_chat.id) == []
    assert telegram.callback_answers[query]["text"] == "📸 The live photo is on its way."
    await telegram.wait_for(lambda: bool(live_photos(telegram, alice_chat.id)))


async def test_a_double_press_sends_one_live_photo(bot, telegram, alice_chat, settings):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.faults = TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=2, methods=frozenset({"download"}))
    first = telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    second = telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    await telegram.wait_for(lambda: second in telegram.callback_answers and bool(live_photos(telegram, alice_chat.id)))
    assert telegram.callback_answers[first]["text"] == telegram.callback_answers[second]["text"] \
        == "📸 The live photo is on its way."
    await asyncio.sleep(2.5)  # a second make would have its stalled download by now
    assert len(live_photos(telegram, alice_chat.id)) == 1
    assert len(telegram.downloads) == 1 + 1  # the photo animated, and the video once


async def test_a_live_photo_telegram_asks_to_slow_down_for_is_sent_once_the_wait_is_over(bot, telegram, alice_chat,
                                                                                        settings):
    """A 429 whose retry_after is longer than the bot holds a call for: waited out, then sent, not dropped."""
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.faults = TgFaults(rate=1.0, kinds=("429",), retry_after=6, methods=frozenset({"sendLivePhoto"}))
    telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    await telegram.wait_for(lambda: telegram.stats["fault_429"] == 1)
    telegram.faults = None
    await telegram.wait_for(lambda: bool(live_photos(telegram, alice_chat.id)), timeout=15)
    refused, sent = [call for call in telegram.calls if call.method == "sendLivePhoto"]
    assert sent.time - refused.time >= 6
    assert [m.text for m in telegram.sent(alice_chat.id) if m.text] == []  # nothing said but the live photo


@pytest.mark.parametrize(("method", "fault"), [("getFile", "500"), ("download", "500"), ("download", "drop"),
                                                ("sendLivePhoto", "500"), ("sendLivePhoto", "drop")])
async def test_a_live_photo_telegram_fails_at_any_step_is_said_so_and_names_no_secret(
        bot, telegram, alice_chat, settings, caplog, method, fault):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.faults = TgFaults(rate=1.0, kinds=(fault,), methods=frozenset({method}))
    telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    told = await wait_text(telegram, alice_chat.id, "live photo")
    assert told == "I couldn't send the live photo just now. Please press the button again in a minute."
    assert live_photos(telegram, alice_chat.id) == []
    assert telegram.token not in caplog.text and telegram.token.split(":")[1] not in caplog.text
    telegram.faults = None
    telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))  # a press again works
    await telegram.wait_for(lambda: bool(live_photos(telegram, alice_chat.id)))


async def test_many_people_pressing_for_live_photos_at_once_leave_the_bot_free_for_everyone_else(bot, telegram, settings):
    """More presses than the intake's handler slots (16), the first makes' downloads stalled: the presses waiting
    for one of the two makes at once hold no slot, so a newcomer is answered at once."""
    people = [User(3000 + index, f"P{index}") for index in range(17)]
    for person in people:
        await buy(settings, person.id, 100)
        telegram.user_sends(private_chat(person), person, photo=picture(160, 120, (30, 90, 200)),
                            caption="/animate seedance")
    videos = [(await wait_media(telegram, person.id, timeout=60))[0] for person in people]
    telegram.faults = TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=6, methods=frozenset({"download"}))
    for person, video in zip(people, videos, strict=True):
        telegram.user_presses(private_chat(person), person, video.message_id, live_photo_button(video))
    await telegram.wait_for(lambda: telegram.stats["fault_timeout"] >= 2)  # two makes at once, both stalled
    newcomer = User(3100, "Newcomer")
    telegram.user_sends(private_chat(newcomer), newcomer, text="/help")
    await telegram.wait_for(lambda: bool(telegram.sent(newcomer.id)), timeout=3)
    assert not any(live_photos(telegram, person.id) for person in people)
    telegram.faults = None
    await telegram.wait_for(lambda: all(live_photos(telegram, person.id) for person in people), timeout=60)


def audio_only_mp4() -> bytes:
    """An MP4 holding a second of silence and no video stream."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as container:
        stream = container.add_stream("aac", rate=44100)
        for _ in range(44):
            frame = av.AudioFrame(format="fltp", layout="mono", samples=1024)
            frame.sample_rate = 44100
            for plane in frame.planes:
                plane.update(bytes(plane.buffer_size))
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buffer.getvalue()


@pytest.mark.parametrize("served", [b"\x00" * 4096, b"garbage" * 100, "no video stream"],
                         ids=["zeros", "garbage", "no-video-stream"])
async def test_a_live_photo_of_a_video_telegram_serves_unreadable_is_refused_and_says_so(
        bot, telegram, alice_chat, settings, caplog, served):
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    stored = telegram._state.files[telegram.message(alice_chat.id, video.message_id)["video"]["file_id"]]
    stored.data = audio_only_mp4() if served == "no video stream" else served
    telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    told = await wait_text(telegram, alice_chat.id, "live photo")
    assert told == "Telegram did not take this video as a live photo, so it stays a video."
    assert live_photos(telegram, alice_chat.id) == [] and "Traceback" not in caplog.text


async def test_a_live_photo_press_on_a_message_without_a_video_is_gone(bot, telegram, alice_chat, settings):
    """Crafted: the video's own button data pressed on a picture result in the same chat."""
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.user_sends(alice_chat, ALICE, photo=picture(64, 48, (200, 90, 30)), caption="/colorize")
    coloured = (await wait_media(telegram, alice_chat.id, 2))[1]
    query = telegram._state.user_press(alice_chat, ALICE, coloured.message_id, live_photo_button(video), crafted=True)
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    assert telegram.callback_answers[query]["text"] == "That result is no longer available. Send the photo again."
    assert live_photos(telegram, alice_chat.id) == []


async def test_a_live_photo_telegram_keeps_refusing_with_429_ends_in_asking_for_a_press_later(
        bot, telegram, alice_chat, settings, monkeypatch):
    monkeypatch.setattr(live_photo_handlers, "RETRY_AFTER_BUDGET_S", 10.0)
    await buy(settings, ALICE.id, 100)
    telegram.user_sends(alice_chat, ALICE, photo=picture(320, 240, (30, 90, 200)), caption="/animate seedance")
    [video] = await wait_media(telegram, alice_chat.id)
    telegram.faults = TgFaults(rate=1.0, kinds=("429",), retry_after=6, methods=frozenset({"sendLivePhoto"}))
    telegram.user_presses(alice_chat, ALICE, video.message_id, live_photo_button(video))
    told = await wait_text(telegram, alice_chat.id, "live photo", timeout=25)
    assert told == "I couldn't send the live photo just now. Please press the button again in a minute."
    first, second = [call for call in telegram.calls if call.method == "sendLivePhoto"]  # 6 s waited, then no more
    told_at = next(call.time for call in telegram.calls if call.method == "sendMessage" and "live photo" in str(
        call.params.get("text")))
    assert second.time - first.time >= 6 and told_at - second.time >= 6  # every retry_after honoured
    assert live_photos(telegram, alice_chat.id) == []
