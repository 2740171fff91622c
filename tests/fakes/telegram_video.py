"""sendVideo and sendLivePhoto of the fake Bot API, checked as Telegram documents them.

An uploaded video is at most 50 MB (the whole request is refused with 413 above that, as for documents); a
URL is fetched by Telegram only up to 20 MB, which the fake does not model (it refuses URLs, like its other
send methods: the bot uploads its results). A thumbnail must be a new upload (attach:// or its own part,
never a file_id or URL: "thumbnails can't be reused"), a JPEG under 200 kB whose sides are at most 320 px.
width, height and duration are the sender's word, integers as Telegram parses them. The Video object keeps
what was sent, so a test can decode the bytes (`SentMessage.media`).

sendLivePhoto (Bot API 10.0) takes a video of at most 10 seconds and 10 MB and its static photo, each an upload
or a file_id of its own kind: "Sending live photos by a URL is currently unsupported". The fake reads the video's
length from the file (PyAV), where Telegram would. The message has `live_photo` and, for older clients, `photo`.
"""

from __future__ import annotations

import io
from typing import Any

import av
from PIL import Image

from tests.fakes.telegram_checks import check_reply_markup
from tests.fakes.telegram_models import MAX_DOCUMENT_UPLOAD_BYTES, ApiError, bad_request
from tests.fakes.telegram_sending import Files, MessageSender
from tests.fakes.telegram_state import TelegramState

MAX_VIDEO_UPLOAD_BYTES = MAX_DOCUMENT_UPLOAD_BYTES
MAX_THUMBNAIL_BYTES = 200 * 1024
MAX_THUMBNAIL_SIDE = 320
MAX_LIVE_PHOTO_BYTES = 10 * 1024 * 1024
MAX_LIVE_PHOTO_SECONDS = 10


def _integer(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise bad_request(f"can't parse {name}") from None
    if number < 0:
        raise bad_request(f"{name} must be non-negative")
    return number


def check_thumbnail(params: dict[str, Any], files: Files) -> dict[str, Any] | None:
    """The thumbnail's PhotoSize, after Telegram's rules for a thumbnail."""
    value = params.get("thumbnail")
    upload = files.get("thumbnail") if value is None else None
    if isinstance(value, str) and value.startswith("attach://"):
        upload = files.get(value.removeprefix("attach://"))
        if upload is None:
            raise bad_request("wrong file identifier/HTTP URL specified")
    elif value is not None:
        raise bad_request("thumbnail must be uploaded as a new file: thumbnails can't be reused")
    if upload is None:
        return None
    data = upload[1]
    if len(data) >= MAX_THUMBNAIL_BYTES:
        raise bad_request("THUMBNAIL_INVALID: the thumbnail must be less than 200 kB")
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Exception:  # Pillow raises many types for garbage input
        raise bad_request("THUMBNAIL_INVALID: the thumbnail can't be decoded") from None
    if image.format != "JPEG":
        raise bad_request("THUMBNAIL_INVALID: the thumbnail must be a JPEG")
    if max(image.size) > MAX_THUMBNAIL_SIDE:
        raise bad_request("THUMBNAIL_INVALID: a thumbnail's width and height must not exceed 320")
    return {"width": image.width, "height": image.height, "file_size": len(data)}


def video_seconds(data: bytes) -> float:
    """The length of an uploaded video, as its container says; 400 when it is no video."""
    try:
        with av.open(io.BytesIO(data)) as container:
            if not container.streams.video or container.duration is None:
                raise bad_request("VIDEO_FILE_INVALID")
            return container.duration / av.time_base
    except av.FFmpegError:
        raise bad_request("VIDEO_FILE_INVALID") from None


class VideoSender:
    """sendVideo and sendLivePhoto."""

    def __init__(self, state: TelegramState, sender: MessageSender) -> None:
        self._state = state
        self._sender = sender

    async def send_video(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """sendVideo: an upload (or a video's file_id) with its size, length, thumbnail and streaming flag."""
        chat = self._state.require_chat(params)
        media = self._sender.media_of(params.get("video"), files, "video")
        if len(media.data) > MAX_VIDEO_UPLOAD_BYTES:
            raise ApiError(413, "Request Entity Too Large")
        thumbnail = check_thumbnail(params, files)
        width, height, duration = (_integer(params, name) for name in ("width", "height", "duration"))
        caption = self._sender.caption_of(params)
        markup = check_reply_markup(params.get("reply_markup"), chat)
        reply_to = self._state.resolve_reply(chat, params)
        stored = self._state.add_file(media.data, "video") if media.existing_file_id is None \
            else self._state.files[media.existing_file_id]
        video: dict[str, Any] = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id,
                                 "width": width or 0, "height": height or 0, "duration": duration or 0,
                                 "file_name": media.file_name, "mime_type": media.mime_type or "video/mp4",
                                 "file_size": stored.size}
        if thumbnail is not None:
            thumb_file = self._state.add_file(files_data(params, files), "photo")
            video["thumbnail"] = {"file_id": thumb_file.file_id, "file_unique_id": thumb_file.file_unique_id,
                                  **thumbnail}
        message = self._state.add_message(
            chat, self._state.bot, "video", from_bot=True, reply_to=reply_to, reply_markup=markup,
            media=media.data, file_name=media.file_name, mime_type=video["mime_type"], extra={"video": video},
            **caption)
        return message.to_dict()


    async def send_live_photo(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """sendLivePhoto: a short video (an upload or a live photo's file_id) and its static photo."""
        chat = self._state.require_chat(params)
        for field in ("live_photo", "photo"):
            value = params.get(field)
            if isinstance(value, str) and value.startswith(("http://", "https://")):
                raise bad_request("sending live photos by a URL is currently unsupported")
        media = self._sender.media_of(params.get("live_photo"), files, "live_photo")
        if media.existing_file_id is not None and self._state.files[media.existing_file_id].kind != "live_photo":
            raise bad_request("can't use file of another type as a live photo")
        if len(media.data) > MAX_LIVE_PHOTO_BYTES:
            raise bad_request("LIVE_PHOTO_TOO_BIG: the video must not exceed 10 MB")
        seconds = video_seconds(media.data)
        if seconds > MAX_LIVE_PHOTO_SECONDS + 0.05:  # the container's rounding
            raise bad_request("LIVE_PHOTO_TOO_LONG: the video must be no longer than 10 seconds")
        photo = self._sender.photo_of(params.get("photo"), files)
        caption = self._sender.caption_of(params)
        markup = check_reply_markup(params.get("reply_markup"), chat)
        reply_to = self._state.resolve_reply(chat, params)
        stored = self._state.add_file(media.data, "live_photo") if media.existing_file_id is None \
            else self._state.files[media.existing_file_id]
        largest = photo[-1]
        live_photo = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id,
                      "width": largest["width"], "height": largest["height"], "duration": round(seconds),
                      "mime_type": "video/mp4", "file_size": stored.size, "photo": photo}
        message = self._state.add_message(
            chat, self._state.bot, "live_photo", from_bot=True, reply_to=reply_to, reply_markup=markup,
            media=media.data, mime_type="video/mp4", photo=photo, extra={"live_photo": live_photo}, **caption)
        return message.to_dict()


def files_data(params: dict[str, Any], files: Files) -> bytes:
    """The thumbnail's uploaded bytes."""
    value = params.get("thumbnail")
    key = value.removeprefix("attach://") if isinstance(value, str) else "thumbnail"
    return files[key][1]
