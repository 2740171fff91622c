"""Whether a result made outside a chat (inline mode, later guest mode) can reach the person who asked for it.

Telegram takes no upload when an inline message is edited, so such a result goes first to the person's
private chat with the bot (which needs them to have started it and not blocked it), or, with PUBLIC_URL,
to Telegram as the bot's own signed media link (bot.tg.inline_delivery). A person the bot can reach by
neither would get nothing: the job would fail at delivery, after the service was paid for it, and the
credit would come back to them, so it cost them nothing and could be asked again and again. So the
handler asks first, before any job is stored or any service is called.
"""

from __future__ import annotations

import logging

from telegram.constants import ChatAction
from telegram.error import BadRequest, Forbidden, TelegramError

from bot.tg.context import CustomContext

log = logging.getLogger(__name__)


async def can_deliver(context: CustomContext, user_id: int) -> bool:
    """Whether a result for `user_id` outside a chat can reach them: by a media link, or in their chat with the bot.

    The chat is tried with a chat action ("sending a photo…", which that chat shows for a moment, just before the
    result arrives there): Telegram refuses it, as it would the photo, for someone who never started the bot or
    blocked it. A network error counts as reachable: it says nothing about the person, and the delivery
    retries or gives the credit back as before.
    """
    if context.bot_data.media_links:
        return True
    try:
        await context.bot.send_chat_action(user_id, ChatAction.UPLOAD_PHOTO)
    except (Forbidden, BadRequest) as error:
        log.info("user %s cannot be sent a result (%s)", user_id, error.message)
        return False
    except TelegramError as error:
        log.info("could not check whether user %s can be sent a result: %s", user_id, error)
    return True
