"""`python -m bot previews` against the embedded sandbox: it says what the missing previews cost and asks first,
renders each styled operation once per style from the bundled sample, and leaves alone what already has one."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from PIL import Image

from bot.config import Settings
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.previews import THUMBNAIL_SIDE, run_previews

pytestmark = pytest.mark.timeout(120)


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(_env_file=None, previews_dir=tmp_path / "previews", sandbox_task_seconds=0.05,  # type: ignore[call-arg]
                    **values)


def every_style() -> list[str]:
    styles = load_catalogue()
    return [f"{operation.name}-{key}.jpg" for operation in build_catalogue(styles).values() if operation.style_group
            for key in styles.group(operation.style_group).styles]


async def test_it_says_the_cost_and_renders_nothing_unless_told_to(tmp_path: Path, capsys) -> None:
    questions: list[str] = []
    code = await run_previews(settings(tmp_path), yes=False, ask=lambda q: questions.append(q) or "n")
    out = capsys.readouterr().out
    assert code == 1 and questions and "nothing rendered" in out
    assert f"costs {len(every_style())} credits" in out  # a headshot preview is one headshot
    assert not (tmp_path / "previews").exists()


async def test_it_renders_every_missing_preview_once(tmp_path: Path, capsys) -> None:
    assert await run_previews(settings(tmp_path), yes=True) == 0
    written = sorted(path.name for path in (tmp_path / "previews").iterdir())
    assert written == sorted(every_style())
    for name in written:
        with Image.open(tmp_path / "previews" / name) as image:
            assert image.format == "JPEG" and max(image.size) <= THUMBNAIL_SIDE
    capsys.readouterr()
    asked: list[str] = []
    assert await run_previews(settings(tmp_path), yes=False, ask=asked.append) == 0
    assert asked == [] and "every style has a preview" in capsys.readouterr().out


async def test_a_preview_the_style_file_names_is_not_rendered(tmp_path: Path, capsys) -> None:
    data = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text())
    for section in data.values():
        if isinstance(section, dict) and "styles" in section:
            for style in section["styles"].values():
                style["preview"] = "https://previews.example/x.jpg"
    data["art"]["styles"]["oil"].pop("preview")
    (tmp_path / "styles.json").write_text(json.dumps(data))
    assert await run_previews(settings(tmp_path, styles_file=tmp_path / "styles.json"), yes=True) == 0
    assert [path.name for path in (tmp_path / "previews").iterdir()] == ["art-oil.jpg"]
    assert "1 styles have no preview: art oil\nrendering them costs 1 credit of" in capsys.readouterr().out
