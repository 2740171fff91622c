"""What replicas share through the database: the poller lock, conversation state, each chat's send slots."""

from __future__ import annotations

import asyncio
import functools
import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.chats.conversations import Conversations
from bot.store import session_factory
from bot.store.heartbeats import PollerLock
from bot.store.send_slots import FLIGHT_POLL_S, ChatSendRepository
from bot.tg import heartbeats as heartbeats_module
from bot.tg.heartbeats import BEAT_LAG_S, GONE_AFTER_S, HEARTBEAT_S, Heartbeat
from bot.tg.ratelimit import Limit, TelegramRateLimiter
from tests.fakes.telegram_limits import RateLimiter as FakeRateLimits
from tests.fakes.telegram_models import Chat

#: they measure time on the real clock: one worker runs every test so marked, one at a time
pytestmark = pytest.mark.xdist_group("timing")

#: the backend a test is about (the db_url fixture runs others on both)
ONLY_POSTGRES = pytest.mark.parametrize("db_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                                        indirect=True)
ONLY_SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@ONLY_POSTGRES  # the lock is PostgreSQL's
async def test_one_replica_holds_the_poller_lock_and_another_takes_it_when_its_connection_dies(store_engine):
    stop = asyncio.Event()
    first, second = PollerLock(store_engine, retry=0.1), PollerLock(store_engine, retry=0.1)
    assert await first.acquire(stop)
    waiting = asyncio.create_task(second.acquire(stop))
    await asyncio.sleep(0.5)
    assert not waiting.done()  # held by the first
    await first._drop()  # its connection closes, as when the process dies
    assert await asyncio.wait_for(waiting, 5)
    await second.release()


@ONLY_SQLITE  # one process
async def test_on_sqlite_the_process_always_polls(store_engine):
    stop = asyncio.Event()
    assert await PollerLock(store_engine).acquire(stop)
    stop.set()
    assert await PollerLock(store_engine).watch(stop)


async def test_a_menu_is_used_once_and_an_album_is_taken_once_when_due(store_engine):
    conversations = Conversations(session_factory(store_engine))
    keep = timedelta(minutes=1)
    assert await conversations.first_use(1, "menu", "7:m", keep_for=keep)
    assert not await conversations.first_use(1, "menu", "7:m", keep_for=keep)
    await conversations.put(1, "pending", 5, {"file_ids": ["a"]}, keep_for=keep, due_in=0.2)
    assert await conversations.take_due("pending") == []  # not quiet long enough
    await conversations.change(1, "pending", 5, lambda data: {"file_ids": [*data["file_ids"], "b"]},
                               keep_for=keep, due_in=0.3)  # another item: quiet time starts again
    await asyncio.sleep(0.25)
    assert await conversations.take_due("pending") == []
    await asyncio.sleep(0.1)
    [album] = await conversations.take_due("pending")
    assert album.data == {"file_ids": ["a", "b"]}
    assert await conversations.take_due("pending") == []
    assert await conversations.get(1, "pending", 5) is None


async def test_expired_state_is_gone_and_cleaned_up(store_engine):
    now = [datetime.now(UTC)]
    conversations = Conversations(session_factory(store_engine), clock=lambda: now[0])
    await conversations.put(2, "picker", 9, {"images": []}, keep_for=timedelta(minutes=1))
    assert await conversations.get(2, "picker", 9) == {"images": []}
    now[0] += timedelta(minutes=2)
    assert await conversations.get(2, "picker", 9) is None
    assert await conversations.first_use(2, "menu", "1:m", keep_for=timedelta(minutes=1))
    assert await conversations.cleanup() == 1


@ONLY_POSTGRES  # SQLite is one process: nothing to share
async def test_a_chats_send_slots_are_shared_a_burst_then_one_per_interval(store_engine):
    async with session_factory(store_engine)() as session, session.begin():
        taken = [await ChatSendRepository(session).take(42, interval=1.0, burst=3, stale=60.0) for _ in range(5)]
    assert taken[:3] == [(0.0, 1), (0.0, 2), (0.0, 3)]
    # no room: the time until there is, and nothing taken (a second refusal says the same)
    assert taken[3][0] == pytest.approx(1.0, abs=0.05) and taken[3][1] == 0
    assert taken[4][0] == pytest.approx(1.0, abs=0.05) and taken[4][1] == 0


async def take_slot(sessions, chat_id: int, *, interval: float, stale: float) -> tuple[float, int]:
    """One shared send slot of a chat (a burst of 3), taken in a transaction of its own: (wait, call number)."""
    async with sessions() as session, session.begin():
        return await ChatSendRepository(session).take(chat_id, interval=interval, burst=3, stale=stale)


@ONLY_POSTGRES  # SQLite is one process: nothing to share
async def test_a_chats_next_call_is_spaced_from_the_answer_of_the_call_a_burst_before_it(store_engine):
    sessions = session_factory(store_engine)
    take = functools.partial(take_slot, sessions, 43, interval=1.0, stale=60.0)

    assert [await take() for _ in range(3)] == [(0.0, 1), (0.0, 2), (0.0, 3)]
    await asyncio.sleep(1.05)
    # room by the clock, but the first call is still on the wire: Telegram may count it only now
    assert await take() == (FLIGHT_POLL_S, 0)
    async with sessions() as session, session.begin():
        await ChatSendRepository(session).answered(43, 1, interval=1.0, burst=3)
    wait, number = await take()
    assert number == 0 and wait == pytest.approx(1.0, abs=0.05)  # a second after that answer


@ONLY_POSTGRES  # SQLite is one process: nothing to share
async def test_a_call_never_answered_holds_up_the_chat_only_until_it_is_stale(store_engine):
    sessions = session_factory(store_engine)
    take = functools.partial(take_slot, sessions, 44, interval=0.1, stale=0.5)

    # the first call's replica died with it on the wire: its answer never comes
    assert [await take() for _ in range(3)] == [(0.0, 1), (0.0, 2), (0.0, 3)]
    await asyncio.sleep(0.3)
    assert await take() == (FLIGHT_POLL_S, 0)
    await asyncio.sleep(0.6)
    assert await take() == (0.0, 4)


@ONLY_POSTGRES  # the chats' budgets are shared through PostgreSQL
async def test_replicas_posting_in_one_chat_keep_its_limit_while_one_waits_for_its_share_of_the_bot(store_engine):
    # Telegram's own bookkeeping (the fake Bot API's): a burst of 3 in a private chat, then 1 a second
    telegram = FakeRateLimits(time.monotonic)
    chat = Chat(4242)
    refused = []

    async def send(chat_id: object) -> bool:
        if chat_id == chat.id and telegram.admit(chat) is not None:
            refused.append(time.monotonic())
        return True

    sessions = session_factory(store_engine)
    first, second = TelegramRateLimiter(overall=Limit(6, 1.0)), TelegramRateLimiter(overall=Limit(6, 1.0))
    beats = [Heartbeat(sessions, replica=f"r{number}", limiter=limiter, shared=True).beat
             for number, limiter in enumerate((first, second))]
    for beat in (*beats, beats[0]):  # each has seen the other
        await beat()
    await asyncio.sleep(HEARTBEAT_S + BEAT_LAG_S + 1.0)  # the one that joined waits that long before it posts
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def post(limiter: TelegramRateLimiter, chat_id: int, at: float) -> None:
        await asyncio.sleep(max(0.0, started + at - loop.time()))
        await limiter.process_request(send, (chat_id,), {}, "sendMessage", {"chat_id": chat_id}, None)

    # the first replica's share (3 a second) is taken by other chats: its post in the chat waits a second
    # for it; meanwhile the second replica posts a burst there
    await asyncio.gather(*(post(first, other, 0.0) for other in (1, 2, 3)), post(first, chat.id, 0.05),
                         *(post(second, chat.id, 0.5) for _ in range(3)))
    assert refused == []


@ONLY_POSTGRES  # the chats' budgets are shared through PostgreSQL
async def test_a_call_telegram_counts_late_in_its_flight_still_spaces_the_other_replicas_calls(store_engine):
    # Telegram counts a call at some moment between its sending and its answer: here the first replica's
    # post in a chat is counted at the end of half a second on the wire (a starved process, a slow upload),
    # and the second replica posts a burst there soon after
    telegram = FakeRateLimits(time.monotonic)
    chat = Chat(4343)
    refused = []

    async def send(chat_id: object, flight: float) -> bool:
        await asyncio.sleep(flight)
        if telegram.admit(chat) is not None:
            refused.append(time.monotonic())
        return True

    sessions = session_factory(store_engine)
    first, second = TelegramRateLimiter(), TelegramRateLimiter()
    beats = [Heartbeat(sessions, replica=f"r{number}", limiter=limiter, shared=True).beat
             for number, limiter in enumerate((first, second))]
    for beat in (*beats, beats[0]):  # each has seen the other
        await beat()
    await asyncio.sleep(HEARTBEAT_S + BEAT_LAG_S + 1.0)  # the one that joined waits that long before it posts
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def post(limiter: TelegramRateLimiter, at: float, flight: float) -> None:
        await asyncio.sleep(max(0.0, started + at - loop.time()))
        await limiter.process_request(send, (chat.id, flight), {}, "sendMessage", {"chat_id": chat.id}, None)

    await asyncio.gather(post(first, 0.0, 0.5), *(post(second, 1.0, 0.0) for _ in range(3)))
    assert refused == [], telegram.hits


@ONLY_POSTGRES  # replicas are counted in PostgreSQL
async def test_a_replica_joining_others_waits_until_they_have_taken_their_smaller_share(store_engine):
    sessions = session_factory(store_engine)
    first, second = TelegramRateLimiter(), TelegramRateLimiter()
    sent = []

    async def send(chat_id: object) -> bool:
        sent.append(time.monotonic())
        return True

    await Heartbeat(sessions, replica="first", limiter=first, shared=True).beat()
    started = time.monotonic()
    await first.process_request(send, (1,), {}, "sendMessage", {"chat_id": 1}, None)
    assert sent[-1] - started < 0.5  # alone: no one else's share to wait for
    await Heartbeat(sessions, replica="second", limiter=second, shared=True).beat()
    started = time.monotonic()
    await second.process_request(send, (2,), {}, "sendMessage", {"chat_id": 2}, None)
    # the first still sends at its whole budget until its next heartbeat (and a busy one's may be late);
    # those calls count at Telegram for a second more
    assert sent[-1] - started >= HEARTBEAT_S + BEAT_LAG_S + 1.0 - 0.05


@ONLY_POSTGRES  # replicas are counted in PostgreSQL
async def test_replicas_count_each_other_on_the_databases_clock_whatever_their_own_clocks_say(store_engine, monkeypatch):
    sessions = session_factory(store_engine)
    behind = Heartbeat(sessions, replica="behind", limiter=None, shared=True)
    ahead = Heartbeat(sessions, replica="ahead", limiter=None, shared=True)

    class Skewed(datetime):
        """The clock of a host running GONE_AFTER_S + 2 s behind."""

        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) - timedelta(seconds=GONE_AFTER_S + 2)

    with monkeypatch.context() as patched:
        patched.setattr(heartbeats_module, "datetime", Skewed)
        await behind.beat()
    assert await ahead.beat() == 2


