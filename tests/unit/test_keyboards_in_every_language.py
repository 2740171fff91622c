"""Every keyboard the bot builds, rendered through its real builder in every language: no label is left in
English where a translation is due, and every label fits the width its row gives it on a phone."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from telegram import InlineKeyboardMarkup

from bot.credits import SubscriptionPlan, SubscriptionStatus, parse_packs
from bot.i18n import LANGUAGE_NAMES, LANGUAGES
from bot.jobs.notifier import ResultFile
from bot.operations.catalogue import ResultKind
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import JobRecord, JobState
from bot.tg import followups, keyboards, presets
from bot.tg.handlers import history, language, settings, subscription
from bot.tg.keyboards import packs_keyboard
from bot.videos import VideoInfo

STYLES = load_catalogue()
OPERATIONS = build_catalogue(STYLES)
NOW = datetime(2026, 1, 1, tzinfo=UTC)

#: labels every language keeps as English writes them, on purpose: model names (brands) and each
#: language's name in itself; nothing else may be identical to English in another language
BRANDS = frozenset({"FLUX.2 Pro", "Gemini 3 Pro", "Seedream 4.5", "GPT Image 2"})
#: words a language writes exactly as English does (its catalogue keeps them: they are its own words too)
SAME_WORD = {"es": {"Anime"}, "pt": {"Anime", "Cyberpunk"}, "id": {"Anime", "Cyberpunk"}}
#: the most visible characters a label may have in a row of 1, 2 or 3 buttons on a phone's screen
MOST_CHARS = {1: 40, 2: 20, 3: 13}


def job(operation: str, lang: str, **changes) -> JobRecord:
    """A delivered job of `operation` in `lang`, as the follow-up builders read it."""
    fields = dict(id=123456, chat_id=1, user_id=1, chat_type="private", reply_to_message_id=None,
                  status_message_id=None, operation=operation, args={}, inputs=["file"], task_id=None,
                  state=JobState.DELIVERED, attempts=0, next_check_at=NOW, deadline_at=NOW, lease_owner=None,
                  lease_until=None, result_urls=[], error=None, sent_message_ids=[], created_at=NOW,
                  updated_at=NOW, submitted_at=None, finished_at=None, language=lang,
                  result_files=[{"id": "a", "kind": "photo"}, {"id": "b", "kind": "photo"}])
    return JobRecord(**{**fields, **changes})


#: a delivered picture, and a 5 s video of 3 MB (short and small enough for a live photo)
PICTURE = ResultFile(b"", "result.jpg", "image/jpeg")
VIDEO = ResultFile(b"", "result.mp4", "video/mp4", video=VideoInfo(1280, 720, 5, "h264", b""), size=3 << 20)


def price(operation: str, args: dict) -> int:
    """A price as long as a label shows: two digits' worth of credits."""
    return 24


