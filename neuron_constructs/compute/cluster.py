"""``NeuronCluster``: an ECS cluster with Neuron capacity, secure by default."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct

from neuron_constructs.base.arguments import Range, checked
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, RECORD_REMOVAL
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, node_of, remember_path
from neuron_constructs.base.vpc import DEFAULT_VPC_CIDR, private_vpc
from neuron_constructs.compute import imported_cluster, published
from neuron_constructs.compute.ami_rollout import AmiRollout
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.capacity_arguments import (
    CAPACITY_RANGES,
    neuron_image,
    non_neuron_type,
    warn_about_image,
)
from neuron_constructs.compute.capacity_associations import AssociationWaits
from neuron_constructs.compute.capacity_subnets import Subnets, select_subnets
from neuron_constructs.compute.container_instances import DEFAULT_ROOT_VOLUME_GIB
from neuron_constructs.compute.managed_instances import (
    DEFAULT_AUTO_REPAIR,
    DEFAULT_MANAGED_INSTANCES_ACCELERATORS,
    DEFAULT_MANAGED_INSTANCES_TYPES,
    DEFAULT_SCALE_IN_AFTER_S,
    ManagedInstancesCapacity,
)
from neuron_constructs.compute.reservations import CapacityReservation
from neuron_constructs.compute.warm_pool import WarmPool
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NeuronAmi
from neuron_constructs.knowledge.catalog import NeuronInstanceType

__all__ = ["CapacityObserver", "NeuronCluster"]

DEFAULT_MAX_CAPACITY = 2
"""Auto Scaling groups default to at most two instances: Neuron instances are costly."""

ZONES = Range(1, None, "a VPC's subnets of one kind: one or more, one per Availability Zone")
"""How many capacity subnets a published cluster has (NeuronCluster.from_published)."""


class CapacityObserver(Protocol):
    """What the cluster tells of each capacity added to it: its monitoring (``NeuronMonitoring``) registers
    itself as ``NeuronCluster.monitoring`` and covers capacity added before and after it."""

    def cover(self, capacity: AutoScalingCapacity | ManagedInstancesCapacity) -> None:
        """Take ``capacity`` into account (called once per capacity)."""


class NeuronCluster(Construct):
    """An ECS cluster for AWS Neuron workloads, with any mix of Neuron capacity.

    Defaults: a new VPC (2 AZs, one NAT gateway in public subnets that assign no public
    addresses, VPC flow logs to CloudWatch Logs kept one month and after the stack, the default security group
    stripped of its rules) unless ``vpc`` is given; capacity in its private subnets; Container
    Insights on. Capacity is added with
    :meth:`add_managed_instances_capacity`, :meth:`add_ec2_capacity` and
    :meth:`add_non_neuron_capacity`; one cluster may hold several at once (Trn1, Trn2, Inf1,
    Inf2 and others), as ECS allows. Every template of the app is checked against the Neuron
    rules at synth (:func:`~neuron_constructs.base.synth_checks.enable_template_checks`).

    Parameters
    ----------
    vpc
        The VPC to use; default a new one as above.
    cluster_name
        The ECS cluster name; default generated.
    container_insights
        Container Insights on the cluster; default True.
    capacity_subnets
        Where capacity launches; default the private subnets with egress (a
        selection of public subnets warns, NEURON108).
    log_encryption_key
        A customer managed KMS key for the flow log group; default CloudWatch
        Logs' own encryption.
    log_retention, log_removal_policy
        How long the flow log group of the VPC made here keeps its events (default one month) and what
        ``cdk destroy`` does with the group (default ``RemovalPolicy.RETAIN``: flow logs are the record of what
        reached the network, read after the fact; the group empties itself once its retention has passed).

    Attributes
    ----------
    cluster
        The ECS cluster: an ``ecs.Cluster``, or the imported one (:meth:`from_cluster_attributes`).
    vpc
        The VPC the cluster and its capacity use.
    managed_instances_capacities, auto_scaling_capacities
        What was added, in order (:attr:`capacities`: both).
    monitoring
        The cluster's :class:`~neuron_constructs.NeuronMonitoring`, once made.
    load_balancers
        The load balancers made for the cluster's models.
    """

    @checked(names=("cluster_name",))
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc | None = None,
        cluster_name: str | None = None,
        container_insights: bool = True,
        capacity_subnets: ec2.SubnetSelection | None = None,
        log_encryption_key: kms.IKey | None = None,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = RECORD_REMOVAL,
    ) -> None:
        super().__init__(scope, id)
        self.container_insights = container_insights
        self._flow_logs: tuple[logs.RetentionDays, RemovalPolicy] = (log_retention, log_removal_policy)
        self._begin(scope, id, vpc=vpc, capacity_subnets=capacity_subnets, log_encryption_key=log_encryption_key)
        self._made = ecs.Cluster(
            self,
            "Cluster",
            vpc=self.vpc,
            cluster_name=cluster_name,
            container_insights_v2=(
                ecs.ContainerInsights.ENABLED if container_insights else ecs.ContainerInsights.DISABLED
            ),
        )
        self.cluster: ecs.ICluster = self._made
        remember_path(self.cluster, self, "Cluster")

    def _begin(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc | None,
        capacity_subnets: ec2.SubnetSelection | None,
        log_encryption_key: kms.IKey | None,
    ) -> None:
        """What a cluster made here and an imported one share: the VPC, the capacity subnets, the registries."""
        remember_path(self, scope, id)
        enable_template_checks(scope)
        self.log_encryption_key = log_encryption_key
        self.vpc: ec2.IVpc = vpc if vpc is not None else self._create_vpc()
        self._own_vpc = vpc is None
        # the VPC made here has one private subnet group: the default selection needs no lookup
        self._default_selection_is_private = vpc is None and capacity_subnets is None
        self._private_subnets: list[ec2.ISubnet] | None = None
        self.capacity_subnets = capacity_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        """Subnets capacity launches into. Default: private subnets with egress."""
        self.managed_instances_capacities: list[ManagedInstancesCapacity] = []
        self.auto_scaling_capacities: list[AutoScalingCapacity] = []
        self.monitoring: CapacityObserver | None = None
        """The cluster's monitoring, which registers itself here and is told of every capacity added after it."""
        self.load_balancers: list[elbv2.ApplicationLoadBalancer] = []
        """The load balancers of the cluster's models, as they register themselves (for dashboards)."""
        self._published: dict[str, dict[str, ssm.StringParameter]] = {}
        self._association_waits = AssociationWaits(lambda: self.capacity_associations)

    @classmethod
    @checked(names=("cluster_name",))
    def from_cluster_attributes(
        cls,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        vpc: ec2.IVpc,
        existing_capacity_providers: Sequence[str] | None = None,
        default_capacity_provider_strategy: Sequence[ecs.CapacityProviderStrategy] = (),
        capacity_subnets: ec2.SubnetSelection | None = None,
    ) -> NeuronCluster:
        """An existing ECS cluster, to take Neuron capacity, services, fleets and monitoring; the cluster itself is
        not created again (its settings, Container Insights among them, stay as they are).

        Parameters
        ----------
        cluster_name
            The cluster's name (not its ARN; NEURON057).
        vpc
            The VPC of the cluster's capacity and tasks.
        existing_capacity_providers
            The capacity providers the cluster has now. Auto Scaling capacity is associated with the cluster by
            one ``AWS::ECS::ClusterCapacityProviderAssociations`` resource, which sets the cluster's whole list:
            these are listed with the new ones, and Auto Scaling capacity is refused without them (NEURON056;
            ``[]`` for a cluster with none). Managed Instances capacity is created in the cluster and needs no
            association.
        default_capacity_provider_strategy
            The cluster's default strategy once the association exists (it sets that too); default none.
        capacity_subnets
            Where capacity launches; default the VPC's private subnets with egress.
        """
        return _ImportedNeuronCluster(
            scope,
            id,
            cluster_name=cluster_name,
            vpc=vpc,
            existing_capacity_providers=existing_capacity_providers,
            default_capacity_provider_strategy=default_capacity_provider_strategy,
            capacity_subnets=capacity_subnets,
        )

    @classmethod
    @checked(ranges={"zones": ZONES})
    def from_published(
        cls,
        scope: Construct,
        id: str,
        *,
        prefix: str,
        zones: int = 2,
        capacity_subnets: ec2.SubnetSelection | None = None,
    ) -> NeuronCluster:
        """The cluster another CDK app published with :meth:`publish` (or ``NeuronLoadBalancer.publish``) under
        ``prefix``, with its VPC: read from Parameter Store when this stack deploys, so no name is copied by hand and
        neither app's stacks depend on the other's.

        Add Managed Instances capacity to it (created in the cluster, as on any imported cluster); Auto Scaling
        capacity is refused (NEURON083): its association would set the cluster's whole list of providers, and undo
        the platform's.

        Parameters
        ----------
        prefix
            The prefix the platform published under (``/neuron/<team>``; NEURON082).
        zones
            How many capacity subnets the platform published, one per Availability Zone; default 2, as in the VPC
            a NeuronCluster makes. More than were published fails this stack's deployment; fewer uses the first.
        capacity_subnets
            Where capacity launches; default the published subnets.
        """
        published.check_prefix(f"{construct_path(scope)}/{id}".lstrip("/"), prefix)
        return _ImportedNeuronCluster(
            scope,
            id,
            cluster_name=None,
            vpc=None,
            existing_capacity_providers=None,
            default_capacity_provider_strategy=(),
            capacity_subnets=capacity_subnets,
            published_as=(prefix, zones),
        )

    @checked()
    def publish(self, prefix: str) -> dict[str, ssm.StringParameter]:
        """Publish what another CDK app needs to run on this cluster, as Parameter Store parameters named under
        ``prefix`` (``/neuron/<team>``; NEURON082), for :meth:`from_published`: the cluster's name and ARN, its VPC's
        id and IPv4 range, the capacity subnets and their Availability Zones, the capacity providers and the
        capacities' security groups (the last two comma-separated, as the template is written: capacity added later
        is listed; ``none`` for none). Returns the parameters by name; publishing twice under one prefix returns the
        same ones."""
        if prefix in self._published:
            return self._published[prefix]
        published.check_prefix(construct_path(self), prefix)
        subnets = self.select_capacity_subnets()
        scope = Construct(self, f"Published{len(self._published) or ''}")
        values = published.cluster_values(self.cluster, self.vpc, self.vpc_cidr, subnets, lambda: self.capacities)
        parameters = published.publish(
            scope, prefix, published.CLUSTER_PARAMETERS, values, f"ECS cluster {construct_path(self)}"
        )
        self._published[prefix] = parameters
        return parameters

    @property
    def published_prefixes(self) -> list[str]:
        """The prefixes :meth:`publish` published under, in order (the first is where other stacks tell a warm-pooled
        capacity's warm-up what their services need: ``<prefix>/warm-up/<capacity id>``)."""
        return list(self._published)

    @property
    def capacity_associations(self) -> list[ecs.CfnClusterCapacityProviderAssociations]:
        """The resources that associate Auto Scaling capacity providers with the cluster, for what must wait for
        them (aws-cdk-lib makes a made cluster's at synthesis)."""
        return [c for c in node_of(self._made).children if isinstance(c, ecs.CfnClusterCapacityProviderAssociations)]

    @checked()
    def wait_for_capacity_associations(self, dependent: IConstruct) -> None:
        """Make ``dependent`` (a service) depend on :attr:`capacity_associations`, as they are at synthesis: ECS
        refuses a capacity provider strategy that names a provider not yet associated with the cluster.

        aws-cdk-lib associates a made cluster's providers in an aspect on the cluster; the dependencies are added by
        one aspect for every dependent, on the cluster's resource, which the CDK visits after the cluster itself."""
        self._association_waits.add(self._associations_anchor(dependent), dependent)

    def _associations_anchor(self, dependent: IConstruct) -> IConstruct:
        """What the aspect of :meth:`wait_for_capacity_associations` runs on."""
        del dependent
        return self._made

    def _register_auto_scaling(self, capacity: AutoScalingCapacity) -> None:
        """Associate ``capacity``'s provider with the cluster: aws-cdk-lib writes ``ECS_CLUSTER`` into its user data
        and the association resource."""
        self._made.add_asg_capacity_provider(
            capacity.capacity_provider, machine_image_type=ecs.MachineImageType.AMAZON_LINUX_2
        )

    def _register_managed_instances(self, capacity: ManagedInstancesCapacity) -> None:
        """Create ``capacity``'s provider in the cluster (Managed Instances providers belong to one cluster)."""
        self._made.add_managed_instances_capacity_provider(capacity.capacity_provider)

    @property
    def capacities(self) -> list[AutoScalingCapacity | ManagedInstancesCapacity]:
        """Every capacity of the cluster: the Auto Scaling ones, then the Managed Instances ones, each in order."""
        return [*self.auto_scaling_capacities, *self.managed_instances_capacities]

    @property
    def vpc_cidr(self) -> str:
        """The VPC's IPv4 range: ``10.0.0.0/16`` for the VPC made here (a literal, which security group checks can
        read), the VPC's ``vpc_cidr_block`` otherwise (NEURON045 for a VPC imported without it)."""
        if self._own_vpc:
            return DEFAULT_VPC_CIDR
        try:
            return self.vpc.vpc_cidr_block
        except RuntimeError as error:
            raise rules.UNKNOWN_VPC_RANGE.error(
                construct_path(self), f"{construct_path(self.vpc)} has no IPv4 range"
            ) from error

    def select_capacity_subnets(
        self, path: str | None = None, selection: ec2.SubnetSelection | None = None
    ) -> list[ec2.ISubnet]:
        """The subnets ``selection`` (default ``capacity_subnets``) selects in ``vpc``; NEURON033 for none."""
        return list(self._select_subnets(path, selection).subnets)

    def _select_subnets(self, path: str | None, selection: ec2.SubnetSelection | None) -> Subnets:
        if selection is None and self._default_selection_is_private:
            if self._private_subnets is None:
                self._private_subnets = list(self.vpc.private_subnets)
            return Subnets(self._private_subnets, has_public=False)
        return select_subnets(self, self.vpc, path, selection, self.capacity_subnets)

    def _create_vpc(self) -> ec2.Vpc:
        retention, removal = self._flow_logs
        return private_vpc(
            self,
            max_azs=2,
            log_encryption_key=self.log_encryption_key,
            log_retention=retention,
            log_removal_policy=removal,
        )

    @checked(ranges=CAPACITY_RANGES)
    def add_managed_instances_capacity(
        self,
        id: str,
        *,
        accelerators: Sequence[str] | None = None,
        instance_types: Sequence[str | NeuronInstanceType] = DEFAULT_MANAGED_INSTANCES_TYPES,
        capacity_option_type: ecs.CapacityOptionType = ecs.CapacityOptionType.ON_DEMAND,
        capacity_reservation: CapacityReservation | None = None,
        task_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        scale_in_after: int | None = DEFAULT_SCALE_IN_AFTER_S,
        auto_repair: bool | None = DEFAULT_AUTO_REPAIR,
    ) -> ManagedInstancesCapacity:
        """Add ECS Managed Instances capacity that launches only Neuron instances; returns it.

        Parameters
        ----------
        accelerators
            AcceleratorNames; default ``inferentia2``, ``trainium``, ``trainium2``.
            ``inferentia`` (Inf1) is refused: ECS runs Inf1 only on the EC2 launch type (NEURON002).
        instance_types
            AllowedInstanceTypes patterns or catalog entries; default ``("inf*", "trn*")``.
            A pattern that selects only Inf1, or no catalog type, or is not lowercase, is refused (NEURON003).
        capacity_option_type
            On-demand (default) or spot.
        capacity_reservation
            Launch into the On-Demand Capacity Reservations of a resource group
            (``CapacityReservation.on_demand_group``; capacity option RESERVED); a reservation id or a
            Capacity Block is refused (NEURON039), and so is spot with a reservation (NEURON037).
        task_volume_gib
            Task storage per instance, at least 1 GiB; default 100 GiB for Neuron images.
        security_groups
            Default a new group with no inbound rules.
        vpc_subnets
            Where the instances launch; default the cluster's ``capacity_subnets``.
        scale_in_after
            Seconds ECS keeps an idle or underutilized instance before it optimizes it away
            (``InfrastructureOptimization.ScaleInAfter``): -1 (never) or 0 to 3,600 (NEURON027); default 1,800, so a
            task placed within half an hour starts on an instance that already holds its images. ``None``: ECS's
            default.
        auto_repair
            ECS replaces instances whose health status is ``IMPAIRED`` (``AutoRepairConfiguration``); default True.
            ECS documents its accelerated-compute checks for NVIDIA GPUs only. ``None``: ECS's default.
        """
        capacity = ManagedInstancesCapacity(
            self,
            id,
            cluster=self.cluster,
            subnets=(selected := self._select_subnets(f"{construct_path(self)}/{id}", vpc_subnets)).subnets,
            public_subnets=selected.has_public,
            accelerators=tuple(accelerators) if accelerators is not None else DEFAULT_MANAGED_INSTANCES_ACCELERATORS,
            instance_types=instance_types,
            capacity_option_type=capacity_option_type,
            capacity_reservation=capacity_reservation,
            task_volume_gib=task_volume_gib,
            security_groups=security_groups,
            scale_in_after=scale_in_after,
            auto_repair=auto_repair,
        )
        self._register_managed_instances(capacity)
        self.managed_instances_capacities.append(capacity)
        if self.monitoring is not None:
            self.monitoring.cover(capacity)
        return capacity

    @checked(ranges=CAPACITY_RANGES)
    def add_ec2_capacity(
        self,
        id: str,
        *,
        instance_type: str | NeuronInstanceType,
        min_capacity: int = 0,
        max_capacity: int = DEFAULT_MAX_CAPACITY,
        root_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
        machine_image: ec2.IMachineImage | NeuronAmi | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        spot: bool = False,
        capacity_reservation: CapacityReservation | None = None,
        lnc: int | None = None,
        ami_rollout: AmiRollout | Literal[False] | None = None,
        warm_pool: WarmPool | None = None,
    ) -> AutoScalingCapacity:
        """Add an Auto Scaling group of one Neuron instance type on the ECS Neuron AMI; returns it.

        An Inf1 type warns (NEURON113): current Neuron SDK releases no longer support Inf1.

        Parameters
        ----------
        instance_type
            A catalog Neuron type (``"inf2.xlarge"``, ``NeuronInstanceType.of("trn1.32xlarge")``...),
            spelled as EC2 spells it (NEURON001).
        min_capacity, max_capacity
            Group bounds; default 0 and 2 (ECS managed scaling fills it), with
            0 <= min <= max and max >= 1 (NEURON004).
        root_volume_gib
            Encrypted gp3 root volume, 1 to 65,536 GiB; default 100 GiB (a warning below that).
        machine_image
            Which ECS Neuron AMI: ``NeuronAmi.release("2023.0.YYYYMMDD")`` resolves that release's own SSM parameter
            (``.../neuron/al2023-ami-ecs-neuron-hvm-<release>-kernel-6.1-x86_64/image_id``), so the image changes only
            when you change the release; ``NeuronAmi.recommended()`` (the default) resolves
            ``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id`` at every deploy and warns
            (NEURON125): once AWS publishes a new AMI, the next deploy makes a new launch template version that only
            instances launched after it run. Any other ``ec2.IMachineImage`` warns unless it resolves a Neuron AMI
            parameter (NEURON105); the standard ECS AMI is refused (NEURON030).
        ami_rollout
            How a changed AMI replaces the running instances: an :class:`AmiRollout` (an instance refresh, a stated
            number of instances at a time, each drained by ECS; NEURON087). Default: ``AmiRollout()`` (one instance
            at a time, launched before the old one drains) for a ``NeuronAmi.release``, none otherwise; ``False``
            for none. AWS Batch capacity (``NeuronTrainingQueue``) is not rolled here: Batch updates its compute
            environments' instances itself.
        vpc_subnets
            Where the instances launch; default the cluster's ``capacity_subnets``.
        spot
            Spot Instances, with capacity rebalancing and ECS Spot draining; default False.
        capacity_reservation
            An On-Demand Capacity Reservation (``CapacityReservation.on_demand``,
            ``.on_demand_group``) or an EC2 Capacity Block for ML (``.capacity_block``; trn1.32xlarge and
            trn2.48xlarge only, NEURON038); not with ``spot`` (NEURON037).
        lnc
            Trainium2 only (NEURON064): physical NeuronCores per logical core on every instance, 1 or 2, written
            to ``/opt/aws/neuron/logical_nc_config``; default ``None``, the runtime's default (2). Tasks, fleets and
            sliced services on the group must pass the same ``lnc``.
        warm_pool
            A :class:`WarmPool`: instances launched ahead and kept stopped until a scale-out, the agent with
            ``ECS_WARM_POOLS_CHECK=true``; with ``prefetch`` (its default) a warm-up pulls the images and copies the
            model artifacts of the services on the capacity before the pool stops the instance. A service in another
            stack publishes what it needs under ``<prefix>/warm-up/<id>`` in Parameter Store (``prefix``: the first
            this cluster :meth:`publish` es under), which the warm-up reads at boot; without a published prefix, and
            for an image named by a token, it warns (NEURON124). Not with ``spot`` (NEURON085); ``reuse_on_scale_in``
            is refused (NEURON084). The root volume must hold the AMI (30 GiB) and what the warm-up fetches, as far
            as sizes are stated (``image_size_gib=``, ``ModelArtifacts(size_gib=)``): refused at synth otherwise
            (NEURON091). ``min_size`` at most ``max_capacity`` (NEURON027); no ``HIBERNATED`` pool, which EC2 cannot
            hibernate on a Neuron type (NEURON141); the warm-up's AWS CLI image is pinned by digest
            (``cli_image=AWS_CLI.pinned(...)``) or the library's own with a warning (NEURON068, NEURON116); an image
            named by a tag that moves warns, as the agent prefers cached images (NEURON142).
        """
        path = f"{construct_path(self)}/{id}"
        chosen = neuron_image(path, instance_type, machine_image, ami_rollout)
        capacity = AutoScalingCapacity(
            self,
            id,
            cluster=self.cluster,
            instance_type=chosen.neuron.name,
            machine_image=chosen.image,
            subnets=(selected := self._select_subnets(path, vpc_subnets)).subnets,
            public_subnets=selected.has_public,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            root_volume_gib=root_volume_gib,
            neuron=chosen.neuron,
            spot=spot,
            capacity_reservation=capacity_reservation,
            lnc=lnc,
            ami=chosen.ami,
            ami_rollout=chosen.rollout,
            warm_pool=warm_pool,
        )
        warn_about_image(capacity, chosen)
        self._register_auto_scaling(capacity)
        self.auto_scaling_capacities.append(capacity)
        if self.monitoring is not None:
            self.monitoring.cover(capacity)
        return capacity

    @checked(ranges=CAPACITY_RANGES)
    def add_non_neuron_capacity(
        self,
        id: str,
        *,
        instance_type: str | NeuronInstanceType,
        min_capacity: int = 0,
        max_capacity: int = DEFAULT_MAX_CAPACITY,
        root_volume_gib: int = 30,
        vpc_subnets: ec2.SubnetSelection | None = None,
        spot: bool = False,
        capacity_reservation: CapacityReservation | None = None,
        lnc: int | None = None,
    ) -> AutoScalingCapacity:
        """Add an Auto Scaling group of a non-Neuron type on the standard ECS AL2023 AMI; returns it.

        For the CPU-only parts of an ML system (gateways, pre-processing) in the same cluster; same
        launch-template hardening and choices as :meth:`add_ec2_capacity`. A Neuron type is refused
        (the standard AMI has no Neuron driver, NEURON030), and so is a type the EC2 API does not list
        (NEURON031). Root volume default 30 GiB. ``lnc`` is refused: only Trainium2 takes a logical NeuronCore
        setting (NEURON064).
        """
        path = f"{construct_path(self)}/{id}"
        instance_type = non_neuron_type(path, instance_type)
        capacity = AutoScalingCapacity(
            self,
            id,
            cluster=self.cluster,
            instance_type=instance_type,
            machine_image=ecs.EcsOptimizedImage.amazon_linux2023(ecs.AmiHardwareType.STANDARD),
            subnets=(selected := self._select_subnets(path, vpc_subnets)).subnets,
            public_subnets=selected.has_public,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            root_volume_gib=root_volume_gib,
            neuron=None,
            spot=spot,
            capacity_reservation=capacity_reservation,
            lnc=lnc,
        )
        self._register_auto_scaling(capacity)
        self.auto_scaling_capacities.append(capacity)
        return capacity


