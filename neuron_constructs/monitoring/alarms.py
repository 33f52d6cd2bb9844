"""The monitoring's alarms and the SNS topic they notify: uncorrected ECC events or hardware execution errors, a
kernel ``NEURON_HW_ERR=`` event the daemons logged, and execution errors (:class:`NeuronMonitoring`'s
``hardware_alarm``, ``kernel_alarm`` and ``execution_errors_alarm``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs.programs.metric_publisher import NAMESPACE

if TYPE_CHECKING:
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring

__all__ = ["KERNEL_EVENTS_NAMESPACE", "alarm_topic", "neuron_alarms"]

KERNEL_EVENTS_NAMESPACE = f"{NAMESPACE}/KernelHardwareErrors"
"""Where the daemons' log lines with ``NEURON_HW_ERR=`` are counted, one metric per cluster name (a log metric filter
on plain text takes no dimensions)."""


def neuron_alarms(
    monitoring: NeuronMonitoring, execution_errors_threshold: int
) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm, cloudwatch.Alarm]:
    """The hardware, kernel and execution-errors alarms of ``monitoring``, each notifying its ``alarm_topic``."""
    hardware = cloudwatch.MathExpression(
        expression="MAX([ecc, execution])",
        using_metrics={
            "ecc": monitoring.metric("HardwareEccUncorrected", "Maximum", Duration.minutes(1)),
            "execution": monitoring.metric("ExecutionHardwareErrors", "Maximum", Duration.minutes(1)),
        },
        label="Uncorrected ECC events or hardware execution errors",
        period=Duration.minutes(1),
    )
    hardware_alarm = _alarm(
        monitoring,
        "HardwareErrors",
        hardware,
        1,
        "Uncorrected ECC events or hardware execution errors on a Neuron device of the cluster",
    )
    kernel = logs.MetricFilter(
        monitoring,
        "KernelHardwareErrorEvents",
        log_group=monitoring.log_group,
        # node-problem-detector logs its rules, patterns included, when it starts: not an event.
        filter_pattern=logs.FilterPattern.literal('"NEURON_HW_ERR=" -"Finish parsing"'),
        metric_namespace=KERNEL_EVENTS_NAMESPACE,
        metric_name=monitoring.cluster_name,
        metric_value="1",
    )
    kernel_alarm = _alarm(
        monitoring,
        "KernelHardwareErrors",
        kernel.metric(statistic="Sum", period=Duration.minutes(1)),
        1,
        "The kernel log of a Neuron instance reported NEURON_HW_ERR=, as the problem detector or the health "
        "daemon logged it (with recovery on, an unrecoverable one replaces the instance)",
    )
    execution_errors_alarm = _alarm(
        monitoring,
        "ExecutionErrors",
        monitoring.metric("ExecutionErrors", "Sum", Duration.minutes(5)),
        execution_errors_threshold,
        f"{execution_errors_threshold} or more Neuron execution errors in 5 minutes on the cluster",
    )
    return hardware_alarm, kernel_alarm, execution_errors_alarm


def alarm_topic(scope: Construct) -> sns.Topic:
    """A new SNS topic for the alarms, encrypted with a new KMS key that CloudWatch alarms of this account may use."""
    key = kms.Key(scope, "AlarmTopicKey", enable_key_rotation=True, description="Neuron alarm notifications")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmsOfThisAccount",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        )
    )
    return sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True, display_name="Neuron alarms")


def _alarm(
    monitoring: NeuronMonitoring, id: str, metric: cloudwatch.IMetric, threshold: int, description: str
) -> cloudwatch.Alarm:
    alarm = cloudwatch.Alarm(
        monitoring,
        f"{id}Alarm",
        metric=metric,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    alarm.add_alarm_action(cloudwatch_actions.SnsAction(monitoring.alarm_topic))
    return alarm
