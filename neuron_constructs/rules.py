"""Every ECS Neuron rule the library enforces, as data, with its checks.

Each :class:`Rule` is one entry: an id, the AWS sentence it enforces, the fix,
and where the sentence comes from. Errors raise
:class:`~neuron_constructs.errors.NeuronConfigurationError` at the call that
broke them (or fail ``cdk synth`` through ``node.add_validation`` when only the
finished task definition shows them); warnings become CDK warnings whose id a
user can acknowledge with ``Validations.of(scope).acknowledge(...)``.

The constructs call the check functions below; the README's rule table is
generated from :data:`RULES`. No AWS CDK import here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from neuron_constructs.catalog import DeviceTopology, NeuronInstanceType, closest_instance_types
from neuron_constructs.errors import NeuronConfigurationError

__all__ = ["RULES", "Rule"]

ECS_NEURON_PAGE = "ECS guide: task definitions for AWS Neuron workloads"
ECS_MI_PARAMETERS_PAGE = "ECS guide: task definition parameters for Managed Instances"
NEURON_SCHEDULER = "Neuron scheduler extension (aws-neuron-sdk scheduler.rst)"


@dataclass(frozen=True)
class Rule:
    """One ECS Neuron rule: what AWS says, and what to change when it is broken."""

    id: str
    title: str
    aws_rule: str
    fix: str
    source: str
    severity: Literal["error", "warning"] = "error"

    @property
    def warning_id(self) -> str:
        """The id a CDK warning of this rule carries, for ``acknowledge``."""
        return f"neuron-constructs:{self.id}"

    def message(self, construct_path: str, problem: str, **fix_values: object) -> str:
        """``<path>: <problem> [<id>: <rule>] Fix: <fix>``."""
        fix = self.fix.format(**fix_values) if fix_values else self.fix
        return f"{construct_path}: {problem}. [{self.id}: {self.aws_rule}] Fix: {fix}"

    def error(self, construct_path: str, problem: str, **fix_values: object) -> NeuronConfigurationError:
        """The exception to raise for this rule, message as in :meth:`message`."""
        return NeuronConfigurationError(self.message(construct_path, problem, **fix_values))


# ---------------------------------------------------------------- errors ---

UNKNOWN_INSTANCE_TYPE = Rule(
    "NEURON001",
    "Unknown or non-Neuron instance type",
    "only inf1, inf2, trn1, trn1n and trn2 instances carry Neuron devices",
    "use a catalog type; closest: {closest} (NeuronInstanceType.all() lists every type)",
    ECS_NEURON_PAGE,
)
INF1_ON_MANAGED_INSTANCES = Rule(
    "NEURON002",
    "Inf1 on Managed Instances",
    "Inf1 is supported only on the EC2 launch type, not on ECS Managed Instances",
    "drop inf1/'inferentia' from this Managed Instances capacity and run Inf1 through "
    "NeuronCluster.add_ec2_capacity(..., instance_type='inf1.xlarge') with a ManualNeuronTaskDefinition",
    ECS_NEURON_PAGE,
)
NON_NEURON_MANAGED_INSTANCES = Rule(
    "NEURON003",
    "Managed Instances capacity that selects no Neuron instance",
    "Neuron capacity selects acceleratorManufacturers amazon-web-services, acceleratorNames "
    "inferentia2/trainium/trainium2 and allowedInstanceTypes inf*/trn*",
    "use accelerators from {allowed} and instance-type patterns that match catalog types (e.g. 'inf2.*', 'trn*')",
    ECS_NEURON_PAGE,
)
CAPACITY_SIZE = Rule(
    "NEURON004",
    "Auto Scaling group bounds",
    "an Auto Scaling group needs 0 <= min_capacity <= max_capacity and max_capacity >= 1",
    "pass min_capacity and max_capacity with 0 <= min <= max and max >= 1",
    "EC2 Auto Scaling API",
)
ONE_NEURON_CONTAINER = Rule(
    "NEURON005",
    "Second NeuronDevice container",
    "at most one container definition in a task may specify the NeuronDevice resource requirement",
    "give the other containers .add_container (sidecars), or run them as a separate task",
    ECS_NEURON_PAGE,
)
MIXED_DEVICE_MODES = Rule(
    "NEURON006",
    "NeuronDevice and /dev/neuron* mapping in one task",
    "a task definition must not combine NeuronDevice resourceRequirements with linuxParameters.devices "
    "for Neuron devices; use one way consistently",
    "remove the /dev/neuron* device mappings (managed allocation hands the container every device), "
    "or use ManualNeuronTaskDefinition for manual mapping",
    ECS_NEURON_PAGE,
)
MANAGED_INSTANCES_FIELD = Rule(
    "NEURON007",
    "Field Managed Instances rejects",
    "Managed Instances task definitions reject ipcMode, inferenceAccelerators, sharedMemorySize, tmpfs "
    "and dockerLabels, and take only the awsvpc or host network mode",
    "remove {field} from this task definition, or run it on EC2 capacity with a ManualNeuronTaskDefinition",
    ECS_MI_PARAMETERS_PAGE,
)
MANAGED_ALLOCATION_CAPACITY = Rule(
    "NEURON008",
    "Managed allocation outside Managed Instances",
    "managed Neuron device allocation (NeuronDevice = ALL) is available only on ECS Managed Instances",
    "place this service on a Managed Instances capacity (NeuronCluster.add_managed_instances_capacity), "
    "or map devices with a ManualNeuronTaskDefinition for EC2 capacity",
    ECS_NEURON_PAGE,
)
DEVICE_INDEX_RANGE = Rule(
    "NEURON009",
    "Device index beyond the instance's chips",
    "manual mapping names /dev/neuronN devices that exist on the instance type",
    "use chip indices 0..{last} for {instance_type} ({chips} chips)",
    ECS_NEURON_PAGE,
)
DUPLICATE_DEVICE = Rule(
    "NEURON010",
    "Device listed twice",
    "each Neuron device is mapped once per task",
    "list each chip index once",
    ECS_NEURON_PAGE,
)
NO_DEVICES = Rule(
    "NEURON011",
    "Manual task with no devices",
    "a manually mapped Neuron task maps at least one /dev/neuronN device",
    "pass devices=[0] or more chip indices, or leave devices unset for every chip",
    ECS_NEURON_PAGE,
)
TASK_EXCEEDS_INSTANCE = Rule(
    "NEURON012",
    "Task larger than its instance",
    "a task definition specific to one instance type cannot ask for more CPU or memory than that instance has",
    "ask for at most {limit} {unit} on {instance_type}",
    ECS_NEURON_PAGE,
)
NEURON_CONTAINER_RESOURCES = Rule(
    "NEURON013",
    "Other accelerator on a Neuron container",
    "a Neuron container's resourceRequirements carry only NeuronDevice",
    "remove {field} from the Neuron container",
    ECS_NEURON_PAGE,
)
NO_MATCHING_CAPACITY = Rule(
    "NEURON014",
    "No capacity for the task definition",
    "a manually mapped task definition runs only on capacity of its one instance type; a managed one only on "
    "Managed Instances",
    "add a capacity that fits ({wanted}) to the cluster, or pass capacity= one that does",
    ECS_NEURON_PAGE,
)
AMBIGUOUS_CAPACITY = Rule(
    "NEURON015",
    "More than one capacity fits",
    "a service's capacity provider strategy names the capacity its tasks run on",
    "pass capacity= one of: {names}",
    "ECS guide: capacity provider strategies",
)

SLICE_SIZE = Rule(
    "NEURON016",
    "devices_per_task that does not slice the instance",
    "a sliced service cuts an instance's chips into equal contiguous slices the Neuron topology hands out: "
    "contiguous devices on inf1/inf2, 1, 4, 8 or 16 on trn1/trn1n 32xlarge, one or every device where no rule "
    "is published (trn2)",
    "use devices_per_task in {allowed} for {instance_type}",
    NEURON_SCHEDULER,
)
SLICES_EXCEED_CAPACITY = Rule(
    "NEURON017",
    "More instances' worth of slices than the capacity can launch",
    "distinctInstance places each task of a service on a different container instance, so a slice with N tasks "
    "needs N instances of its type",
    "pass instances from 0 to {max_capacity}, or raise max_capacity of {capacity} to at least {instances}",
    "ECS guide: task placement constraints",
)
SLICE_HOST_PORT = Rule(
    "NEURON018",
    "Fixed host port in a sliced service",
    "tasks on one instance cannot bind the same host port, and a sliced service runs one task per slice on "
    "every instance",
    "leave host_port unset so the bridge network maps a dynamic host port per task (register the slice "
    "services with a load balancer target group), or use the awsvpc network mode",
    "ECS guide: port mappings",
)
SLICE_RUNTIME_VARIABLE = Rule(
    "NEURON019",
    "Neuron runtime variable that contradicts a slice",
    "inside a container NeuronCores keep the host's numbering (device N holds cores N*cores-per-chip onward), "
    "and the runtime takes every core of the devices the container maps",
    "leave NEURON_RT_VISIBLE_CORES unset (each slice's runtime takes its own {cores} cores) and keep "
    "NEURON_RT_NUM_CORES at {cores} or less",
    "Neuron containers guide: cores (aws-neuron-sdk build-run-neuron-container)",
)

SLICED_CAPACITY_SHARED = Rule(
    "NEURON020",
    "Capacity shared with a sliced service",
    "ECS does not track manually mapped devices, so any other task on a sliced service's instances can map a "
    "device a slice holds",
    "give {sliced} its own Auto Scaling capacity (add_ec2_capacity with another id, pass capacity=), or run "
    "{other} on another capacity",
    ECS_NEURON_PAGE,
)

# -------------------------------------------------------------- warnings ---

DEVICE_TOPOLOGY = Rule(
    "NEURON101",
    "Device set outside the Neuron topology",
    "inf1/inf2 containers get contiguous devices (0,1,2 - never 0,2,4); trn1/trn1n 32xlarge containers get "
    "1, 4, 8 or 16 devices; one device or all devices is always valid",
    "map contiguous chips, e.g. devices={suggestion}; acknowledge this warning id if the set is deliberate",
    NEURON_SCHEDULER,
    severity="warning",
)
SMALL_ROOT_VOLUME = Rule(
    "NEURON102",
    "Root volume under 100 GiB",
    "Neuron framework images are large; AWS's Neuron blueprints size the root volume at 100 GiB or more",
    "pass root_volume_gib=100 or more",
    "ecs-blueprints vllm-inferentia",
    severity="warning",
)
MEMORY_NEAR_INSTANCE_TOTAL = Rule(
    "NEURON103",
    "Task memory near the instance total",
    "ECS registers less memory than the instance's nominal size (the kernel and the ECS agent keep some), "
    "so a task sized at the nominal total never places",
    "leave headroom (about 10 %) below {nominal_mib} MiB, or check registeredResources with "
    "DescribeContainerInstances before relying on it",
    "ECS guide: container instance memory management",
    severity="warning",
)
NO_NEURON_CONTAINER = Rule(
    "NEURON104",
    "Neuron task definition without a Neuron container",
    "a Neuron task definition exists to give one container Neuron devices",
    "call add_neuron_container(...) on this task definition",
    ECS_NEURON_PAGE,
    severity="warning",
)
PINNED_AMI = Rule(
    "NEURON105",
    "Pinned AMI instead of the recommended Neuron AMI",
    "the EC2 launch type uses the ECS-optimized Amazon Linux 2023 (Neuron) AMI resolved from "
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended",
    "make sure the pinned AMI carries the Neuron driver and runtime, and move it forward with each release",
    ECS_NEURON_PAGE,
    severity="warning",
)
AWSVPC_WITHOUT_TRUNKING = Rule(
    "NEURON106",
    "awsvpc slices without ENI trunking",
    "in the awsvpc network mode every task takes an elastic network interface of its instance; without ENI "
    "trunking (account setting awsvpcTrunking, on instance types that support it) the ENI limit caps tasks "
    "per instance",
    "turn on awsvpcTrunking for the account and pass eni_trunking=True, or keep the bridge network mode",
    "ECS guide: elastic network interface trunking",
    severity="warning",
)

RULES: tuple[Rule, ...] = (
    UNKNOWN_INSTANCE_TYPE,
    INF1_ON_MANAGED_INSTANCES,
    NON_NEURON_MANAGED_INSTANCES,
    CAPACITY_SIZE,
    ONE_NEURON_CONTAINER,
    MIXED_DEVICE_MODES,
    MANAGED_INSTANCES_FIELD,
    MANAGED_ALLOCATION_CAPACITY,
    DEVICE_INDEX_RANGE,
    DUPLICATE_DEVICE,
    NO_DEVICES,
    TASK_EXCEEDS_INSTANCE,
    NEURON_CONTAINER_RESOURCES,
    NO_MATCHING_CAPACITY,
    AMBIGUOUS_CAPACITY,
    SLICE_SIZE,
    SLICES_EXCEED_CAPACITY,
    SLICE_HOST_PORT,
    SLICE_RUNTIME_VARIABLE,
    SLICED_CAPACITY_SHARED,
    DEVICE_TOPOLOGY,
    SMALL_ROOT_VOLUME,
    MEMORY_NEAR_INSTANCE_TOTAL,
    NO_NEURON_CONTAINER,
    PINNED_AMI,
    AWSVPC_WITHOUT_TRUNKING,
)

# ---------------------------------------------------------------- checks ---

MANAGED_INSTANCES_ACCELERATORS = ("inferentia2", "trainium", "trainium2")
"""Neuron accelerator names ECS Managed Instances can select (Inf1 excluded)."""


def instance_type_at(path: str, name: str) -> NeuronInstanceType:
    """NEURON001: the catalog entry for ``name``, or an error naming ``path`` and the closest types."""
    entry = NeuronInstanceType.find(name)
    if entry is None:
        raise UNKNOWN_INSTANCE_TYPE.error(
            path,
            f"{name!r} is not a Neuron instance type in the catalog",
            closest=", ".join(closest_instance_types(str(name))),
        )
    return entry


def check_managed_instances_selection(
    path: str, accelerators: Sequence[str], instance_types: Sequence[str]
) -> tuple[NeuronInstanceType, ...]:
    """NEURON002/003: the catalog types a Managed Instances capacity may launch.

    Returns the catalog entries both selectors admit; raises when Inf1 is
    named (by accelerator or by a pattern that only Inf1 matches) or when a
    selector admits no Neuron type.
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
    for pattern in instance_types:
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


