"""`python -m bot previews`: render the Mini App's missing style previews once, through the configured service.

A style shows a preview in the Mini App's Styles screen when the style file names one (`"preview":
"https://…"` or a file name) or when PREVIEWS_DIR holds `<operation>-<style>.jpg`. This command makes the
missing files: each styled operation run once per style on a bundled sample picture (or, for operations
drawing from a description, on a fixed description), the result shrunk to a thumbnail. Each is a paid task,
so it first says how many and asks (`--yes` answers for it).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from PIL import Image

from bot.aiart import AiartError, TaskState
from bot.config import Settings
from bot.images import ImageRejected, prepare
from bot.jobs.handoff import ImageHandoff
from bot.jobs.results import ResultUnavailable
from bot.operations.catalogue import ArgumentError, InputImage, Operation
from bot.operations.registry import build_catalogue
from bot.operations.styles import StyleCatalogue, load_catalogue, preview_file_name
from bot.runtime import ServiceConnection, connect_service
from bot.tryout import wait_for_task

#: what operations that draw from a description draw
DESCRIPTION = "a lighthouse on a cliff at sunset"
THUMBNAIL_SIDE = 320
#: previews rendered at once (each is one task of the service)
AT_ONCE = 4


@dataclass(frozen=True)
class Missing:
    """A style without a preview, and the argument text that renders one."""

    operation: Operation
    style: str
    argument: str

    @property
    def file_name(self) -> str:
        return preview_file_name(self.operation.name, self.style)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `previews`."""
    parser = subparsers.add_parser("previews", help="render the Mini App's missing style previews (paid tasks)")
    parser.add_argument("--yes", action="store_true", help="render without asking")


def missing(styles: StyleCatalogue, catalogue: dict[str, Operation], folder: Path) -> list[Missing]:
    """The styles with no preview named in the style file and none in `folder`, in catalogue order."""
    found = []
    for operation in catalogue.values():
        if operation.style_group is None or operation.style_group not in styles.groups:
            continue
        for key, style in styles.group(operation.style_group).styles.items():
            if style.extra.get("preview") or (folder / preview_file_name(operation.name, key)).exists():
                continue
            found.append(Missing(operation, key, _argument(operation, key)))
    return found


def _argument(operation: Operation, style: str) -> str:
    if operation.pick is not None:  # a headshot: one is enough for a preview
        return f"{style} 1"
    return f"{style} {DESCRIPTION}" if operation.images == 0 else style


def cost(missing_previews: list[Missing]) -> int:
    """The service tasks' images those previews take (what the service charges for)."""
    return sum(item.operation.outputs(item.operation.parse(item.argument)) for item in missing_previews)


async def run_previews(settings: Settings, *, yes: bool, ask: Callable[[str], str] = input) -> int:
    """Render what is missing into PREVIEWS_DIR, after saying what it costs; the exit code."""
    styles = load_catalogue(settings.styles_file)
    catalogue = build_catalogue(styles)
    folder = settings.previews_dir
    todo = missing(styles, catalogue, folder)
    if not todo:
        print(f"every style has a preview ({folder})")
        return 0
    where = "the embedded sandbox (no credits)" if settings.uses_sandbox else settings.aiart_base_url
    print(f"{len(todo)} styles have no preview: {', '.join(f'{m.operation.name} {m.style}' for m in todo)}")
    price = cost(todo)
    print(f"rendering them costs {price} credit{'' if price == 1 else 's'} of the service at {where}")
    if not yes and ask("render them now? [y/N] ").strip().lower() not in ("y", "yes"):
        print("nothing rendered")
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    sample = resources.files("bot.operations").joinpath("preview-sample.jpg").read_bytes()
    slots = asyncio.Semaphore(AT_ONCE)
    async with connect_service(settings) as service:

        async def render(item: Missing) -> bool:
            async with slots:
                return await _render(service, settings, item, sample, folder)

        done = await asyncio.gather(*(render(item) for item in todo))
    print(f"{sum(done)} of {len(todo)} previews written to {folder}")
    return 0 if all(done) else 1


async def _render(service: ServiceConnection, settings: Settings, item: Missing, sample: bytes, folder: Path) -> bool:
    """One preview, rendered and written; False (and why, printed) when it could not be."""
    label = f"{item.operation.name} {item.style}"
    try:
        args = item.operation.parse(item.argument)
        refs = []
        if item.operation.images:
            image = prepare(sample, item.operation.limits)
            refs.append(InputImage(await ImageHandoff(service.client).reference(image, item.operation.request_type),
                                   image.width, image.height))
        task_id = await service.client.submit(item.operation.build(args, refs))
        task = await wait_for_task(service.client, task_id, item.operation, settings.job_deadline_s, quiet=True)
        if task is None or task.state is not TaskState.COMPLETED or not task.result_urls:
            print(f"{label}: the task did not succeed ({task.reason if task else 'no answer in time'})",
                  file=sys.stderr)
            return False
        result = await service.fetcher.fetch(task.result_urls[0], name=item.file_name)
    except (AiartError, ArgumentError, ImageRejected, ResultUnavailable) as error:
        print(f"{label}: {getattr(error, 'reason', None) or error!r}", file=sys.stderr)
        return False
    (folder / item.file_name).write_bytes(thumbnail(result.data))
    print(f"{label}: wrote {folder / item.file_name}")
    return True


def thumbnail(data: bytes) -> bytes:
    """A result as a small JPEG for a gallery tile."""
    with Image.open(io.BytesIO(data)) as image:
        image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
        out = io.BytesIO()
        image.convert("RGB").save(out, "JPEG", quality=85)
    return out.getvalue()
