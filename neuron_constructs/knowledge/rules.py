"""Every ECS Neuron rule the library enforces, as data: the rule table.

Each :class:`Rule` is one entry: an id, the AWS sentence it enforces, the fix,
and where the sentence comes from. Errors raise
:class:`~neuron_constructs.knowledge.errors.NeuronConfigurationError` at the call that
broke them (or fail ``cdk synth`` through ``node.add_validation`` when only the
finished task definition shows them); warnings become CDK warnings whose id a
user can acknowledge with ``Validations.of(scope).acknowledge(...)``.

The checks at the call live in :mod:`neuron_constructs.checks.inputs`, the checks on templates in
:mod:`neuron_constructs.checks.template_checks`; the docs' rule table is generated from :data:`RULES`.
No AWS CDK import here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from neuron_constructs.knowledge.errors import NeuronConfigurationError

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
    checked: Literal["call", "template", "both"] = "call"
    """Where the rule runs: at the call that breaks it, on the synthesized template (every path, and
    ``neuron-ecs lint``), or both."""

    @property
    def on_template(self) -> bool:
        """Whether :mod:`neuron_constructs.checks.template_checks` checks this rule on CloudFormation."""
        return self.checked in ("template", "both")

    @property
    def at_call(self) -> bool:
        """Whether the constructs check this rule at the call (or construct) that breaks it."""
        return self.checked in ("call", "both")

    @property
    def cfn_lint_id(self) -> str:
        """The id of this rule in the cfn-lint rule pack: ``E91NN`` for errors, ``W92NN`` for warnings."""
        number = int(self.id.removeprefix("NEURON")) % 100
        return f"E91{number:02d}" if self.severity == "error" else f"W92{number:02d}"

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
    checked="both",
)
INF1_ON_MANAGED_INSTANCES = Rule(
    "NEURON002",
    "Inf1 on Managed Instances",
    "Inf1 is supported only on the EC2 launch type, not on ECS Managed Instances",
    "drop inf1/'inferentia' from this Managed Instances capacity and run Inf1 through "
    "NeuronCluster.add_ec2_capacity(..., instance_type='inf1.xlarge') with a ManualNeuronTaskDefinition",
    ECS_NEURON_PAGE,
    checked="both",
)
NON_NEURON_MANAGED_INSTANCES = Rule(
    "NEURON003",
    "Managed Instances capacity that selects no Neuron instance",
    "Neuron capacity selects acceleratorManufacturers amazon-web-services, acceleratorNames "
    "inferentia2/trainium/trainium2 and allowedInstanceTypes inf*/trn*",
    "use accelerators from {allowed} and lowercase instance-type patterns that match catalog types "
    "(e.g. 'inf2.*', 'trn*')",
    ECS_NEURON_PAGE,
)
CAPACITY_SIZE = Rule(
    "NEURON004",
    "Auto Scaling group bounds",
    "an Auto Scaling group needs 0 <= min_capacity <= max_capacity and max_capacity >= 1",
    "pass min_capacity and max_capacity with 0 <= min <= max and max >= 1",
    "EC2 Auto Scaling API",
    checked="both",
)
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
WRONG_TYPE = Rule(
    "NEURON026",
    "Parameter of the wrong type",
    "CloudFormation integer properties take whole numbers, list properties take lists, and each construct "
    "parameter takes the type its signature names (a bool is not a number, a string is not a list)",
    "pass {expected}",
    "CloudFormation resource specification",
)
OUT_OF_RANGE = Rule(
    "NEURON027",
    "Value outside the range AWS accepts",
    "a number outside the range AWS accepts for it fails at deploy time, and the fix names the range; for example "
    "task cpu is 128 to 196,608 CPU units, a container needs at least 6 MiB of memory, gp3 volumes are 1 to "
    "65,536 GiB and a root volume at least its AMI's 30 GiB snapshot, Managed Instances task storage is at least "
    "1 GiB, a health check grace period is at most 2,147,483,647 s, a deregistration delay 0 to 3,600 s, a listener "
    "rule priority 1 to 50,000, and counts of tasks and instances are whole numbers of 0 or more",
    "pass {name} from {minimum} to {maximum}",
    "ECS API reference (TaskDefinition cpu, ContainerDefinition memory); EC2 API reference (gp3 VolumeSize)",
)
TOKEN_NOT_LITERAL = Rule(
    "NEURON028",
    "Deploy-time value where a rule needs a literal",
    "the Neuron rules compare this value with the catalog and the other parameters at synth, but a CDK token "
    "(a CfnParameter, an import, a resource attribute) is known only at deploy time",
    "pass a literal {name}; to vary it per environment, read it from CDK context (app.node.try_get_context) or "
    "an environment variable at synth",
    "AWS CDK guide: tokens",
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
NEURON_TYPE_WITHOUT_NEURON_AMI = Rule(
    "NEURON030",
    "Neuron instance on an AMI without the Neuron driver",
    "the EC2 launch type runs Neuron instances on the ECS-optimized Amazon Linux 2023 (Neuron) AMI, which "
    "carries the Neuron driver and runtime; the standard ECS AMI does not",
    "use NeuronCluster.add_ec2_capacity(instance_type={instance_type!r}) for Neuron instances",
    ECS_NEURON_PAGE,
    checked="both",
)
UNKNOWN_EC2_TYPE = Rule(
    "NEURON031",
    "Instance type EC2 does not offer",
    "EC2 launches only the instance types its API lists (the InstanceType values of the EC2 API)",
    "use an EC2 instance type; closest: {closest}",
    "EC2 API reference: InstanceType",
)
DEPLOYMENT_WITHOUT_ROOM = Rule(
    "NEURON032",
    "Rolling deployment with no instance to spare",
    "with distinctInstance each instance holds one task of the service, so a deployment that keeps "
    "minimumHealthyPercent of the tasks running starts the new tasks on spare instances; when every instance the "
    "capacity can launch already runs one, the deployment never proceeds and the circuit breaker rolls it back",
    "pass min_healthy_percent={percent} or less (ECS then replaces tasks in place), or raise max_capacity of "
    "{capacity} above {desired}",
    "ECS guide: rolling update deployments (minimumHealthyPercent, maximumPercent)",
    checked="both",
)
NO_SUBNETS = Rule(
    "NEURON033",
    "No subnets for the capacity",
    "an Auto Scaling group or a Managed Instances capacity launches into at least one subnet of its VPC",
    "pass NeuronCluster(capacity_subnets=...) a selection the VPC has ({available})",
    "EC2 Auto Scaling API: VPCZoneIdentifier",
)
NETWORK_OPTION_IGNORED = Rule(
    "NEURON034",
    "Network option the network mode ignores",
    "subnets, security groups and public IP assignment belong to awsvpc tasks; bridge and host tasks use their "
    "instance's network interface and security group",
    "drop {option}, or use the awsvpc network mode (then the option applies to the tasks' own interfaces)",
    "ECS guide: task networking",
)
SECOND_SCALING_TARGET = Rule(
    "NEURON035",
    "Second scalable target for one service",
    "Application Auto Scaling registers one scalable target per service and dimension",
    "call auto_scale once per service (it returns the scalable targets for every further policy); scale_on_requests "
    "and scale_on_neuron_utilization share one target, so call each at most once and give both the same counts",
    "Application Auto Scaling API: RegisterScalableTarget",
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
SPOT_WITH_RESERVATION = Rule(
    "NEURON037",
    "Spot capacity with reserved capacity",
    "an instance launches in one market: Spot, a Capacity Block (market type capacity-block), or On-Demand, which "
    "On-Demand Capacity Reservations hold",
    "drop spot=True to use the reservation, or drop capacity_reservation= to run on Spot",
    "EC2 API reference: InstanceMarketOptionsRequest MarketType, CapacityReservationSpecification",
)
CAPACITY_BLOCK_TYPE = Rule(
    "NEURON038",
    "Capacity Block for a type Capacity Blocks do not offer",
    "EC2 Capacity Blocks for ML offer trn1.32xlarge and trn2.48xlarge among the Neuron types (and P GPU types); "
    "an Auto Scaling group targets one block, with one instance type and no mixed instances policy",
    "use an On-Demand Capacity Reservation for {instance_type}, or a Capacity Block of trn1.32xlarge or trn2.48xlarge",
    "EC2 guide: Capacity Blocks for ML; EC2 Auto Scaling guide: Use Capacity Blocks for machine learning workloads",
)
MANAGED_INSTANCES_RESERVATION = Rule(
    "NEURON039",
    "Reservation Managed Instances cannot target",
    "ECS Managed Instances launch into reservations through a Capacity Reservation resource group "
    "(CapacityReservations.ReservationGroupArn with capacity option type RESERVED); a single reservation id, or a "
    "Capacity Block (which cannot be put in a resource group), is not accepted",
    "pass CapacityReservation.on_demand_group(<resource group ARN>), or use Auto Scaling capacity "
    "(add_ec2_capacity) for {reservation}",
    "ECS API reference: InstanceLaunchTemplate capacityOptionType, CapacityReservationRequest; EC2 guide: "
    "Capacity Blocks for ML",
)
DEPLOYMENT_STALLS = Rule(
    "NEURON040",
    "Rolling deployment that can neither start nor stop a task",
    "during a rolling deployment ECS runs at most maximumPercent of the desired count (rounded down) and keeps "
    "minimumHealthyPercent of it (rounded up) running; when the first leaves no room above the desired count and the "
    "second none below it, no task is ever started or stopped and the deployment never completes",
    "pass min_healthy_percent={percent}, or {more_room}",
    "ECS API reference: DeploymentConfiguration (maximumPercent, minimumHealthyPercent)",
    checked="both",
)

NO_TARGET_PORT = Rule(
    "NEURON041",
    "Load balancer target without one port",
    "a load balancer target group sends to one container port of the task; ECS registers the host port (bridge) or "
    "the task's address (awsvpc) that port is mapped to",
    "give {container} port_mappings=[ecs.PortMapping(container_port=...)], or pass container_port= (and "
    "container_name=) naming the port the model server listens on",
    "ECS guide: use load balancing to distribute service traffic",
)
LISTENER_RULE = Rule(
    "NEURON042",
    "Listener rule without both conditions and priority",
    "an Application Load Balancer listener rule has conditions and a priority unique on its listener (1-50,000); "
    "without either the target group is the listener's default action; Network Load Balancer listeners have no rules",
    "pass conditions=[elbv2.ListenerCondition.path_patterns([...])] with priority=, or neither for the default "
    "action (one per listener)",
    "Elastic Load Balancing guide: listener rules for your Application Load Balancer",
)
NETWORK_LOAD_BALANCER_GROUP = Rule(
    "NEURON043",
    "Network Load Balancer without a security group",
    "a Network Load Balancer without security groups passes its clients' addresses through, so the tasks' group "
    "would have to admit every client; security groups can be given to a Network Load Balancer only when it is "
    "created",
    "create the elbv2.NetworkLoadBalancer in this app with security_groups=[...] (or attach to an Application Load "
    "Balancer listener)",
    "Elastic Load Balancing guide: security groups for your Network Load Balancer",
)
REQUEST_SCALING_TARGET = Rule(
    "NEURON044",
    "Request scaling without an Application Load Balancer target group",
    "target tracking on ALBRequestCountPerTarget reads the request count of one Application Load Balancer target "
    "group the service is registered with",
    "call attach_to_listener(<Application Load Balancer listener>) first, or pass target_group= one it returned",
    "Application Auto Scaling guide: target tracking predefined metrics (ALBRequestCountPerTarget)",
)

UNKNOWN_VPC_RANGE = Rule(
    "NEURON045",
    "Load balancer clients in a VPC of unknown range",
    "a load balancer's security group admits only the clients it names; the default, the VPC's IPv4 range, is not "
    "known for a VPC imported without its CIDR block",
    "pass clients=[ec2.Peer.ipv4('<range>')] (or security groups) to NeuronLoadBalancer, or import the VPC with "
    "vpc_cidr_block=",
    "EC2 guide: security group rules",
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

CHECKPOINT_DIR = Rule(
    "NEURON066",
    "Checkpoint directory no node can reach",
    "every node of a job saves to and resumes from one place: the queue's shared storage, mounted at the same path "
    "on every node, or an S3 prefix; a node's own disk is gone when AWS Batch replaces the node; a bucket name is 3 "
    "to 63 lowercase letters, digits, dots and hyphens, begins and ends with a letter or digit, and is no IP address",
    "pass checkpoint_dir= an absolute path in normal form (no '..', '.', '//' or trailing '/') under the queue's "
    "LustreStorage mount path, or an s3://bucket/prefix URL with a valid bucket name and a key prefix (and grant the "
    "job role that prefix)",
    "AWS Batch guide: multi-node parallel jobs; FSx for Lustre guide: mounting on Amazon ECS; Amazon S3 user guide: "
    "general purpose bucket naming rules, naming Amazon S3 objects",
)
MODEL_NAME = Rule(
    "NEURON067",
    "Model name neuron-monitor or CloudWatch cannot carry",
    "a model is named by the NEURON_PROCESS_TAG of its Neuron containers (up to 255 characters, neuron-monitor) and "
    "published as a CloudWatch dimension value (ASCII, not blank); a task definition serves one model, so all its "
    "Neuron containers carry one tag",
    "pass model_name= 1 to 255 letters, digits and . _ - / : @ + =, starting with a letter or digit, and give the "
    "task definition's Neuron containers no NEURON_PROCESS_TAG of their own or one the same for all, matching it",
    "Neuron user guide: neuron-monitor, Neuron applications tagging; CloudWatch API reference: Dimension",
)
UNPINNED_PRIVILEGED_IMAGE = Rule(
    "NEURON068",
    "Privileged or host-network daemon image named by a tag",
    "a privileged or host-network container can act as the instance and use its instance role, whose ecs:Poll "
    "returns the credentials of every task there; a tag can be moved to other bytes, a digest cannot",
    'pass {argument}={constant}.pinned("sha256:..."): the digest your registry reports for {uri} '
    "(`neuron-ecs digests` resolves it, or `crane digest {uri}`)",
    "ECS guide: task IAM roles (instance role credentials); Docker docs: image digests; "
    "ECS API reference: ContainerDefinition privileged, TaskDefinition networkMode",
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
NO_SPOT = Rule(
    "NEURON065",
    "Spot for a type EC2 does not sell as Spot",
    "EC2 offers trn2u.48xlarge, the Trn2 UltraServer node, without Spot",
    "drop spot=True for {instance_type}, or buy it On-Demand, with a Capacity Reservation or a Capacity Block",
    "EC2 guide: specifications for accelerated computing instances (Trn2u: Spot support no)",
)

S3_LOCATION = Rule(
    "NEURON047",
    "S3 location a prefix grant cannot hold to itself",
    "an IAM resource ARN and an s3:prefix condition match * and ? as wildcards, an empty prefix is the whole "
    "bucket, and a prefix also names a directory on the instance (a warm pool's copy), which '..' leaves; a "
    "container mounts volumes at absolute paths",
    "pass a non-empty prefix of letters, digits and ! - _ . ' ( ) / (S3's safe key characters but *) with no empty, "
    "'.' or '..' segment (e.g. 'neuron-compile-cache'), and an absolute path (e.g. '/opt/ml/model')",
    "IAM guide: Amazon S3 condition keys (s3:prefix); Amazon S3 user guide: naming Amazon S3 objects (safe "
    "characters); ECS task definition parameters (mountPoints containerPath)",
)

MULTI_NODE_WITHOUT_EFA = Rule(
    "NEURON048",
    "Multi-node training on a type without EFA",
    "Neuron collectives span instances over EFA, which trn1.32xlarge (8 interfaces), trn1n.32xlarge (16), "
    'trn2.3xlarge (1), trn2.48xlarge and trn2u.48xlarge (16) have; "EFA is currently not available on the smaller '
    'instances sizes" of Trn1',
    "train across nodes on {multi_node}, or pass nodes=1",
    "Neuron docs: How to prepare trn1.32xlarge for multi-node execution",
)
TOO_MANY_NODES = Rule(
    "NEURON049",
    "More nodes than the training queue launches",
    "an AWS Batch compute environment needs enough maximum vCPUs for every node of a multi-node parallel job",
    "pass nodes={max_nodes} or fewer, or raise max_nodes of {queue}",
    "AWS Batch guide: multi-node parallel jobs",
)
MULTI_NODE_ON_SPOT = Rule(
    "NEURON050",
    "Multi-node job on Spot capacity",
    "multi-node parallel jobs aren't supported on compute environments that use Spot Instances",
    "run multi-node jobs on an On-Demand queue (spot=False, optionally a capacity_reservation), or pass nodes=1",
    "AWS Batch guide: compute environments for multi-node parallel jobs",
)
TRAINING_SUBNETS = Rule(
    "NEURON051",
    "Training queue across subnets",
    "all instances that use an EFA must be in the same cluster placement group, which lies in one Availability Zone",
    "pass one subnet (subnet=...), e.g. vpc.private_subnets[0], in a VPC with a private subnet",
    "AWS Batch guide: Use an Elastic Fabric Adapter; EC2 guide: cluster placement groups",
)
RESERVATION_FALLBACK = Rule(
    "NEURON052",
    "Reservation fallback on a launch template",
    "a launch template names either a reservation to launch into or a reservation preference, not both; AWS Batch "
    "takes its capacity from the launch template",
    "drop fallback_to_on_demand, or add a second queue without capacity_reservation for On-Demand overflow",
    "EC2 API reference: LaunchTemplateCapacityReservationSpecificationRequest",
)
PARALLEL_DEGREES = Rule(
    "NEURON053",
    "Parallel degrees the job's NeuronCores cannot hold",
    "one training process runs per NeuronCore, and neuronx-distributed (like Megatron) refuses a world size that "
    "tensor_parallel x pipeline_parallel does not divide; the data-parallel degree is what is left",
    "choose degrees whose product divides {world} (nodes x {per_node} NeuronCores per node), or change nodes",
    "neuronx-distributed parallel_state.initialize_model_parallel; Neuron docs: Trn2 logical NeuronCores (LNC=2)",
)
MONITORING_TWICE = Rule(
    "NEURON054",
    "Neuron monitoring enabled twice on one cluster",
    "one neuron-monitor daemon runs per instance, and one recovery process acts on each hardware error; a second "
    "set of daemons would double every metric and race the first to replace instances",
    "make one NeuronMonitoring per cluster and build on it (cluster.monitoring)",
    "ECS guide: daemon scheduling strategy and Managed Daemons (one daemon task per instance)",
)
DEFAULT_ACTION_ACROSS_STACKS = Rule(
    "NEURON055",
    "Default action of a listener in another stack",
    "a listener's default action is a property of the listener, so a target group as the default action of a listener "
    "in another stack makes that stack depend on this one: the platform could no longer deploy first, nor the model "
    "stack delete alone",
    "pass conditions=[elbv2.ListenerCondition.path_patterns([...])] with priority= (a listener rule this stack owns), "
    "or attach in the stack of {listener}",
    "AWS CloudFormation guide: cross-stack references (an exporting stack cannot change or delete an export in use)",
)
IMPORTED_CLUSTER_PROVIDERS = Rule(
    "NEURON056",
    "Imported cluster whose capacity providers are not all listed",
    "an AWS::ECS::ClusterCapacityProviderAssociations resource sets a cluster's whole list of capacity providers and "
    "its default strategy (PutClusterCapacityProviders): a provider it does not list is disassociated from the "
    "cluster, two such resources for one cluster undo each other, and a default strategy may name only providers "
    "associated with the cluster",
    "pass existing_capacity_providers=[...] to NeuronCluster.from_cluster_attributes: the providers {cluster} has now "
    "(aws ecs describe-clusters --clusters {cluster} --query 'clusters[0].capacityProviders'), [] if none, and name "
    "in default_capacity_provider_strategy only those; import the cluster once per app",
    "ECS API reference: PutClusterCapacityProviders (defaultCapacityProviderStrategy)",
)
CLUSTER_NAME = Rule(
    "NEURON057",
    "Not an ECS cluster name",
    "an ECS cluster name is 1 to 255 letters, numbers, hyphens and underscores; an ARN is not a name",
    "pass cluster_name={name}",
    "ECS API reference: CreateCluster clusterName",
)
ACROSS_ENVIRONMENTS = Rule(
    "NEURON058",
    "Parts in different accounts or Regions",
    "ECS runs a service only on a cluster of its own account and Region, and a CloudWatch alarm notifies only an SNS "
    "topic of its own Region",
    "give {what} the account and Region of {other}",
    "ECS API reference: CreateService cluster; CloudWatch API reference: PutMetricAlarm AlarmActions",
)
ACROSS_VPCS = Rule(
    "NEURON059",
    "Parts in different VPCs",
    "a load balancer sends only to targets in its own VPC (or a peered one, as IP targets), and an AWS Batch compute "
    "environment launches its instances only in subnets of the VPC its security groups belong to",
    "use {fix}",
    "Elastic Load Balancing guide: target groups (target type ip, instance); AWS Batch API reference: "
    "ComputeResource subnets",
)
HEALTH_CHECK_PATH = Rule(
    "NEURON060",
    "Health check path without a leading /",
    "an Application Load Balancer health check path is a path on the target, and it begins with /",
    "pass health_check_path={path}",
    "Elastic Load Balancing API reference: CreateTargetGroup HealthCheckPath",
)
TRAINING_PUBLIC_SUBNET = Rule(
    "NEURON061",
    "Training nodes in a public subnet",
    "EC2 assigns no public IPv4 address to an instance launched with more than one network interface, so EFA "
    "training nodes in a public subnet have no route to ECR, AWS Batch or Amazon ECS and never join their queue",
    "pass subnet= a private subnet whose route table leads to a NAT gateway (the VPC's private_subnets)",
    "Amazon EC2 user guide: public IPv4 addresses (not assigned to an instance with multiple network interfaces)",
)
UNGRANTED_ECR_IMAGE = Rule(
    "NEURON062",
    "ECR image the job cannot pull",
    "a job's execution role pulls its image, and an ECR image named by URI (ContainerImage.from_registry) comes "
    "with no permission to pull it; AWS Batch's container definition does not expose the name to grant it",
    "pass ecs.ContainerImage.from_ecr_repository(ecr.Repository.from_repository_attributes(...), tag), which "
    "grants the execution role the pull",
    "Amazon ECR user guide: private registry authentication and repository policies (ecr:BatchGetImage)",
)
ALERT_TOPIC_ACCOUNT = Rule(
    "NEURON070",
    "Alert topic in another account",
    "EventBridge delivers to an SNS topic of another account of the same Region only through an execution role of "
    "the rule's account that the topic's own policy trusts; the library writes no policy in another account, and "
    "aws-cdk-lib routes a target of another account through an event bus of that account, which an imported topic "
    "does not have",
    "pass notifications= a topic of account {account} (the queue's), and subscribe the other account's endpoint to "
    "it, or forward from it",
    "EventBridge user guide: sending events to an AWS service in another account (execution role, target resource "
    "policy, same Region)",
)
SNAPSHOT_REMOVAL = Rule(
    "NEURON071",
    "Snapshot removal policy on a resource CloudFormation cannot snapshot",
    "CloudFormation's Snapshot deletion policy applies only to resources that support snapshots (EBS volumes, RDS, "
    "ElastiCache, Neptune, Redshift and a few others); a CloudWatch Logs group or an FSx for Lustre file system "
    "takes Delete or Retain",
    "pass {name}=RemovalPolicy.RETAIN to keep it after the stack, or RemovalPolicy.DESTROY to delete it with the "
    "stack (for a file system, back it up first: aws fsx create-backup)",
    "CloudFormation user guide: DeletionPolicy attribute",
)

BOUNDS_REVERSED = Rule(
    "NEURON075",
    "Lower bound above its upper bound",
    "an Application Auto Scaling scalable target keeps the task count from MinCapacity to MaxCapacity, so the "
    "minimum is at most the maximum; a rolling deployment keeps minimumHealthyPercent of the tasks running while it "
    "starts up to maximumPercent, and aws-cdk-lib takes the minimum only below the maximum",
    "pass {lower} or less, or {upper} or more",
    "Application Auto Scaling API reference: RegisterScalableTarget (MinCapacity, MaxCapacity); aws-cdk-lib "
    "aws-ecs BaseService (minHealthyPercent below maxHealthyPercent)",
)

UNREACHABLE_TARGETS = Rule(
    "NEURON076",
    "Load balancer targets the load balancer cannot reach",
    "a load balancer sends to a registered target only where the outbound rules of its security groups and the "
    "inbound rules of the target's allow the target port: the tasks' own groups on the container port in the awsvpc "
    "network mode, the container instance's groups on the host port in the bridge and host modes (bridge host ports "
    "are dynamic, 32768-60999 on Amazon Linux)",
    "allow TCP {ports} from {load_balancer} into {targets}, and out of the load balancer's group to them, as "
    "attach_to_listener does; aws-cdk-lib's target_group.add_target(service) opens no security group of an Auto "
    "Scaling capacity provider (aws/aws-cdk#22764)",
    "Elastic Load Balancing guide: target security groups; ECS API reference: PortMapping hostPort (the ephemeral "
    "range of /proc/sys/net/ipv4/ip_local_port_range)",
    checked="template",
)
ACROSS_APPS = Rule(
    "NEURON077",
    "Parts in different CDK apps",
    "a CDK app synthesizes its own constructs into one cloud assembly, and a stack refers to another stack's "
    "resources only within one app (aws-cdk-lib: CannotReferenceAcrossApps); what another app deployed is imported "
    "by name or ARN",
    "make both in one app, or import {other} into this one: {how}",
    "AWS CDK guide: apps, stacks and cross-stack references",
)

ROLLOUT_VALUE = Rule(
    "NEURON072",
    "Rollout value ECS or CloudFormation refuses",
    "ECS takes a canary percent from 0.1 to 100 and a linear step from 3 to 100, both in steps of 0.1, and bake "
    "times and intervals of 0 to 1,440 whole minutes; CloudFormation rejects a canary or linear deployment whose "
    "calculated time (bake time plus the interval, or plus the interval for every step but the last) exceeds 33 "
    "hours, since its operations time out after 36",
    "pass the values the sentence names, within those ranges",
    "ECS API reference: CanaryConfiguration, LinearConfiguration, DeploymentConfiguration (bakeTimeInMinutes); "
    "CloudFormation template reference: AWS::ECS::Service CanaryConfiguration and LinearConfiguration",
)
ROLLOUT_TRAFFIC = Rule(
    "NEURON073",
    "Native rollout without the traffic path it shifts",
    "ECS shifts production traffic of a canary or linear deployment only through Elastic Load Balancing or Service "
    "Connect; with an Application Load Balancer it moves the weights of one listener rule between the service's "
    "production and alternate target groups (advancedConfiguration.productionListenerRule), so the service needs "
    "a listener rule of its own, never the listener's default action, and one target group per rollout",
    "{fix}",
    "ECS guide: required resources for Amazon ECS blue/green deployments; Application Load Balancer resources for "
    "blue/green, linear, and canary deployments; ECS API reference: AdvancedConfiguration",
)
ROLLOUT_ROOM = Rule(
    "NEURON074",
    "Rollout the capacity cannot hold",
    "a blue/green, canary or linear deployment starts the green revision at the full desired count before it "
    "shifts any traffic and keeps blue until the bake time ends, so the capacity holds both revisions at once: "
    "twice the chips, NeuronCores, CPU and memory of the service; green tasks that do not fit wait in PROVISIONING "
    "until the deployment times out",
    "{fix}",
    "ECS guide: blue/green deployments, best practices (plan for sufficient cluster capacity to handle both service "
    "revisions during deployment)",
)
ROLLOUT_ON_FLEET = Rule(
    "NEURON078",
    "Rollout a fleet model's copies cannot take",
    "ECS shifts traffic per service, through the weights of one listener rule between that service's two target "
    "groups; a fleet model's copies are separate services behind one target group and rule, so the model rolls out "
    "copy by copy: canary and linear stages of copies, each checked by the deployment alarms before the next, with "
    "no test traffic before production and no blue/green switch of the whole model",
    "{fix}",
    "ECS guide: Application Load Balancer resources for blue/green, linear, and canary deployments; ECS API "
    "reference: DeploymentAlarms (rolling update)",
)
SMOKE_TEST = Rule(
    "NEURON079",
    "Smoke test ECS or Lambda cannot run",
    "the smoke test's function sends one HTTP request to a path from / in printable ASCII, with a method HTTP "
    "defines and a body only where the method carries one, and expects an HTTP status (100-599) within its "
    "timeout; a Lambda function runs at most 900 s, of which the function keeps 30 s",
    "pass SmokeTest(path='/...', method=, expect_status=, timeout=) within those limits",
    "ECS guide: lifecycle hooks for Amazon ECS service deployments; Lambda guide: function timeout (900 s)",
)
SMOKE_TEST_ENVIRONMENT = Rule(
    "NEURON080",
    "Smoke test larger than a function's environment",
    "the smoke test's function reads its request from its environment variables (the test listener's URL, the "
    "path, the body and the header), and Lambda keeps all of a function's environment variables, names and values "
    "together, within 4 KB",
    "shorten the {what}: the smoke test's environment must fit in 4,096 bytes",
    "Lambda guide: Lambda quotas (function environment variables, 4 KB in aggregate)",
)
DEPLOYMENT_ALARM_BEHAVIOR = Rule(
    "NEURON135",
    "Deployment alarms with two behaviors",
    "ECS takes one list and one behavior for all of a service's deployment alarms (DeploymentAlarms: alarmNames, "
    "enable, rollback): a rollout's alarms roll the deployment back, so alarms of the same service cannot only fail it",
    "give your alarms AlarmBehavior.ROLLBACK_ON_ALARM (the default), or roll the service out with alarms=False",
    "ECS API reference: DeploymentAlarms; ECS guide: how CloudWatch alarms detect Amazon ECS deployment failures",
)
OPEN_TEST_RULE = Rule(
    "NEURON136",
    "Rollout test traffic open to the internet",
    "a listener rule forwards every request that matches its conditions, from any client that reaches its listener; "
    "a header is no credential, so on an internet-facing load balancer anyone who sends the test header reaches the "
    "green tasks while a rollout tests them, before they passed the smoke test",
    "give the load balancer a test listener (NeuronLoadBalancer(test_port=...)), which admits only the smoke test's "
    "own security group, or drop smoke_test=",
    "Elastic Load Balancing guide: listener rules for your Application Load Balancer (rule conditions); ECS guide: "
    "Application Load Balancer resources for blue/green, linear, and canary deployments (test listener rule)",
)

PUBLISHED_NAME = Rule(
    "NEURON082",
    "Not a Parameter Store name prefix",
    "a Parameter Store parameter name in a hierarchy begins with a slash and holds only letters, numbers and "
    "_ . - between slashes, is at most 15 levels deep and 1,011 characters long with its ARN, and may not begin with "
    "aws or ssm (any case)",
    "pass prefix={prefix}: the same in the app that publishes and in every app that imports",
    "Systems Manager API reference: PutParameter Name (naming constraints)",
)
PUBLISHED_CLUSTER_CAPACITY = Rule(
    "NEURON083",
    "Auto Scaling capacity on a cluster another app owns",
    "an AWS::ECS::ClusterCapacityProviderAssociations resource sets a cluster's whole list of capacity providers "
    "(PutClusterCapacityProviders): the platform's association and one in another app would each drop the other's "
    "providers on every deploy; a Managed Instances capacity provider is created in its cluster and needs none",
    "add Managed Instances capacity to {cluster} (add_managed_instances_capacity), or add the Auto Scaling capacity in "
    "the app that owns the cluster",
    "ECS API reference: PutClusterCapacityProviders, CreateCapacityProvider (cluster)",
)
AMI_RELEASE = Rule(
    "NEURON086",
    "Not a release of the ECS Neuron AMI",
    "each release of the ECS-optimized Amazon Linux 2023 Neuron AMI has its own public SSM parameter, "
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/al2023-ami-ecs-neuron-hvm-2023.0.<YYYYMMDD>-kernel-"
    "<kernel>-x86_64/image_id, named after the AMI",
    "pass a release as neuron-ecs ami --releases lists it, e.g. NeuronAmi.release('2023.0.20261113'), or "
    "NeuronAmi.recommended()",
    "ECS guide: retrieving Amazon ECS-optimized Linux AMI metadata; aws/amazon-ecs-ami al2023neu.pkr.hcl (AMI name)",
)
AMI_ROLLOUT = Rule(
    "NEURON087",
    "AMI rollout below the services' minimum healthy tasks",
    "an instance refresh replaces instances in batches of the group; with managed draining ECS stops an instance's "
    "tasks as its services' deployment settings allow, so a batch that takes away more instances than the rest can "
    "spare leaves a service below its minimum healthy tasks, or the refresh waiting on draining that cannot finish; "
    "a model whose copies are packed several to an instance loses that many tasks with each instance",
    "{fix}",
    "EC2 Auto Scaling guide: instance refresh (minimum and maximum healthy percentage); ECS guide: managed "
    "instance draining",
)

DRIVER_OUTSIDE_RUNTIME = Rule(
    "NEURON088",
    "Pinned Neuron AMI whose driver the image's runtime does not run on",
    "the Neuron runtime in a container and the Neuron driver on the host must match, both ways: runtime 2.32 and later "
    "do not run on driver 2.26 or earlier, and driver 2.29 and later require runtime 2.33 or later; a mismatch fails "
    "at nrt_init(), when the model loads",
    "pin an AMI release whose driver the image's runtime runs on, or move the image to a Neuron SDK release whose "
    "runtime runs on that driver (neuron_constructs.knowledge.neuron_releases lists both)",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); aws/amazon-ecs-ami "
    "scripts/enable-ecs-agent-inferentia-support.sh (the AMI installs the newest driver at build)",
)
DRIVER_CHECK_INPUT = Rule(
    "NEURON089",
    "Driver start check without what it needs",
    "the start check compares the host's Neuron driver (/sys/module/neuron/version) with the driver range of the "
    "image's Neuron SDK release, then runs the container's own entry point; it needs both",
    "{fix}",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues)",
)
WARM_UP_ROOM = Rule(
    "NEURON091",
    "Warm pool root volume smaller than what its warm-up fetches",
    "a warm-pooled instance pulls the images and copies the model artifacts of its services onto its root volume "
    "before it stops, and the ECS Neuron AMI already takes its 30 GiB snapshot of it; Docker keeps an image "
    "unpacked, larger than the registry reports; a full volume fails the pull, the copy or the task that starts later",
    "pass root_volume_gib={needed} or more to add_ec2_capacity (or fetch less on this capacity)",
    "aws/amazon-ecs-ami al2023neu.pkr.hcl and variables.pkr.hcl (block_device_size_gb 30); ECR API: ImageDetail "
    "imageSizeInBytes (compressed; docker images shows the larger uncompressed size)",
    checked="both",
)

WARM_POOL_REUSE = Rule(
    "NEURON084",
    "Warm pool that returns instances on scale in",
    "a warm pool of an Auto Scaling group registered with Amazon ECS cannot set the option that returns instances to "
    "the warm pool on scale in (ReuseOnScaleIn)",
    "drop reuse_on_scale_in from the WarmPool: instances that scale in are terminated and the pool launches fresh ones",
    "ECS guide: configuring pre-initialized instances for your Amazon ECS Auto Scaling group (warm pools)",
)
WARM_POOL_SPOT = Rule(
    "NEURON085",
    "Warm pool on Spot capacity",
    "a warm pool cannot be put on an Auto Scaling group that has a mixed instances policy or a launch template that "
    "requests Spot Instances",
    "drop warm_pool, or use On-Demand capacity (spot=False) for the warm-pooled group",
    "EC2 Auto Scaling API reference: PutWarmPool",
)
IMAGE_UNSUPPORTED_ON_FAMILY = Rule(
    "NEURON131",
    "Neuron container image Neuron does not support on its instance type",
    "Neuron no longer supports NxD Inference and the NxD Core inference APIs on Trn2 and Trn3 from Neuron 2.34.0, "
    "for any release: no further releases, bug fixes or security patches there; the legacy vLLM 0.16 image and the "
    "PyTorch inference image carry them (and the latter PyTorch/XLA inference, which ends there too). The runtime of "
    "Neuron SDK 2.21.0 and later removed Inf1",
    "run {fix_constant} ({fix_uri}) on this type, from neuron_constructs.knowledge.container_images; or place the "
    "model on a type it supports ({families})",
    "Neuron announcements: no support for NxD Inference and NxD Core inference APIs on Trn2 and Trn3 starting with "
    "Neuron 2.34 (November 17, 2026), no support for PyTorch/XLA inference on Trn2 and Trn3 starting with Neuron "
    "2.34; AWS Neuron SDK 2.34.0 release (vLLM Neuron generally available); Neuron runtime "
    "release notes 2.21.0",
)

IMAGE_SDK = Rule(
    "NEURON146",
    "Stated Neuron SDK release the table does not know, or that the image's tag contradicts",
    "the driver checks (NEURON088, NEURON127, the start check) compare the driver range of the image's Neuron SDK "
    "release with the host's driver: the release must be one whose runtime the release table knows, and an image "
    "whose tag names a release (-sdkX.Y.Z-) is built with that one",
    "{fix}",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); knowledge.neuron_releases (the release table)",
)
PUBLISHED_TWICE = Rule(
    "NEURON148",
    "One Parameter Store name published by two stacks of one app",
    "a Parameter Store name exists once per account and Region: CloudFormation creates an AWS::SSM::Parameter with "
    "PutParameter without overwrite, so the second stack that declares the name fails its deploy with "
    "ParameterAlreadyExists",
    "publish each platform under a prefix of its own ({stacks} both publish it), or publish once and import it in the "
    "other stack (PublishedPlatform)",
    "CloudFormation resource reference: AWS::SSM::Parameter (Name); Systems Manager API reference: PutParameter "
    "(Overwrite, ParameterAlreadyExists)",
)

PUBLISHED_WRITERS = Rule(
    "NEURON149",
    "Write protection of a published platform without its writer",
    "the deny statement on a published platform's prefix exempts the principals that publish it (aws:PrincipalArn, "
    "the ARN of an IAM role); with none, or with a value that is no role ARN, the platform's own deploy is denied too",
    "pass writers=[<the ARN of the role that deploys the platform>]: with the CDK's default bootstrap, "
    "arn:aws:iam::<account>:role/cdk-hnb659fds-cfn-exec-role-<account>-<region>",
    "IAM User Guide: global condition context keys (aws:PrincipalArn), policy evaluation logic",
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
SMALL_ROOT_VOLUME = Rule(
    "NEURON102",
    "Root volume under 100 GiB",
    "Neuron framework images are large; AWS's Neuron blueprints size the root volume at 100 GiB or more",
    "pass root_volume_gib=100 or more",
    "ecs-blueprints vllm-inferentia",
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
PINNED_AMI = Rule(
    "NEURON105",
    "Pinned AMI instead of the recommended Neuron AMI",
    "the EC2 launch type uses the ECS-optimized Amazon Linux 2023 (Neuron) AMI resolved from "
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended",
    "make sure the pinned AMI carries the Neuron driver and runtime, and move it forward with each release",
    ECS_NEURON_PAGE,
    severity="warning",
    checked="both",
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
HOST_NETWORK = Rule(
    "NEURON107",
    "Host network mode on a Neuron task",
    "in the host network mode a container shares the instance's network namespace, so neither the IMDS hop "
    "limit nor ECS_AWSVPC_BLOCK_IMDS keeps it from the instance role's credentials",
    "use the bridge or awsvpc network mode, or acknowledge this warning id if the container needs the host "
    "network and may act as the instance role",
    "ECS guide: task IAM roles (blocking instance metadata); AWS re:Post ecs-container-ec2-metadata",
    severity="warning",
    checked="both",
)
PUBLIC_SUBNETS = Rule(
    "NEURON108",
    "Capacity in public subnets",
    "ECS container instances need no public address: they reach ECS, ECR and CloudWatch through a NAT "
    "gateway or VPC endpoints, and instances in public subnets get one",
    "pass NeuronCluster(capacity_subnets=...) a selection of private subnets, e.g. "
    "ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)",
    "ECS best practices guide: networking",
    severity="warning",
    checked="both",
)
SECRET_IN_ENVIRONMENT = Rule(
    "NEURON109",
    "Secret-looking value in the environment",
    "environment values are plain text in the task definition, readable by anyone who can describe it; ECS "
    "injects Secrets Manager and SSM Parameter Store values through secrets",
    "pass {name} through secrets= (ecs.Secret.from_secrets_manager or ecs.Secret.from_ssm_parameter), or "
    "acknowledge this warning id if the value is not secret",
    "ECS guide: passing sensitive data to a container",
    severity="warning",
    checked="both",
)
METADATA_REACHABLE = Rule(
    "NEURON110",
    "Instance metadata reachable from containers",
    "AMIs registered with IMDS support v2.0 (Amazon Linux 2023) launch with a hop limit of 2 unless the launch "
    "template says otherwise; IMDSv2 with a hop limit of 1 keeps bridge-mode containers from the instance role",
    "set MetadataOptions HttpTokens: required and HttpPutResponseHopLimit: 1 on the launch template",
    "EC2 API reference: Image ImdsSupport, InstanceMetadataOptions",
    severity="warning",
    checked="template",
)

SHORT_GRACE_PERIOD = Rule(
    "NEURON111",
    "Health check grace period shorter than a Neuron start",
    "ECS stops a task that fails its load balancer or container health checks once the grace period is over; a Neuron "
    "model server answers only after download, compile and load (AWS's vLLM container: 5-10 minutes; a 15 GB "
    "model: about 15 minutes to compile)",
    "pass health_check_grace_period=Duration.minutes(30) (the default) or longer, sized as download + compile + load "
    "of a first start; acknowledge this warning id if the image starts from compiled artifacts",
    "ECS API reference: healthCheckGracePeriodSeconds; aws-neuron-sdk: DLC quickstart, NxD Inference vLLM guide",
    severity="warning",
)
INF1_OUT_OF_SUPPORT = Rule(
    "NEURON113",
    "Inf1 on Neuron SDK releases that no longer support it",
    "Neuron SDK 2.21.0 (runtime 2.23) removed Inf1 support from the runtime (the last Inf1 container images are "
    "Neuron SDK 2.20.2's), Neuron no longer supports Inf1 environments and AMIs from 2.27, and the ECS Neuron AMI "
    "pins the Inf1 driver to 2.21 at boot (the last driver Neuron supports on Inf1 is 2.24, its correction of March "
    "12, 2026 says)",
    "run images of Neuron SDK 2.20.2 or earlier on Inf1 (public.ecr.aws/neuron/pytorch-inference-neuron:"
    "1.13.1-neuron-py310-sdk2.20.2-ubuntu20.04), or move the model to Inf2; acknowledge this warning id once you have",
    "Neuron runtime release notes 2.21.0; Neuron announcements: end of support for Inf1 virtual environments and "
    "AMIs; aws/amazon-ecs-ami scripts/al2023/neuron/neuron-inf1-downgrade.sh",
    severity="warning",
)
UNMONITORED_SCALING = Rule(
    "NEURON114",
    "Scaling on NeuronCore utilization no monitoring in this app publishes",
    "scale_on_neuron_utilization tracks the per-model NeuronCore utilization the NeuronMonitoring daemon publishes "
    "from neuron-monitor on each instance; with no daemon on the capacity the metric has no data, and target "
    "tracking neither scales out nor in",
    "cover the capacity with NeuronMonitoring (NeuronMonitoring(cluster=...) or monitoring.cover(capacity)), or "
    "acknowledge this warning id when a monitor outside this app publishes the metric for the cluster",
    "Application Auto Scaling guide: target tracking scaling policies (metrics with no data)",
    severity="warning",
)
PRIVILEGED_CONTAINER = Rule(
    "NEURON115",
    "Privileged or host-network container",
    "a privileged container holds every capability and device of the instance, so it can act as the instance; a "
    "container of a host-network task, or of a single-node AWS Batch job on EC2 (which Batch runs in the host "
    "network only), or one a launch template's user data runs with docker run --privileged or --network host, "
    "reaches the instance metadata service past the hop limit of 1 and ECS_AWSVPC_BLOCK_IMDS: either can use the "
    "instance role, whose ecs:Poll returns the credentials of every task on the instance (their task roles, their "
    "secrets)",
    "drop privileged (map the devices and add the capabilities it needs) and use the bridge or awsvpc network "
    "mode (a Batch job on EC2: a multi-node parallel job, whose nodes run in awsvpc); acknowledge this warning id "
    "with the reason the container needs it",
    "ECS guide: task IAM roles (instance role, blocking instance metadata); ECS API reference: ContainerDefinition "
    'privileged ("the container is given elevated privileges on the host container instance, similar to the root '
    'user"), TaskDefinition networkMode; ECS guide: Amazon ECS container instance IAM role (ecs:Poll); AWS Batch '
    "guide: networking modes for AWS Batch jobs",
    severity="warning",
    checked="template",
)
UNPINNED_LIBRARY_DAEMON = Rule(
    "NEURON116",
    "Library container running privileged or in the host network by tag",
    "no published source gives the digest of the tag the library runs this privileged or host-network container "
    "from (neuron-monitor; the warm-up's AWS CLI), so it runs by the tag, which can be moved to other bytes",
    'pass {argument}={constant}.pinned("sha256:..."): the digest your registry reports for {uri} '
    "(`neuron-ecs digests` resolves it); acknowledge this warning id if you accept the tag",
    "Docker docs: image digests; neuron_constructs.knowledge.container_images (NEURON_MONITOR, AWS_CLI)",
    severity="warning",
)
EVERY_REPLICA_STOPS = Rule(
    "NEURON112",
    "Deployment that stops every replica",
    "with minimumHealthyPercent 0 ECS may stop every task of a service before it starts new ones; a Neuron service "
    "on capacity it fills has no room for a new task beside the old one",
    "give the capacity room for one more instance (max_capacity above the tasks it runs), or run two or more "
    "tasks, or slices, which deploy in two waves; acknowledge this warning id if a pause is acceptable",
    "ECS API reference: DeploymentConfiguration (minimumHealthyPercent)",
    severity="warning",
)
OPEN_PLAIN_HTTP = Rule(
    "NEURON119",
    "Internet-facing load balancer serving plain HTTP to everyone",
    "an internet-facing Application Load Balancer in public subnets, open to 0.0.0.0/0 or ::/0, without a "
    "certificate listens on HTTP: requests and model answers cross the internet unencrypted",
    "pass certificate= an ACM certificate (HTTPS, TLS 1.3 policy), or clients= the ranges that may connect; "
    "acknowledge this warning id if plain HTTP to everyone is deliberate",
    "Elastic Load Balancing guide: HTTPS listeners for your Application Load Balancer",
    severity="warning",
)
KEPT_FILE_SYSTEM_IN_OWN_VPC = Rule(
    "NEURON120",
    "File system kept after the stack in a VPC the stack deletes",
    "a retained FSx for Lustre file system keeps its network interfaces in its subnet and its security group, so "
    "CloudFormation cannot delete the subnet, the security groups or the VPC the queue made, and cdk destroy fails "
    "(DELETE_FAILED) until the file system is deleted",
    "pass vpc= a VPC that outlives this stack, or LustreStorage(removal_policy=RemovalPolicy.DESTROY) when the linked "
    "bucket holds what matters, or delete the file system before cdk destroy (docs/deploying.md); acknowledge this "
    "warning id once you have",
    "Amazon VPC user guide: delete a subnet (network interfaces in use); CloudFormation user guide: DeletionPolicy "
    "attribute",
    severity="warning",
)

BLUE_GREEN_WITHOUT_TRAFFIC = Rule(
    "NEURON121",
    "Blue/green rollout that shifts no traffic",
    "a blue/green deployment of a service with neither a load balancer nor Service Connect starts green next to "
    "blue and then stops blue, but ECS manages no traffic shift between them and runs no test traffic",
    "attach the service to a listener (attach_to_listener) or Service Connect, or roll it out rolling; acknowledge "
    "this warning id if clients find the tasks another way",
    "ECS guide: required resources for Amazon ECS blue/green deployments",
    severity="warning",
)
ROLLOUT_WITHOUT_NEURON_ALARM = Rule(
    "NEURON122",
    "Rollout alarms without the chips' own signal",
    "the rollout's Neuron alarm watches the model's ExecutionErrors, which the NeuronMonitoring daemon publishes "
    "from neuron-monitor; with no monitoring of this app on the capacity the rollout rolls back only on the load "
    "balancer's 5xx answers and response time",
    "cover the capacity with NeuronMonitoring (NeuronMonitoring(cluster=...) or monitoring.cover(capacity)); "
    "acknowledge this warning id when the load balancer's alarms are enough",
    "ECS guide: how CloudWatch alarms detect Amazon ECS deployment failures",
    severity="warning",
)

SMOKE_TEST_TLS_NAME = Rule(
    "NEURON123",
    "Smoke test over HTTPS to the load balancer's own name",
    "the smoke test's function checks the listener's certificate against the URL's host name, as every HTTPS client "
    "does; an ACM certificate names a domain you validated, never the load balancer's own DNS name under "
    "elb.amazonaws.com, so a request to that name fails its TLS check and every deployment rolls back",
    "pass url= with a host name the listener's certificate covers (your domain's record for the load balancer), or "
    "a test listener on HTTP; acknowledge this warning id if the host, known only at deploy time, is such a name",
    "ACM user guide: domain validation for public certificates; Python documentation: ssl.create_default_context "
    "(check_hostname)",
    severity="warning",
)
DRIVER_CHECK_REFUSES_CURRENT = Rule(
    "NEURON126",
    "Driver start check that the newest Neuron driver fails",
    "an ECS Neuron AMI built today carries the newest Neuron driver, and the image's runtime does not run on it: "
    "every instance launched from a new recommended AMI will stop this container at its start check",
    "move the image to a Neuron SDK release whose runtime runs on the newest driver, or pin an AMI release "
    "(2023.0.YYYYMMDD) whose driver it runs on; acknowledge this warning id if the capacity keeps an older AMI",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); aws/amazon-ecs-ami "
    "scripts/enable-ecs-agent-inferentia-support.sh",
    severity="warning",
)
IMAGE_BEHIND_NEWEST_DRIVER = Rule(
    "NEURON127",
    "Image the newest Neuron driver does not run, on capacity that follows the recommended AMI",
    "capacity that follows the recommended ECS Neuron AMI launches new instances with the newest Neuron driver (the "
    "AMI build installs it), and the runtime of the image's Neuron SDK release does not run on that driver: on such "
    "an instance the container fails at nrt_init(), when the model loads, minutes into its start",
    "pin an AMI release whose driver the image's runtime runs on, machine_image=NeuronAmi.release('2023.0.YYYYMMDD') "
    "(container_images.NEEDS_AMI_BEFORE gives the dates for the library's images), or move the image to a Neuron "
    "SDK release whose runtime runs on the newest driver; driver_check=True stops the container with one line "
    "instead (NEURON126 then warns in place of this); acknowledge this warning id if the instances keep an older AMI",
    "Neuron runtime release notes 2.31.0 (Known Issues: 'Neuron Driver 2.29 requires Neuron Runtime Library 2.33 or "
    "later'); aws/amazon-ecs-ami scripts/enable-ecs-agent-inferentia-support.sh",
    severity="warning",
)

REFRESH_INTO_RESERVED_CAPACITY = Rule(
    "NEURON128",
    "AMI rollout that launches before it terminates, into reserved capacity only",
    "an instance refresh whose MaxHealthyPercentage is above 100 launches each batch's new instances before it "
    "terminates the old ones, so it needs that many instances beyond those running; a group that launches only into "
    "a Capacity Reservation (capacity-reservations-only) or a Capacity Block gets none once the reservation is full, "
    "and the refresh waits for capacity until it fails",
    "reserve {batch} more instance(s) than the group runs, let the group fall back to On-Demand "
    "(CapacityReservation.on_demand(..., fallback_to_on_demand=True)), or terminate first "
    "(AmiRollout(launch_before_terminate=False), which NEURON087 checks against the services' minimum healthy tasks); "
    "acknowledge this warning id if the reservation keeps room for a batch",
    "EC2 Auto Scaling API: RefreshPreferences (MinHealthyPercentage, MaxHealthyPercentage); EC2 Auto Scaling guide: "
    "use Capacity Reservations (capacity-reservations-only); EC2 guide: Capacity Blocks for ML",
    severity="warning",
)

RECOMMENDED_AMI = Rule(
    "NEURON125",
    "The recommended Neuron AMI changes on deploys",
    "the launch template resolves /aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id at "
    "every deploy; AWS publishes a new ECS AMI about weekly, and the next deploy after one writes a new launch "
    "template version: instances launched after it run the new AMI (a new Neuron driver), those running keep the old",
    "pin a release, machine_image=NeuronAmi.release('2023.0.YYYYMMDD') (neuron-ecs ami --releases), which changes "
    "only when you change it and then rolls the group (ami_rollout); or acknowledge this warning id to follow the "
    "recommended AMI",
    "ECS guide: retrieving Amazon ECS-optimized Linux AMI metadata (the SSM parameter is checked on every deploy)",
    severity="warning",
)

NOT_PREFETCHED = Rule(
    "NEURON124",
    "Warm pool that cannot prefetch a service's image or model",
    "the warm-up of a warm-pooled instance fetches what it can name when the capacity's stack is synthesized: images "
    "named by a literal reference and the model artifacts of services in the capacity's own stack; a service in "
    "another stack (the capacity's template would then depend on the service's) or an image named by a token is "
    "fetched when its task is placed, as on a cold instance",
    "name the image by its reference (ContainerImage.from_registry), or put the service in the capacity's stack; "
    "acknowledge this warning id when a cold pull of it is acceptable",
    "ECS guide: configuring pre-initialized instances for your Amazon ECS Auto Scaling group (warm pools); "
    "ECS agent configuration: ECS_IMAGE_PULL_BEHAVIOR",
    severity="warning",
)

RESERVATION_REFERENCE = Rule(
    "NEURON140",
    "Capacity Reservation named in a form its property does not take",
    "an Auto Scaling group takes On-Demand Capacity Reservations by id (CapacityReservationIds: letters, digits, - _ "
    "and /, such as cr-0123456789abcdef0) and reservation groups by resource group ARN "
    "(CapacityReservationResourceGroupArns); a launch template takes a Capacity Block by its id "
    "(CapacityReservationTarget.CapacityReservationId). A value of the other form fails at deploy",
    "{fix}",
    "EC2 Auto Scaling API reference: CapacityReservationTarget (CapacityReservationIds pattern and length); "
    "EC2 API reference: CapacityReservationTarget",
)

WARM_POOL_HIBERNATION = Rule(
    "NEURON141",
    "Hibernated warm pool on a type that cannot hibernate",
    "an instance hibernates only if its type is of a family EC2's hibernation prerequisites list (no Inferentia or "
    "Trainium family is), it is not bare metal, it has less than 150 GB of RAM, and hibernation was enabled when it "
    "launched (HibernationOptions in the launch template)",
    "pass WarmPool(state=PoolState.STOPPED) (the default: you pay for the volumes only) or PoolState.RUNNING",
    "EC2 user guide: prerequisites for EC2 instance hibernation (instance families, instance RAM size, enable "
    "hibernation at launch); EC2 Auto Scaling guide: warm pools (pool state Hibernated)",
)

MOVING_TAG_CACHED = Rule(
    "NEURON142",
    "Image by a tag that moves, on capacity that prefers cached images",
    "with ECS_IMAGE_PULL_BEHAVIOR=prefer-cached (a warm pool's prefetch) the ECS agent pulls an image only when it is "
    "not on the instance: once the warm-up pulled a tag such as :latest, a task placed there runs those bytes even "
    "after the tag has moved, and instances warmed at different times run different images under one tag",
    "name the image by a tag you never move (a version) or by its digest (repository@sha256:...), or pass "
    "WarmPool(prefetch=False) to let the agent pull as usual; acknowledge this warning id if the tag never moves",
    "ECS agent configuration: ECS_IMAGE_PULL_BEHAVIOR (prefer-cached); Docker docs: image digests",
    severity="warning",
)

UNKNOWN_IMAGE_SDK = Rule(
    "NEURON147",
    "Image of unknown Neuron SDK on a pinned AMI: the driver check could not run",
    "the library compares the driver of a pinned ECS Neuron AMI release with the driver range of the image's Neuron "
    "SDK release (NEURON088), which it reads from a -sdkX.Y.Z- tag; an image whose tag names none (a team's own "
    "image, team/llm-server:v42) is not checked, and a mismatch fails at nrt_init(), when the model loads",
    "state the image's release where the image is given, neuron_sdk='2.31.1' (add_neuron_container, "
    "SlicedNeuronService, NeuronFleet.add_model, NeuronTrainingQueue.add_job); acknowledge this warning id if the "
    "image runs no Neuron runtime",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues)",
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
    UNPINNED_MANUAL_TASK,
    COPIES_SHARE_INSTANCE,
    SHARED_DEVICE,
    CONTAINERS_EXCEED_TASK,
    NO_TASK_MEMORY,
    WRONG_TYPE,
    OUT_OF_RANGE,
    TOKEN_NOT_LITERAL,
    NEURON_CONTAINER_STRIPPED,
    NEURON_TYPE_WITHOUT_NEURON_AMI,
    UNKNOWN_EC2_TYPE,
    DEPLOYMENT_WITHOUT_ROOM,
    NO_SUBNETS,
    NETWORK_OPTION_IGNORED,
    SECOND_SCALING_TARGET,
    UNDECLARED_DEVICE,
    SPOT_WITH_RESERVATION,
    CAPACITY_BLOCK_TYPE,
    MANAGED_INSTANCES_RESERVATION,
    DEPLOYMENT_STALLS,
    NO_TARGET_PORT,
    LISTENER_RULE,
    NETWORK_LOAD_BALANCER_GROUP,
    REQUEST_SCALING_TARGET,
    UNKNOWN_VPC_RANGE,
    FLEET_FULL,
    S3_LOCATION,
    MULTI_NODE_WITHOUT_EFA,
    TOO_MANY_NODES,
    MULTI_NODE_ON_SPOT,
    TRAINING_SUBNETS,
    RESERVATION_FALLBACK,
    PARALLEL_DEGREES,
    MONITORING_TWICE,
    DEFAULT_ACTION_ACROSS_STACKS,
    IMPORTED_CLUSTER_PROVIDERS,
    CLUSTER_NAME,
    ACROSS_ENVIRONMENTS,
    ACROSS_VPCS,
    HEALTH_CHECK_PATH,
    TRAINING_PUBLIC_SUBNET,
    UNGRANTED_ECR_IMAGE,
    CORE_SLICE,
    LOGICAL_CORES,
    NO_SPOT,
    CHECKPOINT_DIR,
    MODEL_NAME,
    UNPINNED_PRIVILEGED_IMAGE,
    BOUNDS_REVERSED,
    UNREACHABLE_TARGETS,
    ACROSS_APPS,
    ROLLOUT_VALUE,
    ROLLOUT_TRAFFIC,
    ROLLOUT_ROOM,
    ROLLOUT_ON_FLEET,
    SMOKE_TEST,
    SMOKE_TEST_ENVIRONMENT,
    DEPLOYMENT_ALARM_BEHAVIOR,
    OPEN_TEST_RULE,
    PUBLISHED_NAME,
    PUBLISHED_CLUSTER_CAPACITY,
    DRIVER_OUTSIDE_RUNTIME,
    DRIVER_CHECK_INPUT,
    AMI_RELEASE,
    AMI_ROLLOUT,
    WARM_UP_ROOM,
    WARM_POOL_REUSE,
    WARM_POOL_SPOT,
    ALERT_TOPIC_ACCOUNT,
    SNAPSHOT_REMOVAL,
    DEVICE_TOPOLOGY,
    SMALL_ROOT_VOLUME,
    MEMORY_NEAR_INSTANCE_TOTAL,
    NO_NEURON_CONTAINER,
    PINNED_AMI,
    AWSVPC_WITHOUT_TRUNKING,
    HOST_NETWORK,
    PUBLIC_SUBNETS,
    SECRET_IN_ENVIRONMENT,
    METADATA_REACHABLE,
    SHORT_GRACE_PERIOD,
    EVERY_REPLICA_STOPS,
    INF1_OUT_OF_SUPPORT,
    UNMONITORED_SCALING,
    PRIVILEGED_CONTAINER,
    UNPINNED_LIBRARY_DAEMON,
    OPEN_PLAIN_HTTP,
    KEPT_FILE_SYSTEM_IN_OWN_VPC,
    BLUE_GREEN_WITHOUT_TRAFFIC,
    ROLLOUT_WITHOUT_NEURON_ALARM,
    SMOKE_TEST_TLS_NAME,
    DRIVER_CHECK_REFUSES_CURRENT,
    IMAGE_BEHIND_NEWEST_DRIVER,
    RECOMMENDED_AMI,
    NOT_PREFETCHED,
    REFRESH_INTO_RESERVED_CAPACITY,
    IMAGE_UNSUPPORTED_ON_FAMILY,
    RESERVATION_REFERENCE,
    WARM_POOL_HIBERNATION,
    MOVING_TAG_CACHED,
    IMAGE_SDK,
    UNKNOWN_IMAGE_SDK,
    PUBLISHED_TWICE,
    PUBLISHED_WRITERS,
)
"""Every rule, in id order: the one table the checks, the docs' rule table and the tests read."""
BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
"""Every rule by its id."""