def device_topology_warning(path: str, instance: NeuronInstanceType, devices: Sequence[int]) -> str | None:
    """NEURON101: the warning text for a set the topology rules never hand out, else ``None``."""
    if instance.topology is DeviceTopology.UNPUBLISHED or instance.is_valid_device_set(devices):
        return None
    count = len(devices)
    if instance.topology is DeviceTopology.TORUS_2D:
        count = min((c for c in (1, 4, 8, 16) if c >= count), default=instance.chips)
    return DEVICE_TOPOLOGY.message(
        path,
        f"devices {sorted(devices)} on {instance.name} ({instance.topology.value} topology)",
        suggestion=list(range(count)),
    )


def check_task_size(path: str, instance: NeuronInstanceType, cpu: int | None, memory_mib: int | None) -> str | None:
    """NEURON012 (error beyond the instance) and NEURON103 (warning text near its memory total)."""
    if cpu is not None and cpu > instance.cpu_units:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"cpu={cpu} exceeds the {instance.cpu_units} CPU units of {instance.name}",
            limit=instance.cpu_units,
            unit="CPU units",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.memory_mib:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"memory_mib={memory_mib} exceeds the {instance.memory_mib} MiB of {instance.name}",
            limit=instance.memory_mib,
            unit="MiB",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.schedulable_memory_mib:
        return MEMORY_NEAR_INSTANCE_TOTAL.message(
            path,
            f"memory_mib={memory_mib} is within 10 % of {instance.name}'s {instance.memory_mib} MiB",
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
            allowed=list(allowed),
            instance_type=instance.name,
        )
    return instance.chips // devices_per_task


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
    if requested is not None and (not requested.isdigit() or int(requested) > cores_per_slice):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"NEURON_RT_NUM_CORES={requested} but a slice holds {cores_per_slice} NeuronCores",
            cores=cores_per_slice,
        )


