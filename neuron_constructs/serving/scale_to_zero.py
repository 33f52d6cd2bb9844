"""Idle models that cost nothing: :meth:`NeuronService.scale_to_zero
<neuron_constructs.serving.services.NeuronService.scale_to_zero>`, in to zero copies after an idle time and back to
one on the first request.

What AWS documents, and what follows from it:

* A service at zero tasks registers no target. The load balancer answers a request for it with 503 ("HTTP 503:
  Service unavailable - The target groups for the load balancer have no registered targets", Application Load
  Balancer troubleshooting guide) and counts it in ``HTTPCode_ELB_503_Count``, whose only dimensions are
  ``LoadBalancer`` and ``AvailabilityZone, LoadBalancer``; the target group's ``RequestCount`` "is only incremented
  for requests where the load balancer node was able to choose a target" and is "Reported if there are registered
  targets" ("CloudWatch metrics for your Application Load Balancer"). No per-model metric counts a request that
  found no copy, so target tracking cannot scale a model out from zero.
* The wake is therefore a step scaling policy (``ExactCapacity`` 1) on an alarm over metric math: the load
  balancer answered a 503 in a minute while the service ran no task (Container Insights' ``RunningTaskCount`` of
  the service, ``ECS/ContainerInsights``): ``IF(FILL(e503, 0) >= 1 AND FILL(running, 0) < 1, 1, 0)``. The 503
  count is the load balancer's, so a request that finds no copy wakes every model at zero behind that load
  balancer. SageMaker's scale to zero is built the same way: a step policy on an alarm over a metric of requests
  that found no instance ("Scale an endpoint to zero instances").
* The scale-in is a step scaling policy (``ExactCapacity`` 0) on an alarm that the service's target groups held a
  healthy target and counted no request, in every minute of the idle time: ``IF(healthy >= 1 AND requests < 1, 1,
  0)``, ``healthy`` their ``HealthyHostCount`` ("Reported if there are registered targets"). A copy still starting
  (its image, weights, compile and load, tens of minutes cold) is not healthy yet, so its start never counts as idle
  time, however short the idle time; a copy just woken serves for the whole idle time before it can be taken back.
* ``MinCapacity`` 0 is allowed for ECS services, and target tracking "can scale in to 0" on a metric with real
  zeros (Application Auto Scaling guide, target tracking): a model's waiting requests are 0 whenever its batch has
  room, so with ``min_count=0`` every target-tracking policy of the service scales out only, and the idle rule alone
  scales it in. Application Auto Scaling "turns off scale-in processes while Amazon ECS deployments are in progress"
  (ECS guide, service auto scaling): a rollout is never scaled to zero under it.

The first request to a model at zero gets the load balancer's 503, as does every request until a copy is healthy:
the alarm's minute (and CloudWatch's delay in publishing it), an instance (launched, or from a warm pool), then the
copy's start (``Startup`` on its container: image, weights, compile or cached graphs, load), a few minutes with a
warm pool and a precompiled model, tens of minutes without.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs.base.arguments import seconds_of
from neuron_constructs.knowledge import rules

__all__ = [
    "IDLE",
    "MAX_IDLE_MINUTES",
    "ScaleToZero",
    "idle_minutes",
    "is_production_listener",
    "running_tasks_metric",
    "scale_to_zero",
]

IDLE = Duration.minutes(30)
"""How long a model runs without a request before it is scaled to zero, by default."""
MAX_IDLE_MINUTES = 1440
"""An alarm's evaluation periods times its period may not exceed a day (CloudWatch, "Using Amazon CloudWatch
alarms"): 1,440 one-minute periods."""
CONTAINER_INSIGHTS = "ECS/ContainerInsights"


@dataclass(frozen=True)
class ScaleToZero:
    """What :func:`scale_to_zero` made: the idle alarm and its policy, the wake alarm and its policy (``None`` without
    ``wake_on_request``), and the idle time in minutes."""

    idle_alarm: cloudwatch.Alarm
    idle_action: appscaling.StepScalingAction
    wake_alarm: cloudwatch.Alarm | None
    wake_action: appscaling.StepScalingAction | None
    idle_minutes: int


