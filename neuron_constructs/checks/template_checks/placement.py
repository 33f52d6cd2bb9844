"""Services on capacity: a capacity that launches the task's type, one task per instance within the group, pins,
and no device held by two tasks."""

from __future__ import annotations

from itertools import combinations

from neuron_constructs.checks.cfn_template import (
    EcsTemplate,
    Service,
    TaskDefinition,
)
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    devices_text,
    in_properties,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.cores import core_overlap, format_core_list
from neuron_constructs.knowledge.rules import Rule


def _check_capacity_fits(t: EcsTemplate, out: TemplateReport) -> None:
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        capacities = t.service_capacities(service)
        if task is None or not capacities:
            continue
        if task.manual_mapping and task.instance_type is not None:
            name = task.instance_type.name
            fits = [
                c
                for c in capacities
                if (c.kind == "auto-scaling" and (c.instance_types is None or name in c.instance_types))
                or (c.kind == "managed-instances" and task.instance_type in c.admitted)
            ]
            if not fits:
                out.add(
                    r.NO_MATCHING_CAPACITY,
                    service.logical_id,
                    in_properties("CapacityProviderStrategy"),
                    f"its task maps devices of {name}, but no capacity in its strategy launches {name}",
                    wanted=f"{name} capacity",
                )
        elif (
            task.managed_allocation
            and all(c.kind == "managed-instances" for c in capacities)
            and not any(c.admitted for c in capacities)
        ):
            out.add(
                r.NO_MATCHING_CAPACITY,
                service.logical_id,
                in_properties("CapacityProviderStrategy"),
                "its task asks for NeuronDevice, but its Managed Instances capacity selects no Neuron instance",
                wanted="Managed Instances selecting inferentia2/trainium/trainium2",
            )


def capacity_limit(t: EcsTemplate, service: Service) -> tuple[int, list[str]] | None:
    """The most instances the service's Auto Scaling capacity launches, and the groups' logical ids."""
    capacities = t.service_capacities(service)
    if not capacities or any(c.kind != "auto-scaling" or c.max_size is None for c in capacities):
        return None
    return sum(c.max_size or 0 for c in capacities), [c.group or c.logical_id for c in capacities]


def named(t: EcsTemplate, logical_ids: list[str]) -> str:
    """Resources by construct path, for a message (looked up only when there is one to write)."""
    return ", ".join(t.path_of(logical_id) for logical_id in logical_ids)


def _check_distinct_instance_count(t: EcsTemplate, out: TemplateReport) -> None:
    for service in t.services.values():
        limit = capacity_limit(t, service)
        if not service.distinct_instance or service.max_tasks is None or limit is None:
            continue
        maximum, groups = limit
        if service.max_tasks > maximum:
            capacity = named(t, groups)
            out.add(
                r.SLICES_EXCEED_CAPACITY,
                service.logical_id,
                in_properties("DesiredCount"),
                f"{service.max_tasks} tasks with distinctInstance, but {capacity} launches at most {maximum} instances",
                max_capacity=maximum,
                capacity=capacity,
                instances=service.max_tasks,
            )