class _ImportedNeuronCluster(NeuronCluster):
    """A :class:`NeuronCluster` over an ECS cluster that exists already (:meth:`NeuronCluster.from_cluster_attributes`):
    its checks and its capacity providers' association are in :mod:`~neuron_constructs.compute.imported_cluster`."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str | None,
        vpc: ec2.IVpc | None,
        existing_capacity_providers: Sequence[str] | None,
        default_capacity_provider_strategy: Sequence[ecs.CapacityProviderStrategy],
        capacity_subnets: ec2.SubnetSelection | None,
        published_as: tuple[str, int] | None = None,
    ) -> None:
        Construct.__init__(self, scope, id)
        self._published_as = published_as
        if published_as is not None:  # NeuronCluster.from_published: the values another app published
            cluster_name, vpc = imported_cluster.read_published(self, *published_as)
        assert cluster_name is not None and vpc is not None
        self._begin(scope, id, vpc=vpc, capacity_subnets=capacity_subnets, log_encryption_key=None)
        imported_cluster.check_cluster_name(construct_path(self), cluster_name)
        self.cluster = ecs.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name=cluster_name, vpc=vpc, has_ec2_capacity=True, security_groups=[]
        )
        remember_path(self.cluster, self, "Cluster")
        self.cluster_name = cluster_name
        self.existing_capacity_providers = (
            list(existing_capacity_providers) if existing_capacity_providers is not None else None
        )
        self.default_capacity_provider_strategy = list(default_capacity_provider_strategy)
        self._association: ecs.CfnClusterCapacityProviderAssociations | None = None
        strategy = self.default_capacity_provider_strategy
        imported_cluster.check_default_strategy(
            construct_path(self), cluster_name, self.existing_capacity_providers, strategy
        )

    @property
    def published_prefixes(self) -> list[str]:
        """The prefixes :meth:`publish` published under, in order (the first is where other stacks tell a warm-pooled
        capacity's warm-up what their services need: ``<prefix>/warm-up/<capacity id>``)."""
        return list(self._published)

    @property
    def capacity_associations(self) -> list[ecs.CfnClusterCapacityProviderAssociations]:
        return [self._association] if self._association is not None else []

    def _associations_anchor(self, dependent: IConstruct) -> IConstruct:
        """The first dependent: an imported cluster's association is made with its first Auto Scaling capacity."""
        return dependent

    def _register_auto_scaling(self, capacity: AutoScalingCapacity) -> None:
        self._association = imported_cluster.associate_auto_scaling(
            self,
            self.cluster,
            capacity,
            cluster_name=self.cluster_name,
            existing_capacity_providers=self.existing_capacity_providers,
            default_capacity_provider_strategy=self.default_capacity_provider_strategy,
            published_as=self._published_as,
            auto_scaling_capacities=self.auto_scaling_capacities,
            association=self._association,
        )

    def _register_managed_instances(self, capacity: ManagedInstancesCapacity) -> None:
        capacity.capacity_provider.bind(self.cluster)
