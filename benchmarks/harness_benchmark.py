"""What the test harness's own choices save: the suite's construct-heavy tests, in one process, run alternately

* as jsii runs them by default: its relay process in front of the kernel, the apps' cloud assemblies on disk
  (``JSII_RUNTIME`` set to jsii's own entry point, ``NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES=disk``);
* with the kernel started from ``tests/jsii_kernel.js``, no relay, assemblies still on disk;
* as the suite runs them: no relay, assemblies in memory (``/dev/shm``, where there is room).

``python benchmarks/harness_benchmark.py [--rounds 5]`` prints each run's wall time and CPU time (the test process
and everything it started), then the median of each and its ratio to jsii's default. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/test_composition.py",
    "tests/test_sliced_service.py",
    "tests/test_capacity.py",
    "tests/test_rules.py",
    "tests/test_fleet.py",
]


def jsii_entry_point(directory: Path) -> Path:
    """jsii's own entry point and kernel, unpacked as jsii unpacks them."""
    from jsii._embedded.jsii import EMBEDDED_FILES, ENTRYPOINT

    embedded = importlib.resources.files("jsii._embedded.jsii")
    for resource_name, path in EMBEDDED_FILES.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(embedded.joinpath(resource_name).read_bytes())
    return directory / EMBEDDED_FILES[ENTRYPOINT]


def run(environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of :data:`TESTS`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *TESTS],
        cwd=ROOT,
        env=environment,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    base = dict(os.environ)
    base.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    for name in ("JSII_RUNTIME", "NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES", "NEURON_CONSTRUCTS_TEST_JSII_KERNEL"):
        base.pop(name, None)
    with tempfile.TemporaryDirectory() as scratch:
        variants = {
            "jsii's default": base
            | {"JSII_RUNTIME": str(jsii_entry_point(Path(scratch))), "NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES": "disk"},
            "no relay": base | {"NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES": "disk"},
            "no relay, in memory": base,
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for round_ in range(1, args.rounds + 1):
            for name, environment in variants.items():
                wall, cpu = run(environment)
                results[name].append((wall, cpu))
                print(f"round {round_}: {name:20} {wall:5.1f} s wall  {cpu:5.1f} s CPU", flush=True)
    first = next(iter(results.values()))
    base_wall, base_cpu = statistics.median(w for w, _ in first), statistics.median(c for _, c in first)
    for name, runs in results.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"median {name:20} {wall:5.1f} s wall ({wall / base_wall:.2f})  {cpu:5.1f} s CPU ({cpu / base_cpu:.2f})")


if __name__ == "__main__":
    main()
