"""Benchmark: synth time of one stack as sliced services grow from 1 to 64, and the cost per added service.

Run with ``make bench-slices`` (or ``.venv/bin/python benchmarks/slice_synth_benchmark.py``).

Each size builds a fresh ``App`` with one stack: a cluster and as many ``SlicedNeuronService`` s
as it takes to reach N slice services (16 per inf1.24xlarge capacity at ``devices_per_task=1``;
fewer from smaller types below 16), then synthesizes it. Construction and synthesis are timed
together, ``--runs`` times per size; the medians are fitted with least squares, time = a + b * N.
The slope b is the time per added service; linear cost shows as a high R^2 and a per-service
time at 64 that matches the one at 16.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))

SIZES = (1, 2, 4, 8, 16, 32, 64)
# (instance type, devices_per_task) giving 1, 2, 4, 8 and 16 slices.
LAYOUT_BELOW_16 = {1: ("inf2.xlarge", 1), 2: ("inf1.6xlarge", 2), 4: ("inf1.6xlarge", 1), 8: ("inf1.24xlarge", 2)}


def build_and_synth(services: int) -> int:
    from aws_cdk import App, Stack
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import NeuronCluster, SlicedNeuronService

    app = App(analytics_reporting=False)
    stack = Stack(app, "Bench")
    cluster = NeuronCluster(stack, "Neuron")
    image = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
    layouts = [LAYOUT_BELOW_16[services]] if services < 16 else [("inf1.24xlarge", 1)] * (services // 16)
    built = 0
    for n, (instance_type, devices_per_task) in enumerate(layouts):
        capacity = cluster.add_ec2_capacity(f"Capacity{n}", instance_type=instance_type, max_capacity=2)
        sliced = SlicedNeuronService(
            stack,
            f"Sliced{n}",
            cluster=cluster,
            instance_type=instance_type,
            devices_per_task=devices_per_task,
            image=image,
            capacity=capacity,
        )
        built += len(sliced.services)
    template = app.synth().get_stack_by_name("Bench").template
    assert sum(1 for r in template["Resources"].values() if r["Type"] == "AWS::ECS::Service") == services == built
    return len(template["Resources"])


def fit(xs: list[int], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x: (a, b, R^2)."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    a = mean_y - b * mean_x
    residual = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    total = sum((y - mean_y) ** 2 for y in ys)
    return a, b, 1 - residual / total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per size (default 3)")
    parser.add_argument("--output", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()

    build_and_synth(1)  # warm-up: starts the jsii runtime and loads aws-cdk-lib
    medians: list[float] = []
    resources: list[int] = []
    for services in SIZES:
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            count = build_and_synth(services)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
        resources.append(count)
        print(f"{services:>3} services  {count:>4} resources  median {medians[-1]:.2f} s over {args.runs} runs")
    a, b, r2 = fit(list(SIZES), medians)
    per_service_16 = (medians[SIZES.index(16)] - a) / 16
    per_service_64 = (medians[SIZES.index(64)] - a) / 64
    print(f"fit: {a:.2f} s + {b * 1000:.0f} ms per added service (R^2 = {r2:.4f})")
    print(
        f"per service above the fixed cost: {per_service_16 * 1000:.0f} ms at 16, {per_service_64 * 1000:.0f} ms at 64"
    )
    if args.output:
        args.output.write_text(
            json.dumps(
                {
                    "sizes": list(SIZES),
                    "resources": resources,
                    "median_seconds": [round(m, 3) for m in medians],
                    "fixed_seconds": round(a, 3),
                    "ms_per_service": round(b * 1000, 1),
                    "r_squared": round(r2, 4),
                    "runs": args.runs,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
