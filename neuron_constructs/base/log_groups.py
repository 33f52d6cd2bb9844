"""CloudWatch Logs groups the constructs create: retention set, optionally encrypted with your KMS key.

CloudWatch Logs encrypts every log group; with ``encryption_key`` it uses a customer managed
key instead of its own. The key policy must let the regional CloudWatch Logs service principal
use the key for log groups of this account and region (CloudWatch Logs guide, "Encrypt log data
in CloudWatch Logs using AWS KMS"); for a key created in the app that statement is added here,
once per key. An imported key's policy is not changed: it must already allow it.
"""

from __future__ import annotations

from weakref import WeakSet

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from neuron_constructs.base.arguments import aws

__all__ = ["allow_cloudwatch_logs", "log_group"]

_ALLOWED: WeakSet[kms.IKey] = WeakSet()


def allow_cloudwatch_logs(key: kms.IKey) -> None:
    """Let CloudWatch Logs use ``key`` for this account's log groups in this region (once per key)."""
    if key in _ALLOWED:
        return
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchLogsOfThisAccount",
            principals=[iam.ServicePrincipal(f"logs.{aws().region}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            resources=["*"],
            conditions={
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": (
                        f"arn:{aws().partition}:logs:{aws().region}:{aws().account_id}:log-group:*"
                    )
                }
            },
        )
    )
    _ALLOWED.add(key)


def log_group(
    scope: Construct, id: str, *, retention: logs.RetentionDays, encryption_key: kms.IKey | None = None
) -> logs.LogGroup:
    """A log group kept ``retention``, deleted with the stack, encrypted with ``encryption_key`` if given."""
    if encryption_key is not None:
        allow_cloudwatch_logs(encryption_key)
    return logs.LogGroup(
        scope, id, retention=retention, encryption_key=encryption_key, removal_policy=RemovalPolicy.DESTROY
    )
