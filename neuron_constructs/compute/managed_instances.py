"""ECS Managed Instances capacity for Neuron: the :class:`ManagedInstancesCapacity` a cluster builds, and its
defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Size
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.l1_overrides import optimize_managed_instances, reserve_managed_instances_capacity
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.container_instances import (
    DEFAULT_ROOT_VOLUME_GIB,
    grant_ecs_agent,
    warn_about_public_subnets,
)
from neuron_constructs.compute.reservations import CapacityReservation
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType

__all__ = [
    "DEFAULT_AUTO_REPAIR",
    "DEFAULT_MANAGED_INSTANCES_ACCELERATORS",
    "DEFAULT_MANAGED_INSTANCES_TYPES",
    "DEFAULT_SCALE_IN_AFTER_S",
    "ManagedInstancesCapacity",
]

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

_ACCELERATOR_NAMES = {
    "inferentia2": ec2.AcceleratorName.INFERENTIA2,
    "trainium": ec2.AcceleratorName.TRAINIUM,
    "trainium2": ec2.AcceleratorName.TRAINIUM2,
}


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
