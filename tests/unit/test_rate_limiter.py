"""The flood limiter: sliding windows per bot, private chat and group, held from grant to answer plus a period."""

from __future__ import annotations

import asyncio
import time

import pytest
from telegram.error import RetryAfter
from telegram.ext import ExtBot

from bot.tg.notifier import retry_seconds
from bot.tg.ratelimit import CallWindow, Limit, TelegramRateLimiter, TokenBucket, is_flood_call, is_group_chat
from tests.fakes.telegram import FakeTelegram, User, group, private_chat

#: they measure time on the real clock: one worker runs every test so marked, one at a time
pytestmark = pytest.mark.xdist_group("timing")


class Recorder:
    """A Bot API stand-in: records when each call started, answers after `latency`."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.starts: list[tuple[float, object]] = []

    async def __call__(self, chat_id: object) -> dict[str, object]:
        self.starts.append((time.monotonic(), chat_id))
        await asyncio.sleep(self.latency)
        return {"ok": True}


def most_in_any_window(times: list[float], period: float) -> int:
    times = sorted(times)
    return max((sum(1 for other in times if start <= other < start + period) for start in times), default=0)


async def send(limiter: TelegramRateLimiter, recorder: Recorder, chat_id: object, endpoint: str = "sendMessage") -> None:
    await limiter.process_request(recorder, (chat_id,), {}, endpoint, {"chat_id": chat_id}, None)


def test_window_counts_calls_from_grant_until_a_period_after_the_answer():
    window = CallWindow(Limit(2, 1.0))
    assert window.free_at(0.0) == 0.0
    first, second = window.grant(), window.grant()
    assert window.free_at(0.1) is None  # both in flight: room comes only with an answer
    window.answered(first, 0.5)
    assert window.free_at(0.6) == pytest.approx(1.5)
    window.answered(second, 0.7)
    assert window.free_at(1.6) == 1.6
    assert window.idle(2.0)


def test_bucket_allows_a_burst_then_one_a_second_counted_from_answers():
    bucket = TokenBucket(burst=3, rate=1.0)
    slots = [bucket.grant() for _ in range(3)]
    assert bucket.free_at(0.0) is None  # the burst is in flight: the next call waits on an answer
    for slot in slots:
        bucket.answered(slot, 0.2)
    # the fourth call must come a second after the answer three calls back
    assert bucket.free_at(0.3) == pytest.approx(1.2)
    fourth = bucket.grant()
    bucket.answered(fourth, 1.3)
    assert bucket.free_at(1.3) == pytest.approx(2.2)  # two seconds after the burst's answers
    assert not bucket.idle(2.0)
    assert bucket.idle(4.4)


def test_a_pause_holds_the_budget_even_with_room():
    window = CallWindow(Limit(5, 1.0))
    window.paused_until = 3.0
    assert window.free_at(1.0) == 3.0
    assert not window.idle(1.0)
    bucket = TokenBucket(burst=3, rate=1.0)
    bucket.paused_until = 2.0
    assert bucket.free_at(0.0) == 2.0


def test_what_counts_toward_flood_limits():
    assert is_flood_call("sendPhoto", {"chat_id": 1})
    assert is_flood_call("deleteMessage", {"chat_id": 1})
    assert is_flood_call("setMessageReaction", {"chat_id": 1})
    assert is_flood_call("editMessageText", {"chat_id": "@channel"})
    assert not is_flood_call("getFile", {"file_id": "x"})
    assert not is_flood_call("getChatMember", {"chat_id": 1, "user_id": 2})
    assert not is_flood_call("deleteWebhook", {})
    assert is_group_chat(-100123) and is_group_chat("-5") and is_group_chat("@channel")
    assert not is_group_chat(42) and not is_group_chat("42")


async def test_overall_limit_holds_across_chats():
    limiter = TelegramRateLimiter(overall=Limit(5, 0.3), private_burst=100)
    recorder = Recorder()
    await asyncio.gather(*(send(limiter, recorder, chat) for chat in range(1, 16)))
    times = [at for at, _ in recorder.starts]
    assert len(times) == 15
    assert most_in_any_window(times, 0.3) <= 5
    assert max(times) - min(times) >= 0.55  # 15 calls at 5 per 0.3 s need at least two more periods


async def test_private_chat_limit_and_a_waiting_chat_does_not_hold_up_the_others():
    limiter = TelegramRateLimiter(overall=Limit(100, 1.0), private_burst=2, private_rate=10.0)
    recorder = Recorder()
    busy = [asyncio.create_task(send(limiter, recorder, 7)) for _ in range(6)]
    await asyncio.sleep(0.05)
    started = time.monotonic()
    await send(limiter, recorder, 8)
    assert time.monotonic() - started < 0.1  # chat 8 went straight through while chat 7 waits
    await asyncio.gather(*busy)
    chat7 = [at for at, chat in recorder.starts if chat == 7]
    # a burst of 2, then 10 a second: any 0.3 s holds at most 2 + 3
    assert most_in_any_window(chat7, 0.3) <= 5
    assert chat7[2] - chat7[0] >= 0.09 and chat7[-1] - chat7[0] >= 0.39
    assert chat7 == sorted(chat7)


async def test_latency_counts_against_the_window():
    # a call occupies its place until a period after its answer, so slow answers slow the rate
    limiter = TelegramRateLimiter(overall=Limit(2, 0.2), private_burst=100)
    recorder = Recorder(latency=0.1)
    started = time.monotonic()
    await asyncio.gather(*(send(limiter, recorder, chat) for chat in range(1, 5)))
    second_pair = sorted(at for at, _ in recorder.starts)[2]
    assert second_pair - started >= 0.29  # answered at 0.1, out of the window at 0.3


async def test_calls_that_do_not_count_pass_straight_through():
    limiter = TelegramRateLimiter(overall=Limit(1, 10.0))
    recorder = Recorder()
    await send(limiter, recorder, 1)
    started = time.monotonic()
    for _ in range(5):
        await limiter.process_request(recorder, (None,), {}, "getFile", {"file_id": "f"}, None)
    assert time.monotonic() - started < 0.1
    assert len(recorder.starts) == 6


async def test_a_long_wait_for_a_busy_group_fails_at_once_instead_of_holding_the_caller():
    limiter = TelegramRateLimiter(group=Limit(1, 30.0), max_wait=1.0)
    recorder = Recorder()
    await send(limiter, recorder, -100500)
    started = time.monotonic()
    with pytest.raises(RetryAfter) as raised:
        await send(limiter, recorder, -100500)
    assert time.monotonic() - started < 0.1
    assert len(recorder.starts) == 1  # never sent: Telegram saw nothing
    assert 29 <= retry_seconds(raised.value) <= 30


async def test_a_429_pauses_the_chat_and_the_call_is_retried():
    limiter = TelegramRateLimiter(max_retries=2)
    attempts: list[float] = []

    async def flaky(chat_id: object) -> dict[str, object]:
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            raise RetryAfter(1)
        return {"ok": True}

    result = await limiter.process_request(flaky, (5,), {}, "sendMessage", {"chat_id": 5}, None)
    assert result == {"ok": True}
    assert len(attempts) == 2 and attempts[1] - attempts[0] >= 0.95


async def test_retries_run_out():
    limiter = TelegramRateLimiter(max_retries=0)

    async def refused(chat_id: object) -> dict[str, object]:
        raise RetryAfter(1)

    with pytest.raises(RetryAfter):
        await limiter.process_request(refused, (5,), {}, "sendMessage", {"chat_id": 5}, 0)


async def test_a_burst_over_many_chats_draws_no_429_from_the_fake_bot_api():
    async with FakeTelegram(rate_limits=True) as fake:
        chats = [private_chat(User(100 + index, f"U{index}")) for index in range(12)]
        room = group(-100777, "Room")
        for chat in chats:
            fake.user_sends(chat, User(chat.id, "U"), text="hi")
        fake.user_sends(room, User(1, "A"), text="hi")
        bot = ExtBot(fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot",
                     rate_limiter=TelegramRateLimiter())
        async with bot:
            started = time.monotonic()
            await asyncio.gather(*(bot.send_message(chat.id, f"m{n}") for chat in chats for n in range(3)),
                                 *(bot.send_message(room.id, f"g{n}") for n in range(3)))
            elapsed = time.monotonic() - started
        assert fake.stats["429"] == 0
        assert sum(len(fake.sent(chat.id)) for chat in chats) == 36
        assert len(fake.sent(room.id)) == 3
        assert elapsed >= 0.9  # 39 messages at 30 a second


async def test_a_departed_replicas_share_is_taken_only_once_its_calls_can_no_longer_count():
    # three replicas with 2 calls each per 0.5 s; the third has sent its share and stopped
    limiters = [TelegramRateLimiter(overall=Limit(6, 0.5), private_burst=100) for _ in range(3)]
    for limiter in limiters:
        limiter.share(3)
    recorder = Recorder()
    await asyncio.gather(*(send(limiter, recorder, 10 * number + n) for number, limiter in enumerate(limiters)
                           for n in range(2)))
    # the other two hear of it at once and have more to send: Telegram still counts the third's calls
    for limiter in limiters[:2]:
        limiter.share(2)
    await asyncio.gather(*(send(limiter, recorder, 100 + 10 * number + n) for number, limiter in enumerate(limiters[:2])
                           for n in range(3)))
    assert most_in_any_window([at for at, _ in recorder.starts], 0.5) <= 6
    # offered again a period later, the larger share is taken: 3 calls each at once
    await asyncio.sleep(0.5)
    recorder.starts.clear()
    for limiter in limiters[:2]:
        limiter.share(2)
    await asyncio.gather(*(send(limiter, recorder, 200 + 10 * number + n) for number, limiter in enumerate(limiters[:2])
                           for n in range(3)))
    times = [at for at, _ in recorder.starts]
    assert max(times) - min(times) < 0.2


async def test_a_replica_joining_others_sends_nothing_until_their_larger_shares_calls_no_longer_count():
    limiter = TelegramRateLimiter(overall=Limit(6, 0.5))
    limiter.share(2)
    limiter.join(others_within=0.3)  # the others take their smaller share within 0.3 s
    recorder = Recorder()
    started = time.monotonic()
    await send(limiter, recorder, 1)
    assert recorder.starts[0][0] - started >= 0.79  # and what they sent before leaves the window 0.5 s later
