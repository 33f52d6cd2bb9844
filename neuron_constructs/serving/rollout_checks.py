"""What a blue/green, canary or linear rollout of a :class:`~neuron_constructs.serving.services.NeuronService` adds
to the service, and what it checks once the tree is complete.

* :func:`service_strategy`: the ECS service properties of a rollout (``deploymentConfiguration.strategy``, the bake
  time, the canary or linear configuration);
* :class:`RolloutTrafficPath` (a validation, NEURON073): a canary or linear rollout needs the traffic path ECS shifts,
  and a smoke test a load balancer to send its request through;
* :class:`RolloutWarnings` and :func:`warn_without_neuron_alarm` (aspects): NEURON121 for a blue/green rollout that
  shifts nothing, NEURON122 for rollout alarms without the model's ExecutionErrors alarm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import AspectPriority, Aspects, Duration, IAspect, Validations
from aws_cdk import aws_ecs as ecs
from constructs import Construct, IConstruct, IValidation

from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.capacity import AutoScalingCapacity, ManagedInstancesCapacity
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.rollouts import rollout_problems, rollout_warnings
from neuron_constructs.serving.rollout import Rollout

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["RolloutTrafficPath", "RolloutWarnings", "service_strategy", "warn_without_neuron_alarm"]


_STRATEGIES = {
    "blue_green": ecs.DeploymentStrategy.BLUE_GREEN,
    "canary": ecs.DeploymentStrategy.CANARY,
    "linear": ecs.DeploymentStrategy.LINEAR,
}


def service_strategy(rollout: Rollout) -> dict[str, Any]:
    """The ECS service properties of ``rollout``: none for the rolling update (the service as before)."""
    plan = rollout.plan
    if not plan.native:
        return {}
    properties: dict[str, Any] = {
        "deployment_strategy": _STRATEGIES[plan.strategy],
        "bake_time": Duration.minutes(plan.bake_time_minutes or 0),
    }
    if plan.strategy in ("canary", "linear"):
        shift = ecs.TrafficShiftConfig(
            step_percent=plan.canary_percent if plan.strategy == "canary" else plan.linear_step_percent,
            step_bake_time=Duration.minutes(plan.interval_minutes or 0),
        )
        properties[f"{plan.strategy}_configuration"] = shift
    return properties


@jsii.implements(IValidation)
class RolloutTrafficPath:
    """NEURON073 at synth: a canary or linear rollout needs the traffic path ECS shifts (the alternate target group
    :meth:`~.ListenerTarget.attach_to_listener` makes, or Service Connect); NEURON121 for a blue/green one without.
    NEURON073 too for a smoke test with no load balancer to send its request through."""

    def __init__(self, service: NeuronService, service_connect: bool) -> None:
        self.service = service
        self.service_connect = service_connect
        self.warned = False

    def validate(self) -> list[str]:
        service = self.service
        found: list[str] = []
        if service.rollout.smoke_test is not None and not service.alternate_target_groups:
            found.append(
                rules.ROLLOUT_TRAFFIC.message(
                    construct_path(service),
                    f"a smoke test ({service.rollout.smoke_test.method} {service.rollout.smoke_test.path}) on a "
                    "service attached to no load balancer: its request goes through a load balancer's test listener "
                    "rule, so no function would send it and green would take production traffic untested",
                    fix="attach the service with attach_to_listener(listener, conditions=[...], priority=...), or "
                    "drop smoke_test=",
                )
            )
        if service.alternate_target_groups or self.service_connect:
            return found
        problems = rollout_problems(service.rollout.plan, has_load_balancer=False, has_service_connect=False)
        return found + [
            rules.ROLLOUT_TRAFFIC.message(
                construct_path(service),
                problem,
                fix="attach it with attach_to_listener(listener, conditions=[...], priority=...), or give it Service "
                "Connect, or roll it out blue/green or rolling",
            )
            for problem in problems
            if "neither a load balancer nor Service Connect" in problem
        ]


@jsii.implements(IAspect)
class RolloutWarnings:
    """At synth, once every construct exists: NEURON121 for a blue/green rollout with no traffic path to shift, and
    NEURON122 for rollout alarms without the model's ExecutionErrors alarm."""

    def __init__(self, service: NeuronService, service_connect: bool, *, without_neuron_alarm: bool) -> None:
        self.service = service
        self.service_connect = service_connect
        self.without_neuron_alarm = without_neuron_alarm
        self.visited = False

    def visit(self, node: IConstruct) -> None:
        if self.visited:
            return
        self.visited = True
        service, path = self.service, construct_path(self.service)
        has_load_balancer = bool(service.alternate_target_groups)
        for warning in rollout_warnings(
            service.rollout.plan, has_load_balancer=has_load_balancer, has_service_connect=self.service_connect
        ):
            Validations.of(service).add_warning(
                rules.BLUE_GREEN_WITHOUT_TRAFFIC.warning_id, rules.BLUE_GREEN_WITHOUT_TRAFFIC.message(path, warning)
            )
        if self.without_neuron_alarm:
            _warn_without_neuron_alarm(service, service.capacity)


def warn_without_neuron_alarm(owner: Construct, capacity: ManagedInstancesCapacity | AutoScalingCapacity) -> None:
    """NEURON122 at synth for ``owner``'s rollout alarms, which have no ExecutionErrors alarm: no NeuronMonitoring
    covered ``capacity`` when ``owner`` was made."""
    Aspects.of(owner).add(_NeuronAlarmWarning(owner, capacity), priority=AspectPriority.READONLY)


def _warn_without_neuron_alarm(owner: Construct, capacity: ManagedInstancesCapacity | AutoScalingCapacity) -> None:
    path = construct_path(capacity)
    if capacity.monitored:
        problem = (
            f"the NeuronMonitoring that covers {path} was made after {construct_path(owner)}, so its rollout has no "
            "ExecutionErrors alarm; make the monitoring first"
        )
    else:
        problem = f"the rollout has no ExecutionErrors alarm: no NeuronMonitoring of this app covers {path}"
    Validations.of(owner).add_warning(
        rules.ROLLOUT_WITHOUT_NEURON_ALARM.warning_id,
        rules.ROLLOUT_WITHOUT_NEURON_ALARM.message(construct_path(owner), problem),
    )


@jsii.implements(IAspect)
class _NeuronAlarmWarning:
    """NEURON122 once, at synth."""

    def __init__(self, owner: Construct, capacity: ManagedInstancesCapacity | AutoScalingCapacity) -> None:
        self.owner, self.capacity, self.visited = owner, capacity, False

    def visit(self, node: IConstruct) -> None:
        if not self.visited and node is self.owner:
            self.visited = True
            _warn_without_neuron_alarm(self.owner, self.capacity)
