"""Benchmark and chaos scripts, run from the repository root: `python -m bench.run`, `python -m bench.chaos`."""
