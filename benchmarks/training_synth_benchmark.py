"""Benchmark: synth time of the library's distributed-training stack against the same stack in plain aws-cdk-lib.

Run with ``make bench-training`` (or ``.venv/bin/python benchmarks/training_synth_benchmark.py``).

Both stacks hold what ``examples/app.py`` ``NeuronTrainingTrn1`` builds: an AWS Batch queue of
trn1.32xlarge (at most 2 nodes) over EFA and a two-node multi-node parallel job on it. That is a
VPC in one Availability Zone with flow logs and a closed default security group; a security group
open only to itself, a cluster placement group and a log group; a launch template on the Neuron
AMI (IMDSv2, hop limit 1, encrypted gp3 root, MIME multi-part user data that installs EFA and the
Lustre client and mounts the file system) with 8 EFA interfaces; the instance role scoped to the
cluster AWS Batch makes; the managed EC2 compute environment and its job queue; a versioned S3
bucket linked to an FSx for Lustre file system (PERSISTENT_2) through a data repository
association; the job definition (Neuron and EFA devices, ulimits, shared memory, the Lustre
mount, retries, timeout, an open node range) and its submit command as an output. The plain side
is written with aws-cdk-lib L2s and L1 overrides where the L2s have no property (the EFA
interfaces, the compute environment's security groups, the node range). The benchmark checks
that both templates hold the same resources (type by type) before it times anything, and prints
the lines of code each side takes (non-blank, non-comment lines of ``library_stack`` and
``plain_stack``, imports included).

Timing (warm in one process, cold in new processes; ratios of the medians and the median of the pair ratios):
``benchmarks/synth_pairs.py``.
"""

from __future__ import annotations

import ast
import inspect
import io
import os
import textwrap
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neuron_constructs.knowledge.container_images import PYTORCH_TRAINING

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))

NEURON_AMI = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
TRAINING_IMAGE = PYTORCH_TRAINING.uri


def library_stack(app: Any) -> Any:
    from aws_cdk import Stack
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import LustreStorage, NeuronTrainingQueue

    stack = Stack(app, "Bench")
    storage = LustreStorage.in_new_bucket(stack, "Datasets")
    queue = NeuronTrainingQueue(stack, "Trn1", instance_type="trn1.32xlarge", max_nodes=2, storage=storage)
    job = queue.add_job(
        "Pretrain",
        nodes=2,
        image=ecs.ContainerImage.from_registry(TRAINING_IMAGE),
        command=["torchrun", "--nproc_per_node=32", "/fsx/data/train.py"],
    )
    job.add_submit_output()
    return stack


