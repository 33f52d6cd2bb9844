"""The device map ``neuron-ecs inspect`` draws: per container instance, its Neuron chips as a row of cells.

Each cell is one chip (``/dev/neuronN``), labelled with a letter for the task container holding it; a
legend under the row names each letter's task, container and task definition. A chip two tasks hold
is marked ``!`` (a conflict: ECS does not track manually mapped devices), a registered chip no task
holds ``.`` (idle). On a terminal the cells are coloured (a colour per holder, red for conflicts,
dim for idle); piped or with ``NO_COLOR`` they are plain characters, so the map reads the same in a
log. The chip count is the catalog's for the instance type, else what the instance registered or
its tasks hold.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.devices import device_index
from neuron_constructs.tools.inspection import ClusterInspection, ContainerInstance, Task

__all__ = ["CONFLICT", "IDLE", "UNKNOWN", "InstanceMap", "instance_maps", "render_device_map"]

CONFLICT = "!"
"""The cell of a chip two or more tasks hold (the containers of one task share its devices)."""
IDLE = "."
"""The cell of a registered chip no task holds."""
UNKNOWN = " "
"""The cell of a chip the instance did not register and no task holds."""
_LABELS = string.ascii_uppercase + string.ascii_lowercase
_HOLDER_COLOURS = ("42", "44", "45", "46", "43", "47")
"""ANSI background colours for holders, in turn; conflicts are red (41), idle chips dim (2)."""


@dataclass(frozen=True)
class InstanceMap:
    """One container instance's chips: ``cells[i]`` is a holder's label, :data:`CONFLICT`, :data:`IDLE` or
    :data:`UNKNOWN`; ``legend`` maps each label to ``task/container (task definition)``; ``conflicts`` maps each
    conflicting chip to the labels that hold it."""

    title: str
    cells: tuple[str, ...]
    legend: tuple[tuple[str, str], ...]
    conflicts: tuple[tuple[int, tuple[str, ...]], ...]

    @property
    def idle(self) -> int:
        return self.cells.count(IDLE)


def _short(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def _holders(task: Task) -> Iterable[tuple[str, set[int]]]:
    for container in task.containers:
        indices = {device_index(d) for d in (*container.neuron_device_ids, *container.device_paths)}
        held = {i for i in indices if i is not None}
        if held:
            yield f"{_short(task.arn)}/{container.name} ({_short(task.task_definition)})", held


def _map(instance: ContainerInstance, tasks: Sequence[Task]) -> InstanceMap:
    registered = {i for i in map(device_index, instance.neuron_devices.registered) if i is not None}
    holders: dict[int, list[str]] = {}
    holding_tasks: dict[int, set[str]] = {}
    legend: list[tuple[str, str]] = []
    for task in tasks:
        for name, held in _holders(task):
            label = _LABELS[len(legend) % len(_LABELS)]
            legend.append((label, name))
            for index in held:
                holders.setdefault(index, []).append(label)
                holding_tasks.setdefault(index, set()).add(task.arn)
    entry = NeuronInstanceType.find(instance.instance_type or "")
    chips = max(entry.chips if entry else 0, max(registered | set(holders), default=-1) + 1)
    cells = []
    for index in range(chips):
        held_by = holders.get(index, [])
        # A conflict is two tasks on one chip, as neuron-ecs inspect's findings count it: the containers of one task
        # share its devices.
        if len(holding_tasks.get(index, ())) > 1:
            cells.append(CONFLICT)
        elif held_by:
            cells.append(held_by[0])
        else:
            cells.append(IDLE if index in registered else UNKNOWN)
    conflicts = tuple((i, tuple(h)) for i, h in sorted(holders.items()) if len(holding_tasks[i]) > 1)
    where = instance.ec2_instance_id or _short(instance.arn)
    return InstanceMap(f"{where} ({instance.instance_type or 'unknown type'})", tuple(cells), tuple(legend), conflicts)


def instance_maps(inspection: ClusterInspection) -> list[InstanceMap]:
    """The map of every container instance, in the inspection's order."""
    by_instance: dict[str, list[Task]] = {}
    for task in inspection.tasks:
        if task.container_instance_arn:
            by_instance.setdefault(task.container_instance_arn, []).append(task)
    return [_map(instance, by_instance.get(instance.arn, [])) for instance in inspection.container_instances]


def _cell(cell: str, labels: str, *, styled: bool) -> str:
    if not styled:
        return f" {cell} "
    if cell == CONFLICT:
        return f"\033[41;1m {cell} \033[0m"
    if cell in (IDLE, UNKNOWN):
        return f"\033[2m {'·' if cell == IDLE else ' '} \033[0m"
    colour = _HOLDER_COLOURS[labels.index(cell) % len(_HOLDER_COLOURS)]
    return f"\033[{colour};30m {cell} \033[0m"


def render_device_map(
    inspection: ClusterInspection, *, styled: bool, utilization: Mapping[str, float | None] | None = None
) -> list[str]:
    """The lines of the map: per instance a title, the chip indices, the cells, the legend and any conflicts;
    with ``utilization`` (instance id -> percent, from ``neuron-ecs inspect --metrics``) each title adds it."""
    lines: list[str] = []
    for instance, instance_map in zip(inspection.container_instances, instance_maps(inspection), strict=True):
        chips = len(instance_map.cells)
        summary = [f"{chips} chip{'' if chips == 1 else 's'}"]
        if utilization is not None:
            value = utilization.get(instance.ec2_instance_id or "")
            summary.append("NeuronCore utilization " + ("not published" if value is None else f"{value:.1f} %"))
        if instance_map.idle:
            summary.append(f"{instance_map.idle} idle")
        if instance_map.conflicts:
            summary.append(f"{len(instance_map.conflicts)} held twice")
        lines.append(f"{instance_map.title}: {', '.join(summary)}")
        labels = "".join(label for label, _ in instance_map.legend)
        lines.append("  chip " + "".join(f"{i:^3}" for i in range(len(instance_map.cells))))
        lines.append("       " + "".join(_cell(c, labels, styled=styled) for c in instance_map.cells))
        for label, name in instance_map.legend:
            lines.append(f"    {label}  {name}")
        for index, held_by in instance_map.conflicts:
            lines.append(f"    {CONFLICT}  /dev/neuron{index} held by {' and '.join(held_by)}")
    return lines
