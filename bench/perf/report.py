"""The figures: the JSON keys, their targets, and the table printed before the JSON line."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence

#: every key of the closing JSON line, in its order
KEYS = ("throughput_jobs_s", "throughput_jobs_s_pg", "tg_calls_per_job", "tg_calls_per_job_quick",
        "tg_calls_per_job_slow", "polls_per_task", "lag_p95_s",
        "polls_per_task_fixed2", "lag_p95_s_fixed2", "polls_per_task_fixed5", "lag_p95_s_fixed5",
        "polls_per_task_cb", "lag_p95_s_cb", "polls_per_task_cb_lossy", "lag_p95_s_cb_lossy",
        "rss_mb_10k", "cpu_pct_10k", "prep_ms_12mp", "prep_peak_mb", "prep_flood_peak_rss_mb", "tg_rate_ratio",
        "tg_429", "throughput_jobs_s_pg_r1", "throughput_jobs_s_pg_r2", "tg_rate_ratio_r3", "tg_429_r3",
        "polls_per_task_cb_r3")

Figures = Mapping[str, float | None]


def _known(*values: float | None) -> bool:
    return all(value is not None and not math.isnan(value) for value in values)


def _polls_vs_fixed2(f: Figures) -> bool | None:
    if not _known(f["polls_per_task"], f["polls_per_task_fixed2"], f["lag_p95_s"], f["lag_p95_s_fixed2"]):
        return None
    return (f["polls_per_task"] <= 0.7 * f["polls_per_task_fixed2"]
            and f["lag_p95_s"] <= f["lag_p95_s_fixed2"] + 0.3)


def _polls_vs_fixed5(f: Figures) -> bool | None:
    if not _known(f["polls_per_task"], f["polls_per_task_fixed5"], f["lag_p95_s"], f["lag_p95_s_fixed5"]):
        return None
    return f["polls_per_task"] < f["polls_per_task_fixed5"] and f["lag_p95_s"] < f["lag_p95_s_fixed5"]


def _lossy_vs_polling(f: Figures) -> bool | None:
    if not _known(f["polls_per_task_cb_lossy"], f["lag_p95_s_cb_lossy"], f["polls_per_task"], f["lag_p95_s"]):
        return None
    return f["polls_per_task_cb_lossy"] <= f["polls_per_task"] and f["lag_p95_s_cb_lossy"] <= f["lag_p95_s"]


def _at_least(key: str, floor: float) -> Callable[[Figures], bool | None]:
    return lambda f: None if not _known(f[key]) else f[key] >= floor


def _at_most(key: str, ceiling: float) -> Callable[[Figures], bool | None]:
    return lambda f: None if not _known(f[key]) else f[key] <= ceiling


#: (the target, check)
TARGETS: tuple[tuple[str, Callable[[Figures], bool | None]], ...] = (
    ("throughput_jobs_s >= 60", _at_least("throughput_jobs_s", 60)),
    ("tg_calls_per_job <= 3", _at_most("tg_calls_per_job", 3)),
    ("tg_calls_per_job_quick <= 3", _at_most("tg_calls_per_job_quick", 3)),
    ("tg_calls_per_job_slow <= 5", _at_most("tg_calls_per_job_slow", 5)),
    ("polls <= 0.7 x fixed2 with lag_p95 <= fixed2 + 0.3 s", _polls_vs_fixed2),
    ("fewer polls than fixed5 at a lower lag_p95", _polls_vs_fixed5),
    ("polls_per_task_cb <= 1.2", _at_most("polls_per_task_cb", 1.2)),
    ("lag_p95_s_cb <= 0.3", _at_most("lag_p95_s_cb", 0.3)),
    ("cb_lossy at or below the polling-only figures", _lossy_vs_polling),
    ("rss_mb_10k <= 200", _at_most("rss_mb_10k", 200)),
    ("cpu_pct_10k <= 5", _at_most("cpu_pct_10k", 5)),
    ("prep_ms_12mp <= 150", _at_most("prep_ms_12mp", 150)),
    ("prep_peak_mb <= 200", _at_most("prep_peak_mb", 200)),
    ("prep_flood_peak_rss_mb <= 400", _at_most("prep_flood_peak_rss_mb", 400)),
    ("tg_rate_ratio >= 0.9", _at_least("tg_rate_ratio", 0.9)),
    ("tg_429 = 0", lambda f: None if not _known(f["tg_429"]) else f["tg_429"] == 0),
    ("throughput_jobs_s_pg_r1 >= 60", _at_least("throughput_jobs_s_pg_r1", 60)),
    ("throughput_jobs_s_pg_r2 >= 60", _at_least("throughput_jobs_s_pg_r2", 60)),
    ("tg_rate_ratio_r3 >= 0.9", _at_least("tg_rate_ratio_r3", 0.9)),
    ("tg_429_r3 = 0", lambda f: None if not _known(f["tg_429_r3"]) else f["tg_429_r3"] == 0),
    ("polls_per_task_cb_r3 <= 1.2", _at_most("polls_per_task_cb_r3", 1.2)),
)


def median_figures(runs: Sequence[Figures]) -> dict[str, float | None]:
    """Each key's median over the runs that measured it (None if none did)."""
    merged: dict[str, float | None] = {}
    for key in KEYS:
        values = [run[key] for run in runs if _known(run.get(key))]
        merged[key] = statistics.median(values) if values else None
    return merged


def _shown(value: float | None) -> str:
    if value is None:
        return "—"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{value:.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def figures_table(figures: Figures, runs: Sequence[Figures]) -> str:
    """Each key with its median and the single runs, then every target with its verdict."""
    lines = [f"{'figure':<24} {'median':>9}   runs"]
    for key in KEYS:
        spread = ", ".join(_shown(run.get(key)) for run in runs)
        lines.append(f"{key:<24} {_shown(figures[key]):>9}   {spread}")
    lines.append("")
    lines.append("targets (on the medians; and in how many single runs)")
    for text, check in TARGETS:
        verdict = check(figures)
        mark = "n/a " if verdict is None else ("met " if verdict else "MISS")
        verdicts = [check({key: run.get(key) for key in KEYS}) for run in runs]
        judged = [v for v in verdicts if v is not None]
        tally = f"   (met in {sum(judged)} of {len(judged)} runs)" if len(runs) > 1 and judged else ""
        lines.append(f"  [{mark}] {text}{tally}")
    return "\n".join(lines)


def json_line(figures: Figures) -> str:
    """The closing line: exactly these keys, rounded, in order."""
    def rounded(value: float | None) -> float | int | None:
        if value is None:
            return None
        if float(value).is_integer():
            return int(value)
        return round(value, 3)
    return json.dumps({key: rounded(figures.get(key)) for key in KEYS})
