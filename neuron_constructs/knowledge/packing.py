"""Where the copies of models land on one instance: whole chips or NeuronCores, none held twice.

An :class:`InstancePlan` is one instance type at one logical-core setting, with every core free. Each copy a plan
places is a :class:`Placement`:

* **whole chips** (``devices_per_task``): a contiguous device set the topology allows (any run on the inf1/inf2
  ring; 1, 4, 8 or 16 chips on the trn1/trn1n/trn2 torus), every core of them free; the copy maps those chips and
  the runtime takes all their cores;
* **NeuronCores** (``cores_per_task``): a contiguous run of free cores inside one chip; the copy maps that chip and
  names its cores in ``NEURON_RT_VISIBLE_CORES`` (host numbering, :mod:`~neuron_constructs.knowledge.cores`), so
  copies of several models share a chip without sharing a core.

Whole-chip copies take the lowest free aligned run first (the fewest fragments); NeuronCore copies fill the chips
already in use first (best fit), at offsets aligned to their size, so whole chips stay free for whole-chip models.
A request that does not fit raises NEURON046 naming what is free; nothing is placed then.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import format_core_list
from neuron_constructs.knowledge.devices import format_index_runs

__all__ = ["InstancePlan", "Placement"]


@dataclass(frozen=True)
class Placement:
    """One copy: the cores it holds (host numbering, at the plan's logical-core setting) and the chips it maps."""

    cores: range
    devices: range
    whole_chips: bool
    """Whether the copy holds every core of its chips (placed by ``devices_per_task``)."""

    @property
    def visible_cores(self) -> str | None:
        """``NEURON_RT_VISIBLE_CORES`` for a NeuronCore copy (``"4-5"``); ``None`` for whole chips, whose runtime
        takes every core of the devices it maps."""
        return None if self.whole_chips else format_core_list(self.cores)


class InstancePlan:
    """The cores of one instance of ``instance`` at ``lnc`` physical cores per logical core, and who holds them.

    ``lnc`` defaults to the type's default (:attr:`NeuronInstanceType.default_lnc`: 2 on Trainium2, else 1).

    Attributes
    ----------
    instance, lnc, cores_per_chip, cores
        The instance type, its logical-core setting, and its (logical) NeuronCores per chip and in all.
    placements
        Every copy placed, in order.
    """

    def __init__(self, instance: NeuronInstanceType, lnc: int | None = None) -> None:
        self.instance = instance
        self.lnc = instance.default_lnc if lnc is None else lnc
        self.cores_per_chip = instance.cores_per_chip(self.lnc)
        self.cores = instance.chips * self.cores_per_chip
        self.placements: list[Placement] = []
        self._free = set(range(self.cores))

    @property
    def free_cores(self) -> list[int]:
        """Cores no copy holds, ascending."""
        return sorted(self._free)

    @property
    def free_chips(self) -> list[int]:
        """Chips none of whose cores a copy holds, ascending."""
        return [d for d in range(self.instance.chips) if self._chip_cores(d) <= self._free]

    def describe_free(self) -> str:
        """What is left, for a message: ``free chips 4-11, free cores 2-3 (on chip 1)``, or that nothing is."""
        if not self._free:
            return f"no NeuronCore of the {self.cores} is free"
        chips = self.free_chips
        loose = sorted(self._free - {c for d in chips for c in self._chip_cores(d)})
        parts = []
        if chips:
            parts.append(f"free chips {format_index_runs(chips)} ({len(chips)} of {self.instance.chips})")
        if loose:
            chips_of = {c // self.cores_per_chip for c in loose}
            parts.append(
                f"free cores {format_index_runs(loose)} (on chip{'s' if len(chips_of) > 1 else ''} "
                f"{format_index_runs(chips_of)}, which other copies share)"
            )
        return ", ".join(parts)

    def place(
        self, path: str, *, devices_per_task: int | None, cores_per_task: int | None, copies: int, commit: bool = True
    ) -> list[Placement]:
        """:meth:`place_chips` or :meth:`place_cores`, whichever size is given (:meth:`require_one_size`)."""
        self.require_one_size(path, devices_per_task, cores_per_task)
        if devices_per_task is not None:
            return self.place_chips(path, devices_per_task, copies, commit=commit)
        return self.place_cores(path, cores_per_task or 0, copies, commit=commit)

    def require_one_size(self, path: str, devices_per_task: int | None, cores_per_task: int | None) -> None:
        """NEURON063 unless exactly one of ``devices_per_task`` and ``cores_per_task`` is given."""
        if (devices_per_task is None) == (cores_per_task is None):
            given = "both" if devices_per_task is not None else "neither"
            raise rules.CORE_SLICE.error(
                path, f"{given} of devices_per_task and cores_per_task given", per_chip=self.cores_per_chip
            )

    def place_chips(self, path: str, devices_per_task: int, copies: int, *, commit: bool = True) -> list[Placement]:
        """NEURON046: ``copies`` copies of ``devices_per_task`` whole chips, each a contiguous set the topology
        allows whose every core is free; aligned runs first, then any start."""
        instance = self.instance
        if devices_per_task not in instance.copy_sizes():
            raise rules.FLEET_FULL.error(
                path,
                f"devices_per_task={devices_per_task} is no device set the {instance.topology.value} topology of "
                f"{instance.name} allows (sizes {', '.join(map(str, instance.copy_sizes()))})",
                free=self.describe_free(),
            )
        starts = range(instance.chips - devices_per_task + 1)
        for order in (sorted(starts, key=lambda s: (s % devices_per_task, s)), list(starts)):
            placed = self._try(order, devices_per_task, copies)
            if placed is not None:
                return self.commit(placed) if commit else placed
        raise rules.FLEET_FULL.error(
            path,
            f"{copies} cop{'ies' if copies > 1 else 'y'} of {devices_per_task} contiguous chips do not fit in what "
            f"is left of {instance.name}",
            free=self.describe_free(),
        )

    def place_cores(self, path: str, cores_per_task: int, copies: int, *, commit: bool = True) -> list[Placement]:
        """NEURON046 (NEURON063 beyond one chip): ``copies`` copies of ``cores_per_task`` contiguous free cores,
        each inside one chip; chips already in use first (the fewest free cores that fit), offsets aligned to the
        size first."""
        per_chip = self.cores_per_chip
        if not 1 <= cores_per_task <= per_chip:
            raise rules.CORE_SLICE.error(
                path,
                f"cores_per_task={cores_per_task} but a {self.instance.name} chip holds {per_chip} NeuronCores"
                + (f" at LNC={self.lnc}" if self.instance.lnc_options != (1,) else ""),
                per_chip=per_chip,
            )
        free = set(self._free)
        placed: list[Placement] = []
        for _ in range(copies):
            found = self._best_core_run(free, cores_per_task)
            if found is None:
                raise rules.FLEET_FULL.error(
                    path,
                    f"{copies} cop{'ies' if copies > 1 else 'y'} of {cores_per_task} NeuronCore"
                    f"{'s' if cores_per_task > 1 else ''} do not fit in what is left of {self.instance.name}"
                    + (f" ({len(placed)} would)" if placed else ""),
                    free=self.describe_free(),
                )
            chip = found.start // per_chip
            placed.append(Placement(found, range(chip, chip + 1), whole_chips=False))
            free -= set(found)
        return self.commit(placed) if commit else placed

    def _best_core_run(self, free: set[int], size: int) -> range | None:
        per_chip = self.cores_per_chip
        candidates: list[tuple[int, int, int, range]] = []
        for chip in range(self.instance.chips):
            chip_cores = self._chip_cores(chip)
            left = len(chip_cores & free)
            if left < size:
                continue
            base = chip * per_chip
            for offset in range(per_chip - size + 1):
                run = range(base + offset, base + offset + size)
                if set(run) <= free:
                    # Fewest free cores on the chip first (a whole free chip last), aligned offsets first, then lowest.
                    candidates.append((left, offset % size, run.start, run))
        return min(candidates, key=lambda c: c[:3])[3] if candidates else None

    def _try(self, order: list[int], size: int, copies: int) -> list[Placement] | None:
        free = set(self._free)
        placed: list[Placement] = []
        for _ in range(copies):
            found = next((s for s in order if self._chips_free(free, s, size)), None)
            if found is None:
                return None
            devices = range(found, found + size)
            cores = range(found * self.cores_per_chip, (found + size) * self.cores_per_chip)
            placed.append(Placement(cores, devices, whole_chips=True))
            free -= set(cores)
        return placed

    def _chips_free(self, free: set[int], start: int, size: int) -> bool:
        devices = range(start, start + size)
        return self.instance.is_valid_device_set(devices) and all(self._chip_cores(d) <= free for d in devices)

    def _chip_cores(self, chip: int) -> set[int]:
        return set(range(chip * self.cores_per_chip, (chip + 1) * self.cores_per_chip))

    def commit(self, placed: list[Placement]) -> list[Placement]:
        """Hold the cores of ``placed`` (what a ``place_*`` call with ``commit=False`` returned), and return it.

        Raises ``ValueError`` for a core already held: a plan never hands one out twice."""
        free = set(self._free)
        for placement in placed:
            if not set(placement.cores) <= free:
                raise ValueError(f"cores {format_core_list(placement.cores)} are not all free")
            free -= set(placement.cores)
        self._free = free
        self.placements += placed
        return placed
