"""What waits for a cluster's capacity provider associations: one aspect per cluster that makes every dependent (a
service) depend on the ``AWS::ECS::ClusterCapacityProviderAssociations`` resources as they are at synthesis."""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import AspectPriority
from aws_cdk import aws_ecs as ecs
from constructs import IConstruct

from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.tree import node_of

__all__ = ["AssociationWaits"]


class AssociationWaits:
    """The dependents waiting for the associations ``associations()`` returns at synthesis (ECS refuses a capacity
    provider strategy that names a provider not yet associated with the cluster)."""

    def __init__(self, associations: Callable[[], list[ecs.CfnClusterCapacityProviderAssociations]]) -> None:
        self._associations = associations
        self._waiting_for_associations: list[IConstruct] = []

    def add(self, anchor: IConstruct, dependent: IConstruct) -> None:
        """Make ``dependent`` wait; the first one adds the aspect, on ``anchor``'s CloudFormation resource."""
        if not self._waiting_for_associations:
            once_before_synthesis(anchor, self._wait_for_associations, priority=AspectPriority.READONLY)
        self._waiting_for_associations.append(dependent)

    def _wait_for_associations(self) -> None:
        associations = self._associations()
        for dependent in self._waiting_for_associations:
            for association in associations:
                node_of(dependent).add_dependency(association)
