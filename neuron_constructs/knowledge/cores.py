"""NeuronCores: how the Neuron runtime numbers them, and how a process is given some of them.

* A NeuronCore belongs to one process at a time; a process takes the cores ``NEURON_RT_VISIBLE_CORES`` names
  (``"4"``, ``"4-7"``, ``"0,2-3"``), else every core of the devices it can open (aws-neuron-sdk issue #441;
  Neuron runtime configuration, "NEURON_RT_VISIBLE_CORES").
* Cores are numbered across the host, chip by chip: chip ``d`` holds cores ``d*k .. d*k+k-1`` where ``k`` is the
  cores per chip, and a container keeps the host's numbering (Neuron, "How to Build and Run a Neuron Container",
  section Cores: a container mapping ``/dev/neuron12`` and ``/dev/neuron13`` of an inf1.24xlarge uses cores 48-55).
* Several containers share one device on disjoint cores: the Kubernetes device plugin registers each NeuronCore as
  ``aws.amazon.com/neuroncore`` and hands containers contiguous cores of a device others also use (Neuron, "Neuron
  Kubernetes device plugin" and "scheduler extension").
* On Trainium2 the runtime groups physical cores into logical NeuronCores: ``NEURON_LOGICAL_NC_CONFIG=2`` (the
  default) makes 4 logical cores of a chip's 8, ``1`` makes 8; the value must match the compiler's ``--lnc``, and
  the core numbers above count logical cores (Neuron, "Logical NeuronCore configuration"). Other chips have one
  setting, 1.

Pure Python, no AWS CDK import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.devices import index_runs

__all__ = [
    "LNC_FILE",
    "LOGICAL_CORE_VARIABLE",
    "MAX_CORE_INDEX",
    "NUM_CORES_VARIABLE",
    "VISIBLE_CORES_VARIABLE",
    "CoreOverlap",
    "TaskCores",
    "core_overlap",
    "cores_of_devices",
    "devices_of_cores",
    "format_core_list",
    "held_cores",
    "parse_core_list",
    "relabel_cores",
    "running_lnc",
    "task_cores",
]

VISIBLE_CORES_VARIABLE = "NEURON_RT_VISIBLE_CORES"
"""The Neuron runtime variable naming the cores a process takes, in host numbering."""
NUM_CORES_VARIABLE = "NEURON_RT_NUM_CORES"
"""The Neuron runtime variable asking for a number of free cores instead."""
LOGICAL_CORE_VARIABLE = "NEURON_LOGICAL_NC_CONFIG"
"""The Neuron runtime variable setting physical cores per logical core (Trainium2: 1 or 2, default 2)."""

LNC_FILE = "/opt/aws/neuron/logical_nc_config"
"""Where an instance's default logical-core setting lives (``NEURON_LOGICAL_NC_CONFIG=1``), as the Neuron EKS launch
templates write it in user data (aws-neuron-sdk ``deploy/eks/prerequisites.rst``)."""

MAX_CORE_INDEX = 1023
"""No Neuron instance numbers a NeuronCore above this (the most is trn2.48xlarge's 128 at LNC=1): a core list naming
one is no list of this instance's cores, whatever memory building it would take."""
_PART = re.compile(r"([0-9]{1,4})(?:-([0-9]{1,4}))?")


def parse_core_list(text: str) -> set[int] | None:
    """The cores ``NEURON_RT_VISIBLE_CORES`` names (``"0-3,8"`` -> {0, 1, 2, 3, 8}), or ``None`` when the text is
    not such a list (a descending range, or a core above :data:`MAX_CORE_INDEX`, included)."""
    cores: set[int] = set()
    for part in text.split(",", MAX_CORE_INDEX + 1):
        match = _PART.fullmatch(part.strip())
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first or last > MAX_CORE_INDEX:
            return None
        cores.update(range(first, last + 1))
    return cores


def format_core_list(cores: Iterable[int]) -> str:
    """The ``NEURON_RT_VISIBLE_CORES`` value for ``cores``: ``"4"``, ``"4-7"``, ``"0-1,6"``."""
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in index_runs(cores))


def cores_of_devices(devices: Iterable[int], cores_per_chip: int) -> set[int]:
    """Every core (host numbering) of the chips ``devices``."""
    return {d * cores_per_chip + k for d in devices for k in range(cores_per_chip)}


