"""Cluster capacity for Neuron: ECS Managed Instances and EC2 Auto Scaling groups.

Both are built by :class:`~neuron_constructs.compute.cluster.NeuronCluster`; the
classes here hold what each capacity created, as public attributes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import jsii
from aws_cdk import Aws, Duration, Fn, Size, Stack, Validations
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct, IValidation

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.l1_overrides import (
    optimize_managed_instances,
    reserve_auto_scaling_capacity,
    reserve_managed_instances_capacity,
)
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.model_sources import ModelArtifacts
from neuron_constructs.compute.warm_pool import (
    WARM_UP_TIMEOUT,
    WarmPool,
    check_warm_pool,
    warn_about_unpinned_cli_image,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NEURON_AMI_IMAGE_ID_PARAMETER, NeuronAmi
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.container_images import AWS_CLI
from neuron_constructs.knowledge.cores import LNC_FILE, LOGICAL_CORE_VARIABLE
from neuron_constructs.knowledge.instance_refresh import refresh_room
from neuron_constructs.knowledge.warm_start import (
    LIFECYCLE_HOOK_NAME,
    MODELS_DIRECTORY,
    PREFETCH_AGENT_SETTINGS,
    WARM_POOL_AGENT_SETTINGS,
    WARM_UP_FILE,
    Fetched,
    Prefetch,
    RootVolumeRoom,
    ecr_registry,
    moving_tag,
    root_volume_room,
    warm_up_script,
)

__all__ = [
    "DEFAULT_AUTO_REPAIR",
    "DEFAULT_MANAGED_INSTANCES_ACCELERATORS",
    "DEFAULT_MANAGED_INSTANCES_TYPES",
    "DEFAULT_ROOT_VOLUME_GIB",
    "DEFAULT_SCALE_IN_AFTER_S",
    "ECS_AGENT_SETTINGS",
    "NEURON_AMI_PARAMETER",
    "AmiRollout",
    "AutoScalingCapacity",
    "CapacityReservation",
    "ManagedInstancesCapacity",
    "warn_about_public_subnets",
]

NEURON_AMI_PARAMETER = NEURON_AMI_IMAGE_ID_PARAMETER
"""SSM parameter holding the ECS-optimized Amazon Linux 2023 (Neuron) AMI id."""

DEFAULT_ROOT_VOLUME_GIB = 100
"""Root volume size: Neuron framework images are large (AWS blueprints use 100 GiB)."""

DEFAULT_AMI_WARMUP = Duration.minutes(10)
"""How long an instance refresh waits after a new instance is in service before it replaces the next batch: a new
Neuron instance pulls images of several GB and loads a compiled model before its tasks serve."""


@dataclass(frozen=True)
class AmiRollout:
    """How an Auto Scaling capacity replaces its instances when its AMI changes: an instance refresh, run by
    CloudFormation (the group's ``UpdatePolicy: AutoScalingInstanceRefresh``) whenever a deploy changes the launch
    template, ``instances_at_a_time`` instances at a time, each drained by ECS before it stops.

    Why an instance refresh and not CloudFormation's ``AutoScalingRollingUpdate``: a rolling update replaces
    in-service instances only, so a warm pool's instances keep the old AMI (CloudFormation reference:
    AWS::AutoScaling::WarmPool), and it takes no account of scale-in protection, which ECS managed termination
    protection turns on for every instance with tasks (``NewInstancesProtectedFromScaleIn``), so the update waits on
    instances it may not terminate. An instance refresh replaces warm pool instances too (EC2 Auto Scaling API:
    InstanceRefreshWarmPoolProgress), and ``ScaleInProtectedInstances: Refresh`` replaces protected instances rather
    than waiting an hour and failing (the default, ``Wait``) or skipping them (``Ignore``) (EC2 Auto Scaling API:
    RefreshPreferences). Each instance it terminates goes through the lifecycle hook of ECS managed draining, which
    the capacity provider turns on: ECS sets the container instance to ``DRAINING`` and its services start
    replacements within their ``minimumHealthyPercent`` / ``maximumPercent`` before the instance stops (ECS guide:
    container instance draining, managed instance draining).

    ``instances_at_a_time``
        How many instances are replaced at once, 1 to the group's ``max_capacity`` (NEURON087). Instance refresh
        counts in whole percent of the group's desired capacity: the library sets the percentage that gives this
        many at ``max_capacity`` (fewer when fewer instances run; Auto Scaling replaces at least one). One percent is
        the least it takes, so a group of more than 100 instances replaces at least one in a hundred at a time.
    ``launch_before_terminate``
        ``True`` (default): ``MinHealthyPercentage`` 100 and ``MaxHealthyPercentage`` above it, so the new instances
        are in service before the old ones drain, and the services keep every task (costs the extra instances for
        the refresh). ``False``: ``MaxHealthyPercentage`` 100 and the minimum below it, which stops instances first;
        refused where the instances left cannot hold the services' minimum healthy tasks (NEURON087, checked at
        synth: a service placed one per instance loses one task per instance stopped, a fleet model or sliced
        service, whose copies are packed several to an instance, up to its copies per instance).
    ``instance_warmup``
        How long after a new instance is in service the refresh waits before the next batch; default 10 minutes.
    """

    instances_at_a_time: int = 1
    launch_before_terminate: bool = True
    instance_warmup: Duration | None = None

    def percentages(self, max_capacity: int) -> tuple[int, int]:
        """``(MinHealthyPercentage, MaxHealthyPercentage)`` for a group of at most ``max_capacity`` instances."""
        batch = max(1, 100 * self.instances_at_a_time // max(1, max_capacity))
        batch = min(batch, 100)
        return (100, 100 + batch) if self.launch_before_terminate else (100 - batch, 100)

    def update_policy(self, max_capacity: int) -> autoscaling.UpdatePolicy:
        """The group's instance refresh policy."""
        minimum, maximum = self.percentages(max_capacity)
        return autoscaling.UpdatePolicy.instance_refresh(
            strategy=autoscaling.InstanceRefreshStrategy.ROLLING,
            min_healthy_percentage=minimum,
            max_healthy_percentage=maximum,
            instance_warmup=self.instance_warmup or DEFAULT_AMI_WARMUP,
            scale_in_protected_instances=autoscaling.ScaleInProtectedInstances.REFRESH,
            skip_matching=True,
        )

    def describe(self) -> str:
        order = "launching before terminating" if self.launch_before_terminate else "terminating first"
        return f"AmiRollout(instances_at_a_time={self.instances_at_a_time}, {order})"


