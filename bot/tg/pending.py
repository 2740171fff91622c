"""A request waiting for more images (a face swap's second photo, an album's other items): its record and
where every replica finds it (a conversation row per user and chat)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from telegram import Bot, Message

from bot.i18n import tr
from bot.operations.catalogue import Operation
from bot.tg import texts
from bot.tg.context import CustomContext, conversations, deps, language_for
from bot.tg.inputs import FileInput, problem_with
from bot.tg.replies import reply

PENDING_KEY = "pending"
PENDING_FOR = timedelta(minutes=10)
#: a two-image request is remembered this long past PENDING_FOR, to tell its user it ran out
PENDING_KEPT_AFTER = timedelta(days=1)


@dataclass(frozen=True)
class WaitingRequest:
    """A job waiting for more images from one user in one chat (face swap: face, then template; an album)."""

    operation: str
    args_text: str
    source: Message
    file_ids: tuple[str, ...] = ()
    started: datetime | None = None
    #: set while the rest of an album is collected: only its items are taken, and quiet time closes it
    album_id: str | None = None
    #: how many of the album's items reached the bot (any kind: a video adds no image)
    album_items: int = 1

    def with_images(self, file_ids: list[str], *, album_item: bool = False) -> WaitingRequest:
        """This request with more images (and, for an album's item, one item more)."""
        return replace(self, file_ids=(*self.file_ids, *file_ids), album_items=self.album_items + album_item)

    def has_all(self, operation: Operation) -> bool:
        """Whether it has every image its operation takes (one with optional extras waits for its album's end)."""
        return operation.most_images == operation.images and len(self.file_ids) >= operation.images

    def to_data(self) -> dict[str, Any]:
        """The record as stored (JSON)."""
        return {"operation": self.operation, "args_text": self.args_text, "source": self.source.to_dict(),
                "file_ids": list(self.file_ids), "album_id": self.album_id, "album_items": self.album_items,
                "started": None if self.started is None else self.started.isoformat()}

    @classmethod
    def of_data(cls, data: dict[str, Any], bot: Bot) -> WaitingRequest:
        """The record stored as `data` (rows written before album_items existed count one item)."""
        started = data.get("started")
        return cls(data["operation"], data["args_text"], Message.de_json(data["source"], bot), tuple(data["file_ids"]),
                   started=None if started is None else datetime.fromisoformat(started),
                   album_id=data.get("album_id"), album_items=data.get("album_items", 1))


def _keep() -> timedelta:
    # kept past PENDING_FOR, so the user can still be told it ran out
    return PENDING_FOR + PENDING_KEPT_AFTER


async def load(context: CustomContext, chat_id: int, user_id: int) -> WaitingRequest | None:
    """This user's waiting request in this chat, or None."""
    data = await conversations(context).get(chat_id, PENDING_KEY, user_id)
    return None if data is None else WaitingRequest.of_data(data, context.bot)


async def save(context: CustomContext, user_id: int, request: WaitingRequest, *,
               due_in: float | None = None) -> None:
    """Store (or replace) the user's waiting request; `due_in` seconds makes an album due for collection."""
    await conversations(context).put(request.source.chat_id, PENDING_KEY, user_id, request.to_data(),
                                     keep_for=_keep(), due_in=due_in)


async def change(context: CustomContext, chat_id: int, user_id: int,
                 edit: Callable[[WaitingRequest], WaitingRequest], *, due_in: float | None = None) -> WaitingRequest | None:
    """Edit the user's waiting request under a lock (two replicas never lose an image); the request as edited,
    or None without one. One that now has all its images is forgotten: the caller queues it."""
    edited: list[WaitingRequest] = []
    operations = deps(context).operations

    def edit_row(data: dict[str, Any]) -> dict[str, Any] | None:
        request = edit(WaitingRequest.of_data(data, context.bot))
        edited.append(request)
        return None if request.has_all(operations[request.operation]) else request.to_data()

    before = await conversations(context).change(chat_id, PENDING_KEY, user_id, edit_row, keep_for=_keep(),
                                                  due_in=due_in)
    return None if before is None else edited[-1]


async def drop(context: CustomContext, user_id: int, chat_id: int) -> bool:
    """Forget a user's waiting request; True if there was one."""
    return await conversations(context).drop(chat_id, PENDING_KEY, user_id)


def expired(context: CustomContext, request: WaitingRequest) -> bool:
    """Whether the request's time ran out (its row is kept a while longer, to say so)."""
    return request.started is not None and deps(context).clock() - request.started > PENDING_FOR


def still_waiting_text(context: CustomContext, request: WaitingRequest, language: str) -> str | None:
    """What the live request still needs, or None once it ran out."""
    if expired(context, request):
        return None
    operation = deps(context).operations.get(request.operation)
    if operation is None:
        return None
    needed = operation.image_names[min(len(request.file_ids), len(operation.image_names) - 1)]
    return tr(language, texts.PAIR_STILL_WAITING, needed=tr(language, needed), title=tr(language, operation.title_noun).lower())


async def told_problem(context: CustomContext, message: Message, request: WaitingRequest,
                       images: list[FileInput]) -> bool:
    """Say what is wrong with a file sent for a waiting request (which stays as it is); True when something was."""
    problem = next((problem for image in images if (problem := problem_with(image)) is not None), None)
    if problem is None:
        return False
    language = await language_for(context, message)
    await reply(message, f"{tr(language, problem)}\n{still_waiting_text(context, request, language)}")
    return True
