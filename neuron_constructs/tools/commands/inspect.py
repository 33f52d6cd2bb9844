"""``neuron-ecs inspect``: a cluster's container instances, tasks and Neuron devices, which task holds which
NeuronCore, the findings (a core held twice, idle devices), and with ``--metrics`` the NeuronCore utilization."""

from __future__ import annotations

import argparse
import time
from typing import IO, TYPE_CHECKING

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.aws import _region, _session
from neuron_constructs.tools.commands.output import EXIT_CONFLICT, EXIT_OK, _compact, _Output, _print_json

if TYPE_CHECKING:
    from neuron_constructs.tools.inspection import ClusterInspection, ContainerInstance

_FINDING_COLOURS = {"conflict": "31", "missing-device": "31", "malformed": "31", "unregistered": "33", "idle": "33"}

_PROGRESS_AFTER_S = 2.0


class _Progress:
    """A progress line on stderr once an inspection has run for a while, at most once a second."""

    def __init__(self, stream: IO[str], *, after_s: float | None = None) -> None:
        self.stream = stream
        self.terminal = stream.isatty()
        self.started = time.monotonic()
        self.after_s = _PROGRESS_AFTER_S if after_s is None else after_s
        self.shown = 0.0
        self.last = ""

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.after_s or (self.shown and now - self.shown < 1.0):
            return
        self.shown, self.last = now, message
        end = "" if self.terminal else "\n"
        prefix = "\r\033[K" if self.terminal else ""
        self.stream.write(f"{prefix}neuron-ecs inspect: {terminal_safe(message)}{end}")
        self.stream.flush()

    def done(self) -> None:
        if self.terminal and self.last:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _inspect(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.inspection import ecs_client, inspect_cluster

    session = _session(args)
    _region(session)
    client = ecs_client(session=session, region=session.region_name, endpoint_url=args.endpoint_url)
    progress = _Progress(args.stderr)
    try:
        inspection = inspect_cluster(client, args.cluster, progress=progress)
    finally:
        progress.done()
    utilization: dict[str, float | None] | None = None
    per_task: dict[str, float | None] | None = None
    if args.metrics:
        from neuron_constructs.tools.inspection import client_config
        from neuron_constructs.tools.utilization import model_utilization, neuroncore_utilization

        cloudwatch = session.client("cloudwatch", endpoint_url=args.endpoint_url, config=client_config())
        ids = [i.ec2_instance_id for i in inspection.container_instances if i.ec2_instance_id]
        utilization = neuroncore_utilization(cloudwatch, args.cluster, ids)
        placed = _task_models(inspection)
        by_model = model_utilization(cloudwatch, args.cluster, list(placed.values()))
        per_task = {task: by_model[where] for task, where in placed.items()}
    if args.json:
        document = inspection.to_json()
        if utilization is not None:
            document["neuroncore_utilization"] = utilization
        if per_task is not None:
            document["task_neuroncore_utilization"] = per_task
        _print_json(document, out)
    else:
        _print_inspection(inspection, out, utilization=utilization, per_task=per_task)
    return EXIT_CONFLICT if inspection.has_conflict else EXIT_OK


def _task_models(inspection: ClusterInspection) -> dict[str, tuple[str, str]]:
    """Task ARN -> (its model, its EC2 instance id), for each task whose Neuron containers are tagged."""
    instances = {i.arn: i.ec2_instance_id for i in inspection.container_instances}
    placed = {}
    for task in inspection.tasks:
        instance = instances.get(task.container_instance_arn or "")
        if task.model and instance:
            placed[task.arn] = (task.model, instance)
    return placed


def _print_inspection(
    inspection: ClusterInspection,
    out: _Output,
    *,
    utilization: dict[str, float | None] | None = None,
    per_task: dict[str, float | None] | None = None,
) -> None:
    instances = {i.arn: i for i in inspection.container_instances}
    out.line(
        f"{out.style('Cluster ' + terminal_safe(inspection.cluster), '1')}: {len(instances)} container instances, "
        f"{len(inspection.tasks)} tasks"
    )
    out.line()
    if not instances:
        out.line("No container instances (capacity providers launch them when tasks need them).")
    else:
        _instance_table(inspection, out)
    out.line()
    _task_table(inspection, instances, out, per_task=per_task)
    if instances:
        from neuron_constructs.tools.device_map import CONFLICT, IDLE, render_device_map

        out.line()
        legend = f"(a cell per NeuronCore, a group per device: a letter per holder, {CONFLICT} held twice, {IDLE} idle)"
        out.line(f"{out.style('NeuronCores per instance', '1')} {legend}")
        for line in render_device_map(inspection, styled=out.styled, utilization=utilization):
            out.line(line)
    out.line()
    if not inspection.findings:
        out.line("No findings: no NeuronCore is held twice, every task's devices exist, nothing idle.")
    for finding in inspection.findings:
        kind = out.style(finding.kind, _FINDING_COLOURS.get(finding.kind, "0"))
        out.line(f"{kind}: {terminal_safe(finding.message)}")


def _instance_table(inspection: ClusterInspection, out: _Output) -> None:
    out.table(
        ("CONTAINER INSTANCE", "EC2 INSTANCE", "TYPE", "NEURON DEVICES REGISTERED", "REMAINING"),
        (
            (
                i.arn.rsplit("/", 1)[-1],
                i.ec2_instance_id or "-",
                i.instance_type or "-",
                _compact(i.neuron_devices.registered),
                _compact(i.neuron_devices.remaining),
            )
            for i in inspection.container_instances
        ),
    )


def _task_table(
    inspection: ClusterInspection,
    instances: dict[str, ContainerInstance],
    out: _Output,
    *,
    per_task: dict[str, float | None] | None = None,
) -> None:
    """A row per container: its task, where it runs, its Neuron devices and model; with ``per_task`` (``--metrics``)
    the model's NeuronCore utilization on that instance."""
    if not inspection.tasks:
        out.line("No running tasks.")
        return
    rows: list[tuple[str, ...]] = []
    for task in inspection.tasks:
        instance = instances.get(task.container_instance_arn or "")
        where = (instance.ec2_instance_id if instance else None) or (task.container_instance_arn or "-").rsplit("/")[-1]
        for container in task.containers or ():
            if container.neuron_device_ids:
                devices = f"neuronDeviceIds {_compact(container.neuron_device_ids)}"
            elif container.device_paths:
                devices = f"/dev/neuron {_compact(container.device_paths)} (mapped)"
            else:
                devices = "-"
            row = [
                task.arn.rsplit("/", 1)[-1],
                task.task_definition.rsplit("/", 1)[-1],
                where,
                container.name,
                devices,
                container.model or "-",
            ]
            if per_task is not None:
                value = per_task.get(task.arn) if container.model else None
                row.append("-" if value is None else f"{value:.1f}")
            rows.append(tuple(row))
    header = ("TASK", "TASK DEFINITION", "ON", "CONTAINER", "NEURON DEVICES", "MODEL")
    out.table((*header, "CORE UTIL %") if per_task is not None else header, rows)
