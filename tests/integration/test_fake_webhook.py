"""The fake Bot API's webhook methods refuse what Telegram refuses, and deliver as Telegram does."""

from __future__ import annotations

import pytest
import telegram
from telegram.error import BadRequest, Conflict

from tests.fakes.telegram import FakeTelegram


def bot_for(fake: FakeTelegram) -> telegram.Bot:
    return telegram.Bot(fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")


async def test_set_webhook_is_checked_as_telegram_checks_it():
    async with FakeTelegram() as fake, bot_for(fake) as bot:
        with pytest.raises(BadRequest, match="(?i)https url must be provided"):
            await bot.set_webhook("http://127.0.0.1:9/hook")  # plain http, and no test switch
        fake.webhook.allow_http_loopback = True
        with pytest.raises(BadRequest, match="(?i)https url must be provided"):
            await bot.set_webhook("http://example.com/hook")  # the switch covers loopback only
        with pytest.raises(BadRequest, match="only on ports 80, 88, 443 or 8443"):
            await bot.set_webhook("https://example.com:8080/hook")
        assert await bot.set_webhook("https://example.com:8443/hook")
        for secret in ("has space", "x" * 257, "dollar$", "é"):
            with pytest.raises(BadRequest):
                await bot.set_webhook("https://example.com/hook", secret_token=secret)
        assert await bot.set_webhook("https://example.com/hook", secret_token="A-z_09", allowed_updates=["message"])
        info = await bot.get_webhook_info()
        assert info.url == "https://example.com/hook" and info.allowed_updates == ("message",)
        with pytest.raises(Conflict):
            await bot.get_updates(timeout=0)
        assert await bot.delete_webhook()
        assert (await bot.get_webhook_info()).url == ""
        assert await bot.get_updates(timeout=0) == ()
