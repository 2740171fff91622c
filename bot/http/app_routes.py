"""The Mini App under /app/: its page (static files shipped in the package), previews, and its API.

Every answer under /app/ carries a strict Content-Security-Policy: scripts only from this origin and
Telegram's telegram-web-app.js, no inline script or style, API calls only to this origin, pictures only
from here, from blob: URLs the page makes of the API's answers (which carry the initData header, so an
<img src> could not fetch them), and from the https origins a style file names for previews.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from bot.http.app_api import Handler, MiniApp, add_api_routes, preview_url
from bot.http.app_pictures import add_extra_routes
from bot.http.app_shell import first_screen_texts
from bot.operations.styles import StyleCatalogue

APP_PATH = "/app/"
TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"
#: the page's files and their types; nothing else of the package is served
STATIC = {"index.html": "text/html", "app.css": "text/css", "app.js": "text/javascript"}
#: answers worth compressing (pictures are compressed already)
COMPRESSED = frozenset({"text/html", "text/css", "text/javascript", "application/json"})
PREVIEW_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}
#: a preview's file name as `python -m bot previews` writes them: letters, digits, '-', '_' and '.' inside, a picture suffix
PREVIEW_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\.(?:jpe?g|png|webp)", re.IGNORECASE)


def preview_path(folder: Path | None, name: str) -> Path | None:
    """The previews folder's own file of exactly this name; None for anything else.

    aiohttp decodes `%2F` in a path segment into the name, so a name is checked, not trusted: a plain file
    name of a picture type (no separators, no leading dot), and its resolved path must still be in the folder
    (a symbolic link out of it is refused too).
    """
    if folder is None or not PREVIEW_NAME.fullmatch(name):
        return None
    root = folder.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file():
        return None
    return path


def preview_origins(styles: StyleCatalogue) -> list[str]:
    """The https origins a style file's preview URLs point at (the only other places pictures may come from)."""
    origins = set()
    for group in styles.groups.values():
        for style in group.styles.values():
            url = preview_url(style.extra)
            if url is not None and url.startswith("https://"):
                parts = urlsplit(url)
                origins.add(f"https://{parts.netloc}")
    return sorted(origins)


def content_security_policy(image_origins: Iterable[str] = ()) -> str:
    """The policy of every answer under /app/."""
    images = " ".join(["'self'", "blob:", *image_origins])
    return "; ".join([
        "default-src 'none'", f"script-src 'self' {TELEGRAM_SCRIPT}", "style-src 'self'", f"img-src {images}",
        "connect-src 'self'", "base-uri 'none'", "form-action 'none'",
        # Telegram's web clients show a Mini App in a frame of theirs; nobody else may frame it
        "frame-ancestors https://web.telegram.org"])


def _security_headers(policy: str) -> dict[str, str]:
    return {"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def _page_file(name: str) -> bytes:
    return resources.files("bot.http").joinpath("app", name).read_bytes()


def add_app_routes(web_app: web.Application, app: MiniApp) -> None:
    """Serve the Mini App's page, previews and API in `web_app`, every answer under the policy."""
    headers = _security_headers(content_security_policy(preview_origins(app.styles)))
    files = {name: _page_file(name) for name in STATIC}  # read once: they are a few kilobytes
    # the first screen's texts in every language, inside the page: it must read right before the API answers
    files["index.html"] = files["index.html"].replace(b"{}<!--first-screen-->", first_screen_texts().encode())

    async def page(request: web.Request) -> web.Response:
        name = request.match_info.get("name") or "index.html"
        if name not in files:
            raise web.HTTPNotFound()
        # no-cache: a new version of the bot serves its new page at once
        return web.Response(body=files[name], content_type=STATIC[name],
                            charset="utf-8", headers={"Cache-Control": "no-cache"})

    async def preview(request: web.Request) -> web.Response:
        path = preview_path(app.previews, request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        return web.Response(body=path.read_bytes(), content_type=PREVIEW_TYPES[path.suffix.lower()],
                            headers={"Cache-Control": "max-age=86400"})

    async def secured(request: web.BaseRequest, response: web.StreamResponse) -> None:
        # on every answer's headers as they are sent: a 404 and a streamed photo under /app/ too
        if request.path.startswith(APP_PATH):
            response.headers.update(headers)

    @web.middleware
    async def compressed(request: web.Request, handler: Handler) -> web.StreamResponse:
        # here, not in `secured`: by the time answers are being sent it is too late to choose their encoding
        response = await handler(request)
        if (request.path.startswith(APP_PATH) and isinstance(response, web.Response)
                and response.content_type in COMPRESSED):
            response.enable_compression()  # gzip or deflate, as the client accepts
        return response

    async def to_page(request: web.Request) -> web.Response:
        raise web.HTTPFound(APP_PATH)

    web_app.on_response_prepare.append(secured)
    web_app.middlewares.append(compressed)
    web_app.router.add_get("/app", to_page)
    web_app.router.add_get(APP_PATH, page)
    web_app.router.add_get(APP_PATH + "previews/{name}", preview)
    add_api_routes(web_app, app)
    add_extra_routes(web_app, app)
    web_app.router.add_get(APP_PATH + "{name}", page)
