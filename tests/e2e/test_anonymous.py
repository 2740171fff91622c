"""Anonymous group admins and members posting as a channel: each sender chat is its own sender.

Telegram gives them all one shared user id in `from`; the bot counts quotas and keeps two-photo
requests per `sender_chat`, so one of them can neither use up the others' quota nor finish their face swap.
None of them gets a free allowance: the group's pool pays, each counted as one member under its cap.
"""

from __future__ import annotations

from sqlalchemy import select

from bot.store import create_engine, session_factory
from bot.store.models import Job
from tests.e2e.conftest import RunningBot
from tests.e2e.helpers import (
    fill_pool,
    generation_posts,
    media,
    settled,
    texts,
    wait_handled,
    wait_media,
    wait_text,
)
from tests.fakes import samples
from tests.fakes.telegram import channel, group
from tests.fakes.telegram_anonymous import ANONYMOUS_ADMIN, CHANNEL_SENDER, anonymous_admin_sends, channel_sends

GROUP = group(-100700, "Darkroom")
NEWS = channel(-100801, "News")
PHOTOS = channel(-100802, "Photos")


async def jobs_by_sender(settings) -> dict[int, list[tuple[str, str]]]:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.user_id, Job.operation, Job.state).order_by(Job.id))).all()
    finally:
        await engine.dispose()
    found: dict[int, list[tuple[str, str]]] = {}
    for user_id, operation, state in rows:
        found.setdefault(user_id, []).append((operation, str(state)))
    return found


async def started(settings, telegram, *, pool: int = 100, **changes: object) -> RunningBot:
    """The bot, and the group's pool holding `pool` credits: only a pool pays for a chat identity's jobs."""
    running = RunningBot(settings.model_copy(update=changes), telegram)
    await running.start()
    if pool:
        await fill_pool(running.settings.database_url, GROUP.id, pool)
    return running


async def test_each_channel_and_the_anonymous_admins_are_one_member_of_the_pool(settings, telegram):
    running = await started(settings, telegram, free_credits_per_day=1)
    await fill_pool(running.settings.database_url, GROUP.id, 0, cap=1)
    try:
        for send in (lambda **c: channel_sends(telegram, GROUP, NEWS, **c),
                     lambda **c: channel_sends(telegram, GROUP, PHOTOS, **c),
                     lambda **c: anonymous_admin_sends(telegram, GROUP, **c)):
            send(photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        await wait_media(telegram, GROUP.id, 3)
        channel_sends(telegram, GROUP, NEWS, photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        await wait_text(telegram, GROUP.id, "only this group's pool pays")  # the second one of the same sender chat
        expected = {NEWS.id: [("upscale", "delivered")], PHOTOS.id: [("upscale", "delivered")],
                    GROUP.id: [("upscale", "delivered")]}
        jobs = await settled(lambda: jobs_by_sender(settings), expected)
        assert jobs == expected
        assert CHANNEL_SENDER.id not in jobs and ANONYMOUS_ADMIN.id not in jobs
    finally:
        await running.stop()


async def test_one_sender_chat_cannot_finish_anothers_face_swap(settings, telegram):
    running = await started(settings, telegram)
    try:
        channel_sends(telegram, GROUP, NEWS, photo=samples.jpeg(200, 200), caption="/faceswap@aiart_test_bot")
        await wait_text(telegram, GROUP.id, "the template photo")
        # the same shared `from` user, another sender chat: not the face swap's second photo
        channel_sends(telegram, GROUP, PHOTOS, photo=samples.jpeg(200, 200))
        anonymous_admin_sends(telegram, GROUP, photo=samples.jpeg(200, 200))
        await wait_handled(telegram)
        assert media(telegram, GROUP.id) == [] and await jobs_by_sender(settings) == {}
        channel_sends(telegram, GROUP, NEWS, photo=samples.jpeg(200, 200))
        await wait_media(telegram, GROUP.id)
        theirs = {NEWS.id: [("faceswap", "delivered")]}
        assert await settled(lambda: jobs_by_sender(settings), theirs) == theirs
        assert not any("went wrong" in text for text in texts(telegram, GROUP.id))
    finally:
        await running.stop()


async def test_an_anonymous_admins_album_is_collected_as_theirs(settings, telegram, sandbox):
    running = await started(settings, telegram)
    try:
        anonymous_admin_sends(telegram, GROUP, photo=samples.jpeg(200, 200), caption="/faceswap@aiart_test_bot",
                              media_group_id="an1")
        anonymous_admin_sends(telegram, GROUP, photo=samples.jpeg(240, 160), media_group_id="an1")
        anonymous_admin_sends(telegram, GROUP, photo=samples.jpeg(160, 120), caption="/generate@aiart_test_bot both",
                              media_group_id="an2")
        anonymous_admin_sends(telegram, GROUP, photo=samples.jpeg(120, 160), media_group_id="an2")
        await wait_media(telegram, GROUP.id, 2)
        [body] = generation_posts(sandbox)
        assert [item["type"] for item in body["content"]] == ["text", "image_url", "image_url"]
        both = {GROUP.id: [("faceswap", "delivered"), ("generate", "delivered")]}
        assert await settled(lambda: jobs_by_sender(settings), both) == both
    finally:
        await running.stop()


async def test_an_allowlist_of_users_does_not_let_the_shared_anonymous_user_in(settings, telegram):
    # an operator who lists a user id cannot know it is also someone's anonymous identity
    running = await started(settings, telegram, bot_allowed_users=frozenset({CHANNEL_SENDER.id, NEWS.id}))
    try:
        channel_sends(telegram, GROUP, PHOTOS, photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        channel_sends(telegram, GROUP, NEWS, photo=samples.jpeg(120, 80), caption="/upscale@aiart_test_bot 2")
        await wait_media(telegram, GROUP.id)
        await wait_handled(telegram)  # the refused sender's job, had it been made, would have its row by now
        theirs = {NEWS.id: [("upscale", "delivered")]}
        assert await settled(lambda: jobs_by_sender(settings), theirs) == theirs
    finally:
        await running.stop()
