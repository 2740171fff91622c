"""Finding the images a message brings: a photo, an image document, or the message it replies to."""

from __future__ import annotations

from dataclasses import dataclass

from telegram import Message

from bot.tg import texts

#: Telegram lets bots download files up to this size
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class FileInput:
    """One file a user sent."""

    file_id: str
    size: int | None
    is_document: bool
    mime: str | None = None


def own_images(message: Message | None) -> list[FileInput]:
    """The image files carried by this message itself (its largest photo size, or its document)."""
    if message is None:
        return []
    if message.photo:
        largest = message.photo[-1]
        return [FileInput(largest.file_id, largest.file_size, is_document=False, mime="image/jpeg")]
    if message.document:
        document = message.document
        return [FileInput(document.file_id, document.file_size, is_document=True, mime=document.mime_type)]
    if message.sticker and not (message.sticker.is_animated or message.sticker.is_video):
        return [FileInput(message.sticker.file_id, message.sticker.file_size, is_document=True, mime="image/webp")]
    return []


def message_images(message: Message) -> list[FileInput]:
    """Images for a command: the message's own, else those of the message it replies to."""
    return own_images(message) or own_images(message.reply_to_message)


#: what clients declare for files whose type they could not tell (a JPEG without an extension, say)
_UNKNOWN_MIMES = frozenset({"application/octet-stream", "binary/octet-stream"})


def problem_with(file: FileInput) -> str | None:
    """A reason to refuse a file before queuing it (None when it may be an image: the worker looks inside)."""
    if file.size == 0:
        return texts.EMPTY_FILE
    if file.size is not None and file.size > MAX_DOWNLOAD_BYTES:
        return texts.FILE_TOO_BIG
    mime = (file.mime or "").lower()
    if file.is_document and mime and not mime.startswith("image/") and mime not in _UNKNOWN_MIMES:
        return texts.NOT_AN_IMAGE
    return None
