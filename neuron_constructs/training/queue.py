"""Distributed training on Trainium: an AWS Batch queue of one Neuron type with EFA, and its jobs.

ECS has no gang scheduling; AWS Batch multi-node parallel jobs start every node of a job together on
an ECS cluster Batch manages, give each node its index and the main node's address, and end the job
when the main node exits. :class:`NeuronTrainingQueue` builds what such a job runs on:

* a managed EC2 compute environment of exactly one instance type, ``minvCpus`` 0 (nothing runs and
  nothing is billed while no job is queued), ``maxvCpus`` = ``max_nodes`` x the type's vCPUs, on the
  ECS-optimized Amazon Linux 2023 Neuron AMI from its SSM parameter, and a job queue on it;
* a launch template with IMDSv2 (hop limit 1), an encrypted gp3 root volume, and on types with EFA one
  EFA interface per network card - card 0 at device index 0 is the primary, cards 1..n-1 at device
  index 1 - with the security group on the interfaces, as AWS's Trainium launch templates attach them
  (aws-neuron-samples ``torch-neuronx/training/aws-batch``). The ECS Neuron AMI carries the Neuron
  driver but no EFA software (aws/amazon-ecs-ami installs ``aws-neuronx-dkms``, the OCI hook and the
  Neuron tools only), so the user data installs it with AWS's EFA installer, as those samples do; Batch
  takes user data only as a MIME multi-part archive;
* a cluster placement group, one subnet (one Availability Zone, NEURON051) and a security group that
  allows all traffic from and to itself and nothing inbound from anywhere else;
* capacity: On-Demand, Spot (single-node jobs only, NEURON050), an On-Demand Capacity Reservation or a
  Capacity Block for ML (:class:`~neuron_constructs.compute.capacity.CapacityReservation`, set on the launch
  template; NEURON038 for types Capacity Blocks do not offer).

Batch accepts security groups on the compute environment or network interfaces in the launch
template, not both (aws/aws-cdk#21577): with EFA interfaces the compute environment's are dropped
(:func:`~neuron_constructs.base.l1_overrides.drop_compute_environment_security_groups`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import GP3_VOLUME_GIB, Range, checked, construct_path, remember_path
from neuron_constructs.base.l1_overrides import (
    drop_compute_environment_security_groups,
    efa_network_interfaces,
    open_node_range,
    reserve_launch_template_capacity,
)
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.vpc import private_vpc
from neuron_constructs.checks import inputs
from neuron_constructs.compute.capacity import (
    DEFAULT_ROOT_VOLUME_GIB,
    NEURON_AMI_PARAMETER,
    CapacityReservation,
    encrypted_root_volume,
    grant_ecs_agent,
)
from neuron_constructs.compute.task_definitions import task_role
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at

__all__ = ["EFA_ENVIRONMENT", "LAUNCHER", "LustreStorage", "NeuronTrainingJob", "NeuronTrainingQueue"]

EFA_INSTALLER = "https://efa-installer.amazonaws.com/aws-efa-installer-latest.tar.gz"
"""AWS's EFA installer (EC2 guide: Get started with EFA), as the Neuron AWS Batch samples install it."""
EFA_ENVIRONMENT = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_EFA_FORK_SAFE": "1"}
"""What the Neuron collectives read over EFA, as the Neuron AWS Batch training scripts set it: libfabric's EFA
provider, RDMA reads on the device, and fork safety for data loaders that fork."""
LAUNCHER = r"""set -eu
# AWS Batch multi-node parallel job -> torchrun: the main node has no AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS.
export NNODES="${AWS_BATCH_JOB_NUM_NODES:-1}"
export NODE_RANK="${AWS_BATCH_JOB_NODE_INDEX:-0}"
export MASTER_ADDR="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-$(hostname -i | cut -d' ' -f1)}"
export MASTER_PORT="${MASTER_PORT:-41000}"
export NEURON_RT_ROOT_COMM_ID="${NEURON_RT_ROOT_COMM_ID:-$MASTER_ADDR:46820}"
# torchrun reads each option from PET_<OPTION> when it is not on its command line.
export PET_NNODES="$NNODES" PET_NODE_RANK="$NODE_RANK" PET_MASTER_ADDR="$MASTER_ADDR" PET_MASTER_PORT="$MASTER_PORT"
# With monitoring: neuron-monitor's reports as CloudWatch metric lines on the job's log stream, while the job runs.
if [ -n "${NEURON_MONITOR_EMF:-}" ]; then
  PATH="$PATH:/opt/aws/neuron/bin"
  config=$(mktemp 2>/dev/null || true)
  if ! command -v neuron-monitor >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
    echo "neuron-launch: this image has no neuron-monitor or python3; the job publishes no Neuron metrics" >&2
  elif [ -n "$config" ] && printf '%s' "${NEURON_MONITOR_CONFIG:-"{}"}" > "$config" 2>/dev/null; then
    (neuron-monitor -c "$config" | python3 -u -c "$NEURON_MONITOR_EMF") &
  else
    echo "neuron-launch: cannot write neuron-monitor's configuration; the job publishes no Neuron metrics" >&2
  fi
fi
exec "$@"
"""
"""Runs before the job's command on every node: the rank and world of the node from what Batch gives it (AWS Batch
guide: multi-node parallel job environment variables) as ``NNODES``, ``NODE_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``
and as the ``PET_*`` variables ``torchrun`` reads for its options (``torch.distributed.run``), so ``torchrun
--nproc_per_node=32 train.py`` needs nothing else; and the Neuron runtime's root communicator on the main node."""
SHARED_MEMORY_FRACTION = 0.1
"""Share of the instance's memory given to ``/dev/shm`` (Docker's default is 64 MiB): data loader workers and the
Neuron runtime's host buffers pass tensors through it. A choice, not an AWS figure."""