def every_keyboard(lang: str) -> dict[str, InlineKeyboardMarkup]:
    """Each keyboard the bot shows, by a name that says where, rendered in `lang`."""
    found: dict[str, InlineKeyboardMarkup] = {"photo menu": keyboards.operations_menu(OPERATIONS, lang)}
    for name, operation in OPERATIONS.items():
        done = job(name, lang)
        found[f"follow-ups of {name}"] = followups.keyboard(done, operation, [PICTURE], OPERATIONS, price)
        if operation.result is ResultKind.VIDEO:  # with its model and length: longer (priced), a live photo
            found[f"follow-ups of a video of {name}"] = followups.keyboard(
                job(name, lang, args={"model": "seedance", "duration": 5}), operation, [VIDEO], OPERATIONS, price)
        found[f"which picture for {name}"] = followups.picture_keyboard(
            done, followups.FollowUp(done.id, followups.NEXT, "upscale", "2"))
        if operation.style_group is not None:
            found[f"style picker of {name}"] = keyboards.style_picker(lang, name, STYLES.group(operation.style_group))
            found[f"another style of {name}"] = followups.style_keyboard(done, operation, STYLES)
            found[f"default style of {name}"] = settings.style_choices(lang, operation.style_group, operation, STYLES)
        if operation.pick is not None:
            typed = STYLES.group(operation.style_group).styles if operation.style_group is not None else [""]
            for style in typed:
                markup = keyboards.argument_keyboard(lang, keyboards.PICK_PREFIX, operation, operation.pick.offer(style, 1),
                                                     per_row=1 if operation.pick.priced else 3)
                found[f"pick of {name} {style}"] = markup
        if operation.alternatives is not None:
            found[f"other models of {name}"] = followups.model_keyboard(done, operation, lambda args: 20)
        for next_op, _, argument in followups.next_operations(OPERATIONS):
            if followups.choices(next_op, argument):
                found[f"{next_op.name} choices under {name}"] = followups.pick_keyboard(
                    done, followups.FollowUp(done.id, followups.NEXT, next_op.name, argument), next_op, price)
        if operation.presets is not None:
            found[f"presets of {name}"] = presets.preset_keyboard(lang, 1600, 900, operation)
    found["settings"] = settings.user_panel(lang, {}, OPERATIONS, STYLES)
    found["settings, other choices"] = settings.user_panel(
        lang, {"quick_ack": "status", **{f"{n}_default": o.default_choices[-1] for n, o in OPERATIONS.items()
                                         if o.default_choices}}, OPERATIONS, STYLES)
    found["group settings"] = settings.group_panel(lang, {})
    found["group settings, everyone"] = settings.group_panel(lang, {"followups_everyone": True})
    found["language"] = language.picker(lang, group=False)
    found["group language"] = language.picker(lang, group=True)
    found["language chosen"] = language.changed_keyboard(lang)
    found["/buy"] = packs_keyboard(lang, parse_packs("1:5,10:50,100:400"))
    found["/buy with the plan"] = subscription.buy_keyboard(lang, found["/buy"], SubscriptionPlan(300, 250))
    now = datetime(2026, 11, 28, tzinfo=UTC)
    running = SubscriptionStatus(300, 250, now + timedelta(days=30), 120, False, "charge")
    found["/subscription, renewing"] = subscription.status_keyboard(lang, None, running, now)
    found["/subscription, cancelled"] = subscription.status_keyboard(lang, None, replace(running, canceled=True), now)
    jobs = [job("upscale", lang, id=number) for number in range(1, history.LISTED + 1)]
    found["/history"] = history.resend_keyboard(lang, jobs)
    return found


def labels(markup: InlineKeyboardMarkup | None) -> list[tuple[str, str, int]]:
    """(label, callback data, buttons in its row) of every button."""
    return [(button.text, button.callback_data, len(row)) for row in (markup.inline_keyboard if markup else ())
            for button in row]


def words(label: str) -> str:
    """The letters of a label: what is left without emoji, numbers, punctuation and direction marks."""
    return re.sub(r"[^\w]|[\d_]", "", label)


def visible(label: str) -> int:
    """How many characters a label shows (direction isolates and emoji joiners show nothing)."""
    return sum(1 for char in label if unicodedata.category(char) not in ("Cf", "Mn"))


def kept_on_purpose(lang: str, label: str) -> bool:
    return label in BRANDS or label in LANGUAGE_NAMES.values() or label in SAME_WORD.get(lang, set())


@pytest.mark.parametrize("lang", [code for code in LANGUAGES if code != "en"])
def test_no_label_is_left_in_english(lang):
    english = every_keyboard("en")
    left = []
    for where, markup in every_keyboard(lang).items():
        assert (markup is None) == (english[where] is None), where
        for (label, data, _), (english_label, english_data, _) in zip(labels(markup), labels(english[where]),
                                                                      strict=True):
            assert data == english_data, where
            if label == english_label and words(label) and not kept_on_purpose(lang, label):
                left.append(f"{where}: {label!r}")
    assert not left, f"left in English in {lang}:\n" + "\n".join(left)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_label_fits_its_row_on_a_phone(lang):
    too_long = [f"{where}: {label!r} ({visible(label)} characters, {width} a row)"
                for where, markup in every_keyboard(lang).items()
                for label, _, width in labels(markup) if visible(label) > MOST_CHARS[width]]
    assert not too_long, f"too long in {lang}:\n" + "\n".join(too_long)


def test_the_allow_lists_name_only_labels_some_keyboard_shows():
    shown = {label for markup in every_keyboard("en").values() for label, _, _ in labels(markup)}
    assert BRANDS <= shown
    assert set().union(*SAME_WORD.values()) <= shown
