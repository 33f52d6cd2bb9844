"""The rules checked at the call that breaks them: pure functions of the values a construct is given.

Each function raises the :class:`~neuron_constructs.knowledge.rules.Rule`'s
:class:`~neuron_constructs.knowledge.errors.NeuronConfigurationError` naming the construct path it is
given, or returns the text of a warning for the caller to attach. The constructs call them before they
build anything; the template checks (:mod:`neuron_constructs.checks.template_checks`) apply the same rules
to finished templates. No AWS CDK import here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from neuron_constructs.knowledge.catalog import DeviceTopology, NeuronInstanceType
from neuron_constructs.knowledge.cores import LOGICAL_CORE_VARIABLE, parse_core_list
from neuron_constructs.knowledge.rules import (
    CAPACITY_SIZE,
    DEPLOYMENT_STALLS,
    DEVICE_INDEX_RANGE,
    DEVICE_TOPOLOGY,
    DUPLICATE_DEVICE,
    INF1_ON_MANAGED_INSTANCES,
    LOGICAL_CORES,
    MEMORY_NEAR_INSTANCE_TOTAL,
    MODEL_NAME,
    NO_DEVICES,
    NON_NEURON_MANAGED_INSTANCES,
    SLICE_HOST_PORT,
    SLICE_RUNTIME_VARIABLE,
    SLICE_SIZE,
    SLICES_EXCEED_CAPACITY,
    SNAPSHOT_REMOVAL,
    TASK_EXCEEDS_INSTANCE,
)

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+=-]{0,254}")

MANAGED_INSTANCES_ACCELERATORS = ("inferentia2", "trainium", "trainium2")
"""Neuron accelerator names ECS Managed Instances can select (Inf1 excluded)."""


def instance_type_patterns(instance_types: Sequence[str | NeuronInstanceType]) -> tuple[str, ...]:
    """``allowedInstanceTypes`` patterns: catalog entries by name, strings as given."""
    return tuple(t.name if isinstance(t, NeuronInstanceType) else t for t in instance_types)


def check_managed_instances_selection(
    path: str, accelerators: Sequence[str], instance_types: Sequence[str | NeuronInstanceType]
) -> tuple[NeuronInstanceType, ...]:
    """NEURON002/003: the catalog types a Managed Instances capacity may launch.

    Returns the catalog entries both selectors admit; raises when Inf1 is
    named (by accelerator or by a pattern that only Inf1 matches), when a
    selector admits no Neuron type, or when a pattern is not lowercase (EC2
    matches instance types as written, and they are lowercase).
    """
    allowed = ", ".join(MANAGED_INSTANCES_ACCELERATORS)
    if not accelerators or not instance_types:
        raise NON_NEURON_MANAGED_INSTANCES.error(path, "an empty accelerator or instance-type list", allowed=allowed)
    for name in accelerators:
        if name == "inferentia":
            raise INF1_ON_MANAGED_INSTANCES.error(path, "accelerator 'inferentia' (Inf1) was requested")
        if name not in MANAGED_INSTANCES_ACCELERATORS:
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path, f"accelerator {name!r} is not a Neuron accelerator", allowed=allowed
            )
    admitted: list[NeuronInstanceType] = []
    for pattern in instance_type_patterns(instance_types):
        if pattern != pattern.strip().lower():
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path,
                f"instance type pattern {pattern!r} is not lowercase and unpadded as EC2 matches it",
                allowed=allowed,
            )
        matches = NeuronInstanceType.matching(pattern)
        if matches and all(m.accelerator == "inferentia" for m in matches):
            raise INF1_ON_MANAGED_INSTANCES.error(path, f"instance type {pattern!r} selects Inf1")
        usable = [m for m in matches if m.accelerator in accelerators]
        if not usable:
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path,
                f"instance type {pattern!r} matches no catalog type with accelerators {list(accelerators)}",
                allowed=allowed,
            )
        admitted.extend(u for u in usable if u not in admitted)
    return tuple(admitted)


def check_capacity_size(path: str, min_capacity: int, max_capacity: int) -> None:
    """NEURON004."""
    if min_capacity < 0 or max_capacity < 1 or min_capacity > max_capacity:
        raise CAPACITY_SIZE.error(path, f"min_capacity={min_capacity}, max_capacity={max_capacity}")


def check_device_indices(path: str, instance: NeuronInstanceType, devices: Iterable[int]) -> tuple[int, ...]:
    """NEURON009/010/011: chip indices exist on the type and are distinct."""
    chosen = tuple(devices)
    if not chosen:
        raise NO_DEVICES.error(path, "devices is empty")
    seen: set[int] = set()
    for index in chosen:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < instance.chips:
            raise DEVICE_INDEX_RANGE.error(
                path,
                f"device {index!r} does not exist on {instance.name}",
                last=instance.chips - 1,
                instance_type=instance.name,
                chips=instance.chips,
            )
        if index in seen:
            raise DUPLICATE_DEVICE.error(path, f"device {index} is listed twice in {list(chosen)}")
        seen.add(index)
    return chosen


def check_core_indices(path: str, instance: NeuronInstanceType, lnc: int, cores: Iterable[int]) -> tuple[int, ...]:
    """NEURON019: ``cores`` are distinct NeuronCores of ``instance`` at ``lnc`` (host numbering), at least one."""
    total = instance.cores(lnc)
    chosen = tuple(cores)
    if not chosen or any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < total for c in chosen):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"cores={list(chosen)!r} but {instance.name} has NeuronCores 0-{total - 1}"
            + (f" at LNC={lnc}" if len(instance.lnc_options) > 1 else ""),
            cores=total,
        )
    if len(set(chosen)) != len(chosen):
        raise SLICE_RUNTIME_VARIABLE.error(path, f"cores={list(chosen)} names a core twice", cores=total)
    if max(chosen) - min(chosen) + 1 != len(chosen):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"cores={sorted(chosen)} is not a contiguous range, which NEURON_RT_VISIBLE_CORES must name",
            cores=total,
        )
    return chosen


def device_topology_warning(path: str, instance: NeuronInstanceType, devices: Sequence[int]) -> str | None:
    """NEURON101: the warning text for a set the topology rules never hand out, else ``None``."""
    if instance.is_valid_device_set(devices):
        return None
    count = len(devices)
    if instance.topology is DeviceTopology.TORUS_2D:
        count = min((c for c in (1, 4, 8, 16) if c >= count), default=instance.chips)
    return DEVICE_TOPOLOGY.message(
        path,
        f"devices {sorted(devices)} on {instance.name} ({instance.topology.value} topology)",
        suggestion=list(range(count)),
    )


def check_task_size(
    path: str,
    instance: NeuronInstanceType,
    cpu: int | None,
    memory_mib: int | None,
    *,
    cpu_from_containers: bool = False,
    memory_from_containers: bool = False,
) -> str | None:
    """NEURON012 (error beyond the instance) and NEURON103 (warning text near its memory total).

    ``*_from_containers``: the task sets no size, so the value is what its containers ask for."""
    cpu_text = f"its containers' cpu ({cpu} in total)" if cpu_from_containers else f"cpu={cpu}"
    memory_text = (
        f"its containers' memory_limit_mib/memory_reservation_mib ({memory_mib} MiB in total)"
        if memory_from_containers
        else f"memory_mib={memory_mib}"
    )
    if cpu is not None and cpu > instance.cpu_units:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"{cpu_text} exceeds the {instance.cpu_units} CPU units of {instance.name}",
            limit=instance.cpu_units,
            unit="CPU units",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.memory_mib:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"{memory_text} exceeds the {instance.memory_mib} MiB of {instance.name}",
            limit=instance.memory_mib,
            unit="MiB",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.schedulable_memory_mib:
        return MEMORY_NEAR_INSTANCE_TOTAL.message(
            path,
            f"{memory_text} is within 10 % of {instance.name}'s {instance.memory_mib} MiB",
            nominal_mib=instance.memory_mib,
        )
    return None


def check_slice_size(path: str, instance: NeuronInstanceType, devices_per_task: int) -> int:
    """NEURON016: the number of slices ``devices_per_task`` cuts ``instance`` into."""
    allowed = instance.slice_sizes()
    if devices_per_task not in allowed:
        raise SLICE_SIZE.error(
            path,
            f"devices_per_task={devices_per_task!r} does not cut the {instance.chips} chips of {instance.name} "
            "into equal slices its topology allows",
            size_name="devices_per_task",
            allowed=list(allowed),
            instance_type=instance.name,
        )
    return instance.chips // devices_per_task


def check_core_slice_size(path: str, instance: NeuronInstanceType, cores_per_task: int, lnc: int) -> int:
    """NEURON016: the number of slices ``cores_per_task`` cuts ``instance`` into at ``lnc``: it must divide a
    chip's (logical) cores, so that every slice stays on one chip and every core is used."""
    per_chip = instance.cores_per_chip(lnc)
    allowed = [k for k in range(1, per_chip + 1) if per_chip % k == 0]
    if cores_per_task not in allowed:
        raise SLICE_SIZE.error(
            path,
            f"cores_per_task={cores_per_task!r} does not cut the {per_chip} NeuronCores of a {instance.name} chip"
            + (f" at LNC={lnc}" if len(instance.lnc_options) > 1 else "")
            + " into equal slices",
            size_name="cores_per_task",
            allowed=allowed,
            instance_type=instance.name,
        )
    return instance.cores(lnc) // cores_per_task


