"""Which capacity of a :class:`~neuron_constructs.compute.cluster.NeuronCluster` a service runs on.

* managed allocation -> the cluster's Managed Instances capacity provider;
* manual mapping -> the Auto Scaling capacity of the task's instance type (or
  a Managed Instances capacity that admits that type, when the task definition
  is Managed Instances compatible).
"""

from __future__ import annotations

from aws_cdk import aws_ecs as ecs

from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import rules

__all__ = ["Capacity", "CapacityChoice", "capacity_for"]

Capacity = ManagedInstancesCapacity | AutoScalingCapacity
"""A capacity of a :class:`NeuronCluster`, as its ``add_*_capacity`` methods return it."""
CapacityChoice = Capacity | ecs.ManagedInstancesCapacityProvider | ecs.AsgCapacityProvider
"""What ``capacity=`` takes: a capacity, or its ``capacity_provider``."""


def capacity_for(
    path: str, cluster: NeuronCluster, task_definition: NeuronTaskDefinition, requested: CapacityChoice | None
) -> Capacity:
    """NEURON014/015/008: the one capacity of ``cluster`` that fits ``task_definition`` (or ``requested``)."""
    candidates: list[Capacity] = [*cluster.managed_instances_capacities, *cluster.auto_scaling_capacities]
    if requested is not None:
        chosen = [c for c in candidates if requested is c or c.capacity_provider is requested]
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
            path, f"the cluster has no {wanted} for {construct_path(task_definition)}", wanted=wanted
        )
    if len(fitting) > 1:
        raise rules.AMBIGUOUS_CAPACITY.error(
            path, f"{len(fitting)} capacities fit", names=", ".join(c.node.id for c in fitting)
        )
    found = fitting[0]
    if (
        isinstance(found, AutoScalingCapacity)
        and isinstance(task_definition, ManualNeuronTaskDefinition)
        and found.lnc is not None
        and found.lnc != task_definition.lnc
    ):
        raise rules.LOGICAL_CORES.error(
            path,
            f"{construct_path(task_definition)} runs at LNC={task_definition.lnc}, but {construct_path(found)} sets "
            f"LNC={found.lnc} on its instances; pass lnc={found.lnc}",
        )
    return found
