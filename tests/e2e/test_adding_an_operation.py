"""An operation added through the registry (its module and its sandbox renderer, nothing else) shows up
everywhere: /help, the command menu, the photo menu, and the sandbox, where a task of it completes."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest
from PIL import Image

from bot.config import Settings
from bot.sandbox import Sandbox
from tests.e2e.conftest import ALICE, size_of
from tests.e2e.helpers import wait_media, wait_text
from tests.fakes.telegram import FakeTelegram
from tests.harness import InProcessBot, sandbox_config

#: the operation added from outside the package: its module and its sandbox renderer
MIRROR = (("tests.e2e.plugins.mirror", "tests.e2e.plugins.mirror_renderer"),)


@pytest.fixture
async def sandbox(task_seconds: float) -> AsyncIterator[Sandbox]:
    """The sandbox, with the operation added."""
    async with Sandbox(sandbox_config(task_seconds=task_seconds, extra_operations=MIRROR)) as service:
        yield service


@pytest.fixture
async def bot(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[InProcessBot]:
    """The bot, offering the operation added."""
    running = InProcessBot(settings, telegram, extra_operations=MIRROR)
    await running.start()
    yield running
    await running.stop()


def left_half_is_red(data: bytes) -> bool:
    with Image.open(io.BytesIO(data)) as image:
        red, green, blue = image.convert("RGB").getpixel((2, image.height // 2))
    return red > 200 and green < 60 and blue < 60


async def test_a_registered_operation_is_in_help_the_menus_and_the_sandbox(bot, telegram, alice_chat, sandbox):
    commands = {c["command"]: c["description"] for c in telegram.my_commands()}
    assert commands["mirror"] == "Mirror a photo left to right"

    telegram.user_sends(alice_chat, ALICE, text="/help")
    assert "/mirror — Mirror a photo left to right" in await wait_text(telegram, alice_chat.id, "Commands:")

    # a photo red on its right half: mirrored, its left half is red
    photo = Image.new("RGB", (160, 120), "white")
    photo.paste((220, 20, 20), (80, 0, 160, 120))
    buffer = io.BytesIO()
    photo.save(buffer, "JPEG", quality=95)
    telegram.user_sends(alice_chat, ALICE, photo=buffer.getvalue())
    await wait_text(telegram, alice_chat.id, "What should I do")
    menu = next(m for m in telegram.sent(alice_chat.id) if m.reply_markup)
    buttons = {b["text"]: b["callback_data"] for row in menu.reply_markup["inline_keyboard"] for b in row}
    assert buttons["Mirror"] == "op:mirror"
    telegram.user_presses(alice_chat, ALICE, menu.message_id, "op:mirror")
    [result] = await wait_media(telegram, alice_chat.id)
    assert "Mirrored" in result.caption
    assert size_of(result.media) == (160, 120) and left_half_is_red(result.media)
    assert any(r.method == "POST" and r.path == "/v1/aiart/mirror" for r in sandbox.received)

