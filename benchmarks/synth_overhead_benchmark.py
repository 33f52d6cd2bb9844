"""Benchmark: what the library adds to synth time, against the same stack written in plain aws-cdk-lib.

Run with ``make bench-synth`` (or ``.venv/bin/python benchmarks/synth_overhead_benchmark.py``).

Both stacks serve one model on an inf2.xlarge Auto Scaling group: a VPC with flow logs and a
closed default security group, a cluster with Container Insights, a launch template on the
Neuron AMI (IMDSv2, hop limit 1, encrypted gp3 root), the group and its capacity provider, a
task definition mapping ``/dev/neuron0`` with its log group and roles, and a service with
``distinctInstance`` that waits for the cluster's capacity provider association. The
benchmark checks that both templates hold the same resources (type by type) before it times
anything.

Timing (warm in one process, cold in new processes; ratios of the medians and the median of the pair ratios):
``benchmarks/synth_pairs.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))

NEURON_AMI = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
IMAGE_NAME = "public.ecr.aws/docker/library/busybox:1.37"


def library_stack(app: Any) -> Any:
    from aws_cdk import Stack
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import ManualNeuronTaskDefinition, NeuronCluster, NeuronService

    stack = Stack(app, "Bench")
    cluster = NeuronCluster(stack, "Neuron")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(stack, "Model", instance_type="inf2.xlarge", cpu=4096, memory_mib=12288)
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(IMAGE_NAME),
        port_mappings=[ecs.PortMapping(container_port=8080, host_port=8080)],
    )
    NeuronService(stack, "Service", cluster=cluster, task_definition=task)
    return stack


def plain_stack(app: Any) -> Any:
    from aws_cdk import Aws, Stack
    from aws_cdk import aws_autoscaling as autoscaling
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_logs as logs

    stack = Stack(app, "Bench")
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=1,
        restrict_default_security_group=True,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC, map_public_ip_on_launch=False),
            ec2.SubnetConfiguration(name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        ],
    )
    flow_logs = logs.LogGroup(stack, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH)
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
    cluster = ecs.Cluster(stack, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)

    group = ec2.SecurityGroup(stack, "InstanceSg", vpc=vpc, description="ECS container instances, outbound only")
    role = iam.Role(stack, "InstanceRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["ecs:RegisterContainerInstance", "ecs:DeregisterContainerInstance", "ecs:SubmitTaskStateChange"],
            resources=[cluster.cluster_arn],
        )
    )
    role.add_to_policy(iam.PolicyStatement(actions=["ecs:DiscoverPollEndpoint", "ecs:Poll"], resources=["*"]))
    user_data = ec2.UserData.for_linux()
    user_data.add_commands(f"echo ECS_CLUSTER={cluster.cluster_name} >> /etc/ecs/ecs.config")
    launch_template = ec2.LaunchTemplate(
        stack,
        "LaunchTemplate",
        instance_type=ec2.InstanceType("inf2.xlarge"),
        machine_image=ec2.MachineImage.from_ssm_parameter(NEURON_AMI),
        role=role,
        security_group=group,
        user_data=user_data,
        require_imdsv2=True,
        http_put_response_hop_limit=1,
        detailed_monitoring=True,
        block_devices=[
            ec2.BlockDevice(
                device_name="/dev/xvda",
                volume=ec2.BlockDeviceVolume.ebs(100, encrypted=True, volume_type=ec2.EbsDeviceVolumeType.GP3),
            )
        ],
    )
    asg = autoscaling.AutoScalingGroup(
        stack,
        "Group",
        vpc=vpc,
        launch_template=launch_template,
        min_capacity=0,
        max_capacity=2,
        new_instances_protected_from_scale_in=True,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
    )
    provider = ecs.AsgCapacityProvider(
        stack,
        "Provider",
        auto_scaling_group=asg,
        enable_managed_termination_protection=True,
        enable_managed_draining=True,
        target_capacity_percent=100,
    )
    cluster.add_asg_capacity_provider(provider)

    task_role = iam.Role(stack, "TaskRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    task = ecs.TaskDefinition(
        stack,
        "Task",
        compatibility=ecs.Compatibility.EC2,
        network_mode=ecs.NetworkMode.BRIDGE,
        cpu="4096",
        memory_mib="12288",
        task_role=task_role,
        placement_constraints=[ecs.PlacementConstraint.member_of("attribute:ecs.instance-type == inf2.xlarge")],
    )
    devices = ecs.LinuxParameters(stack, "Devices")
    devices.add_devices(ecs.Device(host_path="/dev/neuron0", permissions=[ecs.DevicePermission.READ]))
    devices.add_capabilities(ecs.Capability.IPC_LOCK)
    task_logs = logs.LogGroup(stack, "TaskLogs", retention=logs.RetentionDays.ONE_MONTH)
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry(IMAGE_NAME),
        linux_parameters=devices,
        port_mappings=[ecs.PortMapping(container_port=8080, host_port=8080)],
        logging=ecs.LogDrivers.aws_logs(stream_prefix="model", log_group=task_logs),
    )
    service = ecs.Ec2Service(
        stack,
        "Service",
        cluster=cluster,
        task_definition=task,
        desired_count=1,
        min_healthy_percent=100,
        circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
        placement_constraints=[ecs.PlacementConstraint.distinct_instances()],
        capacity_provider_strategies=[
            ecs.CapacityProviderStrategy(capacity_provider=provider.capacity_provider_name, weight=1)
        ],
    )
    # ECS refuses a strategy naming a provider not yet associated with the cluster: wait for the association
    service.node.add_dependency(cluster)
    return stack


BUILDERS = {"library": library_stack, "plain": plain_stack}


if __name__ == "__main__":
    from synth_pairs import main

    main(BUILDERS, script=__file__, description=__doc__.split("\n\n")[0], runs=41, cold_runs=15)