async def test_replicas_take_equal_shares_of_the_bots_rate():
    limiter = TelegramRateLimiter()
    calls = []

    class Gate:
        async def take(self, chat_id: object) -> tuple[float, int]:
            calls.append(chat_id)
            return 0.0, len(calls)

        async def answered(self, chat_id: object, call: int) -> None:
            answered.append(call)

    answered: list[int] = []
    gate = Gate()
    limiter.share(3, gate)
    sent = []

    async def send(**kwargs):
        sent.append(asyncio.get_running_loop().time())
        return True

    await asyncio.gather(*(limiter.process_request(send, (), {}, "sendMessage", {"chat_id": 100 + n}, None)
                           for n in range(12)))
    assert sent[9] - sent[0] < 0.5 and sent[10] - sent[0] >= 0.9  # 10 a second here: a third of 30
    assert sorted(calls) == [100 + n for n in range(12)]
    assert sorted(answered) == list(range(1, 13))  # each call's answer reaches the shared budget
    limiter.share(1, gate)  # alone again: the whole budget (a period later), the chats' budgets still shared
    calls.clear()
    await limiter.process_request(send, (), {}, "sendMessage", {"chat_id": 5}, None)
    assert calls == [5]


@ONLY_POSTGRES  # replicas are counted in PostgreSQL
async def test_a_replica_the_others_stop_hearing_sends_at_a_trickle_and_rejoins_as_a_newcomer(store_engine):
    sessions = session_factory(store_engine)
    unreachable = False

    def flaky():
        if unreachable:
            raise OSError("the database is unreachable from this replica")
        return sessions()

    sent = []

    async def send(chat_id: object) -> bool:
        sent.append(time.monotonic())
        return True

    limiter = TelegramRateLimiter(overall=Limit(30, 1.0))
    cut_off = Heartbeat(flaky, replica="cut-off", limiter=limiter, shared=True)
    await cut_off.keep_heard()
    unreachable = True
    with pytest.raises(OSError):
        await cut_off.keep_heard()  # just missed: the others still count it, its share stands
    await asyncio.gather(*(limiter.process_request(send, (n,), {}, "sendMessage", {"chat_id": n}, None)
                           for n in range(10)))
    assert sent[-1] - sent[0] < 0.5
    await asyncio.sleep(GONE_AFTER_S - BEAT_LAG_S)
    with pytest.raises(OSError):
        await cut_off.keep_heard()  # by now the others may have taken its share
    sent.clear()
    await asyncio.gather(*(limiter.process_request(send, (n,), {}, "sendMessage", {"chat_id": n}, None)
                           for n in range(100, 103)))
    assert sent[-1] - sent[0] >= 1.9  # one call a second
    await Heartbeat(sessions, replica="other", limiter=None, shared=True).beat()
    unreachable = False
    await cut_off.keep_heard()  # heard again, among two: it waits until the others have made room
    started = time.monotonic()
    await limiter.process_request(send, (200,), {}, "sendMessage", {"chat_id": 200}, None)
    assert sent[-1] - started >= HEARTBEAT_S + BEAT_LAG_S + 1.0 - 0.05