DEFAULT_SCALE_IN_AFTER_S = 1800
"""How long ECS Managed Instances keep an idle instance before they optimize it away (``scaleInAfter``, -1 for never
or 0 to 3,600 s): "a longer delay increases the likelihood of placing new tasks on idle or underutilized instances,
reducing startup time" (ECS API reference: InfrastructureOptimization). A Neuron task starts by pulling images of
several GB and loading a model for minutes; half an hour keeps an instance through a rollout or a dip in traffic, and
an idle one costs at most that long."""
DEFAULT_AUTO_REPAIR = True
"""ECS replaces container instances whose health status is ``IMPAIRED`` (``autoRepairConfiguration.actionsStatus``
ENABLED; ECS API reference: AutoRepairConfiguration). ECS documents the accelerated-compute device checks behind that
status for NVIDIA GPUs; what it checks on Neuron devices the docs do not say, so this replaces what ECS finds impaired
and no more."""

DEFAULT_MANAGED_INSTANCES_ACCELERATORS = inputs.MANAGED_INSTANCES_ACCELERATORS
DEFAULT_MANAGED_INSTANCES_TYPES = ("inf*", "trn*")


@dataclass(frozen=True)
class CapacityReservation:
    """Reserved capacity for a Neuron capacity: where scarce instances come from.

    Build one with a class method:

    * :meth:`on_demand` - an On-Demand Capacity Reservation, by id (Auto Scaling capacity);
    * :meth:`on_demand_group` - the reservations of a Capacity Reservation resource group (Auto
      Scaling capacity, and the only kind ECS Managed Instances take);
    * :meth:`capacity_block` - an EC2 Capacity Block for ML, by id (Auto Scaling capacity of
      trn1.32xlarge or trn2.48xlarge). EC2 terminates the block's instances 30 minutes before it
      ends: scale the service and the group to zero before then.

    ``fallback_to_on_demand`` (reservations only): launch On-Demand instances when the reservation
    is full (``capacity-reservations-first``); default False, so instances launch only into the
    reservation (``capacity-reservations-only``).
    """

    kind: Literal["on-demand", "on-demand-group", "capacity-block"]
    target: str
    """The reservation id (``cr-...``) or the resource group ARN."""
    fallback_to_on_demand: bool = False

    @classmethod
    def on_demand(cls, reservation_id: str, *, fallback_to_on_demand: bool = False) -> CapacityReservation:
        """An On-Demand Capacity Reservation by id (``cr-...``; its ARN is refused, NEURON140)."""
        where = "CapacityReservation.on_demand"
        return cls("on-demand", _reservation_id(where, reservation_id), bool(fallback_to_on_demand))

    @classmethod
    def on_demand_group(cls, group_arn: str, *, fallback_to_on_demand: bool = False) -> CapacityReservation:
        """The On-Demand Capacity Reservations of a Capacity Reservation resource group, by its ARN (a reservation's
        ``cr-`` id is refused, NEURON140)."""
        arn = _text("group_arn", group_arn)
        if not is_token(arn) and _RESERVATION_ID.fullmatch(arn) and arn.startswith("cr-"):
            raise rules.RESERVATION_REFERENCE.error(
                "CapacityReservation.on_demand_group",
                f"group_arn={arn!r} is a Capacity Reservation's id, not a resource group's ARN",
                fix=f"pass CapacityReservation.on_demand({arn!r}) for that one reservation, or the ARN of a resource "
                "group (arn:aws:resource-groups:<region>:<account>:group/<name>) that holds it",
            )
        return cls("on-demand-group", arn, bool(fallback_to_on_demand))

    @classmethod
    def capacity_block(cls, reservation_id: str) -> CapacityReservation:
        """An EC2 Capacity Block for ML by its reservation id (``cr-...``; its ARN is refused, NEURON140; blocks
        cannot be grouped)."""
        return cls("capacity-block", _reservation_id("CapacityReservation.capacity_block", reservation_id))

    def describe(self) -> str:
        """How messages name it: ``Capacity Block cr-...``, ``reservation group arn:...``."""
        names = {"on-demand": "On-Demand Capacity Reservation", "on-demand-group": "reservation group"}
        return f"{names.get(self.kind, 'Capacity Block')} {self.target}"


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise rules.WRONG_TYPE.error("CapacityReservation", f"{name}={value!r}", expected=f"{name} as a string")
    return value


_RESERVATION_ID = re.compile(r"[A-Za-z0-9_/-]{1,255}")
"""What ``CapacityReservationIds`` takes (EC2 Auto Scaling API reference: CapacityReservationTarget, pattern and
length); a Capacity Block's ``CapacityReservationId`` in a launch template is the same ``cr-`` id."""
_RESERVATION_ARN = re.compile(r"arn:[a-z-]+:ec2:[a-z0-9-]*:\d*:capacity-reservation/(?P<id>cr-[A-Za-z0-9]+)")


