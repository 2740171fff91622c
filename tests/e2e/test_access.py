"""Access and fair use, end to end: allowlists and admins, per-user limits with the time to try again,
and one chat's flood not holding up another chat's results."""

from __future__ import annotations

import logging
import time

import pytest
from sqlalchemy import select

from bot.runtime import SHUTDOWN_GRACE_S
from bot.store import create_engine, session_factory
from bot.store.models import Job
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, RunningBot
from tests.e2e.helpers import media, settled, texts, wait_acknowledged, wait_handled, wait_media, wait_text
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, TgFaults, User, private_chat

CAROL = User(1003, "Carol", username="carol")  # on the allowlist
DAVE = User(1004, "Dave", username="dave")  # a stranger


async def jobs_of(settings, user_id: int) -> list[tuple[str, str]]:
    """(operation, state) of every job row of a user, oldest first."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.operation, Job.state).where(Job.user_id == user_id)
                                          .order_by(Job.id))).all()
        return [(operation, str(state)) for operation, state in rows]
    finally:
        await engine.dispose()


def replies_to(telegram: FakeTelegram, chat_id: int, message_id: int) -> list[str]:
    return [m.text or m.caption or "" for m in telegram.sent(chat_id) if m.reply_to_message_id == message_id]


async def started(settings, telegram: FakeTelegram, *, grace: float = SHUTDOWN_GRACE_S,
                  **changes: object) -> RunningBot:
    running = RunningBot(settings.model_copy(update=changes), telegram, grace=grace)
    await running.start()
    return running


# --- allowlists and admins ------------------------------------------------------------------------


async def test_allowed_user_and_admin_are_served_a_stranger_is_told_the_bot_is_private(settings, telegram):
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    try:
        stranger = telegram.user_sends(private_chat(DAVE), DAVE, photo=samples.jpeg(120, 80), caption="/upscale 2")
        telegram.user_sends(private_chat(CAROL), CAROL, photo=samples.jpeg(120, 80), caption="/upscale 2")
        # Alice is an admin (conftest) and not on the allowlist: admins are always let in
        telegram.user_sends(private_chat(ALICE), ALICE, photo=samples.jpeg(120, 80), caption="/upscale 2")
        await wait_media(telegram, CAROL.id)
        await wait_media(telegram, ALICE.id)
        assert await wait_text(telegram, DAVE.id, "private") == bot_texts.NOT_ALLOWED
        assert replies_to(telegram, DAVE.id, stranger["message_id"]) == [bot_texts.NOT_ALLOWED]
        assert media(telegram, DAVE.id) == []
        assert await jobs_of(settings, DAVE.id) == []
        assert telegram.file_downloads == 2  # the stranger's photo was never even fetched
    finally:
        await running.stop()


async def test_a_stranger_in_a_group_gets_no_reply_while_an_allowed_member_is_served(settings, telegram, group_chat,
                                                                                    caplog):
    caplog.set_level(logging.INFO, logger="bot.tg.handlers.messages")
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    try:
        stranger = telegram.user_sends(group_chat, DAVE, photo=samples.jpeg(120, 80),
                                       caption="/upscale@aiart_test_bot 2")
        telegram.user_sends(group_chat, DAVE, text="/help@aiart_test_bot")
        telegram.user_sends(group_chat, CAROL, photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        [result] = await wait_media(telegram, group_chat.id)
        await wait_handled(telegram)
        assert replies_to(telegram, group_chat.id, stranger["message_id"]) == []
        assert [m.reply_to_message_id for m in media(telegram, group_chat.id)] == [result.reply_to_message_id]
        assert not any("Commands:" in text for text in texts(telegram, group_chat.id))
        assert await jobs_of(settings, DAVE.id) == []
    finally:
        await running.stop()
    # the log tells the operator the ids to allow, once for the stranger's two messages
    refusals = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused user")]
    assert refusals == [f"refused user {DAVE.id} in chat {group_chat.id}: not in BOT_ALLOWED_USERS or BOT_ALLOWED_CHATS"]


async def test_an_allowed_chat_lets_its_members_in_there_and_nowhere_else(settings, telegram, group_chat):
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}),
                            bot_allowed_chats=frozenset({group_chat.id}))
    try:
        telegram.user_sends(group_chat, DAVE, photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        telegram.user_sends(private_chat(DAVE), DAVE, text="/help")
        telegram.user_sends(private_chat(CAROL), CAROL, text="/help")  # the user list still counts
        await wait_media(telegram, group_chat.id)
        await wait_text(telegram, CAROL.id, "Commands:")
        assert await wait_text(telegram, DAVE.id, "private") == bot_texts.NOT_ALLOWED
    finally:
        await running.stop()


async def test_a_strangers_button_press_is_refused_and_the_owners_works(settings, telegram, group_chat):
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    try:
        telegram.user_sends(group_chat, CAROL, text="/imagine@aiart_test_bot a lighthouse at dawn")
        await wait_text(telegram, group_chat.id, "Pick a style")
        picker = next(m for m in telegram.sent(group_chat.id) if m.reply_markup)
        query = telegram.user_presses(group_chat, DAVE, picker.message_id, "st:imagine:cartoon")
        await telegram.wait_for(lambda: query in telegram.callback_answers)
        answer = telegram.callback_answers[query]
        assert answer.get("text") == bot_texts.NOT_ALLOWED and answer.get("show_alert") is True
        await wait_handled(telegram)
        assert media(telegram, group_chat.id) == [] and await jobs_of(settings, DAVE.id) == []
        telegram.user_presses(group_chat, CAROL, picker.message_id, "st:imagine:cartoon")
        [result] = await wait_media(telegram, group_chat.id)
        assert "Cartoon" in result.caption
    finally:
        await running.stop()


# --- per-user limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("task_seconds", [30.0])
async def test_a_job_beyond_the_limit_at_once_is_refused_until_one_ends(settings, telegram, sandbox):
    running = await started(settings, telegram, user_max_active_jobs=3)
    bob = private_chat(BOB)
    try:
        # sent together, so the bot handles them concurrently: the check must not race
        for _ in range(4):
            telegram.user_sends(bob, BOB, photo=samples.jpeg(120, 80), caption="/colorize")
        refusal = await wait_text(telegram, bob.id, "in progress")
        assert refusal == "You already have 3 jobs in progress. Wait for one to finish, or /cancel them."
        await telegram.wait_for(lambda: len(sandbox.tasks) == 3)
        await wait_handled(telegram)  # every request handled: three jobs, and no fourth to submit later

        async def states() -> list[str]:
            return sorted(state for _, state in await jobs_of(settings, BOB.id))

        assert await settled(states, ["running"] * 3) == ["running"] * 3
        assert len(sandbox.tasks) == 3
        telegram.user_sends(bob, BOB, text="/cancel")
        await wait_text(telegram, bob.id, "Cancelled 3 jobs")
        telegram.user_sends(bob, BOB, photo=samples.jpeg(120, 80), caption="/colorize")
        await telegram.wait_for(lambda: len(sandbox.tasks) == 4)
    finally:
        await running.stop()


async def test_the_daily_allowance_says_how_to_get_more_and_refused_requests_cost_nothing(settings, telegram):
    running = await started(settings, telegram, free_credits_per_day=2)
    bob = private_chat(BOB)
    try:
        telegram.user_sends(bob, BOB, photo=samples.jpeg(120, 80), caption="/upscale 7")  # refused: bad factor
        await wait_text(telegram, bob.id, "2 or 4")
        for _ in range(2):
            telegram.user_sends(bob, BOB, photo=samples.jpeg(120, 80), caption="/upscale 2")
        await wait_media(telegram, bob.id, 2)
        telegram.user_sends(bob, BOB, photo=samples.jpeg(120, 80), caption="/upscale 2")
        refusal = await wait_text(telegram, bob.id, "Not enough credits")
        # no packs on sale in these settings: the allowance of tomorrow is the way to more
        assert refusal == ("Not enough credits: this costs 1 credit, and you can spend 0 now. "
                           "Tomorrow you get 2 free credits again."), refusal
        assert [state for _, state in await jobs_of(settings, BOB.id)] == ["failed", "delivered", "delivered"]
    finally:
        await running.stop()


# --- fairness across chats ------------------------------------------------------------------------


FLOOD = 40


@pytest.mark.telegram_limits  # the flood is paced at Telegram's one a second: the other chat must not wait for it
@pytest.mark.xdist_group("timing")
@pytest.mark.parametrize("task_seconds", [0.3])
async def test_a_flooding_chat_does_not_hold_up_another_chats_results(settings, telegram):
    # the flood is not meant to finish here: stopping cancels what is left without the full grace
    running = await started(settings, telegram, grace=2.0, service_concurrency=1, user_max_active_jobs=100,
                            free_credits_per_day=1000)
    alice, bob = private_chat(ALICE), private_chat(BOB)
    try:
        flood = [telegram.user_sends(alice, ALICE, photo=samples.jpeg(96, 64), caption="/upscale 2")
                 for _ in range(FLOOD)]
        await wait_acknowledged(telegram, alice.id, flood[0]["message_id"])  # the bot is busy with the flood
        bob_sent = time.monotonic()
        for _ in range(2):
            telegram.user_sends(bob, BOB, photo=samples.jpeg(96, 64), caption="/upscale 2")
        await wait_media(telegram, bob.id, 2, timeout=12)
        bob_waited = time.monotonic() - bob_sent
        alice_done = len(media(telegram, alice.id))
        print(f"other chat served in {bob_waited:.1f} s, with {alice_done} of the flood's {FLOOD} results sent")
        assert alice_done < FLOOD // 2, f"{alice_done} of the flood's results went out first"
        assert bob_waited < 10, f"the other chat waited {bob_waited:.1f} s"
    finally:
        await running.stop()


@pytest.mark.parametrize("failure", ["server error", "query too old"])
async def test_a_refused_button_press_stops_even_when_answering_it_fails(settings, telegram, failure):
    # Dave used the bot before the allowlist: he still has a photo menu from then
    running = await started(settings, telegram)
    dave = private_chat(DAVE)
    try:
        telegram.user_sends(dave, DAVE, photo=samples.jpeg(120, 80))
        await wait_text(telegram, dave.id, bot_texts.MENU_PROMPT)
    finally:
        await running.stop()
    menu = next(m for m in telegram.sent(dave.id) if m.reply_markup)
    if failure == "server error":
        telegram.faults = TgFaults(rate=1.0, kinds=("500",), methods=frozenset({"answerCallbackQuery"}))
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    try:
        query = telegram.user_presses(dave, DAVE, menu.message_id, "op:upscale:2")
        if failure == "query too old":
            del telegram._state.callback_queries[query]  # Telegram forgets a query after a while
        await telegram.wait_for(lambda: any(call.method == "answerCallbackQuery" for call in telegram.calls))
        await wait_handled(telegram)
        assert not any(call.ok for call in telegram.calls if call.method == "answerCallbackQuery")
        assert media(telegram, dave.id) == [] and await jobs_of(settings, DAVE.id) == []
        assert telegram.file_downloads == 0
    finally:
        telegram.faults = None
        await running.stop()


async def test_a_refused_user_who_floods_is_told_once(settings, telegram):
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    dave = private_chat(DAVE)
    try:
        for index in range(30):
            telegram.user_sends(dave, DAVE, text=f"/help {index}")
        await wait_text(telegram, dave.id, "private")
        telegram.user_sends(private_chat(CAROL), CAROL, text="/help")
        await wait_text(telegram, CAROL.id, "Commands:")
        await wait_handled(telegram)
        assert texts(telegram, dave.id) == [bot_texts.NOT_ALLOWED]
    finally:
        await running.stop()
