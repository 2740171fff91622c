"""Input preparation: decode, validate, resize and encode a 12-megapixel phone photo for each operation.

Operations with the same image limits share one measurement. Each runs in a fresh child process (`python -m bench.perf.prep <operation> <file> <runs>`),
so the peak memory is that operation's alone: the child resets its high-water mark (VmHWM, through
/proc/self/clear_refs) after loading the file, prepares it `runs` times, and reports the times and
how far the peak rose above the resident size it started from. Pillow allocates pixels outside
Python's allocator, so tracemalloc would not see them; the kernel's figure does.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

WIDTH, HEIGHT = 4000, 3000


@dataclass(frozen=True)
class PrepResult:
    """Median preparation time and peak memory of one operation."""

    operation: str
    output: str
    median_ms: float
    peak_mb: float


def photo_12mp(path: Path) -> Path:
    """A 4000×3000 JPEG with the detail of a photo (smooth gradients under sensor-like noise)."""
    if path.exists():
        return path
    from PIL import Image

    gradient = Image.linear_gradient("L").resize((WIDTH, HEIGHT))
    base = Image.merge("RGB", (gradient, gradient.rotate(90).resize((WIDTH, HEIGHT)), gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    noise = Image.effect_noise((WIDTH, HEIGHT), 24).convert("RGB")
    photo = Image.blend(base, noise, 0.25)
    buffer = io.BytesIO()
    photo.save(buffer, "JPEG", quality=92)
    path.write_bytes(buffer.getvalue())
    return path


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as status:
        match = re.search(rf"^{key}:\s+(\d+) kB", status.read(), re.MULTILINE)
    return int(match.group(1)) / 1024 if match else 0.0


def _child(operation_name: str, path: str, runs: int) -> dict[str, object]:
    from bot.images import prepare
    from bot.operations.registry import build_catalogue
    from bot.operations.styles import load_catalogue

    operation = build_catalogue(load_catalogue(None))[operation_name]
    data = Path(path).read_bytes()
    prepare(data, operation.limits)  # warm-up: lazy imports and codec set-up stay out of the figures
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # reset VmHWM to the current resident size
    start_rss = _status_mb("VmRSS")
    times = []
    output = ""
    for _ in range(runs):
        started = time.perf_counter()
        prepared = prepare(data, operation.limits)
        times.append((time.perf_counter() - started) * 1000)
        output = f"{prepared.width}x{prepared.height} {prepared.format} {len(prepared.data) // 1024} KiB"
        del prepared
    return {"times_ms": times, "peak_mb": _status_mb("VmHWM") - start_rss, "output": output}


async def run_prep(workdir: Path, runs: int) -> list[PrepResult]:
    """Every kind of image preparation (operations sharing limits together), slowest first."""
    from bot.operations.registry import build_catalogue
    from bot.operations.styles import load_catalogue

    workdir.mkdir(parents=True, exist_ok=True)
    path = photo_12mp(workdir / "photo-12mp.jpg")
    # operations with the same limits do the same work: measure each kind once, so the slowest is
    # the slowest kind of work and not the noisiest of ten runs of the same one
    by_limits: dict[object, list[str]] = {}
    for op in build_catalogue(load_catalogue(None)).values():
        if op.images > 0:
            by_limits.setdefault(op.limits, []).append(op.name)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    results = []
    for names in by_limits.values():
        name = names[0]
        child = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.perf.prep", name, str(path), str(runs),
                                                     env=env, stdout=asyncio.subprocess.PIPE)
        out, _ = await child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"preparing for {name} failed (exit {child.returncode})")
        report = json.loads(out.decode().strip().splitlines()[-1])
        results.append(PrepResult(operation="/".join(names), output=str(report["output"]),
                                  median_ms=statistics.median(report["times_ms"]), peak_mb=float(report["peak_mb"])))
    return sorted(results, key=lambda result: -result.median_ms)


#: the flood of large inputs: this many at once, each a small PNG that decodes to 40 megapixels
FLOOD_INPUTS, FLOOD_SIZE = 20, (8000, 5000)


@dataclass(frozen=True)
class PrepFloodResult:
    """Peak resident memory of one process preparing many large inputs at once."""

    inputs: int
    bounded: bool
    peak_rss_mb: float
    seconds: float


def _flood_child(path: str, inputs: int, bounded: bool, operation_name: str) -> dict[str, float]:
    """Prepare `inputs` copies of the image at once, through the worker's PreparationSlots (`bounded`,
    with the settings' defaults) or each in its own thread; report the process's peak RSS."""
    from bot.config import Settings
    from bot.images import PreparationSlots, prepare
    from bot.operations.registry import build_catalogue
    from bot.operations.styles import load_catalogue

    limits = build_catalogue(load_catalogue(None))[operation_name].limits
    data = Path(path).read_bytes()
    settings = Settings(_env_file=None)
    slots = PreparationSlots(settings.image_prepare_concurrency, int(settings.image_prepare_megapixels * 1_000_000))

    async def flood() -> None:
        if bounded:
            await asyncio.gather(*(slots.prepare(data, limits) for _ in range(inputs)))
        else:  # what the worker did before: every submission straight into a thread of its own
            await asyncio.gather(*(asyncio.to_thread(prepare, data, limits) for _ in range(inputs)))

    started = time.perf_counter()
    asyncio.run(flood())
    return {"peak_rss_mb": _status_mb("VmHWM"), "seconds": time.perf_counter() - started}


async def run_prep_flood(workdir: Path, *, inputs: int = FLOOD_INPUTS, bounded: bool = True,
                         operation: str = "upscale") -> PrepFloodResult:
    """Peak RSS of a fresh process preparing `inputs` 40-megapixel PNGs (126 KB each on the wire) at once."""
    from PIL import Image

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "flat-40mp.png"
    if not path.exists():
        Image.new("RGB", FLOOD_SIZE, (200, 30, 30)).save(path, "PNG", compress_level=9)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    code = ("import json, sys; from bench.perf.prep import _flood_child; "
            "print(json.dumps(_flood_child(sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'bounded', sys.argv[4])))")
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", code, str(path), str(inputs),
                                                 "bounded" if bounded else "unbounded", operation,
                                                 env=env, stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"the preparation flood failed (exit {child.returncode})")
    report = json.loads(out.decode().strip().splitlines()[-1])
    return PrepFloodResult(inputs, bounded, float(report["peak_rss_mb"]), float(report["seconds"]))


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
