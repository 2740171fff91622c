"""What handlers share: the services they call and the bot's own state, in PTB's typed context (ContextTypes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from telegram import Message, Update
from telegram.ext import CallbackContext, ContextTypes, ExtBot

from bot.aiart import AiartClient
from bot.chats.conversations import Conversations
from bot.chats.languages import ChosenLanguages, LanguageChoices
from bot.chats.people import PeopleService
from bot.credits import CreditService
from bot.i18n import DEFAULT_LANGUAGE, language_of
from bot.jobs.service import JobService
from bot.operations.catalogue import Operation
from bot.operations.styles import StyleCatalogue
from bot.tg.live_photos import LivePhotoMaker
from bot.tg.miniapp import AppLinks

#: the single user ids Telegram puts in `from` for anonymous group admins and for posts sent as a channel
ANONYMOUS_ADMIN_ID = 1087968824
CHANNEL_SENDER_ID = 136817688


@dataclass(frozen=True)
class Access:
    """Who may use the bot and who administers it.

    With no allowlist set, everyone may. Otherwise an admin may anywhere, a listed user may anywhere,
    and anyone may inside a listed chat; the two lists add up, neither narrows the other.
    """

    admins: frozenset[int] = frozenset()
    allowed_users: frozenset[int] = frozenset()
    allowed_chats: frozenset[int] = frozenset()

    def allows(self, user_id: int | None, chat_id: int | None) -> bool:
        """Whether this user, in this chat, may use the bot."""
        if user_id is not None and user_id in self.admins:
            return True
        if not self.allowed_users and not self.allowed_chats:
            return True
        return (user_id is not None and user_id in self.allowed_users) or (
            chat_id is not None and chat_id in self.allowed_chats)


@dataclass(frozen=True)
class Deps:
    """The handlers' dependencies, every one given (tests build them with tests.harness.deps.make_deps)."""

    jobs: JobService
    operations: dict[str, Operation]
    styles: StyleCatalogue
    client: AiartClient
    access: Access
    #: preferences, history and follow-ups
    people: PeopleService
    #: credits and payments
    credits: CreditService
    #: the /language choices
    languages: LanguageChoices
    #: conversation state shared by every replica (a face swap's first photo, an album, a picker's photos)
    conversations: Conversations
    #: the Mini App's links (None: no Mini App, PUBLIC_URL is not https)
    app_links: AppLinks | None
    clock: Callable[[], datetime]


if TYPE_CHECKING:
    from bot.tg.answers import AnsweredQueries
    from bot.tg.handlers.inline import FeedbackWatch
    from bot.tg.handlers.router import Router

#: tells a chat that floods the bot, once per flood, that some of its messages were skipped
FloodNotice = Callable[[Update], Awaitable[None]]


class BotData:
    """What every handler shares, as PTB's typed `bot_data`: given once, as the application is built (bot.tg.app)."""

    #: the services handlers call
    deps: Deps
    #: command names to handlers, and the command menus
    router: Router
    #: the flood notice (bot.tg.handlers.messages)
    flood_notice: FloodNotice
    #: warns once when inline feedback is off (bot.tg.handlers.inline)
    feedback: FeedbackWatch

    def __init__(self) -> None:
        #: the button presses this process answered (bot.tg.answers); None: presses are never settled here
        self.answered: AnsweredQueries | None = None
        #: when each refused sender was last told the bot is private, and last logged (bot.tg.handlers.messages)
        self.refused: dict[int | None, float] = {}
        self.refused_logged: dict[int | None, float] = {}
        #: whether results can be handed to Telegram as signed media links (PUBLIC_URL is set; bot.tg.deliverable)
        self.media_links = False
        #: delivered videos sent again as live photos (bot.tg.handlers.live_photos)
        self.live_photos = LivePhotoMaker()


class CustomContext(CallbackContext[ExtBot[None], dict[Any, Any], dict[Any, Any], BotData]):
    """The context every handler gets, with the typed BotData."""

    @property
    def deps(self) -> Deps:
        """The handlers' dependencies."""
        return self.bot_data.deps