def check_lnc(path: str, instance: NeuronInstanceType, lnc: int | None) -> int:
    """NEURON064: ``lnc`` (``None``: the type's default) is a setting ``instance``'s chips take; returns it."""
    if lnc is None:
        return instance.default_lnc
    if isinstance(lnc, bool) or lnc not in instance.lnc_options:
        only = (
            f"{instance.name} takes LNC {' or '.join(map(str, instance.lnc_options))}"
            if len(instance.lnc_options) > 1
            else f"only Trainium2 takes a logical NeuronCore setting; {instance.name} has one, 1"
        )
        raise LOGICAL_CORES.error(path, f"lnc={lnc!r}: {only}")
    return lnc


def check_slice_capacity(path: str, instances: int, max_capacity: int, capacity: str) -> None:
    """NEURON017: ``instances`` tasks per slice fit the Auto Scaling group's ``max_capacity``."""
    if not 0 <= instances <= max_capacity:
        raise SLICES_EXCEED_CAPACITY.error(
            path,
            f"instances={instances} but {capacity} launches 0 to {max_capacity} instances",
            capacity=capacity,
            instances=instances,
            max_capacity=max_capacity,
        )


def check_slice_host_ports(path: str, network_mode: str, port_mappings: Iterable[tuple[int, int | None]]) -> None:
    """NEURON018: no fixed host port where slices share the network (``network_mode``: bridge, host, awsvpc)."""
    for container_port, host_port in port_mappings:
        if network_mode == "host":
            raise SLICE_HOST_PORT.error(
                path, f"container port {container_port} is a host port in the host network mode"
            )
        if network_mode == "bridge" and host_port:
            raise SLICE_HOST_PORT.error(path, f"host_port={host_port} in the bridge network mode")


