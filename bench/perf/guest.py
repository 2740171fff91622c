"""Guest mode: how fast the bot answers `@bot upscale 2` replying to a photo, 20 mentions a second.

The real bot runs as a subprocess (SQLite) against the fake Bot API with guest mode on. 100 people have
started the bot; 4 groups the bot is not in hold a few photos each. For `seconds`, a mention arrives
every 1/rate s, from each person in turn, replying to a photo of one group in turn; the instant sandbox
makes every job finish at once, so the bot answers new mentions while it delivers earlier results
(Telegram's limits kept by the bot, as in production). The answer time runs from the mention entering
the fake's update queue to the bot's answerGuestQuery reaching it (long polling included).

    python -m bench.perf.guest [--rate 20] [--seconds 20]
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from bench.perf.latency import answer_times, at_rate, main
from bench.perf.world import bot_env, running_process, world
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User, group, private_chat

PEOPLE = 100
GROUPS = 4
PHOTOS_EACH = 3
#: seconds after the last mention in which delivered results are counted
SETTLE_S = 30.0


async def run_guest(workdir: Path, *, rate: float = 20.0, seconds: float = 20.0) -> dict[str, float]:
    """Answer times (ms) of guest mentions at `rate` a second for `seconds`, and how many results arrived."""
    async with world() as (telegram, sandbox):
        telegram.guest.enabled = True
        people = [User(60_000 + person, f"P{person}", language_code="en") for person in range(PEOPLE)]
        for person in people:  # they opened the bot once: their results get a file id there
            telegram.user_sends(private_chat(person), person, text="/start")
        photos = []
        for number in range(GROUPS):
            chat = group(-100_600 - number, f"Group {number}")
            telegram.guest.outside(chat)
            photos += [(chat, telegram.guest.post(chat, people[0], photo=samples.jpeg(320 + index, 240)))
                       for index in range(PHOTOS_EACH)]
        database_url = f"sqlite+aiosqlite:///{workdir}/bot.db"
        async with running_process(bot_env(telegram, sandbox, database_url), workdir, telegram):
            await telegram.wait_for(lambda: all(telegram.sent(person.id) for person in people), 60)
            mention = f"@{telegram.bot_user.username} upscale 2"

            def mention_one(number: int) -> str:  # from each person in turn, under each photo in turn
                chat, photo = photos[number % len(photos)]
                return telegram.guest.summon(chat, people[number % PEOPLE], mention, reply_to=photo)
            queries = await at_rate(rate, seconds, mention_one)
            await telegram.wait_for(lambda: all(telegram.guest.queries[q].answered_at for q in queries), 30)
            with contextlib.suppress(AssertionError):  # what arrived by then is the figure
                await telegram.wait_for(lambda: _delivered(telegram, queries) == len(queries), SETTLE_S)
    times = [(telegram.guest.queries[q].answered_at - telegram.guest.queries[q].at) * 1000 for q in queries]
    return {**answer_times("guest", "guest_mentions", times), "guest_results_delivered": _delivered(telegram, queries)}


def _delivered(telegram: FakeTelegram, queries: list[str]) -> int:
    return sum(1 for query in queries if (message := telegram.guest.message_of(query)) and message.photo)


if __name__ == "__main__":
    main(__doc__, run_guest, rate=20.0)
