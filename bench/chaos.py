"""Chaos run from the command line: SIGKILL the bot while it works through many jobs, then count the damage.

    python -m bench.chaos [--jobs 200] [--kills 5] [--seed N] [--chats 40] [--timeout 600] [--workdir DIR]

The experiment lives in tests/harness/chaos.py (CI runs a small one, tests/e2e/test_chaos.py). Prints the
report, then one line of JSON; the exit code is non-zero when a request was lost, a job stuck, or there
were more duplicates than kills.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from tests.harness.chaos import ChaosConfig, run_chaos


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--chats", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every job to end")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the database and log here")
    args = parser.parse_args(argv)
    config = ChaosConfig(jobs=args.jobs, kills=args.kills, seed=args.seed, chats=max(2, args.chats),
                         timeout=args.timeout, workdir=args.workdir)
    report = asyncio.run(run_chaos(config))
    print(report.table())
    print(report.summary_json())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