def _reservation_id(where: str, value: object) -> str:
    """NEURON140: ``value``, a Capacity Reservation's id as the property takes it; its ARN is refused naming the id
    (nothing is rewritten). A deploy-time value is taken as given."""
    text = _text("reservation_id", value)
    if is_token(text) or _RESERVATION_ID.fullmatch(text):
        return text
    arn = _RESERVATION_ARN.fullmatch(text)
    if arn is not None:
        raise rules.RESERVATION_REFERENCE.error(
            where,
            f"reservation_id={text!r} is the reservation's ARN, and CapacityReservationIds takes ids",
            fix=f"pass the id the ARN ends with, {arn['id']!r}",
        )
    raise rules.RESERVATION_REFERENCE.error(
        where,
        f"reservation_id={text[:80]!r} is not a Capacity Reservation id",
        fix="pass the reservation's id as EC2 shows it (cr- followed by 17 letters and digits: aws ec2 "
        "describe-capacity-reservations)",
    )


ECS_AGENT_SETTINGS = {"ECS_AWSVPC_BLOCK_IMDS": "true"}
"""Written to ``/etc/ecs/ecs.config`` on every Auto Scaling instance: awsvpc tasks cannot reach the
instance metadata service (the hop limit of 1 already keeps bridge-mode containers out)."""

_ACCELERATOR_NAMES = {
    "inferentia2": ec2.AcceleratorName.INFERENTIA2,
    "trainium": ec2.AcceleratorName.TRAINIUM,
    "trainium2": ec2.AcceleratorName.TRAINIUM2,
}


def warn_about_public_subnets(
    owner: Construct, vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet], *, any_public: bool | None = None
) -> None:
    """NEURON108: a warning when capacity launches into subnets the VPC lists as public (``any_public``: whether
    any is, when the subnet selection already said)."""
    if any_public is False:
        return
    public_ids = {construct_path(s) for s in vpc.public_subnets}
    public = [construct_path(s) for s in subnets if construct_path(s) in public_ids]
    if public:
        Validations.of(owner).add_warning(
            rules.PUBLIC_SUBNETS.warning_id,
            rules.PUBLIC_SUBNETS.message(construct_path(owner), f"instances launch into public subnets {public}"),
        )


