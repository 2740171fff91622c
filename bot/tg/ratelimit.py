"""Staying under Telegram's flood limits: 30 messages a second, about 1 a second per chat, 20 a minute per group.

PTB's AIORateLimiter limits the bot overall and per group only, and lets a 30-message burst through
at any moment, so a backlog of results spread over private chats still draws 429s. This limiter
keeps a budget per scope and grants a call only when every budget it counts against has room: a
sliding window for the bot (30 a second) and for each group (20 a minute), a token bucket for each
private chat (a burst of 3, then 1 a second).

A call holds its place from the moment it is granted until its answer arrives, and the budget is
worked out from the answer times. Telegram counts the call at some moment in between, so however
long the request spends on the wire, Telegram never sees more calls than the budget allowed: the
limiter never causes a 429 by itself, and costs only the request's latency. A 429 that comes anyway
(another process using the token) pauses the chat and the bot for its `retry_after`, then the call
is retried. A call that would wait longer than `max_wait` for its chat (a busy group has room for
20 a minute) is not held: it fails at once with RetryAfter, like a 429 that never reached Telegram,
so the worker reschedules the delivery and its slot goes to other chats.

A call that has to wait for its chat's budget runs inside ON_WAIT's context manager (bot.waiting) when
the caller set one: the update intake sets it, so a handler waiting to post in a chat over its limit
holds neither a handler slot nor the getUpdates offset that other chats need; the worker sets it, so
a result waiting for its chat holds none of the delivery slots other chats' results need.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter
from telegram.warnings import PTBDeprecationWarning

from bot.waiting import ON_WAIT

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Bot API methods that post, change or remove something in a chat: the ones flood limits count
_FLOOD_PREFIXES = ("send", "edit", "copy", "forward", "delete")
_FLOOD_METHODS = frozenset({"setMessageReaction", "pinChatMessage", "unpinChatMessage", "stopPoll"})
#: chats whose budgets are checked for being idle once this many are known
_FORGET_AFTER = 1024


@dataclass(frozen=True)
class Limit:
    """At most `calls` calls in any `period` seconds."""

    calls: int
    period: float

    def __post_init__(self) -> None:
        if self.calls < 1 or self.period <= 0:
            raise ValueError("a limit needs at least one call per positive period")


class Budget(Protocol):
    """Room for calls in one scope; a granted call is a slot whose answer time is filled in later."""

    paused_until: float

    def free_at(self, now: float) -> float | None:
        """When a new call fits (`now` or later); None when that waits on a call still in flight."""

    def grant(self) -> list[float | None]:
        """Count a call about to be sent; returns its slot."""

    def answered(self, slot: list[float | None], now: float) -> None:
        """The call came back (or failed) at `now`."""

    def withdraw(self, slot: list[float | None]) -> None:
        """The granted call was not sent after all: it no longer counts."""

    def idle(self, now: float) -> bool:
        """Whether nothing is held or paused (so the budget can be forgotten)."""


class CallWindow:
    """At most `limit.calls` in any `limit.period`: calls in flight, plus answered ones until a period after."""

    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self._in_flight = 0
        #: when each answered call leaves the window; answers arrive in time order, so this stays sorted
        self._leaves: deque[float] = deque()
        self.paused_until = 0.0

    def free_at(self, now: float) -> float | None:
        """When a new call fits (`now` or later); None when that waits on a call still in flight."""
        while self._leaves and self._leaves[0] <= now:
            self._leaves.popleft()
        excess = self._in_flight + len(self._leaves) - self.limit.calls + 1
        if excess <= 0:
            at = now
        elif excess <= len(self._leaves):
            at = self._leaves[excess - 1]
        else:
            return None
        return max(at, self.paused_until)

    def grant(self) -> list[float | None]:
        """Count a call that is about to be sent."""
        self._in_flight += 1
        return [None]

    def answered(self, slot: list[float | None], now: float) -> None:
        """The call came back (or failed): it leaves the window one period from now."""
        slot[0] = now
        self._in_flight -= 1
        self._leaves.append(now + self.limit.period)

    def withdraw(self, slot: list[float | None]) -> None:
        """The granted call was not sent after all: it no longer counts."""
        self._in_flight -= 1

    def idle(self, now: float) -> bool:
        """Whether the window holds nothing and pauses nothing (so it can be forgotten)."""
        return self.free_at(now) == now and self._in_flight == 0 and not self._leaves


class TokenBucket:
    """A burst of `burst` calls, then `rate` a second: Telegram's "about one a second per chat, short bursts allowed".

    For Telegram's bucket (counting calls at unknown moments between grant and answer) to admit call
    k, the calls from any earlier call j to k must fit in `burst` plus what refills between them.
    Taking j at its answer and k at its grant makes that hold whatever the latency: the m-th most
    recent call must have been answered at least (m + 1 - burst) / rate seconds ago.
    """

    #: answered calls remembered; an older one cannot hold up a new call once these have been spaced
    HISTORY = 64

    def __init__(self, burst: int, rate: float) -> None:
        if burst < 1 or rate <= 0:
            raise ValueError("a token bucket needs a burst of at least one and a positive rate")
        self.burst = burst
        self.rate = rate
        self._slots: deque[list[float | None]] = deque()
        self.paused_until = 0.0

    def free_at(self, now: float) -> float | None:
        """When a new call fits (`now` or later); None when that waits on a call still in flight."""
        at = max(now, self.paused_until)
        for recency, slot in enumerate(reversed(self._slots), start=1):
            if recency < self.burst:
                continue
            if slot[0] is None:
                return None
            at = max(at, slot[0] + (recency + 1 - self.burst) / self.rate)
        return at

    def grant(self) -> list[float | None]:
        """Count a call that is about to be sent."""
        slot: list[float | None] = [None]
        self._slots.append(slot)
        while len(self._slots) > self.HISTORY and self._slots[0][0] is not None:
            self._slots.popleft()
        return slot

    def answered(self, slot: list[float | None], now: float) -> None:
        """The call came back (or failed) at `now`."""
        slot[0] = now

    def withdraw(self, slot: list[float | None]) -> None:
        """The granted call was not sent after all: it no longer counts."""
        for index, held in enumerate(self._slots):
            if held is slot:
                del self._slots[index]
                return

    def idle(self, now: float) -> bool:
        """Whether the bucket has refilled and pauses nothing (so it can be forgotten)."""
        if now < self.paused_until or any(slot[0] is None for slot in self._slots):
            return False
        return not self._slots or (self._slots[-1][0] or 0.0) + self.burst / self.rate <= now


@dataclass
class _ChatBudget:
    budget: Budget
    #: calls to one chat are granted in arrival order
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    chat_id: object = None


class ChatGate(Protocol):
    """Each chat's budget shared with other replicas, counted as this limiter counts its own: from the answers."""

    async def take(self, chat_id: object) -> tuple[float, int]:
        """The chat's slot for a call going now: (0, the call's number) when taken, else (the seconds until
        the chat has room, 0) and nothing taken."""

    async def answered(self, chat_id: object, call: int) -> None:
        """The call taken as number `call` came back (or failed)."""


