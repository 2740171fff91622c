"""What people read about the monthly plan (/subscription, /buy's plan button) and the free credits' daily budget."""

from __future__ import annotations

from datetime import datetime

from babel.dates import format_date
from babel.numbers import format_decimal

from bot.i18n import N_, ntr, tr

SUBSCRIPTION_COMMAND = N_("Your monthly plan: credits left, renewal, cancel")
PLAN_EXPIRY = N_("Plan credits not used by the end of each 30-day period are gone; bought packs never expire.")
PLAN_COMPARED = N_("A credit costs {plan} ⭐ in the plan, and from {pack} ⭐ in the packs.")
PLAN_PER_CREDIT = N_("A credit costs {plan} ⭐ in the plan.")
SUBSCRIBE_BUTTON = N_("⭐ Subscribe")
SUBSCRIBE_PROMPT = N_("Press the button to subscribe; Telegram renews it every 30 days until you cancel.")
MY_PLAN_BUTTON = N_("📅 My plan")
CANCEL_BUTTON = N_("Cancel renewal")
RESUME_BUTTON = N_("Resume renewal")
PLAN_CREDITS_LEFT = N_("Plan credits left this period: {left}")
PLAN_RENEWS = N_("It renews on {date}.")
PLAN_CANCELED = N_("Renewal is off: the plan ends on {date}.")
PLAN_ENDED = N_("Your plan ended on {date}.")
NO_PLAN = N_("You have no plan.")
NO_PLAN_OFFERED = N_("This bot offers no monthly plan.")
ALREADY_SUBSCRIBED = N_("You already have the plan: /subscription shows it.")
PLAN_GONE = N_("This plan is no longer offered. Send /buy to see what is.")
PLAN_EDIT_FAILED = N_("Telegram didn't accept the change ({reason}); nothing changed.")
ADMIN_FREE_BUDGET_SPENT = N_("ℹ️ Today's free credits are all given out (FREE_CREDITS_DAILY_BUDGET: {budget}). "
                             "Newcomers get none until midnight UTC; they are offered /buy.")


def day(language: str, at: datetime) -> str:
    """A date as people read it in their language (the period's end)."""
    return format_date(at.date(), format="long", locale=language)


def per_credit(language: str, stars: int, credits: int) -> str:
    """Stars per credit, to two decimals, as the language writes numbers."""
    return format_decimal(round(stars / credits, 2), format="#,##0.##", locale=language)


def plan_button(language: str, credits: int, stars: int) -> str:
    """/buy's button of the plan."""
    return ntr(language, "📅 {count} credit every 30 days — {stars} ⭐", "📅 {count} credits every 30 days — {stars} ⭐",
               credits, stars=stars)


def plan_title(language: str, credits: int) -> str:
    """The plan's invoice title (and its price's label): at most 32 characters."""
    return ntr(language, "{count} credit a month", "{count} credits a month", credits)


def plan_description(language: str, credits: int) -> str:
    """The plan's invoice description, which says before payment that unused credits end with the period."""
    return ntr(language, "{count} credit every 30 days for AI photo edits, renewed until you cancel. "
                         "Credits unused at the end of a period are gone.",
               "{count} credits every 30 days for AI photo edits, renewed until you cancel. "
               "Credits unused at the end of a period are gone.", credits)


def plan_terms(language: str, credits: int, stars: int) -> str:
    """What the plan gives and costs."""
    return ntr(language, "The plan: {count} credit every 30 days for {stars} ⭐.",
               "The plan: {count} credits every 30 days for {stars} ⭐.", credits, stars=stars)


def subscribed(language: str, credits: int, until: datetime) -> str:
    """The thanks for a subscription's first payment."""
    return ntr(language, "Welcome to the plan: {count} credit until {date}. /subscription shows it and lets you cancel.",
               "Welcome to the plan: {count} credits until {date}. /subscription shows it and lets you cancel.",
               credits, date=day(language, until))


def renewed(language: str, credits: int, until: datetime) -> str:
    """The note of a renewal Telegram charged."""
    return ntr(language, "Your plan renewed: {count} credit until {date}.",
               "Your plan renewed: {count} credits until {date}.", credits, date=day(language, until))


def comparison(language: str, plan_credits: int, plan_stars: int, packs: list[tuple[int, int]]) -> str:
    """The price of a credit in the plan against the packs' cheapest, and what ends with a period."""
    plan = per_credit(language, plan_stars, plan_credits)
    if packs:
        cheapest = min(packs, key=lambda pack: pack[1] / pack[0])
        line = tr(language, PLAN_COMPARED, plan=plan, pack=per_credit(language, cheapest[1], cheapest[0]))
    else:
        line = tr(language, PLAN_PER_CREDIT, plan=plan)
    return f"{line} {tr(language, PLAN_EXPIRY)}"
