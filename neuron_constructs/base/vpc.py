"""The VPC the library makes when none is given: private subnets, flow logs, the default security group closed."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import aws
from neuron_constructs.base.l1_overrides import drop_redundant_handler_dependency
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, RECORD_REMOVAL, log_group
from neuron_constructs.base.tree import node_of, stack_of

__all__ = ["DEFAULT_VPC_CIDR", "private_vpc", "tidy_default_security_group_handler"]

_RESTRICT_DEFAULT_SG_PROVIDER = "Custom::VpcRestrictDefaultSGCustomResourceProvider"

DEFAULT_VPC_CIDR = "10.0.0.0/16"
"""The IPv4 range of the VPC a NeuronCluster makes (aws-cdk-lib's default)."""


def tidy_default_security_group_handler(scope: Construct) -> None:
    """The handler aws-cdk-lib adds to a stack for ``restrict_default_security_group``: its findings acknowledged
    with reasons, and the ``DependsOn`` cfn-lint reports as redundant removed."""
    provider = node_of(stack_of(scope)).try_find_child(_RESTRICT_DEFAULT_SG_PROVIDER)
    if provider is not None:
        compliance.acknowledge_default_security_group_restriction(provider)
        drop_redundant_handler_dependency(provider)


def private_vpc(
    scope: Construct,
    *,
    max_azs: int,
    log_encryption_key: kms.IKey | None = None,
    log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
    log_removal_policy: RemovalPolicy = RECORD_REMOVAL,
) -> ec2.Vpc:
    """The VPC the library makes (``<scope>/Vpc``): ``10.0.0.0/16``, private subnets with egress through one NAT
    gateway in public subnets that assign no public address, the default security group's rules removed, and flow
    logs (all traffic, events kept ``log_retention``, the group kept after the stack unless ``log_removal_policy``
    says otherwise) delivered by a role that trusts VPC Flow Logs only for this account's flow logs
    (``aws:SourceAccount`` / ``aws:SourceArn``)."""
    vpc = ec2.Vpc(
        scope,
        "Vpc",
        ip_addresses=ec2.IpAddresses.cidr(DEFAULT_VPC_CIDR),
        max_azs=max_azs,
        nat_gateways=1,
        restrict_default_security_group=True,
        subnet_configuration=[
            # Public subnets hold only the NAT gateway, which has its own Elastic IP.
            ec2.SubnetConfiguration(
                name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24, map_public_ip_on_launch=False
            ),
            ec2.SubnetConfiguration(name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
        ],
    )
    tidy_default_security_group_handler(scope)
    flow_logs = log_group(
        scope,
        "VpcFlowLogs",
        retention=log_retention,
        removal_policy=log_removal_policy,
        encryption_key=log_encryption_key,
    )
    # VPC Flow Logs honour aws:SourceAccount and aws:SourceArn in the delivery role's trust policy.
    delivery_role = iam.Role(
        scope,
        "VpcFlowLogsRole",
        assumed_by=iam.ServicePrincipal(
            "vpc-flow-logs.amazonaws.com",
            conditions={
                "StringEquals": {"aws:SourceAccount": aws().account_id},
                "ArnLike": {
                    "aws:SourceArn": f"arn:{aws().partition}:ec2:{aws().region}:{aws().account_id}:vpc-flow-log/*"
                },
            },
        ),
        description="Delivers the VPC flow logs to CloudWatch Logs",
    )
    vpc.add_flow_log("FlowLogs", destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs, delivery_role))
    return vpc
