"""How a :class:`~neuron_constructs.serving.services.NeuronService` deploys: its minimum healthy percent and its
health check grace period.

When its tasks fill every instance the Auto Scaling capacity can launch, a rolling deployment has no spare instance
for a new task, so ECS must stop an old one first (NEURON032); with no room under the maximum percent either, a
rolling deployment never starts (NEURON040).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration

from neuron_constructs.base.arguments import seconds_of
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.options import ServiceOptions
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.serving.listeners import MAXIMUM_GRACE_PERIOD_S, MODEL_START_GRACE_PERIOD

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["largest_minimum_healthy_percent", "minimum_healthy_percent"]


def minimum_healthy_percent(service: NeuronService, requested: int | None, maximum: int) -> int:
    """NEURON032/040 and aws-cdk-lib's min < max: the minimum healthy percent this service deploys with."""
    capacity, path, desired = service.capacity, construct_path(service), service.desired_count
    instances = capacity.max_capacity if isinstance(capacity, AutoScalingCapacity) else None
    largest = largest_minimum_healthy_percent(service, desired, maximum)
    if requested is None:
        return min(largest, maximum - 1)
    inputs.check_bounds(path, ("min_healthy_percent", requested), ("max_healthy_percent", maximum), strictly=True)
    inputs.check_deployment_percents(path, [desired], requested, maximum)
    if requested > largest:
        raise rules.DEPLOYMENT_WITHOUT_ROOM.error(
            path,
            f"desired_count={desired} with distinctInstance fills the {instances} instances "
            f"{construct_path(capacity)} can launch, and min_healthy_percent={requested} (passed to NeuronService) "
            "keeps every task running",
            percent=largest,
            capacity=construct_path(capacity),
            desired=desired,
        )
    return requested


def largest_minimum_healthy_percent(service: NeuronService, tasks: int, maximum: int) -> int:
    """The largest minimum healthy percent with which a deployment of ``tasks`` tasks of ``service`` can stop one:
    below 100 when they fill every instance the capacity launches (NEURON032) or ``maximum`` starts none beyond them
    (NEURON040)."""
    capacity = service.capacity
    instances = capacity.max_capacity if isinstance(capacity, AutoScalingCapacity) else None
    full = isinstance(service.task_definition, ManualNeuronTaskDefinition) and instances and instances <= tasks
    largest = inputs.room_to_stop(tasks) if full else 100
    if tasks and inputs.deployment_stalls(tasks, 100, maximum):
        largest = min(largest, inputs.room_to_stop(tasks))
    return largest


def health_check_grace_period(service: NeuronService, service_options: ServiceOptions) -> Duration:
    """How long ECS ignores failing health checks of a new task: ``health_check_grace_period`` of
    ``service_options``, default :data:`~neuron_constructs.serving.listeners.MODEL_START_GRACE_PERIOD`; at most
    2,147,483,647 s (NEURON027 beyond)."""
    grace_period: Duration = service_options.get("health_check_grace_period", MODEL_START_GRACE_PERIOD)
    grace = seconds_of(grace_period)
    if grace is not None and grace > MAXIMUM_GRACE_PERIOD_S:
        raise rules.OUT_OF_RANGE.error(
            construct_path(service),
            f"health_check_grace_period={grace_period.to_human_string()}",
            name="health_check_grace_period",
            minimum="0 s",
            maximum="2,147,483,647 s (about 68 years)",
        )
    return grace_period
