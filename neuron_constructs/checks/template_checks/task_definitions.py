"""Neuron devices and sizes in a task definition, each on its own."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from neuron_constructs.checks import inputs
from neuron_constructs.checks.cfn_template import (
    Capacity,
    EcsTemplate,
    TaskDefinition,
)
from neuron_constructs.checks.template_checks.report import (
    Check,
    Finding,
    TemplateReport,
    devices_text,
    in_container,
    in_properties,
)
from neuron_constructs.knowledge import engines, image_support
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import (
    LOGICAL_CORE_VARIABLE,
    VISIBLE_CORES_VARIABLE,
    cores_of_devices,
    parse_core_list,
)
from neuron_constructs.knowledge.devices import format_index_runs
from neuron_constructs.knowledge.numbers import parse_whole_number
from neuron_constructs.knowledge.rules import Rule


def _check_unknown_type(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if task.manual_mapping and task.pinned_types and len(task.pinned_types) == 1 and task.instance_type is None:
            (name,) = task.pinned_types
            from neuron_constructs.knowledge.catalog import closest_instance_types

            out.add(
                r.UNKNOWN_INSTANCE_TYPE,
                task.logical_id,
                in_properties("PlacementConstraints"),
                f"the task maps Neuron devices but is pinned to {name!r}, which is not a Neuron instance type",
                closest=", ".join(closest_instance_types(name)),
            )


def _check_one_neuron_container(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        wanting = [c.name for c in task.containers if c.wants_all_neuron_devices]
        if len(wanting) > 1:
            out.add(
                r.ONE_NEURON_CONTAINER,
                task.logical_id,
                in_properties("ContainerDefinitions"),
                f"containers {wanting} ask for NeuronDevice",
            )


def _check_mixed_modes(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.managed_allocation:
            continue
        wanting = [c.name for c in task.containers if c.wants_all_neuron_devices]
        for container in task.containers:
            if container.maps_neuron_devices:
                out.add(
                    r.MIXED_DEVICE_MODES,
                    task.logical_id,
                    in_container(container, "LinuxParameters", "Devices"),
                    f"container maps {list(container.neuron_device_paths)} while {wanting} ask for NeuronDevice",
                    container=container,
                )


def _check_device_range(t: EcsTemplate, out: TemplateReport) -> None:
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
                    in_container(container, "LinuxParameters", "Devices", beyond[0][0]),
                    f"{', '.join(p for _, p in beyond)} does not exist on "
                    f"{instance.name if instance else 'any Neuron instance'}",
                    container=container,
                    last=max(chips - 1, 0),
                    instance_type=instance.name if instance else "the instance type",
                    chips=chips,
                )


def _check_duplicate_devices(t: EcsTemplate, out: TemplateReport) -> None:
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
                    in_properties("ContainerDefinitions"),
                    f"/dev/neuron{index} is mapped {len(names)} times (containers {names})",
                )


def _check_undeclared_devices(t: EcsTemplate, out: TemplateReport) -> None:
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
                    in_properties("ContainerDefinitions"),
                    f"its containers map {devices_text(extra)}, outside the devices {sorted(known)} it was "
                    "declared with",
                    declared=devices_text(known),
                )


def _check_intent(t: EcsTemplate, out: TemplateReport) -> None:
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
                    in_container(container, "ResourceRequirements"),
                    "the Neuron container of a managed task definition no longer asks for NeuronDevice = ALL",
                    container=container,
                    field="ResourceRequirements",
                )
            if task.intent.get("allocation") == "manual" and not container.maps_neuron_devices:
                out.add(
                    r.NEURON_CONTAINER_STRIPPED,
                    task.logical_id,
                    in_container(container, "LinuxParameters"),
                    "the Neuron container of a manual task definition maps no /dev/neuron device",
                    container=container,
                    field="LinuxParameters.Devices",
                )


def _check_declared_without_container(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if task.intent and task.intent.get("neuronContainers") == []:
            out.add(r.NO_NEURON_CONTAINER, task.logical_id, in_properties(), "no container has Neuron devices")


def _check_topology(t: EcsTemplate, out: TemplateReport) -> None:
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


def _check_runtime_variables(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        if instance is None or task.managed_allocation:
            continue
        for container in task.containers:
            devices = {i for i in container.neuron_devices if i is not None}
            if not devices:
                continue
            lnc = task.lnc or instance.default_lnc
            per_chip = instance.cores_per_chip(lnc if lnc in instance.lnc_options else None)
            held = cores_of_devices(devices, per_chip)
            visible = container.environment.get(VISIBLE_CORES_VARIABLE)
            location = in_container(container, "Environment")
            if isinstance(visible, str):
                cores = parse_core_list(visible)
                at = f" at LNC={lnc}" if len(instance.lnc_options) > 1 else ""
                if cores is None or not cores <= held:
                    out.add(
                        r.SLICE_RUNTIME_VARIABLE,
                        task.logical_id,
                        location,
                        f"NEURON_RT_VISIBLE_CORES={visible} but the container maps {devices_text(devices)}, which "
                        f"hold cores {format_index_runs(held)}{at}",
                        container=container,
                        cores=len(held),
                    )
                elif max(cores) - min(cores) + 1 != len(cores):
                    out.add(
                        r.SLICE_RUNTIME_VARIABLE,
                        task.logical_id,
                        location,
                        f"NEURON_RT_VISIBLE_CORES={visible} is not one contiguous range, which the Neuron runtime "
                        "requires",
                        container=container,
                        cores=len(held),
                    )
            number = container.environment.get("NEURON_RT_NUM_CORES")
            if isinstance(number, str | int) and not isinstance(number, bool):
                text = str(number)
                count = parse_whole_number(text)
                if count is None or not 1 <= count <= len(held):
                    out.add(
                        r.SLICE_RUNTIME_VARIABLE,
                        task.logical_id,
                        location,
                        f"NEURON_RT_NUM_CORES={text} but the container's devices hold {len(held)} NeuronCores",
                        container=container,
                        cores=len(held),
                    )


def _check_logical_cores(t: EcsTemplate, out: TemplateReport) -> None:
    """NEURON064: ``NEURON_LOGICAL_NC_CONFIG`` only on Trainium2, and only 1 or 2."""
    for task in t.task_definitions.values():
        instance = task.instance_type
        for container in task.containers:
            stated = container.environment.get(LOGICAL_CORE_VARIABLE)
            if stated is None or instance is None:
                continue
            if str(stated) not in tuple(map(str, instance.lnc_options)):
                takes = (
                    f"{instance.name} takes {' or '.join(map(str, instance.lnc_options))}"
                    if len(instance.lnc_options) > 1
                    else f"only Trainium2 takes a logical NeuronCore setting, and {instance.name} is not one"
                )
                out.add(
                    r.LOGICAL_CORES,
                    task.logical_id,
                    in_container(container, "Environment"),
                    f"{LOGICAL_CORE_VARIABLE}={stated}: {takes}",
                    container=container,
                )


def _size(task: TaskDefinition) -> tuple[int | None, int | None]:
    """CPU units and MiB a task asks for: task-level values, else what its containers reserve."""
    cpu = task.cpu if task.cpu is not None else sum(c.cpu or 0 for c in task.containers) or None
    memory = task.memory
    if memory is None:
        memory = sum(c.memory_reservation or c.memory or 0 for c in task.containers) or None
    return cpu, memory


def _check_task_size(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        cpu, memory = _size(task)
        limits: list[tuple[NeuronInstanceType, str]] = []
        if task.manual_mapping and task.instance_type is not None:
            limits.append((task.instance_type, task.logical_id))
        for service in t.services_of(task.logical_id):
            capacities = t.service_capacities(service) or []
            kinds = ("managed-instances",) if task.managed_allocation else ("auto-scaling",)
            largest = _largest_admitted(c for c in capacities if c.kind in kinds)
            if largest is not None and all(largest.name != known.name for known, _ in limits):
                limits.append((largest, service.logical_id))
        for instance, where in limits:
            largest_note = "" if where == task.logical_id else " (the largest type its capacity admits)"
            if cpu is not None and cpu > instance.cpu_units:
                out.add(
                    r.TASK_EXCEEDS_INSTANCE,
                    task.logical_id,
                    in_properties("Cpu"),
                    f"cpu {cpu} exceeds the {instance.cpu_units} CPU units of {instance.name}{largest_note}",
                    limit=instance.cpu_units,
                    unit="CPU units",
                    instance_type=instance.name,
                )
            if memory is not None and memory > instance.memory_mib:
                out.add(
                    r.TASK_EXCEEDS_INSTANCE,
                    task.logical_id,
                    in_properties("Memory"),
                    f"memory {memory} MiB exceeds the {instance.memory_mib} MiB of {instance.name}{largest_note}",
                    limit=instance.memory_mib,
                    unit="MiB",
                    instance_type=instance.name,
                )


def _largest_admitted(capacities: Iterable[Capacity]) -> NeuronInstanceType | None:
    admitted = [t for c in capacities for t in c.admitted]
    return max(admitted, key=lambda t: (t.cpu_units, t.memory_mib)) if admitted else None


def _check_other_accelerators(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.is_neuron:
            continue
        if task.inference_accelerators:
            out.add(
                r.NEURON_CONTAINER_RESOURCES,
                task.logical_id,
                in_properties("InferenceAccelerators"),
                "InferenceAccelerators in a task that holds Neuron devices",
                field="InferenceAccelerators",
            )
        for container in task.containers:
            for kind in container.other_accelerators:
                out.add(
                    r.NEURON_CONTAINER_RESOURCES,
                    task.logical_id,
                    in_container(container, "ResourceRequirements"),
                    f"resourceRequirements ask for {kind} in a task that holds Neuron devices",
                    container=container,
                    field=f"the {kind} resource requirement",
                )


def _check_container_totals(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if task.memory is not None:
            reserved = sum(c.memory_reservation or c.memory or 0 for c in task.containers)
            largest = max((c.memory or 0 for c in task.containers), default=0)
            if reserved > task.memory or largest > task.memory:
                amount = max(reserved, largest)
                out.add(
                    r.CONTAINERS_EXCEED_TASK,
                    task.logical_id,
                    in_properties("ContainerDefinitions"),
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
                    in_properties("ContainerDefinitions"),
                    f"containers reserve {reserved} CPU units, the task has {task.cpu}",
                    field="cpu",
                    limit=f"{task.cpu} CPU units",
                )


def _check_task_memory(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.is_neuron or task.memory is not None:
            continue
        bare = [c.name for c in task.containers if not (c.memory or c.memory_reservation)]
        if bare:
            out.add(
                r.NO_TASK_MEMORY,
                task.logical_id,
                in_properties(),
                f"no task-level memory, and containers {bare} set neither memory nor memoryReservation",
            )


def _check_memory_near_total(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        instance = task.instance_type
        if instance is None or task.memory is None or not task.manual_mapping:
            continue
        if instance.schedulable_memory_mib < task.memory <= instance.memory_mib:
            out.add(
                r.MEMORY_NEAR_INSTANCE_TOTAL,
                task.logical_id,
                in_properties("Memory"),
                f"memory {task.memory} MiB is within 10 % of {instance.name}'s {instance.memory_mib} MiB",
                nominal_mib=instance.memory_mib,
            )


def _check_cache_variables(t: EcsTemplate, out: TemplateReport) -> None:
    """NEURON150 on the template: a compile cache variable set, by whatever made the template, for an image of the
    table whose engine does not read it (:mod:`neuron_constructs.knowledge.engines`)."""
    for task in t.task_definitions.values():
        for container in task.containers:
            found = image_support.table_image(container.image) if container.image else None
            engine = found[1].engine if found else None
            if engine is None:
                continue
            if engine.cache == engines.FILE_TIERS and COMPILE_CACHE_URL in container.environment:
                problem = f"{COMPILE_CACHE_URL} is set for an image of {engine.name}, which does not read it"
                fix = "set NEURON_LIBTORCH_REMOTE_CACHE to an NFS or FSx mount (CompileCache.in_new_file_system)"
            elif engine.cache == engines.S3_URL and REMOTE_CACHE in container.environment:
                problem = f"{REMOTE_CACHE} is set for an image of {engine.name}, which reads {COMPILE_CACHE_URL}"
                fix = f"set {COMPILE_CACHE_URL} to an s3:// URL (CompileCache.in_new_bucket)"
            else:
                continue
            out.add(
                r.CACHE_ENGINE_MISMATCH,
                task.logical_id,
                in_container(container, "Environment"),
                problem,
                container=container,
                fix=fix,
            )


COMPILE_CACHE_URL = "NEURON_COMPILE_CACHE_URL"
REMOTE_CACHE = "NEURON_LIBTORCH_REMOTE_CACHE"

CHECKS: dict[Rule, Check] = {
    r.UNKNOWN_INSTANCE_TYPE: _check_unknown_type,
    r.ONE_NEURON_CONTAINER: _check_one_neuron_container,
    r.MIXED_DEVICE_MODES: _check_mixed_modes,
    r.DEVICE_INDEX_RANGE: _check_device_range,
    r.DUPLICATE_DEVICE: _check_duplicate_devices,
    r.TASK_EXCEEDS_INSTANCE: _check_task_size,
    r.NEURON_CONTAINER_RESOURCES: _check_other_accelerators,
    r.SLICE_RUNTIME_VARIABLE: _check_runtime_variables,
    r.LOGICAL_CORES: _check_logical_cores,
    r.CONTAINERS_EXCEED_TASK: _check_container_totals,
    r.NO_TASK_MEMORY: _check_task_memory,
    r.UNDECLARED_DEVICE: _check_undeclared_devices,
    r.NEURON_CONTAINER_STRIPPED: _check_intent,
    r.DEVICE_TOPOLOGY: _check_topology,
    r.MEMORY_NEAR_INSTANCE_TOTAL: _check_memory_near_total,
    r.NO_NEURON_CONTAINER: _check_declared_without_container,
    r.CACHE_ENGINE_MISMATCH: _check_cache_variables,
}
"""This area's check of each rule."""