class ManagedInstancesCapacity(Construct):
    """An ECS Managed Instances capacity provider that launches only Neuron instances.

    instanceRequirements: acceleratorManufacturers ``amazon-web-services``, the given
    acceleratorNames and allowedInstanceTypes; vCPU and memory minimums are the smallest of the
    catalog types both selectors admit. Managed Instances bring an AMI with the Neuron driver; no
    AMI is set. Built by :meth:`NeuronCluster.add_managed_instances_capacity`.

    The instance role holds what the ECS agent on a Managed Instance calls (AWS's
    ``AmazonECSInstanceRolePolicyForManagedInstances``), held to this cluster: register with it, report task and
    attachment state to it, send system logs to it, poll it and start telemetry sessions on its container instances
    (condition ``ecs:cluster``), discover the endpoint. aws-cdk-lib's default role would poll container instances
    of any cluster in the account and Region. The infrastructure role may pass the role to EC2 by a grant of its
    own (the AWS managed policy lets ECS pass only roles named ``ecsInstanceRole*``). Grant the instances more
    through ``role``.

    Parameters are those of :meth:`NeuronCluster.add_managed_instances_capacity`, plus ``cluster``
    (the ECS cluster, which registers the capacity provider), ``subnets`` (the subnets the cluster selected)
    and ``public_subnets`` (whether any of them is public, for NEURON108; default: worked out from the VPC).

    Attributes
    ----------
    capacity_provider
        The ``ecs.ManagedInstancesCapacityProvider``.
    security_group
        The instances' security group (the first of ``security_groups``).
    security_groups
        Every security group the instances get.
    role
        The instances' IAM role (the ECS agent's calls), in ``instance_profile``.
    instance_profile
        The instances' ``iam.IInstanceProfile``.
    infrastructure_role
        The role ECS uses to launch and drain the instances; it may pass ``role`` to EC2.
    instance_types
        The catalog types it may launch.
    capacity_reservation
        The reservation it launches into, if any.
    services
        The ``NeuronService`` s placed on it, in creation order.
    monitored
        Whether a ``NeuronMonitoring`` of this app runs its daemons on it (and publishes the per-model metrics).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: ecs.ICluster,
        subnets: Sequence[ec2.ISubnet],
        public_subnets: bool | None = None,
        accelerators: Sequence[str] = DEFAULT_MANAGED_INSTANCES_ACCELERATORS,
        instance_types: Sequence[str | NeuronInstanceType] = DEFAULT_MANAGED_INSTANCES_TYPES,
        capacity_option_type: ecs.CapacityOptionType = ecs.CapacityOptionType.ON_DEMAND,
        task_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        capacity_reservation: CapacityReservation | None = None,
        scale_in_after: int | None = DEFAULT_SCALE_IN_AFTER_S,
        auto_repair: bool | None = DEFAULT_AUTO_REPAIR,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        if scale_in_after is not None and (
            isinstance(scale_in_after, bool) or not isinstance(scale_in_after, int) or not -1 <= scale_in_after <= 3600
        ):
            raise rules.OUT_OF_RANGE.error(
                path,
                f"scale_in_after={scale_in_after!r}",
                name="scale_in_after",
                minimum="-1 (never) or 0",
                maximum="3,600 seconds",
            )
        self.instance_types: tuple[NeuronInstanceType, ...] = inputs.check_managed_instances_selection(
            path, accelerators, instance_types
        )
        if capacity_reservation is not None:
            if capacity_reservation.kind != "on-demand-group":
                raise rules.MANAGED_INSTANCES_RESERVATION.error(
                    path,
                    f"capacity_reservation is the {capacity_reservation.describe()}",
                    reservation=capacity_reservation.describe(),
                )
            if capacity_option_type == ecs.CapacityOptionType.SPOT:
                raise rules.SPOT_WITH_RESERVATION.error(
                    path, f"capacity_option_type=SPOT with the {capacity_reservation.describe()}"
                )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        self.allowed_instance_type_patterns: tuple[str, ...] = inputs.instance_type_patterns(instance_types)
        self.capacity_reservation = capacity_reservation
        self.services: list[Construct] = []
        self.monitored = False
        vpc = cluster.vpc
        warn_about_public_subnets(self, vpc, subnets, any_public=public_subnets)
        if security_groups:
            self.security_groups: list[ec2.ISecurityGroup] = list(security_groups)
        else:
            group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="Neuron Managed Instances: outbound only (image pulls, ECS, CloudWatch)",
                allow_all_outbound=True,
            )
            self.security_groups = [group]
        self.security_group: ec2.ISecurityGroup = self.security_groups[0]
        smallest_vcpus = min(t.vcpus for t in self.instance_types)
        smallest_memory = min(t.memory_gib for t in self.instance_types)
        self.role: iam.Role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"ECS Managed Instances of {construct_path(cluster)}",
        )
        agent_policy = grant_ecs_agent(self.role, cluster.cluster_arn, managed_instances=True)
        self.instance_profile: iam.IInstanceProfile = iam.InstanceProfile(self, "InstanceProfile", role=self.role)
        self.capacity_provider = ecs.ManagedInstancesCapacityProvider(
            self,
            "Provider",
            ec2_instance_profile=self.instance_profile,
            subnets=list(subnets),
            security_groups=self.security_groups,
            capacity_option_type=capacity_option_type,
            monitoring=ecs.InstanceMonitoring.DETAILED,
            task_volume_storage=Size.gibibytes(task_volume_gib),
            propagate_tags=ecs.PropagateManagedInstancesTags.CAPACITY_PROVIDER,
            instance_requirements=ec2.InstanceRequirementsConfig(
                v_cpu_count_min=smallest_vcpus,
                memory_min=Size.gibibytes(smallest_memory),
                accelerator_manufacturers=[ec2.AcceleratorManufacturer.AWS],
                accelerator_names=[_ACCELERATOR_NAMES[a] for a in accelerators],
                allowed_instance_types=list(self.allowed_instance_type_patterns),
            ),
        )
        self.infrastructure_role: iam.IRole = self.capacity_provider.infrastructure_role
        resource = self.capacity_provider.node.default_child
        assert resource is not None  # the CfnCapacityProvider
        # AmazonECSInfrastructureRolePolicyForManagedInstances lets ECS pass only roles named ecsInstanceRole*: ECS
        # may pass this one by this grant, in place before the provider exists, as the agent's calls are.
        self.role.grant_pass_role(self.infrastructure_role).apply_before(resource)
        resource.node.add_dependency(self.role)
        if capacity_reservation is not None:
            reserve_managed_instances_capacity(
                self.capacity_provider,
                group_arn=capacity_reservation.target,
                fallback_to_on_demand=capacity_reservation.fallback_to_on_demand,
            )
        self.scale_in_after = scale_in_after
        self.auto_repair = auto_repair
        optimize_managed_instances(self.capacity_provider, scale_in_after=scale_in_after, auto_repair=auto_repair)
        compliance.acknowledge_managed_instances_capacity(self.infrastructure_role, agent_policy)


class AutoScalingCapacity(Construct):
    """An EC2 Auto Scaling group registered with the cluster as a capacity provider.

    Built from an EC2 launch template (never a LaunchConfiguration): IMDSv2 required with a hop
    limit of 1 (AL2023 AMIs default to 2, which lets bridge-mode containers reach the instance
    role), ``ECS_AWSVPC_BLOCK_IMDS`` for awsvpc tasks, detailed monitoring, an encrypted gp3 root
    volume, ECS managed scaling, draining and termination protection. Built by
    :meth:`NeuronCluster.add_ec2_capacity` and :meth:`NeuronCluster.add_non_neuron_capacity`.

    The instance role holds exactly what the ECS agent needs - register and deregister with this
    cluster, report task state to it, poll it - and nothing on CloudWatch Logs or ECR: tasks log and
    pull images with their execution role. aws-cdk-lib would add its own agent policy (with
    ``logs:*`` and ``ecr:GetAuthorizationToken`` on ``*``) through the Auto Scaling group; the group
    therefore sees the role as immutable. Grant the instances more through ``role``.

    Logical NeuronCores (``lnc``, Trainium2 only, NEURON064): the user data writes
    ``NEURON_LOGICAL_NC_CONFIG=<lnc>`` to ``/opt/aws/neuron/logical_nc_config``, the instance-wide setting the Neuron
    runtime reads (Neuron EKS prerequisites write it the same way); tasks on the group must run at the same setting.

    Spot (``spot=True``): the launch template requests Spot Instances, the group rebalances capacity
    ahead of interruptions, and the ECS agent drains an instance on its interruption notice
    (``ECS_ENABLE_SPOT_INSTANCE_DRAINING``). A :class:`CapacityReservation` launches the group into an
    On-Demand Capacity Reservation (set on the group) or a Capacity Block (set on the launch template).

    Parameters are those of :meth:`NeuronCluster.add_ec2_capacity`, plus ``cluster``, ``machine_image``,
    ``neuron`` (the catalog entry, ``None`` for non-Neuron capacity), ``subnets`` and ``public_subnets`` as
    for :class:`ManagedInstancesCapacity`.

    Attributes
    ----------
    capacity_provider
        The ``ecs.AsgCapacityProvider``.
    auto_scaling_group
        The ``autoscaling.AutoScalingGroup``.
    launch_template
        The ``ec2.LaunchTemplate``.
    security_group
        The instances' security group (outbound only).
    role
        The instances' IAM role.
    instance_type
        The ``ec2.InstanceType``; ``neuron_instance_type`` its catalog entry (``None`` for
        non-Neuron capacity).
    min_capacity, max_capacity
        The group's bounds, in instances.
    spot, capacity_reservation
        How the instances are bought.
    services
        The ``NeuronService`` s placed on it, in creation order.
    monitored
        Whether a ``NeuronMonitoring`` of this app runs its daemons on it (and publishes the per-model metrics).
    sliced_by
        The ``SlicedNeuronService`` that owns its devices, if any.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: ecs.ICluster,
        instance_type: str,
        machine_image: ec2.IMachineImage,
        subnets: Sequence[ec2.ISubnet],
        public_subnets: bool | None = None,
        min_capacity: int,
        max_capacity: int,
        root_volume_gib: int,
        neuron: NeuronInstanceType | None,
        spot: bool = False,
        capacity_reservation: CapacityReservation | None = None,
        lnc: int | None = None,
        ami: NeuronAmi | None = None,
        ami_rollout: AmiRollout | None = None,
        warm_pool: WarmPool | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        inputs.check_capacity_size(path, min_capacity, max_capacity)
        if ami_rollout is not None:
            _check_ami_rollout(path, ami_rollout, max_capacity)
        if warm_pool is not None:
            check_warm_pool(
                path,
                warm_pool,
                spot=spot,
                max_capacity=max_capacity,
                instance_type=instance_type,
                memory_gib=neuron.memory_gib if neuron is not None else None,
            )
        hibernates = warm_pool is not None and warm_pool.state == autoscaling.PoolState.HIBERNATED
        inputs.check_lnc(path, neuron, lnc, type_name=instance_type)
        if spot and neuron is not None and not neuron.spot:
            raise rules.NO_SPOT.error(path, f"spot=True with {neuron.name}", instance_type=neuron.name)
        if spot and capacity_reservation is not None:
            raise rules.SPOT_WITH_RESERVATION.error(path, f"spot=True with the {capacity_reservation.describe()}")
        block = capacity_reservation is not None and capacity_reservation.kind == "capacity-block"
        if block and (neuron is None or not neuron.offers_capacity_blocks):
            raise rules.CAPACITY_BLOCK_TYPE.error(
                path,
                f"a Capacity Block of {instance_type}, which Capacity Blocks do not offer",
                instance_type=instance_type,
            )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        if neuron is not None and root_volume_gib < DEFAULT_ROOT_VOLUME_GIB:
            Validations.of(self).add_warning(
                rules.SMALL_ROOT_VOLUME.warning_id,
                rules.SMALL_ROOT_VOLUME.message(construct_path(self), f"root_volume_gib={root_volume_gib}"),
            )
        self.neuron_instance_type = neuron
        self.min_capacity = min_capacity
        self.max_capacity = max_capacity
        self.spot = spot
        self.capacity_reservation = capacity_reservation
        self.lnc: int | None = lnc
        """The logical-core setting written to the instances (``None``: the runtime's default for the type)."""
        self.ami: NeuronAmi | None = ami
        """The Neuron AMI the instances launch (``None`` for non-Neuron capacity or an ``ec2.IMachineImage``)."""
        self.ami_rollout: AmiRollout | None = ami_rollout
        """How a changed AMI replaces the instances (``None``: it does not; instances launched later take it)."""
        self.services: list[Construct] = []
        self.monitored = False
        self.sliced_by: Construct | None = None
        self.instance_type = ec2.InstanceType(instance_type)
        vpc = cluster.vpc
        warn_about_public_subnets(self, vpc, subnets, any_public=public_subnets)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description=f"ECS container instances ({instance_type}): outbound only",
            allow_all_outbound=True,
        )
        self.role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"ECS container instances ({instance_type}) of {construct_path(cluster)}",
        )
        agent_policy = grant_ecs_agent(self.role, cluster.cluster_arn)
        self.warm_pool = warm_pool
        prefetch = warm_pool is not None and warm_pool.prefetch
        settings = {
            **ECS_AGENT_SETTINGS,
            **({"ECS_ENABLE_SPOT_INSTANCE_DRAINING": "true"} if spot else {}),
            **(WARM_POOL_AGENT_SETTINGS if warm_pool is not None else {}),
            **(PREFETCH_AGENT_SETTINGS if prefetch else {}),
        }
        user_data = ec2.UserData.for_linux()
        user_data.add_commands(*(f"echo {k}={v} >> /etc/ecs/ecs.config" for k, v in settings.items()))
        if lnc is not None:
            # The instance-wide default the Neuron runtime reads, as the Neuron EKS launch templates write it.
            user_data.add_commands(
                f"mkdir -p {LNC_FILE.rsplit('/', 1)[0]}", f"echo {LOGICAL_CORE_VARIABLE}={lnc} > {LNC_FILE}"
            )
        if neuron is not None and not neuron.supported_by_current_neuron_sdk:
            Validations.of(self).add_warning(
                rules.INF1_OUT_OF_SUPPORT.warning_id,
                rules.INF1_OUT_OF_SUPPORT.message(construct_path(self), f"an Auto Scaling group of {neuron.name}"),
            )
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=self.instance_type,
            machine_image=machine_image,
            user_data=user_data,
            role=self.role.without_policy_updates(),
            security_group=self.security_group,
            require_imdsv2=True,
            http_put_response_hop_limit=1,
            detailed_monitoring=True,
            spot_options=ec2.LaunchTemplateSpotOptions() if spot else None,
            block_devices=[encrypted_root_volume(root_volume_gib)],
            # The warm-up reads its group's name from the instance's tags (aws:autoscaling:groupName).
            instance_metadata_tags=True if prefetch else None,
            # EC2 hibernates only an instance launched with hibernation enabled (hibernation prerequisites).
            hibernation_configured=True if hibernates else None,
        )
        self.user_data = user_data
        self.auto_scaling_group = autoscaling.AutoScalingGroup(
            self,
            "Group",
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            launch_template=self.launch_template,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            capacity_rebalance=True if spot else None,
            update_policy=ami_rollout.update_policy(max_capacity) if ami_rollout is not None else None,
        )
        if ami_rollout is not None and not ami_rollout.launch_before_terminate:
            self.node.add_validation(_AmiRolloutRoom(self, ami_rollout))
        if ami_rollout is not None and ami_rollout.launch_before_terminate and capacity_reservation is not None:
            _warn_about_refresh_into_reserved_capacity(self, ami_rollout, capacity_reservation)
        if capacity_reservation is not None:
            reserve_auto_scaling_capacity(
                self.auto_scaling_group,
                self.launch_template,
                kind=capacity_reservation.kind,
                target=capacity_reservation.target,
                fallback_to_on_demand=capacity_reservation.fallback_to_on_demand,
            )
        self.capacity_provider = ecs.AsgCapacityProvider(
            self,
            "Provider",
            auto_scaling_group=self.auto_scaling_group,
            enable_managed_scaling=True,
            enable_managed_termination_protection=True,
            enable_managed_draining=True,
        )
        compliance.acknowledge_auto_scaling_capacity(self.auto_scaling_group, agent_policy)
        self.prefetch: Prefetch | None = None
        """What the warm-up fetches, known once the app is synthesized (``None`` before, and without prefetch)."""
        self.root_volume_gib = root_volume_gib
        self.root_volume_room: RootVolumeRoom | None = None
        """Whether the root volume holds what the warm-up fetches, where the sizes are stated (NEURON091); known once
        the app is synthesized (``None`` before, and without prefetch)."""
        if warm_pool is not None:
            self.auto_scaling_group.add_warm_pool(
                min_size=warm_pool.min_size,
                max_group_prepared_capacity=warm_pool.max_prepared,
                pool_state=warm_pool.state,
            )
        if warm_pool is not None and prefetch:
            warn_about_unpinned_cli_image(self, warm_pool)
            compliance.acknowledge_warm_up_container(self.launch_template)
            self.auto_scaling_group.add_lifecycle_hook(
                "WarmUp",
                lifecycle_hook_name=LIFECYCLE_HOOK_NAME,
                lifecycle_transition=autoscaling.LifecycleTransition.INSTANCE_LAUNCHING,
                default_result=autoscaling.DefaultResult.CONTINUE,
                heartbeat_timeout=WARM_UP_TIMEOUT,
            )
            # once every service is placed, before synthesis
            once_before_synthesis(self.auto_scaling_group, self._prepare_warm_up)
            self.node.add_validation(_RootVolumeHoldsWarmUp(self))

    def _prepare_warm_up(self) -> None:
        """The warm-up: what the services on the capacity fetch, the instance role's grants for it, and the script
        in the user data (run once every service is placed)."""
        stack = Stack.of(self)
        images: list[str] = []
        artifacts: list[tuple[str, str]] = []
        skipped: list[str] = []
        grant_artifacts: list[ModelArtifacts] = []
        fetched: list[Fetched] = []
        for service in self.services:
            if Stack.of(service) is not stack:
                skipped.append(f"{construct_path(service)} (in another stack)")
                continue
            sizes = _image_sizes(service)
            for container in _containers(service):
                name = container.image_name
                if is_token(name):
                    skipped.append(f"{construct_path(container)} (image named by a token)")
                    continue
                fetched.append(Fetched(name, "image", sizes.get(container.container_name)))
                if name not in images:
                    images.append(name)
            for model in _model_artifacts(service):
                fetched.append(Fetched(model.url, "artifacts", model.size_gib))
                entry = (model.url, f"{model.bucket.bucket_name}/{model.prefix}")
                if entry not in artifacts:
                    artifacts.append(entry)
                    grant_artifacts.append(model)
            _share_model_volumes(service)
        self._warn_about_moving_tags()
        self.root_volume_room = root_volume_room(self.root_volume_gib, fetched)
        if skipped:
            Validations.of(self).add_warning(
                rules.NOT_PREFETCHED.warning_id,
                rules.NOT_PREFETCHED.message(construct_path(self), f"the warm-up does not fetch {', '.join(skipped)}"),
            )
        self.prefetch = Prefetch(tuple(images), tuple(artifacts))
        repositories = sorted(
            {
                f"arn:{Aws.PARTITION}:ecr:{registry[1]}:{image.split('.', 1)[0]}:repository/"
                + image.split("/", 1)[1].split("@", 1)[0].rsplit(":", 1)[0]
                for image in images
                if (registry := ecr_registry(image)) is not None
            }
        )
        group_arn = (
            f"arn:{Aws.PARTITION}:autoscaling:{Aws.REGION}:{Aws.ACCOUNT_ID}:autoScalingGroup:*:autoScalingGroupName/"
            f"{self.auto_scaling_group.auto_scaling_group_name}"
        )
        # Attached through the role by name: a policy of the role itself would be a dependency of the launch template,
        # which the group (named here) depends on.
        by_name = iam.Role.from_role_name(self, "WarmUpRole", self.role.role_name)
        complete = iam.Policy(
            self,
            "CompleteWarmUp",
            roles=[by_name],
            statements=[
                iam.PolicyStatement(
                    sid="CompleteWarmUp", actions=["autoscaling:CompleteLifecycleAction"], resources=[group_arn]
                )
            ],
        )
        compliance.acknowledge_warm_up_hook(
            complete,
            "arn:<AWS::Partition>:autoscaling:<AWS::Region>:<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/"
            f"<{stack.resolve(stack.get_logical_id(self.auto_scaling_group.node.default_child))}>",  # type: ignore[arg-type]
        )
        if repositories:
            # On the role itself, so in place before the first instance pulls.
            pulls = iam.Policy(
                self.role,
                "WarmUp",
                roles=[self.role],
                statements=[
                    iam.PolicyStatement(sid="RegistryToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                    iam.PolicyStatement(
                        sid="PullImages",
                        actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                        resources=repositories,
                    ),
                ],
            )
            compliance.acknowledge_warm_up(pulls)
        for model in grant_artifacts:
            model.grant(self.role)
        cli_image = self.warm_pool.cli_image if self.warm_pool is not None else AWS_CLI
        script = warm_up_script(self.prefetch, region=Aws.REGION, cli_image=cli_image.reference)
        self.user_data.add_commands(
            f"mkdir -p {WARM_UP_FILE.rsplit('/', 1)[0]}",
            # The script goes in base64 (CloudFormation encodes it at deploy, Fn::Base64, with the deploy-time values
            # in it): nothing in it - an image reference, a bucket name, a prefix - can end the command that writes it
            # and run as a command of its own, as a line could end a heredoc.
            f"echo {Fn.base64(script)} | base64 -d > {WARM_UP_FILE}",
            f"chmod 700 {WARM_UP_FILE}",
            f"{WARM_UP_FILE}",
        )

    def _warn_about_moving_tags(self) -> None:
        """NEURON142: the images of the services on this capacity (any stack's) named by a tag that moves, which
        ``prefer-cached`` never pulls again on an instance that holds them."""
        moving: list[str] = []
        for service in self.services:
            for container in _containers(service):
                name = container.image_name
                tag = None if is_token(name) else moving_tag(name)
                if tag is not None and name not in moving:
                    moving.append(name)
        if moving:
            Validations.of(self).add_warning(
                rules.MOVING_TAG_CACHED.warning_id,
                rules.MOVING_TAG_CACHED.message(
                    construct_path(self),
                    f"{', '.join(moving)} {'is' if len(moving) == 1 else 'are'} named by a tag that moves, and the "
                    "capacity's agent pulls an image only when the instance does not hold it "
                    "(ECS_IMAGE_PULL_BEHAVIOR=prefer-cached)",
                ),
            )


