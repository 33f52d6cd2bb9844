"""The deployment alarms a rollout rolls back on: the chips' own signal and the load balancer's.

ECS watches a service's deployment alarms from the first new task until the deployment completes, and with
``rollback`` returns the service to its last completed revision when one goes into ``ALARM`` (ECS guide, "How
CloudWatch alarms detect Amazon ECS deployment failures"; for blue/green, canary and linear deployments through the
bake time). Each alarm here is over one-minute periods, in alarm when ``datapoints`` of the last ``periods`` breach,
missing data not breaching (no traffic is no failure):

* ``ExecutionErrors`` of the model (:data:`~neuron_constructs.programs.metric_publisher.NAMESPACE`, dimensions
  ``ClusterName`` and ``Model``; the per-model sum NeuronMonitoring publishes from neuron-monitor), at or above
  ``execution_errors``: blue and green report under one model name, and a healthy blue reports none;
* ``HTTPCode_Target_5XX_Count`` of the rollout's target groups (production and alternate, summed: ECS swaps their
  roles at every deployment), at or above ``target_5xx``;
* the 99th percentile ``TargetResponseTime`` of either target group, at or above ``p99_response_time``.

Network Load Balancer target groups have neither load balancer metric; their rollouts watch the Neuron alarm only.

:func:`watch_with_the_service_s_own` puts these alarms next to the ones the service already watches: the
``deployment_alarms`` passed to it and those given to its ``enable_deployment_alarms``. ECS takes one list and one
behavior for all of a service's deployment alarms (``DeploymentAlarms``: ``alarmNames``, ``enable``, ``rollback``), and
aws-cdk-lib 2.275's ``BaseService.enableDeploymentAlarms`` keeps the first list it is given (its second call builds
the joined list and drops it), so the library does not call it: the service's ``DeploymentConfiguration.Alarms`` is
written at synth from what aws-cdk-lib holds then and the rollout's alarms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jsii
from aws_cdk import CfnResource, Duration, IAnyProducer, IResolvable, IResolveContext, Lazy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct, IValidation

from neuron_constructs.base import compliance
from neuron_constructs.knowledge import rules
from neuron_constructs.programs.metric_publisher import CLUSTER_DIMENSION, MODEL_DIMENSION, NAMESPACE
from neuron_constructs.serving.rollout import RolloutAlarms, latency_seconds

__all__ = [
    "ENGINE_LATENCIES",
    "engine_latency_alarms",
    "execution_errors_alarm",
    "fail_only_problem",
    "load_balancer_alarms",
    "watch_with_the_service_s_own",
]

PERIOD = Duration.minutes(1)


def _alarm(
    owner: Construct, id: str, metric: cloudwatch.IMetric, threshold: float, settings: RolloutAlarms, what: str
) -> cloudwatch.Alarm:
    alarm = cloudwatch.Alarm(
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
    compliance.acknowledge_rollout_alarm(alarm)
    return alarm


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


ENGINE_LATENCIES = {"time_to_first_token": "TimeToFirstToken", "inter_token_latency": "InterTokenLatency"}
"""The ``RolloutAlarms`` fields on the engine's own latencies, by the metric the engine-metrics sidecar writes."""


def engine_latency_alarms(
    owner: Construct, id: str, *, cluster_name: str, model_name: str, settings: RolloutAlarms
) -> list[cloudwatch.Alarm]:
    """An alarm per latency ``settings`` states (:data:`ENGINE_LATENCIES`): the worst copy's mean (``Maximum`` of the
    copies' means a minute) at or above it; blue and green write under one model name, and a healthy blue would
    hide a slow green in an average."""
    alarms = []
    for field_name, metric_name in ENGINE_LATENCIES.items():
        limit = getattr(settings, field_name)
        if limit is None:
            continue
        seconds = latency_seconds(limit) or 0.0  # RolloutAlarms refused a limit known only at deploy time
        metric = cloudwatch.Metric(
            namespace=NAMESPACE,
            metric_name=metric_name,
            dimensions_map={CLUSTER_DIMENSION: cluster_name, MODEL_DIMENSION: model_name},
            statistic="Maximum",
            period=PERIOD,
        )
        what = f"the model's {metric_name} (a copy's mean) at or above {seconds:g} s"
        alarms.append(_alarm(owner, f"{id}{metric_name}", metric, seconds, settings, what))
    return alarms


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


