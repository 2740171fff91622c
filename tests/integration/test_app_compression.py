"""The Mini App's page and JSON answers travel compressed to a client that accepts it (a phone on a slow network
waits for every kilobyte); pictures, compressed already, travel as they are."""

from __future__ import annotations

from tests.fakes.samples import jpeg
from tests.integration.test_app_api import World, world  # noqa: F401 (the fixture)

ACCEPTS = {"Accept-Encoding": "gzip, deflate, br"}


async def test_the_page_its_script_and_json_come_compressed_and_pictures_do_not(world: World) -> None:  # noqa: F811
    for path, headers in (("/app/", {}), ("/app/app.js", {}), ("/app/app.css", {}),
                          ("/app/api/me", world.auth()), ("/app/api/screens", world.auth())):
        response = await world.client.get(path, headers={**ACCEPTS, **headers}, auto_decompress=False)
        assert response.status == 200, path
        assert response.headers.get("Content-Encoding") in ("gzip", "deflate"), path
        assert "Content-Security-Policy" in response.headers, path
    ref = world.photo(jpeg(320, 240))
    response = await world.client.get(f"/app/api/picture?size=thumb&ref={ref}", headers={**ACCEPTS, **world.auth()},
                                      auto_decompress=False)
    assert response.status == 200 and "Content-Encoding" not in response.headers
    plain = await world.client.get("/app/app.js", auto_decompress=False, headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers and (await plain.text()).startswith("// The Mini App page")
