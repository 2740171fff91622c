"""A setting the bot cannot use is reported as one line naming the variable, never echoing a secret's value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config import Settings
from bot.startup import settings_problems


def problems(**values: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None, **values)  # type: ignore[arg-type]
    return settings_problems(caught.value)


def test_each_bad_setting_is_one_line_that_names_its_variable():
    lines = problems(aiart_webhook_ips="54.212.95.175, nope", poll_policy="sometimes", log_level="loud",
                     public_url="bot.example.com", image_handoff="signed_url", http_port="80000")
    assert sorted(line.split(":")[0] for line in lines) == [
        "AIART_WEBHOOK_IPS", "HTTP_PORT", "IMAGE_HANDOFF", "LOG_LEVEL", "POLL_POLICY", "PUBLIC_URL"]
    assert all("\n" not in line for line in lines)


@pytest.mark.parametrize("name, value", [("telegram_webhook_secret", "has spaces and a secret-word"),
                                         ("telegram_webhook_secret", "x" * 257),
                                         ("media_secret", "short-secret")])
def test_a_bad_secret_is_named_and_never_echoed(name, value):
    [line] = problems(**{name: value})
    assert line.startswith(name.upper() + ": ")
    assert value not in line and "secret-word" not in line


def test_a_webhook_secret_telegram_accepts_is_taken():
    secret = "A-z_09" * 40
    assert Settings(_env_file=None, telegram_webhook_secret=secret).telegram_webhook_secret.get_secret_value() == secret
