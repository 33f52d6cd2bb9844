"""``neuron-ecs plan --rollout``: the room on the chips every Neuron service's next deployment needs at its peak.

For every Neuron service of an app's templates, its rollout as ``DeploymentConfiguration`` states it (``Strategy``
``ROLLING``, ``BLUE_GREEN``, ``CANARY`` or ``LINEAR`` with ``BakeTimeInMinutes``, ``CanaryConfiguration`` and
``LinearConfiguration``; ``MinimumHealthyPercent`` and ``MaximumPercent`` for a rolling update), read as untrusted
input: a value of another type, out of ECS's range or worked out at deploy time is a sentence, never an exception.
Its peak is :func:`~neuron_constructs.knowledge.rollouts.peak_room` on its capacity's instance type, with the copies
per instance :mod:`~neuron_constructs.tools.planning` places and the chips or NeuronCores its task holds there, at
the most tasks it runs (its desired count, or its Application Auto Scaling maximum when higher), compared with the
capacity's ``MaxSize``; a Managed Instances capacity has none (ECS launches instances as tasks need them).

The drawing (``layouts`` of :class:`RolloutResult`): the blue instances, the copies running now, as
``neuron-ecs plan`` draws one, then where the green copies land, with the NeuronCores they hold: ECS keeps a
service's tasks on distinct instances (``distinctInstance``), so a green copy lands on the first instance without a
copy of its service and with the CPU units and memory left, else on a new one, numbered after the blue ones.
Services that do not depend on each other roll out at once (CloudFormation updates them in parallel), so their
green copies are placed one service after another.

A fleet model (``NeuronFleet.add_model``, ``SlicedNeuronService``: one service per copy, the task definitions naming
the model in their ``fleet`` intent) rolls out copy by copy in stages, the services of a later stage depending on
those of an earlier one (``DependsOn``): a stage's peak is the steady state plus the green copies of that stage, on
shared new instances; with rolling updates at most 100 % there are none, and the peak is the steady state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.checks.cfn_template import ID_SEPARATOR, Capacity, EcsTemplate, Service
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rollouts import (
    RolloutPlan,
    RolloutRoom,
    Strategy,
    deployment_minutes,
    linear_steps,
    peak_room,
    rollout_problems,
)
from neuron_constructs.tools.device_map import Holder, InstanceLayout, label
from neuron_constructs.tools.planning import (
    _auto_scaling_layout,
    _holder_name,
    _lnc,
    _managed_type,
    _name,
    _neuron_services,
    app_model,
    read_app,
)

__all__ = [
    "STRATEGIES",
    "CapacityPeak",
    "FleetRollout",
    "Peak",
    "ReadRollout",
    "RolloutResult",
    "ServiceRollout",
    "read_rollout",
    "rollout_paths",
    "rollout_templates",
    "timeline",
]

STRATEGIES: Mapping[str, Strategy] = {
    "ROLLING": "rolling",
    "BLUE_GREEN": "blue_green",
    "CANARY": "canary",
    "LINEAR": "linear",
}
"""``DeploymentConfiguration.Strategy`` as CloudFormation takes it, and the strategy it names."""
_SHOWN = 40
"""Characters of a template's string a sentence quotes."""
MAX_INSTANCES_DRAWN = 5000
"""The most instances a capacity's drawing places copies on: the EC2 instances ECS registers in a cluster at most
(ECS guide, "Amazon ECS service quotas and API throttling limits")."""
_NUMBER = re.compile(r"^-?\d{1,12}(\.\d{1,12})?$")


# --- reading DeploymentConfiguration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadRollout:
    """A service's rollout as its template states it: ``plan`` (``None`` when the strategy cannot be known), each
    value ECS or CloudFormation refuses (``problems``) and each worked out at deploy time (``unknown``), as
    sentences."""

    plan: RolloutPlan | None
    problems: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value[:_SHOWN]!r}" + ("..." if len(value) > _SHOWN else "")
    if value is None:
        return "null"
    return "a number"


def _intrinsic(value: Any) -> bool:
    """``{"Ref": ...}`` or ``{"Fn::...": ...}``: a value CloudFormation works out at deploy time."""
    return isinstance(value, dict) and len(value) == 1 and any(k == "Ref" or str(k).startswith("Fn::") for k in value)


