"""How long the everyday test loop takes: ``pytest -n 2 -m "not e2e"``, run ``--runs`` times in a row.

``python benchmarks/test_loop_benchmark.py [--runs 5]`` (``make bench-loop``) prints each run's wall time, the
median, and the machine's pace before each run (a fixed pure-Python workload, in seconds), so a slow run can be told
from a slow machine. Run it on an idle machine from a checkout whose ``make install`` is done.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = [sys.executable, "-m", "pytest", "-n", "2", "-m", "not e2e", "-q", "-p", "no:cacheprovider"]


def pace() -> float:
    """Seconds a fixed pure-Python workload takes on this machine now."""
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i * i % 7
    return time.perf_counter() - start


def run_loop() -> tuple[float, str]:
    """Wall time of one loop, and its summary line."""
    start = time.perf_counter()
    result = subprocess.run(LOOP, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    if result.returncode != 0:
        raise SystemExit(f"the loop failed: {summary}")
    return elapsed, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    times = []
    for index in range(1, args.runs + 1):
        before = pace()
        elapsed, summary = run_loop()
        times.append(elapsed)
        print(f"run {index}: {elapsed:5.1f} s   (pace {before:.2f} s)   {summary}", flush=True)
    print(f"median of {args.runs}: {statistics.median(times):.1f} s (min {min(times):.1f}, max {max(times):.1f})")


if __name__ == "__main__":
    main()
