"""Capacity sliced between the copies of one service or fleet: theirs alone, and no fixed host port."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations

from neuron_constructs.checks.cfn_template import (
    Capacity,
    EcsTemplate,
    Service,
)
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    in_properties,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rules import Rule


def _lands_on(t: EcsTemplate, service: Service, capacity: Capacity) -> bool:
    return t.lands_on(service, capacity)


def _sliced_groups(t: EcsTemplate) -> Iterator[tuple[Capacity, list[Service], list[Service]]]:
    """Per Auto Scaling capacity whose slices hold every chip, or that holds copies the library recorded as one fleet:
    the slice (copy) services and the others on it."""
    for capacity in t.capacities.values():
        instance = NeuronInstanceType.find(capacity.single_type or "")
        if capacity.kind != "auto-scaling" or instance is None:
            continue
        on_it = [s for s in t.services.values() if _lands_on(t, s, capacity)]
        slices = [
            s
            for s in on_it
            if not s.daemon
            and s.distinct_instance
            and t.task_definitions.get(s.task_definition or "") is not None
            and t.task_definitions[s.task_definition or ""].manual_mapping
        ]
        fleets = {_fleet_of(t, s) for s in slices} - {None}
        if fleets:  # copies the library placed as a fleet: the capacity is theirs even with chips left free
            members = [s for s in slices if _fleet_of(t, s) in fleets]
            yield capacity, members, [s for s in on_it if s not in members and not s.daemon]
            continue
        core_sets = [_held(t, s) for s in slices]
        disjoint = all(not (a & b) for a, b in combinations(core_sets, 2))
        if len(slices) < 2 or not disjoint or frozenset().union(*core_sets) != _every_core(t, slices, instance):
            continue
        others = [s for s in on_it if s not in slices and not s.daemon]
        yield capacity, slices, others


def _check_sliced_capacity(t: EcsTemplate, out: TemplateReport) -> None:
    for capacity, slices, others in _sliced_groups(t):
        if not others:
            continue
        paths = [t.path_of(s.logical_id) for s in slices]
        owner = "/".join(_common_prefix([p.split("/") for p in paths])) or "the sliced service"
        for other in others:
            out.add(
                r.SLICED_CAPACITY_SHARED,
                other.logical_id,
                in_properties("CapacityProviderStrategy"),
                f"it runs on {t.path_of(capacity.logical_id)}, whose {len(slices)} slice services ({', '.join(paths)}) "
                + ("hold every chip" if _holds_every_chip(t, capacity, slices) else "are one fleet that owns it"),
                sliced=owner,
                other=t.path_of(other.logical_id),
            )


def _fleet_of(t: EcsTemplate, service: Service) -> str | None:
    """The fleet (or sliced service) path the library recorded on the service's task definition, if any."""
    fleet = t.task_definitions[service.task_definition or ""].intent.get("fleet")
    return fleet if isinstance(fleet, str) else None


def _held(t: EcsTemplate, service: Service) -> frozenset[int]:
    """What a slice holds: its NeuronCores, else (a type the catalog lacks) its devices."""
    task = t.task_definitions[service.task_definition or ""]
    cores = task.cores
    return task.devices if cores is None else cores


def _every_core(t: EcsTemplate, slices: Sequence[Service], instance: NeuronInstanceType) -> frozenset[int]:
    """Every NeuronCore of ``instance`` at the slices' logical-core setting (every chip where that is unknown)."""
    lnc = t.task_definitions[slices[0].task_definition or ""].lnc
    if lnc is None or lnc not in instance.lnc_options:
        return frozenset(range(instance.chips))
    return frozenset(range(instance.cores(lnc)))


def _holds_every_chip(t: EcsTemplate, capacity: Capacity, slices: Sequence[Service]) -> bool:
    instance = NeuronInstanceType.find(capacity.single_type or "")
    if instance is None:
        return False
    return frozenset().union(*(_held(t, s) for s in slices)) == _every_core(t, slices, instance)


def _common_prefix(paths: Sequence[Sequence[str]]) -> list[str]:
    prefix: list[str] = []
    for parts in zip(*paths, strict=False):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    return prefix


def _fixed_host_ports(t: EcsTemplate, service: Service) -> set[int]:
    task = t.task_definitions[service.task_definition or ""]
    ports: set[int] = set()
    for container in task.containers:
        for container_port, host_port in container.port_mappings:
            if task.network_mode == "host" and container_port:
                ports.add(container_port)
            elif task.network_mode == "bridge" and host_port:
                ports.add(host_port)
    return ports


def _check_slice_host_ports(t: EcsTemplate, out: TemplateReport) -> None:
    """A sliced service's slices are one service's replicas, all on every instance: host ports stay dynamic."""
    for _capacity, slices, _others in _sliced_groups(t):
        for service in slices:
            ports = sorted(_fixed_host_ports(t, service))
            if ports:
                task = service.task_definition or service.logical_id
                out.add(
                    r.SLICE_HOST_PORT,
                    task,
                    in_properties("ContainerDefinitions"),
                    f"host port {', '.join(map(str, ports))} of a slice that runs on every instance beside the other "
                    f"{len(slices) - 1} slices",
                )


CHECKS: dict[Rule, Check] = {
    r.SLICE_HOST_PORT: _check_slice_host_ports,
    r.SLICED_CAPACITY_SHARED: _check_sliced_capacity,
}
"""This area's check of each rule."""
