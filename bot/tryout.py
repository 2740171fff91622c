"""`python -m bot try`: run one operation against the configured service (or the sandbox) from the shell."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from bot.aiart import AiartError, TaskState
from bot.config import Settings
from bot.images import ImageRejected, prepare, reencode
from bot.jobs.handoff import ImageHandoff
from bot.jobs.polling import PollSchedule
from bot.jobs.results import ResultUnavailable
from bot.operations.catalogue import ArgumentError, InputImage, Operation, ResultKind, StyleMissing
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.runtime import connect_service


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `try` and one sub-command per operation, with the options its catalogue entry declares."""
    catalogue = build_catalogue(load_catalogue())
    parser = subparsers.add_parser("try", help="run one operation from the shell and save the result",
                                   description="Run one operation against the configured service "
                                               "(the embedded sandbox when AIART_API_KEY is unset).",
                                   epilog=_operations_epilog(catalogue),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    operations = parser.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    for name, operation in catalogue.items():
        sub = operations.add_parser(name, help=operation.summary, description=f"{operation.summary}. "
                                    f"In chat: {operation.usage}")
        for role in _required_roles(operation):
            sub.add_argument(role, type=Path, help=f"the {role} image")
        if operation.most_images > operation.images:
            sub.add_argument("images", type=Path, nargs="*", metavar="IMAGE",
                             help=f"up to {operation.most_images} {operation.image_names[-1]}s")
        for option in operation.cli:
            sub.add_argument(option.flag, **option.keywords)
        sub.add_argument("--out", type=Path, required=True,
                         help="where to write the result (several results: NAME-1.ext, NAME-2.ext, …)")


def _required_roles(operation: Operation) -> tuple[str, ...]:
    """Positional names of the images an operation needs: `upscale IMAGE`, `faceswap IMAGE TEMPLATE`."""
    roles = operation.image_names[:operation.images]
    return ("image", *(role.split()[0] for role in roles[1:])) if roles else ()


def _operations_epilog(catalogue: dict[str, Operation]) -> str:
    lines = ["operations and their options:"]
    for name, operation in catalogue.items():
        images = "".join(f" {role.upper()}" for role in _required_roles(operation))
        if operation.most_images > operation.images:
            images += " [IMAGE ...]"
        flags = []
        for option in operation.cli:
            keywords = option.keywords
            if "choices" in keywords:
                value = "{" + ",".join(map(str, keywords["choices"])) + "}"
            elif "metavar" in keywords:
                value = " ".join(keywords["metavar"])
            else:
                value = option.flag.lstrip("-").upper()
            flag = f"{option.flag} {value}"
            flags.append(flag if keywords.get("required") else f"[{flag}]")
        lines.append(f"  {name}{images}{''.join(' ' + flag for flag in flags)} --out FILE")
    lines.append("example: python -m bot try upscale photo.jpg --factor 2 --out big.png")
    return "\n".join(lines)


def output_paths(out: Path, count: int) -> list[Path]:
    if count == 1:
        return [out]
    return [out.with_name(f"{out.stem}-{index}{out.suffix}") for index in range(1, count + 1)]


#: the largest video `try` saves
MAX_SHELL_VIDEO_BYTES = 1 << 30


async def run_try(settings: Settings, args: argparse.Namespace) -> int:
    """Run the operation, showing progress; returns the process exit code."""
    catalogue_styles = load_catalogue(settings.styles_file)
    catalogue = build_catalogue(catalogue_styles)
    operation: Operation = catalogue[args.operation]
    command_text = operation.command_text(vars(args))
    try:
        parsed = operation.parse(command_text)
    except StyleMissing:
        group = catalogue_styles.group(operation.style_group)
        if group.default is None:
            print(f"error: choose --style: {', '.join(group.names())}", file=sys.stderr)
            return 2
        parsed = operation.parse(f"{group.default} {command_text}")
    except ArgumentError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    paths = [getattr(args, role) for role in _required_roles(operation)]
    paths += getattr(args, "images", None) or []
    if len(paths) > operation.most_images:
        print(f"error: {operation.name} takes at most {operation.most_images} images", file=sys.stderr)
        return 2
    if (refusal := operation.refusal(parsed, len(paths))) is not None:  # a video model that cannot take these images
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    async with connect_service(settings) as service:
        where = "the embedded sandbox" if service.sandbox else settings.aiart_base_url
        print(f"{operation.title} via {where}")
        try:
            images = [prepare(path.read_bytes(), operation.limits) for path in paths]
        except (OSError, ImageRejected) as error:
            print(f"error: {getattr(error, 'reason', error)}", file=sys.stderr)
            return 2
        handoff = ImageHandoff(service.client)
        try:
            refs = [InputImage(await handoff.reference(image, operation.request_type),
                               image.width, image.height) for image in images]
            task_id = await service.client.submit(operation.build(parsed, refs))
            print(f"submitted task {task_id}")
            task = await wait_for_task(service.client, task_id, operation, settings.job_deadline_s)
        except AiartError as error:
            print(f"error: the service answered {error!r}", file=sys.stderr)
            return 1
        if task is None:
            print("error: the task did not finish in time", file=sys.stderr)
            return 1
        if task.state is TaskState.FAILED:
            print(f"error: the task failed: {task.reason or 'no reason given'}", file=sys.stderr)
            return 1
        fetcher = service.fetcher
        try:
            for path, url in zip(output_paths(args.out, len(task.result_urls)), task.result_urls, strict=True):
                path.parent.mkdir(parents=True, exist_ok=True)
                if operation.result is ResultKind.VIDEO:
                    # a video is kept as the service made it, however large (no Telegram limit here)
                    video = await fetcher.fetch_video(url, name=path.stem, limit=MAX_SHELL_VIDEO_BYTES)
                    if video.path is None:
                        print(f"error: the video is larger than {MAX_SHELL_VIDEO_BYTES} bytes: {url}", file=sys.stderr)
                        return 1
                    video.path.replace(path)
                    path.chmod(0o644)  # a temporary file is private; the saved result is an ordinary file
                    print(f"wrote {path} ({video.video.width}x{video.video.height}, {video.video.duration} s)")
                    continue
                result = await fetcher.fetch(url, name=path.stem)
                path.write_bytes(reencode(result.data, path.suffix))
                print(f"wrote {path}")
        except ResultUnavailable as error:
            print(f"error: {error.reason}", file=sys.stderr)
            return 1
    return 0


async def wait_for_task(client, task_id: str, operation: Operation, deadline_s: float, *, quiet: bool = False):
    """The finished task, polled on the bot's schedule (at least every 2 s); None after `deadline_s`."""
    schedule = PollSchedule()
    started = time.monotonic()
    await asyncio.sleep(schedule.first_delay(operation.name, operation.typical_seconds) / 4)
    while time.monotonic() - started < deadline_s:
        task = await client.get_task(task_id)
        elapsed = time.monotonic() - started
        if task.finished:
            if not quiet:
                print(f"\r{task.state} after {elapsed:.1f}s{' ' * 20}")
            return task
        if not quiet:
            print(f"\rprocessing… {elapsed:.0f}s", end="", flush=True)
        await asyncio.sleep(min(schedule.next_delay(operation.name, elapsed), 2.0))
    return None
