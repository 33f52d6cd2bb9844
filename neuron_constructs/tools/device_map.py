"""The device and core map ``neuron-ecs inspect`` and ``neuron-ecs plan`` draw: per instance, its NeuronCores.

One renderer for one neutral model, :class:`InstanceLayout`: an instance type (or none the catalog knows), its chips,
the NeuronCores per chip, the chips the instance registered, and the holders - each a label, a name for the legend,
an owner (the task: the containers of one task share what they hold) and the cores it holds in host numbering.
``inspect`` builds layouts from what a cluster runs (:func:`inspection_layouts`), ``plan`` from what templates will
run (:mod:`neuron_constructs.tools.planning`).

Each chip (``/dev/neuronN``) is a group of cells, one per NeuronCore, groups separated by a space and wrapped so a
line stays under :data:`MAX_WIDTH` columns (an inf1.24xlarge's 64 cores, a trn2.48xlarge's 128 at LNC=1). A cell is
the letter of the holder of that core, ``!`` (:data:`CONFLICT`) for a core two owners hold, ``.`` (:data:`IDLE`) for
an idle core of a registered chip. Above the cells, each group is headed by its chip index and its first core. A
legend names each letter; each core held twice is listed with its device. On a terminal the cells are coloured (a
colour per holder, red for conflicts, dim for idle); piped or with ``NO_COLOR`` they are plain characters, so the map
reads the same in a log. An instance type the catalog lacks is drawn a cell per chip (its cores are unknown).
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.devices import NEURON_DEVICE_PREFIX, device_index, format_index_runs
from neuron_constructs.tools.inspection import ClusterInspection, container_cores, instance_lnc

__all__ = [
    "CONFLICT",
    "IDLE",
    "MAX_WIDTH",
    "UNKNOWN",
    "Holder",
    "InstanceLayout",
    "inspection_layouts",
    "label",
    "render_device_map",
    "render_layouts",
    "summary",
]

CONFLICT = "!"
"""The cell of a core two or more owners hold (the containers of one task share its cores)."""
IDLE = "."
"""The cell of a core of a registered chip no one holds."""
UNKNOWN = " "
"""The cell of a core of a chip the instance did not register and no one holds."""
MAX_WIDTH = 100
"""Columns a line of cells stays within; wider instances wrap their chips over several rows."""
_INDENT = "        "
_LABELS = string.ascii_uppercase + string.ascii_lowercase
_HOLDER_COLOURS = ("42", "44", "45", "46", "43", "47")
"""ANSI background colours for holders, in turn; conflicts are red (41), idle cores dim (2)."""


def label(index: int) -> str:
    """The letter of the ``index``-th holder of an instance (A-Z, a-z, then again)."""
    return _LABELS[index % len(_LABELS)]


@dataclass(frozen=True)
class Holder:
    """What holds cores of an instance: ``label`` in the cells, ``name`` in the legend, ``owner`` the task (holders
    of one owner never conflict), ``cores`` in host numbering (chip indices where the layout knows no cores)."""

    label: str
    name: str
    owner: str
    cores: frozenset[int]


@dataclass(frozen=True)
class InstanceLayout:
    """One instance: ``chips`` of ``cores_per_chip`` cells each (1 for a type the catalog lacks: a cell per chip),
    the ``registered`` chips (the others are drawn blank unless held), and its ``holders``. ``notes`` join the summary
    line (``NeuronCore utilization 61.3 %``), ``remarks`` print under the legend."""

    title: str
    instance_type: NeuronInstanceType | None
    chips: int
    cores_per_chip: int
    registered: frozenset[int]
    holders: tuple[Holder, ...]
    lnc: int | None = None
    notes: tuple[str, ...] = ()
    remarks: tuple[str, ...] = ()

    @property
    def knows_cores(self) -> bool:
        """Whether cells are NeuronCores (a catalog type) rather than chips."""
        return self.instance_type is not None

    @property
    def cores(self) -> int:
        return self.chips * self.cores_per_chip

    @functools.cached_property
    def _held(self) -> tuple[dict[int, list[str]], dict[int, set[str]]]:
        labels: dict[int, list[str]] = {}
        owners: dict[int, set[str]] = {}
        for holder in self.holders:
            for core in holder.cores:
                labels.setdefault(core, []).append(holder.label)
                owners.setdefault(core, set()).add(holder.owner)
        return labels, owners

    @functools.cached_property
    def cells(self) -> tuple[str, ...]:
        """A cell per core: a holder's label, :data:`CONFLICT`, :data:`IDLE` or :data:`UNKNOWN`."""
        labels, owners = self._held
        cells = []
        for core in range(self.cores):
            if len(owners.get(core, ())) > 1:
                cells.append(CONFLICT)
            elif core in labels:
                cells.append(labels[core][0])
            else:
                cells.append(IDLE if core // self.cores_per_chip in self.registered else UNKNOWN)
        return tuple(cells)

    @property
    def legend(self) -> tuple[tuple[str, str], ...]:
        return tuple((h.label, h.name) for h in self.holders)

    @functools.cached_property
    def conflicts(self) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """Each core two owners hold, with the labels that hold it."""
        labels, owners = self._held
        return tuple((core, tuple(labels[core])) for core in sorted(owners) if len(owners[core]) > 1)

    @functools.cached_property
    def idle_chips(self) -> tuple[int, ...]:
        """Registered chips no one holds a core of."""
        used = {core // self.cores_per_chip for core in self._held[0]}
        return tuple(sorted(self.registered - used))

    @functools.cached_property
    def idle_cores(self) -> tuple[int, ...]:
        """Cores of registered chips no one holds (those of idle chips included)."""
        return tuple(i for i, cell in enumerate(self.cells) if cell == IDLE)

    def to_json(self) -> dict[str, Any]:
        """The layout as ``neuron-ecs plan --json`` prints it."""
        return {
            "title": self.title,
            "instance_type": self.instance_type.name if self.instance_type else None,
            "logical_nc_config": self.lnc,
            "chips": self.chips,
            "cores_per_chip": self.cores_per_chip if self.knows_cores else None,
            "holders": [
                {"label": h.label, "name": h.name, "owner": h.owner, "cores": sorted(h.cores)} for h in self.holders
            ],
            "cells": "".join(self.cells),
            "idle_chips": list(self.idle_chips),
            "idle_cores": list(self.idle_cores) if self.knows_cores else None,
            "held_twice": [
                {"core": core, "device": f"{NEURON_DEVICE_PREFIX}{core // self.cores_per_chip}", "holders": list(held)}
                for core, held in self.conflicts
            ],
            "notes": list(self.notes),
            "remarks": list(self.remarks),
        }


# --- inspect -------------------------------------------------------------------------------------


def _short(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def inspection_layouts(
    inspection: ClusterInspection, *, utilization: Mapping[str, float | None] | None = None
) -> list[InstanceLayout]:
    """The layout of every container instance, in the inspection's order; with ``utilization`` (instance id ->
    percent, from ``neuron-ecs inspect --metrics``) each notes it."""
    tasks_on = inspection.tasks_on()
    layouts = []
    for instance in inspection.container_instances:
        tasks = tasks_on.get(instance.arn, [])
        entry = NeuronInstanceType.find(instance.instance_type or "")
        lnc = instance_lnc(entry, tasks) if entry else None
        per_chip = entry.cores_per_chip(lnc) if entry else 1
        holders: list[Holder] = []
        for task in tasks:
            for container in task.containers:
                devices = container.device_indices()
                if not devices:
                    continue
                held = container_cores(container, entry, lnc) if entry and lnc else devices
                name = f"{_short(task.arn)}/{container.name} ({_short(task.task_definition)})"
                holders.append(Holder(label(len(holders)), name, task.arn, held))
        registered = frozenset(i for i in map(device_index, instance.neuron_devices.registered) if i is not None)
        highest = max(registered | {core // per_chip for h in holders for core in h.cores}, default=-1)
        notes: tuple[str, ...] = ()
        if utilization is not None:
            value = utilization.get(instance.ec2_instance_id or "")
            notes = ("NeuronCore utilization " + ("not published" if value is None else f"{value:.1f} %"),)
        where = instance.ec2_instance_id or _short(instance.arn)
        layouts.append(
            InstanceLayout(
                title=f"{where} ({instance.instance_type or 'unknown type'})",
                instance_type=entry,
                chips=max(entry.chips if entry else 0, highest + 1),
                cores_per_chip=per_chip,
                registered=registered,
                holders=tuple(holders),
                lnc=lnc,
                notes=notes,
            )
        )
    return layouts


def render_device_map(
    inspection: ClusterInspection, *, styled: bool, utilization: Mapping[str, float | None] | None = None
) -> list[str]:
    """The lines of ``inspect``'s map (see :func:`render_layouts`)."""
    return render_layouts(inspection_layouts(inspection, utilization=utilization), styled=styled)


# --- drawing -------------------------------------------------------------------------------------


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def summary(layout: InstanceLayout) -> str:
    """``12 chips, 24 cores, 3 chips idle, 7 cores idle, 1 core held twice``: what the title line says after the
    title."""
    unit = "core" if layout.knows_cores else "chip"
    parts = [_count(layout.chips, "chip")]
    if layout.knows_cores:
        parts.append(_count(layout.cores, "core"))
    parts += layout.notes
    if layout.idle_chips:
        parts.append(f"{_count(len(layout.idle_chips), 'chip')} idle")
    if layout.knows_cores and layout.idle_cores:
        parts.append(f"{_count(len(layout.idle_cores), 'core')} idle")
    if layout.conflicts:
        parts.append(f"{_count(len(layout.conflicts), unit)} held twice")
    return ", ".join(parts)


def _styled_run(cell: str, count: int, colours: Mapping[str, str]) -> str:
    if cell == CONFLICT:
        return f"\033[41;1m{cell * count}\033[0m"
    if cell in (IDLE, UNKNOWN):
        return f"\033[2m{('·' if cell == IDLE else ' ') * count}\033[0m"
    return f"\033[{colours[cell]};30m{cell * count}\033[0m"


def _group(cells: Sequence[str], *, styled: bool, colours: Mapping[str, str]) -> str:
    """One chip's cells: runs of one cell share one colour code."""
    if not styled:
        return "".join(cells)
    runs: list[str] = []
    start = 0
    for end in range(1, len(cells) + 1):
        if end == len(cells) or cells[end] != cells[start]:
            runs.append(_styled_run(cells[start], end - start, colours))
            start = end
    return "".join(runs)


def _rows(layout: InstanceLayout) -> list[range]:
    """The chips of each row of cells: as few rows as fit :data:`MAX_WIDTH`, equally long."""
    width = _column_width(layout)
    most = max(1, (MAX_WIDTH - len(_INDENT)) // (width + 1))
    count = max(1, math.ceil(layout.chips / most))
    per_row = max(1, math.ceil(layout.chips / count))
    return [range(start, min(start + per_row, layout.chips)) for start in range(0, layout.chips, per_row)]


def _column_width(layout: InstanceLayout) -> int:
    widest = len(str(max(layout.chips - 1, 0)))
    if layout.knows_cores:
        widest = max(widest, len(str(max(layout.cores - 1, 0))))
    return max(layout.cores_per_chip, widest)


def _conflict_lines(layout: InstanceLayout) -> Iterable[str]:
    """``core 1 of /dev/neuron0 held by A and B``: cores held twice, a line per chip and set of holders."""
    per_chip = layout.cores_per_chip
    grouped: dict[tuple[int, tuple[str, ...]], list[int]] = {}
    for core, held in layout.conflicts:
        grouped.setdefault((core // per_chip, held), []).append(core)
    for (chip, held), cores in grouped.items():
        device = f"{NEURON_DEVICE_PREFIX}{chip}"
        plural = "s" if len(cores) > 1 else ""
        if not layout.knows_cores:
            what = device
        elif len(cores) == per_chip:
            what = f"{device} (core{plural} {format_index_runs(cores)})"
        else:
            what = f"core{plural} {format_index_runs(cores)} of {device}"
        yield f"    {CONFLICT}  {what} held by {' and '.join(terminal_safe(h) for h in dict.fromkeys(held))}"


def render_layouts(layouts: Iterable[InstanceLayout], *, styled: bool) -> list[str]:
    """The lines of the map: per instance a title and summary, then per row of chips their indices, their first
    cores and the cells, the legend, any remarks, and the cores held twice. What the layouts say that came from a
    template or from AWS (titles, names, remarks) is escaped (:func:`~neuron_constructs.checks.terminal.terminal_safe`):
    only the map's own colours are escape sequences."""
    lines: list[str] = []
    for layout in layouts:
        lines.append(f"{terminal_safe(layout.title)}: {summary(layout)}")
        colours = {h.label: _HOLDER_COLOURS[i % len(_HOLDER_COLOURS)] for i, h in enumerate(layout.holders)}
        width, per_chip, cells = _column_width(layout), layout.cores_per_chip, layout.cells
        for row in _rows(layout):
            lines.append(("  chip  " + " ".join(str(chip).ljust(width) for chip in row)).rstrip())
            if layout.knows_cores:
                lines.append(("  core  " + " ".join(str(chip * per_chip).ljust(width) for chip in row)).rstrip())
            groups = []
            for position, chip in enumerate(row):
                group = cells[chip * per_chip : (chip + 1) * per_chip]
                pad = "" if position == len(row) - 1 else " " * (width - per_chip)
                groups.append(_group(group, styled=styled, colours=colours) + pad)
            lines.append(_INDENT + " ".join(groups))
        for holder_label, name in layout.legend:
            lines.append(f"    {holder_label}  {terminal_safe(name)}")
        for remark in layout.remarks:
            lines.append(f"    {terminal_safe(remark)}")
        lines += _conflict_lines(layout)
    return lines