def is_flood_call(endpoint: str, data: dict[str, Any]) -> bool:
    """Whether a Bot API call counts toward flood limits: it acts in a chat (has chat_id) and posts or changes."""
    if data.get("chat_id") is None:
        return False
    return endpoint.startswith(_FLOOD_PREFIXES) or endpoint in _FLOOD_METHODS


def is_group_chat(chat_id: object) -> bool:
    """Groups, supergroups and channels have negative ids (or an @username); private chats positive ids."""
    if isinstance(chat_id, str):
        try:
            chat_id = int(chat_id)
        except ValueError:
            return True
    return isinstance(chat_id, int) and chat_id < 0


def retry_seconds(error: RetryAfter) -> float:
    """RetryAfter's wait in seconds, read through its public property.

    PTB 22 returns an int by default, with a PTBDeprecationWarning announcing the change to a timedelta,
    and a timedelta when PTB_TIMEDELTA is set; both are read here, and the announcement is silenced only
    around this one read.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = error.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def waiting_out_429s(call: Callable[[], Awaitable[T]], *, budget: float, what: str) -> T:
    """`call`, made again after each 429 for as long as Telegram asks, up to `budget` seconds of waiting in all
    (for a wait longer than the rate limiter holds a call); the 429 that would pass the budget is raised."""
    waited = 0.0
    while True:
        try:
            return await call()
        except RetryAfter as error:
            wait = retry_seconds(error)
            if waited + wait > budget:
                raise
            log.info("%s rate-limited; waiting %.1fs as Telegram asked", what, wait)
            await asyncio.sleep(wait)
            waited += wait


class TelegramRateLimiter(BaseRateLimiter[int]):
    """Flood control per bot, per private chat and per group; `rate_limit_args` overrides the retries after a 429."""

    def __init__(self, *, overall: Limit = Limit(30, 1.0), private_burst: int = 3, private_rate: float = 1.0,
                 group: Limit = Limit(20, 60.0), max_retries: int = 3, max_wait: float = 5.0) -> None:
        self._overall = CallWindow(overall)
        self._private_burst = private_burst
        self._private_rate = private_rate
        self._group_limit = group
        self._max_retries = max_retries
        self._max_wait = max_wait
        self._clock = time.monotonic
        self._chats: dict[object, _ChatBudget] = {}
        self._overall_turn = asyncio.Lock()
        self._answer = asyncio.Event()
        self._bot_limit = overall
        self._gate: ChatGate | None = None
        #: when a larger share (another replica left) may be taken, once offered
        self._grow_at: float | None = None

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to tear down."""

    async def process_request(self, callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
                              args: Any, kwargs: dict[str, Any], endpoint: str, data: dict[str, Any],
                              rate_limit_args: int | None) -> bool | dict[str, Any] | list[dict[str, Any]]:
        """Send the call when every budget it counts against has room; retry after a 429."""
        if not is_flood_call(endpoint, data):
            return await callback(*args, **kwargs)
        chat = self._chat(data["chat_id"])
        on_wait = ON_WAIT.get()
        if on_wait is None or self._free_now(chat):
            return await self._send(chat, callback, args, kwargs, endpoint, rate_limit_args)
        async with on_wait():
            return await self._send(chat, callback, args, kwargs, endpoint, rate_limit_args)

    def _free_now(self, chat: _ChatBudget) -> bool:
        now = self._clock()
        return not chat.turn.locked() and chat.budget.free_at(now) == now and self._overall.free_at(now) == now

    async def _send(self, chat: _ChatBudget, callback: Callable[..., Coroutine[Any, Any, Any]], args: Any,
                    kwargs: dict[str, Any], endpoint: str, rate_limit_args: int | None) -> Any:
        retries = self._max_retries if rate_limit_args is None else rate_limit_args
        attempt = 0
        while True:
            slots, call = await self._take_turn(chat)
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as error:
                wait = retry_seconds(error)
                until = self._clock() + wait
                chat.budget.paused_until = max(chat.budget.paused_until, until)
                self._overall.paused_until = max(self._overall.paused_until, until)
                if attempt >= retries:
                    raise
                attempt += 1
                log.warning("Telegram asked to slow down (%s): waiting %.1fs before retry %d", endpoint, wait, attempt)
            finally:
                self._done(chat, slots)
                await self._answered_at_gate(chat, call)

    def _chat(self, chat_id: object) -> _ChatBudget:
        key = str(chat_id)
        chat = self._chats.get(key)
        if chat is None:
            if len(self._chats) >= _FORGET_AFTER:
                self._forget_idle_chats()
            budget: Budget = (CallWindow(self._group_limit) if is_group_chat(chat_id)
                              else TokenBucket(self._private_burst, self._private_rate))
            chat = self._chats[key] = _ChatBudget(budget, chat_id=chat_id)
        return chat

    def _forget_idle_chats(self) -> None:
        now = self._clock()
        for key in [key for key, chat in self._chats.items() if not chat.turn.locked() and chat.budget.idle(now)]:
            del self._chats[key]

    async def _take_turn(self, chat: _ChatBudget) -> tuple[tuple[list[float | None], list[float | None]], int]:
        # The chat's turn first, so a chat that must wait does not hold up the others; then the bot's.
        # While this call holds the chat's turn nobody else is granted in that chat, so the chat's
        # budget can only gain room while we wait for the bot's; both are granted at the same moment.
        self._refuse_long_wait(chat)
        async with chat.turn:
            while True:
                self._refuse_long_wait(chat)
                await self._until_free(chat.budget)
                async with self._overall_turn:
                    await self._until_free(self._overall)
                    while (at := chat.budget.free_at(self._clock())) is None or at > self._clock():
                        await self._until_free(chat.budget)  # only a 429 pause can land here
                    slots = chat.budget.grant(), self._overall.grant()
                # The slot other replicas see is taken only now that the call goes: one taken before
                # waiting for this replica's share would reach Telegram late, bunched with calls other
                # replicas made on time in the same chat.
                try:
                    wait, call = await self._through_gate(chat)
                except BaseException:
                    self._withdraw(chat, slots)
                    raise
                if wait <= 0:
                    return slots, call
                self._withdraw(chat, slots)
                if wait > self._max_wait:
                    raise RetryAfter(timedelta(seconds=math.ceil(wait)))
                await asyncio.sleep(wait)

    def _refuse_long_wait(self, chat: _ChatBudget) -> None:
        now = self._clock()
        at = chat.budget.free_at(now)
        if at is not None and at - now > self._max_wait:
            raise RetryAfter(timedelta(seconds=math.ceil(at - now)))

    def _done(self, chat: _ChatBudget, slots: tuple[list[float | None], list[float | None]]) -> None:
        now = self._clock()
        chat.budget.answered(slots[0], now)
        self._overall.answered(slots[1], now)
        self._wake()

    def _withdraw(self, chat: _ChatBudget, slots: tuple[list[float | None], list[float | None]]) -> None:
        chat.budget.withdraw(slots[0])
        self._overall.withdraw(slots[1])
        self._wake()

    def _wake(self) -> None:
        """Wake everyone waiting on an answer or a change; each re-checks its own budgets."""
        self._answer.set()
        self._answer = asyncio.Event()

    async def _until_free(self, window: Budget) -> None:
        while True:
            now = self._clock()
            at = window.free_at(now)
            if at is not None and at <= now:
                return
            answer = self._answer
            timeout = None if at is None else at - now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(answer.wait(), timeout)

    # --- replicas -------------------------------------------------------------------------------

    def share(self, replicas: int, gate: ChatGate | None = None) -> None:
        """Split the bot's budget with other replicas: an equal share of the overall limit each, and each
        chat's calls through `gate` (the chat's budget every replica draws from).

        A smaller share applies at once. A larger one (a replica left) only once it has been offered for
        a period: until then the calls the departed replica made may still count at Telegram."""
        replicas = max(1, replicas)
        calls = max(1, self._bot_limit.calls // replicas)
        self._gate = gate
        now = self._clock()
        if calls > self._overall.limit.calls:
            if self._grow_at is None:
                self._grow_at = now + self._bot_limit.period
            if now < self._grow_at:
                return
        self._grow_at = None
        if calls != self._overall.limit.calls:
            log.info("%d replica(s) share the bot's budget: %d calls per %.0f s here", replicas, calls,
                     self._bot_limit.period)
        self._overall.limit = Limit(calls, self._bot_limit.period)
        self._wake()  # waiters re-check against the new share

    def step_back(self) -> None:
        """Send one call per period at most: the other replicas no longer hear this one and may have taken its share."""
        self.share(self._bot_limit.calls, self._gate)

    def join(self, others_within: float) -> None:
        """This replica has just joined others, which take their smaller share within `others_within`
        seconds: send nothing until then and a period more, while calls made at their larger share
        may still count at Telegram."""
        until = self._clock() + others_within + self._bot_limit.period
        self._overall.paused_until = max(self._overall.paused_until, until)

    async def _through_gate(self, chat: _ChatBudget) -> tuple[float, int]:
        """Take the chat's slot in the budget the replicas share for a call going now: (0, the call's number),
        or the seconds until the chat has room (nothing taken); (0, 0) without a gate or when it fails."""
        gate = self._gate
        if gate is None:
            return 0.0, 0
        try:
            return await gate.take(chat.chat_id)
        except Exception as error:  # the database is unreachable: the local budget still holds
            log.warning("could not take a send slot in chat %s (%s)", chat.chat_id, error)
            return 0.0, 0

    async def _answered_at_gate(self, chat: _ChatBudget, call: int) -> None:
        """Tell the replicas' shared budget that the call came back, so theirs are spaced from now."""
        gate = self._gate
        if gate is None or not call:
            return
        try:
            await gate.answered(chat.chat_id, call)
        except Exception as error:  # the slot stays held until it is stale: the chat waits, nothing is sent early
            log.warning("could not record an answer in chat %s (%s)", chat.chat_id, error)
