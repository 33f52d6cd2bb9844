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
from collections.abc import Iterable

from neuron_constructs.knowledge.devices import index_runs

__all__ = [
    "LNC_FILE",
    "LOGICAL_CORE_VARIABLE",
    "NUM_CORES_VARIABLE",
    "VISIBLE_CORES_VARIABLE",
    "cores_of_devices",
    "devices_of_cores",
    "format_core_list",
    "held_cores",
    "parse_core_list",
    "relabel_cores",
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

_PART = re.compile(r"(\d+)(?:-(\d+))?")


def parse_core_list(text: str) -> set[int] | None:
    """The cores ``NEURON_RT_VISIBLE_CORES`` names (``"0-3,8"`` -> {0, 1, 2, 3, 8}), or ``None`` when the text is
    not such a list (a descending range included)."""
    cores: set[int] = set()
    for part in text.split(","):
        match = _PART.fullmatch(part.strip())
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
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