def _containers(service: IConstruct) -> list[ecs.ContainerDefinition]:
    """The container definitions of ``service``'s task definition (a ``NeuronService`` or an ECS service)."""
    task = getattr(service, "task_definition", None)
    task = getattr(task, "task_definition", task)
    if task is None:
        return []
    return [c for c in task.node.children if isinstance(c, ecs.ContainerDefinition)]


def _share_model_volumes(service: IConstruct) -> None:
    """Make the model volumes of an EC2-only task of ``service`` host volumes at the warm-up's copy
    (``MODELS_DIRECTORY/<bucket>/<prefix>``): the task's sync then finds the files there and copies only what changed
    since the warm-up (from S3 to a directory, ``aws s3 sync`` leaves a file of the same size alone unless the object
    is newer, and sets a downloaded file's time to the object's: aws-cli, ``s3 sync --exact-timestamps`` help)."""
    task = getattr(service, "task_definition", None)
    wrapper = next(
        (c for c in (task, getattr(getattr(task, "node", None), "scope", None)) if hasattr(c, "model_volumes")), None
    )
    definition = getattr(wrapper, "task_definition", None)
    if wrapper is None or not isinstance(definition, ecs.TaskDefinition):
        return
    if definition.compatibility != ecs.Compatibility.EC2:
        return
    resource = definition.node.default_child
    assert isinstance(resource, ecs.CfnTaskDefinition)
    rendered = Stack.of(definition).resolve(resource.volumes) or []
    names = [v.get("name", v.get("Name")) if isinstance(v, dict) else None for v in rendered]
    for volume, model in wrapper.model_volumes.items():
        if volume in names:
            resource.add_property_override(
                f"Volumes.{names.index(volume)}.Host.SourcePath",
                f"{MODELS_DIRECTORY}/{model.bucket.bucket_name}/{model.prefix}",
            )


