"""Which photos a Mini App page may name: references the bot issued to one person, and the deep links to them.

A page never sends a Telegram file id on its own word. It sends a reference the bot made:

    f.<file id>.<signature>   a photo the person sent: the signature is HMAC-SHA256 over (their user id,
                              the file id), keyed from the bot token, so another person's id makes it invalid
    r.<job id>.<picture>      a result: valid only for the person whose job it is (checked in the database)

Deep links (`t.me/<bot>?start=app-<screen>-<job id>-<picture>`, at most 64 characters of A-Z a-z 0-9 _ -)
carry only result references: in groups, where a Mini App button cannot be shown, the bot offers only results.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass

#: the Mini App's screens a button may open
SCREENS = ("paint", "frame", "styles", "results")
_FILE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_DEEP_LINK = re.compile(r"app-(paint|frame|styles|results)(?:-(\d{1,18})-(\d{1,2}))?")


@dataclass(frozen=True)
class PhotoRef:
    """A checked-in-form reference: a sent photo's file id, or a result's job and picture."""

    file_id: str | None = None
    job_id: int | None = None
    picture: int = 0


def result_ref(job_id: int, picture: int = 0) -> str:
    """The reference of a job's result picture."""
    return f"r.{job_id}.{picture}"


def deep_link_payload(screen: str, job_id: int | None = None, picture: int = 0) -> str:
    """The `start` parameter that opens `screen` (on a result) from a group."""
    return f"app-{screen}" if job_id is None else f"app-{screen}-{job_id}-{picture}"


def parse_deep_link(payload: str) -> tuple[str, int | None, int] | None:
    """(screen, job id or None, picture) of a deep link's `start` parameter; None for any other text."""
    match = _DEEP_LINK.fullmatch(payload.strip())
    if match is None:
        return None
    screen, job, picture = match.groups()
    return screen, int(job) if job else None, int(picture or 0)


class PhotoRefs:
    """Signs photo references for one person and reads them back."""

    def __init__(self, bot_token: str) -> None:
        self._key = hmac.new(bot_token.encode(), b"aiart-bot mini app photo refs v1", hashlib.sha256).digest()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key=***)"

    def _signature(self, user_id: int, file_id: str) -> str:
        digest = hmac.new(self._key, f"{user_id}\n{file_id}".encode(), hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def photo(self, user_id: int, file_id: str) -> str:
        """The reference to a photo `user_id` sent (valid only in their hands)."""
        return f"f.{file_id}.{self._signature(user_id, file_id)}"

    def read(self, user_id: int, ref: object) -> PhotoRef | None:
        """What a reference names when `user_id` presents it (a result still needs its owner checked); None when
        it is malformed or signed for someone else."""
        if not isinstance(ref, str) or len(ref) > 300:
            return None
        kind, _, rest = ref.partition(".")
        if kind == "r":
            job, _, picture = rest.partition(".")
            if job.isascii() and job.isdigit() and len(job) <= 18 and picture.isascii() and picture.isdigit() \
                    and len(picture) <= 2:
                return PhotoRef(job_id=int(job), picture=int(picture))
            return None
        file_id, _, signature = rest.rpartition(".")
        if kind != "f" or not _FILE_ID.fullmatch(file_id) or not signature.isascii():
            return None
        if not hmac.compare_digest(signature.encode(), self._signature(user_id, file_id).encode()):
            return None
        return PhotoRef(file_id=file_id)
