"""``NeuronService``: an ECS service placed on the capacity its task definition fits.

* managed allocation -> the cluster's Managed Instances capacity provider;
* manual mapping -> the Auto Scaling capacity of the task's instance type (or
  a Managed Instances capacity that admits that type, when the task definition
  is Managed Instances compatible).

aws-cdk-lib's ``Ec2Service`` refuses a cluster whose only capacity is Managed
Instances (aws/aws-cdk#35742, #36098), so services on Managed Instances use
``FargateService`` with the Managed Instances capacity provider strategy, as
upstream documents; services on Auto Scaling capacity use ``Ec2Service``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import AspectPriority, Aspects, IAspect
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct, IConstruct

from neuron_constructs import rules
from neuron_constructs.capacity import AutoScalingCapacity, ManagedInstancesCapacity
from neuron_constructs.cluster import NeuronCluster
from neuron_constructs.task_definitions import ManualNeuronTaskDefinition, NeuronTaskDefinition

__all__ = ["NeuronService"]

Capacity = ManagedInstancesCapacity | AutoScalingCapacity
CapacityProvider = ecs.ManagedInstancesCapacityProvider | ecs.AsgCapacityProvider


class NeuronService(Construct):
    """An ECS service for a Neuron task definition, on capacity that fits it.

    Parameters
    ----------
    cluster: the :class:`NeuronCluster`.
    task_definition: a managed or manual Neuron task definition.
    desired_count: tasks to run; default 1.
    capacity: the capacity provider to use; default the one capacity of the
        cluster that fits (an error when none or several fit).
    min_healthy_percent, max_healthy_percent: deployment bounds; default 100/200.
    vpc_subnets, security_groups: awsvpc networking; default the cluster's
        capacity subnets and a new security group with no inbound rules.

    Attributes
    ----------
    service: the ``ecs.FargateService`` (Managed Instances) or ``ecs.Ec2Service``.
    capacity: the capacity construct the service runs on.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        task_definition: NeuronTaskDefinition,
        desired_count: int = 1,
        capacity: CapacityProvider | None = None,
        service_name: str | None = None,
        min_healthy_percent: int = 100,
        max_healthy_percent: int = 200,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.cluster = cluster
        self.task_definition = task_definition
        self.capacity: Capacity = self._choose_capacity(cluster, task_definition, capacity)
        if isinstance(self.capacity, AutoScalingCapacity):
            owner = self.capacity.sliced_by
            if owner is not None and not self.node.path.startswith(f"{owner.node.path}/"):
                raise rules.SLICED_CAPACITY_SHARED.error(
                    self.node.path,
                    f"{self.capacity.node.path} runs the sliced service {owner.node.path}",
                    sliced=owner.node.path,
                    other=self.node.path,
                )
            self.capacity.services.append(self)
        strategy = [
            ecs.CapacityProviderStrategy(
                capacity_provider=self.capacity.capacity_provider.capacity_provider_name, weight=1
            )
        ]
        common: dict[str, Any] = dict(
            cluster=cluster.cluster,
            task_definition=task_definition.task_definition,
            desired_count=desired_count,
            service_name=service_name,
            capacity_provider_strategies=strategy,
            min_healthy_percent=min_healthy_percent,
            max_healthy_percent=max_healthy_percent,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
        )
        awsvpc = task_definition.task_definition.network_mode == ecs.NetworkMode.AWS_VPC
        networking: dict[str, Any] = (
            dict(vpc_subnets=vpc_subnets or cluster.capacity_subnets, security_groups=security_groups) if awsvpc else {}
        )
        self.service: ecs.BaseService
        if isinstance(self.capacity, ManagedInstancesCapacity):
            self.service = ecs.FargateService(self, "Service", assign_public_ip=False, **common, **networking)
        else:
            pinned = None
            if (
                isinstance(task_definition, ManualNeuronTaskDefinition)
                and task_definition.is_managed_instances_compatible
            ):
                # The task-level memberOf constraint is dropped for Managed Instances compatible task
                # definitions; keep the instance-type pin on the service instead.
                pinned = [task_definition.instance_type_constraint]
            self.service = ecs.Ec2Service(self, "Service", placement_constraints=pinned, **common, **networking)
        # ECS refuses a strategy naming a provider not yet associated with the cluster; aws-cdk-lib creates
        # the association in an aspect, so the dependency is added by an aspect that runs after it.
        Aspects.of(self).add(
            _AfterCapacityAssociations(self.service, cluster.cluster), priority=AspectPriority.READONLY
        )

    def _choose_capacity(
        self, cluster: NeuronCluster, task_definition: NeuronTaskDefinition, requested: CapacityProvider | None
    ) -> Capacity:
        path = self.node.path
        candidates: list[Capacity] = [*cluster.managed_instances_capacities, *cluster.auto_scaling_capacities]
        if requested is not None:
            chosen = [c for c in candidates if c.capacity_provider is requested]
            if not chosen:
                raise rules.NO_MATCHING_CAPACITY.error(
                    path, "capacity= is not a capacity of this NeuronCluster", wanted="a capacity added to the cluster"
                )
            candidates = chosen
        if task_definition.uses_managed_allocation:
            fitting: list[Capacity] = [c for c in candidates if isinstance(c, ManagedInstancesCapacity)]
            if not fitting and requested is not None:
                raise rules.MANAGED_ALLOCATION_CAPACITY.error(path, "capacity= is an Auto Scaling group")
            wanted = "Managed Instances capacity"
        else:
            assert isinstance(task_definition, ManualNeuronTaskDefinition)
            instance = task_definition.instance_type
            fitting = [
                c
                for c in candidates
                if (
                    isinstance(c, AutoScalingCapacity)
                    and c.neuron_instance_type == instance
                    and task_definition.is_ec2_compatible
                )
                # aws-cdk-lib drops task-level placement constraints from Managed Instances compatible task
                # definitions, so on Managed Instances the capacity itself must launch only this type.
                or (
                    isinstance(c, ManagedInstancesCapacity)
                    and c.instance_types == (instance,)
                    and task_definition.is_managed_instances_compatible
                )
            ]
            wanted = f"{instance.name} capacity (Auto Scaling, or Managed Instances admitting only {instance.name})"
        if not fitting:
            raise rules.NO_MATCHING_CAPACITY.error(
                path, f"the cluster has no {wanted} for {task_definition.node.path}", wanted=wanted
            )
        if len(fitting) > 1:
            raise rules.AMBIGUOUS_CAPACITY.error(
                path, f"{len(fitting)} capacities fit", names=", ".join(c.node.id for c in fitting)
            )
        return fitting[0]


@jsii.implements(IAspect)
class _AfterCapacityAssociations:
    """Make ``service`` depend on the cluster's capacity provider associations."""

    def __init__(self, service: ecs.BaseService, cluster: ecs.Cluster) -> None:
        self._service = service
        self._cluster = cluster

    def visit(self, node: IConstruct) -> None:
        if node.node.path != self._service.node.path:
            return
        for child in self._cluster.node.children:
            if isinstance(child, ecs.CfnClusterCapacityProviderAssociations):
                self._service.node.add_dependency(child)
