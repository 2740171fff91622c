"""Operator settings, read from the environment and `.env` (built once in `__main__`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

IdList = Annotated[frozenset[int], NoDecode]


class Settings(BaseSettings):
    """Everything an operator can set; secrets are SecretStr so they never print."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    telegram_bot_token: SecretStr | None = None
    telegram_api_url: str = "https://api.telegram.org"

    aiart_api_key: SecretStr | None = None
    aiart_base_url: str = "https://api-b.fotor.com"
    aiart_static_url: str = "https://pub-static.fotor.com"

    database_url: str = "sqlite+aiosqlite:///./data/bot.db"
    public_url: str | None = None
    media_host: str = "127.0.0.1"
    media_port: int = 8081

    bot_admins: IdList = frozenset()
    bot_allowed_users: IdList = frozenset()
    bot_allowed_chats: IdList = frozenset()
    user_max_active_jobs: int = Field(default=3, ge=1)
    user_max_jobs_per_day: int = Field(default=50, ge=1)

    #: names this process's job leases; give each replica its own (defaults to the host name)
    worker_id: str | None = None
    job_deadline_s: float = Field(default=1200.0, gt=0)
    service_concurrency: int = Field(default=5, ge=1)
    styles_file: Path | None = None

    sandbox_task_seconds: float = Field(default=3.0, ge=0)
    sandbox_credits: int = 1000

    log_level: str = "INFO"

    @field_validator("bot_admins", "bot_allowed_users", "bot_allowed_chats", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        """Accept "1, 2,3" as well as a list."""
        if isinstance(value, str):
            return frozenset(int(part) for part in value.replace(";", ",").split(",") if part.strip())
        return value

    @property
    def uses_sandbox(self) -> bool:
        """True when no API key is set: the embedded sandbox serves the API."""
        return self.aiart_api_key is None or not self.aiart_api_key.get_secret_value()
