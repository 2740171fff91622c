"""The style catalogue: names users type, mapped to the service's ids, per operation (operator-editable JSON).

Every top-level section with `styles` is one operation's group (`imagine`, `art`, `headshot`, `generate`, ...):
its styles, an optional default, and whatever else the section holds (sizes, counts), which the
operation's catalogue entry reads as `settings`. A style's own extra keys (a model's size rules) are its `extra`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bot.i18n import N_, Text

MAX_STYLE_NAME = 24
#: the labels of the shipped styles.json, as msgids (a label an operator writes in a copy shows as written);
#: model names are brands and stay as they are
SHIPPED_LABELS = (N_("No style"), N_("Cartoon"), N_("Anime"), N_("Oil painting"), N_("Watercolor"),
                  N_("Pencil sketch"), N_("Cyberpunk"), N_("Business"), N_("Fashion"))


@dataclass(frozen=True)
class Style:
    """One named style (or model)."""

    key: str
    label: str
    template_id: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StyleGroup:
    """The styles of one operation, in catalogue order, and the section's other settings."""

    styles: dict[str, Style]
    default: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Style | None:
        """The style named `key` (case-insensitive), if any."""
        return self.styles.get(key.strip().lower())

    def names(self) -> list[str]:
        return list(self.styles)

    def label(self, key: str) -> Text:
        """What people read for the style named `key`: its label, translated where it is a shipped msgid (a
        style since removed from the catalogue shows its name)."""
        style = self.get(key)
        return Text(style.label if style is not None else key)


@dataclass(frozen=True)
class StyleCatalogue:
    """Every operation's style group, by section name."""

    groups: Mapping[str, StyleGroup]

    def group(self, name: str) -> StyleGroup:
        """The style group of an operation; a missing section is a configuration error."""
        try:
            return self.groups[name]
        except KeyError:
            raise ValueError(f"style catalogue: no section {name!r}") from None


def preview_file_name(operation: str, style: str) -> str:
    """The file a style's rendered preview is kept in (PREVIEWS_DIR, `python -m bot previews`)."""
    return f"{operation}-{style}.jpg"


def _group(section: str, data: Mapping[str, Any]) -> StyleGroup:
    raw = data.get("styles") or {}
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"style catalogue: section {section!r} has no styles")
    styles = {}
    for key, entry in raw.items():
        name = key.strip().lower()
        if not name or not name.replace("_", "").replace("-", "").isalnum() or len(name) > MAX_STYLE_NAME:
            raise ValueError(f"style catalogue: bad style name {key!r} in {section!r}")
        extra = {k: v for k, v in entry.items() if k not in ("label", "template_id")}
        styles[name] = Style(key=name, label=str(entry.get("label") or key), template_id=str(entry["template_id"]),
                             extra=extra)
    default = data.get("default")
    if default is not None and default not in styles:
        raise ValueError(f"style catalogue: default {default!r} of {section!r} is not a style")
    settings = {k: v for k, v in data.items() if k not in ("styles", "default")}
    if "default_size" in settings and settings["default_size"] not in settings.get("sizes", ()):
        raise ValueError(f"style catalogue: {section}.default_size is not among {section}.sizes")
    return StyleGroup(styles=styles, default=default, settings=settings)


def parse_catalogue(data: Mapping[str, Any]) -> StyleCatalogue:
    """Build a catalogue from its JSON form, checking it."""
    return StyleCatalogue({section: _group(section, body) for section, body in data.items()
                           if isinstance(body, dict) and "styles" in body})


def load_catalogue(path: Path | None = None) -> StyleCatalogue:
    """Load the operator's catalogue file, or the packaged one when no path is given."""
    if path is None:
        text = resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return parse_catalogue(json.loads(text))
