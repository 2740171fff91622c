"""The README's run command, as a newcomer runs it: only a token and a Bot API URL; sandbox and SQLite by default."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from tests.e2e.conftest import ALICE, size_of
from tests.e2e.helpers import wait_media, wait_text
from tests.fakes import samples

REPO = Path(__file__).resolve().parents[2]


async def test_python_m_bot_serves_a_conversation_with_no_other_configuration(tmp_path, telegram, alice_chat):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AIART_", "TELEGRAM_", "DATABASE_", "BOT_", "PUBLIC_"))}
    env.update(TELEGRAM_BOT_TOKEN=telegram.token, TELEGRAM_API_URL=telegram.url, SANDBOX_TASK_SECONDS="0.3",
               PYTHONPATH=str(REPO))
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", cwd=tmp_path, env=env,
                                                   stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        await telegram.wait_for(lambda: any(c.method == "getUpdates" for c in telegram.calls), 30)
        telegram.user_sends(alice_chat, ALICE, text="/help")
        await wait_text(telegram, alice_chat.id, "Commands:")
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(210, 140), caption="/upscale 2")
        [result] = await wait_media(telegram, alice_chat.id, timeout=30)
        assert size_of(result.media) == (420, 280)
        assert (tmp_path / "data" / "bot.db").exists()  # the default SQLite file
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()[-2000:]
    log = stderr.decode()
    assert "embedded sandbox" in log
    assert telegram.token not in log and telegram.token.split(":")[1] not in log
