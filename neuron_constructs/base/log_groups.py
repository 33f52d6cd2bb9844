"""CloudWatch Logs groups the constructs create: retention and removal set, optionally encrypted with your KMS key.

Every construct that makes a log group takes ``log_retention`` (how long CloudWatch Logs keeps each event) and
``log_removal_policy`` (what ``cdk destroy`` does with the group). The defaults:

* VPC flow logs and training job logs are kept when the stack is deleted (:data:`RECORD_REMOVAL`): they are the
  record of what reached the network and of what a training run did, and they are read after the fact, often once
  the stack is gone;
* the logs of services, task definitions and the monitoring daemons go with their stack
  (:data:`OPERATIONAL_REMOVAL`): they describe something that no longer runs;
* every group keeps its events one month (:data:`DEFAULT_LOG_RETENTION`), so a group kept after its stack is
  deleted empties itself within a month and then costs nothing (CloudWatch Logs bills archived storage per GB-month;
  an empty group has none).

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
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks.inputs import check_removal_policy

__all__ = ["DEFAULT_LOG_RETENTION", "OPERATIONAL_REMOVAL", "RECORD_REMOVAL", "allow_cloudwatch_logs", "log_group"]

DEFAULT_LOG_RETENTION = logs.RetentionDays.ONE_MONTH
"""How long every log group the library makes keeps its events unless told otherwise."""
RECORD_REMOVAL = RemovalPolicy.RETAIN
"""VPC flow logs and training job logs: kept when the stack is deleted."""
OPERATIONAL_REMOVAL = RemovalPolicy.DESTROY
"""Service, task definition and monitoring logs: deleted with the stack."""

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
    scope: Construct,
    id: str,
    *,
    retention: logs.RetentionDays,
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None = None,
) -> logs.LogGroup:
    """A log group whose events are kept ``retention``, removed with its stack as ``removal_policy`` says, encrypted
    with ``encryption_key`` if given."""
    check_removal_policy(construct_path(scope), "log_removal_policy", removal_policy.value, "a log group")
    if encryption_key is not None:
        allow_cloudwatch_logs(encryption_key)
    return logs.LogGroup(scope, id, retention=retention, encryption_key=encryption_key, removal_policy=removal_policy)
