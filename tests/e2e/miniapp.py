"""What the Mini App's end-to-end tests share: a bot with an https PUBLIC_URL, Telegram's side of a Mini App
(a stub of window.Telegram.WebApp carrying initData signed with the test token, in a theme), and where the
screenshots go."""

from __future__ import annotations

import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from bot.config import Settings
from bot.previews import thumbnail
from bot.sandbox import Sandbox
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import POLL_TIME_SCALE
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import User
from tests.fakes.webapp import signed_init_data, web_app_user
from tests.harness import bot_settings, free_port, settings_of
from tests.harness.browser import Phone, phone

PUBLIC_URL = "https://bot.example"
#: Telegram's own themeParams of its Android app, light and dark
THEMES = {
    "light": {"bg_color": "#ffffff", "text_color": "#000000", "hint_color": "#999999", "link_color": "#2481cc",
              "button_color": "#2481cc", "button_text_color": "#ffffff", "secondary_bg_color": "#efeff3",
              "destructive_text_color": "#cc2929"},
    "dark": {"bg_color": "#17212b", "text_color": "#f5f5f5", "hint_color": "#708499", "link_color": "#6ab3f3",
             "button_color": "#5288c1", "button_text_color": "#ffffff", "secondary_bg_color": "#232e3c",
             "destructive_text_color": "#ec3942"},
}
#: Telegram's script cannot load in the tests (no network): aborted, so it fails at once, and that one
#: failure is not the page's error
TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"

_STUB = """(() => {
  window.__shared = []; window.__popups = []; window.__invoices = []; window.__closed = false; window.__main = null;
  const newer = (have, want) => {
    const [a, b] = [have, want].map((v) => v.split(".").map(Number));
    for (let i = 0; i < 2; i++) if ((a[i] || 0) !== (b[i] || 0)) return (a[i] || 0) > (b[i] || 0);
    return true;
  };
  window.Telegram = {WebApp: {
    initData: %(init)s, initDataUnsafe: {user: %(user)s}, platform: "android", version: %(version)s,
    colorScheme: %(scheme)s, themeParams: %(theme)s,
    isClosingConfirmationEnabled: false, isVerticalSwipesEnabled: true,
    ready() {}, expand() {}, onEvent() {}, offEvent() {},
    isVersionAtLeast(version) { return newer(this.version, version); },
    close() { window.__closed = true; },
    enableClosingConfirmation() { this.isClosingConfirmationEnabled = true; },
    disableClosingConfirmation() { this.isClosingConfirmationEnabled = false; },
    enableVerticalSwipes() { this.isVerticalSwipesEnabled = true; },
    disableVerticalSwipes() { this.isVerticalSwipesEnabled = false; },
    BackButton: {isVisible: false, show() { this.isVisible = true; }, hide() { this.isVisible = false; },
                 onClick(callback) { window.__back = callback; }, offClick() { window.__back = null; }},
    // Telegram's own bottom button, drawn by the client below the page: its state, and its press
    MainButton: {
      text: "", isVisible: false, isActive: true, isProgressVisible: false,
      setText(text) { this.text = text; return this; }, show() { this.isVisible = true; return this; },
      hide() { this.isVisible = false; return this; }, enable() { this.isActive = true; return this; },
      disable() { this.isActive = false; return this; },
      showProgress() { this.isProgressVisible = true; return this; },
      hideProgress() { this.isProgressVisible = false; return this; },
      setParams(params) {
        if ("text" in params) this.text = params.text;
        if ("is_active" in params) this.isActive = params.is_active;
        if ("is_visible" in params) this.isVisible = params.is_visible;
        return this;
      },
      onClick(callback) { window.__main = callback; return this; }, offClick() { window.__main = null; return this; },
    },
    HapticFeedback: {notificationOccurred() {}, impactOccurred() {}, selectionChanged() {}},
    // a person who presses the popup's first button that is not a cancel
    showPopup(params, callback) {
      window.__popups.push(params);
      const button = (params.buttons || [{id: ""}]).find((b) => b.type !== "cancel" && b.type !== "close");
      setTimeout(() => callback && callback(button ? button.id : ""), 0);
    },
    openInvoice(url, callback) { window.__invoices.push(url); if (callback) setTimeout(() => callback("cancelled"), 0); },
    shareMessage(id, callback) { window.__shared.push(id); if (callback) callback(true); },
  }};
  if (!newer(%(version)s, "8.0")) delete window.Telegram.WebApp.shareMessage;
})();"""


def app_settings(telegram: FakeTelegram, sandbox: Sandbox, database_url: str, previews: Path) -> Settings:
    """A bot with the Mini App on (an https PUBLIC_URL), its HTTP server on a known loopback port."""
    return settings_of(bot_settings(telegram, sandbox, database_url, http_port=free_port(), worker_id="e2e-worker",
                                    poll_time_scale=POLL_TIME_SCALE, public_url=PUBLIC_URL, previews_dir=previews))