def _image_sizes(service: IConstruct) -> dict[str, float]:
    """The image sizes stated for the containers of ``service``'s task definition, by container name."""
    task = getattr(service, "task_definition", None)
    for candidate in (task, getattr(getattr(task, "node", None), "scope", None)):
        found = getattr(candidate, "image_sizes_gib", None)
        if isinstance(found, dict):
            return found
    return {}


@jsii.implements(IValidation)
class _RootVolumeHoldsWarmUp:
    """NEURON091 at synth: the root volume holds the AMI and what the warm-up fetches, as far as sizes are stated."""

    def __init__(self, capacity: AutoScalingCapacity) -> None:
        self.capacity = capacity

    def validate(self) -> list[str]:
        room = self.capacity.root_volume_room
        if room is None or room.fits:
            return []
        return [
            rules.WARM_UP_ROOM.message(
                construct_path(self.capacity),
                f"the warm-up fills {room.describe()}",
                needed=room.needed_gib,
            )
        ]


def _model_artifacts(service: IConstruct) -> list[ModelArtifacts]:
    """The ``ModelArtifacts`` the task definition of ``service`` copies (recorded by the Neuron task definitions)."""
    task = getattr(service, "task_definition", None)
    for candidate in (task, getattr(getattr(task, "node", None), "scope", None)):
        found = getattr(candidate, "model_artifacts", None)
        if isinstance(found, list):
            return found
    return []


