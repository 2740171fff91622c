"""The documented deployments (deploy/Caddyfile, deploy/Caddyfile.replicas behind compose.prod.yaml) walked
route by route: every public address the bot hands out reaches the bot at a path it serves, the Mini App
included, and the inside endpoints stay inside. Caddy's `handle` blocks are read as Caddy reads them: one
block per request, the most specific path matcher first, the block without a matcher last."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.config import Settings
from tests.conftest import migrated_sqlite
from tests.e2e.miniapp import app_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
#: what the bot hands out under PUBLIC_URL, and what it serves at once (no token needed to be found)
PUBLIC = ["/telegram/webhook", "/aiart/0123456789abcdef", "/media/some-token", "/app/", "/app/app.js",
          "/app/app.css", "/app/api/me", "/app/api/picture", "/app/previews/art-oil.jpg"]
INSIDE = ["/metrics", "/healthz", "/readyz", "/"]


@dataclass(frozen=True)
class Block:
    """One `handle` block: its path matcher (None: the fallback), the prefix it strips, where it sends."""

    matcher: str | None
    strip: str
    upstreams: tuple[str, ...]


def blocks(caddyfile: Path) -> list[Block]:
    """The `handle` blocks of a Caddyfile's one site."""
    found = []
    for match in re.finditer(r"^\thandle(?: (\S+))? \{\n(.*?)^\t\}", caddyfile.read_text(), re.M | re.S):
        body = match.group(2)
        strip = re.search(r"uri strip_prefix (\S+)", body)
        proxy = re.search(r"reverse_proxy ([^{\n]+)", body)
        found.append(Block(match.group(1), strip.group(1) if strip else "",
                           tuple(proxy.group(1).split()) if proxy else ()))
    return found


def route(caddyfile: Path, path: str) -> tuple[tuple[str, ...], str]:
    """(upstreams, the path they get) for a request to `path`; no upstreams: Caddy answers it itself."""

    def matches(matcher: str) -> bool:
        return path.startswith(matcher[:-1]) if matcher.endswith("*") else path == matcher

    ordered = sorted(blocks(caddyfile), key=lambda block: -len(block.matcher or ""))
    block = next(block for block in ordered if block.matcher is None or matches(block.matcher))
    return block.upstreams, path.removeprefix(block.strip)


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    previews = tmp_path / "previews"
    previews.mkdir()
    (previews / "art-oil.jpg").write_bytes(b"\xff\xd8\xff\xe0 a preview")
    return app_settings(telegram, sandbox, migrated_sqlite(sqlite_template, tmp_path / "bot.db"), previews)


@pytest.mark.parametrize(("caddyfile", "prefixes"), [("Caddyfile", [""]), ("Caddyfile.replicas", ["/bot-1", "/bot-2"])])
async def test_every_public_address_reaches_the_bot_and_nothing_else_does(
        bot, settings: Settings, caddyfile: str, prefixes: list[str]) -> None:
    path = DEPLOY / caddyfile
    for prefix in prefixes:
        for public in PUBLIC:
            # the webhook and the callbacks have no replica prefix (compose.prod.yaml sets them on the domain)
            address = public if public.startswith(("/telegram/", "/aiart/")) else prefix + public
            upstreams, upstream_path = route(path, address)
            assert upstreams, f"{caddyfile}: {address} is answered by Caddy, not passed on to the bot"
            assert upstream_path == public
    for inside in INSIDE:
        assert route(path, inside)[0] == (), f"{caddyfile}: {inside} is passed on to the bot"
    # and the bot serves the Mini App's paths those routes pass on (the API asks for Telegram's initData)
    root = f"http://127.0.0.1:{settings.http_port}"
    async with httpx.AsyncClient() as client:
        statuses = {public: (await client.get(root + public)).status_code
                    for public in PUBLIC if public.startswith("/app/")}
    assert statuses == {"/app/": 200, "/app/app.js": 200, "/app/app.css": 200, "/app/api/me": 401,
                        "/app/api/picture": 401, "/app/previews/art-oil.jpg": 200}