#: given to the ApplicationBuilder, so PTB makes a CustomContext and a BotData
CONTEXT_TYPES = ContextTypes(context=CustomContext, bot_data=BotData)


def deps(context: CustomContext) -> Deps:
    """The dependencies given at start-up."""
    return context.bot_data.deps


def conversations(context: CustomContext) -> Conversations:
    """The conversation state every replica shares (in the database)."""
    return deps(context).conversations


def sender_id(message: Message | None) -> int | None:
    """Who sent a message, for quotas, pending requests and allowlists: its sender chat when it has one.

    Anonymous group admins all arrive as one user (GroupAnonymousBot), and everyone posting as a
    channel as another; the chat they speak for (`sender_chat`) is what tells them apart.
    """
    if message is None:
        return None
    if message.sender_chat is not None:
        return message.sender_chat.id
    return message.from_user.id if message.from_user else None


def update_sender_id(update: Update) -> int | None:
    """Who sent an update: a button's presser or a payer (never anonymous), or the message's sender."""
    if update.callback_query is not None:
        return update.callback_query.from_user.id
    if update.pre_checkout_query is not None:
        return update.pre_checkout_query.from_user.id  # it carries no message: the payer is its sender
    if update.inline_query is not None:
        return update.inline_query.from_user.id  # inline mode carries no chat: the person asks
    if update.chosen_inline_result is not None:
        return update.chosen_inline_result.from_user.id
    return sender_id(update.effective_message)


def lane_chat_id(update: Update) -> int | None:
    """The chat whose turn and share of updates an update takes; none for a guest mention: the bot is not in that
    chat (a busy group would otherwise hold, or drop, everyone's mentions), and the caller's share bounds it."""
    chat = update.effective_chat
    return None if chat is None or update.guest_message is not None else chat.id


def is_payment(update: Update) -> bool:
    """Whether an update moves money (a pre-checkout query, a successful payment): never dropped nor delayed."""
    if update.pre_checkout_query is not None:
        return True
    return update.message is not None and update.message.successful_payment is not None


def never_dropped(update: Update) -> bool:
    """Whether an update is counted in no chat's or sender's share: money moving, or a person who picked an
    inline "Generate" result (their job; they may have typed many queries a moment before)."""
    return is_payment(update) or update.chosen_inline_result is not None


#: where a context (made once per update by PTB) keeps the choices it already looked up
_CHOICES_SEEN = "choices_seen"


async def language_for(context: CustomContext, message: Message | None = None, *,
                       update: Update | None = None) -> str:
    """The language to speak to whoever sent `message` (or `update`), where they are.

    In a group whose admins chose a language with /language, the group's; else the person's own
    choice; else their Telegram app's (`language_code`). Looked up once per update and person.
    """
    chosen, code = await _choices(context, message, update)
    return language_of(chosen.chat or chosen.user or code or DEFAULT_LANGUAGE)


async def person_settings(context: CustomContext, message: Message) -> dict[str, Any]:
    """The settings the sender of `message` chose (/settings), read with their language once per update."""
    chosen, _ = await _choices(context, message, None)
    return chosen.user_settings


async def _choices(context: CustomContext, message: Message | None,
                   update: Update | None) -> tuple[ChosenLanguages, str | None]:
    """What the group and the person chose, and the person's app language."""
    if message is None and update is not None:
        message = update.effective_message
    user = update.effective_user if update is not None else (message.from_user if message else None)
    chat = message.chat if message is not None else (update.effective_chat if update is not None else None)
    group = chat is not None and chat.type != "private"
    key = (chat.id if group else None, user.id if user else None)
    seen: dict[tuple[int | None, int | None], ChosenLanguages] = vars(context).setdefault(_CHOICES_SEEN, {})
    if key not in seen:
        seen[key] = (await deps(context).languages.chosen(chat_id=key[0], user_id=key[1])
                     if key != (None, None) else ChosenLanguages())
    return seen[key], user.language_code if user else None


def forget_languages(context: CustomContext) -> None:
    """Drop this update's looked-up languages (after /language changed one)."""
    vars(context).pop(_CHOICES_SEEN, None)