def check_slice_environment(path: str, environment: Mapping[str, str], cores_per_slice: int) -> None:
    """NEURON019: no ``NEURON_RT_VISIBLE_CORES`` (it differs per slice), ``NEURON_RT_NUM_CORES`` within a slice."""
    if "NEURON_RT_VISIBLE_CORES" in environment:
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"NEURON_RT_VISIBLE_CORES={environment['NEURON_RT_VISIBLE_CORES']} is the same in every slice, "
            "but each slice holds other cores",
            cores=cores_per_slice,
        )
    requested = environment.get("NEURON_RT_NUM_CORES")
    if requested is not None and (not requested.isdigit() or not 1 <= int(requested) <= cores_per_slice):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"NEURON_RT_NUM_CORES={requested} but a slice holds {cores_per_slice} NeuronCores",
            cores=cores_per_slice,
        )


def check_model_name(path: str, name: str, *, given_as: str = "model_name") -> str:
    """NEURON067: a name neuron-monitor takes as ``NEURON_PROCESS_TAG`` (up to 255 characters) and CloudWatch as a
    dimension value: 1 to 255 letters, digits and ``. _ - / : @ + =``, starting with a letter or digit."""
    if not _MODEL_NAME.fullmatch(name):
        raise MODEL_NAME.error(path, f"{given_as}={name!r} is not 1 to 255 such characters")
    return name


def environment_lnc(instance: NeuronInstanceType, environment: Mapping[str, str]) -> int:
    """The logical-core setting a container runs with: its ``NEURON_LOGICAL_NC_CONFIG`` where that is one the type
    takes, else the type's default (2 on Trainium2, else 1)."""
    stated = str(environment.get(LOGICAL_CORE_VARIABLE, ""))
    return int(stated) if stated.isdigit() and int(stated) in instance.lnc_options else instance.default_lnc


