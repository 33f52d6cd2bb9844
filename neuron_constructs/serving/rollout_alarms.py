"""The deployment alarms a rollout rolls back on: the chips' own signal and the load balancer's.

ECS watches a service's deployment alarms from the first new task until the deployment completes, and with
``rollback`` returns the service to its last completed revision when one goes into ``ALARM`` (ECS guide, "How
CloudWatch alarms detect Amazon ECS deployment failures"; for blue/green, canary and linear deployments through the
bake time). Each alarm here is over one-minute periods, in alarm when ``datapoints`` of the last ``periods`` breach,
missing data not breaching (no traffic is no failure):

* ``ExecutionErrors`` of the model (:data:`~neuron_constructs.knowledge.metrics.NAMESPACE`, dimensions ``ClusterName``
  and ``Model``; the per-model sum NeuronMonitoring publishes from neuron-monitor), at or above
  ``execution_errors``: blue and green report under one model name, and a healthy blue reports none;
* ``HTTPCode_Target_5XX_Count`` of the rollout's target groups (production and alternate, summed: ECS swaps their
  roles at every deployment), at or above ``target_5xx``;
* the 99th percentile ``TargetResponseTime`` of either target group, at or above ``p99_response_time``.

Network Load Balancer target groups have neither load balancer metric; their rollouts watch the Neuron alarm only.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs.knowledge.metrics import CLUSTER_DIMENSION, MODEL_DIMENSION, NAMESPACE
from neuron_constructs.serving.rollout import RolloutAlarms

__all__ = ["execution_errors_alarm", "load_balancer_alarms"]

PERIOD = Duration.minutes(1)


def _alarm(
    owner: Construct, id: str, metric: cloudwatch.IMetric, threshold: float, settings: RolloutAlarms, what: str
) -> cloudwatch.Alarm:
    return cloudwatch.Alarm(
        owner,
        id,
        metric=metric,
        threshold=threshold,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=settings.periods,
        datapoints_to_alarm=settings.datapoints,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=f"Rolls a deployment back: {what}",
    )


def execution_errors_alarm(
    owner: Construct, id: str, *, cluster_name: str, model_name: str, settings: RolloutAlarms
) -> cloudwatch.Alarm:
    """The model's Neuron ``ExecutionErrors`` at or above ``settings.execution_errors`` a minute."""
    metric = cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name="ExecutionErrors",
        dimensions_map={CLUSTER_DIMENSION: cluster_name, MODEL_DIMENSION: model_name},
        statistic="Sum",
        period=PERIOD,
    )
    return _alarm(
        owner,
        id,
        metric,
        settings.execution_errors,
        settings,
        f"{settings.execution_errors} or more Neuron execution errors of the model a minute",
    )


def _target_metric(
    group: elbv2.ApplicationTargetGroup, load_balancer_full_name: str, name: str, statistic: str
) -> cloudwatch.Metric:
    """``name`` of ``group`` behind the load balancer ``load_balancer_full_name`` (Application Load Balancer metrics
    have no target-group-only dimension set; the alternate group is on no rule until ECS shifts to it)."""
    return cloudwatch.Metric(
        namespace="AWS/ApplicationELB",
        metric_name=name,
        dimensions_map={"LoadBalancer": load_balancer_full_name, "TargetGroup": group.target_group_full_name},
        statistic=statistic,
        period=PERIOD,
    )


def load_balancer_alarms(
    owner: Construct,
    id: str,
    *,
    target_groups: Sequence[elbv2.ITargetGroup],
    load_balancer_full_name: str,
    settings: RolloutAlarms,
) -> list[cloudwatch.Alarm]:
    """The 5xx count and p99 response time of the Application Load Balancer ``target_groups`` behind the load
    balancer ``load_balancer_full_name`` (none for Network Load Balancer groups)."""
    groups = [g for g in target_groups if isinstance(g, elbv2.ApplicationTargetGroup)]
    if not groups:
        return []
    errors = {
        f"e{i}": _target_metric(g, load_balancer_full_name, "HTTPCode_Target_5XX_Count", "Sum")
        for i, g in enumerate(groups)
    }
    latency = {
        f"p{i}": _target_metric(g, load_balancer_full_name, "TargetResponseTime", "p99") for i, g in enumerate(groups)
    }
    seconds = settings.p99_response_time.to_seconds()
    return [
        _alarm(
            owner,
            f"{id}Target5xx",
            cloudwatch.MathExpression(
                expression=" + ".join(f"FILL({name}, 0)" for name in errors),
                using_metrics=dict(errors),
                period=PERIOD,
                label="5xx answers of the model's tasks",
            ),
            settings.target_5xx,
            settings,
            f"{settings.target_5xx} or more 5xx answers of the model's tasks a minute",
        ),
        _alarm(
            owner,
            f"{id}P99ResponseTime",
            cloudwatch.MathExpression(
                expression=f"MAX([{', '.join(latency)}])" if len(latency) > 1 else next(iter(latency)),
                using_metrics=dict(latency),
                period=PERIOD,
                label="p99 response time of the model's tasks",
            ),
            seconds,
            settings,
            f"p99 response time of the model's tasks at or above {seconds:g} s",
        ),
    ]