@dataclass(frozen=True)
class LustreStorage:
    """Shared storage every node of a :class:`NeuronTrainingQueue` mounts at ``mount_path``: an FSx for Lustre file
    system (PERSISTENT_2, encrypted at rest as every FSx file system is, in the queue's subnet).

    ``capacity_gib``: 1,200, 2,400 or a multiple of 2,400 (FSx for PERSISTENT_2); ``throughput_per_tib``: 125, 250,
    500 or 1,000 MB/s per TiB. ``bucket``: an S3 bucket linked at ``<mount_path>/data`` through a data repository
    association (objects imported and exported as they change), for datasets and checkpoints. Neuron's compile
    cache goes to ``<mount_path>/neuron-compile-cache``, so nodes and later jobs reuse compiled graphs.
    """

    capacity_gib: int = 1200
    throughput_per_tib: int = 125
    mount_path: str = "/fsx"
    bucket: s3.IBucket | None = None

    @classmethod
    def in_new_bucket(
        cls,
        scope: Construct,
        id: str,
        *,
        capacity_gib: int = 1200,
        throughput_per_tib: int = 125,
        mount_path: str = "/fsx",
    ) -> LustreStorage:
        """Storage linked to a new bucket for datasets and checkpoints: encrypted (S3 managed keys), TLS only, public
        access blocked, owner-enforced objects, versioned (an overwritten checkpoint can be restored), kept when the
        stack is deleted."""
        bucket = s3.Bucket(
            scope,
            id,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        compliance.acknowledge_dataset_bucket(bucket)
        return cls(
            capacity_gib=capacity_gib, throughput_per_tib=throughput_per_tib, mount_path=mount_path, bucket=bucket
        )


class NeuronTrainingQueue(Construct):
    """An AWS Batch job queue of one Neuron instance type, ready for multi-node training over EFA.

    Parameters
    ----------
    instance_type: a catalog Neuron type (name or entry).
    max_nodes: the most instances the queue runs at once, 1 or more.
    vpc: default a new VPC as :class:`NeuronCluster` makes one (private subnets behind a NAT gateway, no public
        addresses, flow logs, the default security group closed), in one Availability Zone.
    subnet: the one subnet (one Availability Zone) every node launches in, or a list of exactly one (more are refused,
        NEURON051); default the VPC's first private subnet.
    spot: Spot Instances (single-node jobs only, NEURON050); default False.
    capacity_reservation: an On-Demand Capacity Reservation, a reservation group or a Capacity Block, set on the
        launch template (no fallback, NEURON052; Capacity Blocks only for the types they offer, NEURON038).
    root_volume_gib: the encrypted gp3 root volume; default 100 GiB.
    storage: a :class:`LustreStorage` every node mounts; default none.
    monitoring: every job's nodes publish Neuron metrics while they run: the launcher starts neuron-monitor (the
        Neuron training containers install aws-neuronx-tools: aws-neuron/deep-learning-containers
        ``pytorch/training/2.8.0/Dockerfile.neuronx``) and sends its reports as CloudWatch metric lines to the
        job's log stream, in the namespace of :class:`~neuron_constructs.NeuronMonitoring` with the job queue's
        name as ``ClusterName``; default False. AWS Batch manages the nodes' ECS cluster, so no daemon can run there.

    Attributes
    ----------
    compute_environment, job_queue, launch_template, placement_group, security_group, log_group,
    instance_type (the catalog entry), max_nodes, spot, vpc, subnet; storage and file_system (``None`` without
    storage).
    """

    @checked(ranges={"max_nodes": Range(1), "root_volume_gib": GP3_VOLUME_GIB})
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
        storage: LustreStorage | None = None,
        monitoring: bool = False,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        if storage is not None:
            _check_storage(path, storage)
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
        self.max_nodes = max_nodes
        self.spot = spot
        self.monitoring = monitoring
        self.vpc: ec2.IVpc = vpc or private_vpc(self, max_azs=1)
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
        self.subnet: ec2.ISubnet = subnet
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=self.vpc,
            description=f"Neuron training nodes ({instance.name}): all traffic between nodes, nothing else in",
            allow_all_outbound=True,
        )
        self.security_group.add_ingress_rule(self.security_group, ec2.Port.all_traffic(), "Between training nodes")
        self.placement_group = ec2.PlacementGroup(self, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER)
        self.log_group: logs.ILogGroup = new_log_group(self, "Logs", retention=logs.RetentionDays.ONE_MONTH)
        self.storage = storage
        self.file_system: fsx.LustreFileSystem | None = None
        mount: list[str] = []
        if storage is not None:
            self.file_system = self._file_system(storage)
            mount = [
                "dnf install -y lustre-client",
                f"mkdir -p {storage.mount_path}",
                f"mount -t lustre -o relatime,flock {self.file_system.dns_name}@tcp:/{self.file_system.mount_name} "
                f"{storage.mount_path}",
                f"mkdir -p {storage.mount_path}/neuron-compile-cache",
            ]
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
            "ComputeEnvironment",
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
                batch.AllocationStrategy.SPOT_PRICE_CAPACITY_OPTIMIZED if spot else batch.AllocationStrategy.BEST_FIT
            ),
            launch_template=self.launch_template,
            placement_group=self.placement_group,
            images=[
                batch.EcsMachineImage(
                    image=ec2.MachineImage.from_ssm_parameter(NEURON_AMI_PARAMETER),
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
        grant_ecs_agent(self.instance_role, batch_cluster, pattern=True)
        compliance.acknowledge_training_queue(self, batch_cluster)
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

    def _file_system(self, storage: LustreStorage) -> fsx.LustreFileSystem:
        """The Lustre file system in the queue's subnet; the nodes reach it on Lustre's ports (988, 1018-1023)."""
        group = ec2.SecurityGroup(
            self,
            "StorageSecurityGroup",
            vpc=self.vpc,
            description="FSx for Lustre of the training nodes - Lustre ports from the nodes only",
            allow_all_outbound=True,
        )
        file_system = fsx.LustreFileSystem(
            self,
            "FileSystem",
            vpc=self.vpc,
            vpc_subnet=self.subnet,
            storage_capacity_gib=storage.capacity_gib,
            security_group=group,
            removal_policy=RemovalPolicy.RETAIN,
            lustre_configuration=fsx.LustreConfiguration(
                deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
                per_unit_storage_throughput=storage.throughput_per_tib,
                data_compression_type=fsx.LustreDataCompressionType.LZ4,
            ),
        )
        # FSx for Lustre: TCP 988 and 1018-1023 (aws-cdk-lib's default port opens 988-1023).
        for port in (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023)):
            file_system.connections.allow_from(self.security_group, port, "Training nodes to Lustre")
        if storage.bucket is not None:
            fsx.CfnDataRepositoryAssociation(
                self,
                "Datasets",
                file_system_id=file_system.file_system_id,
                file_system_path="/data",
                data_repository_path=f"s3://{storage.bucket.bucket_name}/",
                batch_import_meta_data_on_create=True,
                s3=fsx.CfnDataRepositoryAssociation.S3Property(
                    auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                        events=["NEW", "CHANGED", "DELETED"]
                    ),
                    auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                        events=["NEW", "CHANGED", "DELETED"]
                    ),
                ),
            )
        return file_system

    @checked(
        ranges={
            "nodes": Range(1),
            "retry_attempts": Range(1, 10, "AWS Batch: 1 to 10 attempts"),
            "tensor_parallel": Range(1),
            "pipeline_parallel": Range(1),
        }
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
        retry_attempts: int = 3,
        tensor_parallel: int | None = None,
        pipeline_parallel: int | None = None,
    ) -> NeuronTrainingJob:
        """A job definition for ``nodes`` nodes of this queue's type (:class:`NeuronTrainingJob`)."""
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
            retry_attempts=retry_attempts,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
        )
        self.jobs.append(job)
        return job


