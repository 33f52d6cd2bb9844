"""Rules on where tasks run and what they hold there: capacity that fits a task definition, manually mapped tasks
pinned to one type and kept one per instance, NeuronCores no two services share, slices of an instance, copies of a
fleet model, and NeuronCores and logical NeuronCores.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import ECS_NEURON_PAGE, NEURON_SCHEDULER, Rule

__all__ = [
    "AMBIGUOUS_CAPACITY",
    "AWSVPC_WITHOUT_TRUNKING",
    "COPIES_SHARE_INSTANCE",
    "CORE_SLICE",
    "FLEET_FULL",
    "LOGICAL_CORES",
    "NO_MATCHING_CAPACITY",
    "SHARED_DEVICE",
    "SLICED_CAPACITY_SHARED",
    "SLICES_EXCEED_CAPACITY",
    "SLICE_HOST_PORT",
    "SLICE_RUNTIME_VARIABLE",
    "SLICE_SIZE",
    "UNPINNED_MANUAL_TASK",
]

# ---------------------------------------------------------------- errors ---

NO_MATCHING_CAPACITY = Rule(
    "NEURON014",
    "No capacity for the task definition",
    "a manually mapped task definition runs only on capacity of its one instance type; a managed one only on "
    "Managed Instances",
    "add a capacity that fits ({wanted}) to the cluster, or pass capacity= one that does",
    ECS_NEURON_PAGE,
    checked="both",
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
    "a sliced service cuts an instance into equal contiguous slices the Neuron topology hands out: contiguous "
    "devices on inf1/inf2, 1, 4, 8 or 16 devices on the trn1/trn1n/trn2 16-chip torus, or NeuronCores that divide "
    "one chip's",
    "use {size_name} in {allowed} for {instance_type}",
    NEURON_SCHEDULER,
)
SLICES_EXCEED_CAPACITY = Rule(
    "NEURON017",
    "More tasks than instances under distinctInstance",
    "distinctInstance places each task of a service on a different container instance, so a service with N "
    "tasks needs N instances of its capacity",
    "run from 0 to {max_capacity} tasks, or raise max_capacity of {capacity} to at least {instances}",
    "ECS guide: task placement constraints",
    checked="both",
)
SLICE_HOST_PORT = Rule(
    "NEURON018",
    "Fixed host port in a sliced service",
    "tasks on one instance cannot bind the same host port, and a sliced service runs one task per slice on "
    "every instance",
    "leave host_port unset so the bridge network maps a dynamic host port per task (register the slice "
    "services with a load balancer target group), or use the awsvpc network mode",
    "ECS guide: port mappings",
    checked="both",
)
SLICE_RUNTIME_VARIABLE = Rule(
    "NEURON019",
    "Neuron runtime variable that contradicts the mapped devices",
    "inside a container NeuronCores keep the host's numbering (device N holds cores N*cores-per-chip onward), "
    "and the runtime takes every core of the devices the container maps",
    "leave NEURON_RT_VISIBLE_CORES unset (the runtime takes the {cores} cores of the mapped devices) or name "
    "only those cores, and keep NEURON_RT_NUM_CORES from 1 to {cores}",
    "Neuron containers guide: cores (aws-neuron-sdk build-run-neuron-container)",
    checked="both",
)
SLICED_CAPACITY_SHARED = Rule(
    "NEURON020",
    "Capacity shared with a sliced service",
    "ECS does not track manually mapped devices, and slices are sized to fill their instances, so any other "
    "task on a sliced capacity either maps a device a slice holds or takes CPU and memory a slice needs",
    "give {sliced} its own Auto Scaling capacity (add_ec2_capacity with another id, pass capacity=), or run "
    "{other} on another capacity",
    ECS_NEURON_PAGE,
    checked="both",
)
UNPINNED_MANUAL_TASK = Rule(
    "NEURON021",
    "Manually mapped task not pinned to one instance type",
    "a manually mapped task definition must be specific to one instance type; on the EC2 launch type a "
    "placement constraint memberOf attribute:ecs.instance-type == <type> keeps it there",
    "pin it with memberOf 'attribute:ecs.instance-type == <type>' (ManualNeuronTaskDefinition does), or drop "
    "the change that removed the pin",
    ECS_NEURON_PAGE,
    checked="template",
)
COPIES_SHARE_INSTANCE = Rule(
    "NEURON022",
    "Copies of a manually mapped task can share an instance",
    "ECS does not track linuxParameters.devices, so two tasks of one service on one instance map the same "
    "/dev/neuronN; the distinctInstance placement constraint (service level only) keeps them apart",
    "add the distinctInstance placement constraint to the service (NeuronService does), or size the task above "
    "half of {instance_type}",
    "ECS guide: task placement constraints",
    checked="template",
)
SHARED_DEVICE = Rule(
    "NEURON023",
    "Two services hold one NeuronCore",
    "ECS tracks NeuronDevice allocations but not linuxParameters.devices, and a NeuronCore belongs to one process, "
    "so services that can share an instance must hold disjoint NeuronCores: disjoint /dev/neuronN devices, or "
    "disjoint NEURON_RT_VISIBLE_CORES on a shared device; a manual mapping must not share a Managed Instances "
    "capacity with managed allocation",
    "give {other} devices or NEURON_RT_VISIBLE_CORES disjoint from {first}'s (NeuronFleet and SlicedNeuronService "
    "do), or run it on another capacity",
    f"{ECS_NEURON_PAGE}; aws-neuron-sdk issue #441 (one process per NeuronCore)",
    checked="both",
)
FLEET_FULL = Rule(
    "NEURON046",
    "Model that does not fit what is left of its fleet",
    "each copy of a model on a fleet holds NeuronCores no other copy holds - a contiguous device set the topology "
    "allows (inf1/inf2: contiguous; the trn1/trn1n/trn2 torus: 1, 4, 8 or 16 contiguous), or contiguous "
    "NeuronCores of one chip - and its share of the instance's CPU units and schedulable memory",
    "fit the model in what is left ({free}): fewer copies, fewer devices_per_task or cores_per_task, a smaller "
    "task_cpu or task_memory_mib, or a fleet of its own",
    NEURON_SCHEDULER,
)
CORE_SLICE = Rule(
    "NEURON063",
    "Copy size the Neuron runtime cannot be given",
    "a copy holds whole chips (devices_per_task) or contiguous NeuronCores of one chip (cores_per_task, given to "
    "the runtime as NEURON_RT_VISIBLE_CORES in the host's numbering), never both; a chip holds 4 NeuronCores on "
    "Inf1, 2 on Inf2 and Trn1, and 8 on Trn2 (4 logical ones at LNC=2)",
    "pass exactly one of devices_per_task and cores_per_task, cores_per_task from 1 to {per_chip} (more is "
    "devices_per_task=cores/{per_chip})",
    "Neuron runtime configuration (NEURON_RT_VISIBLE_CORES); Neuron Kubernetes device plugin "
    "(aws.amazon.com/neuroncore)",
)
LOGICAL_CORES = Rule(
    "NEURON064",
    "Logical NeuronCore setting the chip or its capacity does not take",
    "only Trainium2 groups physical NeuronCores into logical ones (NEURON_LOGICAL_NC_CONFIG 1 or 2, default 2), "
    "the setting must match the compiler's --lnc, and the core numbers a task names count logical cores of its "
    "instance's setting",
    "pass lnc= (1 or 2) only for trn2 types, give a task the capacity's setting, and compile its model with the "
    "same --lnc",
    "Neuron docs: logical NeuronCore configuration",
    checked="both",
)

# -------------------------------------------------------------- warnings ---

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