def app_settings_with_a_preview(tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox,
                                sqlite_template: Path) -> Settings:
    """`app_settings` on a migrated SQLite file, with one style (art's oil) that has a rendered preview
    (`python -m bot previews` makes these); the others show their names."""
    previews = tmp_path / "previews"
    previews.mkdir()
    sample = resources.files("bot.operations").joinpath("preview-sample.jpg").read_bytes()
    (previews / "art-oil.jpg").write_bytes(thumbnail(sample))
    return app_settings(telegram, sandbox, migrated_sqlite(sqlite_template, tmp_path / "bot.db"), previews)


def webapp_stub(token: str, user: User, scheme: str = "light", version: str = "8.0") -> str:
    """An init script giving the page what a Telegram client (of this Bot API `version`) gives a Mini App
    opened by `user`."""
    return _STUB % {"init": json.dumps(signed_init_data(token, user)), "user": json.dumps(web_app_user(user)),
                    "scheme": json.dumps(scheme), "theme": json.dumps(THEMES[scheme]),
                    "version": json.dumps(version)}


def page_root(settings: Settings) -> str:
    """The Mini App's page on the bot's own HTTP server, on loopback."""
    return f"http://127.0.0.1:{settings.http_port}/app/"


async def open_app(browser: Browser, settings: Settings, telegram: FakeTelegram, user: User, query: str, *,
                   scheme: str = "light", version: str = "8.0", ready: bool = True, token: str | None = None) -> Phone:
    """The page opened by `user` at `query` on a 360 px phone, ready (texts and first screen loaded) unless
    `ready` is False; initData signed with `token` (the bot's unless given)."""
    opened = await phone(browser, color_scheme=scheme,  # type: ignore[arg-type]
                         init_script=webapp_stub(token or telegram.token, user, scheme, version))
    await opened.page.route(TELEGRAM_SCRIPT, lambda route: route.abort())
    await opened.page.goto(page_root(settings) + "?" + query)
    if ready:
        await opened.page.wait_for_function("() => document.body.dataset.ready === 'true'")
    return opened


#: the Mini App's screens, in the order of its tabs
SCREENS = ("paint", "frame", "styles", "results")

#: whether a screen has finished loading as a person sees it: shown, its content there (the photo, the styles,
#: the delivered result), no skeleton left
SHOWN = """(screen) => {
  const section = document.getElementById(screen);
  if (!section || section.hidden) return false;
  if ([...document.querySelectorAll(".skeleton, .skeleton-tiles")].some((element) => element.checkVisibility())) return false;
  const content = {paint: "#paint-photo", frame: "#frame-photo", styles: ".tile", results: "#grid [data-ref]"}[screen];
  const element = section.querySelector(content);
  return Boolean(element) && (element.tagName !== "IMG" || element.naturalWidth > 0);
}"""


async def show(opened: Phone, screen: str) -> None:
    """Go to `screen` by its tab, as a person does, and wait until it has finished loading."""
    await opened.page.locator(f".tab[data-screen='{screen}']").click()
    await opened.page.wait_for_function(SHOWN, arg=screen)


#: the status the page shows after an action: what it says and where it is
STATUS = """() => {
  const box = [...document.querySelectorAll("[role=status], [role=alertdialog]")]
    .find((element) => element.checkVisibility() && element.textContent.trim());
  if (!box) return null;
  const r = box.getBoundingClientRect();
  return {text: box.textContent.trim(), top: r.top, bottom: r.bottom, left: r.left, right: r.right};
}"""


async def wait_status(opened: Phone, timeout: float = 15) -> dict[str, Any]:
    """The status the page shows once it shows one (a confirmation or an error)."""
    handle = await opened.page.wait_for_function(STATUS, timeout=timeout * 1000)
    return await handle.json_value()


async def press_main(opened: Phone) -> str:
    """Press the screen's main action as a person would: Telegram's bottom button when the page shows it (and
    it is enabled), else the page's own primary button; which one was pressed."""
    pressed = await opened.page.evaluate("""() => {
      const main = window.Telegram.WebApp.MainButton;
      if (main.isVisible && window.__main) { if (main.isActive && !main.isProgressVisible) window.__main(); return "main"; }
      return null;
    }""")
    if pressed:
        return pressed
    await opened.page.locator(".screen:not([hidden]) .primary").first.click()
    return "page"


def page_errors(opened: Phone) -> list[str]:
    """What the page logged as errors, but the blocked Telegram script."""
    return [entry for entry in opened.errors if TELEGRAM_SCRIPT not in entry and "ERR_FAILED" not in entry]


def screenshots_dir() -> Path:
    """Where the screenshots go (TEST_ARTIFACTS, else the system's temporary folder)."""
    root = Path(os.environ.get("TEST_ARTIFACTS") or tempfile.gettempdir()) / "miniapp-screens"
    root.mkdir(parents=True, exist_ok=True)
    return root
