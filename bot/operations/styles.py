"""The style catalogue: names users type, mapped to the service's template ids (operator-editable JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Style:
    """One named style."""

    key: str
    label: str
    template_id: str


@dataclass(frozen=True)
class StyleGroup:
    """The styles of one operation, in catalogue order."""

    styles: dict[str, Style]
    default: str | None = None

    def get(self, key: str) -> Style | None:
        """The style named `key` (case-insensitive), if any."""
        return self.styles.get(key.strip().lower())

    def names(self) -> list[str]:
        return list(self.styles)


@dataclass(frozen=True)
class StyleCatalogue:
    """Styles and sizes for /imagine, /art and /headshot."""

    imagine: StyleGroup
    imagine_sizes: tuple[str, ...]
    imagine_default_size: str
    art: StyleGroup
    headshot: StyleGroup
    headshot_default_count: int
    headshot_max_count: int

    def group(self, name: str) -> StyleGroup:
        """The style group of an operation ("imagine", "art" or "headshot")."""
        return {"imagine": self.imagine, "art": self.art, "headshot": self.headshot}[name]


def _group(data: dict[str, Any], section: str) -> StyleGroup:
    raw = data.get(section, {}).get("styles", {})
    if not raw:
        raise ValueError(f"style catalogue: section {section!r} has no styles")
    styles = {}
    for key, entry in raw.items():
        name = key.strip().lower()
        if not name or not name.replace("_", "").replace("-", "").isalnum() or len(name) > 24:
            raise ValueError(f"style catalogue: bad style name {key!r} in {section!r}")
        styles[name] = Style(key=name, label=str(entry.get("label") or key), template_id=str(entry["template_id"]))
    default = data[section].get("default")
    if default is not None and default not in styles:
        raise ValueError(f"style catalogue: default {default!r} of {section!r} is not a style")
    return StyleGroup(styles=styles, default=default)


def parse_catalogue(data: dict[str, Any]) -> StyleCatalogue:
    """Build a catalogue from its JSON form, checking it."""
    imagine = data.get("imagine", {})
    headshot = data.get("headshot", {})
    sizes = tuple(imagine.get("sizes") or ("1:1",))
    default_size = imagine.get("default_size", sizes[0])
    if default_size not in sizes:
        raise ValueError("style catalogue: imagine.default_size is not among imagine.sizes")
    max_count = int(headshot.get("max_count", 10))
    return StyleCatalogue(
        imagine=_group(data, "imagine"),
        imagine_sizes=sizes,
        imagine_default_size=default_size,
        art=_group(data, "art"),
        headshot=_group(data, "headshot"),
        headshot_default_count=min(int(headshot.get("default_count", 1)), max_count),
        headshot_max_count=max_count,
    )


def load_catalogue(path: Path | None = None) -> StyleCatalogue:
    """Load the operator's catalogue file, or the packaged one when no path is given."""
    if path is None:
        text = resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return parse_catalogue(json.loads(text))
