"""What :meth:`NeuronService.scale_to_zero <neuron_constructs.serving.services.NeuronService.scale_to_zero>` checks
and adds to a service: the rules of NEURON182 and NEURON183 at the call, and at synth the scalable target that may
reach zero copies with nothing to wake it (:mod:`~neuron_constructs.serving.scale_to_zero` builds the alarms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jsii
from aws_cdk import Duration, Validations
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import IValidation

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.errors import NeuronConfigurationError
from neuron_constructs.serving.listeners import load_balancer_full_name
from neuron_constructs.serving.scale_to_zero import ScaleToZero, idle_minutes, is_production_listener, scale_to_zero

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["ZeroNeedsAWake", "add_scale_to_zero"]


def add_scale_to_zero(
    service: NeuronService, idle: Duration, wake_on_request: bool, on_production_listener: bool
) -> ScaleToZero:
    """The checks and alarms of ``service.scale_to_zero(...)`` (its docstring)."""
    path = construct_path(service)

    def refuse(problem: str, fix: str) -> NeuronConfigurationError:
        return rules.SCALE_TO_ZERO.error(path, problem, fix=fix)

    minutes = idle_minutes(path, idle)
    scaling = service.scalable_target
    if service.scaled_to_zero is not None:
        raise refuse("scale_to_zero was already called", "call it once per service")
    if scaling is None or not service.scales_out_only:
        raise refuse(
            "scale_to_zero on a service whose scalable target cannot reach zero copies",
            "first call a scaling method with min_count=0 (scale_on_waiting_requests(per_copy=..., min_count=0, "
            "max_count=...))",
        )
    if service.rollout.smoke_test is not None:
        raise refuse(
            f"scale_to_zero with a {service.rollout.strategy} rollout whose smoke test needs a running copy",
            "drop smoke_test= from the rollout, or keep min_count at 1 or more",
        )
    groups = [
        g
        for g in [*service.target_groups, *service.alternate_target_groups]
        if isinstance(g, elbv2.ApplicationTargetGroup)
    ]
    if not groups:
        raise refuse(
            "scale_to_zero on a service with no Application Load Balancer target group: no request measures its "
            "idle time or wakes it",
            "call attach_to_listener(...) on an Application Load Balancer listener before scale_to_zero",
        )
    if getattr(service.cluster, "container_insights", None) is False:
        raise refuse(
            f"scale_to_zero on {construct_path(service.cluster)}, whose Container Insights is off: no metric says "
            "whether the service runs a copy",
            "leave NeuronCluster(container_insights=True), the default",
        )
    names = {load_balancer_full_name(listener) for listener in service.listeners}
    full_name = next(iter(names)) if len(names) == 1 else None
    if full_name is None:
        raise refuse(
            "scale_to_zero behind a load balancer this app did not make (or behind several): its request and 503 "
            "counts are not known here",
            "attach the service to one Application Load Balancer of this app (NeuronLoadBalancer)",
        )
    production = [construct_path(listener) for listener in service.listeners if is_production_listener(listener)]
    if production and not on_production_listener:
        raise refuse(
            f"scale_to_zero behind {', '.join(production)}, a production listener (internet-facing, HTTPS, or "
            "imported): its users would get a 503 until a copy starts",
            "pass on_production_listener=True where the model's users may wait minutes for a cold start, or serve "
            "it from an internal HTTP listener for development",
        )
    if not wake_on_request:
        Validations.of(service).add_warning(
            rules.WAKE_BY_HAND.warning_id,
            rules.WAKE_BY_HAND.message(path, "scale_to_zero(wake_on_request=False)"),
        )
    made = scale_to_zero(
        service,
        scaling,
        cluster_name=str(service.cluster.cluster.cluster_name),
        service_name=str(service.service.service_name),
        target_groups=groups,
        load_balancer_full_name=full_name,
        idle=minutes,
        wake_on_request=wake_on_request,
    )
    service.scaled_to_zero = made
    return made


@jsii.implements(IValidation)
class ZeroNeedsAWake:
    """NEURON182 at synth: a scalable target that may reach zero copies, on a service :meth:`scale_to_zero` was never
    called on: its target-tracking policies scale out only, so nothing would take it to zero or wake it there."""

    def __init__(self, service: NeuronService, method: str) -> None:
        self.service = service
        self.method = method

    def validate(self) -> list[str]:
        if self.service.scaled_to_zero is not None:
            return []
        return [
            rules.SCALE_TO_ZERO.message(
                construct_path(self.service),
                f"{self.method}(min_count=0) and no scale_to_zero: no policy takes the model to zero or wakes it there",
                fix="call service.scale_to_zero(idle=Duration.minutes(...)) after attach_to_listener, or keep "
                "min_count at 1 or more",
            )
        ]
