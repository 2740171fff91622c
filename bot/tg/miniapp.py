"""The Mini App's ways in from chats: its buttons under photos and results, deep links, the menu button, sharing.

A `web_app` button works only in a private chat; in a group the button is a t.me link that opens the
private chat with `/start app-<screen>-<job>-<picture>`, answered there with the `web_app` button itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlencode

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InlineQueryResultCachedDocument,
    InlineQueryResultCachedPhoto,
    InlineQueryResultCachedVideo,
    MenuButtonWebApp,
    Message,
    WebAppInfo,
)
from telegram.constants import ChatType
from telegram.error import TelegramError

from bot.http.app_refs import PhotoRefs, deep_link_payload, parse_deep_link, result_ref
from bot.i18n import DEFAULT_LANGUAGE, tr
from bot.operations.catalogue import ResultKind
from bot.store import JobRecord
from bot.tg import texts

log = logging.getLogger(__name__)

#: the buttons under a photo or result: (screen, label)
SCREEN_BUTTONS = (("paint", texts.APP_PAINT), ("frame", texts.APP_FRAME), ("styles", texts.APP_STYLES))
SCREEN_LABELS = {**dict(SCREEN_BUTTONS), "results": texts.APP_RESULTS}


@dataclass(frozen=True)
class AppLinks:
    """Where the Mini App's page is, and the references it is opened with."""

    #: the page's https URL ({PUBLIC_URL}/app/)
    url: str
    refs: PhotoRefs

    def page(self, screen: str, ref: str | None = None) -> str:
        """The page opened at `screen` (on a picture); Telegram adds its own launch data after a '#'."""
        return f"{self.url}?{urlencode({'s': screen, **({'p': ref} if ref else {})})}"

    def button(self, language: str, screen: str, ref: str | None = None) -> InlineKeyboardButton:
        """A `web_app` button opening `screen` (private chats only)."""
        return InlineKeyboardButton(tr(language, SCREEN_LABELS[screen]), web_app=WebAppInfo(self.page(screen, ref)))

    def photo_row(self, language: str, user_id: int, file_id: str) -> list[InlineKeyboardButton]:
        """The Mini App's buttons under a photo a person sent in their private chat."""
        ref = self.refs.photo(user_id, file_id)
        return [self.button(language, screen, ref) for screen, _ in SCREEN_BUTTONS]

    def result_row(self, job: JobRecord, bot_username: str | None) -> list[InlineKeyboardButton]:
        """The Mini App's buttons under a result: `web_app` in a private chat, links to it from a group."""
        if job.chat_type == ChatType.PRIVATE:
            return [self.button(job.language, screen, result_ref(job.id)) for screen, _ in SCREEN_BUTTONS]
        if not bot_username or job.user_id is None:
            return []  # no way to reach the private chat: no button rather than a broken one
        return [InlineKeyboardButton(tr(job.language, label),
                                     url=f"https://t.me/{bot_username}?start={deep_link_payload(screen, job.id)}")
                for screen, label in SCREEN_BUTTONS]

    def with_photo_row(self, markup: InlineKeyboardMarkup, language: str, user_id: int,
                       file_id: str) -> InlineKeyboardMarkup:
        """A photo menu with the Mini App's buttons as its last row."""
        return InlineKeyboardMarkup([*markup.inline_keyboard, self.photo_row(language, user_id, file_id)])


def is_deep_link(payload: str) -> bool:
    """Whether a `/start` parameter is a Mini App link."""
    return parse_deep_link(payload) is not None


def deep_link_job(payload: str) -> int | None:
    """The job a Mini App deep link names, if any."""
    parsed = parse_deep_link(payload)
    return parsed[1] if parsed is not None else None


def open_from_link(links: AppLinks, message: Message, payload: str, language: str,
                   owner_id: int | None) -> str | InlineKeyboardMarkup:
    """What `/start <payload>` (a Mini App link, in a private chat) answers: the `web_app` button (a markup), or
    a refusal (a text) when the job it names is not the sender's. `owner_id`: the job's owner (None: no job)."""
    parsed = parse_deep_link(payload)
    if parsed is None:
        return tr(language, texts.APP_OFF)
    screen, job_id, picture = parsed
    sender = message.from_user.id if message.from_user is not None else None
    if job_id is not None and owner_id != sender:
        return tr(language, texts.APP_NOT_YOURS)
    ref = result_ref(job_id, picture) if job_id is not None else None
    return InlineKeyboardMarkup([[links.button(language, screen, ref)]])


async def set_menu_button(bot: Bot, links: AppLinks, chat_id: int | None = None,
                          language: str = DEFAULT_LANGUAGE) -> None:
    """The chat's menu button (everyone's when `chat_id` is None) opens My results, labelled in `language`."""
    button = MenuButtonWebApp(tr(language, texts.APP_RESULTS), WebAppInfo(links.page("results")))
    try:
        await bot.set_chat_menu_button(chat_id=chat_id, menu_button=button)
    except TelegramError as error:  # the chat works without it
        log.warning("could not set the menu button%s: %s", f" of chat {chat_id}" if chat_id else "", error)


async def prepare_share(bot: Bot, user_id: int, file_id: str, kind: str) -> str:
    """A result as a message the person may send to any chat (savePreparedInlineMessage); its id."""
    result_id = file_id[-32:]
    result: InlineQueryResultCachedPhoto | InlineQueryResultCachedDocument | InlineQueryResultCachedVideo
    if kind == "document":
        result = InlineQueryResultCachedDocument(result_id, title="🖼", document_file_id=file_id)
    elif kind == ResultKind.VIDEO:  # sent as the video it is, not as a photo Telegram would refuse
        result = InlineQueryResultCachedVideo(result_id, video_file_id=file_id, title="🎬")
    else:
        result = InlineQueryResultCachedPhoto(result_id, photo_file_id=file_id)
    prepared = await bot.save_prepared_inline_message(user_id, result, allow_user_chats=True, allow_bot_chats=True,
                                                      allow_group_chats=True, allow_channel_chats=True)
    return prepared.id
