"""UpdateIntake against the fake Bot API over loopback: chat lanes, bounded re-fetching, crash-safe offsets."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, ContextTypes, TypeHandler

from bot.tg.answers import AnsweredQueries
from bot.tg.context import CONTEXT_TYPES
from bot.tg.flood import CHAT_SHARE
from bot.tg.intake import UpdateIntake
from tests.fakes.telegram import FakeTelegram, User, private_chat

ALLOWED = [Update.MESSAGE, Update.CALLBACK_QUERY]
USERS = [User(7000 + index, f"User{index}") for index in range(100)]

Handler = Callable[[Update], Awaitable[None]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as telegram:
        yield telegram


async def never_handled(update_id: int) -> bool:
    return False


class Bench:
    """An Application whose one handler is `handler`, fed by an UpdateIntake running in a task."""

    def __init__(self, fake: FakeTelegram, handler: Handler, *, concurrency: int = 16, grace: float = 5.0,
                 already_handled: Callable[[int], Awaitable[bool]] = never_handled) -> None:
        async def on_update(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            await handler(update)

        self.application = (Application.builder().token(fake.token).context_types(CONTEXT_TYPES)
                            .base_url(f"{fake.url}/bot")
                            .base_file_url(f"{fake.url}/file/bot").updater(None).build())
        self.application.add_handler(TypeHandler(Update, on_update))
        self.intake = UpdateIntake(self.application, already_handled, allowed_updates=ALLOWED, grace=grace,
                                   concurrency=concurrency, poll_timeout=1)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Bench:
        await self.application.initialize()
        self._task = asyncio.create_task(self.intake.run(self._stop))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
        await self.application.shutdown()

    async def stop(self) -> None:
        """Stop fetching, let the handlers finish within the grace, confirm."""
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 10)
            self._task = None


def text_of(update: Update) -> str:
    assert update.effective_message is not None and update.effective_message.text is not None
    return update.effective_message.text


def get_updates_calls(fake: FakeTelegram) -> int:
    return sum(1 for call in fake.calls if call.method == "getUpdates")


async def test_each_chat_is_handled_in_arrival_order_one_update_at_a_time(fake):
    seen: dict[int, list[str]] = defaultdict(list)
    active: dict[int, int] = defaultdict(int)
    most_at_once: dict[int, int] = defaultdict(int)

    async def handler(update: Update) -> None:
        chat = update.effective_chat.id
        active[chat] += 1
        most_at_once[chat] = max(most_at_once[chat], active[chat])
        await asyncio.sleep(0.01 * (update.update_id % 3))  # later updates would overtake earlier ones
        seen[chat].append(text_of(update))
        active[chat] -= 1

    users = USERS[:5]
    for index in range(CHAT_SHARE):  # as many as a chat may have at once: none is dropped
        for user in users:
            fake.user_sends(private_chat(user), user, text=f"message {index}")
    async with Bench(fake, handler) as bench:
        await fake.wait_for(lambda: sum(map(len, seen.values())) == 5 * CHAT_SHARE, timeout=10)
        assert bench.intake.chats_in_flight == 0  # no state is kept for chats with nothing in flight
        assert bench.intake.dropped == 0
    assert {chat: texts for chat, texts in seen.items()} == {
        user.id: [f"message {index}" for index in range(CHAT_SHARE)] for user in users}
    assert set(most_at_once.values()) == {1}
    assert fake.pending_updates == 0


async def test_a_flooding_chat_holds_one_slot_and_its_share_and_another_chat_is_still_read_and_handled(fake):
    release = asyncio.Event()
    handled: list[tuple[int, str]] = []

    async def handler(update: Update) -> None:
        if update.effective_chat.id == USERS[0].id:
            await release.wait()  # the flood's handlers are stuck, e.g. waiting out a flood window
        handled.append((update.effective_chat.id, text_of(update)))

    flooder, other = USERS[0], USERS[1]
    for index in range(30):
        fake.user_sends(private_chat(flooder), flooder, text=f"flood {index}")
    # two slots: without lanes the flood would take both and the other chat would never be reached
    async with Bench(fake, handler, concurrency=2) as bench:
        await fake.wait_for(lambda: bench.intake.chats_in_flight == 1, timeout=5)
        fake.user_sends(private_chat(other), other, text="hello")
        await fake.wait_for(lambda: (other.id, "hello") in handled, timeout=5)
        assert handled == [(other.id, "hello")]
        release.set()
        await fake.wait_for(lambda: len(handled) == 1 + CHAT_SHARE, timeout=5)
        # beyond its share the flood was dropped (and confirmed), not held
        assert bench.intake.dropped == 30 - CHAT_SHARE
    assert [text for chat, text in handled if chat == flooder.id] == [f"flood {index}" for index in range(CHAT_SHARE)]
    assert fake.pending_updates == 0


async def test_many_chats_need_few_fetches_though_each_answer_repeats_the_held_updates(fake):
    handled: list[int] = []

    async def handler(update: Update) -> None:
        await asyncio.sleep(0.01 * (1 + update.update_id % 7))  # handlers finish one by one, not in waves
        handled.append(update.update_id)

    for index in range(300):
        user = USERS[index % 100]
        fake.user_sends(private_chat(user), user, text=f"photo {index}")
    async with Bench(fake, handler):
        await fake.wait_for(lambda: len(handled) == 300, timeout=30)
        fetches = get_updates_calls(fake)
    # one fetch per finished handler (the old loop) would be about 300; each useful fetch brings ~84 new
    assert fetches <= 40, f"{fetches} getUpdates calls for 300 updates"
    assert sorted(handled) == sorted(set(handled)) and len(handled) == 300
    assert fake.pending_updates == 0


async def test_a_restart_gets_back_what_was_not_handled_and_skips_what_already_queued_a_job(fake):
    chat = private_chat(USERS[0])
    other = private_chat(USERS[1])
    first_run: list[str] = []
    ids: dict[str, int] = {}
    stuck = asyncio.Event()

    async def handler(update: Update) -> None:
        ids[text_of(update)] = update.update_id
        if text_of(update) == "stuck":
            stuck.set()
            await asyncio.Event().wait()  # never finishes: cancelled at the end of the grace
        first_run.append(text_of(update))

    fake.user_sends(chat, USERS[0], text="one")
    fake.user_sends(chat, USERS[0], text="two")
    fake.user_sends(other, USERS[1], text="stuck")
    fake.user_sends(chat, USERS[0], text="three")
    fake.user_sends(chat, USERS[0], text="four")
    async with Bench(fake, handler, grace=0.3) as bench:
        await fake.wait_for(lambda: len(first_run) == 4 and stuck.is_set(), timeout=5)
        await bench.stop()
    # "one" and "two" are confirmed; "stuck" was cancelled, so it and everything after it come again
    assert fake.pending_updates == 3

    second_run: list[str] = []
    checked: list[int] = []
    queued_update = ids["four"]

    async def handler_again(update: Update) -> None:
        second_run.append(text_of(update))

    async def already_handled(update_id: int) -> bool:
        checked.append(update_id)
        return update_id == queued_update  # "four" queued a job before the crash

    async with Bench(fake, handler_again, already_handled=already_handled):
        await fake.wait_for(lambda: len(second_run) == 2, timeout=5)
        with contextlib.suppress(AssertionError):
            await fake.wait_for(lambda: len(second_run) > 2, timeout=0.3)
    assert second_run == ["stuck", "three"]
    assert queued_update in checked
    assert fake.pending_updates == 0  # the graceful stop confirmed everything handled or skipped


async def test_updates_arriving_during_a_run_are_handled_and_confirmed_on_stop(fake):
    handled: list[str] = []

    async def handler(update: Update) -> None:
        handled.append(text_of(update))

    async with Bench(fake, handler):
        await fake.wait_for(lambda: get_updates_calls(fake) >= 1, timeout=5)
        for index in range(3):
            fake.user_sends(private_chat(USERS[2]), USERS[2], text=f"late {index}")
            await fake.wait_for(lambda: len(handled) == index + 1, timeout=5)
    assert handled == ["late 0", "late 1", "late 2"]
    assert fake.pending_updates == 0


def answers_of(fake: FakeTelegram) -> Counter[str]:
    return Counter(str(call.params.get("callback_query_id")) for call in fake.calls
                   if call.method == "answerCallbackQuery")


async def test_presses_skipped_as_redelivered_or_dropped_in_a_flood_are_answered_once(fake):
    chat = private_chat(USERS[3])
    fake.user_sends(chat, USERS[3], text="hello")  # Telegram knows the chat only once its user wrote
    async with Bench(fake, lambda update: asyncio.sleep(0)) as bench:
        await fake.wait_for(lambda: fake.pending_updates == 0 and get_updates_calls(fake) >= 2)
        keyboard = await bench.application.bot.send_message(
            chat.id, "buttons", reply_markup=InlineKeyboardMarkup([[InlineKeyboardButton("go", callback_data="go")]]))
    # pressed while no intake runs: the first answer of the next one brings them all
    presses = [fake.user_presses(chat, USERS[3], keyboard.message_id, "go") for _ in range(CHAT_SHARE + 5)]
    handled: list[int] = []
    release = asyncio.Event()

    async def handler(update: Update) -> None:
        handled.append(update.update_id)
        await release.wait()  # the chat's share fills up: the presses beyond it are dropped

    async def already_handled(update_id: int) -> bool:
        return update_id == first_update  # a crashed run made a job from the first press

    first_update = fake._state.updates[0]["update_id"]
    async with Bench(fake, handler, already_handled=already_handled) as bench:
        bench.application.bot_data.answered = AnsweredQueries()
        await fake.wait_for(lambda: len(handled) == 1 and sum(answers_of(fake).values()) == 5)
        release.set()
        await fake.wait_for(lambda: len(handled) == CHAT_SHARE)
    assert bench.intake.dropped == 4 and first_update not in handled  # 1 skipped, 10 handled, 4 dropped
    # the skipped one and the dropped ones by the intake at once, the handled ones after their handler (none answered)
    assert [answers_of(fake)[query] for query in presses] == [1] * len(presses)
