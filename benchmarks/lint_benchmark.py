"""Benchmark of the template checks: ``neuron-ecs lint`` on the example templates, and the checks in process.

Run with ``make bench-lint`` (or ``.venv/bin/python benchmarks/lint_benchmark.py``).

* The example app is synthesized once into a temporary directory.
* ``neuron-ecs lint DIR`` runs as a fresh process on its five templates (median wall time of
  several runs): what a CI job pays after ``cdk synth``.
* ``check_template`` runs in process on each parsed template (median per template): what the
  synth-time check adds to ``cdk synth``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    from app import build_app
    from aws_cdk import App

    from neuron_constructs.checks.template_checks import check_template

    with tempfile.TemporaryDirectory() as outdir:
        build_app(App(analytics_reporting=False, outdir=outdir)).synth()
        templates = sorted(Path(outdir).glob("*.template.json"))
        script = Path(sys.executable).parent / "neuron-ecs"
        wall: list[float] = []
        for _ in range(args.runs):
            started = time.perf_counter()
            result = subprocess.run([str(script), "lint", outdir], capture_output=True, check=False)
            wall.append(time.perf_counter() - started)
            assert result.returncode == 0, result.stdout
        parsed = [json.loads(t.read_text()) for t in templates]
        in_process: list[float] = []
        for _ in range(args.runs):
            for template in parsed:
                started = time.perf_counter()
                check_template(template)
                in_process.append(time.perf_counter() - started)
    resources = sum(len(t["Resources"]) for t in parsed)
    print(
        f"neuron-ecs lint on {len(templates)} example templates ({resources} resources), whole process, "
        f"{args.runs} runs: median {statistics.median(wall):.3f} s"
    )
    print(f"check_template in process, per template: median {statistics.median(in_process) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
