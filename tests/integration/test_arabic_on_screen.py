"""Arabic as a phone shows it: every text the bot can send, rendered line by line in headless Chromium
(`<div dir="auto">`, the Noto fonts), must read as a right-to-left paragraph, with each command and number
in one piece, left to right, in the order it is typed.

A catalogue check cannot see this: the order on screen comes from the Unicode bidirectional algorithm
(UAX #9) run over the text as the code assembles it, with its isolates and fields. The browser runs it.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from playwright.async_api import Browser, Page
from telegram.ext import ApplicationBuilder

from bot.i18n import Text, catalogues, ntr, tr
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import JobRecord, JobState
from bot.tg import texts
from bot.tg.app import HANDLER_MODULES
from bot.tg.context import CONTEXT_TYPES
from bot.tg.handlers.help import INLINE_HELP
from bot.tg.handlers.history import history_text
from bot.tg.handlers.router import Router

STYLES = load_catalogue()
OPERATIONS = build_catalogue(STYLES)
NOW = datetime(2026, 11, 28, 7, 25, tzinfo=UTC)
#: a phone's width; lines do not wrap (white-space: pre), so each line is one visual line to measure
PAGE_CSS = """
  body { margin: 0; padding: 8px; width: 412px; background: #fff; color: #000;
         font: 15px/1.4 "Noto Sans", "Noto Sans Arabic", "Noto Color Emoji", sans-serif; }
  div.line { white-space: pre; min-height: 1.4em; }
  div.measured { width: 6000px; text-align: start; }
  div.message { background: #eef; border-radius: 10px; padding: 6px 10px; margin: 8px 0; }
  div.message div.line { white-space: pre-wrap; }
"""
#: what a person types, as written in a text: a /command with its arguments (words, <…> and […] groups,
#: `@bot`), or a number (digits with their separators)
COMMAND = re.compile(r"/[a-z_]+(?:@\w+)?(?: (?:<[^<>\n]*>|\[[^\[\]\n]*\]|[A-Za-z0-9_|+-]*[A-Za-z0-9_]))*")
NUMBER = re.compile(r"\d+(?:[.,:٫×]\d+)*")
#: the invisible bidi controls (marks, embeddings, isolates), which typing never involves
CONTROLS = re.compile("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")

#: a sample value for each placeholder, by its name: what the bot fills in, Latin where a person may type Latin
SAMPLES: dict[str, object] = {
    "description": "a cat on a roof", "prompt": "a cat on a roof", "what": Text("Upscale ×{factor}", {"factor": 2}),
    "title": Text("Art effect"), "style": Text("Watercolor"), "model": "FLUX.2 Pro", "ratio": "16:9",
    "resolution": "2k", "size": "20.1 MB", "usage": Text("/art <style> [description]"), "command": "/imagine",
    "detail": "HTTP 503", "reason": "upstream timeout", "state": Text("processing"), "outcome": Text("done"),
    "when": "28 نوفمبر، 7:25 ص UTC", "first": Text("face photo"), "second": Text("photo"), "needed": Text("photo"),
    "kind": "HEIC", "accepted": "JPEG, PNG", "dimensions": "4000×3000", "choice": Text("Upscale 2×"),
    "argument": "10 20 30 40", "group": Text("Art effect"), "styles": "watercolor, anime", "mode": "body",
    "ratios": "1:1, 16:9", "resolutions": "1k, 2k", "example": "/headshot business 2", "cost": "2",
    "price": Text("{count} credit", {"count": 1}, "{count} credits", 2), "language": "العربية", "name": "Lorem",
    "charge": "ch_123", "label": "Lorem", "pixels": 60, "number": 3,
}
#: sample argument texts, as typed after each command
SAMPLE_ARGUMENTS = {"upscale": "2", "imagine": "cartoon a cat on a roof", "art": "watercolor sunset over the sea",
                    "removebg": "body", "headshot": "business 2", "expand": "10 20 30 40",
                    "replace": "a red balloon", "generate": "a cat on a roof", "animate": "10s she smiles",
                    "video": "a paper boat on a rainy street"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")
SHOTS = Path(os.environ.get("SCREENSHOTS_DIR", "")) if os.environ.get("SCREENSHOTS_DIR") else None


def _fields(msgid: str) -> dict[str, object]:
    fields = {}
    for name in PLACEHOLDER.findall(msgid):
        if name == "bot":
            fields[name] = "AiArtBot" if "@{bot}" in msgid else "@AiArtBot"
        else:
            fields[name] = SAMPLES.get(name, 2048)
    fields.pop("count", None)
    return fields


def catalogue_texts() -> list[tuple[str, str]]:
    """Every Arabic catalogue entry, each plural form, with sample values in its placeholders."""
    said = []
    for message in catalogues.read("ar"):
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            fields = _fields(message.id[1])
            said += [(f"{message.id[0]!r} [{count}]", ntr("ar", *message.id, count, **fields))
                     for count in (0, 1, 2, 3, 11, 100)]
        else:
            fields = _fields(message.id)
            if "{count}" in message.id:
                fields["count"] = 3
            said.append((repr(message.id), tr("ar", message.id, **fields)))
    return said


def menu_router() -> Router:
    """The command registry, filled by every handler module as the running bot's is."""
    application = ApplicationBuilder().token("1:test").context_types(CONTEXT_TYPES).build()
    application.bot_data.deps = SimpleNamespace(operations=OPERATIONS)  # type: ignore[assignment]
    router = Router()
    for module in HANDLER_MODULES:
        module.register(application, router)
    return router


def help_message() -> str:
    """/help in Arabic, as the bot sends it."""
    inline = tr("ar", INLINE_HELP, bot="@AiArtBot")
    return f"{texts.help_text(menu_router().commands(), language='ar')}\n\n{inline}"


def job(operation: str, number: int, **changes) -> JobRecord:
    """A job of `operation` with sample arguments, created `number` hours before NOW."""
    args = OPERATIONS[operation].parse(SAMPLE_ARGUMENTS.get(operation, ""))
    at = NOW - timedelta(hours=number)
    fields = dict(id=number, chat_id=1, user_id=1, chat_type="private", reply_to_message_id=None,
                  status_message_id=None, operation=operation, args=args, inputs=["file"], task_id=None,
                  state=JobState.DELIVERED, attempts=0, next_check_at=at, deadline_at=at, lease_owner=None,
                  lease_until=None, result_urls=[], error=None, sent_message_ids=[], created_at=at,
                  updated_at=at, submitted_at=None, finished_at=None, language="ar", credits=2,
                  result_files=[{"id": "a", "kind": "photo"}])
    return JobRecord(**{**fields, **changes})


def captions() -> list[tuple[str, str]]:
    """Every operation's result caption in Arabic: paid, free, in the sandbox, and in an inline message."""
    said = []
    for name, operation in OPERATIONS.items():
        for credits, sandbox, inline in ((2, False, False), (1, False, False), (0, False, False), (2, True, False),
                                         (2, False, True)):
            record = job(name, 1, credits=credits, inline_message_id="inline" if inline else None)
            said.append((f"caption of {name} ({credits}, {sandbox}, {inline})",
                         texts.result_text(record, operation, sandbox=sandbox)))
    return said


def assembled_texts() -> list[tuple[str, str]]:
    """The texts the code assembles from several pieces: /help, captions, /history, /status, progress."""
    jobs = [job(name, number) for number, name in enumerate(OPERATIONS, start=1)]
    jobs[1] = job(jobs[1].operation, 2, state=JobState.FAILED)
    running = [job(name, 0, state=JobState.RUNNING, created_at=NOW - timedelta(minutes=minutes))
               for minutes, name in zip((0, 1, 2, 5, 11), OPERATIONS, strict=False)]
    said = [("/help", help_message()), ("/history", history_text("ar", jobs, OPERATIONS)),
            ("/status", texts.status_list(running, OPERATIONS, NOW, language="ar"))]
    for name, operation in OPERATIONS.items():
        record = job(name, 1)
        said += [(f"queued {name}", texts.queued_text(operation, record.args, language="ar", ahead=2)),
                 (f"status {name}", texts.status_line(operation, record.args, JobState.RUNNING, language="ar")),
                 (f"progress {name}", texts.progress_text(record, operation, 12)),
                 (f"inline progress {name}", texts.progress_text(
                     job(name, 1, inline_message_id="inline"), operation, 12))]
    return said + captions()


def _utf16(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le")) // 2


def typed_runs(line: str) -> list[dict]:
    """The commands and numbers of a line, with their pieces' offsets (UTF-16, as the page counts)."""
    visible = [(index, char) for index, char in enumerate(line) if not CONTROLS.match(char)]
    plain = "".join(char for _, char in visible)
    runs = []
    taken: list[range] = []
    for pattern in (COMMAND, NUMBER):
        for match in pattern.finditer(plain):
            if any(match.start() in span for span in taken):
                continue
            taken.append(range(match.start(), match.end()))
            pieces = []
            for piece in re.finditer(r"<[^<>]*>|\[[^\[\]]*\]|\S+", match.group(0)):
                start, end = visible[match.start() + piece.start()][0], visible[match.start() + piece.end() - 1][0] + 1
                pieces.append([_utf16(line, start), _utf16(line, end)])
            runs.append({"text": match.group(0), "pieces": pieces})
    return runs


def bracket_pairs(line: str) -> list[list[int]]:
    """The offsets (UTF-16) of each matched (), [] and <> pair of a line."""
    pairs, open_at = [], {")": [], "]": [], ">": []}
    closing = {"(": ")", "[": "]", "<": ">"}
    for index, char in enumerate(line):
        if char in closing:
            open_at[closing[char]].append(index)
        elif open_at.get(char):
            pairs.append([_utf16(line, open_at[char].pop()), _utf16(line, index)])
    return pairs


MEASURE = """(lines) => lines.map(({text, runs, pairs}) => {
  // two renderings of the line: HTML's dir="auto" (a web client), and UAX #9's own paragraph rule P2, which
  // skips isolates (unicode-bidi: plaintext, as the text engines of phones do)
  const html = document.createElement("div"), phone = document.createElement("div");
  html.className = phone.className = "line measured"; html.dir = "auto"; phone.style.unicodeBidi = "plaintext";
  html.textContent = phone.textContent = text;
  document.body.append(html, phone);
  const problems = [];
  if (getComputedStyle(html).direction !== "rtl") problems.push("dir=auto makes it a left-to-right paragraph");
  for (const [where, div] of [["dir=auto", html], ["UAX #9", phone]]) {
    const node = div.firstChild;
    const span = (start, end) => {
      const range = document.createRange(); range.setStart(node, start); range.setEnd(node, end);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0);
      return rects.length ? [Math.min(...rects.map((r) => r.left)), Math.max(...rects.map((r) => r.right))] : null;
    };
    const chars = [];
    for (let i = 0; i < text.length; i++) {
      const wide = text.codePointAt(i) > 0xffff ? 2 : 1;
      const s = span(i, i + wide);
      if (s) chars.push({i, s});
      i += wide - 1;
    }
    const box = div.getBoundingClientRect();
    const left = Math.min(...chars.map((c) => c.s[0])) - box.left, right = box.right - Math.max(...chars.map((c) => c.s[1]));
    if (where === "UAX #9" && right > left) problems.push("UAX #9 makes it a left-to-right paragraph");
    for (const run of runs) {
      const pieces = run.pieces.map(([start, end]) => ({start, end, s: span(start, end)}));
      for (let k = 1; k < pieces.length; k++) {
        if (pieces[k].s[0] < pieces[k - 1].s[1] - 0.5) problems.push(`${where}: ${run.text}: out of typed order`);
      }
      const from = Math.min(...pieces.map((p) => p.s[0])), to = Math.max(...pieces.map((p) => p.s[1]));
      const first = run.pieces[0][0], last = run.pieces[run.pieces.length - 1][1];
      const intruders = chars.filter((c) => (c.i < first || c.i >= last) && c.s[0] > from + 0.5 && c.s[1] < to - 0.5);
      if (intruders.length) {
        problems.push(`${where}: ${run.text}: split by ${JSON.stringify(intruders.map((c) => text[c.i]).join(""))}`);
      }
      for (const p of pieces) {
        const open = text[p.start], close = text[p.end - 1];
        if ("<[(".includes(open) && ">])".includes(close) && span(p.start, p.start + 1)[0] > span(p.end - 1, p.end)[0]) {
          problems.push(`${where}: ${run.text}: brackets reversed`);
        }
      }
    }
    for (const [open, close] of pairs) {
      const a = span(open, open + 1), b = span(close, close + 1);
      if (!a || !b) continue;
      const from = Math.min(a[0], b[0]), to = Math.max(a[1], b[1]);
      const inside = chars.filter((c) => c.i > open && c.i < close);
      const outside = chars.filter((c) => c.i < open || c.i > close);
      if (inside.some((c) => c.s[0] < from - 0.5 || c.s[1] > to + 0.5)
          || outside.some((c) => c.s[0] > from + 0.5 && c.s[1] < to - 0.5)) {
        problems.push(`${where}: ${text.slice(open, close + 1).replace(/[\u2066-\u2069\u200e\u200f]/g, "")}: brackets broken`);
      }
    }
  }
  html.remove(); phone.remove();
  return [...new Set(problems)];
})"""


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A phone-sized page in headless Chromium (the shared `browser` fixture), with the Noto fonts."""
    page = await browser.new_page(viewport={"width": 430, "height": 900}, device_scale_factor=2)
    try:
        await page.set_content(f"<!doctype html><html><head><meta charset='utf-8'><style>{PAGE_CSS}</style>"
                               "</head><body></body></html>")
        yield page
    finally:
        await page.close()


async def wrong_lines(page: Page, messages: Iterable[tuple[str, str]]) -> list[str]:
    """Each line of `messages` that is not a right-to-left paragraph or whose typed runs are broken."""
    lines = [(name, line) for name, text in messages for line in text.split("\n") if CONTROLS.sub("", line).strip()]
    measured = await page.evaluate(MEASURE, [{"text": line, "runs": typed_runs(line), "pairs": bracket_pairs(line)}
                                              for _, line in lines])
    wrong = []
    for (name, line), seen in zip(lines, measured, strict=True):
        if seen:
            wrong.append(f"{name}: {CONTROLS.sub('', line)!r}: {'; '.join(seen)}")
    return wrong


async def test_every_arabic_catalogue_text_reads_right_to_left_with_commands_and_numbers_whole(page):
    said = catalogue_texts()
    assert len(said) > 300
    wrong = await wrong_lines(page, said)
    assert not wrong, '\n'.join(wrong)


async def test_arabic_help_lists_every_menu_command_each_line_reading_right(page):
    text = help_message()
    for command in ("/balance", "/buy", "/history", "/settings", "/art", "/generate", "/cancel all"):
        assert command in text
    wrong = await wrong_lines(page, [("/help", text)])
    assert not wrong, '\n'.join(wrong)


async def test_arabic_captions_history_status_and_progress_read_right_to_left(page):
    wrong = await wrong_lines(page, assembled_texts())
    assert not wrong, '\n'.join(wrong)


async def test_the_rendering_check_catches_a_scrambled_line(page):
    """The check itself: a cut command and a placeholder-only line are caught; a good line is not."""
    fsi, pdi = "\u2068", "\u2069"
    cut = f"{fsi}/art <{pdi}النمط> [الوصف] — إعادة رسم"
    latin_only = f"{fsi}Upscale ×2{pdi} · {fsi}2{pdi}"
    good = f"\u200f\u2066/art <{fsi}النمط{pdi}> [{fsi}الوصف{pdi}]{pdi} — إعادة رسم"
    wrong = await wrong_lines(page, [("cut", cut), ("latin", latin_only), ("good", good)])
    assert [line.split(":")[0] for line in wrong] == ["cut", "latin"], "\n".join(wrong)


async def test_screenshots_of_help_a_caption_and_history_in_arabic(page, tmp_path):
    """The three screens a reader meets first, as chat bubbles; SCREENSHOTS_DIR keeps them."""
    record = job("art", 1)
    screens = {"help": help_message(), "caption": texts.result_text(record, OPERATIONS["art"], sandbox=False),
               "history": history_text("ar", [job(name, n) for n, name in enumerate(OPERATIONS, start=1)][:6],
                                       OPERATIONS)}
    folder = SHOTS or tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in screens.items():
        lines = "".join("<div class='line' dir='auto'></div>" for _ in text.split("\n"))
        await page.set_content(f"<!doctype html><html><head><meta charset='utf-8'><style>{PAGE_CSS}</style></head>"
                               f"<body><div class='message'>{lines}</div></body></html>")
        await page.evaluate("(lines) => document.querySelectorAll('div.line').forEach((d, i) => d.textContent = "
                            "lines[i])", text.split("\n"))
        shot = folder / f"ar-{name}.png"
        await page.locator("div.message").screenshot(path=str(shot))
        assert shot.stat().st_size > 1000