def idle_minutes(path: str, idle: object) -> int:
    """``idle`` in whole minutes, 1 to :data:`MAX_IDLE_MINUTES` (NEURON182 otherwise, NEURON026 for a bare number)."""
    if not isinstance(idle, Duration):
        raise rules.WRONG_TYPE.error(path, f"idle={idle!r}", expected="idle=Duration.minutes(...)")
    seconds = seconds_of(idle)
    if seconds is None or seconds % 60 or not 60 <= seconds <= MAX_IDLE_MINUTES * 60:
        raise rules.SCALE_TO_ZERO.error(
            path,
            f"idle={idle.to_human_string()}",
            fix=f"pass idle=Duration.minutes(N), N a whole number from 1 to {MAX_IDLE_MINUTES}: the idle alarm "
            "watches one-minute periods, a day at most",
        )
    return int(seconds // 60)


def is_production_listener(listener: object) -> bool:
    """Whether ``listener`` serves production: its load balancer, made in this app, is internet-facing, or it
    listens on HTTPS (the users' names and certificate); an imported listener counts as production."""
    if not isinstance(listener, elbv2.ApplicationListener):
        return True
    declared = listener.load_balancer.node.default_child
    internet_facing = isinstance(declared, elbv2.CfnLoadBalancer) and declared.scheme == "internet-facing"
    listener_l1 = listener.node.default_child
    https = isinstance(listener_l1, elbv2.CfnListener) and listener_l1.protocol == "HTTPS"
    return internet_facing or https


def running_tasks_metric(cluster_name: str, service_name: str) -> cloudwatch.Metric:
    """The service's running tasks each minute (Container Insights, ``RunningTaskCount``)."""
    return cloudwatch.Metric(
        namespace=CONTAINER_INSIGHTS,
        metric_name="RunningTaskCount",
        dimensions_map={"ClusterName": cluster_name, "ServiceName": service_name},
        statistic="Maximum",
        period=Duration.minutes(1),
    )


def _per_target_group(
    prefix: str,
    metric_name: str,
    statistic: str,
    target_groups: Sequence[elbv2.ApplicationTargetGroup],
    load_balancer_full_name: str,
) -> dict[str, cloudwatch.IMetric]:
    """Each target group's ``metric_name`` a minute (by ``LoadBalancer, TargetGroup``; a rollout's green group is
    attached through ECS, not a listener rule, so its metric is named here rather than asked of it)."""
    return {
        f"{prefix}{index}": cloudwatch.Metric(
            namespace="AWS/ApplicationELB",
            metric_name=metric_name,
            dimensions_map={"LoadBalancer": load_balancer_full_name, "TargetGroup": group.target_group_full_name},
            statistic=statistic,
            period=Duration.minutes(1),
        )
        for index, group in enumerate(target_groups)
    }


def _sum(metrics: Mapping[str, cloudwatch.IMetric]) -> str:
    return " + ".join(f"FILL({name}, 0)" for name in metrics)


def _step(owner: Construct, id: str, target: appscaling.ScalableTarget, copies: int) -> appscaling.StepScalingAction:
    action = appscaling.StepScalingAction(
        owner,
        id,
        scaling_target=target,
        adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
        metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
        cooldown=Duration.minutes(1),
    )
    action.add_adjustment(adjustment=copies, lower_bound=0)
    return action


def scale_to_zero(
    owner: Construct,
    scaling: ecs.ScalableTaskCount,
    *,
    cluster_name: str,
    service_name: str,
    target_groups: Sequence[elbv2.ApplicationTargetGroup],
    load_balancer_full_name: str,
    idle: int,
    wake_on_request: bool,
) -> ScaleToZero:
    """The idle and wake alarms of a service whose scalable target is ``scaling`` (module docstring), in ``owner``."""
    target = scaling.node.find_child("Target")
    assert isinstance(target, appscaling.ScalableTarget)
    running = running_tasks_metric(cluster_name, service_name)
    requests = _per_target_group("requests", "RequestCount", "Sum", target_groups, load_balancer_full_name)
    healthy = _per_target_group("healthy", "HealthyHostCount", "Minimum", target_groups, load_balancer_full_name)
    idle_alarm = cloudwatch.Alarm(
        owner,
        "IdleAlarm",
        metric=cloudwatch.MathExpression(
            expression=f"IF(({_sum(healthy)}) >= 1 AND ({_sum(requests)}) < 1, 1, 0)",
            using_metrics={**healthy, **requests},
            period=Duration.minutes(1),
            label="a healthy copy received no request",
        ),
        threshold=1,
        evaluation_periods=idle,
        datapoints_to_alarm=idle,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=f"A healthy copy of the model received no request for {idle} minutes: it is scaled to zero "
        "copies",
    )
    idle_action = _step(owner, "ScaleToZero", target, 0)
    idle_alarm.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(idle_action))
    wake_alarm = wake_action = None
    if wake_on_request:
        refused = cloudwatch.Metric(
            namespace="AWS/ApplicationELB",
            metric_name="HTTPCode_ELB_503_Count",
            dimensions_map={"LoadBalancer": load_balancer_full_name},
            statistic="Sum",
            period=Duration.minutes(1),
        )
        wake_alarm = cloudwatch.Alarm(
            owner,
            "WakeAlarm",
            metric=cloudwatch.MathExpression(
                expression="IF(FILL(e503, 0) >= 1 AND FILL(running, 0) < 1, 1, 0)",
                using_metrics={"e503": refused, "running": running},
                period=Duration.minutes(1),
                label="a request found no copy",
            ),
            threshold=1,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="The load balancer answered 503 while the model ran no copy: one copy is started",
        )
        wake_action = _step(owner, "Wake", target, 1)
        wake_alarm.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(wake_action))
    return ScaleToZero(idle_alarm, idle_action, wake_alarm, wake_action, idle)