class NeuronTrainingJob(Construct):
    """A training job of a :class:`NeuronTrainingQueue`: ``nodes`` copies of one container, one per instance.

    ``nodes`` >= 2 makes a multi-node parallel job definition (every node runs the same container, node 0 is the
    main node); ``nodes`` = 1 an ECS job definition. The container maps every ``/dev/neuronN`` of the type (or
    ``devices``) and every ``/dev/infiniband/uverbsN`` the type has, with the same host and container path; runs
    with an unlimited ``memlock`` and 65,535 open files; gets :data:`SHARED_MEMORY_FRACTION` of the instance's
    memory as ``/dev/shm``, the type's vCPUs and 90 % of its memory; the EFA environment (:data:`EFA_ENVIRONMENT`)
    when it spans nodes; and runs its ``command`` through :data:`LAUNCHER`, which sets the rank and world
    variables ``torchrun`` reads. Logs go to the queue's log group, one stream per node. The job role holds
    nothing unless given. Infrastructure failures (``Host EC2*`` status reasons: a host that failed or a reclaimed
    instance) are retried up to ``retry_attempts`` times, other failures are not; ``timeout`` defaults to 3 days.

    ``tensor_parallel`` and ``pipeline_parallel``, when the job states them, are checked against its world size: one
    process per NeuronCore of its devices (per logical core on Trainium2, ``NEURON_LOGICAL_NC_CONFIG``, default 2)
    on every node. A multi-node definition's node range is open (``0:``), so ``submit_command`` (``--node-overrides
    numNodes=N``) can run it on another number of nodes, up to the queue's ``max_nodes``.

    Refused: multi-node on a type without EFA (NEURON048), more nodes than the queue launches (NEURON049),
    multi-node on Spot (NEURON050), devices beyond the type (NEURON009), ``NEURON_RT_VISIBLE_CORES`` or
    ``NEURON_RT_NUM_CORES`` beyond the mapped devices (NEURON019), parallel degrees that do not divide the world
    size (NEURON053).

    Attributes
    ----------
    job_definition (``batch.MultiNodeJobDefinition`` or ``batch.EcsJobDefinition``), container, nodes, devices,
    job_role; submit_command: the ``aws batch submit-job`` command line that runs it (tokens until synth).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        queue: NeuronTrainingQueue,
        nodes: int,
        image: ecs.ContainerImage,
        command: Sequence[str],
        environment: Mapping[str, str] | None,
        secrets: Mapping[str, batch.Secret] | None,
        devices: Sequence[int] | None,
        job_role: iam.IRole | None,
        timeout: Duration | None,
        retry_attempts: int,
        tensor_parallel: int | None = None,
        pipeline_parallel: int | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        instance = queue.instance_type
        if nodes > 1 and not instance.supports_multi_node:
            multi_node = ", ".join(e.name for e in NeuronInstanceType.all() if e.supports_multi_node)
            raise rules.MULTI_NODE_WITHOUT_EFA.error(
                path, f"nodes={nodes} on {instance.name}, which has no EFA", multi_node=multi_node
            )
        if nodes > queue.max_nodes:
            raise rules.TOO_MANY_NODES.error(
                path,
                f"nodes={nodes} but {construct_path(queue)} launches at most {queue.max_nodes} instances",
                max_nodes=queue.max_nodes,
                queue=construct_path(queue),
            )
        if nodes > 1 and queue.spot:
            raise rules.MULTI_NODE_ON_SPOT.error(path, f"nodes={nodes} on {construct_path(queue)}, which runs Spot")
        chosen = (
            tuple(range(instance.chips)) if devices is None else inputs.check_device_indices(path, instance, devices)
        )
        inputs.check_runtime_cores(path, dict(environment or {}), instance, chosen)
        _check_parallel_degrees(
            path, instance, chosen, nodes, dict(environment or {}), tensor_parallel, pipeline_parallel
        )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        self.nodes = nodes
        self.devices = chosen
        self.job_role: iam.IRole = job_role or task_role(self, "JobRole")
        linux = batch.LinuxParameters(
            self,
            "LinuxParameters",
            shared_memory_size=Size.mebibytes(int(instance.memory_mib * SHARED_MEMORY_FRACTION)),
        )
        linux.add_devices(
            *[batch.Device(host_path=f"/dev/neuron{i}", container_path=f"/dev/neuron{i}") for i in chosen],
            *[
                batch.Device(host_path=f"/dev/infiniband/uverbs{i}", container_path=f"/dev/infiniband/uverbs{i}")
                for i in range(instance.efa_interfaces or 0)
            ],
        )
        self.container = batch.EcsEc2ContainerDefinition(
            self,
            "Container",
            image=image,
            cpu=instance.vcpus,
            memory=Size.mebibytes(instance.schedulable_memory_mib),
            command=["/bin/bash", "-c", LAUNCHER, "neuron-launch", *command],
            environment={
                **(EFA_ENVIRONMENT if nodes > 1 else {}),
                **(_storage_environment(queue.storage) if queue.storage else {}),
                **(_monitoring_environment(queue) if queue.monitoring else {}),
                **(environment or {}),
            },
            volumes=[
                batch.EcsVolume.host(
                    name="shared", host_path=queue.storage.mount_path, container_path=queue.storage.mount_path
                )
            ]
            if queue.storage
            else None,
            secrets=dict(secrets) if secrets else None,
            job_role=self.job_role,
            linux_parameters=linux,
            ulimits=[
                batch.Ulimit(name=batch.UlimitName.MEMLOCK, soft_limit=-1, hard_limit=-1),
                batch.Ulimit(name=batch.UlimitName.NOFILE, soft_limit=65535, hard_limit=65535),
            ],
            logging=ecs.LogDrivers.aws_logs(stream_prefix=id, log_group=queue.log_group),
        )
        retries = [
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_status_reason="Host EC2*")),
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
        ]
        options: dict[str, Any] = {
            "retry_attempts": retry_attempts,
            "retry_strategies": retries,
            "timeout": timeout or Duration.days(3),
            "propagate_tags": True,
        }
        self.job_definition: batch.MultiNodeJobDefinition | batch.EcsJobDefinition
        if nodes > 1:
            self.job_definition = batch.MultiNodeJobDefinition(
                self,
                "JobDefinition",
                instance_type=ec2.InstanceType(instance.name),
                main_node=0,
                containers=[batch.MultiNodeContainer(container=self.container, start_node=0, end_node=nodes - 1)],
                **options,
            )
            open_node_range(self.job_definition)
        else:
            self.job_definition = batch.EcsJobDefinition(self, "JobDefinition", container=self.container, **options)
        compliance.acknowledge_execution_role(self)
        self.submit_command = (
            f"aws batch submit-job --job-name {id.lower()} --job-queue {queue.job_queue.job_queue_name} "
            f"--job-definition {self.job_definition.job_definition_name}"
            + (f" --node-overrides numNodes={nodes}" if nodes > 1 else "")
        )

    def add_submit_output(self, id: str = "SubmitCommand") -> CfnOutput:
        """A stack output with :attr:`submit_command`, the exact ``aws batch submit-job`` line that runs this job."""
        return CfnOutput(self, id, value=self.submit_command, description="Runs the training job on its queue")


def _logical_core_size(instance: NeuronInstanceType, environment: Mapping[str, str]) -> int:
    """Physical NeuronCores per logical core: ``NEURON_LOGICAL_NC_CONFIG`` if set, else 2 on Trainium2 (the Neuron
    runtime's default there) and 1 elsewhere."""
    configured = environment.get("NEURON_LOGICAL_NC_CONFIG")
    if configured is not None and configured.isdigit() and int(configured) in (1, 2):
        return int(configured)
    return 2 if instance.family == "trn2" else 1


def _check_parallel_degrees(
    path: str,
    instance: NeuronInstanceType,
    devices: Sequence[int],
    nodes: int,
    environment: Mapping[str, str],
    tensor_parallel: int | None,
    pipeline_parallel: int | None,
) -> None:
    """NEURON053: one process per (logical) NeuronCore, and tensor x pipeline parallel divides the world size."""
    if tensor_parallel is None and pipeline_parallel is None:
        return
    per_node = len(devices) * instance.neuron_cores_per_chip // _logical_core_size(instance, environment)
    world = nodes * per_node
    product = (tensor_parallel or 1) * (pipeline_parallel or 1)
    if world % product:
        raise rules.PARALLEL_DEGREES.error(
            path,
            f"tensor_parallel={tensor_parallel or 1} x pipeline_parallel={pipeline_parallel or 1} = {product} does "
            f"not divide the world size {world} ({nodes} nodes x {per_node} NeuronCores)",
            world=world,
            per_node=per_node,
        )


def _check_storage(path: str, storage: LustreStorage) -> None:
    """NEURON027: the sizes FSx for Lustre PERSISTENT_2 accepts, and an absolute mount path (NEURON047)."""
    if not (storage.capacity_gib in (1200, 2400) or (storage.capacity_gib > 0 and storage.capacity_gib % 2400 == 0)):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"capacity_gib={storage.capacity_gib}",
            name="capacity_gib",
            minimum="1200",
            maximum="any multiple of 2400 (FSx for Lustre PERSISTENT_2: 1,200, 2,400, then steps of 2,400)",
        )
    if storage.throughput_per_tib not in (125, 250, 500, 1000):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"throughput_per_tib={storage.throughput_per_tib}",
            name="throughput_per_tib",
            minimum="125",
            maximum="1000 (one of 125, 250, 500, 1000 MB/s per TiB)",
        )
    if not storage.mount_path.startswith("/"):
        raise rules.S3_LOCATION.error(path, f"mount_path={storage.mount_path!r} is not absolute")


