"""The Neuron rules, checked on a finished CloudFormation template.

Every rule of :mod:`neuron_constructs.knowledge.rules` whose ``checked`` is ``template`` or ``both`` has one
check here: a function from an :class:`~neuron_constructs.checks.cfn_template.EcsTemplate` to the
findings, each with the rule's id and the same ``<path>: <problem>. [<id>: <rule>] Fix: ...``
message the constructs raise. The checks see the template however it was made - the
library's API before or after construction, plain aws-cdk-lib constructs, escape hatches,
another CDK language, SAM or a hand-written file - so they are the net under the early checks.

Used three ways: at ``cdk synth`` by :mod:`neuron_constructs.base.synth_checks` (errors fail the
synth), by ``neuron-ecs lint`` on any template file, and as a cfn-lint rule pack
(:mod:`neuron_constructs.checks.cfn_lint_rules`). No AWS CDK import here.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from neuron_constructs.checks import inputs
from neuron_constructs.checks.cfn_template import (
    Capacity,
    Container,
    EcsTemplate,
    LoadedTemplate,
    Service,
    TaskDefinition,
    combine_templates,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.ami import NEURON_AMI_PARAMETERS, STANDARD_ECS_AMI_PARAMETERS
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.devices import format_index_runs
from neuron_constructs.knowledge.rules import Rule

__all__ = ["TEMPLATE_CHECKS", "Finding", "check_template", "check_templates", "secret_like"]

_SECRET_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
_NOT_A_SECRET_SUFFIX = ("_ARN", "_ID", "_NAME", "_PATH", "_FILE", "_URL", "_URI", "_REGION", "_ENDPOINT")
_NOT_A_SECRET_NAMES = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
"""Names that by convention hold a file path."""
_KEYS_THAT_ARE_NOT_SECRETS = frozenset({"PUBLIC", "S3", "CACHE", "OBJECT", "PARTITION", "SORT", "PRIMARY", "ROUTING"})
"""A word before ``KEY`` that makes it a name, not a credential (``MODEL_S3_KEY``, ``CACHE_KEY``)."""


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place in one template."""

    rule: Rule
    logical_id: str
    location: tuple[str | int, ...]
    """Path into the template, from ``Resources``."""
    message: str
    template: str = "template"
    """Which template, when several are checked together (:func:`check_templates`)."""

    @property
    def severity(self) -> str:
        return self.rule.severity


def secret_like(name: str) -> bool:
    """Whether an environment variable name says it holds a secret.

    A word (``_``-separated or camelCase) ``SECRET``, ``PASSWORD``, ``CREDENTIALS``, ``APIKEY`` anywhere
    (``DB_PASSWORD``, ``PGPASSWORD``), ``TOKEN`` as the last word (``HF_TOKEN``, ``hfToken``), or a last word
    ending in ``KEY`` (``API_KEY``, ``AWS_SECRET_ACCESS_KEY``); not ``MAX_TOKENS``,
    ``NEURON_TOKEN_GEN_BUCKETS``, ``TOKENIZERS_PARALLELISM``, ``SSH_PUBLIC_KEY`` or ``MODEL_S3_KEY``, and not a
    name that points at a secret (``*_ARN``, ``*_PATH``, ``*_FILE``, ``GOOGLE_APPLICATION_CREDENTIALS``...).
    """
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).upper().split("_")
    upper = "_".join(words)
    if upper.endswith(_NOT_A_SECRET_SUFFIX) or upper in _NOT_A_SECRET_NAMES:
        return False
    if _SECRET_WORDS & set(words) or any(w.endswith(("PASSWORD", "PASSWD")) for w in words):
        return True
    last = words[-1]
    if last == "TOKEN":
        return True
    return last.endswith("KEY") and last != "MONKEY" and not _KEYS_THAT_ARE_NOT_SECRETS & set(words)


class _Report:
    """Collects findings for one template."""

    def __init__(self, template: EcsTemplate) -> None:
        self.template = template
        self.findings: list[Finding] = []

    def add(
        self,
        rule: Rule,
        logical_id: str,
        location: Sequence[str | int],
        problem: str,
        *,
        container: Container | None = None,
        **fix: object,
    ) -> None:
        path = self.template.path_of(logical_id)
        if container is not None:
            path = f"{path}/{container.name}"
        self.findings.append(
            Finding(rule, logical_id, ("Resources", logical_id, *location), rule.message(path, problem, **fix))
        )


def _properties(*tail: str | int) -> tuple[str | int, ...]:
    return ("Properties", *tail)


def _in_container(container: Container, *tail: str | int) -> tuple[str | int, ...]:
    return ("Properties", "ContainerDefinitions", container.index, *tail)


def _devices_text(indices: Iterable[int]) -> str:
    return ", ".join(f"/dev/neuron{i}" for i in sorted(indices))


# --- task definitions ----------------------------------------------------------------------------


