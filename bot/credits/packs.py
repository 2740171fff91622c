"""The packs of credits the operator sells for Telegram Stars (CREDIT_PACKS, e.g. "10:50,100:400")."""

from __future__ import annotations

from dataclasses import dataclass

#: the invoice payload of a pack names it by its contents, so a changed price makes old invoices invalid
PAYLOAD_PREFIX = "credits:"


@dataclass(frozen=True)
class Pack:
    """`credits` for `stars` Telegram Stars."""

    credits: int
    stars: int

    @property
    def payload(self) -> str:
        """The invoice payload that names this pack (the bot checks it again at pre-checkout)."""
        return f"{PAYLOAD_PREFIX}{self.credits}:{self.stars}"


def parse_packs(text: str | None) -> tuple[Pack, ...]:
    """Packs from "credits:stars" pairs separated by commas; empty: payments are off."""
    packs = []
    for part in (text or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        credits, colon, stars = part.strip().partition(":")
        if not colon or not credits.strip().isdecimal() or not stars.strip().isdecimal():
            raise ValueError(f"CREDIT_PACKS: {part.strip()!r} is not credits:stars, e.g. 10:50")
        pack = Pack(int(credits), int(stars))
        if pack.credits <= 0 or not 1 <= pack.stars <= 10000:
            raise ValueError(f"CREDIT_PACKS: {part.strip()!r} needs credits > 0 and 1-10000 Stars")
        packs.append(pack)
    return tuple(packs)


def pack_of(payload: str, packs: tuple[Pack, ...]) -> Pack | None:
    """The configured pack an invoice payload names, if it is still offered."""
    return next((pack for pack in packs if pack.payload == payload), None)


def credits_in(payload: str) -> int:
    """The credits an invoice payload ("credits:<credits>:<stars>") names; 0 if it names none."""
    parts = payload.split(":")
    return int(parts[1]) if len(parts) == 3 and parts[0] + ":" == PAYLOAD_PREFIX and parts[1].isdecimal() else 0


def stars_in(payload: str) -> int:
    """The Stars an invoice payload ("credits:<credits>:<stars>") asks for; 0 if it names none."""
    parts = payload.split(":")
    return int(parts[2]) if len(parts) == 3 and parts[0] + ":" == PAYLOAD_PREFIX and parts[2].isdecimal() else 0