def _monitoring_environment(queue: NeuronTrainingQueue) -> dict[str, str]:
    """What the launcher needs to publish Neuron metrics (:data:`LAUNCHER`): the publisher, neuron-monitor's
    configuration and the queue's name as the metrics' ``ClusterName``."""
    from aws_cdk import Duration

    from neuron_constructs.knowledge.metrics import CLUSTER_ENVIRONMENT
    from neuron_constructs.monitoring.monitoring import neuron_monitor_config, publisher_source

    return {
        CLUSTER_ENVIRONMENT: queue.job_queue.job_queue_name,
        "NEURON_MONITOR_EMF": publisher_source(),
        "NEURON_MONITOR_CONFIG": json.dumps(neuron_monitor_config(Duration.minutes(1)), separators=(",", ":")),
    }


def _storage_environment(storage: LustreStorage) -> dict[str, str]:
    """Neuron's persistent compile cache on the shared file system (``NEURON_COMPILE_CACHE_URL``)."""
    return {"NEURON_COMPILE_CACHE_URL": f"{storage.mount_path}/neuron-compile-cache"}


def _user_data(efa_interfaces: int, mount: Sequence[str]) -> ec2.UserData:
    """MIME multi-part user data (AWS Batch takes no other form): IMDS blocked for awsvpc containers, the EFA
    software on types with EFA, and the Lustre client and mount (``mount``) with shared storage."""
    script = ec2.UserData.for_linux()
    # Batch runs multi-node containers in the awsvpc network mode: keep them from the instance role's credentials.
    script.add_commands("echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config")
    if efa_interfaces:
        script.add_commands(
            "cd /tmp",
            f"curl -sSfO {EFA_INSTALLER}",
            "tar -xf aws-efa-installer-latest.tar.gz",
            "cd aws-efa-installer && ./efa_installer.sh -y",
            "/opt/amazon/efa/bin/fi_info -p efa",
        )
    script.add_commands(*mount)
    multipart = ec2.MultipartUserData()
    multipart.add_user_data_part(script, ec2.MultipartBody.SHELL_SCRIPT, True)
    return multipart