def _warn_about_refresh_into_reserved_capacity(
    capacity: AutoScalingCapacity, rollout: AmiRollout, reservation: CapacityReservation
) -> None:
    """NEURON128: a refresh that launches before it terminates needs a batch of instances beyond those running,
    which a group launching only into its reservation (no On-Demand fallback; a Capacity Block has none) may not
    get."""
    if reservation.fallback_to_on_demand:  # never for a Capacity Block
        return
    Validations.of(capacity).add_warning(
        rules.REFRESH_INTO_RESERVED_CAPACITY.warning_id,
        rules.REFRESH_INTO_RESERVED_CAPACITY.message(
            construct_path(capacity),
            f"{rollout.describe()} launches up to {rollout.instances_at_a_time} instance(s) beyond those running, "
            f"and the group launches only into {reservation.describe()}",
            batch=rollout.instances_at_a_time,
        ),
    )


def _check_ami_rollout(path: str, rollout: AmiRollout, max_capacity: int) -> None:
    """NEURON087 at the call: a batch of 1 to ``max_capacity`` instances."""
    batch = rollout.instances_at_a_time
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= max(1, max_capacity):
        raise rules.AMI_ROLLOUT.error(
            path,
            f"{rollout.describe()} on a group of at most {max_capacity} instances",
            fix=f"pass instances_at_a_time from 1 to max_capacity ({max_capacity})",
        )


