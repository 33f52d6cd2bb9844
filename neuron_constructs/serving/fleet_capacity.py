"""The Auto Scaling capacity a fleet's copies run on: finding the one of its Neuron type (NEURON014/015) and claiming
it for the fleet's copies alone (NEURON020)."""

from __future__ import annotations

from aws_cdk import aws_ecs as ecs
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType

__all__ = ["capacity_of_type", "claim"]


def capacity_of_type(
    path: str,
    cluster: NeuronCluster,
    instance: NeuronInstanceType,
    requested: AutoScalingCapacity | ecs.AsgCapacityProvider | None,
) -> AutoScalingCapacity:
    """NEURON014/015: the one Auto Scaling capacity of ``cluster`` of type ``instance`` (or ``requested``)."""
    fitting = [
        c
        for c in cluster.auto_scaling_capacities
        if c.neuron_instance_type == instance
        and (requested is None or requested is c or c.capacity_provider is requested)
    ]
    if not fitting:
        wanted = f"{instance.name} Auto Scaling capacity"
        raise rules.NO_MATCHING_CAPACITY.error(path, f"the cluster has no {wanted} for the fleet", wanted=wanted)
    if len(fitting) > 1:
        raise rules.AMBIGUOUS_CAPACITY.error(
            path, f"{len(fitting)} capacities fit", names=", ".join(c.node.id for c in fitting)
        )
    return fitting[0]


def claim(capacity: AutoScalingCapacity, owner: Construct) -> None:
    """NEURON020: the owner's copies are the only tasks on their capacity."""
    if capacity.sliced_by is owner:
        return
    others = [s for s in capacity.services if not construct_path(s).startswith(f"{construct_path(owner)}/")]
    if others or capacity.sliced_by is not None:
        other = others[0].node.path if others else construct_path(capacity.sliced_by)  # type: ignore[arg-type]
        raise rules.SLICED_CAPACITY_SHARED.error(
            construct_path(owner),
            f"{construct_path(capacity)} already runs {other}",
            sliced=construct_path(owner),
            other=other,
        )
    capacity.sliced_by = owner