def _check_unknown_type(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if task.manual_mapping and task.pinned_types and len(task.pinned_types) == 1 and task.instance_type is None:
            (name,) = task.pinned_types
            from neuron_constructs.knowledge.catalog import closest_instance_types

            out.add(
                r.UNKNOWN_INSTANCE_TYPE,
                task.logical_id,
                _properties("PlacementConstraints"),
                f"the task maps Neuron devices but is pinned to {name!r}, which is not a Neuron instance type",
                closest=", ".join(closest_instance_types(name)),
            )


def _check_one_neuron_container(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        wanting = [c.name for c in task.containers if c.wants_all_neuron_devices]
        if len(wanting) > 1:
            out.add(
                r.ONE_NEURON_CONTAINER,
                task.logical_id,
                _properties("ContainerDefinitions"),
                f"containers {wanting} ask for NeuronDevice",
            )


def _check_mixed_modes(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if not task.managed_allocation:
            continue
        wanting = [c.name for c in task.containers if c.wants_all_neuron_devices]
        for container in task.containers:
            if container.maps_neuron_devices:
                out.add(
                    r.MIXED_DEVICE_MODES,
                    task.logical_id,
                    _in_container(container, "LinuxParameters", "Devices"),
                    f"container maps {list(container.neuron_device_paths)} while {wanting} ask for NeuronDevice",
                    container=container,
                )


def _check_managed_instances_fields(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if not task.on_managed_instances:
            continue
        if task.network_mode not in ("awsvpc", "host"):
            out.add(
                r.MANAGED_INSTANCES_FIELD,
                task.logical_id,
                _properties("NetworkMode"),
                f"network mode {task.network_mode} on a Managed Instances task definition",
                field="NetworkMode",
            )
        for present, field in ((task.ipc_mode, "IpcMode"), (task.inference_accelerators, "InferenceAccelerators")):
            if present:
                out.add(r.MANAGED_INSTANCES_FIELD, task.logical_id, _properties(field), f"{field} is set", field=field)
        for container in task.containers:
            for field in container.managed_instances_rejected:
                out.add(
                    r.MANAGED_INSTANCES_FIELD,
                    task.logical_id,
                    _in_container(container),
                    f"{field} is set",
                    container=container,
                    field=field,
                )


def _check_managed_allocation_capacity(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if not task.managed_allocation:
            continue
        if not task.on_managed_instances:
            out.add(
                r.MANAGED_ALLOCATION_CAPACITY,
                task.logical_id,
                _properties("RequiresCompatibilities"),
                f"NeuronDevice in a task definition compatible with {sorted(task.compatibilities)} only",
            )
        for service in t.services_of(task.logical_id):
            capacities = t.service_capacities(service)
            wrong = (
                service.fargate
                or service.launch_type in ("EC2", "EXTERNAL")
                or any(c.kind != "managed-instances" for c in capacities or ())
            )
            if wrong:
                out.add(
                    r.MANAGED_ALLOCATION_CAPACITY,
                    service.logical_id,
                    _properties(),
                    "the service runs a NeuronDevice task on "
                    + (
                        f"launch type {service.launch_type}"
                        if service.launch_type
                        else "capacity that is not Managed Instances"
                    ),
                )


def _check_undeclared_devices(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        declared = task.intent.get("devices")
        if isinstance(declared, list):
            known = {d for d in declared if isinstance(d, int)}
            extra = sorted(i for i in task.devices - known if instance is None or i < instance.chips)
            if extra:
                out.add(
                    r.UNDECLARED_DEVICE,
                    task.logical_id,
                    _properties("ContainerDefinitions"),
                    f"its containers map {_devices_text(extra)}, outside the devices {sorted(known)} it was "
                    "declared with",
                    declared=_devices_text(known),
                )


def _check_device_range(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        for container in task.containers:
            beyond = [
                (position, path)
                for position, path, index in zip(
                    container.neuron_device_positions,
                    container.neuron_device_paths,
                    container.neuron_devices,
                    strict=True,
                )
                if index is None or (instance is not None and index >= instance.chips)
            ]
            if beyond:
                chips = instance.chips if instance else 0
                out.add(
                    r.DEVICE_INDEX_RANGE,
                    task.logical_id,
                    _in_container(container, "LinuxParameters", "Devices", beyond[0][0]),
                    f"{', '.join(p for _, p in beyond)} does not exist on "
                    f"{instance.name if instance else 'any Neuron instance'}",
                    container=container,
                    last=max(chips - 1, 0),
                    instance_type=instance.name if instance else "the instance type",
                    chips=chips,
                )


def _check_duplicate_devices(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        holders: dict[int, list[str]] = defaultdict(list)
        for container in task.containers:
            for index in container.neuron_devices:
                if index is not None:
                    holders[index].append(container.name)
        for index, names in sorted(holders.items()):
            if len(names) > 1:
                out.add(
                    r.DUPLICATE_DEVICE,
                    task.logical_id,
                    _properties("ContainerDefinitions"),
                    f"/dev/neuron{index} is mapped {len(names)} times (containers {names})",
                )


def _managed_instances_limits(capacities: Iterable[Capacity]) -> NeuronInstanceType | None:
    admitted = [t for c in capacities for t in c.admitted]
    return max(admitted, key=lambda t: (t.cpu_units, t.memory_mib)) if admitted else None


def _size(task: TaskDefinition) -> tuple[int | None, int | None]:
    """CPU units and MiB a task asks for: task-level values, else what its containers reserve."""
    cpu = task.cpu if task.cpu is not None else sum(c.cpu or 0 for c in task.containers) or None
    memory = task.memory
    if memory is None:
        memory = sum(c.memory_reservation or c.memory or 0 for c in task.containers) or None
    return cpu, memory


def _check_task_size(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        cpu, memory = _size(task)
        limits: list[tuple[NeuronInstanceType, str]] = []
        if task.manual_mapping and task.instance_type is not None:
            limits.append((task.instance_type, task.logical_id))
        if task.managed_allocation:
            for service in t.services_of(task.logical_id):
                capacities = t.service_capacities(service) or []
                largest = _managed_instances_limits(c for c in capacities if c.kind == "managed-instances")
                if largest is not None:
                    limits.append((largest, service.logical_id))
        for instance, where in limits:
            largest_note = "" if where == task.logical_id else " (the largest type its capacity admits)"
            if cpu is not None and cpu > instance.cpu_units:
                out.add(
                    r.TASK_EXCEEDS_INSTANCE,
                    task.logical_id,
                    _properties("Cpu"),
                    f"cpu {cpu} exceeds the {instance.cpu_units} CPU units of {instance.name}{largest_note}",
                    limit=instance.cpu_units,
                    unit="CPU units",
                    instance_type=instance.name,
                )
            if memory is not None and memory > instance.memory_mib:
                out.add(
                    r.TASK_EXCEEDS_INSTANCE,
                    task.logical_id,
                    _properties("Memory"),
                    f"memory {memory} MiB exceeds the {instance.memory_mib} MiB of {instance.name}{largest_note}",
                    limit=instance.memory_mib,
                    unit="MiB",
                    instance_type=instance.name,
                )


def _check_other_accelerators(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if not task.is_neuron:
            continue
        if task.inference_accelerators:
            out.add(
                r.NEURON_CONTAINER_RESOURCES,
                task.logical_id,
                _properties("InferenceAccelerators"),
                "InferenceAccelerators in a task that holds Neuron devices",
                field="InferenceAccelerators",
            )
        for container in task.containers:
            for kind in container.other_accelerators:
                out.add(
                    r.NEURON_CONTAINER_RESOURCES,
                    task.logical_id,
                    _in_container(container, "ResourceRequirements"),
                    f"resourceRequirements ask for {kind} in a task that holds Neuron devices",
                    container=container,
                    field=f"the {kind} resource requirement",
                )


def _check_capacity_fits(t: EcsTemplate, out: _Report) -> None:
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
                    _properties("CapacityProviderStrategy"),
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
                _properties("CapacityProviderStrategy"),
                "its task asks for NeuronDevice, but its Managed Instances capacity selects no Neuron instance",
                wanted="Managed Instances selecting inferentia2/trainium/trainium2",
            )


def _capacity_limit(t: EcsTemplate, service: Service) -> tuple[int, list[str]] | None:
    """The most instances the service's Auto Scaling capacity launches, and the groups' logical ids."""
    capacities = t.service_capacities(service)
    if not capacities or any(c.kind != "auto-scaling" or c.max_size is None for c in capacities):
        return None
    return sum(c.max_size or 0 for c in capacities), [c.group or c.logical_id for c in capacities]


def _named(t: EcsTemplate, logical_ids: list[str]) -> str:
    """Resources by construct path, for a message (looked up only when there is one to write)."""
    return ", ".join(t.path_of(logical_id) for logical_id in logical_ids)


def _check_distinct_instance_count(t: EcsTemplate, out: _Report) -> None:
    for service in t.services.values():
        limit = _capacity_limit(t, service)
        if not service.distinct_instance or service.max_tasks is None or limit is None:
            continue
        maximum, groups = limit
        if service.max_tasks > maximum:
            capacity = _named(t, groups)
            out.add(
                r.SLICES_EXCEED_CAPACITY,
                service.logical_id,
                _properties("DesiredCount"),
                f"{service.max_tasks} tasks with distinctInstance, but {capacity} launches at most {maximum} instances",
                max_capacity=maximum,
                capacity=capacity,
                instances=service.max_tasks,
            )


def _check_deployment_room(t: EcsTemplate, out: _Report) -> None:
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        limit = _capacity_limit(t, service)
        if task is None or not task.manual_mapping or not service.distinct_instance or limit is None:
            continue
        if not service.rolling:
            continue
        maximum, groups = limit
        desired = service.desired_count or 0
        # the fewest tasks that fill every instance: the desired count, or a count auto scaling reaches
        full = desired if desired >= maximum else maximum if maximum in service.task_counts else 0
        healthy = service.minimum_healthy_percent
        if 0 < maximum <= full and math.ceil(full * healthy / 100) >= full:
            capacity = _named(t, groups)
            scaled = "" if full == desired else " (auto scaling reaches that many)"
            out.add(
                r.DEPLOYMENT_WITHOUT_ROOM,
                service.logical_id,
                _properties("DeploymentConfiguration"),
                f"{full} tasks{scaled} with distinctInstance on {capacity}, which launches at most {maximum} "
                f"instances, and a minimum healthy percent of {healthy}",
                percent=inputs.room_to_stop(full),
                capacity=capacity,
                desired=full,
            )


def _check_deployment_stalls(t: EcsTemplate, out: _Report) -> None:
    for service in t.services.values():
        if not service.rolling:
            continue
        minimum, maximum = service.minimum_healthy_percent, service.maximum_percent
        stalled = next((n for n in service.task_counts[:10_000] if inputs.deployment_stalls(n, minimum, maximum)), None)
        if stalled is None:
            continue
        scaled = "" if stalled == service.desired_count else " (a count its auto scaling reaches)"
        out.add(
            r.DEPLOYMENT_STALLS,
            service.logical_id,
            _properties("DeploymentConfiguration"),
            f"with {stalled} task{'s' if stalled != 1 else ''}{scaled}, a maximum percent of {maximum} starts none "
            f"beyond them and a minimum healthy percent of {minimum} stops none",
            percent=inputs.room_to_stop(stalled) if stalled == 1 else f"{inputs.room_to_stop(stalled)} or less",
            more_room=f"max_healthy_percent={inputs.room_to_start(stalled)} or more",
        )


def _check_runtime_variables(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        if instance is None or task.managed_allocation:
            continue
        for container in task.containers:
            devices = {i for i in container.neuron_devices if i is not None}
            if not devices:
                continue
            per_chip = instance.neuron_cores_per_chip
            held = {d * per_chip + k for d in devices for k in range(per_chip)}
            visible = container.environment.get("NEURON_RT_VISIBLE_CORES")
            location = _in_container(container, "Environment")
            if isinstance(visible, str):
                cores = inputs.parse_cores(visible)
                if cores is None or not cores <= held:
                    out.add(
                        r.SLICE_RUNTIME_VARIABLE,
                        task.logical_id,
                        location,
                        f"NEURON_RT_VISIBLE_CORES={visible} but the container maps {_devices_text(devices)}, which "
                        f"hold cores {format_index_runs(held)}",
                        container=container,
                        cores=len(held),
                    )
            number = container.environment.get("NEURON_RT_NUM_CORES")
            if isinstance(number, str | int) and not isinstance(number, bool):
                text = str(number)
                if not text.isdigit() or not 1 <= int(text) <= len(held):
                    out.add(
                        r.SLICE_RUNTIME_VARIABLE,
                        task.logical_id,
                        location,
                        f"NEURON_RT_NUM_CORES={text} but the container's devices hold {len(held)} NeuronCores",
                        container=container,
                        cores=len(held),
                    )


def _check_pinned(t: EcsTemplate, out: _Report) -> None:
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
        out.add(r.UNPINNED_MANUAL_TASK, task.logical_id, _properties("PlacementConstraints"), what)


def _service_pins_one_type(t: EcsTemplate, service: Service) -> bool:
    if service.pinned_types and len(service.pinned_types) == 1:
        return True
    capacities = t.service_capacities(service)
    return bool(capacities) and all(c.single_type for c in capacities or ())


def _check_copies(t: EcsTemplate, out: _Report) -> None:
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
            _properties("PlacementConstraints"),
            f"its tasks map {_devices_text(task.devices)} and nothing keeps two of them off one instance "
            "(no distinctInstance; a rolling deployment alone starts a second copy)",
            instance_type=instance.name if instance else "the instance",
        )


def _service_label(t: EcsTemplate, service: Service) -> str:
    return t.path_of(service.logical_id)


def _check_shared_devices(t: EcsTemplate, out: _Report) -> None:
    services = [s for s in t.services.values() if s.task_definition in t.task_definitions]
    for first, second in combinations(services, 2):
        a = t.task_definitions[first.task_definition or ""]
        b = t.task_definitions[second.task_definition or ""]
        if not t.could_share_instances(first, second):
            continue
        problem = None
        if a.manual_mapping and b.manual_mapping and a.devices & b.devices:
            same = " (the same task definition)" if a.logical_id == b.logical_id else ""
            problem = f"both map {_devices_text(a.devices & b.devices)}{same} and can land on one instance"
        elif (a.managed_allocation and b.manual_mapping) or (a.manual_mapping and b.managed_allocation):
            manual = a if a.manual_mapping else b
            problem = (
                f"share a capacity where one maps {_devices_text(manual.devices)} by hand and the other asks for "
                "NeuronDevice = ALL, which ECS hands every device, those included"
            )
        if problem:
            out.add(
                r.SHARED_DEVICE,
                second.logical_id,
                _properties("TaskDefinition"),
                f"it and {_service_label(t, first)} {problem}",
                first=_service_label(t, first),
                other=_service_label(t, second),
            )


def _check_container_totals(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if task.memory is not None:
            reserved = sum(c.memory_reservation or c.memory or 0 for c in task.containers)
            largest = max((c.memory or 0 for c in task.containers), default=0)
            if reserved > task.memory or largest > task.memory:
                amount = max(reserved, largest)
                out.add(
                    r.CONTAINERS_EXCEED_TASK,
                    task.logical_id,
                    _properties("ContainerDefinitions"),
                    f"containers reserve {amount} MiB of memory, the task has {task.memory} MiB",
                    field="memory",
                    limit=f"{task.memory} MiB",
                )
        if task.cpu is not None:
            reserved = sum(c.cpu or 0 for c in task.containers)
            if reserved > task.cpu:
                out.add(
                    r.CONTAINERS_EXCEED_TASK,
                    task.logical_id,
                    _properties("ContainerDefinitions"),
                    f"containers reserve {reserved} CPU units, the task has {task.cpu}",
                    field="cpu",
                    limit=f"{task.cpu} CPU units",
                )


def _check_task_memory(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if not task.is_neuron or task.memory is not None:
            continue
        bare = [c.name for c in task.containers if not (c.memory or c.memory_reservation)]
        if bare:
            out.add(
                r.NO_TASK_MEMORY,
                task.logical_id,
                _properties(),
                f"no task-level memory, and containers {bare} set neither memory nor memoryReservation",
            )


def _check_intent(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        declared = task.intent.get("neuronContainers")
        if not isinstance(declared, list):
            continue
        by_name = {c.name: c for c in task.containers}
        for name in declared:
            container = by_name.get(name) if isinstance(name, str) else None
            if container is None:
                continue
            if task.intent.get("allocation") == "managed" and not container.wants_all_neuron_devices:
                out.add(
                    r.NEURON_CONTAINER_STRIPPED,
                    task.logical_id,
                    _in_container(container, "ResourceRequirements"),
                    "the Neuron container of a managed task definition no longer asks for NeuronDevice = ALL",
                    container=container,
                    field="ResourceRequirements",
                )
            if task.intent.get("allocation") == "manual" and not container.maps_neuron_devices:
                out.add(
                    r.NEURON_CONTAINER_STRIPPED,
                    task.logical_id,
                    _in_container(container, "LinuxParameters"),
                    "the Neuron container of a manual task definition maps no /dev/neuron device",
                    container=container,
                    field="LinuxParameters.Devices",
                )


# --- capacity -----------------------------------------------------------------------------------


def _neuron_launch_templates(t: EcsTemplate) -> Iterator[tuple[str, NeuronInstanceType]]:
    for launch_template in t.launch_templates.values():
        instance = NeuronInstanceType.find(launch_template.instance_type or "")
        if instance is not None:
            yield launch_template.logical_id, instance


def _check_inf1_on_managed_instances(t: EcsTemplate, out: _Report) -> None:
    for capacity in t.capacities.values():
        if capacity.kind != "managed-instances":
            continue
        location = _properties("ManagedInstancesProvider", "InstanceLaunchTemplate", "InstanceRequirements")
        if "inferentia" in capacity.accelerators:
            out.add(r.INF1_ON_MANAGED_INSTANCES, capacity.logical_id, location, "accelerator 'inferentia' (Inf1)")
        for pattern in capacity.patterns:
            matches = NeuronInstanceType.matching(pattern)
            if matches and all(m.accelerator == "inferentia" for m in matches):
                out.add(
                    r.INF1_ON_MANAGED_INSTANCES,
                    capacity.logical_id,
                    location,
                    f"instance type {pattern!r} selects Inf1",
                )


def _check_group_bounds(t: EcsTemplate, out: _Report) -> None:
    from neuron_constructs.checks.cfn_template import whole_number

    for logical_id, group in t.groups.items():
        types = t.group_instance_types(group)
        if not types or not all(NeuronInstanceType.find(n) for n in types):
            continue
        properties = t.properties(group)
        low, high = whole_number(properties.get("MinSize")), whole_number(properties.get("MaxSize"))
        if low is not None and high is not None and (low < 0 or high < 1 or low > high):
            out.add(r.CAPACITY_SIZE, logical_id, _properties("MaxSize"), f"MinSize {low}, MaxSize {high}")


def _check_neuron_ami(t: EcsTemplate, out: _Report) -> None:
    for logical_id, instance in _neuron_launch_templates(t):
        parameter = t.launch_templates[logical_id].image_parameter
        if parameter and STANDARD_ECS_AMI_PARAMETERS.match(parameter) and not NEURON_AMI_PARAMETERS.match(parameter):
            out.add(
                r.NEURON_TYPE_WITHOUT_NEURON_AMI,
                logical_id,
                _properties("LaunchTemplateData", "ImageId"),
                f"{instance.name} boots the standard ECS AMI from {parameter}",
                instance_type=instance.name,
            )


# --- slices -------------------------------------------------------------------------------------


def _lands_on(t: EcsTemplate, service: Service, capacity: Capacity) -> bool:
    if service.capacities is not None:
        return capacity.logical_id in service.capacities
    if service.fargate:
        return False
    types = t.service_types(service)
    return capacity.single_type is None or types is None or capacity.single_type in types


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
        device_sets = [t.task_definitions[s.task_definition or ""].devices for s in slices]
        disjoint = all(not (a & b) for a, b in combinations(device_sets, 2))
        if len(slices) < 2 or not disjoint or frozenset().union(*device_sets) != frozenset(range(instance.chips)):
            continue
        others = [s for s in on_it if s not in slices and not s.daemon]
        yield capacity, slices, others


def _check_sliced_capacity(t: EcsTemplate, out: _Report) -> None:
    for capacity, slices, others in _sliced_groups(t):
        if not others:
            continue
        paths = [t.path_of(s.logical_id) for s in slices]
        owner = "/".join(_common_prefix([p.split("/") for p in paths])) or "the sliced service"
        for other in others:
            out.add(
                r.SLICED_CAPACITY_SHARED,
                other.logical_id,
                _properties("CapacityProviderStrategy"),
                f"it runs on {t.path_of(capacity.logical_id)}, whose {len(slices)} slice services ({', '.join(paths)}) "
                + ("hold every chip" if _holds_every_chip(t, capacity, slices) else "are one fleet that owns it"),
                sliced=owner,
                other=t.path_of(other.logical_id),
            )


def _fleet_of(t: EcsTemplate, service: Service) -> str | None:
    """The fleet (or sliced service) path the library recorded on the service's task definition, if any."""
    fleet = t.task_definitions[service.task_definition or ""].intent.get("fleet")
    return fleet if isinstance(fleet, str) else None


def _holds_every_chip(t: EcsTemplate, capacity: Capacity, slices: Sequence[Service]) -> bool:
    instance = NeuronInstanceType.find(capacity.single_type or "")
    held = frozenset().union(*(t.task_definitions[s.task_definition or ""].devices for s in slices))
    return instance is not None and held == frozenset(range(instance.chips))


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


def _check_slice_host_ports(t: EcsTemplate, out: _Report) -> None:
    """A sliced service's slices are one service's replicas, all on every instance: host ports stay dynamic."""
    for _capacity, slices, _others in _sliced_groups(t):
        for service in slices:
            ports = sorted(_fixed_host_ports(t, service))
            if ports:
                task = service.task_definition or service.logical_id
                out.add(
                    r.SLICE_HOST_PORT,
                    task,
                    _properties("ContainerDefinitions"),
                    f"host port {', '.join(map(str, ports))} of a slice that runs on every instance beside the other "
                    f"{len(slices) - 1} slices",
                )


# --- warnings ------------------------------------------------------------------------------------


def _check_topology(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        devices = sorted(task.devices)
        if instance is None or not devices or any(i >= instance.chips for i in devices):
            continue
        if not inputs.device_topology_warning("", instance, devices):
            continue  # (the construct path is looked up only for a warning)
        warning = inputs.device_topology_warning(t.path_of(task.logical_id), instance, devices)
        if warning:
            out.findings.append(
                Finding(r.DEVICE_TOPOLOGY, task.logical_id, ("Resources", task.logical_id, "Properties"), warning)
            )


def _check_root_volume(t: EcsTemplate, out: _Report) -> None:
    for logical_id, _instance in _neuron_launch_templates(t):
        size = t.launch_templates[logical_id].root_volume_gib
        if size is not None and size < 100:
            out.add(
                r.SMALL_ROOT_VOLUME,
                logical_id,
                _properties("LaunchTemplateData", "BlockDeviceMappings"),
                f"root volume of {size} GiB",
            )


def _check_memory_near_total(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        if instance is None or task.memory is None or not task.manual_mapping:
            continue
        if instance.schedulable_memory_mib < task.memory <= instance.memory_mib:
            out.add(
                r.MEMORY_NEAR_INSTANCE_TOTAL,
                task.logical_id,
                _properties("Memory"),
                f"memory {task.memory} MiB is within 10 % of {instance.name}'s {instance.memory_mib} MiB",
                nominal_mib=instance.memory_mib,
            )


def _check_declared_without_container(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if task.intent and task.intent.get("neuronContainers") == []:
            out.add(r.NO_NEURON_CONTAINER, task.logical_id, _properties(), "no container has Neuron devices")


def _check_pinned_ami(t: EcsTemplate, out: _Report) -> None:
    for logical_id, instance in _neuron_launch_templates(t):
        template = t.launch_templates[logical_id]
        parameter = template.image_parameter
        if parameter and NEURON_AMI_PARAMETERS.match(parameter):
            continue
        if parameter and STANDARD_ECS_AMI_PARAMETERS.match(parameter):
            continue  # NEURON030
        if template.image_literal or parameter:
            out.add(
                r.PINNED_AMI,
                logical_id,
                _properties("LaunchTemplateData", "ImageId"),
                f"{instance.name} boots {template.image_literal or parameter}",
            )


def _check_host_network(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        if task.is_neuron and task.network_mode == "host":
            out.add(
                r.HOST_NETWORK,
                task.logical_id,
                _properties("NetworkMode"),
                "the host network mode gives the containers the instance's network and its instance role",
            )


def _public_subnets(t: EcsTemplate) -> set[str]:
    """Subnets that give instances public addresses or route 0.0.0.0/0 to an internet gateway."""
    from neuron_constructs.checks.cfn_template import ref_target

    def of(kind: str) -> dict[str, dict[str, Any]]:
        return {k: t.properties(v) for k, v in t.resources.items() if v.get("Type") == kind}

    gateways = set(of("AWS::EC2::InternetGateway"))
    to_internet = {
        ref_target(route.get("RouteTableId"))
        for route in of("AWS::EC2::Route").values()
        if route.get("DestinationCidrBlock") == "0.0.0.0/0"
        and (ref_target(route.get("GatewayId")) in gateways or str(route.get("GatewayId", "")).startswith("igw-"))
    }
    public = {k for k, v in of("AWS::EC2::Subnet").items() if v.get("MapPublicIpOnLaunch") in (True, "true")}
    public |= {
        str(ref_target(a.get("SubnetId")))
        for a in of("AWS::EC2::SubnetRouteTableAssociation").values()
        if ref_target(a.get("RouteTableId")) in to_internet
    }
    return public


def _check_public_subnets(t: EcsTemplate, out: _Report) -> None:
    from neuron_constructs.checks.cfn_template import ref_target

    public = _public_subnets(t)
    for capacity in t.capacities.values():
        chosen = [t.path_of(str(ref_target(s))) for s in capacity.subnets if ref_target(s) in public]
        if chosen:
            out.add(
                r.PUBLIC_SUBNETS,
                capacity.group or capacity.logical_id,
                _properties(),
                f"it launches into public subnets {chosen}",
            )


def _check_secrets(t: EcsTemplate, out: _Report) -> None:
    for task in t.task_definitions.values():
        for container in task.containers:
            for name, value in container.environment.items():
                if secret_like(name) and value not in (None, ""):
                    out.add(
                        r.SECRET_IN_ENVIRONMENT,
                        task.logical_id,
                        _in_container(container, "Environment"),
                        f"environment variable {name} holds its value in plain text",
                        container=container,
                        name=name,
                    )


def _check_metadata_options(t: EcsTemplate, out: _Report) -> None:
    from neuron_constructs.checks.cfn_template import whole_number

    ecs_groups = {c.group for c in t.capacities.values() if c.group}
    chosen = [t.group_launch_template(t.groups[g]) for g in ecs_groups if g in t.groups]
    chosen += [t.launch_templates[lid] for lid, _ in _neuron_launch_templates(t)]
    templates = {x.logical_id: x for x in chosen if x is not None}
    for template in templates.values():
        options = template.metadata_options or {}
        tokens, hops = options.get("HttpTokens"), whole_number(options.get("HttpPutResponseHopLimit"))
        if tokens != "required" or hops != 1:
            out.add(
                r.METADATA_REACHABLE,
                template.logical_id,
                _properties("LaunchTemplateData", "MetadataOptions"),
                f"HttpTokens {tokens or 'unset'}, HttpPutResponseHopLimit {hops or 'unset'}",
            )


# --- registry ------------------------------------------------------------------------------------

TEMPLATE_CHECKS: dict[str, Callable[[EcsTemplate, _Report], None]] = {
    r.UNKNOWN_INSTANCE_TYPE.id: _check_unknown_type,
    r.INF1_ON_MANAGED_INSTANCES.id: _check_inf1_on_managed_instances,
    r.CAPACITY_SIZE.id: _check_group_bounds,
    r.ONE_NEURON_CONTAINER.id: _check_one_neuron_container,
    r.MIXED_DEVICE_MODES.id: _check_mixed_modes,
    r.MANAGED_INSTANCES_FIELD.id: _check_managed_instances_fields,
    r.MANAGED_ALLOCATION_CAPACITY.id: _check_managed_allocation_capacity,
    r.DEVICE_INDEX_RANGE.id: _check_device_range,
    r.DUPLICATE_DEVICE.id: _check_duplicate_devices,
    r.TASK_EXCEEDS_INSTANCE.id: _check_task_size,
    r.NEURON_CONTAINER_RESOURCES.id: _check_other_accelerators,
    r.NO_MATCHING_CAPACITY.id: _check_capacity_fits,
    r.SLICES_EXCEED_CAPACITY.id: _check_distinct_instance_count,
    r.DEPLOYMENT_WITHOUT_ROOM.id: _check_deployment_room,
    r.DEPLOYMENT_STALLS.id: _check_deployment_stalls,
    r.UNDECLARED_DEVICE.id: _check_undeclared_devices,
    r.SLICE_HOST_PORT.id: _check_slice_host_ports,
    r.SLICE_RUNTIME_VARIABLE.id: _check_runtime_variables,
    r.SLICED_CAPACITY_SHARED.id: _check_sliced_capacity,
    r.UNPINNED_MANUAL_TASK.id: _check_pinned,
    r.COPIES_SHARE_INSTANCE.id: _check_copies,
    r.SHARED_DEVICE.id: _check_shared_devices,
    r.CONTAINERS_EXCEED_TASK.id: _check_container_totals,
    r.NO_TASK_MEMORY.id: _check_task_memory,
    r.NEURON_CONTAINER_STRIPPED.id: _check_intent,
    r.NEURON_TYPE_WITHOUT_NEURON_AMI.id: _check_neuron_ami,
    r.DEVICE_TOPOLOGY.id: _check_topology,
    r.SMALL_ROOT_VOLUME.id: _check_root_volume,
    r.MEMORY_NEAR_INSTANCE_TOTAL.id: _check_memory_near_total,
    r.NO_NEURON_CONTAINER.id: _check_declared_without_container,
    r.PINNED_AMI.id: _check_pinned_ami,
    r.HOST_NETWORK.id: _check_host_network,
    r.PUBLIC_SUBNETS.id: _check_public_subnets,
    r.SECRET_IN_ENVIRONMENT.id: _check_secrets,
    r.METADATA_REACHABLE.id: _check_metadata_options,
}
"""One check per rule checked on the template, by rule id."""


def check_template(
    template: LoadedTemplate | dict[str, Any],
    *,
    name: str = "template",
    severities: Sequence[str] = ("error", "warning"),
    only: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    construct_paths: Callable[[str], str | None] | None = None,
) -> list[Finding]:
    """Every finding of the template checks on one template, errors first, in template order.

    ``severities`` selects errors and/or warnings; ``only`` and ``ignore`` select rule ids;
    ``construct_paths`` maps a logical id to its construct path where the template has no
    ``aws:cdk:path`` metadata. A resource's ``Metadata.cfn-lint.config.ignore_checks`` silences
    rule ids (or their cfn-lint ids) for that resource.
    """
    loaded = template if isinstance(template, LoadedTemplate) else LoadedTemplate(template)
    model = EcsTemplate(loaded, name=name, construct_paths=construct_paths)
    return [replace(f, template=name) for f in _run(model, severities, only, ignore)]


def check_templates(
    templates: Mapping[str, LoadedTemplate | dict[str, Any]],
    *,
    severities: Sequence[str] = ("error", "warning"),
    only: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    construct_paths: Callable[[str, str], str | None] | None = None,
) -> list[Finding]:
    """The template checks on the templates of one app at once (stacks that reference each other's
    exports), each finding naming its template and its logical id there.

    ``construct_paths(template, logical_id)`` maps to construct paths as in :func:`check_template`.
    """
    if len(templates) == 1:
        ((name, template),) = templates.items()
        paths = (lambda logical_id: construct_paths(name, logical_id)) if construct_paths else None
        return check_template(
            template, name=name, severities=severities, only=only, ignore=ignore, construct_paths=paths
        )
    plain = {n: (t.template if isinstance(t, LoadedTemplate) else t) for n, t in templates.items()}
    combined, origin = combine_templates(plain)

    def combined_paths(logical_id: str) -> str | None:
        return construct_paths(*origin[logical_id]) if construct_paths and logical_id in origin else None

    model = EcsTemplate(LoadedTemplate(combined), construct_paths=combined_paths, origin=origin)
    found: list[Finding] = []
    for finding in _run(model, severities, only, ignore):
        name, logical_id = origin.get(finding.logical_id, ("template", finding.logical_id))
        location = ("Resources", logical_id, *finding.location[2:])
        found.append(replace(finding, logical_id=logical_id, location=location, template=name))
    order = {name: i for i, name in enumerate(templates)}
    return sorted(found, key=lambda f: (f.severity != "error", order.get(f.template, 0)))


def _run(
    model: EcsTemplate, severities: Sequence[str], only: Iterable[str] | None, ignore: Iterable[str]
) -> list[Finding]:
    report = _Report(model)
    wanted = set(only) if only is not None else None
    skipped = set(ignore)
    for rule_id, check in TEMPLATE_CHECKS.items():
        rule = r.BY_ID[rule_id]
        if rule.severity in severities and (wanted is None or rule_id in wanted) and rule_id not in skipped:
            check(model, report)
    order = {lid: i for i, lid in enumerate(model.resources)}
    findings = [
        f for f in report.findings if not ({f.rule.id, f.rule.cfn_lint_id} & set(model.ignored_checks(f.logical_id)))
    ]
    return sorted(findings, key=lambda f: (f.severity != "error", order.get(f.logical_id, 0)))
