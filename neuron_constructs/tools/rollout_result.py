"""What ``neuron-ecs plan --rollout`` finds: each service's and fleet model's next deployment, its peak on the chips
and whether its capacity holds it (:class:`RolloutResult`), in text and JSON. Planned by
:mod:`~neuron_constructs.tools.rollout_planning`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.knowledge.rollouts import RolloutPlan, RolloutRoom
from neuron_constructs.tools.device_map import InstanceLayout
from neuron_constructs.tools.rollout_reading import timeline

__all__ = ["CapacityPeak", "FleetRollout", "Peak", "RolloutResult", "ServiceRollout"]


@dataclass(frozen=True)
class Peak:
    """What runs at a peak: copies, the chips and NeuronCores they hold, instances, CPU units and MiB."""

    tasks: int
    chips: int
    cores: int
    instances: int
    cpu: int
    memory_mib: int

    @classmethod
    def of(cls, room: RolloutRoom) -> Peak:
        return cls(room.tasks, room.chips, room.cores, room.instances, room.cpu, room.memory_mib)

    def text(self) -> str:
        return (
            f"{self.tasks} task{'s' if self.tasks != 1 else ''}, {self.chips} chips, {self.cores} NeuronCores, "
            f"{self.instances} instance{'s' if self.instances != 1 else ''}, {self.cpu} CPU units, "
            f"{self.memory_mib} MiB"
        )

    def to_json(self) -> dict[str, int]:
        return {
            "tasks": self.tasks,
            "chips": self.chips,
            "cores": self.cores,
            "instances": self.instances,
            "cpu": self.cpu,
            "memory_mib": self.memory_mib,
        }


@dataclass(frozen=True)
class ServiceRollout:
    """One Neuron service's next deployment: its rollout, its peak on its capacity and whether the capacity holds it."""

    name: str
    logical_id: str
    capacity: str
    instance_type: str
    plan: RolloutPlan | None
    minimum_healthy_percent: int
    maximum_percent: int
    blue_tasks: int | None
    room: RolloutRoom | None
    max_instances: int | None
    limit: str | None
    """Why the capacity's instances are not bounded in the template (Managed Instances, a MaxSize worked out at
    deploy time), else ``None``."""
    problems: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    green_instances: tuple[int, ...] = ()
    """The instances (numbered from 1, the blue ones first) its green copies land on."""
    fleet: str | None = None
    stage: int | None = None

    @property
    def fits(self) -> bool | None:
        """Whether the capacity holds the peak; ``None`` when unknown (no peak, or no instance limit)."""
        if self.room is None or self.max_instances is None:
            return None
        return self.room.fits(self.max_instances)

    @property
    def shortfall(self) -> str | None:
        if self.room is None or self.max_instances is None:
            return None
        return self.room.shortfall(self.max_instances, self.capacity)

    @property
    def timeline(self) -> str | None:
        if self.plan is None:
            return None
        return timeline(
            self.plan, minimum_healthy_percent=self.minimum_healthy_percent, maximum_percent=self.maximum_percent
        )

    @property
    def verdict(self) -> str:
        if self.room is None:
            return "peak unknown"
        if self.max_instances is None:
            return self.limit or "no instance limit in the template"
        return self.shortfall or f"fits (max {self.max_instances})"

    def to_json(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "service": self.name,
            "logical_id": self.logical_id,
            "capacity": self.capacity,
            "instance_type": self.instance_type,
            "strategy": plan.strategy if plan else None,
            "bake_time_minutes": plan.bake_time_minutes if plan else None,
            "interval_minutes": plan.interval_minutes if plan else None,
            "canary_percent": plan.canary_percent if plan else None,
            "linear_step_percent": plan.linear_step_percent if plan else None,
            "minimum_healthy_percent": self.minimum_healthy_percent,
            "maximum_percent": self.maximum_percent,
            "timeline": self.timeline,
            "blue_tasks": self.blue_tasks,
            "copies_per_instance": self.room.copies_per_instance if self.room else None,
            "peak": Peak.of(self.room).to_json() if self.room else None,
            "green_instances": list(self.green_instances),
            "max_instances": self.max_instances,
            "fits": self.fits,
            "verdict": self.verdict,
            "problems": list(self.problems),
            "unknown": list(self.unknown),
            "fleet_model": self.fleet,
            "stage": self.stage,
        }


