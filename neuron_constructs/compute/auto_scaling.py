"""EC2 Auto Scaling capacity: the :class:`AutoScalingCapacity` a cluster builds, an Auto Scaling group registered as a
capacity provider. Its AMI rollout is :mod:`neuron_constructs.compute.ami_rollout`, its warm pool
:mod:`neuron_constructs.compute.warm_pool` and the pool's warm-up :mod:`neuron_constructs.compute.warm_up`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from aws_cdk import Validations
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.l1_overrides import reserve_auto_scaling_capacity
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.ami_rollout import (
    AmiRollout,
    AmiRolloutRoom,
    check_ami_rollout,
    warn_about_refresh_into_reserved_capacity,
)
from neuron_constructs.compute.container_instances import (
    DEFAULT_ROOT_VOLUME_GIB,
    ECS_AGENT_SETTINGS,
    encrypted_root_volume,
    grant_ecs_agent,
    warn_about_public_subnets,
)
from neuron_constructs.compute.reservations import CapacityReservation
from neuron_constructs.compute.warm_pool import (
    WARM_UP_TIMEOUT,
    WarmPool,
    check_warm_pool,
    warn_about_unpinned_cli_image,
)
from neuron_constructs.compute.warm_up import RootVolumeHoldsWarmUp, prepare_warm_up
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NeuronAmi
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import LNC_FILE, LOGICAL_CORE_VARIABLE
from neuron_constructs.knowledge.warm_start import (
    LIFECYCLE_HOOK_NAME,
    PREFETCH_AGENT_SETTINGS,
    WARM_POOL_AGENT_SETTINGS,
    Prefetch,
    RootVolumeRoom,
)

__all__ = ["AutoScalingCapacity"]


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
            check_ami_rollout(path, ami_rollout, max_capacity)
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
            self.node.add_validation(AmiRolloutRoom(self, ami_rollout))
        if ami_rollout is not None and ami_rollout.launch_before_terminate and capacity_reservation is not None:
            warn_about_refresh_into_reserved_capacity(self, ami_rollout, capacity_reservation)
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
        self.needs_path: str | None = None
        """The Parameter Store path under which other stacks tell the warm-up what their services need,
        ``<prefix>/warm-up/<id>`` under the prefix the cluster publishes under; known once the app is synthesized
        (``None`` before, without prefetch, and when the cluster publishes nothing)."""
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
            once_before_synthesis(self.auto_scaling_group, partial(prepare_warm_up, self))
            self.node.add_validation(RootVolumeHoldsWarmUp(self))
