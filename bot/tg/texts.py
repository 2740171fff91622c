"""Everything the bot says, in one place (plain text: no parse mode, so user text is never mis-parsed).

Constants are English msgids (marked with `N_`), rendered with `bot.i18n.tr` in the reader's language;
functions take the reader's `language` (English when not given).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from bot.credits.texts import cost_note
from bot.i18n import DEFAULT_LANGUAGE, N_, Text, lazy, ntr, render, tr
from bot.jobs.notifier import Failure, FailureKind
from bot.operations.catalogue import Operation
from bot.store import JobRecord, JobState

CAPTION_LIMIT = 1024
MESSAGE_LIMIT = 4096

WELCOME = N_("Hi! I edit photos with AI. Send me a photo and pick what to do, or send it with a command "
             "in the caption, for example /upscale 2.")
COMMANDS_HEADING = N_("Commands:")

FAILURE_TEXTS = {
    FailureKind.BAD_INPUT: N_("I couldn't use that: {detail}"),
    FailureKind.REJECTED: N_("The image service refused this request ({detail}). Try another photo or other options."),
    FailureKind.CONTENT: N_("The image service declined this image as unsuitable content. Please try another photo."),
    FailureKind.SERVICE_FAILED: N_("The image service couldn't process this ({detail}). "
                                   "Please try again, or with another photo."),
    FailureKind.NO_CREDITS: N_("The bot has run out of image credits. Please tell the bot's operator and try later."),
    FailureKind.UNAVAILABLE: N_("The image service is unavailable right now. Please try again in a few minutes."),
    FailureKind.EXPIRED: N_("This took too long and was stopped. Please try again."),
    FailureKind.DELIVERY: N_("The result was ready but I couldn't send it ({detail}). Please try again."),
}
GENERIC_DETAIL = {
    FailureKind.REJECTED: N_("invalid request"),
    FailureKind.SERVICE_FAILED: N_("no reason given"),
    FailureKind.DELIVERY: N_("network trouble"),
    FailureKind.BAD_INPUT: N_("the input is not usable"),
}

STATE_WORDS = {
    JobState.QUEUED: N_("queued"),
    JobState.SUBMITTING: N_("starting"),
    JobState.RUNNING: N_("processing"),
    JobState.COMPLETED: N_("sending the result"),
}

NEED_IMAGE = N_("{title} needs a photo. Send the photo with {usage} as its caption, "
                "or reply to a photo with {usage}.")
NEED_PAIR_FIRST = N_("{title} needs two images: first the {first}, then the {second}. Send the {first} now.")
NEED_PAIR_SECOND = N_("Got the {first}. Now send the {second}.")
PAIR_TIMEOUT_HINT = N_("(Send /cancel to stop.)")
PAIR_STILL_WAITING = N_("I'm still waiting for the {needed} for your {title}. Send it as a photo, or /cancel to stop.")
PAIR_STOPPED = N_("Stopped: I'm no longer waiting for photos from you.")
MENU_PROMPT = N_("What should I do with this photo?")
MENU_EXPIRED = N_("This menu has expired. Send your photo or command again.")
MENU_NOT_YOURS = N_("This menu belongs to someone else's photo.")
MENU_USED = N_("You already chose from this menu. Send the photo again to do something else with it.")
STYLE_PROMPT = N_("Pick a style:")
NOT_AN_IMAGE = N_("That file is not an image I can use. Send a JPEG, PNG or WebP photo.")
FILE_TOO_BIG = N_("That file is over 20 MB, the most a bot can download. Send a smaller photo.")
FILE_UNAVAILABLE = N_("Telegram could not give me that file. Send it again.")
EMPTY_FILE = N_("That file is empty. Send a JPEG, PNG or WebP photo.")
NOT_A_PHOTO = N_("I work with photos. Send a photo (or an image file) and I'll show what I can do with it; "
                 "/help lists everything.")
TEXT_HINT = N_("Send me a photo to edit, or /imagine <description> to draw one. /help lists everything I can do.")
UNKNOWN_COMMAND = N_("I don't know that command. /help lists what I can do.")
EDITED_IGNORED = N_("I don't act on edited messages. Send the command again as a new message.")
CHANNEL_IGNORED = N_("I work in private chats and groups, not in channels. Message me directly or add me to a group.")
NOT_ALLOWED = N_("Sorry, this bot is private.")
BALANCE_ADMINS_ONLY = N_("Only the bot's admins can use /balance.")
REFUND_ADMINS_ONLY = N_("Only the bot's admins can use /refund.")
BALANCE_FAILED = N_("Couldn't get the balance from the image service; try again later.")
NOTHING_TO_CANCEL = N_("Nothing to cancel: you have no jobs in progress here.")
NO_ACTIVE_JOBS = N_("No jobs in progress for you in this chat.")
MENU_NEEDS_ARGUMENTS = N_("{reason}\nReply to your photo with {usage}.")
USAGE_LINE = N_("{reason}\nUsage: {usage}")
QUEUE_FAILED = N_("Sorry, I couldn't queue that just now. Please try again.")
HANDLER_ERROR = N_("Sorry, something went wrong on my side. Please try again.")
JOB = N_("Job")

#: the command menu's texts for the commands that are not operations (an operation's is its summary)
HELP_COMMAND = N_("What I can do (also inline: type my @name in any chat)")
STATUS_COMMAND = N_("Your jobs in progress")
CANCEL_COMMAND = N_("Stop your jobs in this chat (admins: /cancel all)")
LANGUAGE_COMMAND = N_("Choose the language")
BALANCE_COMMAND = N_("The service's credit balance")
CREDITS_COMMAND = N_("Your credits")
BUY_COMMAND = N_("Buy credits with Telegram Stars")
HISTORY_COMMAND = N_("Your recent results; send one again")
SETTINGS_COMMAND = N_("Your defaults (groups: the group's, for admins)")

#: the bot's profile texts (setMyDescription: at most 512 characters; setMyShortDescription: at most 120)
BOT_DESCRIPTION = N_("I edit photos with AI: upscale, retouch, remove the background, colorize, restore, "
                     "swap faces, expand, repaint in an art style, make headshots, and draw pictures from a "
                     "description. Send me a photo to start.")
BOT_SHORT_DESCRIPTION = N_("AI photo editing: send a photo, pick what to do.")

LANGUAGE_PROMPT = N_("Choose the language:")
LANGUAGE_PROMPT_GROUP = N_("Choose this group's language (group admins only):")
LANGUAGE_CHOSEN = N_("Done: I'll speak English with you.")
LANGUAGE_CHOSEN_GROUP = N_("Done: I'll speak English in this group.")
LANGUAGE_AUTOMATIC = N_("As in my Telegram app")
LANGUAGE_AUTOMATIC_GROUP = N_("Each member's own")
LANGUAGE_AUTOMATIC_CHOSEN = N_("Done: I'll follow your Telegram app's language.")
LANGUAGE_AUTOMATIC_CHOSEN_GROUP = N_("Done: I'll speak each member's own language in this group.")
LANGUAGE_CHANGE = N_("Change language")
LANGUAGE_ADMINS_ONLY = N_("Only this group's admins can choose its language.")
LANGUAGE_CHECK_FAILED = N_("I couldn't check with Telegram whether you're an admin here, so nothing changed. "
                           "Please try again in a moment.")


def help_text(commands: Iterable[tuple[str, str]], *, language: str = DEFAULT_LANGUAGE) -> str:
    """The /start and /help text: the command menu's commands, as (usage, description) msgid pairs.

    They come from the registry that fills Telegram's command menu (bot.tg.handlers.router.Router): the same
    commands in the same order."""
    lines = [tr(language, WELCOME), "", tr(language, COMMANDS_HEADING)]
    lines += [tr(language, HELP_LINE, usage=lazy(usage), description=lazy(description))
              for usage, description in commands]
    return "\n".join(lines)


def failure_text(failure: Failure, *, language: str = DEFAULT_LANGUAGE) -> str:
    """A failure in words, with what to do next."""
    detail = failure.detail or GENERIC_DETAIL.get(failure.kind, "")
    if isinstance(detail, str) and detail in GENERIC_DETAIL.values():
        detail = tr(language, detail)
    return "❌ " + tr(language, FAILURE_TEXTS[failure.kind], detail=render(language, detail))


def state_word(state: JobState | str, *, language: str = DEFAULT_LANGUAGE) -> str:
    word = STATE_WORDS.get(state)
    return tr(language, word) if word else str(state)


def status_line(operation: Operation | None, args: Mapping[str, object], state: JobState, *,
                language: str = DEFAULT_LANGUAGE) -> str:
    """The one-line status message of a job."""
    what = operation.describe(dict(args)) if operation else Text(JOB)
    return "⏳ " + tr(language, N_("{what} — {state}. I'll reply with the result. /status · /cancel"),
                      what=what, state=state_word(state, language=language))


#: the reaction that tells a user a quick job is in hand (one of the emoji bots may react with)
ACK_REACTION = "👀"


def queued_text(operation: Operation, args: Mapping[str, object], *, language: str = DEFAULT_LANGUAGE,
                ahead: int = 0) -> str:
    """The status message of a job just queued; with `ahead` other jobs waiting before it, its place."""
    if ahead <= 0:
        return status_line(operation, args, JobState.QUEUED, language=language)
    return "⏳ " + ntr(language, "{what} — queued, {count} job ahead. I'll reply with the result. /status · /cancel",
                       "{what} — queued, {count} jobs ahead. I'll reply with the result. /status · /cancel",
                       ahead, what=operation.describe(dict(args)))


def status_list(jobs: list[JobRecord], operations: Mapping[str, Operation], now: datetime, *,
                language: str = DEFAULT_LANGUAGE) -> str:
    """The /status reply: the caller's jobs."""
    if not jobs:
        return tr(language, NO_ACTIVE_JOBS)
    lines = [tr(language, N_("Your jobs in progress ({count}):"), count=len(jobs))]
    for job in jobs[:20]:
        operation = operations.get(job.operation)
        title = render(language, operation.describe(job.args)) if operation else job.operation
        minutes = max(0, int((now - job.created_at).total_seconds() // 60))
        cost = f" · {cost_note(language, job.credits)}" if job.credits > 0 else ""
        lines.append("• " + ntr(language, "{title} — {state}, {count} minute", "{title} — {state}, {count} minutes",
                                minutes, title=title, state=state_word(job.state, language=language)) + cost)
    if len(jobs) > 20:
        lines.append(tr(language, N_("… and {count} more"), count=len(jobs) - 20))
    return "\n".join(lines)


def cancelled_text(count: int, *, language: str = DEFAULT_LANGUAGE) -> str:
    return ntr(language, "Cancelled {count} job. No results will be sent for it.",
               "Cancelled {count} jobs. No results will be sent for them.", count)


def quota_text(reason: str | Text, retry_at: datetime | None, now: datetime, *,
               language: str = DEFAULT_LANGUAGE) -> str:
    reason = render(language, reason)
    if retry_at is None:
        return reason
    minutes = max(1, int((retry_at - now).total_seconds() // 60) + 1)
    if minutes < 120:
        return ntr(language, "{reason} You can start a new one in {count} minute.",
                   "{reason} You can start a new one in {count} minutes.", minutes, reason=reason)
    # past two hours the minutes no longer help: the next whole hour, never earlier than the truth
    return ntr(language, "{reason} You can start a new one in {count} hour.",
               "{reason} You can start a new one in {count} hours.", -(-minutes // 60), reason=reason)


def too_many_images(language: str, title: str, most: int) -> str:
    """The refusal of more photos than an operation takes (`title`: its name in a sentence, translated)."""
    return ntr(language, "{title} takes at most {count} photo; please send fewer.",
               "{title} takes at most {count} photos; please send fewer.", most, title=title)


def pair_expired(language: str, title: str, second: str, minutes: int, command: str) -> str:
    """The notice that a two-image request ran out of time before its second image came."""
    return ntr(language, "Your {title} request expired: the {second} didn't come within {count} minute. "
                         "Send {command} to start again.",
               "Your {title} request expired: the {second} didn't come within {count} minutes. "
               "Send {command} to start again.", minutes, title=title, second=second, command=command)


def caption(text: str) -> str:
    return text if len(text) <= CAPTION_LIMIT else text[: CAPTION_LIMIT - 1] + "…"


def balance_text(total: int, remaining: int, *, language: str = DEFAULT_LANGUAGE) -> str:
    return tr(language, N_("Service credits: {remaining} of {total} left."), remaining=remaining, total=total)


FLOOD_NOTICE = N_("That's a lot of messages at once: I skipped some of them so everyone else gets answered too. "
                  "Send what you need again in a moment, a few at a time.")

NOTHING_TO_CANCEL_IN_CHAT = N_("Nothing to cancel: no one has jobs in progress in this chat.")
CANCEL_ALL_ADMINS_ONLY = N_("Only this group's admins can stop everyone's jobs with /cancel all. /cancel stops your own.")
ADMIN_CHECK_FAILED = N_("I couldn't check with Telegram whether you're an admin here, so I stopped nothing. "
                        "Please try /cancel all again in a moment.")


def cancelled_everyones_text(count: int, *, language: str = DEFAULT_LANGUAGE) -> str:
    return ntr(language, "Cancelled {count} job in this chat, everyone's. No results will be sent for it.",
               "Cancelled {count} jobs in this chat, everyone's. No results will be sent for them.", count)


#: marks every result while the bot runs without AIART_API_KEY: the embedded sandbox made it, not the service
SANDBOX_MARK = N_("🧪 sandbox: a test picture, not made by the real image service")


def result_caption(description: str | Text, *, sandbox: bool, language: str = DEFAULT_LANGUAGE) -> str:
    """The caption of a result: what was done, and the sandbox mark (never cut off) while there is no service."""
    text = "✅ " + render(language, description)
    if not sandbox:
        return caption(text)
    mark = tr(language, SANDBOX_MARK)
    room = CAPTION_LIMIT - len(mark) - 1
    return (text if len(text) <= room else text[:room - 1] + "…") + "\n" + mark


# ---- people: follow-ups, progress, history, settings, presets, groups (msgids; see bot.i18n) ----

FU_AGAIN = N_("🔁 Again")
FU_OTHER_STYLE = N_("🎨 Another style")
FU_LONGER = N_("⏩ Longer: {seconds} s")
FU_OTHER_MODEL = N_("🎞 Another model")
FU_LIVE_PHOTO = N_("📸 As a live photo")
#: a second press of the same button at once (a double tap): nothing more is made
FU_DOUBLE_TAP = N_("Got it: that one is already on its way.")
LIVE_PHOTO_ON_ITS_WAY = N_("📸 The live photo is on its way.")
LIVE_PHOTO_TOO_LONG = N_("Only a video of up to 10 seconds can become a live photo.")
LIVE_PHOTO_TOO_BIG = N_("This video is larger than a live photo may be (10 MB), so it stays a video.")
LIVE_PHOTO_REFUSED = N_("Telegram did not take this video as a live photo, so it stays a video.")
LIVE_PHOTO_FAILED = N_("I couldn't send the live photo just now. Please press the button again in a minute.")
#: a choice offered as a button, with what a job with it costs
PRICED_CHOICE = N_("{choice} · {cost}")
VIDEO_LINK = N_("{caption}\n\nThe video is larger than Telegram takes from a bot (50 MB). "
                "Download it here while the link lasts: {url}")
#: a task expected to take this long (seconds) shows its progress against that duration
LONG_TASK_S = 60
FU_PROMPT = N_("What next with these pictures?")
FU_PICK_PICTURE = N_("Which picture? ({title})")
FU_PICTURE = N_("#{number}")
FU_NOT_YOURS = N_("Only the person who asked for this result can use its buttons here.")
FU_GONE = N_("That result is no longer available. Send the photo again.")
REACTION_DONE = "👍"
REACTION_FAILED = "👎"
PROGRESS_STARTED = N_("⏳ {what} — at the image service. I'll reply with the result.")
HISTORY_EMPTY = N_("You have no results in this chat yet.")
HISTORY_TITLE = N_("Your recent jobs here:")
HISTORY_LINE = N_("{number}. {what} — {when}, {outcome}")
HISTORY_RESEND = N_("📤 Send #{number} again")
HISTORY_NOT_YOURS = N_("That is someone else's result.")
OUTCOME_DELIVERED = N_("done")
OUTCOME_FAILED = N_("failed")
OUTCOME_CANCELLED = N_("cancelled")
OUTCOME_ACTIVE = N_("in progress")
SETTINGS_TITLE = N_("Your settings (tap to change):")
SETTINGS_GROUP_TITLE = N_("This group's settings (admins can change them):")
SETTINGS_LANGUAGE = N_("🌐 Language")
#: a default argument's row: the choice as the photo menu labels it ("By default: Upscale 2×")
SETTINGS_DEFAULT_CHOICE = N_("By default: {choice}")
#: a default choice the photo menu has no label for: the operation's title and the argument text
SETTINGS_CHOICE_TYPED = N_("{title}: {argument}")
SETTINGS_STYLE = N_("{group} style: {style}")
SETTINGS_STYLE_ASK = N_("ask")
SETTINGS_PICK_STYLE = N_("Default {group} style:")
SETTINGS_QUICK_REACTION = N_("Quick jobs: a reaction")
SETTINGS_QUICK_STATUS = N_("Quick jobs: a status message")
SETTINGS_FOLLOWUPS_OWNER = N_("Result buttons: only whoever asked")
SETTINGS_FOLLOWUPS_EVERYONE = N_("Result buttons: everyone")
SETTINGS_ADMINS_ONLY = N_("Only this group's admins can change its settings.")
SETTINGS_CHECK_FAILED = N_("I couldn't check with Telegram whether you're an admin here. Please try again.")
SETTINGS_SAVED = N_("Saved.")
PRESET_PICK = N_("{title}: pick one, or type the numbers yourself.")
DEEP_LINK_PHOTO = N_("{title}: send me a photo with {usage} as its caption, or reply to a photo with it.")
DEEP_LINK_TEXT = N_("{title}: send {usage}")
PAIR_REPLY_FIRST = N_("{title} needs two images: first the {first}, then the {second}. "
                      "Reply to this message with the {first}.")
PAIR_REPLY_SECOND = N_("Got the {first}. Now reply to this message with the {second}.")
ALBUM_REPLY_REST = N_("Only the {first} of your album reached me: in a group I see only photos that carry my "
                      "command or reply to my message. Reply to this message with the {second}.")
ALBUM_ONLY_CAPTIONED = N_("Only the photo with the command reached me: in a group I see only photos that carry "
                          "my command or reply to my message. I used that one.")
GROUP_GREETING = N_("Hi! I edit photos with AI. In this group, send a photo with a command as its caption "
                    "(for example /upscale@{bot} 2), or reply to a photo with a command. When I ask for a "
                    "photo, reply to my message with it. /help lists everything; admins set the group up "
                    "with /settings.")

# --- sent to BOT_ADMINS when the service account stops working (bot.jobs.alarm) ---
ADMIN_NO_CREDITS = N_("⚠️ The image service says the account has no credits left: every new job fails until "
                      "credits are added. Users are told the service is out of credits. I'll tell you again if "
                      "it recovers and runs out again, or in an hour if it stays this way.")
ADMIN_KEY_REFUSED = N_("⚠️ The image service refused the API key (HTTP 401): every new job fails. Check "
                       "AIART_API_KEY. I'll tell you again if it recovers and fails again, or in an hour if it "
                       "stays this way.")

# --- credits and payments (bot.credits; engineer C translates) ---------------------------------------

POOL_ONLY_FOR_CHATS = N_("Messages sent on behalf of a channel or as an anonymous admin get no free credits: only "
                         "this group's pool pays for them, and it can't cover this one. Send it as yourself, or "
                         "ask an admin to fill the pool with /pool add.")
BALANCE_MINE = N_("Your credits: {credits}\nFree today: {free_left} of {free_per_day}")
BALANCE_POOL = N_("This group's pool: {pool} (you can use {left} of it today)")
BALANCE_SERVICE_FAILED = N_("Couldn't get the service's balance from the image service; try again later.")
PAYMENTS_OFF = N_("Buying credits isn't available on this bot yet.")
BUY_PROMPT = N_("Pick a pack of credits, paid with Telegram Stars:")
def purchased_text(language: str, credits: int, balance: int) -> str:
    """The thanks for a paid pack, with the balance it makes."""
    return ntr(language, "Thank you! {count} credit added; you now have {balance}.",
               "Thank you! {count} credits added; you now have {balance}.", credits, balance=balance)


PACK_GONE = N_("This pack is no longer offered. Send /buy to see the current ones.")
PAYMENT_NOT_ALLOWED = N_("This bot can't take your payment.")
REFUND_USAGE = N_("Usage: /refund <telegram_payment_charge_id>")
REFUND_UNKNOWN = N_("I know no payment with that charge id; nothing was refunded.")
REFUND_ALREADY = N_("That payment was already refunded.")
REFUND_FAILED = N_("Telegram refused the refund ({reason}); nothing was changed.")
POOL_USAGE = N_("In a group: /pool add <credits> moves your credits into the group's pool, which members spend "
                "before their own; /pool cap <credits> sets how many each member may use a day (/pool cap off: "
                "no limit).")
POOL_GROUPS_ONLY = N_("Pools are for groups: send /pool in a group.")
POOL_ADMINS_ONLY = N_("Only this group's admins can manage its pool.")
POOL_ADMIN_CHECK_FAILED = N_("I couldn't check with Telegram whether you're an admin here, so nothing changed. "
                             "Please try again in a moment.")
POOL_CAP_OFF = N_("Members may now use this group's pool without a daily limit.")
REFUND_COMMAND = N_("Refund a Stars payment: /refund <charge id>")


def progress_running(language: str, what: Text, seconds: int) -> str:
    """A job's status while the service works on it, with how long it has so far."""
    return ntr(language, "⏳ {what} — at the image service, {count} second so far. I'll reply with the result.",
               "⏳ {what} — at the image service, {count} seconds so far. I'll reply with the result.", seconds,
               what=what)


def progress_long(language: str, what: Text, seconds: int, usual: int) -> str:
    """A long job's status (a video): how long it has run against how long such a task usually takes."""
    return ntr(language, "⏳ {what} — at the service for {count} second (such a task usually takes {usual} s). "
                         "I'll reply with the result.",
               "⏳ {what} — at the service for {count} seconds (such a task usually takes {usual} s). "
               "I'll reply with the result.", seconds, what=what, usual=usual)


def video_link(language: str, caption: str, url: str) -> str:
    """A video too large for Telegram, sent as a link under its caption."""
    return tr(language, VIDEO_LINK, caption=caption, url=url)


def refund_spent(language: str, credits: int, balance: int) -> str:
    """A refund refused because the payment's credits are spent."""
    return ntr(language, "I can't refund that payment: its {count} credit was already spent "
                         "(the user has {balance} left). Nothing was refunded.",
               "I can't refund that payment: its {count} credits were already spent "
               "(the user has {balance} left). Nothing was refunded.", credits, balance=balance)


def refund_done(language: str, user_id: int, credits: int) -> str:
    """A refund made: the Stars went back and the credits were taken back."""
    return ntr(language, "Refunded: the payment's Stars went back to user {user_id}, and {count} credit was taken back.",
               "Refunded: the payment's Stars went back to user {user_id}, and {count} credits were taken back.",
               credits, user_id=user_id)


def pool_added(language: str, amount: int, pool: int) -> str:
    """Credits moved into a group's pool, and what it holds now."""
    return ntr(language, "Moved {count} credit into this group's pool; it now holds {pool}.",
               "Moved {count} credits into this group's pool; it now holds {pool}.", amount, pool=pool)


def pool_short(language: str, amount: int) -> str:
    """A move into the pool refused: the mover has fewer bought credits."""
    return ntr(language, "You don't have {count} bought credit to move. /balance shows what you have; /buy gets more.",
               "You don't have {count} bought credits to move. /balance shows what you have; /buy gets more.", amount)


def pool_cap_set(language: str, cap: int) -> str:
    """The pool's new daily cap per member."""
    return ntr(language, "Each member may now use up to {count} credit a day from this group's pool.",
               "Each member may now use up to {count} credits a day from this group's pool.", cap)

# --- the Mini App's ways in (bot.tg.miniapp) ---
APP_PAINT = N_("✏️ Paint")
APP_FRAME = N_("↔️ Extend")
APP_STYLES = N_("🎨 Styles")
APP_RESULTS = N_("My results")
APP_OPEN = N_("Tap the button below to open it.")
APP_NOT_YOURS = N_("That picture is not yours, or it is no longer available. Open the screen again from the chat.")
APP_OFF = N_("This bot has no app to open.")


# --- texts assembled from pieces: /help lines, result captions, progress (bot.tg.notifier) ---
#: a command's line in /help: how it is typed, and what it does (the command menu's description)
HELP_LINE = N_("{usage} — {description}")
#: texts in a message many people read (an inline message, which turns into the picture): about the picture,
#: addressed to no one, with no price
SHARED_PROGRESS = N_("⏳ {what} — in progress…")
SHARED_FAILED = N_("❌ This picture could not be made.")
#: a paid result's caption: what was done, and what it cost its requester
PAID_RESULT = N_("{description} · {cost}")


def result_text(job: JobRecord, operation: Operation, *, sandbox: bool) -> str:
    """A job's result caption in its language; an inline message's is for everyone in that chat, so it carries
    no cost (the requester's business)."""
    description = operation.describe(job.args)
    if job.credits > 0 and job.inline_message_id is None:
        description = lazy(PAID_RESULT, description=description, cost=cost_note(job.language, job.credits))
    return result_caption(description, sandbox=sandbox, language=job.language)


def progress_text(job: JobRecord, operation: Operation, elapsed: int) -> str:
    """A job's status while the service works on it: to its requester in their chat ("I'll reply"), or, in an
    inline message that turns into the picture itself, to everyone in that chat."""
    what = operation.describe(job.args)
    if job.inline_message_id is not None:
        if elapsed <= 0:
            return tr(job.language, SHARED_PROGRESS, what=what)
        return ntr(job.language, "⏳ {what} — in progress, {count} second so far…",
                   "⏳ {what} — in progress, {count} seconds so far…", elapsed, what=what)
    if elapsed <= 0:
        return tr(job.language, PROGRESS_STARTED, what=what)
    if (usual := operation.usual_seconds(job.args)) >= LONG_TASK_S:
        return progress_long(job.language, what, elapsed, int(usual))
    return progress_running(job.language, what, elapsed)
