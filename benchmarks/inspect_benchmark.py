"""Benchmark of ``neuron-ecs``: API calls and wall time of ``inspect`` on a large cluster, and start-up.

Run with ``make bench-inspect`` (or ``.venv/bin/python benchmarks/inspect_benchmark.py``).

* A moto server on 127.0.0.1 (in this process, so the fleet can be written into its backend:
  moto does not model Neuron devices) holds one cluster of 1,000 container instances and
  5,000 tasks: 500 inf2.48xlarge with six 2-device slices each and 500 trn1.32xlarge with
  four 4-device slices each (10 task definitions, manual mapping).
* ``inspect_cluster`` runs in process (calls counted per operation), then the installed
  ``neuron-ecs inspect --json`` console script runs against the server; both report the
  median wall time of several runs.
* moto answers a List call in one page whatever its ``maxResults``; ECS pages at 100, so the
  call count ECS would see is reported beside the one measured (it is what the Stubber test
  pins at a smaller size).
* Start-up: ``neuron-ecs catalog`` as a fresh process, against ``import aws_cdk`` alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

INF2_INSTANCES, INF2_SLICE = 500, 2  # 12 devices -> 6 slices per instance
TRN1_INSTANCES, TRN1_SLICE = 500, 4  # 16 devices -> 4 slices per instance


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _median_seconds(runs: int, action: Any) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def _console_script() -> str:
    return str(Path(sys.executable).parent / "neuron-ecs")


def build(endpoint: str) -> tuple[int, int]:
    import boto3
    from moto_fleet import TaskSpec, build_fleet

    session = boto3.Session(region_name="us-east-1")
    instance_types = ["inf2.48xlarge"] * INF2_INSTANCES + ["trn1.32xlarge"] * TRN1_INSTANCES
    inf2 = range(INF2_INSTANCES)
    trn1 = range(INF2_INSTANCES, INF2_INSTANCES + TRN1_INSTANCES)
    tasks = [
        TaskSpec(f"inf2-slice{i}", on_instances=inf2, mapped_devices=range(i * INF2_SLICE, (i + 1) * INF2_SLICE))
        for i in range(12 // INF2_SLICE)
    ] + [
        TaskSpec(f"trn1-slice{i}", on_instances=trn1, mapped_devices=range(i * TRN1_SLICE, (i + 1) * TRN1_SLICE))
        for i in range(16 // TRN1_SLICE)
    ]
    fleet = build_fleet(session, cluster="bench", instance_types=instance_types, tasks=tasks, endpoint_url=endpoint)
    return len(fleet.container_instance_arns), len(fleet.task_arns)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement (default 5)")
    parser.add_argument("--output", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()

    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    from moto.server import ThreadedMotoServer

    from neuron_constructs.tools.inspection import API_PAGE_SIZE, ecs_client, find_problems, inspect_cluster

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        start = time.perf_counter()
        instances, tasks = build(endpoint)
        build_seconds = time.perf_counter() - start

        client = ecs_client(region="us-east-1", endpoint_url=endpoint)
        inspection = inspect_cluster(client, "bench")  # warm-up, and the call count
        assert len(inspection.container_instances) == instances and len(inspection.tasks) == tasks
        assert not inspection.findings, inspection.findings[:3]
        in_process, _ = _median_seconds(args.runs, lambda: inspect_cluster(client, "bench"))
        instances_seen, tasks_seen = list(inspection.container_instances), list(inspection.tasks)
        analysis, _ = _median_seconds(args.runs, lambda: find_problems(instances_seen, tasks_seen))
        from neuron_constructs.tools.device_map import render_device_map

        device_map, _ = _median_seconds(args.runs, lambda: render_device_map(inspection, styled=True))
        map_lines = render_device_map(inspection, styled=False)
        assert sum(1 for line in map_lines if line.startswith("i-")) == instances

        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint}
        command = [_console_script(), "inspect", "--cluster", "bench", "--json"]

        cpu_seconds: list[float] = []

        def cli() -> None:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_seconds.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            assert result.returncode == 0, result.stderr
            assert len(json.loads(result.stdout)["tasks"]) == tasks

        console, _ = _median_seconds(args.runs, cli)
        console_cpu = statistics.median(cpu_seconds)
    finally:
        server.stop()

    families = 12 // INF2_SLICE + 16 // TRN1_SLICE
    pages = {"instances": math.ceil(instances / API_PAGE_SIZE), "tasks": math.ceil(tasks / API_PAGE_SIZE)}
    ecs_calls = {
        "ListContainerInstances": pages["instances"],
        "DescribeContainerInstances": pages["instances"],
        "ListTasks": pages["tasks"],
        "DescribeTasks": pages["tasks"],
        "DescribeTaskDefinition": families,
    }

    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
    catalog, _ = _median_seconds(
        args.runs * 2, lambda: subprocess.run([_console_script(), "catalog"], env=env, capture_output=True, check=True)
    )
    cdk_probe = "import sys, aws_cdk; assert 'aws_cdk' in sys.modules"
    cdk_import, _ = _median_seconds(
        args.runs, lambda: subprocess.run([sys.executable, "-c", cdk_probe], env=env, capture_output=True, check=True)
    )
    catalog_probe = (
        "import sys; from neuron_constructs.tools.cli import main; main(['catalog']);"
        "assert 'aws_cdk' not in sys.modules and 'boto3' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", catalog_probe], env=env, capture_output=True, check=True)

    results = {
        "cluster": {"container_instances": instances, "tasks": tasks, "task_definitions": families},
        "fleet_build_seconds": round(build_seconds, 1),
        "calls_measured_on_moto": dict(inspection.api_calls),
        "calls_on_ecs_paging_at_100": ecs_calls,
        "inspect_in_process_median_seconds": round(in_process, 3),
        "find_problems_median_seconds": round(analysis, 4),
        "device_map_median_seconds": round(device_map, 4),
        "device_map_lines": len(map_lines),
        "neuron_ecs_inspect_json_median_seconds": round(console, 3),
        "neuron_ecs_inspect_json_cpu_median_seconds": round(console_cpu, 3),
        "neuron_ecs_catalog_median_seconds": round(catalog, 3),
        "import_aws_cdk_median_seconds": round(cdk_import, 3),
        "runs": args.runs,
    }
    print(f"cluster: {instances} container instances, {tasks} tasks, {families} task definitions")
    measured = dict(inspection.api_calls)
    print(f"calls measured on moto (one page per List call): {sum(measured.values())} {measured}")
    print(f"calls on ECS (List pages of {API_PAGE_SIZE}):           {sum(ecs_calls.values())} {ecs_calls}")
    print(f"inspect_cluster in process:          median {in_process:.3f} s over {args.runs} runs")
    print(f"device map of every instance:        median {device_map:.4f} s ({len(map_lines)} lines)")
    print(f"  of which find_problems:            median {analysis:.4f} s (the rest is the server and HTTP)")
    print(f"neuron-ecs inspect --json (process): median {console:.3f} s over {args.runs} runs")
    print(f"  CPU time of that process:          median {console_cpu:.3f} s (the rest is waiting for moto)")
    print(f"neuron-ecs catalog (process):        median {catalog:.3f} s over {args.runs * 2} runs, no aws_cdk or boto3")
    print(f"python -c 'import aws_cdk' alone:    median {cdk_import:.3f} s ({cdk_import / catalog:.0f}x catalog)")
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
