"""What a person is told about credits, wherever the job came from: a chat command or the Mini App."""

from __future__ import annotations

from bot.i18n import N_, ntr, tr

NOT_ENOUGH_CREDITS = N_("Not enough credits: this costs {price}, and you can spend {available} now.")
MORE_BY_BUYING = N_("Buy more with /buy.")
#: the Mini App offers the packs right under its refusal
MORE_BY_BUYING_HERE = N_("Pick a pack below to buy more.")
MORE_FROM_OPERATOR = N_("Ask the bot's operator for more.")
FREE_GONE = N_("Today's free credits for everyone are all given out; more come tomorrow.")


def cost_note(language: str, credits: int) -> str:
    """What a job costs, as its status and result captions say it ("3 credits")."""
    return ntr(language, "{count} credit", "{count} credits", credits)


def not_enough_credits(language: str, price: int, available: int, free_per_day: int, *, can_buy: bool,
                       free_gone: bool = False, in_place: bool = False) -> str:
    """The refusal of a job its user cannot pay for, with how to get more (`free_gone`: the day's free
    credits budget is all given; `in_place`: the packs are offered beside the refusal)."""
    parts = [tr(language, NOT_ENOUGH_CREDITS, price=cost_note(language, price), available=available)]
    if free_gone:
        parts.append(tr(language, FREE_GONE))
    if can_buy:
        parts.append(tr(language, MORE_BY_BUYING_HERE if in_place else MORE_BY_BUYING))
    if free_per_day > 0 and not free_gone:
        parts.append(ntr(language, "Tomorrow you get {count} free credit again.",
                         "Tomorrow you get {count} free credits again.", free_per_day))
    if not can_buy and free_per_day <= 0:
        parts.append(tr(language, MORE_FROM_OPERATOR))
    return " ".join(parts)


def pack_button(language: str, credits: int, stars: int) -> str:
    """The /buy button of a pack."""
    return ntr(language, "{count} credit — {stars} ⭐", "{count} credits — {stars} ⭐", credits, stars=stars)


def invoice_title(language: str, credits: int) -> str:
    """A pack's invoice title (and its price's label)."""
    return ntr(language, "{count} credit", "{count} credits", credits)


def invoice_description(language: str, credits: int) -> str:
    """A pack's invoice description."""
    return ntr(language, "{count} credit for AI photo edits with this bot.",
               "{count} credits for AI photo edits with this bot.", credits)
