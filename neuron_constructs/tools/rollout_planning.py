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

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.checks.cfn_template import ID_SEPARATOR, Capacity, EcsTemplate, Service
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rollouts import RolloutRoom, peak_room
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
from neuron_constructs.tools.rollout_reading import STRATEGIES, ReadRollout, read_rollout, timeline  # noqa: F401
from neuron_constructs.tools.rollout_result import (
    CapacityPeak,
    FleetRollout,
    Peak,
    RolloutResult,
    ServiceRollout,
)

__all__ = ["rollout_paths", "rollout_templates"]

MAX_INSTANCES_DRAWN = 5000
"""The most instances a capacity's drawing places copies on: the EC2 instances ECS registers in a cluster at most
(ECS guide, "Amazon ECS service quotas and API throttling limits")."""


@dataclass(frozen=True)
class _Limit:
    """What bounds a capacity's instances: ``max_instances``, or a sentence saying why nothing in the template does."""

    capacity: str
    max_instances: int | None
    unbounded: str | None = None


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
