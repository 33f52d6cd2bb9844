"""TEMPORARY local stand-in (not committed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from neuron_constructs.serving.rollout import SmokeTest


def load_balancer_role(
    owner: Construct,
    id: str,
    *,
    listener_rules: Sequence[Any],
    target_groups: Sequence[elbv2.ITargetGroup],
    network_listener: elbv2.INetworkListener | None = None,
) -> iam.Role:
    return iam.Role(owner, id, assumed_by=iam.ServicePrincipal("ecs.amazonaws.com"))


def smoke_test_hook(
    owner: Construct,
    id: str,
    *,
    smoke_test: SmokeTest,
    url: str,
    header: tuple[str, str] | None,
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    load_balancer: ec2.IConnectable,
    port: int,
) -> ecs.DeploymentLifecycleLambdaTarget:
    fn = lambda_.Function(
        owner,
        id,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c):\n    return {}"),
        vpc=vpc,
        vpc_subnets=subnets,
        environment={"SMOKE_TEST_URL": url},
    )
    return ecs.DeploymentLifecycleLambdaTarget(
        fn, f"{id}Hook", lifecycle_stages=[ecs.DeploymentLifecycleStage.POST_TEST_TRAFFIC_SHIFT]
    )