def plain_stack(app: Any) -> Any:
    from aws_cdk import ArnFormat, Aws, CfnOutput, CfnResource, Duration, RemovalPolicy, Size, Stack
    from aws_cdk import aws_batch as batch
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs
    from aws_cdk import aws_fsx as fsx
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_logs as logs
    from aws_cdk import aws_s3 as s3

    stack = Stack(app, "Bench")
    bucket = s3.Bucket(
        stack,
        "Datasets",
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=True,
        removal_policy=RemovalPolicy.RETAIN,
    )
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=1,
        nat_gateways=1,
        restrict_default_security_group=True,
        subnet_configuration=[
            ec2.SubnetConfiguration(
                name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24, map_public_ip_on_launch=False
            ),
            ec2.SubnetConfiguration(name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
        ],
    )
    flow_logs = logs.LogGroup(
        stack, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
    )
    flow_role = iam.Role(
        stack,
        "FlowLogsRole",
        assumed_by=iam.ServicePrincipal(
            "vpc-flow-logs.amazonaws.com",
            conditions={
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}:vpc-flow-log/*"},
            },
        ),
    )
    vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs, flow_role))
    subnet = vpc.private_subnets[0]

    nodes_sg = ec2.SecurityGroup(stack, "NodesSg", vpc=vpc, description="Training nodes: all traffic between nodes")
    nodes_sg.add_ingress_rule(nodes_sg, ec2.Port.all_traffic(), "Between training nodes")
    placement_group = ec2.PlacementGroup(stack, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER)
    job_logs = logs.LogGroup(
        stack, "JobLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
    )

    lustre_sg = ec2.SecurityGroup(stack, "LustreSg", vpc=vpc, description="FSx for Lustre: from the nodes only")
    file_system = fsx.LustreFileSystem(
        stack,
        "FileSystem",
        vpc=vpc,
        vpc_subnet=subnet,
        storage_capacity_gib=1200,
        security_group=lustre_sg,
        removal_policy=RemovalPolicy.RETAIN,
        lustre_configuration=fsx.LustreConfiguration(
            deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
            per_unit_storage_throughput=125,
            data_compression_type=fsx.LustreDataCompressionType.LZ4,
        ),
    )
    for port in (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023)):
        file_system.connections.allow_from(nodes_sg, port, "Training nodes to Lustre")
    fsx.CfnDataRepositoryAssociation(
        stack,
        "DatasetsLink",
        file_system_id=file_system.file_system_id,
        file_system_path="/data",
        data_repository_path=f"s3://{bucket.bucket_name}/",
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

    script = ec2.UserData.for_linux()
    script.add_commands(
        "echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config",
        "cd /tmp",
        "curl -sSfO https://efa-installer.amazonaws.com/aws-efa-installer-latest.tar.gz",
        "tar -xf aws-efa-installer-latest.tar.gz",
        "cd aws-efa-installer && ./efa_installer.sh -y",
        "/opt/amazon/efa/bin/fi_info -p efa",
        "dnf install -y lustre-client",
        "mkdir -p /fsx",
        f"mount -t lustre -o relatime,flock {file_system.dns_name}@tcp:/{file_system.mount_name} /fsx",
        "mkdir -p /fsx/neuron-compile-cache",
    )
    user_data = ec2.MultipartUserData()
    user_data.add_user_data_part(script, ec2.MultipartBody.SHELL_SCRIPT, True)
    launch_template = ec2.LaunchTemplate(
        stack,
        "LaunchTemplate",
        require_imdsv2=True,
        http_put_response_hop_limit=1,
        detailed_monitoring=True,
        user_data=user_data,
        block_devices=[
            ec2.BlockDevice(
                device_name="/dev/xvda",
                volume=ec2.BlockDeviceVolume.ebs(
                    100, encrypted=True, volume_type=ec2.EbsDeviceVolumeType.GP3, delete_on_termination=True
                ),
            )
        ],
    )
    # ec2.LaunchTemplate has no network interfaces: one EFA interface per network card of trn1.32xlarge
    template = launch_template.node.default_child
    assert isinstance(template, CfnResource)
    template.add_property_override(
        "LaunchTemplateData.NetworkInterfaces",
        [
            {
                "NetworkCardIndex": card,
                "DeviceIndex": 0 if card == 0 else 1,
                "InterfaceType": "efa",
                "Groups": [nodes_sg.security_group_id],
                "DeleteOnTermination": True,
            }
            for card in range(8)
        ],
    )

    instance_role = iam.Role(stack, "InstanceRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    compute_environment = batch.ManagedEc2EcsComputeEnvironment(
        stack,
        "ComputeEnvironment",
        instance_role=instance_role,
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnets=[subnet]),
        security_groups=[nodes_sg],
        instance_types=[ec2.InstanceType("trn1.32xlarge")],
        use_optimal_instance_classes=False,
        minv_cpus=0,
        maxv_cpus=256,
        allocation_strategy=batch.AllocationStrategy.BEST_FIT_PROGRESSIVE,
        terminate_on_update=False,
        update_timeout=Duration.days(3),
        launch_template=launch_template,
        placement_group=placement_group,
        images=[
            batch.EcsMachineImage(
                image=ec2.MachineImage.from_ssm_parameter(NEURON_AMI),
                image_type=batch.EcsMachineImageType.ECS_AL2023,
            )
        ],
    )
    # Batch refuses security groups on both the compute environment and the launch template's interfaces
    environment_resource = compute_environment.node.default_child
    assert isinstance(environment_resource, CfnResource)
    environment_resource.add_property_deletion_override("ComputeResources.SecurityGroupIds")
    # Batch names its ECS cluster AWSBatch-<compute environment name>-<uuid>
    environment_name = stack.split_arn(
        compute_environment.compute_environment_arn, ArnFormat.SLASH_RESOURCE_NAME
    ).resource_name
    batch_cluster = stack.format_arn(service="ecs", resource="cluster", resource_name=f"AWSBatch-{environment_name}-*")
    instance_role.add_to_policy(
        iam.PolicyStatement(
            actions=[
                "ecs:RegisterContainerInstance",
                "ecs:DeregisterContainerInstance",
                "ecs:SubmitAttachmentStateChanges",
                "ecs:SubmitContainerStateChange",
                "ecs:SubmitTaskStateChange",
            ],
            resources=[batch_cluster],
        )
    )
    instance_role.add_to_policy(
        iam.PolicyStatement(
            actions=["ecs:Poll", "ecs:StartTelemetrySession"],
            resources=["*"],
            conditions={"ArnLike": {"ecs:cluster": batch_cluster}},
        )
    )
    instance_role.add_to_policy(iam.PolicyStatement(actions=["ecs:DiscoverPollEndpoint"], resources=["*"]))
    job_queue = batch.JobQueue(
        stack,
        "JobQueue",
        compute_environments=[batch.OrderedComputeEnvironment(compute_environment=compute_environment, order=1)],
    )
    job_queue.node.add_dependency(instance_role)

    job_role = iam.Role(stack, "JobRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    linux = batch.LinuxParameters(stack, "LinuxParameters", shared_memory_size=Size.mebibytes(52428))
    linux.add_devices(
        *[batch.Device(host_path=f"/dev/neuron{i}", container_path=f"/dev/neuron{i}") for i in range(16)],
        *[
            batch.Device(host_path=f"/dev/infiniband/uverbs{i}", container_path=f"/dev/infiniband/uverbs{i}")
            for i in range(8)
        ],
    )
    launcher = textwrap.dedent(
        """\
        set -eu
        export NNODES="${AWS_BATCH_JOB_NUM_NODES:-1}"
        export NODE_RANK="${AWS_BATCH_JOB_NODE_INDEX:-0}"
        export MASTER_ADDR="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-$(hostname -i | cut -d' ' -f1)}"
        export MASTER_PORT="${MASTER_PORT:-41000}"
        export NEURON_RT_ROOT_COMM_ID="${NEURON_RT_ROOT_COMM_ID:-$MASTER_ADDR:46820}"
        export PET_NNODES="$NNODES" PET_NODE_RANK="$NODE_RANK"
        export PET_MASTER_ADDR="$MASTER_ADDR" PET_MASTER_PORT="$MASTER_PORT"
        exec "$@"
        """
    )
    container = batch.EcsEc2ContainerDefinition(
        stack,
        "Container",
        image=ecs.ContainerImage.from_registry(TRAINING_IMAGE),
        cpu=128,
        memory=Size.mebibytes(471859),
        command=["/bin/bash", "-c", launcher, "launch", "torchrun", "--nproc_per_node=32", "/fsx/data/train.py"],
        environment={
            "FI_PROVIDER": "efa",
            "FI_EFA_USE_DEVICE_RDMA": "1",
            "FI_EFA_FORK_SAFE": "1",
            "NEURON_COMPILE_CACHE_URL": "/fsx/neuron-compile-cache",
        },
        volumes=[batch.EcsVolume.host(name="shared", host_path="/fsx", container_path="/fsx")],
        job_role=job_role,
        linux_parameters=linux,
        ulimits=[
            batch.Ulimit(name=batch.UlimitName.MEMLOCK, soft_limit=-1, hard_limit=-1),
            batch.Ulimit(name=batch.UlimitName.NOFILE, soft_limit=65535, hard_limit=65535),
        ],
        logging=ecs.LogDrivers.aws_logs(stream_prefix="Pretrain", log_group=job_logs),
    )
    job_definition = batch.MultiNodeJobDefinition(
        stack,
        "JobDefinition",
        instance_type=ec2.InstanceType("trn1.32xlarge"),
        main_node=0,
        containers=[batch.MultiNodeContainer(container=container, start_node=0, end_node=1)],
        retry_attempts=3,
        retry_strategies=[
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_status_reason="Host EC2*")),
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
        ],
        timeout=Duration.days(3),
        propagate_tags=True,
    )
    # --node-overrides numNodes=N needs an open node range, which MultiNodeJobDefinition never writes
    job_resource = job_definition.node.default_child
    assert isinstance(job_resource, CfnResource)
    job_resource.add_property_override("NodeProperties.NodeRangeProperties.0.TargetNodes", "0:")
    CfnOutput(
        stack,
        "SubmitCommand",
        value=f"aws batch submit-job --job-name pretrain --job-queue {job_queue.job_queue_name} "
        f"--job-definition {job_definition.job_definition_name} --node-overrides numNodes=2",
    )
    return stack


BUILDERS = {"library": library_stack, "plain": plain_stack}


def lines_of_code(function: Callable[..., Any]) -> int:
    """Non-blank, non-comment lines of ``function``'s body (every line a token other than a comment is on; a
    multi-line string counts all its lines)."""
    source = textwrap.dedent(inspect.getsource(function))
    definition = ast.parse(source).body[0]
    assert isinstance(definition, ast.FunctionDef)
    first = definition.body[0].lineno
    code: set[int] = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            code.update(range(token.start[0], token.end[0] + 1))
    return sum(1 for line in code if line >= first)


def _lines_of_code() -> tuple[dict[str, Any], list[str]]:
    loc = {kind: lines_of_code(builder) for kind, builder in BUILDERS.items()}
    line = (
        f"Lines of user code (non-blank, non-comment, imports included): library {loc['library']}, "
        f"plain aws-cdk-lib {loc['plain']} (plain / library {loc['plain'] / loc['library']:.1f})"
    )
    return {"lines_of_code": loc}, [line]


if __name__ == "__main__":
    from synth_pairs import main

    main(
        BUILDERS,
        script=__file__,
        description=__doc__.split("\n\n")[0],
        runs=21,
        cold_runs=7,
        extra=_lines_of_code,
    )
