"""The timing both synth benchmarks share: a library stack against the same stack in plain aws-cdk-lib.

``main(builders, ...)`` checks that both templates hold the same resources (type by type), then times:

* warm: in one process, after a warm-up, construction + synthesis of each stack alternately, ``--runs`` times,
  with Python's garbage collector run between (not during) runs;
* cold: ``python <script> --synth <kind>`` as a new process, alternately, ``--cold-runs`` times, after the package
  is byte-compiled as ``pip install`` does;

and reports the ratio of the medians (library / plain) and the median of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import collections
import compileall
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))

Builders = Mapping[str, Callable[[Any], Any]]
"""``library`` and ``plain``: each builds a stack named ``Bench`` in the app it is given."""


def synthesize(builders: Builders, kind: str) -> dict[str, Any]:
    """Construct the stack of ``kind`` in a new App and synthesize it; its template."""
    from aws_cdk import App

    app = App(analytics_reporting=False)
    builders[kind](app)
    return app.synth().get_stack_by_name("Bench").template  # type: ignore[no-any-return]


def resource_types(template: dict[str, Any]) -> collections.Counter[str]:
    return collections.Counter(r["Type"] for r in template["Resources"].values())


def warm(builders: Builders, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {kind: [] for kind in builders}
    for _ in range(3):  # warm-up: imports, jsii type loading
        for kind in builders:
            synthesize(builders, kind)
    for _ in range(runs):
        for kind in builders:
            gc.collect()
            gc.disable()
            started = time.perf_counter()
            synthesize(builders, kind)
            times[kind].append(time.perf_counter() - started)
            gc.enable()
    return times


def cold(builders: Builders, script: str, runs: int) -> dict[str, list[float]]:
    compileall.compile_dir(str(ROOT / "neuron_constructs"), quiet=1)
    times: dict[str, list[float]] = {kind: [] for kind in builders}
    for _ in range(runs):
        for kind in builders:
            started = time.perf_counter()
            subprocess.run([sys.executable, script, "--synth", kind], check=True, stdout=subprocess.DEVNULL)
            times[kind].append(time.perf_counter() - started)
    return times


def main(
    builders: Builders,
    *,
    script: str,
    description: str,
    runs: int,
    cold_runs: int,
    extra: Callable[[], tuple[dict[str, Any], list[str]]] | None = None,
) -> None:
    """The benchmark's command line. ``extra`` adds results of its own: (JSON members, lines to print)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=runs, help=f"warm runs per stack (default {runs})")
    parser.add_argument("--cold-runs", type=int, default=cold_runs, help=f"cold runs per stack (default {cold_runs})")
    parser.add_argument("--synth", choices=sorted(builders), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.synth:
        synthesize(builders, args.synth)
        return

    library, plain = resource_types(synthesize(builders, "library")), resource_types(synthesize(builders, "plain"))
    if library != plain:
        raise SystemExit(f"the stacks differ: library-only {library - plain}, plain-only {plain - library}")
    members, lines = extra() if extra else ({}, [])
    results: dict[str, Any] = {"resources": sum(library.values()), **members}
    measures = (
        ("warm", lambda n: warm(builders, n), args.runs),
        ("cold", lambda n: cold(builders, script, n), args.cold_runs),
    )
    for name, measure, count in measures:
        times = measure(count)
        medians = {kind: statistics.median(t) for kind, t in times.items()}
        pairs = [lib / base for lib, base in zip(times["library"], times["plain"], strict=True)]
        results[name] = {
            "runs": count,
            "library_median_s": round(medians["library"], 3),
            "plain_median_s": round(medians["plain"], 3),
            "ratio": round(medians["library"] / medians["plain"], 3),
            "median_pair_ratio": round(statistics.median(pairs), 3),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"Both stacks: {results['resources']} resources of the same types.")
    for line in lines:
        print(line)
    for name in ("warm", "cold"):
        r = results[name]
        print(
            f"{name:>4} ({r['runs']} runs each): library {r['library_median_s']:.3f} s, "
            f"plain aws-cdk-lib {r['plain_median_s']:.3f} s (medians): ratio {r['ratio']:.2f} "
            f"(median of the {r['runs']} pair ratios {r['median_pair_ratio']:.2f})"
        )
