"""Neuron device paths as ECS hands them to containers: ``/dev/neuronN``, one per chip, numbered from 0.

The ECS guide's manual mapping names each chip by its host path (``linuxParameters.devices``), and the
container instance registers ``NEURON_DEVICES`` as ``0``, ``neuron0`` or ``/dev/neuron0``: every form reads as
its index here, and sets of indices print as folded runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["NEURON_DEVICE_PREFIX", "device_index", "format_device_paths", "format_index_runs", "index_runs"]

NEURON_DEVICE_PREFIX = "/dev/neuron"
"""The host path of a Neuron chip, before its index."""
_TRAILING_INDEX = re.compile(r"(?<![0-9])([0-9]{1,6})$")


def device_index(device: str) -> int | None:
    """``0`` for ``"0"``, ``"neuron0"`` or ``"/dev/neuron0"``; ``None`` for anything else."""
    match = _TRAILING_INDEX.search(device)
    return int(match.group(1)) if match and (match.start() == 0 or "neuron" in device) else None


def index_runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, de-duplicated indices as (first, last) runs: ``[0, 1, 2, 5]`` -> ``[(0, 2), (5, 5)]``."""
    runs: list[tuple[int, int]] = []
    for index in sorted(set(indices)):
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def format_index_runs(indices: Iterable[int]) -> str:
    """``0-2, 5``: indices with contiguous runs folded."""
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in index_runs(indices))


def format_device_paths(indices: Iterable[int]) -> str:
    """``/dev/neuron0..2, /dev/neuron5``: device paths with contiguous runs folded."""
    return ", ".join(f"{NEURON_DEVICE_PREFIX}{a}" + (f"..{b}" if b > a else "") for a, b in index_runs(indices))