def devices_of_cores(cores: Iterable[int], cores_per_chip: int) -> set[int]:
    """The chips that hold ``cores``: the devices a container taking them must map."""
    return {core // cores_per_chip for core in cores}


def held_cores(devices: Iterable[int], visible: str | None, cores_per_chip: int) -> frozenset[int]:
    """The cores a container holds: those ``visible`` (its ``NEURON_RT_VISIBLE_CORES``) names within its
    ``devices``, else every core of its devices (also when the variable names none of them, or is no core list)."""
    every = cores_of_devices(devices, cores_per_chip)
    named = parse_core_list(visible) if isinstance(visible, str) else None
    return frozenset(named & every if named is not None and named & every else every)


def relabel_cores(cores: Iterable[int], lnc: int, to_lnc: int) -> frozenset[int]:
    """Cores numbered at ``lnc`` physical cores per logical core, numbered at ``to_lnc``: every core at ``to_lnc``
    that shares a physical core with them (Trainium2: logical core 1 at LNC=2 is cores 2-3 at LNC=1)."""
    if lnc == to_lnc:
        return frozenset(cores)
    return frozenset(physical // to_lnc for core in cores for physical in range(core * lnc, (core + 1) * lnc))


def running_lnc(environments: Iterable[Mapping[str, object]], declared: object, default: int) -> int:
    """The logical-core setting a task's containers run with: ``NEURON_LOGICAL_NC_CONFIG`` where one states 1 or 2,
    else ``declared`` (when it is 1 or 2), else ``default`` (the type's)."""
    for environment in environments:
        stated = str(environment.get(LOGICAL_CORE_VARIABLE, ""))
        if stated in ("1", "2"):
            return int(stated)
    return declared if isinstance(declared, int) and declared in (1, 2) else default


@dataclass(frozen=True)
class TaskCores:
    """What a manually mapped task holds on an instance: the devices its containers map, at which type and
    logical-core setting (``None`` when not known), the NeuronCores its containers hold (``None`` when not known:
    no catalog type, or a setting the type does not have), and whether a container names its cores
    (``NEURON_RT_VISIBLE_CORES``) rather than taking every core of its devices."""

    instance_type: str | None
    lnc: int | None
    devices: frozenset[int]
    cores: frozenset[int] | None
    names_cores: bool


def task_cores(
    instance: NeuronInstanceType | None,
    declared_lnc: object,
    containers: Sequence[tuple[Iterable[int], Mapping[str, object]]],
) -> TaskCores:
    """What a task whose ``containers`` (each: the devices it maps, its environment) run on ``instance`` holds.

    A container holds the cores its ``NEURON_RT_VISIBLE_CORES`` names within its devices, else every core of its
    devices (:func:`held_cores`), numbered at the task's logical-core setting (:func:`running_lnc`). The constructs
    (at the call) and the template checks (on CloudFormation) both describe a task with this function, so they
    cannot see different cores."""
    mapped = [(frozenset(devices), environment) for devices, environment in containers]
    devices = frozenset(i for held, _ in mapped for i in held)
    names = any(isinstance(environment.get(VISIBLE_CORES_VARIABLE), str) for _, environment in mapped)
    if instance is None:
        return TaskCores(None, None, devices, None, names)
    lnc = running_lnc((environment for _, environment in mapped), declared_lnc, instance.default_lnc)
    if lnc not in instance.lnc_options:
        return TaskCores(instance.name, lnc, devices, None, names)
    per_chip = instance.cores_per_chip(lnc)
    cores: set[int] = set()
    for held, environment in mapped:
        visible = environment.get(VISIBLE_CORES_VARIABLE)
        cores |= held_cores(held, visible if isinstance(visible, str) else None, per_chip)
    return TaskCores(instance.name, lnc, devices, frozenset(cores), names)


@dataclass(frozen=True)
class CoreOverlap:
    """What two tasks on one instance both hold: the devices both map, and the NeuronCores of them both hold -
    ``None`` when the conflict is the whole devices (neither names its cores, or their types, settings or cores are
    not known to match)."""

    devices: frozenset[int]
    cores: frozenset[int] | None


def core_overlap(first: TaskCores, second: TaskCores) -> CoreOverlap | None:
    """NEURON023: what ``first`` and ``second`` would both hold on one instance; ``None`` when nothing.

    Tasks that map one device share it on disjoint NeuronCores (a core belongs to one process, aws-neuron-sdk issue
    #441) only when one of them names its cores and both number them alike (one type, one logical-core setting);
    otherwise a shared device is the conflict. The one decision both the constructs and the template checks use."""
    devices = first.devices & second.devices
    if not devices:
        return None
    comparable = (
        first.instance_type is not None
        and (first.instance_type, first.lnc) == (second.instance_type, second.lnc)
        and first.cores is not None
        and second.cores is not None
    )
    if not comparable or not (first.names_cores or second.names_cores):
        return CoreOverlap(devices, None)
    assert first.cores is not None and second.cores is not None
    both = first.cores & second.cores
    return CoreOverlap(devices, both) if both else None
