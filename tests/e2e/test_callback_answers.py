"""Every button press is answered exactly once: each kind of button the bot builds, and presses whose update
is refused, dropped in a flood, made on a keyboard the bot no longer knows, or whose handler fails."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import aiohttp
import pytest

from bot.chats.people import PeopleService
from bot.store import ACTIVE_STATES
from bot.tg import followups, keyboards
from bot.tg.flood import CHAT_SHARE
from bot.tg.handlers import history, language, payments, settings, subscription
from tests.e2e.conftest import ALICE, BOB
from tests.e2e.helpers import job_states
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User
from tests.fakes.telegram_models import Chat, group, private_chat
from tests.harness import InProcessBot, bot_settings, settings_of, sqlite_url

pytestmark = pytest.mark.timeout(180)

#: every callback-data prefix the bot builds, from the modules that build them
PREFIXES = {keyboards.MENU_PREFIX, keyboards.STYLE_PREFIX, keyboards.PICK_PREFIX, followups.PREFIX, history.PREFIX,
            settings.PREFIX, language.PREFIX, payments.BUY_PREFIX.rstrip(":"), subscription.PLAN_PREFIX.rstrip(":"),
            subscription.STATUS_PREFIX}
#: a user outside BOT_ALLOWED_USERS
CAROL = User(1003, "Carol")
#: users who each press one button of the photo menu in their own chat
MENU_USERS = [User(2000 + number, f"Menu{number}") for number in range(30)]
#: data of a keyboard an earlier version of the bot sent: a kind it no longer knows, and a job that is gone
OLD_KEYBOARD = [[{"text": "old", "callback_data": "zz:1"}], [{"text": "gone", "callback_data": "fu:999999:a"}]]


def answer_calls(telegram: FakeTelegram) -> Counter[str]:
    """How many answerCallbackQuery calls the bot made for each query id."""
    return Counter(str(call.params.get("callback_query_id")) for call in telegram.calls
                   if call.method == "answerCallbackQuery")


def keyboard_buttons(telegram: FakeTelegram, chat_id: int) -> list[tuple[int, str]]:
    """(message id, callback data) of every button on the bot's messages in a chat, oldest message first."""
    return [(message.message_id, button["callback_data"]) for message in telegram.sent(chat_id)
            if not message.deleted for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button]


def shape(data: str) -> str:
    """What kind of button this is: its prefix and the next part (a follow-up's too), numbers left out."""
    parts = data.split(":")
    return re.sub(r"\d+", "#", ":".join(parts[:3 if parts[0] == followups.PREFIX else 2]))


class Presser:
    """Presses buttons one at a time, each waited on until the bot has answered it."""

    def __init__(self, telegram: FakeTelegram, settings_values) -> None:
        self.telegram = telegram
        self.settings = settings_values
        self.pressed: list[str] = []

    async def press(self, chat: Chat, user: User, message_id: int, data: str) -> str:
        query = self.telegram.user_presses(chat, user, message_id, data)
        self.pressed.append(data)
        await self.telegram.wait_for(lambda: answer_calls(self.telegram)[query] >= 1, timeout=20)
        return query

    async def settle(self) -> None:
        """Wait until no job is unfinished (their results bring buttons of their own)."""
        active = {state.value for state in ACTIVE_STATES}

        for _ in range(600):
            if not any(state in active for _, state in await job_states(self.settings)):
                return
            await asyncio.sleep(0.05)
        raise AssertionError("jobs still unfinished after 30 s")


async def send_as_the_bot(telegram: FakeTelegram, chat_id: int, text: str, keyboard: list) -> int:
    """A message with an inline keyboard, sent through the Bot API with the bot's token (an earlier version of it)."""
    form = {"chat_id": str(chat_id), "text": text, "reply_markup": json.dumps({"inline_keyboard": keyboard})}
    async with aiohttp.ClientSession() as session, session.post(
            f"{telegram.url}/bot{telegram.token}/sendMessage", data=form) as response:
        return int((await response.json())["result"]["message_id"])