MANAGED_INSTANCES_REJECTED_CONTAINER_FIELDS = {
    "docker_labels": "dockerLabels",
    "inference_accelerator_resources": "inferenceAccelerator resources",
}
MANAGED_INSTANCES_REJECTED_LINUX_FIELDS = ("sharedMemorySize", "tmpfs")
NEURON_CONTAINER_FORBIDDEN_OPTIONS = ("gpu_count", "inference_accelerator_resources")


def rendered_container_problems(
    path: str,
    containers: Sequence[dict[str, object]],
    *,
    managed_instances: bool,
    neuron_device_containers: Sequence[str],
) -> list[str]:
    """Synth-time checks on the rendered ``ContainerDefinitions`` (camelCase keys).

    Catches what users add after construction (devices, tmpfs, labels) as well
    as what went in through the plain aws-cdk-lib API.
    """
    problems: list[str] = []
    for container in containers:
        name = str(container.get("name", "?"))
        linux = container.get("linuxParameters") or {}
        assert isinstance(linux, dict)
        devices = linux.get("devices") or []
        neuron_paths = [
            d.get("hostPath")
            for d in devices
            if isinstance(d, dict) and str(d.get("hostPath", "")).startswith("/dev/neuron")
        ]
        if neuron_device_containers and neuron_paths:
            problems.append(
                MIXED_DEVICE_MODES.message(
                    f"{path}/{name}",
                    f"container maps {neuron_paths} while {list(neuron_device_containers)} ask for NeuronDevice",
                )
            )
        if managed_instances:
            for field in MANAGED_INSTANCES_REJECTED_LINUX_FIELDS:
                if linux.get(field):
                    problems.append(
                        MANAGED_INSTANCES_FIELD.message(
                            f"{path}/{name}", f"linuxParameters.{field} is set", field=field
                        )
                    )
            if container.get("dockerLabels"):
                problems.append(
                    MANAGED_INSTANCES_FIELD.message(f"{path}/{name}", "dockerLabels is set", field="docker_labels")
                )
    if len(neuron_device_containers) > 1:
        problems.append(
            ONE_NEURON_CONTAINER.message(path, f"containers {list(neuron_device_containers)} ask for NeuronDevice")
        )
    return problems
