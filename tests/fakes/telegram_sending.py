"""The send methods of the fake Bot API: sendMessage, sendPhoto, sendDocument, sendMediaGroup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_checks import check_reply_markup, formatted, message_text
from tests.fakes.telegram_models import (
    MAX_ALBUM_ITEMS,
    MAX_CAPTION_LENGTH,
    MAX_DOCUMENT_UPLOAD_BYTES,
    MIN_ALBUM_ITEMS,
    ApiError,
    Chat,
    StoredMessage,
    bad_request,
)
from tests.fakes.telegram_state import TelegramState

Files = dict[str, tuple[str, bytes, str]]


@dataclass
class _Media:
    """A photo or document to attach: fresh bytes, or an existing file reused by file_id."""

    data: bytes
    file_name: str
    mime_type: str
    existing_file_id: str | None = None


@dataclass
class _Prepared:
    """A validated message, ready to be stored once every part of the request has passed."""

    kind: str
    fields: dict[str, Any]


class MessageSender:
    """Implements the methods that put new bot messages into chats."""

    def __init__(self, state: TelegramState) -> None:
        self._state = state

    async def send_message(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """sendMessage."""
        chat = self._state.require_chat(params)
        text, entities = message_text(params, too_long="message is too long")
        markup = check_reply_markup(params.get("reply_markup"), chat)
        reply_to = self._state.resolve_reply(chat, params)
        message = self._store(chat, _Prepared("text", {"text": text, "entities": entities}),
                              reply_to, markup)
        return message.to_dict()

    async def send_photo(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """sendPhoto."""
        return self._send_one(params, files, "photo")

    async def send_document(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """sendDocument."""
        return self._send_one(params, files, "document")

    def _send_one(self, params: dict[str, Any], files: Files, kind: str) -> dict[str, Any]:
        chat = self._state.require_chat(params)
        media = self._media(params.get(kind), files, kind, kind)
        prepare = self._prepare_photo if kind == "photo" else self._prepare_document
        prepared = prepare(media, params)
        markup = check_reply_markup(params.get("reply_markup"), chat)
        reply_to = self._state.resolve_reply(chat, params)
        return self._store(chat, prepared, reply_to, markup).to_dict()

    async def send_media_group(self, params: dict[str, Any], files: Files) -> list[dict[str, Any]]:
        """sendMediaGroup: 2-10 photos, or 2-10 documents, sent as one album."""
        chat = self._state.require_chat(params)
        items = params.get("media")
        if items is None:
            raise bad_request('parameter "media" is required')
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise bad_request("can't parse media JSON object")
        if len(items) > MAX_ALBUM_ITEMS:
            raise bad_request("too much messages to send as an album")
        if len(items) < MIN_ALBUM_ITEMS:
            raise bad_request("media group must contain 2-10 items")
        types = {item.get("type") for item in items}
        if not types <= {"photo", "document"}:
            unsupported = sorted(map(str, types - {"photo", "document"}))
            raise bad_request(f"media types {unsupported} are not modelled by the fake")
        if len(types) > 1:
            raise bad_request("document can't be mixed with other media types")
        prepared = []
        for item in items:
            media = self._media(item.get("media"), files, item["type"], item["type"])
            if item["type"] == "photo":
                prepared.append(self._prepare_photo(media, item))
            else:
                prepared.append(self._prepare_document(media, item))
        reply_to = self._state.resolve_reply(chat, params)
        group_id = self._state.next_media_group_id()
        albums = [_Prepared(p.kind, {**p.fields, "media_group_id": group_id}) for p in prepared]
        return [self._store(chat, item, reply_to, None).to_dict() for item in albums]

    def _store(self, chat: Chat, prepared: _Prepared, reply_to: StoredMessage | None,
               markup: dict[str, Any] | None) -> StoredMessage:
        return self._state.add_message(
            chat, self._state.bot, prepared.kind, from_bot=True, reply_to=reply_to,
            reply_markup=markup, **prepared.fields,
        )

    def caption_of(self, params: dict[str, Any]) -> dict[str, Any]:
        """A media message's caption fields, checked (for send methods modelled in their own modules)."""
        return self._caption(params)

    def media_of(self, value: Any, files: Files, kind: str) -> _Media:
        """A media parameter resolved as the other send methods do (an upload, attach:// or a file_id)."""
        return self._media(value, files, kind, kind)

    def photo_of(self, value: Any, files: Files) -> list[dict[str, Any]]:
        """A photo parameter as sendPhoto takes it (an upload, attach:// or a photo's file_id): its sizes."""
        return self._prepare_photo(self._media(value, files, "photo", "photo"), {}).fields["photo"]

    def _caption(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("caption") is None:
            return {}
        text, entities = formatted(params, "caption", "caption_entities")
        if len(text) > MAX_CAPTION_LENGTH:
            raise bad_request("message caption is too long")
        return {"caption": text or None, "caption_entities": entities}

    def _prepare_photo(self, media: _Media, params: dict[str, Any]) -> _Prepared:
        caption = self._caption(params)
        if media.existing_file_id is not None:
            sizes = self._state.photo_sets[media.existing_file_id]
        else:
            sizes = self._state.store_photo(media.data)
        return _Prepared("photo", {"photo": sizes, "media": media.data, "mime_type": media.mime_type,
                                   "file_name": media.file_name, **caption})

    def _prepare_document(self, media: _Media, params: dict[str, Any]) -> _Prepared:
        caption = self._caption(params)
        if len(media.data) > MAX_DOCUMENT_UPLOAD_BYTES:
            raise ApiError(413, "Request Entity Too Large")
        if media.existing_file_id in self._state.documents:
            document = self._state.documents[media.existing_file_id]
        else:
            document = self._state.store_document(media.data, media.file_name, media.mime_type)
        return _Prepared("document", {"document": document, "media": media.data,
                                      "file_name": document["file_name"],
                                      "mime_type": document["mime_type"], **caption})

    def _media(self, value: Any, files: Files, field: str, kind: str) -> _Media:
        """Resolve a photo/document parameter: direct upload, attach:// or file_id."""
        if value is None and field in files:
            return self._uploaded(files[field], kind)
        if not isinstance(value, str) or not value:
            raise bad_request(f"there is no {kind} in the request")
        if value.startswith("attach://"):
            upload = files.get(value.removeprefix("attach://"))
            if upload is None:
                raise bad_request("wrong file identifier/HTTP URL specified")
            return self._uploaded(upload, kind)
        if value.startswith(("http://", "https://")):
            raise bad_request("sending by URL is not modelled by the fake: the bot uploads its results")
        stored = self._state.files.get(value)
        if stored is None:
            raise bad_request("wrong file identifier/HTTP URL specified")
        if kind == "photo" and stored.kind != "photo":
            raise bad_request("can't use file of type Document as Photo")
        name = self._state.documents.get(value, {}).get("file_name", "photo.jpg")
        mime = self._state.documents.get(value, {}).get("mime_type", "image/jpeg")
        return _Media(stored.data, name, mime, existing_file_id=value)

    def _uploaded(self, upload: tuple[str, bytes, str], kind: str) -> _Media:
        file_name, data, content_type = upload
        if not data:
            raise bad_request("file must be non-empty")
        return _Media(data, file_name or kind, content_type or "application/octet-stream")
