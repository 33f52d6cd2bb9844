"""Where a :class:`~neuron_constructs.serving.services.NeuronService` may run: the checks of its placement on its
capacity (NEURON131/020/017/023/012/088/147/127).

Neuron supports its images on the capacity's instance types; it fits the capacity beside the services already there
(one task of a manually mapped task definition per instance, no device held by two services); its images' Neuron
runtime runs on the driver of the capacity's pinned AMI release (or, on capacity that follows the recommended AMI, on
the newest driver).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Validations

from neuron_constructs.base.images import container_name_of, image_name_of
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute import driver_check as start_check
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.compile_cache_checks import check_file_system_vpc
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.task_definitions.managed import ManagedNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.cores import core_overlap, format_core_list
from neuron_constructs.knowledge.devices import format_device_paths
from neuron_constructs.knowledge.neuron_releases import ami_driver_conflict, newest_driver_conflict

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["check_driver", "check_one_per_instance", "check_placement", "check_server_degree_on_managed_instances"]


def check_placement(service: NeuronService) -> None:
    """NEURON156/131/020/017/023/012/088/127: its compile caches' file systems are in its cluster's VPC, Neuron
    supports this service's images on its capacity's types, it fits its capacity beside the services already there,
    and its images' Neuron runtime runs on the driver of the capacity's pinned AMI release (or, on capacity that
    follows the recommended AMI, on the newest driver)."""
    capacity, task, path = service.capacity, service.task_definition, construct_path(service)
    check_file_system_vpc(path, task.task_definition, service.cluster.vpc)
    if isinstance(capacity, AutoScalingCapacity):
        families = [capacity.neuron_instance_type.family] if capacity.neuron_instance_type else []
    else:
        families = [instance.family for instance in capacity.instance_types]
    for container in task.neuron_containers:
        task.check_image_support(path, container, families)
    if isinstance(capacity, AutoScalingCapacity):
        check_driver(service, capacity)
        owner = capacity.sliced_by
        if owner is not None and not path.startswith(f"{construct_path(owner)}/"):
            raise rules.SLICED_CAPACITY_SHARED.error(
                path,
                f"{construct_path(capacity)} runs the sliced service {construct_path(owner)}",
                sliced=construct_path(owner),
                other=path,
            )
        check_one_per_instance(service, "desired_count", service.desired_count)
    if isinstance(task, ManagedNeuronTaskDefinition) and isinstance(capacity, ManagedInstancesCapacity):
        largest = max(capacity.instance_types, key=lambda t: (t.cpu_units, t.memory_mib))
        inputs.check_task_size(path, largest, task.cpu, task.memory_mib)
        check_server_degree_on_managed_instances(service, task, capacity)
    for other in capacity.services:
        other_task = getattr(other, "task_definition", None)  # every service on a capacity is a NeuronService
        assert isinstance(other_task, NeuronTaskDefinition)
        overlap = _shared_devices(task, other_task)
        if overlap:
            raise rules.SHARED_DEVICE.error(
                path,
                f"{construct_path(other)} on {construct_path(capacity)} also holds {overlap}",
                first=construct_path(other),
                other=path,
            )


def check_server_degree_on_managed_instances(
    service: NeuronService, task: ManagedNeuronTaskDefinition, capacity: ManagedInstancesCapacity
) -> None:
    """NEURON174: a model server's tensor-parallel degree against every instance type the capacity may place the task
    on (those whose vCPUs and memory hold the task's): with ``NeuronDevice = ALL`` the container holds every
    NeuronCore of whichever type ECS picks, so a type with fewer cores than the degree fails the copy at start."""
    for container, plan in task.servers.items():
        fitting = [t for t in capacity.instance_types if t.cpu_units >= task.cpu and t.memory_mib >= task.memory_mib]
        most = {t.name: max(t.cores(lnc) for lnc in t.lnc_options) for t in fitting}  # LNC 1 where it may be set
        small = [t for t in fitting if most[t.name] < plan.tensor_parallel_size]
        if small:
            shown = ", ".join(f"{t.name} ({most[t.name]})" for t in small)
            raise rules.TENSOR_PARALLEL_CORES.error(
                construct_path(service),
                f"container {container!r} runs tensor_parallel_size={plan.tensor_parallel_size}, and "
                f"{construct_path(capacity)} may place the task on {shown}: fewer NeuronCores than that",
                fix="narrow the capacity's instance_types to types with as many NeuronCores, raise the task's cpu or "
                "memory_mib past those types, or lower tensor_parallel_size",
            )


def check_one_per_instance(service: NeuronService, name: str, count: int) -> None:
    """NEURON017: ``count`` tasks of a manually mapped task definition, one per instance, fit the capacity."""
    capacity = service.capacity
    if (
        isinstance(service.task_definition, ManualNeuronTaskDefinition)
        and isinstance(capacity, AutoScalingCapacity)
        and count > capacity.max_capacity
    ):
        raise rules.SLICES_EXCEED_CAPACITY.error(
            construct_path(service),
            f"{name}={count} with distinctInstance, but {construct_path(capacity)} launches at most "
            f"{capacity.max_capacity} instances",
            max_capacity=capacity.max_capacity,
            capacity=construct_path(capacity),
            instances=count,
        )


def check_driver(service: NeuronService, capacity: AutoScalingCapacity) -> None:
    """NEURON088 when a Neuron container's image (by its stated Neuron SDK release, or the one in its tag) does
    not run on the driver of the capacity's pinned AMI release, NEURON147 when neither names the release there;
    NEURON127 when the capacity follows the recommended AMI and the image does not
    run on the newest driver, unless the container runs the driver start check (NEURON126 warned of that)."""
    task, path = service.task_definition, construct_path(service)
    family = capacity.neuron_instance_type.family if capacity.neuron_instance_type else None
    for container in task.neuron_containers:
        sdk = task.container_sdk(container)
        if capacity.ami is None:  # an AMI of the caller's choosing: its driver is unknown
            continue
        if sdk is None:
            if capacity.ami.version is not None:
                named = f"container {container_name_of(container)!r}"
                start_check.warn_unknown_sdk(service, named, capacity.ami.version)
            continue
        if capacity.ami.version is not None:
            problem = ami_driver_conflict(capacity.ami.version, sdk, family)
            if problem is not None:
                raise rules.DRIVER_OUTSIDE_RUNTIME.error(path, f"{image_name_of(container)}: {problem}")
            continue
        # Inf1 instances run driver 2.21 whatever the AMI's build (neuron_releases.INF1_AMI_DRIVER).
        problem = None if family == "inf1" else newest_driver_conflict(sdk)
        if problem is not None and container_name_of(container) not in task.driver_checked:
            Validations.of(service).add_warning(
                rules.IMAGE_BEHIND_NEWEST_DRIVER.warning_id,
                rules.IMAGE_BEHIND_NEWEST_DRIVER.message(
                    path, f"container {container_name_of(container)!r} on {construct_path(capacity)}: {problem}"
                ),
            )


def _shared_devices(first: NeuronTaskDefinition, second: NeuronTaskDefinition) -> str | None:
    """The devices two task definitions would both hold on one instance, in words; ``None`` if none."""
    if isinstance(first, ManualNeuronTaskDefinition) and isinstance(second, ManualNeuronTaskDefinition):
        # The template checks' decision (knowledge.cores.core_overlap): a shared chip is fine on disjoint NeuronCores.
        overlap = core_overlap(first.held, second.held)
        if overlap is None:
            return None
        if overlap.cores is not None:
            return f"NeuronCores {format_core_list(overlap.cores)} of {format_device_paths(overlap.devices)}"
        return format_device_paths(overlap.devices)
    manual = first if isinstance(first, ManualNeuronTaskDefinition) else second
    if isinstance(manual, ManualNeuronTaskDefinition) and (
        first.uses_managed_allocation or second.uses_managed_allocation
    ):
        return (
            f"{format_device_paths(manual.devices)} (mapped by hand beside NeuronDevice = ALL, which ECS hands every "
            "device)"
        )
    return None
