"""How long the everyday test loop takes: ``pytest -n 2 -m "not e2e"``, run ``--runs`` times in a row.

``python benchmarks/test_loop_benchmark.py [--runs 5]`` (``make bench-loop``) prints each run's wall time, the
median, and the machine's pace before each run (a fixed pure-Python workload, in seconds), so a slow run can be told
from a slow machine; and each run's CPU time (user and system) of every process it started, the jsii kernels the
workers leave running as they exit included (on Linux, where this process adopts them as a child subreaper; elsewhere
only the processes that were waited for), which moves less than wall time with what else the machine runs. Run it on
an idle machine from a checkout whose ``make install`` is done.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
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


def adopt_orphans() -> None:
    """Become the child subreaper of what this process starts (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): a process
    whose parent exits (a worker's jsii kernel) is reparented here, so its CPU time is counted when it is reaped."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap_orphans() -> None:
    """Wait for every adopted process to end (a kernel ends once its input closes)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def children_cpu() -> float:
    """User and system CPU seconds of every child reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_loop() -> tuple[float, float, str]:
    """Wall time and CPU time of one loop, and its summary line."""
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(LOOP, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    reap_orphans()
    cpu = children_cpu() - cpu
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    if result.returncode != 0:
        raise SystemExit(f"the loop failed: {summary}")
    return elapsed, cpu, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    adopt_orphans()
    times, cpus = [], []
    for index in range(1, args.runs + 1):
        before = pace()
        elapsed, cpu, summary = run_loop()
        times.append(elapsed)
        cpus.append(cpu)
        print(f"run {index}: {elapsed:5.1f} s, CPU {cpu:5.1f} s   (pace {before:.2f} s)   {summary}", flush=True)
    print(f"median of {args.runs}: {statistics.median(times):.1f} s (min {min(times):.1f}, max {max(times):.1f})")
    print(f"CPU time: median {statistics.median(cpus):.1f} s (min {min(cpus):.1f}, max {max(cpus):.1f})")


if __name__ == "__main__":
    main()