def _service_s_own(service: ecs.BaseService, context: IResolveContext | None = None) -> dict[str, Any]:
    """The deployment alarms aws-cdk-lib holds for ``service`` now (``alarmNames``, ``enable``, ``rollback``), as its
    ``AWS::ECS::Service`` would render them without the library's: the ``deployment_alarms`` prop or a call of
    ``enable_deployment_alarms``. Read from the resource's properties (``cfnProperties``); Python cannot read the
    ``deploymentAlarms`` aws-cdk-lib keeps. Resolved in ``context`` when given (the template's own resolution, so an
    alarm of another stack becomes its import and the reference is recorded), else in the service's stack."""
    resource = service.node.default_child
    assert isinstance(resource, CfnResource)
    configuration = resource._cfn_properties.get("deploymentConfiguration") or {}
    raw = configuration.get("alarms") if isinstance(configuration, dict) else None
    alarms = context.resolve(raw) if context is not None else Stack.of(resource).resolve(raw)
    return alarms if isinstance(alarms, dict) and alarms.get("enable") else {}


def _shown(name: object) -> str:
    """An alarm name for a sentence: itself, or what a name worked out at deploy time is."""
    return name if isinstance(name, str) else "an alarm named at deploy time"


def fail_only_problem(service: ecs.BaseService, given_as: str) -> str | None:
    """The sentence when the service's own deployment alarms only fail a deployment (``AlarmBehavior.FAIL_ON_ALARM``)
    while the rollout's roll it back: ECS takes one behavior for all of them. ``given_as``: how the user set them."""
    own = _service_s_own(service)
    if not own or own.get("rollback", True):
        return None
    names = ", ".join(_shown(n) for n in own.get("alarmNames", []))
    return (
        f"{given_as} ({names}) with AlarmBehavior.FAIL_ON_ALARM next to the rollout's alarms, which roll the "
        "deployment back"
    )


def watch_with_the_service_s_own(
    service: ecs.BaseService, library_names: Callable[[], list[str]], *, path: str
) -> None:
    """Make ECS watch ``library_names()`` (read at synth, so alarms added later count) next to the deployment alarms
    the service already has, rolling back on any of them (module docstring). A service whose own alarms only fail a
    deployment is refused at synth (NEURON135), naming ``path``."""
    resource = service.node.default_child
    assert isinstance(resource, CfnResource)
    resource.add_property_override(
        "DeploymentConfiguration.Alarms", Lazy.uncached_any(_BothLists(service, library_names))
    )
    service.node.add_validation(_OneBehavior(service, path))


@jsii.implements(IAnyProducer)
class _BothLists:
    """The service's own alarm names, as the template's resolution gives them (a name of another stack as its import,
    never as text), then the library's."""

    def __init__(self, service: ecs.BaseService, library_names: Callable[[], list[str]]) -> None:
        self._service = service
        self._library_names = library_names

    def produce(self, context: IResolveContext) -> dict[str, Any] | IResolvable:
        own = list(_service_s_own(self._service, context).get("alarmNames", []))
        return {"AlarmNames": [*own, *self._library_names()], "Enable": True, "Rollback": True}


@jsii.implements(IValidation)
class _OneBehavior:
    def __init__(self, service: ecs.BaseService, path: str) -> None:
        self._service = service
        self._path = path

    def validate(self) -> list[str]:
        problem = fail_only_problem(self._service, "the service's own deployment alarms")
        if problem is None:
            return []
        return [rules.DEPLOYMENT_ALARM_BEHAVIOR.message(self._path, problem)]