def _check_pinned(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.manual_mapping:
            continue
        single = task.pinned_types is not None and len(task.pinned_types) == 1
        if single:
            continue
        services = t.services_of(task.logical_id)
        if task.on_managed_instances and not task.on_ec2:
            # Managed Instances drop task-level constraints: a service pin or a one-type capacity pins it.
            pinned = all(_service_pins_one_type(t, s) for s in services)
        else:
            # On EC2 the pin belongs on the task definition; service pins stand in for it when every service has one.
            pinned = bool(services) and all(s.pinned_types and len(s.pinned_types) == 1 for s in services)
        if pinned:
            continue
        what = (
            f"its placement constraint {list(task.pin_expressions)} admits more than one instance type"
            if task.pin_expressions
            else "it maps /dev/neuron devices but no memberOf constraint pins it to one instance type"
        )
        out.add(r.UNPINNED_MANUAL_TASK, task.logical_id, in_properties("PlacementConstraints"), what)


def _service_pins_one_type(t: EcsTemplate, service: Service) -> bool:
    if service.pinned_types and len(service.pinned_types) == 1:
        return True
    capacities = t.service_capacities(service)
    return bool(capacities) and all(c.single_type for c in capacities or ())


def _check_copies(t: EcsTemplate, out: TemplateReport) -> None:
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        if task is None or not task.manual_mapping or service.daemon or service.distinct_instance:
            continue
        instance = task.instance_type
        cpu = task.cpu or sum(c.cpu or 0 for c in task.containers)
        memory = task.memory or sum(c.memory_reservation or c.memory or 0 for c in task.containers)
        if instance is not None and (2 * cpu > instance.cpu_units or 2 * memory > instance.memory_mib):
            continue  # two copies never fit on one instance
        out.add(
            r.COPIES_SHARE_INSTANCE,
            service.logical_id,
            in_properties("PlacementConstraints"),
            f"its tasks map {devices_text(task.devices)} and nothing keeps two of them off one instance "
            "(no distinctInstance; a rolling deployment alone starts a second copy)",
            instance_type=instance.name if instance else "the instance",
        )


def _service_label(t: EcsTemplate, service: Service) -> str:
    return t.path_of(service.logical_id)


MOST_SHARED_DEVICE_PAIRS = 3
"""NEURON023 findings per service naming one other service each; those beyond are named in one more finding, so a
template of many services on one device gets a finding per service, not per pair."""


def _check_shared_devices(t: EcsTemplate, out: TemplateReport) -> None:
    services = [s for s in t.services.values() if s.task_definition in t.task_definitions]
    tasks = {s.logical_id: t.task_definitions[s.task_definition or ""] for s in services}
    # Only services whose tasks hold Neuron devices can share one; pairs of others have nothing to report.
    neuron = [s for s in services if tasks[s.logical_id].manual_mapping or tasks[s.logical_id].managed_allocation]
    problems: dict[tuple[str, str], str | None] = {}
    named: dict[str, int] = {}
    beyond: dict[str, list[Service]] = {}
    seconds: dict[str, Service] = {}
    for first, second in combinations(neuron, 2):
        if not t.could_share_instances(first, second):
            continue
        a, b = tasks[first.logical_id], tasks[second.logical_id]
        pair = (a.logical_id, b.logical_id)
        if pair not in problems:
            problems[pair] = _shared_device_problem(a, b)
        problem = problems[pair]
        if not problem:
            continue
        named[second.logical_id] = named.get(second.logical_id, 0) + 1
        if named[second.logical_id] > MOST_SHARED_DEVICE_PAIRS:
            beyond.setdefault(second.logical_id, []).append(first)
            seconds[second.logical_id] = second
            continue
        out.add(
            r.SHARED_DEVICE,
            second.logical_id,
            in_properties("TaskDefinition"),
            f"it and {_service_label(t, first)} {problem}",
            first=_service_label(t, first),
            other=_service_label(t, second),
        )
    for logical_id, others in beyond.items():
        listed = ", ".join(_service_label(t, s) for s in others[:MOST_SHARED_DEVICE_PAIRS])
        more = f" and {len(others) - MOST_SHARED_DEVICE_PAIRS} more" if len(others) > MOST_SHARED_DEVICE_PAIRS else ""
        out.add(
            r.SHARED_DEVICE,
            logical_id,
            in_properties("TaskDefinition"),
            f"it and {len(others)} more service{'s' if len(others) > 1 else ''} ({listed}{more}) also hold its "
            "devices or NeuronCores and can land on one instance",
            first=_service_label(t, others[0]),
            other=_service_label(t, seconds[logical_id]),
        )


def _shared_device_problem(a: TaskDefinition, b: TaskDefinition) -> str | None:
    """What two tasks that can land on one instance hold twice, as the end of a sentence; ``None`` for nothing."""
    if a.manual_mapping and b.manual_mapping:
        overlap = core_overlap(a.held, b.held)
        same = " (the same task definition)" if a.logical_id == b.logical_id else ""
        if overlap is None:
            return None
        if overlap.cores is None:
            return f"both map {devices_text(overlap.devices)}{same} and can land on one instance"
        shared = overlap.cores
        return (
            f"both hold NeuronCore{'s' if len(shared) > 1 else ''} {format_core_list(shared)} of "
            f"{devices_text(overlap.devices)}{same} and can land on one instance"
        )
    if (a.managed_allocation and b.manual_mapping) or (a.manual_mapping and b.managed_allocation):
        manual = a if a.manual_mapping else b
        return (
            f"share a capacity where one maps {devices_text(manual.devices)} by hand and the other asks for "
            "NeuronDevice = ALL, which ECS hands every device, those included"
        )
    return None


CHECKS: dict[Rule, Check] = {
    r.NO_MATCHING_CAPACITY: _check_capacity_fits,
    r.SLICES_EXCEED_CAPACITY: _check_distinct_instance_count,
    r.UNPINNED_MANUAL_TASK: _check_pinned,
    r.COPIES_SHARE_INSTANCE: _check_copies,
    r.SHARED_DEVICE: _check_shared_devices,
}
"""This area's check of each rule."""
