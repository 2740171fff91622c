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
from bot.operations.catalogue import ArgumentError, InputImage, Operation, StyleMissing, build_catalogue
from bot.operations.styles import load_catalogue
from bot.runtime import connect_service

#: per operation: (extra positional images, options as (flags, argparse keywords), how to form the command text)
OPTIONS: dict[str, tuple[tuple[str, ...], list[tuple[tuple[str, ...], dict]]]] = {
    "upscale": ((), [(("--factor",), {"type": int, "choices": (2, 4), "default": 2})]),
    "retouch": ((), []),
    "imagine": ((), [(("--prompt",), {"required": True}), (("--style",), {"default": None}),
                     (("--size",), {"default": None})]),
    "art": ((), [(("--style",), {"required": True}), (("--prompt",), {"default": ""})]),
    "removebg": ((), [(("--mode",), {"choices": ("auto", "body", "object"), "default": "auto"})]),
    "headshot": ((), [(("--style",), {"required": True}), (("--count",), {"type": int, "default": None})]),
    "colorize": ((), []),
    "restore": ((), []),
    "faceswap": (("template",), []),
    "expand": ((), [(("--pad",), {"nargs": 4, "type": int, "metavar": ("LEFT", "TOP", "RIGHT", "BOTTOM"),
                                  "required": True})]),
    "replace": (("mask",), [(("--prompt",), {"required": True})]),
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `try` and one sub-command per operation, each with its own options."""
    catalogue = build_catalogue(load_catalogue())
    parser = subparsers.add_parser("try", help="run one operation from the shell and save the result",
                                   description="Run one operation against the configured service "
                                               "(the embedded sandbox when AIART_API_KEY is unset).",
                                   epilog=_operations_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    operations = parser.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    for name, (extra_images, options) in OPTIONS.items():
        operation = catalogue[name]
        sub = operations.add_parser(name, help=operation.summary, description=f"{operation.summary}. "
                                    f"In chat: {operation.usage}")
        if operation.images:
            sub.add_argument("image", type=Path, help=f"the {operation.image_names[0]}")
        for extra in extra_images:
            sub.add_argument(extra, type=Path, help=f"the {extra} image")
        for flags, keywords in options:
            sub.add_argument(*flags, **keywords)
        sub.add_argument("--out", type=Path, required=True,
                         help="where to write the result (several results: NAME-1.ext, NAME-2.ext, …)")


def _operations_epilog() -> str:
    lines = ["operations and their options:"]
    for name, (extra_images, options) in OPTIONS.items():
        images = "" if name == "imagine" else " IMAGE" + "".join(f" {extra.upper()}" for extra in extra_images)
        flags = []
        for option_flags, keywords in options:
            if "choices" in keywords:
                value = "{" + ",".join(map(str, keywords["choices"])) + "}"
            elif "metavar" in keywords:
                value = " ".join(keywords["metavar"])
            else:
                value = option_flags[0].lstrip("-").upper()
            flag = f"{option_flags[0]} {value}"
            flags.append(flag if keywords.get("required") else f"[{flag}]")
        lines.append(f"  {name}{images}{''.join(' ' + flag for flag in flags)} --out FILE")
    lines.append("example: python -m bot try upscale photo.jpg --factor 2 --out big.png")
    return "\n".join(lines)


def command_text(args: argparse.Namespace) -> str:
    """The argument text a chat user would type for these options."""
    name = args.operation
    if name == "upscale":
        return str(args.factor)
    if name == "imagine":
        return " ".join(part for part in (args.style, args.size, args.prompt) if part)
    if name == "art":
        return f"{args.style} {args.prompt}".strip()
    if name == "removebg":
        return args.mode
    if name == "headshot":
        return f"{args.style} {args.count or ''}".strip()
    if name == "expand":
        return " ".join(str(side) for side in args.pad)
    if name == "replace":
        return args.prompt
    return ""


def output_paths(out: Path, count: int) -> list[Path]:
    if count == 1:
        return [out]
    return [out.with_name(f"{out.stem}-{index}{out.suffix}") for index in range(1, count + 1)]


async def run_try(settings: Settings, args: argparse.Namespace) -> int:
    """Run the operation, showing progress; returns the process exit code."""
    catalogue_styles = load_catalogue(settings.styles_file)
    catalogue = build_catalogue(catalogue_styles)
    operation: Operation = catalogue[args.operation]
    try:
        parsed = operation.parse(command_text(args))
    except StyleMissing:
        group = catalogue_styles.group(operation.style_group)
        if group.default is None:
            print(f"error: choose --style: {', '.join(group.names())}", file=sys.stderr)
            return 2
        parsed = operation.parse(f"{group.default} {command_text(args)}")
    except ArgumentError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    paths = [args.image] if operation.images else []
    paths += [getattr(args, extra) for extra in OPTIONS[operation.name][0]]
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
            refs = [InputImage(await handoff.reference(image, accepts_base64=operation.accepts_base64),
                               image.width, image.height) for image in images]
            task_id = await service.client.submit(operation.build(parsed, refs))
            print(f"submitted task {task_id}")
            task = await _wait(service.client, task_id, operation, settings.job_deadline_s)
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
                result = await fetcher.fetch(url, name=path.stem)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(reencode(result.data, path.suffix))
                print(f"wrote {path}")
        except ResultUnavailable as error:
            print(f"error: {error.reason}", file=sys.stderr)
            return 1
    return 0


async def _wait(client, task_id: str, operation: Operation, deadline_s: float):
    schedule = PollSchedule()
    started = time.monotonic()
    await asyncio.sleep(schedule.first_delay(operation.name, operation.typical_seconds) / 4)
    while time.monotonic() - started < deadline_s:
        task = await client.get_task(task_id)
        elapsed = time.monotonic() - started
        if task.finished:
            print(f"\r{task.state} after {elapsed:.1f}s{' ' * 20}")
            return task
        print(f"\rprocessing… {elapsed:.0f}s", end="", flush=True)
        await asyncio.sleep(min(schedule.next_delay(operation.name, elapsed), 2.0))
    return None
