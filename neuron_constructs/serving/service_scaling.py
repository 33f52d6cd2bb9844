"""How a :class:`~neuron_constructs.serving.services.NeuronService` scales: the counts its scalable target may take,
and the policy on its model's own NeuronCore utilization.

Every count scaling allows must fit the capacity (one task of a manually mapped task definition per instance,
NEURON017; room for a native rollout's blue and green, NEURON074) and leave a deployment room (NEURON040, NEURON032).
The utilization policy tracks the ``ClusterName, Model`` series the monitoring publishes (warning NEURON114 when no
NeuronMonitoring of the app covers the capacity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jsii
from aws_cdk import AspectPriority, Aspects, Duration, IAspect, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from constructs import IConstruct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.programs.metric_publisher import CLUSTER_DIMENSION, MODEL_DIMENSION, NAMESPACE
from neuron_constructs.serving.placement import check_one_per_instance
from neuron_constructs.serving.rollout import latency_seconds
from neuron_constructs.serving.service_rollout import check_rollout_room

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["check_scaling_counts", "model_utilization_metric"]


def check_scaling_counts(service: NeuronService, minimum: int, max_count: int, *, minimum_passed: bool) -> None:
    """NEURON017, NEURON074, NEURON040 and NEURON032 for a scalable target of ``service`` between ``minimum`` and
    ``max_count`` tasks: a minimum healthy percent the library chose (``minimum_passed`` false) is lowered to fit every
    count, one passed to the service is refused where it leaves no room."""
    path = construct_path(service)
    capacity = service.capacity
    check_one_per_instance(service, "max_count", max_count)
    check_rollout_room(service, "max_count", max_count)
    counts = range(max(1, minimum), max_count + 1)
    if not minimum_passed and counts:
        fitting = min(service.largest_minimum_healthy_percent(n, service.max_healthy_percent) for n in counts)
        if fitting < service.min_healthy_percent:
            service.lower_min_healthy_percent(fitting)
    passed_by = "NeuronService" if minimum_passed else None
    inputs.check_deployment_percents(
        path, counts, service.min_healthy_percent, service.max_healthy_percent, minimum_set_by=passed_by
    )
    if (
        isinstance(service.task_definition, ManualNeuronTaskDefinition)
        and isinstance(capacity, AutoScalingCapacity)
        and max_count >= capacity.max_capacity
        and service.min_healthy_percent > inputs.room_to_stop(max_count)
    ):
        raise rules.DEPLOYMENT_WITHOUT_ROOM.error(
            path,
            f"max_count={max_count} with distinctInstance fills the {capacity.max_capacity} instances "
            f"{construct_path(capacity)} can launch, and min_healthy_percent={service.min_healthy_percent}"
            f"{f' (passed to {passed_by})' if passed_by else ''} keeps every task running",
            percent=inputs.room_to_stop(max_count),
            capacity=construct_path(capacity),
            desired=max_count,
        )


def track_neuron_utilization(
    service: NeuronService,
    scaling: ecs.ScalableTaskCount,
    target_percent: int,
    scale_out_cooldown: Duration,
    scale_in_cooldown: Duration,
) -> None:
    """Add the target-tracking policy on ``service``'s model's NeuronCore utilization to ``scaling`` (NEURON114 at
    synth when no monitoring of the app covers the capacity)."""
    if not service.capacity.monitored:
        Aspects.of(service).add(_WarnIfUnmonitored(service), priority=AspectPriority.READONLY)
    scaling.scale_to_track_custom_metric(
        "NeuronCoreUtilization",
        metric=model_utilization_metric(service.cluster.cluster.cluster_name, service.model_name),
        target_value=target_percent,
        scale_out_cooldown=scale_out_cooldown,
        scale_in_cooldown=scale_in_cooldown,
        disable_scale_in=service.scales_out_only or None,
    )


WAITING_REQUESTS = "WaitingRequests"
"""Requests waiting for a slot per copy (vLLM's ``vllm:num_requests_waiting``)."""
TIME_TO_FIRST_TOKEN = "TimeToFirstToken"
"""A copy's mean time to the first token between two scrapes (vLLM's ``vllm:time_to_first_token_seconds``)."""
_UNITS = {WAITING_REQUESTS: cloudwatch.Unit.COUNT, TIME_TO_FIRST_TOKEN: cloudwatch.Unit.SECONDS}


def track_engine_metric(
    service: NeuronService,
    scaling: ecs.ScalableTaskCount,
    metric: str,
    target: float,
    scale_out_cooldown: Duration,
    scale_in_cooldown: Duration,
) -> None:
    """Add the target-tracking policy on ``service``'s model's engine ``metric`` (:data:`WAITING_REQUESTS`,
    :data:`TIME_TO_FIRST_TOKEN`) to ``scaling``: the 1-minute average of the series every copy's engine-metrics sidecar
    writes under the model's name (:mod:`neuron_constructs.programs.engine_metrics`), so an average over the copies."""
    scaling.scale_to_track_custom_metric(
        metric,
        metric=_model_average(service.cluster.cluster.cluster_name, service.model_name, metric, _UNITS[metric]),
        target_value=target,
        scale_out_cooldown=scale_out_cooldown,
        scale_in_cooldown=scale_in_cooldown,
        disable_scale_in=service.scales_out_only or None,
    )


def time_to_first_token_target(path: str, target: object) -> float:
    """``target`` of ``scale_on_time_to_first_token`` in seconds: a literal ``Duration`` above 0 s, at most an hour."""
    if not isinstance(target, Duration):
        raise rules.WRONG_TYPE.error(path, f"target={target!r}", expected="target=Duration.millis(...) or seconds")
    seconds = latency_seconds(target)
    if seconds is None:
        raise rules.TOKEN_NOT_LITERAL.error(path, "target is a CDK token, read only at deploy time", name="target")
    if not 0 < seconds <= 3600:
        raise rules.OUT_OF_RANGE.error(
            path, f"target={target.to_human_string()}", name="target", minimum="above 0 s", maximum="an hour"
        )
    return seconds


def model_utilization_metric(cluster_name: str, model_name: str) -> cloudwatch.Metric:
    """A model's NeuronCore utilization: the 1-minute average of the ``ClusterName, Model`` series the monitoring
    publishes (:mod:`neuron_constructs.programs.metric_publisher`)."""
    return _model_average(cluster_name, model_name, "NeuronCoreUtilization", cloudwatch.Unit.PERCENT)


def _model_average(cluster_name: str, model_name: str, metric_name: str, unit: cloudwatch.Unit) -> cloudwatch.Metric:
    """The 1-minute average of a model's ``ClusterName, Model`` series ``metric_name`` in the library's namespace."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric_name,
        dimensions_map={CLUSTER_DIMENSION: cluster_name, MODEL_DIMENSION: model_name},
        statistic="Average",
        period=Duration.minutes(1),
        unit=unit,
    )


@jsii.implements(IAspect)
class _WarnIfUnmonitored:
    """NEURON114 at synth, once every construct exists: the service scales on per-model utilization, and no
    NeuronMonitoring of this app covers its capacity."""

    def __init__(self, service: NeuronService) -> None:
        self.service = service
        self.warned = False

    def visit(self, node: IConstruct) -> None:
        if self.warned or node is not self.service or getattr(self.service.capacity, "monitored", False):
            return
        self.warned = True
        Validations.of(self.service).add_warning(
            rules.UNMONITORED_SCALING.warning_id,
            rules.UNMONITORED_SCALING.message(
                construct_path(self.service),
                f"scale_on_neuron_utilization on {construct_path(self.service.capacity)}, which no NeuronMonitoring "
                "of this app covers",
            ),
        )