@jsii.implements(IValidation)
class _AmiRolloutRoom:
    """NEURON087 at synth: a terminate-first refresh of ``capacity`` stops one batch of its instances at a time; each
    service placed one task per instance (a manually mapped task definition, ``distinctInstance``), and each fleet
    model or sliced service as a whole (its copies packed ``copies`` to an instance), must keep its minimum healthy
    tasks on the instances left (:func:`~neuron_constructs.knowledge.instance_refresh.refresh_room`)."""

    def __init__(self, capacity: AutoScalingCapacity, rollout: AmiRollout) -> None:
        self.capacity = capacity
        self.rollout = rollout

    def validate(self) -> list[str]:
        from neuron_constructs.compute.task_definitions import ManualNeuronTaskDefinition

        capacity, batch = self.capacity, self.rollout.instances_at_a_time
        judged: dict[str, tuple[IConstruct, int, list[tuple[int, int]]]] = {}
        for service in capacity.services:
            desired = getattr(service, "desired_count", None)
            minimum_percent = getattr(service, "min_healthy_percent", None)
            task = getattr(service, "task_definition", None)
            if not isinstance(task, ManualNeuronTaskDefinition) or not desired or minimum_percent is None:
                continue
            owner = service.node.scope
            copies = getattr(owner, "copy_services", None)
            if isinstance(copies, list) and service in copies and owner is not None:
                per_instance = getattr(owner, "copies", len(copies))
                key, judged_as = construct_path(owner), owner
            else:
                key, judged_as, per_instance = construct_path(service), service, 1
            judged.setdefault(key, (judged_as, per_instance, []))[2].append((desired, minimum_percent))
        problems = []
        for key, (_, per_instance, services) in judged.items():
            room = refresh_room(
                instances=capacity.max_capacity, batch=batch, per_instance=per_instance, services=services
            )
            if room.fits:
                continue
            percents = sorted({percent for _, percent in services})
            shown_percent = ", ".join(map(str, percents))
            if per_instance == 1 and len(services) == 1:
                how = "one per instance"
            else:
                how = (
                    f"{per_instance} on each instance (its packing plan), so a batch of {batch} takes away up to "
                    f"{room.taken} of them and the instances left hold at most {room.room_left}"
                )
            most = room.most_at_a_time
            fewer = f"replace fewer instances at a time (at most {most}), " if most else ""
            problems.append(
                rules.AMI_ROLLOUT.message(
                    construct_path(capacity),
                    f"{self.rollout.describe()} leaves {room.left} of its {capacity.max_capacity} instances, and "
                    f"{key} keeps {room.keep} of its {room.tasks} tasks running "
                    f"(min_healthy_percent={shown_percent}), {how}",
                    fix="launch before terminating (AmiRollout(launch_before_terminate=True), the default), "
                    f"{fewer}or raise max_capacity",
                )
            )
        return problems


def encrypted_root_volume(gib: int) -> ec2.BlockDevice:
    """The root volume of the Amazon Linux 2023 AMIs (``/dev/xvda``): ``gib`` GiB of gp3, encrypted, deleted with the
    instance."""
    return ec2.BlockDevice(
        device_name="/dev/xvda",
        volume=ec2.BlockDeviceVolume.ebs(
            gib, volume_type=ec2.EbsDeviceVolumeType.GP3, encrypted=True, delete_on_termination=True
        ),
    )


def grant_ecs_agent(
    role: iam.Role, cluster_arn: str, *, pattern: bool = False, managed_instances: bool = False
) -> iam.Policy:
    """What the ECS container agent calls, scoped to the cluster ``cluster_arn`` wherever ECS allows it, as a policy
    of its own (``<role>/EcsAgent``, returned) attached to ``role``: its ``*`` statements are acknowledged there,
    and what else the role is granted (``role.add_to_policy``) lands in the role's ``DefaultPolicy``, where cdk-nag
    reports a wildcard.

    ``ecs:Poll`` (the channel that carries task credentials) and ``ecs:StartTelemetrySession`` act on container
    instances, whose ARNs exist only once they register: they are granted on ``*`` under the condition that the
    ``ecs:cluster`` of the request is ``cluster_arn``.

    ``pattern``: ``cluster_arn`` ends in ``*`` (a cluster named only once it exists, as AWS Batch names its clusters
    ``AWSBatch-<compute environment>-<uuid>``), matched with ``ArnLike`` rather than ``ArnEquals``.

    ``managed_instances``: the agent of an ECS Managed Instance, which calls what AWS's
    ``AmazonECSInstanceRolePolicyForManagedInstances`` grants: it registers and reports task and attachment state
    (that policy grants no deregistration and no container state change), and sends the instance's system logs
    (``ecs:PutSystemLogEvents``, which acts on the cluster and on its container instances: granted on the cluster and
    under the ``ecs:cluster`` condition)."""
    if managed_instances:
        reports = ["ecs:RegisterContainerInstance", "ecs:SubmitAttachmentStateChanges", "ecs:SubmitTaskStateChange"]
        system_logs = ["ecs:PutSystemLogEvents"]
    else:
        reports = [
            "ecs:RegisterContainerInstance",
            "ecs:DeregisterContainerInstance",
            "ecs:SubmitAttachmentStateChanges",
            "ecs:SubmitContainerStateChange",
            "ecs:SubmitTaskStateChange",
        ]
        system_logs = []
    return iam.Policy(
        role,
        "EcsAgent",
        roles=[role],
        statements=[
            iam.PolicyStatement(
                sid="EcsAgentRegisterAndReport", actions=[*reports, *system_logs], resources=[cluster_arn]
            ),
            iam.PolicyStatement(
                sid="EcsAgentPoll",
                actions=["ecs:Poll", "ecs:StartTelemetrySession", *system_logs],
                resources=["*"],
                conditions={"ArnLike" if pattern else "ArnEquals": {"ecs:cluster": cluster_arn}},
            ),
            iam.PolicyStatement(sid="EcsAgentDiscoverEndpoint", actions=["ecs:DiscoverPollEndpoint"], resources=["*"]),
        ],
    )
