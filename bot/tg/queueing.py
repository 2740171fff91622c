"""A request that is complete becomes a stored job, acknowledged to its user; one that cannot run is refused."""

from __future__ import annotations

import logging

from telegram import Message, User

from bot.credits.texts import not_enough_credits
from bot.i18n import language_of, render, tr
from bot.jobs.service import JobRequest, NotEnoughCredits, QuotaExceeded
from bot.operations.catalogue import Operation
from bot.store.inbox import UpdateHandledElsewhere
from bot.tg import texts
from bot.tg.context import CustomContext, deps, language_for, person_settings, sender_id
from bot.tg.replies import delete_quietly, react, show

log = logging.getLogger(__name__)

#: operations expected to finish within this many seconds are acknowledged with a reaction
QUICK_JOB_S = 10.0


def _job_request(source: Message, operation: Operation, args: dict, inputs: list[str], language: str,
                 requester: User | None = None) -> JobRequest:
    # an anonymous admin or a channel is its sender chat: quotas count per sender chat, not per shared bot user
    chat, user, sender_chat = source.chat, source.from_user, source.sender_chat
    if requester is not None:  # a button pressed under the bot's own message: the presser asks
        return JobRequest(chat_id=chat.id, chat_type=chat.type, chat_title=chat.title, user_id=requester.id,
                          username=requester.username, first_name=requester.first_name,
                          reply_to_message_id=source.message_id, operation=operation.name, args=args,
                          inputs=inputs, language=language)
    if sender_chat is not None:
        username, first_name = sender_chat.username, sender_chat.title
    else:
        username, first_name = (user.username, user.first_name) if user else (None, None)
    return JobRequest(chat_id=chat.id, chat_type=chat.type, chat_title=chat.title,
                      user_id=sender_id(source), username=username,
                      first_name=first_name, reply_to_message_id=source.message_id,
                      operation=operation.name, args=args, inputs=inputs,
                      language=language)


async def refuse(context: CustomContext, source: Message, operation: Operation | None,
                 reason: str, *, args: dict | None = None, editable: Message | None = None) -> None:
    """Keep a record of a request that cannot run as a failed job, and tell the user why.

    The record comes first: the reply may wait for the chat's Telegram limit, and a crash meanwhile
    must not leave the request without a trace (a redelivered update is recognised by its record).
    """
    if operation is not None:
        try:
            request = _job_request(source, operation, args or {}, [], await language_for(context, source))
            await deps(context).jobs.record_refused(request, reason)
        except Exception:  # the reply matters more than the record
            log.exception("could not record a refused %s request", operation.name)
    await show(source, reason, editable)


async def queue(context: CustomContext, operation: Operation, args: dict, source: Message,
                inputs: list[str], *, editable: Message | None = None, requester: User | None = None) -> bool:
    """Store the job (or say what stops it), then acknowledge it; True when the job was stored.

    The job is stored before anything is sent: an acknowledgement may wait for the chat's Telegram
    limit (the intake lets such a handler finish in the background), and a crash meanwhile must not
    lose the request. A quick operation is acknowledged with a reaction on the user's message (one
    call where a status message is two: sent, then deleted); a slower one, a menu being answered (it
    has to change anyway), a follow-up, or a chat where reactions are off gets a status message,
    which the job is given afterwards — or, when the job ended meanwhile, which is taken away again.
    """
    d = deps(context)
    # a follow-up pressed under the bot's own message is the presser's request, in their language
    language = language_of(requester.language_code) if requester is not None else await language_for(context, source)
    if (refusal := operation.refusal(args, len(inputs))) is not None:
        # a video model that does not serve the endpoint these images go to: nothing is stored nor charged
        if requester is None:
            await refuse(context, source, operation, render(language, refusal), args=args, editable=editable)
        else:
            await show(source, render(language, refusal), editable)
        return False
    request = _job_request(source, operation, args, inputs, language, requester)
    try:
        outcome = await d.jobs.enqueue(request)
    except UpdateHandledElsewhere:  # another replica took this update over and made its job: it answers
        log.info("a %s job was made from this update in another handling; not making a second", operation.name)
        return False
    except Exception:
        log.exception("could not store a %s job", operation.name)
        await show(source, tr(language, texts.QUEUE_FAILED), editable)
        return False
    if isinstance(outcome, NotEnoughCredits) and outcome.pool_only:
        await show(source, tr(request.language, texts.POOL_ONLY_FOR_CHATS), editable)
        return False
    if isinstance(outcome, NotEnoughCredits):
        can_buy = bool(d.credits and d.credits.policy.on_sale)
        await show(source, not_enough_credits(request.language, outcome.price, outcome.available,
                                              outcome.free_per_day, can_buy=can_buy,
                                              free_gone=outcome.free_gone), editable)
        return False
    if isinstance(outcome, QuotaExceeded):
        await show(source, texts.quota_text(outcome.reason, outcome.retry_at, d.clock(), language=language), editable)
        return False
    log.info("job %s: queued %s for chat %s", outcome.id, operation.name, outcome.chat_id)
    # a follow-up replies to the bot's own result: a status message, not a reaction, says it is in hand
    quick = editable is None and requester is None and operation.typical_seconds <= QUICK_JOB_S
    if quick and not d.people.quick_reaction(await person_settings(context, source)):
        quick = False  # the user chose a status message for quick jobs too (/settings)
    if quick and await react(source, texts.ACK_REACTION):
        return True
    text = texts.queued_text(operation, args, language=language, ahead=await d.jobs.queued_ahead(outcome.id))
    if outcome.credits > 0:
        text = f"{text} · {texts.cost_note(language, outcome.credits)}"
    status = await show(source, text, editable)
    if status is not None and not await d.jobs.attach_status_message(outcome.id, status.message_id):
        await delete_quietly(context.bot, status.chat_id, status.message_id)  # the job ended before its status was out
    return True
