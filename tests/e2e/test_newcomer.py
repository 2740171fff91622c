"""The README's run command, as a newcomer runs it: only a token and a Bot API URL; sandbox and SQLite by default."""

from __future__ import annotations

from tests.e2e.conftest import ALICE, size_of
from tests.e2e.helpers import wait_media, wait_text
from tests.fakes import samples
from tests.harness import BotProcess, bot_settings


async def test_python_m_bot_serves_a_conversation_with_no_other_configuration(tmp_path, telegram, alice_chat):
    bot = BotProcess(bot_settings(telegram, sandbox_task_seconds=0.3), tmp_path, telegram)
    try:
        await bot.start(timeout=30)
        telegram.user_sends(alice_chat, ALICE, text="/help")
        await wait_text(telegram, alice_chat.id, "Commands:")
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(210, 140), caption="/upscale 2")
        [result] = await wait_media(telegram, alice_chat.id, timeout=30)
        assert size_of(result.media) == (420, 280)
        assert (tmp_path / "data" / "bot.db").exists()  # the default SQLite file
    finally:
        await bot.close()  # SIGTERM
    log = bot.log_text()
    assert bot.returncode == 0, log[-2000:]
    assert "embedded sandbox" in log
    assert telegram.token not in log and telegram.token.split(":")[1] not in log