class _Reading:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.unknown: list[str] = []

    def number(self, container: Mapping[str, Any], key: str, where: str) -> float | None:
        """``container[key]`` as a number: a literal number or numeric string; ``None`` when absent, computed (said
        in ``unknown``) or malformed (said in ``problems``)."""
        value = container.get(key)
        if value is None:
            return None
        if _intrinsic(value):
            self.unknown.append(f"its {where} is worked out at deploy time")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.problems.append(f"its {where} is {_kind(value)}, not a number: CloudFormation refuses it")
            return None
        if isinstance(value, str):
            if not _NUMBER.match(value.strip()):
                self.problems.append(f"its {where} is {_kind(value)}, not a number: CloudFormation refuses it")
                return None
            return float(value)
        if isinstance(value, int) and abs(value) > 10**12:
            self.problems.append(f"its {where} is {value:.3g}, far outside what ECS takes")
            return None
        return float(value)

    def section(self, container: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
        value = container.get(key)
        if value is None:
            return {}
        if _intrinsic(value):
            self.unknown.append(f"its {where} is worked out at deploy time")
            return {}
        if not isinstance(value, dict):
            self.problems.append(f"its {where} is {_kind(value)}, not an object: CloudFormation refuses it")
            return {}
        return value


def read_rollout(properties: Mapping[str, Any]) -> ReadRollout:
    """The rollout of an ``AWS::ECS::Service`` from its ``Properties``, whatever they hold.

    ``DeploymentConfiguration.Strategy`` absent or ``ROLLING`` is the rolling update; ``BLUE_GREEN``, ``CANARY``
    and ``LINEAR`` ECS's native strategies with ``BakeTimeInMinutes``, ``CanaryConfiguration`` (``CanaryPercent``,
    ``CanaryBakeTimeInMinutes``) and ``LinearConfiguration`` (``StepPercent``, ``StepBakeTimeInMinutes``). A
    ``DeploymentController`` other than ``ECS`` deploys the service from outside the template. Values ECS refuses
    are named by :func:`~neuron_constructs.knowledge.rollouts.rollout_problems`; ECS API reference,
    ``DeploymentConfiguration``: ``bakeTimeInMinutes`` "You must provide this parameter when you use the BLUE_GREEN
    deployment strategy".
    """
    reading = _Reading()
    controller = properties.get("DeploymentController")
    if controller is not None:
        if _intrinsic(controller):
            return ReadRollout(None, unknown=("its DeploymentController is worked out at deploy time",))
        if not isinstance(controller, dict):
            return ReadRollout(None, (f"its DeploymentController is {_kind(controller)}, not an object",))
        kind = controller.get("Type", "ECS")
        if kind != "ECS":
            if isinstance(kind, str) and kind in ("CODE_DEPLOY", "EXTERNAL"):
                return ReadRollout(
                    None, unknown=(f"its {kind} deployment controller deploys it, outside the template",)
                )
            return ReadRollout(None, (f"its DeploymentController Type is {_kind(kind)}, none ECS takes",))
    config = reading.section(properties, "DeploymentConfiguration", "DeploymentConfiguration")
    if reading.problems or reading.unknown:
        return ReadRollout(None, tuple(reading.problems), tuple(reading.unknown))
    raw = config.get("Strategy", "ROLLING")
    if _intrinsic(raw):
        return ReadRollout(None, unknown=("its Strategy is worked out at deploy time",))
    strategy = STRATEGIES.get(raw) if isinstance(raw, str) else None
    if strategy is None:
        return ReadRollout(
            None,
            (f"its Strategy is {_kind(raw)}, none ECS takes ({', '.join(STRATEGIES)}): CloudFormation refuses it",),
        )
    if strategy == "rolling":
        return ReadRollout(RolloutPlan.rolling())
    bake = reading.number(config, "BakeTimeInMinutes", "BakeTimeInMinutes")
    percent = interval = None
    if strategy == "canary":
        canary = reading.section(config, "CanaryConfiguration", "CanaryConfiguration")
        percent = reading.number(canary, "CanaryPercent", "CanaryPercent")
        interval = reading.number(canary, "CanaryBakeTimeInMinutes", "CanaryBakeTimeInMinutes")
    elif strategy == "linear":
        linear = reading.section(config, "LinearConfiguration", "LinearConfiguration")
        percent = reading.number(linear, "StepPercent", "StepPercent")
        interval = reading.number(linear, "StepBakeTimeInMinutes", "StepBakeTimeInMinutes")
    plan = RolloutPlan(
        strategy,
        bake_time_minutes=bake,
        canary_percent=percent if strategy == "canary" else None,
        linear_step_percent=percent if strategy == "linear" else None,
        interval_minutes=interval,
    )
    problems = list(reading.problems)
    if not reading.problems:
        problems += rollout_problems(
            plan, has_load_balancer=_has_load_balancer(properties), has_service_connect=_has_service_connect(properties)
        )
    if strategy == "blue_green" and "BakeTimeInMinutes" not in config:
        problems.append("it has no BakeTimeInMinutes, which ECS requires with the BLUE_GREEN strategy")
    return ReadRollout(plan, tuple(problems), tuple(reading.unknown))


def _has_load_balancer(properties: Mapping[str, Any]) -> bool:
    balancers = properties.get("LoadBalancers")
    return bool(balancers) and (isinstance(balancers, list) or _intrinsic(balancers))


def _has_service_connect(properties: Mapping[str, Any]) -> bool:
    connect = properties.get("ServiceConnectConfiguration")
    return isinstance(connect, dict) and connect.get("Enabled") in (True, "true", "True")


def _minutes(value: float | None) -> str:
    return "not set" if value is None else f"{value:g} min"


def timeline(plan: RolloutPlan, *, minimum_healthy_percent: int = 100, maximum_percent: int = 200) -> str:
    """The rollout in words and numbers: ``canary: 10 % of the traffic to green for 5 min, then the rest; blue kept
    10 min after; 15 min in all``."""
    bake = f"blue kept {_minutes(plan.bake_time_minutes)} after"
    total = _total(plan)
    if plan.strategy == "rolling":
        return f"rolling: at least {minimum_healthy_percent} % healthy, at most {maximum_percent} % running"
    if plan.strategy == "blue_green":
        return f"blue/green: all traffic to green at once; {bake}"
    if plan.strategy == "canary":
        share = "ECS's canary share" if plan.canary_percent is None else f"{plan.canary_percent:g} %"
        wait = _minutes(plan.interval_minutes)
        return f"canary: {share} of the traffic to green for {wait}, then the rest; {bake}{total}"
    step = "ECS's step" if plan.linear_step_percent is None else f"{plan.linear_step_percent:g} %"
    return f"linear: {step} more of the traffic every {_minutes(plan.interval_minutes)}; {bake}{total}"


def _total(plan: RolloutPlan) -> str:
    try:
        minutes = deployment_minutes(plan)
        steps = linear_steps(plan.linear_step_percent) if plan.linear_step_percent is not None else None
    except (ValueError, ArithmeticError):
        return ""
    if minutes is None or not math.isfinite(minutes):
        return ""
    waits = f", {steps} step wait{'s' if steps != 1 else ''}" if plan.strategy == "linear" and steps is not None else ""
    return f"; {minutes:g} min in all{waits}"


# --- the result ----------------------------------------------------------------------------------------------------


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
class _Limit:
    """What bounds a capacity's instances: ``max_instances``, or a sentence saying why nothing in the template does."""

    capacity: str
    max_instances: int | None
    unbounded: str | None = None


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


# --- planning ------------------------------------------------------------------------------------------------------


def rollout_paths(paths: Sequence[str]) -> RolloutResult:
    """:func:`rollout_templates` of the templates ``paths`` name, read as ``neuron-ecs plan`` reads them."""
    loaded, paths_of, unreadable = read_app(paths)
    if not loaded:
        return RolloutResult([], [], [], unreadable)
    result = rollout_templates(loaded, construct_paths=paths_of)
    return RolloutResult(result.layouts, result.services, result.fleets, unreadable, result.capacities)


def rollout_templates(
    templates: Mapping[str, Any], *, construct_paths: Callable[[str, str], str | None] | None = None
) -> RolloutResult:
    """The peak of every Neuron service's rollout in the templates of one app (by name)."""
    model = app_model(templates, construct_paths=construct_paths)
    result = RolloutResult([], [], [])
    for capacity in model.capacities.values():
        if capacity.kind == "auto-scaling":
            entry = NeuronInstanceType.find(capacity.single_type or "")
            if entry is not None:
                _auto_scaling(model, capacity, entry, result)
        else:
            _managed_instances(model, capacity, result)
    return result


@dataclass(eq=False)
class _Sized:
    """A service on a capacity, with what its copies hold and how many run blue and green at its peak."""

    service: Service
    name: str
    cores: frozenset[int]
    cpi: int
    cpu: int
    memory: int
    read: ReadRollout
    blue: int | None
    room: RolloutRoom | None
    problems: list[str]
    fleet: str | None = None
    stage: int | None = None
    green_on: list[int] = field(default_factory=list)
    drawn: bool = True

    @property
    def green(self) -> int:
        return self.room.tasks - (self.blue or 0) if self.room is not None and self.blue is not None else 0

    @property
    def blue_instances(self) -> int:
        return -(-(self.blue or 0) // self.cpi)


def _size(
    t: EcsTemplate,
    service: Service,
    entry: NeuronInstanceType,
    lnc: int,
    cores: frozenset[int],
    cpi: int,
    cpu: int,
    memory: int,
) -> _Sized:
    read = read_rollout(t.properties(t.resources[service.logical_id]))
    problems = list(read.problems)
    name = _name(t, service.logical_id)
    blue = None if service.daemon else service.max_tasks
    room: RolloutRoom | None = None
    if service.daemon:
        problems = []  # a daemon is replaced in place, one task an instance: no room to plan
    elif blue is None:
        read = ReadRollout(read.plan, read.problems, (*read.unknown, "its desired count is not a number"))
    elif read.plan is not None and cores:
        per_chip = entry.cores_per_chip(lnc)
        chips = {core // per_chip for core in cores}
        whole = len(cores) == len(chips) * per_chip
        try:
            room = peak_room(
                read.plan,
                entry,
                desired=blue,
                copies_per_instance=cpi,
                cpu=cpu,
                memory_mib=memory,
                chips=len(chips) if whole else None,
                cores=None if whole else len(cores),
                lnc=lnc,
                minimum_healthy_percent=service.minimum_healthy_percent,
                maximum_percent=service.maximum_percent,
            )
        except ValueError as error:
            problems.append(f"{error}: two of its copies land on one instance and hold the same NeuronCores")
    return _Sized(service, name, cores, cpi, cpu, memory, read, blue, room, problems)


def _task_size(t: EcsTemplate, service: Service) -> tuple[int, int]:
    task = t.task_definitions[service.task_definition or ""]
    cpu = task.cpu or sum(c.cpu or 0 for c in task.containers)
    memory = task.memory or sum(c.memory_reservation or c.memory or 0 for c in task.containers)
    return cpu, memory


_COPY = re.compile(r"^(?P<model>.+)/(?:Copy|Slice)\d+Service(?:/Service)?$")
"""The construct path of a fleet model's copy: ``<model>/Copy<i>Service/Service`` (``NeuronFleet.add_model``) or
``<sliced service>/Slice<i>Service/Service`` (``SlicedNeuronService``)."""


def _fleet_of(t: EcsTemplate, service: Service, name: str) -> str | None:
    """The fleet model a service is a copy of: its construct path less the copy's, when its task definition is one
    copy of a fleet (its ``fleet`` intent: the fleet's path, which its models share); ``None`` for other services."""
    task = t.task_definitions.get(service.task_definition or "")
    fleet = task.intent.get("fleet") if task is not None else None
    if not isinstance(fleet, str) or not fleet:
        return None
    match = _COPY.match(name)
    return match.group("model") if match else fleet


def _depends_on(t: EcsTemplate, logical_id: str) -> set[str]:
    """The logical ids a resource's ``DependsOn`` names (renamed as :func:`combine_templates` renames them)."""
    raw = t.resources.get(logical_id, {}).get("DependsOn")
    names = [raw] if isinstance(raw, str) else [n for n in raw if isinstance(n, str)] if isinstance(raw, list) else []
    where = t.origin.get(logical_id)
    return {f"{where[0]}{ID_SEPARATOR}{n}" if where else n for n in names}


def _stages(t: EcsTemplate, members: Sequence[str]) -> dict[str, int]:
    """Each member's stage (from 1): one after the latest stage of the members it depends on (in time linear in the
    members and their ``DependsOn`` entries)."""
    inside = set(members)
    needs = {m: (_depends_on(t, m) & inside) - {m} for m in members}
    dependents: dict[str, list[str]] = {m: [] for m in members}
    for member, needed in needs.items():
        for other in needed:
            dependents[other].append(member)
    waiting = {m: len(needed) for m, needed in needs.items()}
    ready = [m for m in members if not waiting[m]]
    stage = dict.fromkeys(ready, 1)
    while ready:
        done = ready.pop()
        for later in dependents[done]:
            stage[later] = max(stage.get(later, 1), stage[done] + 1)
            waiting[later] -= 1
            if not waiting[later]:
                ready.append(later)
    last = max(stage.values(), default=0) + 1
    return {m: stage[m] if not waiting[m] else last for m in members}  # a cycle, which CloudFormation refuses


def _limit_of(t: EcsTemplate, capacity: Capacity) -> _Limit:
    name = _name(t, capacity.logical_id)
    if capacity.kind == "auto-scaling":
        return _Limit(
            name,
            capacity.max_size,
            None
            if capacity.max_size is not None
            else f"{name}: its MaxSize is not a number in the template, so whether the peak fits is unknown",
        )
    types = ", ".join(sorted(e.name for e in capacity.admitted)) or "the types its instance requirements admit"
    return _Limit(
        name,
        None,
        f"{name} is Managed Instances: no MaxSize; ECS launches instances of {types} as tasks need them, "
        "within the account's EC2 quotas, which the template does not show",
    )


def _auto_scaling(t: EcsTemplate, capacity: Capacity, entry: NeuronInstanceType, result: RolloutResult) -> None:
    base = _auto_scaling_layout(t, capacity, entry)
    placed, _ = _neuron_services(t, capacity)
    lnc = base.lnc or entry.default_lnc
    held = {h.owner.rsplit("#", 1)[0]: h.cores for h in base.holders}
    sized: list[_Sized] = []
    for item in placed:
        cpu, memory = _task_size(t, item.service)
        one = _size(
            t, item.service, entry, lnc, held.get(item.service.logical_id, frozenset()), item.copies, cpu, memory
        )
        one.fleet = _fleet_of(t, item.service, one.name)
        sized.append(one)
    _stage_fleets(t, sized)
    _draw(t, capacity, entry, lnc, base.title, sized, _limit_of(t, capacity), result, remarks=base.remarks)


def _managed_instances(t: EcsTemplate, capacity: Capacity, result: RolloutResult) -> None:
    limit = _limit_of(t, capacity)
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        if task is None or not task.managed_allocation or not t.lands_on(service, capacity):
            continue
        entry = _managed_type(capacity, task)
        if entry is None:
            continue
        lnc = _lnc(entry, [task])
        cpu, memory = _task_size(t, service)
        one = _size(t, service, entry, lnc, frozenset(range(entry.cores(lnc))), 1, cpu, memory)
        title = f"{_name(t, capacity.logical_id)} ({entry.name}) for {one.name}"
        _draw(t, capacity, entry, lnc, title, [one], limit, result)


def _stage_fleets(t: EcsTemplate, sized: list[_Sized]) -> None:
    fleets: dict[str, list[_Sized]] = {}
    for one in sized:
        if one.fleet is not None:
            fleets.setdefault(one.fleet, []).append(one)
    for members in fleets.values():
        stages = _stages(t, [m.service.logical_id for m in members])
        for member in members:
            member.stage = stages[member.service.logical_id]


_Content = list[list[tuple[_Sized, str, int]]]
"""Instances, each the copies on it: (service, ``blue`` or ``green`` (with a fleet's stage), copies)."""


def _place_green(one: _Sized, instances: _Content, entry: NeuronInstanceType) -> None:
    """Place ``one``'s green copies as ECS would: on the first instances holding fewer than its copies per instance
    of it (one, with ``distinctInstance``) with the CPU units and memory left, else on new ones."""
    green = one.green
    for number, on in enumerate(instances, 1):
        if not green:
            return
        mine = sum(n for s, _, n in on if s is one)
        cpu = sum(s.cpu * n for s, _, n in on)
        memory = sum(s.memory * n for s, _, n in on)
        here = min(green, one.cpi - mine)
        while here > 0 and (cpu + here * one.cpu > entry.cpu_units or memory + here * one.memory > entry.memory_mib):
            here -= 1
        if here > 0:
            on.append((one, "green", here))
            one.green_on.append(number)
            green -= here
    while green > 0:
        here = min(one.cpi, green)
        instances.append([(one, "green", here)])
        one.green_on.append(len(instances))
        green -= here


def _draw(
    t: EcsTemplate,
    capacity: Capacity,
    entry: NeuronInstanceType,
    lnc: int,
    title: str,
    sized: list[_Sized],
    limit: _Limit,
    result: RolloutResult,
    *,
    remarks: Iterable[str] = (),
) -> None:
    """Place every copy at the peak, draw the instances, and add each service's and fleet model's rollout."""
    per_chip = entry.cores_per_chip(lnc)
    needed = sum(s.blue_instances + -(-s.green // s.cpi) for s in sized)
    if needed > MAX_INSTANCES_DRAWN:
        remarks = (
            *remarks,
            f"the peak needs {needed} instances or more, above the {MAX_INSTANCES_DRAWN} ECS registers in a cluster: "
            "not drawn",
        )
        for one in sized:
            one.drawn = False
        sized_drawn: list[_Sized] = []
    else:
        sized_drawn = sized
    blue_count = max([1, *(s.blue_instances for s in sized_drawn)])
    # Each instance: (service, role, copies) where role is "blue" or "green" (with its stage for a fleet).
    instances: _Content = [[] for _ in range(blue_count)]
    for one in sized_drawn:
        for index in range(one.blue_instances):
            instances[index].append((one, "blue", min(one.cpi, (one.blue or 0) - index * one.cpi)))
    for one in sized_drawn:
        if one.fleet is None and one.green:
            _place_green(one, instances, entry)
    # Fleet models: a stage's green copies on new instances the model's earlier green copies share, numbered after
    # everything above; the blue copies of earlier stages have stopped by then.
    by_fleet: dict[str, list[_Sized]] = {}
    for one in sized:
        if one.fleet is not None:
            by_fleet.setdefault(one.fleet, []).append(one)
    first_new = len(instances) + 1
    drawings: list[tuple[str, int, int, _Content]] = []
    fleets: list[FleetRollout] = []
    for fleet, members in by_fleet.items():
        steady = [[e for e in on if e[0].fleet == fleet] for on in instances[:blue_count]]
        steady = [on for on in steady if on]
        peaks: list[Peak] = []
        widest = 0
        for stage in sorted({m.stage or 1 for m in members}):
            news: _Content = []
            for member in members:
                if (member.stage or 1) > stage or not member.green or not member.drawn:
                    continue
                for index in range(-(-member.green // member.cpi)):
                    while len(news) <= index:
                        news.append([])
                    news[index].append(
                        (member, f"green, stage {member.stage}", min(member.cpi, member.green - index * member.cpi))
                    )
                    if member.stage == stage:
                        member.green_on.append(first_new + index)
            left = [[e for e in on if (e[0].stage or 1) >= stage] for on in steady]
            peaks.append(_peak_of([on for on in left if on] + news, per_chip))
            widest = max(widest, len(news))
            if news:
                drawings.append((fleet, stage, first_new, news))
        stages = tuple(
            tuple(m.name for m in members if (m.stage or 1) == stage)
            for stage in sorted({m.stage or 1 for m in members})
        )
        known = all(m.room is not None and m.drawn for m in members)
        fleets.append(
            FleetRollout(
                fleet,
                limit.capacity,
                entry.name,
                stages,
                _peak_of(steady, per_chip) if known else None,
                tuple(peaks) if known else (),
                limit.max_instances,
                limit.unbounded,
            )
        )
        first_new += widest
    total = first_new - 1
    if capacity.kind == "auto-scaling" and any(one.room is not None for one in sized) and all(o.drawn for o in sized):
        units = len({one.fleet or one.service.logical_id for one in sized if one.room is not None})
        result.capacities.append(
            CapacityPeak(limit.capacity, entry.name, blue_count, total, limit.max_instances, units)
        )
    result.layouts.extend(_group_layouts(title, entry, lnc, per_chip, instances, total, remarks))
    for fleet, stage, first, news in drawings:
        result.layouts.extend(
            _group_layouts(
                title, entry, lnc, per_chip, news, total, (), first=first, suffix=f" at stage {stage} of {fleet}"
            )
        )
    for one in sized:
        result.services.append(
            ServiceRollout(
                name=one.name,
                logical_id=one.service.logical_id,
                capacity=limit.capacity,
                instance_type=entry.name,
                plan=one.read.plan,
                minimum_healthy_percent=one.service.minimum_healthy_percent,
                maximum_percent=one.service.maximum_percent,
                blue_tasks=one.blue,
                room=one.room,
                max_instances=limit.max_instances,
                limit=limit.unbounded,
                problems=tuple(one.problems),
                unknown=tuple(
                    (*one.read.unknown, "a daemon: ECS replaces its task on every instance in place")
                    if one.service.daemon
                    else one.read.unknown
                ),
                green_instances=tuple(sorted(set(one.green_on))),
                fleet=one.fleet,
                stage=one.stage,
            )
        )
    result.fleets.extend(fleets)


def _peak_of(content: _Content, per_chip: int) -> Peak:
    """What ``content`` (instances, each its copies) holds: the chips counted per instance."""
    tasks = chips = cores = cpu = memory = 0
    for on in content:
        held: set[int] = set()
        for one, _, copies in on:
            tasks += copies
            cores += copies * len(one.cores)
            cpu += copies * one.cpu
            memory += copies * one.memory
            held |= {core // per_chip for core in one.cores}
        chips += len(held)
    return Peak(tasks, chips, cores, len(content), cpu, memory)


def _group_layouts(
    title: str,
    entry: NeuronInstanceType,
    lnc: int,
    per_chip: int,
    instances: _Content,
    total: int,
    remarks: Iterable[str],
    *,
    first: int = 1,
    suffix: str = "",
) -> list[InstanceLayout]:
    """A layout per run of alike instances (``instances 1-3 of 5``), numbered from ``first``."""
    layouts: list[InstanceLayout] = []
    index = 0
    remarks = tuple(remarks)
    while index < len(instances):
        end = index
        key = [(id(s), role, n) for s, role, n in instances[index]]
        while end + 1 < len(instances) and [(id(s), r, n) for s, r, n in instances[end + 1]] == key:
            end += 1
        holders: list[Holder] = []
        roles = []
        for one, role, copies in instances[index]:
            roles.append(role.split(",")[0])
            for copy in range(copies):
                text = f"{role}, copy {copy + 1} of {copies} here" if copies > 1 else role
                name = _holder_name(one.name, one.cores, per_chip, text)
                holders.append(Holder(label(len(holders)), name, f"{one.service.logical_id}#{role}#{copy}", one.cores))
        a, b = first + index, first + end
        which = f"instance {a}" if a == b else f"instances {a}-{b}"
        kinds = " and ".join(dict.fromkeys(roles)) or "nothing placed"
        layouts.append(
            InstanceLayout(
                title=f"{title} {which} of {max(total, b)}{suffix}",
                instance_type=entry,
                chips=entry.chips,
                cores_per_chip=per_chip,
                registered=frozenset(range(entry.chips)),
                holders=tuple(holders),
                lnc=lnc,
                notes=(kinds,),
                remarks=remarks if index == 0 else (),
            )
        )
        index = end + 1
    return layouts
