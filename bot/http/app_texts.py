"""The Mini App page's texts (msgids, translated by the API for the person's language) and its error answers."""

from __future__ import annotations

from bot.i18n import N_, ntr, tr

#: every text the page shows, by the name app.js uses
PAGE = {
    "paint": N_("Paint"),
    "frame": N_("Extend"),
    "styles": N_("Styles"),
    "results": N_("My results"),
    "brush": N_("Brush"),
    "undo": N_("Undo"),
    "clear": N_("Clear"),
    "paint_hint": N_("Paint over what should change, then say what to put there."),
    "paint_prompt": N_("What to paint there, for example: a red balloon"),
    "paint_go": N_("Replace"),
    "frame_hint": N_("Drag the edges out to add room around the photo, or pick a shape."),
    "free": N_("Free"),
    "square": N_("Square"),
    "left": N_("Left"),
    "top": N_("Top"),
    "right": N_("Right"),
    "bottom": N_("Bottom"),
    "pixels": N_("{count} px"),
    "frame_go": N_("Extend"),
    "styles_hint": N_("Tap a style to use it."),
    "describe": N_("Describe the picture"),
    "count": N_("How many headshots?"),
    "no_photo": N_("Open this screen from the buttons under a photo in your chat with the bot."),
    "no_results": N_("No results yet. Send the bot a photo to begin."),
    "queued": N_("Done: the result will arrive in your chat with the bot."),
    "share": N_("Share"),
    "open": N_("Open"),
    "loading": N_("Loading…"),
    "failed": N_("Something went wrong. Try again."),
    "offline": N_("The bot cannot be reached. Check your connection and try again."),
    "retry": N_("Retry"),
    "expired": N_("Session expired — reopen the app from your chat with the bot."),
    "reopen": N_("Reopen"),
    "back_to_chat": N_("Back to chat"),
    "keep_editing": N_("Keep editing"),
    "eraser": N_("Eraser"),
    "redo": N_("Redo"),
    "mask": N_("Mask"),
    "buy": N_("Buy credits"),
    "no_share": N_("This Telegram app cannot share from here. Forward the result from your chat with the bot."),
    "pending": N_("In progress"),
    "confirm": N_("Start this? It costs {price}."),
    "confirm_drop": N_("Drop what you painted here and open the other photo?"),
    "paid": N_("Paid: your credits are added."),
    "paying": N_("Waiting for Telegram to confirm the payment…"),
    "video_label": N_("Video"),
    "video_hint": N_("This is a video: share it, or play it in your chat with the bot."),
}

#: what the first screen shows before the API answers (and if it never does): built into the page
FIRST_SCREEN = ("paint", "frame", "styles", "results", "loading", "offline", "failed", "retry", "expired", "reopen")

UNAUTHORIZED = N_("Open this page from the bot's chat in Telegram; it cannot be used on its own.")
NOT_A_PHOTO = N_("That is a video: this works on photos only.")
NOT_YOURS = N_("That picture is not yours, or it is no longer available. Open the screen again from the chat.")
BAD_REQUEST = N_("That request could not be understood. Reload the page and try again.")
TOO_LARGE = N_("That is too large to send.")
RATE_LIMITED = N_("Too many requests at once. Wait a moment and try again.")
MASK_SIZE = N_("The painted mask does not match the photo's size. Reload the page and paint again.")
MASK_UNUSABLE = N_("The painted mask could not be used. Reload the page and paint again.")
PAINT_FIRST = N_("Paint over part of the photo first.")
DESCRIBE_FIRST = N_("Say what to paint there first.")
UNKNOWN_OPERATION = N_("That operation is not offered here.")
PACK_GONE = N_("That pack is no longer offered. Reopen the app to see the current ones.")
NOT_STORED = N_("The job could not be stored. Try again in a moment.")


def credits_line(language: str, credits: int) -> str:
    """The person's credits, as the page's header shows them."""
    return ntr(language, "{count} credit", "{count} credits", credits)


def page_texts(language: str) -> dict[str, str]:
    """The page's texts in `language` ("pixels" keeps its {count} for the page to fill)."""
    return {name: tr(language, msgid, count="{count}") if "{count}" in msgid else tr(language, msgid)
            for name, msgid in PAGE.items()}