def check_runtime_cores(
    path: str, environment: Mapping[str, str], instance: NeuronInstanceType, devices: Iterable[int]
) -> None:
    """NEURON019 for one container per instance: ``NEURON_RT_VISIBLE_CORES`` only names cores of the mapped devices
    (host numbering, logical cores at the environment's ``NEURON_LOGICAL_NC_CONFIG``), ``NEURON_RT_NUM_CORES`` from 1
    to their count."""
    per_chip = instance.cores_per_chip(environment_lnc(instance, environment))
    held = {d * per_chip + k for d in devices for k in range(per_chip)}
    visible = environment.get("NEURON_RT_VISIBLE_CORES")
    if visible is not None:
        cores = parse_core_list(visible)
        if cores is None or not cores <= held:
            raise SLICE_RUNTIME_VARIABLE.error(
                path,
                f"NEURON_RT_VISIBLE_CORES={visible} but the container maps cores {min(held)}-{max(held)}",
                cores=len(held),
            )
    requested = environment.get("NEURON_RT_NUM_CORES")
    if requested is not None and (not requested.isdigit() or not 1 <= int(requested) <= len(held)):
        raise SLICE_RUNTIME_VARIABLE.error(
            path, f"NEURON_RT_NUM_CORES={requested} but the container maps {len(held)} NeuronCores", cores=len(held)
        )


MANAGED_INSTANCES_REJECTED_CONTAINER_FIELDS = {
    "docker_labels": "dockerLabels",
    "inference_accelerator_resources": "inferenceAccelerator resources",
}
NEURON_CONTAINER_FORBIDDEN_OPTIONS = ("gpu_count", "inference_accelerator_resources")


def room_to_stop(tasks: int) -> int:
    """The largest minimum healthy percent that lets ECS stop one of ``tasks`` tasks (rounded up, it stays below)."""
    return max(0, (tasks - 1) * 100 // tasks)


def room_to_start(tasks: int) -> int:
    """The smallest maximum percent that lets ECS start one task beyond ``tasks`` (rounded down, it reaches above)."""
    return -(-(tasks + 1) * 100 // tasks)


def deployment_stalls(tasks: int, minimum_healthy_percent: int, maximum_percent: int) -> bool:
    """NEURON040: with ``tasks`` desired, a rolling deployment can neither start a task nor stop one."""
    return tasks > 0 and tasks * maximum_percent // 100 <= tasks and -(-tasks * minimum_healthy_percent // 100) >= tasks


def check_deployment_percents(
    path: str,
    task_counts: Iterable[int],
    minimum: int,
    maximum: int,
    *,
    maximum_fixed: bool = False,
    minimum_set_by: str | None = None,
) -> None:
    """NEURON040 for every task count a service may run; ``maximum_fixed``: the caller cannot change the maximum
    (sliced services deploy with 100 %), so the other fix is more tasks; ``minimum_set_by``: the call that passed
    the minimum, for the message."""
    for tasks in task_counts:
        if deployment_stalls(tasks, minimum, maximum):
            upper = "the 100 % maximum slices deploy with" if maximum_fixed else f"max_healthy_percent={maximum}"
            passed = f" (passed to {minimum_set_by})" if minimum_set_by else ""
            raise DEPLOYMENT_STALLS.error(
                path,
                f"with {tasks} task{'s' if tasks != 1 else ''}, {upper} starts none beyond "
                f"{'them' if tasks != 1 else 'it'} and min_healthy_percent={minimum}{passed} stops none",
                percent=room_to_stop(tasks) if tasks == 1 else f"{room_to_stop(tasks)} or less",
                more_room=f"never run fewer than {tasks + 1} tasks"
                if maximum_fixed
                else f"max_healthy_percent={room_to_start(tasks)} or more",
            )


_SECRET_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
_NOT_A_SECRET_SUFFIX = ("_ARN", "_ID", "_NAME", "_PATH", "_FILE", "_URL", "_URI", "_REGION", "_ENDPOINT")
_NOT_A_SECRET_NAMES = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
"""Names that by convention hold a file path."""
_KEYS_THAT_ARE_NOT_SECRETS = frozenset({"PUBLIC", "S3", "CACHE", "OBJECT", "PARTITION", "SORT", "PRIMARY", "ROUTING"})
"""A word before ``KEY`` that makes it a name, not a credential (``MODEL_S3_KEY``, ``CACHE_KEY``)."""


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


def check_removal_policy(path: str, name: str, policy: str, what: str) -> None:
    """NEURON071: ``policy`` (a ``RemovalPolicy`` name) ``SNAPSHOT`` for ``what``, which CloudFormation cannot
    snapshot."""
    if policy == "SNAPSHOT":
        raise SNAPSHOT_REMOVAL.error(path, f"{name}=RemovalPolicy.SNAPSHOT for {what}", name=name)
