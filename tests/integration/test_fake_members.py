"""The fake Bot API's getChatMember, driven by python-telegram-bot's Bot: statuses and errors as Telegram's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import ChatMemberAdministrator, ChatMemberBanned, ChatMemberLeft, ChatMemberMember, ChatMemberOwner
from telegram.constants import ChatMemberStatus
from telegram.error import BadRequest

from tests.fakes.telegram import FakeTelegram, User, group, private_chat

ALICE = User(id=1001, first_name="Alice", username="alice")
BOB = User(id=1002, first_name="Bob")
CAROL = User(id=1003, first_name="Carol")
GROUP = group(-100321, "Members club")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.user_sends(GROUP, ALICE, text="hi")
        fake.user_sends(private_chat(CAROL), CAROL, text="hello")  # Carol is known, but never in the group
        yield fake


async def test_statuses_in_a_group(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.members.make_owner(GROUP, BOB)

    owner = await bot.get_chat_member(GROUP.id, BOB.id)
    member = await bot.get_chat_member(GROUP.id, ALICE.id)  # wrote there
    outsider = await bot.get_chat_member(GROUP.id, CAROL.id)
    the_bot = await bot.get_chat_member(GROUP.id, fake.bot_user.id)

    assert isinstance(owner, ChatMemberOwner) and owner.status == ChatMemberStatus.OWNER == "creator"
    assert owner.user.id == BOB.id and owner.is_anonymous is False
    assert isinstance(member, ChatMemberMember) and member.user.first_name == "Alice"
    assert isinstance(outsider, ChatMemberLeft)
    assert the_bot.status == ChatMemberStatus.MEMBER


async def test_promotion_leaving_and_banning(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.members.make_admin(GROUP, CAROL)
    admin = await bot.get_chat_member(GROUP.id, CAROL.id)
    assert isinstance(admin, ChatMemberAdministrator) and admin.can_delete_messages

    fake.members.leave(GROUP, CAROL)
    assert isinstance(await bot.get_chat_member(GROUP.id, CAROL.id), ChatMemberLeft)
    assert CAROL.id not in fake.chat_admins.get(GROUP.id, set())  # leaving drops the rights

    fake.members.ban(GROUP, ALICE)
    banned = await bot.get_chat_member(GROUP.id, ALICE.id)
    assert isinstance(banned, ChatMemberBanned) and banned.status == "kicked"

    fake.members.join(GROUP, ALICE)  # unbanned and back
    assert (await bot.get_chat_member(GROUP.id, ALICE.id)).status == ChatMemberStatus.MEMBER


async def test_a_private_chat_has_the_user_and_the_bot(fake: FakeTelegram, bot: telegram.Bot) -> None:
    carol_chat = private_chat(CAROL)
    assert (await bot.get_chat_member(carol_chat.id, CAROL.id)).status == ChatMemberStatus.MEMBER
    assert (await bot.get_chat_member(carol_chat.id, fake.bot_user.id)).status == ChatMemberStatus.MEMBER
    with pytest.raises(BadRequest, match="(?i)user not found"):
        await bot.get_chat_member(carol_chat.id, ALICE.id)


async def test_errors_for_unknown_chats_and_users(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match="(?i)chat not found"):
        await bot.get_chat_member(-999, ALICE.id)
    with pytest.raises(BadRequest, match="(?i)user not found"):
        await bot.get_chat_member(GROUP.id, 424242)