@dataclass(frozen=True)
class FleetRollout:
    """A fleet model's deployment: its copies' services by stage, the peak of each stage, the steady state."""

    name: str
    capacity: str
    instance_type: str
    stages: tuple[tuple[str, ...], ...]
    """The copies' services (construct paths) that deploy in each stage, in order."""
    steady: Peak | None
    stage_peaks: tuple[Peak, ...]
    max_instances: int | None
    limit: str | None

    @property
    def peak(self) -> Peak | None:
        return max(self.stage_peaks, key=lambda p: (p.instances, p.chips), default=self.steady)

    @property
    def peak_is_steady_state(self) -> bool:
        return self.peak == self.steady

    @property
    def fits(self) -> bool | None:
        peak = self.peak
        if peak is None or self.max_instances is None:
            return None
        return peak.instances <= self.max_instances

    @property
    def verdict(self) -> str:
        peak = self.peak
        if peak is None:
            return "peak unknown"
        if self.max_instances is None:
            return self.limit or "no instance limit in the template"
        if peak.instances <= self.max_instances:
            return f"fits (max {self.max_instances})"
        return (
            f"the fleet model's deployment runs {peak.tasks} copies at its peak holding {peak.chips} chips and "
            f"{peak.cores} NeuronCores, {peak.cpu} CPU units and {peak.memory_mib} MiB: {peak.instances} "
            f"{self.instance_type} instances, but {self.capacity} launches at most {self.max_instances}; raise its "
            f"max_capacity to {peak.instances} or more"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "fleet_model": self.name,
            "capacity": self.capacity,
            "instance_type": self.instance_type,
            "stages": [list(stage) for stage in self.stages],
            "steady": self.steady.to_json() if self.steady else None,
            "stage_peaks": [p.to_json() for p in self.stage_peaks],
            "peak": self.peak.to_json() if self.peak else None,
            "peak_is_steady_state": self.peak_is_steady_state,
            "max_instances": self.max_instances,
            "fits": self.fits,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class CapacityPeak:
    """An Auto Scaling capacity when every service on it rolls out at once (CloudFormation updates services that do
    not depend on each other in parallel): its blue instances and all of them at the peak, as drawn."""

    capacity: str
    instance_type: str
    blue_instances: int
    instances: int
    max_instances: int | None
    rollouts: int = 1
    """The services and fleet models rolling out on it."""

    @property
    def fits(self) -> bool | None:
        return None if self.max_instances is None else self.instances <= self.max_instances

    @property
    def text(self) -> str:
        head = (
            f"{self.capacity} ({self.instance_type}), every rollout at once: {self.instances} "
            f"instance{'s' if self.instances != 1 else ''} ({self.blue_instances} blue)"
        )
        if self.max_instances is None:
            return f"{head}; its MaxSize is not a number in the template"
        if self.fits:
            return f"{head}: fits (max {self.max_instances})"
        return (
            f"{head}: more than the {self.max_instances} it launches; deploy the services one at a time, or raise its "
            f"max_capacity to {self.instances}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "instance_type": self.instance_type,
            "blue_instances": self.blue_instances,
            "instances": self.instances,
            "max_instances": self.max_instances,
            "rollouts": self.rollouts,
            "fits": self.fits,
        }


@dataclass(frozen=True)
class RolloutResult:
    """The instances at the peak (blue, then green), each service's and fleet model's rollout, and the files that
    could not be read as templates."""

    layouts: list[InstanceLayout]
    services: list[ServiceRollout]
    fleets: list[FleetRollout]
    unreadable: list[str] = field(default_factory=list)
    capacities: list[CapacityPeak] = field(default_factory=list)
    """Each Auto Scaling capacity when all its services roll out at once: said, not judged by the exit status."""

    @property
    def holds_a_core_twice(self) -> bool:
        return any(layout.conflicts for layout in self.layouts)

    @property
    def does_not_fit(self) -> bool:
        """A peak a capacity cannot hold, or a rollout ECS or CloudFormation refuses."""
        return any(s.fits is False or s.problems for s in self.services) or any(f.fits is False for f in self.fleets)

    def to_json(self) -> dict[str, Any]:
        return {
            "instances": [layout.to_json() for layout in self.layouts],
            "services": [s.to_json() for s in self.services],
            "fleet_models": [f.to_json() for f in self.fleets],
            "capacities": [c.to_json() for c in self.capacities],
            "unreadable": list(self.unreadable),
        }
