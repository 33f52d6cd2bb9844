"""Rules on a Neuron task definition on its own: its one Neuron container, the devices it maps or is allocated
(manual mapping or managed allocation, never both), the fields Managed Instances take, and its CPU and memory
against its containers and its instance.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import ECS_MI_PARAMETERS_PAGE, ECS_NEURON_PAGE, NEURON_SCHEDULER, Rule

__all__ = [
    "CONTAINERS_EXCEED_TASK",
    "DEVICE_INDEX_RANGE",
    "DEVICE_TOPOLOGY",
    "DUPLICATE_DEVICE",
    "MANAGED_ALLOCATION_CAPACITY",
    "MANAGED_INSTANCES_FIELD",
    "MEMORY_NEAR_INSTANCE_TOTAL",
    "MIXED_DEVICE_MODES",
    "NEURON_CONTAINER_RESOURCES",
    "NEURON_CONTAINER_STRIPPED",
    "NO_DEVICES",
    "NO_NEURON_CONTAINER",
    "NO_TASK_MEMORY",
    "ONE_NEURON_CONTAINER",
    "TASK_EXCEEDS_INSTANCE",
    "UNDECLARED_DEVICE",
]

# ---------------------------------------------------------------- errors ---

ONE_NEURON_CONTAINER = Rule(
    "NEURON005",
    "Second NeuronDevice container",
    "at most one container definition in a task may specify the NeuronDevice resource requirement",
    "give the other containers .add_container (sidecars), or run them as a separate task",
    ECS_NEURON_PAGE,
    checked="both",
)
MIXED_DEVICE_MODES = Rule(
    "NEURON006",
    "NeuronDevice and /dev/neuron* mapping in one task",
    "a task definition must not combine NeuronDevice resourceRequirements with linuxParameters.devices "
    "for Neuron devices; use one way consistently",
    "remove the /dev/neuron* device mappings (managed allocation hands the container every device), "
    "or use ManualNeuronTaskDefinition for manual mapping",
    ECS_NEURON_PAGE,
    checked="template",
)
MANAGED_INSTANCES_FIELD = Rule(
    "NEURON007",
    "Field Managed Instances rejects",
    "Managed Instances task definitions reject ipcMode, inferenceAccelerators, sharedMemorySize, tmpfs "
    "and dockerLabels, and take only the awsvpc or host network mode",
    "remove {field} from this task definition, or run it on EC2 capacity with a ManualNeuronTaskDefinition",
    ECS_MI_PARAMETERS_PAGE,
    checked="both",
)
MANAGED_ALLOCATION_CAPACITY = Rule(
    "NEURON008",
    "Managed allocation outside Managed Instances",
    "managed Neuron device allocation (NeuronDevice = ALL) is available only on ECS Managed Instances",
    "place this service on a Managed Instances capacity (NeuronCluster.add_managed_instances_capacity), "
    "or map devices with a ManualNeuronTaskDefinition for EC2 capacity",
    ECS_NEURON_PAGE,
    checked="both",
)
DEVICE_INDEX_RANGE = Rule(
    "NEURON009",
    "Device index beyond the instance's chips",
    "manual mapping names /dev/neuronN devices that exist on the instance type",
    "use chip indices 0..{last} for {instance_type} ({chips} chips)",
    ECS_NEURON_PAGE,
    checked="both",
)
DUPLICATE_DEVICE = Rule(
    "NEURON010",
    "Device listed twice",
    "each Neuron device is mapped once per task",
    "list each chip index once",
    ECS_NEURON_PAGE,
    checked="both",
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
    "a task cannot ask for more CPU or memory than the instance types it can run on have",
    "ask for at most {limit} {unit} on {instance_type}",
    ECS_NEURON_PAGE,
    checked="both",
)
NEURON_CONTAINER_RESOURCES = Rule(
    "NEURON013",
    "GPU or other accelerator in a Neuron task",
    "Neuron instances carry no GPU or Elastic Inference accelerator, so a task that holds Neuron devices asks "
    "for NeuronDevice only",
    "remove {field} from this task",
    ECS_NEURON_PAGE,
    checked="both",
)
CONTAINERS_EXCEED_TASK = Rule(
    "NEURON024",
    "Containers ask for more than their task",
    "the memory reserved for all containers of a task must be lower than the task memory, a container's memory "
    "limit cannot exceed it, and the CPU reserved for all containers must be lower than the task cpu",
    "lower the containers' {field} to {limit} in all, or raise the task's",
    "ECS API reference: ContainerDefinition memory, memoryReservation and cpu",
    checked="both",
)
NO_TASK_MEMORY = Rule(
    "NEURON025",
    "No memory for the task",
    "a task on EC2 or Managed Instances needs a task-level memory value or a non-zero memory or "
    "memoryReservation on each container",
    "give the task definition memory_mib (and cpu), as ManagedNeuronTaskDefinition requires, or the container "
    "memory_limit_mib or memory_reservation_mib",
    "ECS API reference: TaskDefinition memory",
    checked="both",
)
NEURON_CONTAINER_STRIPPED = Rule(
    "NEURON029",
    "Neuron container without its devices",
    "a Neuron container gets devices through NeuronDevice = ALL (managed) or /dev/neuronN in "
    "linuxParameters.devices (manual); without them it runs with no Neuron device",
    "drop the escape hatch that removed its {field}, or add the container with add_container if it needs no device",
    ECS_NEURON_PAGE,
    checked="template",
)
UNDECLARED_DEVICE = Rule(
    "NEURON036",
    "Device the task definition was not declared with",
    "tasks that share an instance (the slices of a sliced service, services on one capacity) stay apart only when "
    "each task definition maps just the devices it declares",
    "map only {declared}, or declare the device in the task definition's devices=",
    ECS_NEURON_PAGE,
    checked="both",
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
    checked="both",
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
    checked="both",
)
NO_NEURON_CONTAINER = Rule(
    "NEURON104",
    "Neuron task definition without a Neuron container",
    "a Neuron task definition exists to give one container Neuron devices",
    "call add_neuron_container(...) on this task definition",
    ECS_NEURON_PAGE,
    severity="warning",
    checked="both",
)
