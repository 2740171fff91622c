"""Operator settings, read from the environment and `.env` (built once in `__main__`)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.jobs.polling import fixed_interval_of

#: what Telegram accepts as a webhook's secret_token
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

IdList = Annotated[frozenset[int], NoDecode]
HostList = Annotated[frozenset[str], NoDecode]
#: where a proxy on the bot's own host connects from
LOOPBACK = frozenset({"127.0.0.0/8", "::1/128"})
#: the free credits a day for everyone together when anyone may use the bot and FREE_CREDITS_DAILY_BUDGET is unset
DEFAULT_FREE_BUDGET = 200


class Settings(BaseSettings):
    """Everything an operator can set; secrets are SecretStr so they never print."""

    # an error must not echo what it was given: that may be a secret
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", hide_input_in_errors=True)

    telegram_bot_token: SecretStr | None = None
    telegram_api_url: str = "https://api.telegram.org"
    #: the bot's own flood limiter (30/s, 1/s per private chat, 20/min per group); off only for benchmarks
    telegram_rate_limit: bool = True

    aiart_api_key: SecretStr | None = None
    aiart_base_url: str = "https://api-b.fotor.com"
    aiart_static_url: str = "https://pub-static.fotor.com"
    #: when set, result images are fetched only from these hosts (and AIART_STATIC_URL's host)
    aiart_result_hosts: HostList = frozenset()
    #: result downloads at once (each up to 50 MB, a headshot has up to ten)
    result_download_concurrency: int = Field(default=4, ge=1)
    #: input images prepared at once, and the megapixels they may have together (a 40 MP image takes
    #: about 250 MB while it is prepared; one larger than the budget is prepared alone)
    image_prepare_concurrency: int = Field(default=2, ge=1)
    image_prepare_megapixels: float = Field(default=50.0, gt=0)

    #: holds the database password, if any: kept out of repr (see database_password)
    database_url: str = Field(default="sqlite+aiosqlite:///./data/bot.db", repr=False)
    public_url: str | None = None
    #: how images reach the service: "auto" = BASE64 where accepted, else the service's upload, else a
    #: signed link of our own; "upload" = always the service's upload; "signed_url" = always our own link
    image_handoff: Literal["auto", "upload", "signed_url"] = "auto"
    #: signs media links; unset, each process makes a random one (its links die with it anyway: the images
    #: are kept in its memory, so with replicas each needs a PUBLIC_URL that reaches it, see docs/deploy.md)
    media_secret: SecretStr | None = Field(default=None, min_length=16)
    media_ttl_s: float = Field(default=600.0, gt=0)

    bot_admins: IdList = frozenset()
    bot_allowed_users: IdList = frozenset()
    bot_allowed_chats: IdList = frozenset()
    user_max_active_jobs: int = Field(default=3, ge=1)
    #: free credits each user may spend a day (an operation costs its price per output image); 0: none.
    #: Small by default: with the real service every free credit is paid from the operator's balance
    free_credits_per_day: int = Field(default=5, ge=0)
    #: whether the free daily credits pay for videos too; off: a video is paid with bought or plan credits
    free_credits_for_video: bool = False
    #: JSON prices in credits per output image (bot/credits/prices.py); unset: 1 per image for everything
    credit_prices_file: Path | None = None
    #: packs sold for Telegram Stars, "credits:stars" pairs, e.g. "10:50,100:400"; empty: payments are off
    credit_packs: str = ""
    #: a monthly Telegram Stars subscription, "credits:stars" per 30 days, e.g. "300:250"; empty: no plan
    credit_subscription: str = ""
    #: the most free credits the whole bot gives in a UTC day; unset: 200 without an allowlist, no limit with one
    free_credits_daily_budget: int | None = Field(default=None, ge=0)

    #: names this process's job leases; give each replica its own (defaults to the host name)
    worker_id: str | None = None
    job_deadline_s: float = Field(default=1200.0, gt=0)
    service_concurrency: int = Field(default=5, ge=1)
    styles_file: Path | None = None
    #: the Mini App's style previews `python -m bot previews` renders (<operation>-<style>.jpg)
    previews_dir: Path = Path("./data/previews")
    #: "adaptive" (learned per operation) or "fixed:<seconds>" (a status check every so many seconds)
    poll_policy: str = "adaptive"
    #: multiplies every poll delay; below 1 only for time-scaled benchmarks against a fast sandbox
    poll_time_scale: float = Field(default=1.0, gt=0)

    sandbox_task_seconds: float = Field(default=3.0, ge=0)
    sandbox_credits: int = 1000

    log_level: str = "INFO"

    #: the bot's one HTTP server (health, metrics, media links, webhooks); MEDIA_HOST/MEDIA_PORT still work.
    #: Unset: loopback, unless a webhook or PUBLIC_URL must be reached from outside (see listen_host)
    http_host: str | None = Field(default=None, validation_alias=AliasChoices("http_host", "media_host"))
    #: 0: any free port (logged); tests use it
    http_port: int = Field(default=8081, ge=0, le=65535, validation_alias=AliasChoices("http_port", "media_port"))
    #: set: webhook mode (setWebhook with this URL; its path is served); unset: long polling
    telegram_webhook_url: str | None = None
    #: the webhook's secret token; unset, derived from the bot token (every replica derives the same)
    telegram_webhook_secret: SecretStr | None = None
    #: how long a replica may handle an update before another takes it over (it crashed)
    update_lease_s: float = Field(default=60.0, gt=0)
    #: the secret path the service's task callbacks are served on (e.g. /aiart/<random>); unset: none
    aiart_webhook_path: str | None = Field(default=None, pattern=r"^/\S+$")
    #: when set, callbacks only from these addresses or networks (the provider names 54.212.95.175, 44.236.127.35)
    aiart_webhook_ips: HostList = frozenset()
    #: the proxies in front of the bot (addresses or networks): X-Forwarded-For is believed only from them
    trusted_proxies: HostList = frozenset()
    #: older form: X-Forwarded-For is believed from a proxy on this host (loopback); TRUSTED_PROXIES replaces it
    aiart_webhook_trust_forwarded: bool = False

    @field_validator("bot_admins", "bot_allowed_users", "bot_allowed_chats", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        """Accept "1, 2,3" as well as a list."""
        if isinstance(value, str):
            return frozenset(int(part) for part in value.replace(";", ",").split(",") if part.strip())
        return value

    @field_validator("aiart_result_hosts", "aiart_webhook_ips", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        """Accept "a.example, b.example" as well as a list."""
        if isinstance(value, str):
            return frozenset(part.strip().lower() for part in value.replace(";", ",").split(",") if part.strip())
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_networks(cls, value: object) -> object:
        """Accept "10.0.0.5, 172.16.0.0/12" as well as a list; each entry must be an address or a network."""
        if isinstance(value, str):
            value = [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
        if isinstance(value, list | tuple | set | frozenset):
            return frozenset(str(ipaddress.ip_network(str(part).strip(), strict=False)) for part in value)
        return value

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _webhook_secret_as_telegram_takes_it(cls, value: SecretStr | None) -> SecretStr | None:
        # checked here: pydantic applies no `pattern` to a SecretStr, and the message must not echo the secret
        if value is not None and not _WEBHOOK_SECRET.fullmatch(value.get_secret_value()):
            raise ValueError("Telegram takes 1 to 256 characters, each A-Z, a-z, 0-9, _ or -")
        return value

    @field_validator("poll_policy")
    @classmethod
    def _known_poll_policy(cls, value: str) -> str:
        fixed_interval_of(value)  # the schedule's own reading of it, so the two never disagree
        return value

    @field_validator("telegram_webhook_url", "public_url")
    @classmethod
    def _absolute_url(cls, value: str | None) -> str | None:
        if value and (urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname):
            raise ValueError("must be an absolute http(s) URL, e.g. https://bot.example.com/telegram")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"use one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @field_validator("aiart_webhook_ips")
    @classmethod
    def _addresses_or_networks(cls, value: frozenset[str]) -> frozenset[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or network, e.g. 54.212.95.175 or 10.0.0.0/8") from None
        return value

    @field_validator("image_handoff")
    @classmethod
    def _signed_links_need_a_public_url(cls, value: str, info: ValidationInfo) -> str:
        if value == "signed_url" and not info.data.get("public_url"):
            raise ValueError("IMAGE_HANDOFF=signed_url needs PUBLIC_URL: where the service can reach this bot")
        return value

    @property
    def database_password(self) -> str | None:
        """The password in DATABASE_URL (in the URL's user part or a `password=` query parameter), decoded."""
        parts = urlsplit(self.database_url)
        userinfo, at, _ = parts.netloc.rpartition("@")
        password = userinfo.partition(":")[2] if at else ""
        if password:
            return unquote(password)
        return next(iter(parse_qs(parts.query).get("password", [])), None)

    @property
    def listen_host(self) -> str:
        """Where the HTTP server listens: HTTP_HOST, else all interfaces when Telegram or the service must
        reach it (a webhook, PUBLIC_URL), else loopback only (its /metrics is nobody else's business)."""
        if self.http_host:
            return self.http_host
        return "0.0.0.0" if self.webhook_mode or self.public_url else "127.0.0.1"

    @property
    def uses_sandbox(self) -> bool:
        """True when no API key is set: the embedded sandbox serves the API (a stand-alone sandbox says so itself)."""
        return self.aiart_api_key is None or not self.aiart_api_key.get_secret_value()

    @property
    def forwarding_proxies(self) -> frozenset[str]:
        """Whose X-Forwarded-For the callback allowlist believes: TRUSTED_PROXIES, else with the older
        AIART_WEBHOOK_TRUST_FORWARDED a proxy on this host, else nobody's."""
        if self.trusted_proxies:
            return self.trusted_proxies
        return LOOPBACK if self.aiart_webhook_trust_forwarded else frozenset()

    @property
    def free_budget(self) -> int | None:
        """The free credits the bot may give a day in all (None: no limit): FREE_CREDITS_DAILY_BUDGET, or
        DEFAULT_FREE_BUDGET when anyone may use the bot."""
        if self.free_credits_daily_budget is not None:
            return self.free_credits_daily_budget
        return None if self.bot_allowed_users or self.bot_allowed_chats else DEFAULT_FREE_BUDGET

    @property
    def webhook_mode(self) -> bool:
        """True when Telegram delivers updates to TELEGRAM_WEBHOOK_URL instead of long polling."""
        return bool(self.telegram_webhook_url)
