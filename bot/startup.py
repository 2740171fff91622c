"""What the operator reads at start-up: one line per problem that stops the bot, and a summary once it runs."""

from __future__ import annotations

import errno
from collections.abc import Iterable

from pydantic import ValidationError
from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from bot.config import Settings
from bot.credits.prices import Prices


class StartupError(Exception):
    """A problem the operator fixes in the configuration or the environment: its message says what and where."""


def require_token(settings: Settings) -> str:
    """The bot token; without one the bot cannot start."""
    if settings.telegram_bot_token is None or not settings.telegram_bot_token.get_secret_value():
        raise StartupError("TELEGRAM_BOT_TOKEN is not set: get a token from @BotFather and put it in .env")
    return settings.telegram_bot_token.get_secret_value()


def settings_problems(error: ValidationError) -> list[str]:
    """One line per invalid setting, named as the operator sets it (the value is never echoed: it may be secret)."""
    lines = []
    for problem in error.errors():
        name = str(problem["loc"][0]).upper() if problem["loc"] else "settings"
        message = problem["msg"].removeprefix("Value error, ")
        lines.append(f"{name}: {message}")
    return lines


def shown_database(url: str) -> str:
    """DATABASE_URL as it may be shown: the password replaced."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a database URL)"


def database_problem(url: str, error: BaseException) -> StartupError:
    """The database could not be opened or brought to the newest schema."""
    return StartupError(f"cannot open the database at DATABASE_URL ({shown_database(url)}): {_reason(error)}; "
                        "check DATABASE_URL and that the database server runs and takes this user")


def port_problem(host: str, port: int, error: OSError) -> StartupError:
    """The HTTP server could not listen."""
    if error.errno == errno.EADDRINUSE:
        return StartupError(f"port {port} on {host} is already in use by another program: set HTTP_PORT to a free "
                            "port, or stop the other program")
    return StartupError(f"cannot listen on {host}:{port} ({_reason(error)}): check HTTP_HOST and HTTP_PORT")


def _reason(error: BaseException) -> str:
    """An exception's class and text, its first line only (a driver's message may run on)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def free_credits_bound(settings: Settings, prices: Prices, *, sandbox: bool) -> str:
    """What a day of free credits may cost the operator at most, in the service's tokens (1 per output image)."""
    free = settings.free_credits_per_day
    if free == 0:
        return "no free credits (FREE_CREDITS_PER_DAY=0)"
    allowance = f"free credits: {free} a person a day"
    if sandbox:
        return f"{allowance} (the sandbox costs nothing)"
    cheapest = min([prices.default, *prices.operations.values()])
    if cheapest == 0:
        return f"{allowance}; an operation priced 0 in CREDIT_PRICES_FILE makes the daily cost unbounded"
    return _people_bound(settings, allowance, free // cheapest) + _budget_bound(settings, cheapest)


def _people_bound(settings: Settings, allowance: str, per_person: int) -> str:
    if settings.bot_allowed_chats or not settings.bot_allowed_users:
        return (f"{allowance}, at most {per_person} service tokens a person a day; the number of people is not "
                "bounded (BOT_ALLOWED_USERS bounds it)")
    people = len(settings.bot_allowed_users | settings.bot_admins)
    who = "the 1 allowed person" if people == 1 else f"the {people} allowed people"
    return f"{allowance}: at most {per_person * people} service tokens a day for {who}"


def guest_mode(supported: bool | None) -> str:
    """Whether guest mode is on (getMe's supports_guest_queries), and how to turn it on when it is off."""
    if supported:
        return "on: a mention of the bot as a reply to a photo, in any chat, is answered in place"
    return ("off: turn it on in @BotFather (your bot → Mini App → Guest Mode) to answer mentions in chats the bot "
            "is not in")
def _budget_bound(settings: Settings, cheapest: int) -> str:
    """The whole bot's daily cap on free credits, and its worst case in service tokens."""
    budget = settings.free_budget
    if budget is None:
        return ""
    return (f"; all together at most {budget} free credits a day (FREE_CREDITS_DAILY_BUDGET), "
            f"at worst {budget // cheapest} service tokens a day")


def who_may_use(settings: Settings) -> str:
    """The allowlists in a few words."""
    if not settings.bot_allowed_users and not settings.bot_allowed_chats:
        return "anyone who finds the bot"
    parts = [_count(settings.bot_allowed_users, "user"), _count(settings.bot_allowed_chats, "chat")]
    count = len(settings.bot_admins)
    admins = f" and {count} admin{'' if count == 1 else 's'}" if count else ""
    return " and those in ".join(part for part in parts if part) + admins


def _count(ids: Iterable[int], noun: str) -> str:
    count = len(list(ids))
    return f"{count} listed {noun}{'' if count == 1 else 's'}" if count else ""
