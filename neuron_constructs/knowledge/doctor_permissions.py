"""What ``neuron-ecs doctor`` may call, as an IAM policy: read-only, each action with the resources it can be held to.

Every action is a read; the EC2 ``Describe*`` actions support no resource-level permissions (the service
authorization reference lists no resource type for them), so they name ``*``; the others are held to the
resources doctor reads: the four Neuron vCPU quotas, the public ECS AMI parameters and the CDK bootstrap version
parameter, service-linked roles, and ECR repositories. ``tests/test_doctor.py`` runs every check against a local
endpoint and keeps this list equal to the calls doctor makes.

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_constructs.knowledge.quotas import QUOTAS

__all__ = ["DOCTOR_PERMISSIONS", "POLICY_FILE", "DoctorPermission", "policy_document", "policy_text"]


@dataclass(frozen=True)
class DoctorPermission:
    """One action doctor calls, the resources (ARN patterns, ``{partition}`` filled in) it is held to, and why."""

    action: str
    resources: tuple[str, ...]
    why: str


DOCTOR_PERMISSIONS: tuple[DoctorPermission, ...] = (
    DoctorPermission(
        "servicequotas:GetServiceQuota",
        tuple(f"arn:{{partition}}:servicequotas:*:*:ec2/{q.code}" for q in QUOTAS),
        "the account's Inf and Trn vCPU quotas, On-Demand and Spot",
    ),
    DoctorPermission("ec2:DescribeAvailabilityZones", ("*",), "the zone IDs of the Region's zones"),
    DoctorPermission("ec2:DescribeInstanceTypeOfferings", ("*",), "which zones offer each Neuron instance type"),
    DoctorPermission(
        "ec2:DescribeSubnets",
        ("*",),
        "the zones of subnets the templates name by id, and the zones with a default subnet (Fn::GetAZs lists those)",
    ),
    DoctorPermission("ec2:DescribeCapacityReservations", ("*",), "reservations and Capacity Blocks the templates name"),
    DoctorPermission("ec2:DescribeRouteTables", ("*",), "a NAT or internet route from subnets named by id"),
    DoctorPermission("ec2:DescribeVpcEndpoints", ("*",), "ECR, S3 and CloudWatch Logs endpoints of their VPC"),
    DoctorPermission(
        "ssm:GetParameters",
        ("arn:{partition}:ssm:*::parameter/aws/service/*", "arn:{partition}:ssm:*:*:parameter/cdk-bootstrap/*"),
        "the ECS Neuron AMI parameters and the CDK bootstrap version",
    ),
    DoctorPermission("ecr:DescribeImages", ("arn:{partition}:ecr:*:*:repository/*",), "private images and tags"),
    DoctorPermission(
        "iam:GetRole",
        ("arn:{partition}:iam::*:role/aws-service-role/*",),
        "the service-linked roles of ECS, Auto Scaling, Spot and AWS Batch",
    ),
)
"""Every action ``neuron-ecs doctor`` calls, nothing else."""

POLICY_FILE = Path(__file__).with_name("doctor-policy.json")
"""The policy as a file, for ``aws iam create-policy --policy-document file://...``: :func:`policy_document` for the
``aws`` partition; a test keeps the two equal."""


def policy_document(partition: str = "aws") -> dict[str, Any]:
    """The IAM policy document that lets ``neuron-ecs doctor`` run every check, in ``partition``."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": permission.action.replace(":", "").replace("-", ""),
                "Effect": "Allow",
                "Action": permission.action,
                "Resource": [r.format(partition=partition) for r in permission.resources]
                if len(permission.resources) > 1
                else permission.resources[0].format(partition=partition),
            }
            for permission in DOCTOR_PERMISSIONS
        ],
    }


def policy_text(partition: str = "aws") -> str:
    """:func:`policy_document` as the file holds it."""
    return json.dumps(policy_document(partition), indent=2) + "\n"
