"""/cancel and /status in a group: each member's own jobs; `/cancel all` stops everyone's, for admins only."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.store import create_engine, session_factory
from bot.store.models import Job
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB
from tests.fakes import samples
from tests.fakes.telegram import TgFaults, User

CAROL = User(1003, "Carol", username="carol")

# the tasks outlast the tests: every job stays in progress until someone cancels it
pytestmark = pytest.mark.parametrize("task_seconds", [60.0])


async def states_by_user(settings) -> dict[int, list[str]]:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.user_id, Job.state).order_by(Job.id))).all()
    finally:
        await engine.dispose()
    states: dict[int, list[str]] = {}
    for user_id, state in rows:
        states.setdefault(user_id, []).append(str(state))
    return states


async def alice_and_bob_have_jobs_running(telegram, sandbox, group_chat) -> None:
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(100, 80), caption="/colorize")
    telegram.user_sends(group_chat, BOB, photo=samples.jpeg(100, 80), caption="/restore")
    await telegram.wait_for(lambda: len(sandbox.tasks) == 2)


async def answer_to(telegram, chat, user, text: str, fragment: str) -> str:
    """What the bot replies to `user` saying `text` in `chat` (the reply containing `fragment`)."""
    asked = telegram.user_sends(chat, user, text=text)

    def replies() -> list[str]:
        return [m.text for m in telegram.sent(chat.id)
                if m.text and fragment in m.text and m.reply_to_message_id == asked["message_id"]]

    await telegram.wait_for(lambda: bool(replies()), 20)
    return replies()[0]


async def test_cancel_in_a_group_stops_only_the_callers_jobs(bot, telegram, sandbox, group_chat, settings):
    await alice_and_bob_have_jobs_running(telegram, sandbox, group_chat)

    assert await answer_to(telegram, group_chat, ALICE, "/cancel", "Cancelled") == bot_texts.cancelled_text(1)

    assert await states_by_user(settings) == {ALICE.id: ["cancelled"], BOB.id: ["running"]}
    assert await answer_to(telegram, group_chat, ALICE, "/status", "in progress") == bot_texts.NO_ACTIVE_JOBS
    bobs = await answer_to(telegram, group_chat, BOB, "/status", "in progress")
    assert bobs.startswith("Your jobs in progress (1):") and "Restored" in bobs


async def test_cancel_all_by_a_group_admin_stops_everyones_jobs(bot, telegram, sandbox, group_chat, settings):
    telegram.members.make_admin(group_chat, CAROL)
    await alice_and_bob_have_jobs_running(telegram, sandbox, group_chat)

    answer = await answer_to(telegram, group_chat, CAROL, "/cancel all", "Cancelled")

    assert answer == bot_texts.cancelled_everyones_text(2)
    assert await states_by_user(settings) == {ALICE.id: ["cancelled"], BOB.id: ["cancelled"]}
    [check] = [call for call in telegram.calls if call.method == "getChatMember"]
    assert check.params == {"chat_id": group_chat.id, "user_id": CAROL.id}


async def test_cancel_all_by_the_groups_owner_stops_everyones_jobs(bot, telegram, sandbox, group_chat, settings):
    telegram.members.make_owner(group_chat, CAROL)
    await alice_and_bob_have_jobs_running(telegram, sandbox, group_chat)

    answer = await answer_to(telegram, group_chat, CAROL, "/cancel all", "Cancelled")

    assert answer == bot_texts.cancelled_everyones_text(2)
    assert await states_by_user(settings) == {ALICE.id: ["cancelled"], BOB.id: ["cancelled"]}


async def test_cancel_all_by_a_member_who_is_not_an_admin_is_refused(bot, telegram, sandbox, group_chat, settings):
    await alice_and_bob_have_jobs_running(telegram, sandbox, group_chat)

    answer = await answer_to(telegram, group_chat, BOB, "/cancel all", "admins")

    assert answer == bot_texts.CANCEL_ALL_ADMINS_ONLY
    assert await states_by_user(settings) == {ALICE.id: ["running"], BOB.id: ["running"]}  # not even Bob's own


async def test_cancel_all_is_refused_when_telegram_cannot_say_who_is_admin(bot, telegram, sandbox, group_chat,
                                                                          settings):
    telegram.members.make_admin(group_chat, CAROL)
    await alice_and_bob_have_jobs_running(telegram, sandbox, group_chat)
    telegram.faults = TgFaults(rate=1.0, kinds=("500",), methods=frozenset({"getChatMember"}))

    answer = await answer_to(telegram, group_chat, CAROL, "/cancel all", "admin")

    assert answer == bot_texts.ADMIN_CHECK_FAILED
    assert await states_by_user(settings) == {ALICE.id: ["running"], BOB.id: ["running"]}


async def test_cancel_all_in_a_private_chat_stops_the_users_own_jobs(bot, telegram, sandbox, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/colorize")
    await telegram.wait_for(lambda: len(sandbox.tasks) == 1)

    assert await answer_to(telegram, alice_chat, ALICE, "/cancel all", "Cancelled") == bot_texts.cancelled_text(1)
    assert not any(call.method == "getChatMember" for call in telegram.calls)  # no one else's jobs to stop there
