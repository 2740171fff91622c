"""What the Mini App's end-to-end tests share: a bot with an https PUBLIC_URL, Telegram's side of a Mini App
(a stub of window.Telegram.WebApp carrying initData signed with the test token, in a theme), and where the
screenshots go."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from playwright.async_api import Browser

from bot.config import Settings
from bot.sandbox import Sandbox
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
  window.__shared = [];
  window.Telegram = {WebApp: {
    initData: %(init)s, initDataUnsafe: {user: %(user)s}, platform: "android", version: "8.0",
    colorScheme: %(scheme)s, themeParams: %(theme)s,
    ready() {}, expand() {}, onEvent() {}, offEvent() {},
    BackButton: {isVisible: false, show() { this.isVisible = true; }, hide() { this.isVisible = false; },
                 onClick(callback) { window.__back = callback; }},
    HapticFeedback: {notificationOccurred() {}, impactOccurred() {}},
    shareMessage(id, callback) { window.__shared.push(id); if (callback) callback(true); },
  }};
})();"""


def app_settings(telegram: FakeTelegram, sandbox: Sandbox, database_url: str, previews: Path) -> Settings:
    """A bot with the Mini App on (an https PUBLIC_URL), its HTTP server on a known loopback port."""
    return settings_of(bot_settings(telegram, sandbox, database_url, http_port=free_port(), worker_id="e2e-worker",
                                    poll_time_scale=POLL_TIME_SCALE, public_url=PUBLIC_URL, previews_dir=previews))


def webapp_stub(token: str, user: User, scheme: str = "light") -> str:
    """An init script giving the page what a Telegram client gives a Mini App opened by `user`."""
    return _STUB % {"init": json.dumps(signed_init_data(token, user)), "user": json.dumps(web_app_user(user)),
                    "scheme": json.dumps(scheme), "theme": json.dumps(THEMES[scheme])}


def page_root(settings: Settings) -> str:
    """The Mini App's page on the bot's own HTTP server, on loopback."""
    return f"http://127.0.0.1:{settings.http_port}/app/"


async def open_app(browser: Browser, settings: Settings, telegram: FakeTelegram, user: User, query: str, *,
                   scheme: str = "light") -> Phone:
    """The page opened by `user` at `query` on a 360 px phone, ready (texts and first screen loaded)."""
    opened = await phone(browser, color_scheme=scheme,  # type: ignore[arg-type]
                         init_script=webapp_stub(telegram.token, user, scheme))
    await opened.page.route(TELEGRAM_SCRIPT, lambda route: route.abort())
    await opened.page.goto(page_root(settings) + "?" + query)
    await opened.page.wait_for_function("() => document.body.dataset.ready === 'true'")
    return opened


def page_errors(opened: Phone) -> list[str]:
    """What the page logged as errors, but the blocked Telegram script."""
    return [entry for entry in opened.errors if TELEGRAM_SCRIPT not in entry and "ERR_FAILED" not in entry]


def screenshots_dir() -> Path:
    """Where the screenshots go (TEST_ARTIFACTS, else the system's temporary folder)."""
    root = Path(os.environ.get("TEST_ARTIFACTS") or tempfile.gettempdir()) / "miniapp-screens"
    root.mkdir(parents=True, exist_ok=True)
    return root
