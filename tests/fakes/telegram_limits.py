"""Telegram's flood limits and random fault injection for the fake Bot API."""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tests.fakes.telegram_models import Chat, TgFaults

# Methods that count toward flood limits: everything that makes or changes a message in a chat.
FLOOD_METHODS = frozenset({
    "sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendLivePhoto", "sendMediaGroup", "editMessageText",
    "editMessageCaption", "editMessageReplyMarkup", "deleteMessage", "sendChatAction",
    "setMessageReaction",
})
FILE_DOWNLOAD = "download"  # pseudo-method name for faults on the file endpoint

BOT_LIMIT_PER_SECOND = 30
PRIVATE_CHAT_RATE = 1.0  # messages per second, refilled continuously
PRIVATE_CHAT_BURST = 3
GROUP_LIMIT_PER_MINUTE = 20


#: admitted calls remembered per chat, to show what a refusal in that chat followed
_RECENT = PRIVATE_CHAT_BURST + 1


@dataclass(frozen=True)
class LimitHit:
    """A call refused with 429: which limit it hit, and the admitted calls that filled that limit."""

    limit: str  # "bot" (30 a second), "group" (20 a minute) or "private" (a burst of 3, then 1 a second)
    chat_id: int | None
    at: float
    #: the admitted calls the refused one came too soon after: the chat's last few, or the bot's window
    earlier: tuple[float, ...]

    def __str__(self) -> str:
        gaps = ", ".join(f"{self.at - moment:.3f}" for moment in self.earlier)
        return (f"429 from the {self.limit} limit in chat {self.chat_id} at {self.at:.3f}, "
                f"{len(self.earlier)} earlier call(s) {gaps} s before it")


class RateLimiter:
    """Sliding windows per bot and per group, a token bucket per private chat; `hits` says what each 429 hit."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._bot_window: deque[float] = deque()
        self._group_windows: dict[int, deque[float]] = {}
        self._private_buckets: dict[int, tuple[float, float]] = {}  # chat id -> (tokens, at)
        self._recent: dict[int, deque[float]] = {}
        self.hits: list[LimitHit] = []

    def admit(self, chat: Chat | None) -> int | None:
        """Consume one call's quota, or return the whole seconds to wait (>= 1) without consuming."""
        now = self._clock()
        waits = {"bot": self._bot_wait(now)}
        if chat is not None and chat.is_group:
            waits["group"] = self._group_wait(chat.id, now)
        elif chat is not None:
            waits["private"] = self._private_wait(chat.id, now)
        limit, wait = max(waits.items(), key=lambda item: item[1])
        if wait > 0:
            self._hit(limit, chat, now)
            return max(1, math.ceil(wait))
        self._bot_window.append(now)
        if chat is not None:
            self._recent.setdefault(chat.id, deque(maxlen=_RECENT)).append(now)
        if chat is not None and chat.is_group:
            self._group_windows.setdefault(chat.id, deque()).append(now)
        elif chat is not None:
            tokens, _ = self._private_buckets[chat.id]
            self._private_buckets[chat.id] = (tokens - 1, now)
        return None

    def _hit(self, limit: str, chat: Chat | None, now: float) -> None:
        chat_id = None if chat is None else chat.id
        if limit == "bot":
            earlier = tuple(self._bot_window)
        elif limit == "group":
            earlier = tuple(self._group_windows.get(chat.id, ()) if chat is not None else ())
        else:
            earlier = tuple(self._recent.get(chat.id, ()) if chat is not None else ())
        self.hits.append(LimitHit(limit, chat_id, now, earlier))

    def _bot_wait(self, now: float) -> float:
        return _window_wait(self._bot_window, now, 1.0, BOT_LIMIT_PER_SECOND)

    def _group_wait(self, chat_id: int, now: float) -> float:
        window = self._group_windows.setdefault(chat_id, deque())
        return _window_wait(window, now, 60.0, GROUP_LIMIT_PER_MINUTE)

    def _private_wait(self, chat_id: int, now: float) -> float:
        tokens, at = self._private_buckets.get(chat_id, (float(PRIVATE_CHAT_BURST), now))
        tokens = min(float(PRIVATE_CHAT_BURST), tokens + (now - at) * PRIVATE_CHAT_RATE)
        self._private_buckets[chat_id] = (tokens, now)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / PRIVATE_CHAT_RATE


def _window_wait(window: deque[float], now: float, span: float, limit: int) -> float:
    while window and window[0] <= now - span:
        window.popleft()
    if len(window) < limit:
        return 0.0
    return window[len(window) - limit] + span - now


class FaultPlan:
    """Seeded choice of which requests fail and how."""

    def __init__(self, faults: TgFaults) -> None:
        self.faults = faults
        self._random = random.Random(faults.seed)

    def pick(self, method: str) -> str | None:
        """The fault kind for this request, or None to serve it normally."""
        faults = self.faults
        if faults.rate <= 0 or not faults.kinds:
            return None
        if faults.methods is not None:
            eligible = method in faults.methods
        else:
            eligible = method not in ("getUpdates", FILE_DOWNLOAD)
        if not eligible or self._random.random() >= faults.rate:
            return None
        return self._random.choice(faults.kinds)
