"""How long the everyday test loop takes: ``pytest -n 2 -m "not e2e"``, run ``--runs`` times in a row.

``python benchmarks/test_loop_benchmark.py [--runs 5]`` (``make bench-loop``) prints each run's wall time, the
median, and the machine's pace before each run (a fixed pure-Python workload, in seconds), so a slow run can be told
from a slow machine; and each run's CPU time (user and system) of every process it started, the jsii kernels the
workers leave running as they exit included (on Linux, where this process adopts them as a child subreaper; elsewhere
only the processes that were waited for), which moves less than wall time with what else the machine runs. Run it on
an idle machine from a checkout whose ``make install`` is done.

``--against REV`` runs, alternately, the loop of a git revision (checked out into a temporary worktree that uses this
checkout's environment; its own package and tests come first on the path) and this checkout's, ``--runs`` times each,
and prints each side's medians and the ratio of this checkout's to the revision's: within one hour, on one machine,
which is the only way two versions of the loop compare (the machine's pace moves more than they differ).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


def run_loop(root: Path = ROOT) -> tuple[float, float, str]:
    """Wall time and CPU time of one loop of the checkout at ``root``, and its summary line."""
    cpu = children_cpu()
    start = time.perf_counter()
    environment = {**os.environ, "PYTHONPATH": str(root)} if root != ROOT else None
    result = subprocess.run(LOOP, cwd=root, env=environment, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    reap_orphans()
    cpu = children_cpu() - cpu
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    if result.returncode != 0:
        raise SystemExit(f"the loop failed: {summary}")
    return elapsed, cpu, summary


@contextlib.contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """A temporary git worktree of ``revision`` that runs with this checkout's virtual environment and npm packages."""
    directory = Path(tempfile.mkdtemp(prefix="neuron-loop-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(directory), revision], cwd=ROOT, check=True)
    try:
        for shared in (".venv", "node_modules"):
            if (ROOT / shared).exists():
                (directory / shared).symlink_to(ROOT / shared)
        yield directory
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(directory)], cwd=ROOT, check=False)
        shutil.rmtree(directory, ignore_errors=True)


def compare(revision: str, runs: int) -> None:
    """The loop of ``revision`` and of this checkout, run alternately ``runs`` times each."""
    sides: dict[str, tuple[list[float], list[float]]] = {revision: ([], []), "this checkout": ([], [])}
    with worktree(revision) as other:
        for index in range(1, runs + 1):
            for name, root in ((revision, other), ("this checkout", ROOT)):
                before = pace()
                elapsed, cpu, summary = run_loop(root)
                sides[name][0].append(elapsed)
                sides[name][1].append(cpu)
                print(f"{name} run {index}: {elapsed:5.1f} s, CPU {cpu:5.1f} s   (pace {before:.2f} s)   {summary}")
    medians = {name: (statistics.median(t), statistics.median(c)) for name, (t, c) in sides.items()}
    for name, (wall, cpu) in medians.items():
        print(f"{name}: median {wall:.1f} s, CPU time median {cpu:.1f} s")
    (old_wall, old_cpu), (new_wall, new_cpu) = medians[revision], medians["this checkout"]
    print(f"this checkout / {revision}: wall {new_wall / old_wall:.2f}, CPU time {new_cpu / old_cpu:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="a git revision to run alternately with this checkout")
    args = parser.parse_args(argv)
    adopt_orphans()
    if args.against:
        compare(args.against, args.runs)
        return
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