async def test_every_press_is_answered_exactly_once(tmp_path, telegram, sandbox, monkeypatch):
    allowed = ",".join(str(user.id) for user in [ALICE, BOB, *MENU_USERS])
    values = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), worker_id="answers",
                          bot_admins=ALICE.id, bot_allowed_users=allowed, credit_packs="10:50",
                          credit_subscription="300:250")
    bot = InProcessBot(settings_of(values), telegram)
    presser = Presser(telegram, settings_of(values))
    alice, club = private_chat(ALICE), group(-100777, "Answer club")
    await bot.start()
    try:
        # the photo menu: each of its buttons pressed on a menu of its own, in a chat of its own (a menu takes
        # one choice, and each private chat gets about one message a second)
        telegram.user_sends(alice, ALICE, photo=samples.jpeg(96, 64), caption="/colorize")
        first = telegram.user_sends(private_chat(MENU_USERS[0]), MENU_USERS[0], photo=samples.jpeg(96, 64))
        await telegram.wait_for(lambda: bool(keyboard_buttons(telegram, MENU_USERS[0].id)))
        menu_data = list(dict.fromkeys(data for _, data in keyboard_buttons(telegram, MENU_USERS[0].id)))
        assert len(menu_data) < len(MENU_USERS)
        chats = [(private_chat(user), user) for user in MENU_USERS[:len(menu_data)]]
        sent = [first] + [telegram.user_sends(chat, user, photo=samples.jpeg(96, 64)) for chat, user in chats[1:]]

        def menu_of(chat: Chat, request: dict) -> int | None:
            return next((m.message_id for m in telegram.sent(chat.id)
                         if m.reply_to_message_id == request["message_id"] and m.reply_markup), None)
        await telegram.wait_for(lambda: all(menu_of(chat, request) for (chat, _), request in zip(chats, sent)))
        for (chat, user), request, data in zip(chats, sent, menu_data):
            await presser.press(chat, user, menu_of(chat, request), data)
        await presser.settle()
        for command in ("/settings", "/language", "/buy", "/history"):
            telegram.user_sends(alice, ALICE, text=command)
        await telegram.wait_for(lambda: any(shape(data) == f"{history.PREFIX}:#"
                                            for _, data in keyboard_buttons(telegram, alice.id)))
        await telegram.wait_for(lambda: any(data.startswith(payments.BUY_PREFIX)
                                            for _, data in keyboard_buttons(telegram, alice.id)))
        # every other kind of button, once each, as long as presses bring new kinds (pickers, results, panels)
        seen = {shape(data) for data in presser.pressed}
        everyone = [(alice, ALICE), *chats]
        while fresh := [(chat, user, message_id, data) for chat, user in everyone
                        for message_id, data in keyboard_buttons(telegram, chat.id) if shape(data) not in seen]:
            for chat, user, message_id, data in fresh:
                # an earlier press may have redrawn that keyboard: its button comes round again if still there
                if shape(data) not in seen and (message_id, data) in keyboard_buttons(telegram, chat.id):
                    seen.add(shape(data))
                    await presser.press(chat, user, message_id, data)
            await presser.settle()

        # a keyboard the bot no longer knows, in a group: unknown data, a job that is gone, a refused presser
        telegram.user_sends(club, ALICE, text="hello")
        telegram.user_sends(club, BOB, text="hello")
        old = await send_as_the_bot(telegram, club.id, "an old keyboard", OLD_KEYBOARD)
        for row in OLD_KEYBOARD:
            await presser.press(club, ALICE, old, row[0]["callback_data"])
        telegram.user_sends(club, CAROL, text="hello")
        refused = await presser.press(club, CAROL, old, "zz:1")
        # a handler that fails before it answers
        result_id, again = next((message_id, data) for message_id, data in keyboard_buttons(telegram, alice.id)
                                if shape(data) == f"{followups.PREFIX}:#:{followups.AGAIN}")

        async def broken(self, job_id):
            raise RuntimeError("the database went away")
        monkeypatch.setattr(PeopleService, "job", broken)
        failed = await presser.press(alice, ALICE, result_id, again)
        monkeypatch.undo()
        # a flood of presses in one chat, all in one getUpdates answer: those beyond the chat's share are dropped
        flood = [telegram.user_presses(club, BOB, old, "zz:1") for _ in range(CHAT_SHARE * 2)]
        await telegram.wait_for(lambda: all(answer_calls(telegram)[query] >= 1 for query in flood), timeout=30)
    finally:
        await bot.stop()  # whatever was still to answer is answered by now, once or twice

    counts = answer_calls(telegram)
    queries = list(telegram._state.callback_queries)
    assert len(queries) == len(presser.pressed) + len(flood)
    twice = {query: counts[query] for query in queries if counts[query] != 1}
    assert not twice, f"answered other than once: {twice}"
    # the presses covered every kind of button the bot builds, and nothing the bot builds is unlisted
    built = {data.split(":")[0] for chat in telegram._state.chats for _, data in keyboard_buttons(telegram, chat)}
    assert {data.split(":")[0] for data in presser.pressed} >= PREFIXES
    assert built - {"zz"} <= PREFIXES
    # each path was taken: refused, failed, and dropped in the flood (answered with no text by the intake)
    answers = telegram.callback_answers
    assert answers[refused]["show_alert"] and answers[failed]["text"] is None
    assert any(answers[query]["text"] is None for query in flood)
    assert any(answers[query]["text"] for query in flood)
