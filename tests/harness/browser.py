"""Headless Chromium for tests, driven through its DevTools protocol: pages with a phone's viewport,
scripts injected before the page's own, JavaScript evaluated, pointer and touch input, screenshots, and
every console error the page logged.

Debian's `chromium` package (the CI installs it, .ci/run); nothing is downloaded at run time. Without
it the tests that need a browser fail, never skip: a skipped browser test would let a broken page pass.
Each Browser runs its own process group with a throwaway profile, both removed on close.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.harness.cdp import CdpConnection, CdpError

ColorScheme = Literal["light", "dark"]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
START_TIMEOUT = 30.0
WAIT_POLL = 0.05
_FLAGS = (
    "--headless=new", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "--no-first-run",
    "--no-default-browser-check", "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
    "--hide-scrollbars", "--disable-features=Translate,MediaRouter", "--font-render-hinting=none",
)


class JavaScriptError(AssertionError):
    """A script evaluated in the page threw, or a promise it returned rejected."""


def chromium_path() -> str:
    """The Chromium executable (CHROMIUM names one); fails the test with what to install when there is none."""
    named = os.environ.get("CHROMIUM", "").strip()
    found = shutil.which(named) if named else next(filter(None, map(shutil.which, CANDIDATES)), None)
    if not found:
        pytest.fail(f"Chromium not found ({named or ' / '.join(CANDIDATES)}): the browser tests need it; "
                    "install Debian's package (`apt-get install chromium`, as .ci/run does) or set CHROMIUM")
    return found


@dataclass
class ConsoleEntry:
    """Something the page reported: a console.error, an uncaught exception, or a browser error (CSP, 404)."""

    source: str
    text: str


@dataclass
class Page:
    """One tab: its DevTools session and what it logged."""

    cdp: CdpConnection
    target_id: str
    session_id: str
    errors: list[ConsoleEntry] = field(default_factory=list)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A DevTools command in this page's session."""
        return await self.cdp.send(method, params, session_id=self.session_id)

    async def add_init_script(self, source: str) -> None:
        """Run `source` in every document this page loads from now on, before the document's own scripts."""
        await self.send("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    async def set_color_scheme(self, scheme: ColorScheme) -> None:
        """What `prefers-color-scheme` answers."""
        await self.send("Emulation.setEmulatedMedia",
                        {"features": [{"name": "prefers-color-scheme", "value": scheme}]})

    async def goto(self, url: str, *, timeout: float = 20.0) -> None:
        """Load `url` and wait for its load event."""
        loaded = asyncio.get_running_loop().create_future()

        def on_load(params: dict[str, Any]) -> None:
            if not loaded.done():
                loaded.set_result(None)

        self.cdp.on("Page.loadEventFired", on_load, session_id=self.session_id)
        try:
            answer = await self.send("Page.navigate", {"url": url})
            if answer.get("errorText"):
                raise CdpError(f"loading {url}: {answer['errorText']}")
            await asyncio.wait_for(loaded, timeout)
        finally:
            self.cdp.off("Page.loadEventFired", on_load, session_id=self.session_id)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (a promise is awaited), as JSON-compatible data."""
        answer = await self.send("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True, "userGesture": True,
        })
        details = answer.get("exceptionDetails")
        if details is not None:
            thrown = details.get("exception", {})
            raise JavaScriptError(f"{expression[:200]!r} threw: {thrown.get('description') or details.get('text')}")
        return answer.get("result", {}).get("value")

    async def wait_for(self, expression: str, *, timeout: float = 10.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value, or AssertionError after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if loop.time() >= deadline:
                raise AssertionError(f"{expression!r} still false after {timeout} s; page errors: {self.errors}")
            await asyncio.sleep(WAIT_POLL)

    async def wait_for_selector(self, selector: str, *, timeout: float = 10.0) -> None:
        """Wait until an element matches a CSS selector."""
        await self.wait_for(f"document.querySelector({json.dumps(selector)}) !== null", timeout=timeout)

    async def center_of(self, selector: str) -> tuple[float, float]:
        """The viewport coordinates of the centre of the first element matching `selector`."""
        box = await self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        return box[0], box[1]

    async def mouse_drag(self, points: Sequence[tuple[float, float]]) -> None:
        """Press the left button at the first point, move through the rest, release at the last."""
        first, *rest = points
        await self._mouse("mousePressed", first, buttons=1)
        for point in rest:
            await self._mouse("mouseMoved", point, buttons=1)
        await self._mouse("mouseReleased", points[-1], buttons=0)

    async def click(self, x: float, y: float) -> None:
        """A left click at a point."""
        await self.mouse_drag([(x, y)])

    async def _mouse(self, kind: str, point: tuple[float, float], *, buttons: int) -> None:
        await self.send("Input.dispatchMouseEvent", {
            "type": kind, "x": point[0], "y": point[1], "button": "left", "buttons": buttons, "clickCount": 1,
            "pointerType": "mouse",
        })

    async def touch(self, kind: Literal["touchStart", "touchMove", "touchEnd", "touchCancel"],
                    points: Sequence[tuple[float, float]]) -> None:
        """One touch event with a finger at each point (ids by position: two points are a pinch)."""
        touch_points = [{"x": x, "y": y, "id": index} for index, (x, y) in enumerate(points)]
        await self.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": touch_points})

    async def touch_drag(self, points: Sequence[tuple[float, float]]) -> None:
        """One finger down at the first point, along the rest, and lifted."""
        first, *rest = points
        await self.touch("touchStart", [first])
        for point in rest:
            await self.touch("touchMove", [point])
        await self.touch("touchEnd", [])

    async def screenshot(self, path: Path | str) -> bytes:
        """A PNG of the viewport, written to `path` (folders created) and returned."""
        answer = await self.send("Page.captureScreenshot", {"format": "png"})
        data = base64.b64decode(answer["data"])
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return data

    def assert_no_errors(self) -> None:
        """AssertionError listing what the page logged as an error, if anything."""
        assert not self.errors, "the page logged errors:\n" + "\n".join(f"  [{e.source}] {e.text}"
                                                                        for e in self.errors)

    def _listen(self) -> None:
        def console(params: dict[str, Any]) -> None:
            if params.get("type") in ("error", "assert"):
                text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
                self.errors.append(ConsoleEntry("console", text))

        def exception(params: dict[str, Any]) -> None:
            details = params.get("exceptionDetails", {})
            thrown = details.get("exception", {})
            self.errors.append(ConsoleEntry("exception", thrown.get("description") or details.get("text", "")))

        def log(params: dict[str, Any]) -> None:
            entry = params.get("entry", {})
            # the browser asks for /favicon.ico on its own (Telegram's webview does not): not the page's error
            if entry.get("level") == "error" and not str(entry.get("url", "")).endswith("/favicon.ico"):
                self.errors.append(ConsoleEntry(entry.get("source", "browser"),
                                                f"{entry.get('text', '')} {entry.get('url', '')}".strip()))

        self.cdp.on("Runtime.consoleAPICalled", console, session_id=self.session_id)
        self.cdp.on("Runtime.exceptionThrown", exception, session_id=self.session_id)
        self.cdp.on("Log.entryAdded", log, session_id=self.session_id)


class Browser:
    """A running headless Chromium."""

    def __init__(self, process: asyncio.subprocess.Process, root: Path, cdp: CdpConnection) -> None:
        self._process = process
        self._root = root  # the profile and Chromium's log
        self.cdp = cdp

    @property
    def pid(self) -> int:
        """The browser process, leader of its own process group."""
        return self._process.pid

    @property
    def files(self) -> Path:
        """The folder with the profile and Chromium's log (removed on close)."""
        return self._root

    async def new_page(self, *, width: int = 360, height: int = 740, scale: float = 1.0,
                       color_scheme: ColorScheme = "light", mobile: bool = False,
                       init_script: str | None = None) -> Page:
        """A blank tab with this viewport (CSS pixels; screenshots are `scale` times larger), colour scheme,
        touch when `mobile`, and `init_script` run before each document's own scripts."""
        target = await self.cdp.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        page = Page(self.cdp, target["targetId"], attached["sessionId"])
        page._listen()
        for domain in ("Page", "Runtime", "Log"):
            await page.send(f"{domain}.enable")
        await page.send("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})
        if mobile:
            await page.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        await page.set_color_scheme(color_scheme)
        if init_script is not None:
            await page.add_init_script(init_script)
        return page

    async def close(self) -> None:
        """Close the browser, kill what is left of its process group, remove the profile and log."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.cdp.send("Browser.close"), 5)
        with contextlib.suppress(Exception):
            await self.cdp.close()
        await _stop(self._process)
        shutil.rmtree(self._root, ignore_errors=True)


async def start_browser(executable: str | None = None) -> Browser:
    """Start headless Chromium with a fresh profile and connect to its DevTools endpoint."""
    executable = executable or chromium_path()
    root = Path(tempfile.mkdtemp(prefix="chromium-test-"))
    flags = [*_FLAGS, f"--user-data-dir={root / 'profile'}"]
    if os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    # its chatter goes to a file: an unread pipe would fill up and stall the browser
    with (root / "chromium.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            executable, *flags, "about:blank", stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        url = await _devtools_url(process, root)
        cdp = await CdpConnection.connect(url)
    except BaseException:
        await _stop(process)
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Browser(process, root, cdp)


@contextlib.asynccontextmanager
async def running_browser(executable: str | None = None) -> AsyncIterator[Browser]:
    """A Browser for the duration of a block."""
    browser = await start_browser(executable)
    try:
        yield browser
    finally:
        await browser.close()


async def _devtools_url(process: asyncio.subprocess.Process, root: Path) -> str:
    """The browser websocket URL, from the DevToolsActivePort file Chromium writes into its profile."""
    port_file = root / "profile" / "DevToolsActivePort"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    while loop.time() < deadline:
        if process.returncode is not None:
            log = (root / "chromium.log").read_text(errors="replace")
            raise RuntimeError(f"Chromium exited ({process.returncode}) at start:\n{log[-4000:]}")
        lines = port_file.read_text().split() if port_file.exists() else []
        if len(lines) >= 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    raise RuntimeError(f"Chromium did not open its DevTools port within {START_TIMEOUT} s")


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Wait briefly for Chromium to exit, then kill its whole process group (renderers, GPU, zygote)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()
    for _ in range(100):  # a killed process lingers until the kernel has torn it down and it is reaped
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.05)
