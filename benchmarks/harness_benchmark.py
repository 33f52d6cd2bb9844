"""What the test harness's own choices save: the suite's construct-heavy tests, in one process, run alternately

* as jsii runs them by default: its relay process in front of the kernel, the apps' cloud assemblies on disk
  (``JSII_RUNTIME`` set to jsii's own entry point, ``NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES=disk``);
* with the kernel started from ``tests/jsii_kernel.js``, no relay, assemblies still on disk;
* as the suite runs them: no relay, assemblies in memory (``/dev/shm``, where there is room);

then the session's synthesis of the examples (``tests/example_assembly.py``, cdk-nag and aws-cdk-lib's CloudFormation
validation engine, a WebAssembly module) from the suite's kernel, alternately with V8's default compilers for
WebAssembly (``NEURON_CONSTRUCTS_TEST_WASM_TIERS=default``) and with the baseline compiler alone, as the suite runs it.

``python benchmarks/harness_benchmark.py [--rounds 5]`` (``make bench-harness``) prints each run's wall time and CPU
time (the process and everything it started), then the median of each and its ratio to the first variant. Run it on
an idle machine.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WASM_TIERS = "NEURON_CONSTRUCTS_TEST_WASM_TIERS"
"""``default`` keeps V8's default compilers for WebAssembly in a kernel started from ``tests/jsii_kernel.js``."""
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


def run(command: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=environment, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(variants: dict[str, tuple[list[str], dict[str, str]]], rounds: int) -> None:
    """Run each variant once a round, alternately; print each run, then the medians and their ratios to the first."""
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for round_ in range(1, rounds + 1):
        for name, (command, environment) in variants.items():
            wall, cpu = run(command, environment)
            results[name].append((wall, cpu))
            print(f"round {round_}: {name:28} {wall:5.1f} s wall  {cpu:5.1f} s CPU", flush=True)
    first = next(iter(results.values()))
    base_wall, base_cpu = statistics.median(w for w, _ in first), statistics.median(c for _, c in first)
    for name, runs in results.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"median {name:28} {wall:5.1f} s wall ({wall / base_wall:.2f})  {cpu:5.1f} s CPU ({cpu / base_cpu:.2f})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    base = dict(os.environ)
    base.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    for name in (
        "JSII_RUNTIME",
        "NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES",
        "NEURON_CONSTRUCTS_TEST_JSII_KERNEL",
        WASM_TIERS,
    ):
        base.pop(name, None)
    tests = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *TESTS]
    with tempfile.TemporaryDirectory() as scratch:
        compare(
            {
                "jsii's default": (
                    tests,
                    base
                    | {
                        "JSII_RUNTIME": str(jsii_entry_point(Path(scratch))),
                        "NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES": "disk",
                    },
                ),
                "no relay": (tests, base | {"NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES": "disk"}),
                "no relay, in memory": (tests, base),
            },
            args.rounds,
        )
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import _in_memory, _jsii_kernel_directory, _kernel_environment

    kernel = _jsii_kernel_directory()
    try:
        examples = base | _kernel_environment(kernel) | {"TMPDIR": str(kernel / "tmp"), "CDK_VALIDATION": "false"}
        with tempfile.TemporaryDirectory(dir=_in_memory()) as scratch:
            script = str(ROOT / "tests" / "example_assembly.py")
            synthesis = [sys.executable, script, scratch, "--cloudformation-validation"]
            compare(
                {
                    "examples, default wasm tiers": (synthesis, examples | {WASM_TIERS: "default"}),
                    "examples, baseline wasm only": (synthesis, examples),
                },
                args.rounds,
            )
    finally:
        shutil.rmtree(kernel, ignore_errors=True)


if __name__ == "__main__":
    main()
