"""Distributed training on Trainium: an AWS Batch queue of one Neuron type with EFA, and its jobs.

ECS has no gang scheduling; AWS Batch multi-node parallel jobs start every node of a job together on
an ECS cluster Batch manages, give each node its index and the main node's address, and end the job
when the main node exits. :class:`NeuronTrainingQueue` builds what such a job runs on:

* a managed EC2 compute environment of exactly one instance type, ``minvCpus`` 0 (nothing runs and
  nothing is billed while no job is queued), ``maxvCpus`` = ``max_nodes`` x the type's vCPUs, on the
  ECS-optimized Amazon Linux 2023 Neuron AMI from its SSM parameter (the recommended one, or the release
  ``machine_image`` pins), and a job queue on it;
* a launch template with IMDSv2 (hop limit 1), an encrypted gp3 root volume, and on types with EFA one
  EFA interface per network card - card 0 at device index 0 is the primary, cards 1..n-1 at device
  index 1 - with the security group on the interfaces, as AWS's Trainium launch templates attach them
  (aws-neuron-samples ``torch-neuronx/training/aws-batch``). The ECS Neuron AMI carries the Neuron
  driver but no EFA software (aws/amazon-ecs-ami installs ``aws-neuronx-dkms``, the OCI hook and the
  Neuron tools only), so the user data installs it with AWS's EFA installer, as those samples do; Batch
  takes user data only as a MIME multi-part archive;
* a cluster placement group where the capacity allows it (below), one subnet (one Availability Zone, NEURON051) and
  a security group that allows all traffic from and to itself and nothing inbound from anywhere else;
* capacity: On-Demand, Spot (single-node jobs only, NEURON050), an On-Demand Capacity Reservation or a
  Capacity Block for ML (:class:`~neuron_constructs.compute.reservations.CapacityReservation`, set on the launch
  template; NEURON038 for types Capacity Blocks do not offer).

Batch accepts security groups on the compute environment or network interfaces in the launch
template, not both (aws/aws-cdk#21577): with EFA interfaces the compute environment's are dropped
(:func:`~neuron_constructs.base.l1_overrides.drop_compute_environment_security_groups`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import jsii
from aws_cdk import ArnFormat, Duration, Names, RemovalPolicy, Stack, Validations
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import ROOT_VOLUME_GIB, Range, checked
from neuron_constructs.base.environments import (
    IMPORT_TOPIC,
    IMPORT_VPC,
    check_same_account,
    check_same_app,
    check_same_region,
    check_same_vpc,
    vpc_of_subnet,
)
from neuron_constructs.base.l1_overrides import (
    drop_compute_environment_security_groups,
    efa_network_interfaces,
    reserve_launch_template_capacity,
)
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, RECORD_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.base.vpc import private_vpc
from neuron_constructs.compute.container_instances import (
    DEFAULT_ROOT_VOLUME_GIB,
    encrypted_root_volume,
    grant_ecs_agent,
    warn_about_public_subnets,
)
from neuron_constructs.compute.driver_check import image_sdk, stated_sdk, warn_unknown_sdk
from neuron_constructs.compute.reservations import CapacityReservation
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NeuronAmi
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at
from neuron_constructs.knowledge.efa_installer import install_commands
from neuron_constructs.knowledge.neuron_releases import ami_driver_conflict, newest_driver_conflict
from neuron_constructs.training.jobs import DEFAULT_JOB_TIMEOUT, PREFLIGHT_MARKER_DIR, NeuronTrainingJob, Preflight
from neuron_constructs.training.storage import LustreStorage, check_storage, lustre_file_system, mount_commands

__all__ = ["NeuronTrainingQueue"]

_KEPT = (RemovalPolicy.RETAIN, RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)


class NeuronTrainingQueue(Construct):
    """An AWS Batch job queue of one Neuron instance type, ready for multi-node training over EFA.

    Parameters
    ----------
    instance_type
        A catalog Neuron type (name or entry).
    max_nodes
        The most instances the queue runs at once, 1 or more.
    vpc
        Default a new VPC as :class:`NeuronCluster` makes one (private subnets behind a NAT gateway, no public
        addresses, flow logs, the default security group closed), in one Availability Zone.
    subnet
        The one subnet (one Availability Zone) every node launches in, or a list of exactly one (more are refused,
        NEURON051); default the VPC's first private subnet.
    spot
        Spot Instances (single-node jobs only, NEURON050); default False.
    capacity_reservation
        An On-Demand Capacity Reservation, a reservation group or a Capacity Block, set on the
        launch template (no fallback, NEURON052; Capacity Blocks only for the types they offer, NEURON038).
    root_volume_gib
        The encrypted gp3 root volume; default 100 GiB.
    machine_image
        Which ECS Neuron AMI the compute environment launches: ``NeuronAmi.release("2023.0.YYYYMMDD")`` resolves that
        release's own SSM parameter, and a job whose image's runtime does not run on its driver is refused
        (NEURON088); ``NeuronAmi.recommended()`` (the default) resolves the recommended AMI's parameter at every
        deploy, and a job whose image's runtime does not run on the newest driver warns (NEURON127). A changed image
        is an infrastructure update of the compute environment, done in place (see ``compute_environment`` below).
    storage
        A :class:`LustreStorage` every node mounts; default none. A mount that fails at boot fails the node's user
        data and its jobs' preflight (exit 75, retried), so nothing is written to the root volume in its place. A
        file system kept after the stack (its default) in the VPC the queue makes warns (NEURON120): it would keep
        ``cdk destroy`` from deleting the VPC.
    monitoring
        Every job's nodes publish Neuron metrics while they run: the launcher starts neuron-monitor (the
        Neuron training containers install aws-neuronx-tools: aws-neuron/deep-learning-containers
        ``pytorch/training/2.8.0/Dockerfile.neuronx``) and sends its reports as CloudWatch metric lines to the
        job's log stream, in the namespace of :class:`~neuron_constructs.NeuronMonitoring` with the job queue's
        name as ``ClusterName``; default False. AWS Batch manages the nodes' ECS cluster, so no daemon can run there.
    placement_group
        A cluster placement group for the nodes: default on for an On-Demand or Spot queue of two or more nodes, off
        with a ``capacity_reservation``. EC2 advises reserving capacity explicitly inside a cluster placement group: a
        reservation made outside it does not guarantee instances in it, and forcing one on reserved EFA capacity
        fails with insufficient capacity (EC2 guide: placement groups and capacity reservations;
        terraform-aws-eks#3730, eksctl#7949); ``True`` when the reservation was made in the group.
    notifications, notify_on_success
        An SNS topic told of every job of this queue that fails (and succeeds, with ``notify_on_success``): an
        EventBridge rule on ``Batch Job State Change`` with the job's name and id, status, status reason and log
        stream. The topic is in the queue's Region (NEURON058) and account (NEURON070). The topic's policy lets
        EventBridge publish, and the key of an encrypted topic lets it ``kms:Decrypt`` and ``kms:GenerateDataKey*``,
        each only for this queue's rule (``aws:SourceAccount`` the queue's account, ``aws:SourceArn`` the rule's
        ARN); a topic or key imported from elsewhere keeps its own policy, which must allow it already.
    log_retention, log_removal_policy
        How long the job logs (and the flow logs of the VPC made here) keep their events, default one month, and what
        ``cdk destroy`` does with their groups: default ``RemovalPolicy.RETAIN``, since a job's log is the record of a
        training run and is read after the queue is gone; a kept group empties itself once its retention has passed.

    Attributes
    ----------
    compute_environment, job_queue, launch_template, placement_group, security_group, log_group, job_alerts
        What it is made of (``placement_group`` and ``job_alerts`` ``None`` when off). The compute environment is
        updated in place, never replaced (``ReplaceComputeEnvironment: false``): a new AMI (every release with the
        recommended one), launch template or placement group is an AWS Batch infrastructure update, which Batch
        performs only for the ``BEST_FIT_PROGRESSIVE``, ``SPOT_CAPACITY_OPTIMIZED`` and
        ``SPOT_PRICE_CAPACITY_OPTIMIZED`` allocation strategies; with ``BEST_FIT`` the stack update fails (AWS
        Batch user guide: "Perform infrastructure updates"). So On-Demand, reservations and Capacity Blocks use
        ``BEST_FIT_PROGRESSIVE`` (with one instance type it picks no other type; Batch may exceed ``maxvCpus`` by
        one instance: AWS Batch user guide, "Allocation strategies") and Spot ``SPOT_PRICE_CAPACITY_OPTIMIZED``.
        The update policy keeps running jobs: ``TerminateJobsOnUpdate: false`` and ``JobExecutionTimeoutMinutes``
        4320, the jobs' default 3-day timeout (the Batch API allows 1 to 7200; AWS Batch API reference:
        UpdatePolicy). New jobs start on new instances; a running job keeps its nodes until it ends or 3 days have
        passed, instead of Batch's default 30 minutes. A replacement (``ReplaceComputeEnvironment: true``,
        CloudFormation's default) would create a new environment and delete the old one, and its instances, in
        the deploy. Environments that were ``BEST_FIT`` cannot be updated to another strategy, so this one has a
        new logical id (``ComputeEnvironmentBestFitProgressive``): the first deploy with it creates it, moves the
        queue to it and deletes the old one - deploy that when no job is running.
    instance_type, max_nodes, spot, vpc, subnet
        The layout (``instance_type``: the catalog entry).
    storage, file_system
        The shared storage and its FSx file system; ``None`` without storage.
    """

    @checked(ranges={"max_nodes": Range(1), "root_volume_gib": ROOT_VOLUME_GIB})
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: str | NeuronInstanceType,
        max_nodes: int,
        vpc: ec2.IVpc | None = None,
        subnet: ec2.ISubnet | Sequence[ec2.ISubnet] | None = None,
        spot: bool = False,
        capacity_reservation: CapacityReservation | None = None,
        root_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
        machine_image: NeuronAmi | None = None,
        storage: LustreStorage | None = None,
        monitoring: bool = False,
        placement_group: bool | None = None,
        notifications: sns.ITopic | None = None,
        notify_on_success: bool = False,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = RECORD_REMOVAL,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        subnets = list(subnet) if isinstance(subnet, Sequence) else [] if subnet is None else [subnet]
        for part in [*([vpc] if vpc is not None else []), *subnets]:
            check_same_app(path, scope, part, what="the queue", other_name=construct_path(part), how=IMPORT_VPC)
        if notifications is not None:
            check_same_app(
                path, scope, notifications, what="the queue", other_name=construct_path(notifications), how=IMPORT_TOPIC
            )
            check_same_account(path, notifications, scope)
            check_same_region(
                path,
                notifications.env.region,
                scope,
                what=f"notifications {construct_path(notifications)}",
                other_name="the queue's job alerts",
                fix="notifications= a topic of that stack's Region",
            )
        if storage is not None:
            check_storage(path, storage)
        self.instance_type: NeuronInstanceType = instance_type_at(path, instance_type)
        instance = self.instance_type
        if capacity_reservation is not None:
            if spot:
                raise rules.SPOT_WITH_RESERVATION.error(path, f"spot=True with the {capacity_reservation.describe()}")
            if capacity_reservation.kind == "capacity-block" and not instance.offers_capacity_blocks:
                raise rules.CAPACITY_BLOCK_TYPE.error(
                    path, f"a Capacity Block of {instance.name}", instance_type=instance.name
                )
            if capacity_reservation.fallback_to_on_demand:
                raise rules.RESERVATION_FALLBACK.error(
                    path, f"fallback_to_on_demand=True with the {capacity_reservation.describe()}"
                )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        # NEURON115 and the other template checks at synth, as for every construct of the library
        enable_template_checks(scope)
        self.max_nodes = max_nodes
        self.spot = spot
        if machine_image is not None and not isinstance(machine_image, NeuronAmi):
            raise rules.WRONG_TYPE.error(
                path, f"machine_image={machine_image!r}", expected="machine_image as a NeuronAmi (NeuronAmi.release())"
            )
        self.ami: NeuronAmi = machine_image or NeuronAmi.recommended()
        """The ECS Neuron AMI the compute environment launches."""
        self.monitoring = monitoring
        self.vpc: ec2.IVpc = vpc or private_vpc(
            self, max_azs=1, log_retention=log_retention, log_removal_policy=log_removal_policy
        )
        if isinstance(subnet, Sequence):
            if len(subnet) != 1:
                raise rules.TRAINING_SUBNETS.error(
                    path,
                    f"subnet is {len(subnet)} subnets ({', '.join(construct_path(s) for s in subnet) or 'none'})",
                )
            (subnet,) = subnet
        if subnet is None:
            private = self.vpc.private_subnets
            if not private:
                raise rules.TRAINING_SUBNETS.error(path, f"{construct_path(self.vpc)} has no private subnet")
            subnet = private[0]
        else:
            self._check_subnet(path, subnet)
        self.subnet: ec2.ISubnet = subnet
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=self.vpc,
            description=f"Neuron training nodes ({instance.name}): all traffic between nodes, nothing else in",
            allow_all_outbound=True,
        )
        self.security_group.add_ingress_rule(self.security_group, ec2.Port.all_traffic(), "Between training nodes")
        if placement_group is None:
            placement_group = max_nodes > 1 and capacity_reservation is None
        self.placement_group: ec2.PlacementGroup | None = (
            ec2.PlacementGroup(self, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER)
            if placement_group
            else None
        )
        self.log_group: logs.ILogGroup = new_log_group(
            self, "Logs", retention=log_retention, removal_policy=log_removal_policy
        )
        self.storage = storage
        self.file_system: fsx.LustreFileSystem | None = None
        mount: list[str] = []
        if storage is not None:
            if vpc is None and storage.removal_policy in _KEPT:
                Validations.of(self).add_warning(
                    rules.KEPT_FILE_SYSTEM_IN_OWN_VPC.warning_id,
                    rules.KEPT_FILE_SYSTEM_IN_OWN_VPC.message(
                        path,
                        f"the FSx for Lustre file system is kept after the stack (removal_policy="
                        f"RemovalPolicy.{storage.removal_policy.name}), in {construct_path(self.vpc)}, which the "
                        "stack deletes",
                    ),
                )
            self.file_system = lustre_file_system(
                self, storage, vpc=self.vpc, subnet=self.subnet, nodes=self.security_group
            )
            mount = mount_commands(self.file_system.dns_name, self.file_system.mount_name, storage.mount_path)
        efa = instance.efa_interfaces or 0
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            require_imdsv2=True,
            http_put_response_hop_limit=1,
            detailed_monitoring=True,
            user_data=_user_data(efa, mount),
            security_group=None if efa else self.security_group,
            block_devices=[encrypted_root_volume(root_volume_gib)],
        )
        if efa:
            efa_network_interfaces(self.launch_template, self.security_group.security_group_id, efa)
        if capacity_reservation is not None:
            reserve_launch_template_capacity(
                self.launch_template, kind=capacity_reservation.kind, target=capacity_reservation.target
            )
        self.instance_role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"AWS Batch container instances ({instance.name}) of {path}",
        )
        self.compute_environment = batch.ManagedEc2EcsComputeEnvironment(
            self,
            # Spot environments kept their strategy and their id; the others changed from BEST_FIT, which Batch
            # cannot update to another strategy in place, so they are new resources (see the class docstring).
            "ComputeEnvironment" if spot else "ComputeEnvironmentBestFitProgressive",
            instance_role=self.instance_role,
            vpc=self.vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=[self.subnet]),
            security_groups=[self.security_group],
            instance_types=[ec2.InstanceType(instance.name)],
            use_optimal_instance_classes=False,
            minv_cpus=0,
            maxv_cpus=max_nodes * instance.vcpus,
            spot=spot,
            allocation_strategy=(
                batch.AllocationStrategy.SPOT_PRICE_CAPACITY_OPTIMIZED
                if spot
                else batch.AllocationStrategy.BEST_FIT_PROGRESSIVE
            ),
            replace_compute_environment=False,
            terminate_on_update=False,
            update_timeout=DEFAULT_JOB_TIMEOUT,
            launch_template=self.launch_template,
            placement_group=self.placement_group,
            images=[
                batch.EcsMachineImage(
                    image=ec2.MachineImage.from_ssm_parameter(self.ami.parameter_name),
                    image_type=batch.EcsMachineImageType.ECS_AL2023,
                )
            ],
        )
        if efa:
            drop_compute_environment_security_groups(self.compute_environment)
        # AWS Batch names the ECS cluster of a compute environment AWSBatch-<compute environment name>-<uuid>; the
        # compute environment's Ref is its ARN, which ends in /<name>.
        stack = Stack.of(self)
        name = stack.split_arn(
            self.compute_environment.compute_environment_arn, ArnFormat.SLASH_RESOURCE_NAME
        ).resource_name
        batch_cluster = stack.format_arn(service="ecs", resource="cluster", resource_name=f"AWSBatch-{name}-*")
        agent_policy = grant_ecs_agent(self.instance_role, batch_cluster, pattern=True)
        compliance.acknowledge_training_queue(agent_policy, batch_cluster)
        self.job_queue = batch.JobQueue(
            self,
            "JobQueue",
            compute_environments=[
                batch.OrderedComputeEnvironment(compute_environment=self.compute_environment, order=1)
            ],
        )
        # No job starts before its instances may register with the cluster Batch makes.
        self.job_queue.node.add_dependency(self.instance_role)
        self.jobs: list[NeuronTrainingJob] = []
        self.job_alerts: events.Rule | None = (
            self._alert(notifications, notify_on_success) if notifications is not None else None
        )

    def _alert(self, topic: sns.ITopic, on_success: bool) -> events.Rule:
        """An EventBridge rule on this queue's ``Batch Job State Change`` events (FAILED, and SUCCEEDED when asked) to
        ``topic``: the job's name and id, its status and reason, and its log stream.

        The rule is named (unique in the app) so that its ARN is known without a reference to it: the topic may be in
        another stack of the app, whose policy then names the rule without depending on this stack."""
        statuses = ["FAILED", *(["SUCCEEDED"] if on_success else [])]
        stack = Stack.of(self)
        name = Names.unique_resource_name(self, max_length=64 - len("-JobAlerts"), separator="-") + "-JobAlerts"
        rule = events.Rule(
            self,
            "JobAlerts",
            rule_name=name,
            description=f"AWS Batch jobs of {construct_path(self)} that end {' or '.join(statuses)}",
            event_pattern=events.EventPattern(
                source=["aws.batch"],
                detail_type=["Batch Job State Change"],
                detail={"jobQueue": [self.job_queue.job_queue_arn], "status": statuses},
            ),
        )
        # EventBridge sends aws:SourceAccount and aws:SourceArn (the rule) with its calls to SNS and, through SNS, to
        # KMS (EventBridge user guide: resource-based policies for Amazon SNS; SNS guide: encrypted topics and AWS
        # service event sources).
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnEquals": {
                "aws:SourceArn": stack.format_arn(
                    service="events", resource="rule", resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
                )
            },
        }
        events_service = iam.ServicePrincipal("events.amazonaws.com")
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[events_service],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=conditions,
            )
        )
        if topic.master_key is not None:
            # EventBridge publishes to an encrypted topic only when the key lets it (the SNS guide: EventBridge and
            # encrypted topics); a key imported from elsewhere keeps its own policy.
            topic.master_key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[events_service],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions=conditions,
                )
            )
        field = events.EventField.from_path
        rule.add_target(
            _AlertTopic(
                topic,
                events.RuleTargetInput.from_text(
                    f"AWS Batch job {field('$.detail.jobName')} ({field('$.detail.jobId')}) "
                    f"{field('$.detail.status')}: {field('$.detail.statusReason')}. "
                    f"Log stream: {field('$.detail.container.logStreamName')}"
                ),
            )
        )
        return rule

    def _check_subnet(self, path: str, subnet: ec2.ISubnet) -> None:
        """NEURON059 for a subnet of another VPC; NEURON061 for a public subnet when the nodes have several network
        interfaces (EFA), and warning NEURON108 when they have one."""
        owner = vpc_of_subnet(subnet)
        if owner is not None:
            check_same_vpc(
                path,
                owner,
                self.vpc,
                what=f"subnet {construct_path(subnet)}",
                other_name="the queue's nodes (vpc=)",
                fix=f"a subnet of {construct_path(self.vpc)}, or vpc= the VPC of the subnet",
            )
        public = {construct_path(s) for s in (owner or self.vpc).public_subnets}
        if construct_path(subnet) not in public:
            return
        interfaces = self.instance_type.efa_interfaces or 1
        if interfaces > 1:
            raise rules.TRAINING_PUBLIC_SUBNET.error(
                path,
                f"subnet {construct_path(subnet)} is public, and a {self.instance_type.name} node launches with "
                f"{interfaces} network interfaces",
            )
        warn_about_public_subnets(self, owner or self.vpc, [subnet], any_public=True)

    @checked(
        ranges={
            "nodes": Range(1),
            "retries": Range(0, 9, "AWS Batch: 1 to 10 attempts, the first included"),
            "tensor_parallel": Range(1),
            "pipeline_parallel": Range(1),
        },
        names=("command", "environment", "secrets"),  # deploy-time values pass through to the job definition
    )
    def add_job(
        self,
        id: str,
        *,
        nodes: int,
        image: ecs.ContainerImage,
        command: Sequence[str],
        environment: Mapping[str, str] | None = None,
        secrets: Mapping[str, batch.Secret] | None = None,
        devices: Sequence[int] | None = None,
        job_role: iam.IRole | None = None,
        timeout: Duration | None = None,
        preflight: Preflight = True,
        retries: int = 3,
        checkpoint_dir: str | None = None,
        tensor_parallel: int | None = None,
        pipeline_parallel: int | None = None,
        neuron_sdk: str | None = None,
    ) -> NeuronTrainingJob:
        """A job definition for ``nodes`` nodes of this queue's type (:class:`NeuronTrainingJob`). A single-node job
        runs in the host network, the only mode AWS Batch offers it on EC2, and can use the queue's instance role
        (warning NEURON115 at synth); the nodes of a multi-node job run in awsvpc, kept from it.

        ``preflight`` (default ``True``): every node checks its Neuron devices, EFA interfaces and driver (and, with
        storage, that the Lustre file system is mounted), and on a multi-node job waits for every other node's
        verdict of this job (other jobs of the queue reach the same port, and are refused), before the command
        starts; ``"collective"`` adds an all-reduce over each node's NeuronCores (``nccom-test``, about a minute per
        node, billed); a bad node exits 75 with a one-line reason and powers its instance off; a tool of the image
        that refuses the preflight's flags (a neuron-ls that takes neither ``--output-format json``, Neuron 2.34 and
        later, nor ``--json-output``, Neuron 2.33 and earlier) exits 78, naming the tool and the flags, and powers
        nothing off (:mod:`neuron_constructs.programs.preflight`).
        ``retries`` (0 to 9, default 3; attempts = retries + 1): the job is retried for the preflight's exit code
        for a bad node (75) and for ``Host EC2*`` status reasons (a failed or reclaimed instance), never for anything
        else (not for 78: every attempt runs the same image).
        ``checkpoint_dir``: ``NEURON_CHECKPOINT_DIR`` for every node - a path under the queue's storage or an
        ``s3://`` URL (NEURON066; grant the job role the bucket); default ``<mount>/data/checkpoints/<id>`` when
        the storage links a bucket (FSx exports it to S3), ``<mount>/checkpoints/<id>`` when not, none without
        storage. The library only names the place; the training script saves there and resumes from the newest
        checkpoint it finds (``AWS_BATCH_JOB_ATTEMPT`` above 1 means a retry).
        ``neuron_sdk``: the image's Neuron SDK release (``"2.31.1"``), for an image whose tag does not name it
        (``-sdkX.Y.Z-``): the driver checks read it (NEURON088, NEURON127, NEURON147); refused when the release table
        does not know it or the tag names another (NEURON146). Default: the tag's, else unknown.
        """
        job = NeuronTrainingJob(
            self,
            id,
            queue=self,
            nodes=nodes,
            image=image,
            command=command,
            environment=environment,
            secrets=secrets,
            devices=devices,
            job_role=job_role,
            timeout=timeout,
            retries=retries,
            preflight=preflight,
            checkpoint_dir=checkpoint_dir,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
        )
        self._check_driver(f"{construct_path(self)}/{id}", job, neuron_sdk)
        self.jobs.append(job)
        return job

    def _check_driver(self, path: str, job: NeuronTrainingJob, neuron_sdk: str | None) -> None:
        """NEURON088 when the job's image (by its stated Neuron SDK release, or the one in its tag) does not run on the
        driver of the pinned AMI release, NEURON147 when neither names the release there; NEURON127 when the queue
        follows the recommended AMI and the image does not run on the newest driver. The image's name is read from
        the job definition aws-cdk-lib renders (the image was bound when the container was made: rendering it again
        binds nothing)."""
        definition = job.job_definition.node.default_child
        assert isinstance(definition, batch.CfnJobDefinition)
        rendered = Stack.of(self).resolve(definition.container_properties or definition.node_properties)
        names = [json.dumps(name) for name in _images(rendered)]
        sdk = stated_sdk(path, next((n for n in names if image_sdk(n)), names[0] if names else ""), neuron_sdk)
        if sdk is None:
            if self.ami.version is not None:
                warn_unknown_sdk(job, "the job", self.ami.version)
            return
        if self.ami.version is not None:
            problem = ami_driver_conflict(self.ami.version, sdk, self.instance_type.family)
            if problem is not None:
                raise rules.DRIVER_OUTSIDE_RUNTIME.error(path, problem)
            return
        problem = newest_driver_conflict(sdk)
        if problem is not None:
            Validations.of(self).add_warning(
                rules.IMAGE_BEHIND_NEWEST_DRIVER.warning_id,
                rules.IMAGE_BEHIND_NEWEST_DRIVER.message(path, f"{problem}; the queue follows the recommended AMI"),
            )


@jsii.implements(events.IRuleTarget)
class _AlertTopic:
    """An SNS topic as a rule's target, with no permission of its own: aws-cdk-lib's ``targets.SnsTopic`` lets
    ``events.amazonaws.com`` publish with no source condition; the queue writes the conditioned statements itself."""

    def __init__(self, topic: sns.ITopic, message: events.RuleTargetInput) -> None:
        self._topic = topic
        self._message = message

    def bind(self, rule: object, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._topic.topic_arn, input=self._message)


def _images(rendered: object) -> list[object]:
    """The values of every ``image`` key in a rendered job definition (one per container)."""
    if isinstance(rendered, dict):
        return [
            found
            for key, value in rendered.items()
            for found in ([value] if key in ("image", "Image") else _images(value))
        ]
    return [found for value in rendered for found in _images(value)] if isinstance(rendered, list) else []


def _user_data(efa_interfaces: int, mount: Sequence[str]) -> ec2.UserData:
    """MIME multi-part user data (AWS Batch takes no other form): IMDS blocked for awsvpc containers, the unit that
    powers off a node its preflight found bad, the EFA software on types with EFA (a pinned release whose checksum is
    verified first, :mod:`neuron_constructs.knowledge.efa_installer`), and the Lustre client and mount (``mount``,
    :func:`~neuron_constructs.training.storage.mount_commands`: a failed mount fails the user data) with shared
    storage."""
    script = ec2.UserData.for_linux()
    # Batch runs multi-node containers in the awsvpc network mode: keep them from the instance role's credentials.
    # (A single-node job runs in the host network, which neither this nor the hop limit reaches: NEURON115 says so.)
    script.add_commands("echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config")
    # A node its preflight found bad writes PREFLIGHT_MARKER_DIR/failed: the instance powers off, and its Auto Scaling
    # group replaces an instance in any state but running.
    script.add_commands(
        f"mkdir -p {PREFLIGHT_MARKER_DIR} && rm -f {PREFLIGHT_MARKER_DIR}/failed",
        "cat > /etc/systemd/system/neuron-preflight-failed.path <<'UNIT'",
        "[Path]",
        f"PathExists={PREFLIGHT_MARKER_DIR}/failed",
        "[Install]",
        "WantedBy=multi-user.target",
        "UNIT",
        "cat > /etc/systemd/system/neuron-preflight-failed.service <<'UNIT'",
        "[Unit]",
        "Description=Power off a training node its preflight found bad, so that its Auto Scaling group replaces it",
        "[Service]",
        "Type=oneshot",
        f"ExecStart=/bin/sh -c 'logger -t neuron-preflight < {PREFLIGHT_MARKER_DIR}/failed; systemctl poweroff'",
        "UNIT",
        "systemctl daemon-reload && systemctl enable --now neuron-preflight-failed.path",
    )
    if efa_interfaces:
        # the pinned release, run only when its checksum matches the one AWS publishes
        script.add_commands(*install_commands())
    script.add_commands(*mount)
    multipart = ec2.MultipartUserData()
    multipart.add_user_data_part(script, ec2.MultipartBody.SHELL_SCRIPT, True)
    return multipart
