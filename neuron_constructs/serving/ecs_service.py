"""The ECS service a :class:`~neuron_constructs.serving.services.NeuronService` wraps, with its networking and
placement constraints.

aws-cdk-lib's ``Ec2Service`` refuses a cluster whose only capacity is Managed
Instances (aws/aws-cdk#35742, #36098), so services on Managed Instances use
``FargateService`` with the Managed Instances capacity provider strategy, as
upstream documents; services on Auto Scaling capacity use ``Ec2Service``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import IStableNumberProducer, Lazy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs

from neuron_constructs.base.l1_overrides import (
    distinct_instances_on_managed_instances,
    host_network_on_managed_instances,
)
from neuron_constructs.base.tree import construct_path, kept
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.options import ServiceOptions
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.serving.rollout_checks import service_strategy

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["check_network_options", "make_ecs_service", "network_mode_of"]


def network_mode_of(task_definition: ecs.TaskDefinition) -> ecs.NetworkMode:
    """``task_definition.network_mode``, asked of the CDK's runtime once: it is given when the task definition is
    made (the service's checks, its creation and each attachment to a listener read it)."""
    return kept(task_definition, "_neuron_constructs_network_mode", lambda: task_definition.network_mode)


def check_network_options(
    service: NeuronService,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
) -> bool:
    """NEURON034: ``vpc_subnets`` and ``security_groups`` only with the awsvpc network mode; whether it is awsvpc."""
    task_definition = service.task_definition
    awsvpc = network_mode_of(task_definition.task_definition) == ecs.NetworkMode.AWS_VPC
    for option, value in (("vpc_subnets", vpc_subnets), ("security_groups", security_groups)):
        if value is not None and not awsvpc:
            raise rules.NETWORK_OPTION_IGNORED.error(
                construct_path(service),
                f"{option} is set, but {construct_path(task_definition)} uses the "
                f"{str(task_definition.task_definition.network_mode.value).lower()} network mode",
                option=option,
            )
    return awsvpc


def make_ecs_service(
    service: NeuronService,
    *,
    awsvpc: bool,
    service_name: str | None,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
    service_options: ServiceOptions,
) -> ecs.BaseService:
    """``service``'s ECS service (``Service``) on its capacity provider: an ``ecs.FargateService`` on Managed
    Instances, an ``ecs.Ec2Service`` on Auto Scaling capacity (module docstring); ready once the cluster's capacity
    provider associations are."""
    cluster, task_definition, capacity = service.cluster, service.task_definition, service.capacity
    strategy = [
        ecs.CapacityProviderStrategy(capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1)
    ]
    common: dict[str, Any] = {
        "circuit_breaker": ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
        **service_options,
        "health_check_grace_period": service.health_check_grace_period,
        "cluster": cluster.cluster,
        "task_definition": task_definition.task_definition,
        "desired_count": service.desired_count,
        "service_name": service_name,
        "capacity_provider_strategies": strategy,
        # the value at synth: a minimum the library chose follows the counts scaling asks for later
        "min_healthy_percent": Lazy.number(_Produce(lambda: service.min_healthy_percent)),
        "max_healthy_percent": service.max_healthy_percent,
        **service_strategy(service.rollout),
    }
    networking: dict[str, Any] = (
        dict(vpc_subnets=vpc_subnets or cluster.capacity_subnets, security_groups=security_groups) if awsvpc else {}
    )
    ecs_service: ecs.BaseService
    host = network_mode_of(task_definition.task_definition) == ecs.NetworkMode.HOST
    if isinstance(capacity, ManagedInstancesCapacity):
        if host:  # the tasks use the instances' network and security groups
            networking = {"security_groups": capacity.security_groups}
        ecs_service = ecs.FargateService(service, "Service", assign_public_ip=False, **common, **networking)
        if host:
            host_network_on_managed_instances(ecs_service)
    else:
        # aws-cdk-lib's add_placement_constraints replaces what was there: every constraint goes in at once.
        constraints: list[ecs.PlacementConstraint] = []
        if isinstance(task_definition, ManualNeuronTaskDefinition):
            if task_definition.is_managed_instances_compatible:
                # The task-level memberOf constraint is dropped for Managed Instances compatible task
                # definitions; keep the instance-type pin on the service instead.
                constraints.append(task_definition.instance_type_constraint)
            constraints.append(ecs.PlacementConstraint.distinct_instances())
        ecs_service = ecs.Ec2Service(
            service, "Service", placement_constraints=constraints or None, **common, **networking
        )
    if isinstance(ecs_service, ecs.FargateService) and isinstance(task_definition, ManualNeuronTaskDefinition):
        distinct_instances_on_managed_instances(ecs_service)
    cluster.wait_for_capacity_associations(ecs_service)
    return ecs_service


@jsii.implements(IStableNumberProducer)
class _Produce:
    """A number known at synth: what ``value`` returns then."""

    def __init__(self, value: Callable[[], int]) -> None:
        self._value = value

    def produce(self) -> int:
        return self._value()
