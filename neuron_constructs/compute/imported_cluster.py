"""An ECS cluster that exists already, under a ``NeuronCluster`` (``NeuronCluster.from_cluster_attributes``,
``NeuronCluster.from_published``): the checks of its name and default strategy, and the one
``AWS::ECS::ClusterCapacityProviderAssociations`` that associates its Auto Scaling capacity.

Managed Instances providers are created in the cluster (``ClusterName``). Auto Scaling providers are associated by one
``AWS::ECS::ClusterCapacityProviderAssociations`` that lists the cluster's existing providers with the new ones, and
their instances join the cluster through ``ECS_CLUSTER`` in their user data.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute import published
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.knowledge import rules

__all__ = ["associate_auto_scaling", "check_cluster_name", "check_default_strategy", "read_published"]

_CLUSTER_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")
_ASSOCIATED: weakref.WeakKeyDictionary[object, dict[tuple[str, str, str], str]] = weakref.WeakKeyDictionary()
"""Per app: the imported clusters (account, Region, name) whose capacity providers an association sets, and where."""


def read_published(scope: Construct, prefix: str, zones: int) -> tuple[str, ec2.IVpc]:
    """NeuronCluster.from_published: the cluster name and the VPC another app published under ``prefix``."""
    cluster_name = published.read(scope, prefix, published.CLUSTER_PARAMETERS["ClusterName"])
    vpc = published.import_vpc(scope, "Vpc", prefix, zones)
    return cluster_name, vpc


def check_cluster_name(path: str, cluster_name: str) -> None:
    """NEURON057: a cluster's name, not its ARN."""
    if not is_token(cluster_name) and not _CLUSTER_NAME.fullmatch(cluster_name):
        name = cluster_name.rsplit("cluster/", 1)[-1] if ":cluster/" in cluster_name else "<the cluster's name>"
        raise rules.CLUSTER_NAME.error(path, f"cluster_name={cluster_name!r}", name=repr(name))


def check_default_strategy(
    path: str,
    cluster_name: str,
    existing_capacity_providers: Sequence[str] | None,
    default_capacity_provider_strategy: Sequence[ecs.CapacityProviderStrategy],
) -> None:
    """NEURON056: the default strategy names only the cluster's existing providers (those the library adds are
    deploy-time names, and deploy-time names are not checked)."""
    listed = existing_capacity_providers
    if listed is not None and any(is_token(p) for p in listed):
        return
    named = [s.capacity_provider for s in default_capacity_provider_strategy if not is_token(s.capacity_provider)]
    inputs.check_default_strategy(path, cluster_name, named, listed)


def associate_auto_scaling(
    cluster: Construct,
    ecs_cluster: ecs.ICluster,
    capacity: AutoScalingCapacity,
    *,
    cluster_name: str,
    existing_capacity_providers: Sequence[str] | None,
    default_capacity_provider_strategy: Sequence[ecs.CapacityProviderStrategy],
    published_as: tuple[str, int] | None,
    auto_scaling_capacities: Sequence[AutoScalingCapacity],
    association: ecs.CfnClusterCapacityProviderAssociations | None,
) -> ecs.CfnClusterCapacityProviderAssociations:
    """Associate ``capacity``'s provider with the imported cluster (``cluster``, over ``ecs_cluster``), after the
    ``auto_scaling_capacities`` added before it: ``association`` updated, or made with the first capacity; the
    capacity's instances join the cluster through ``ECS_CLUSTER``. Refused on a published cluster (NEURON083), on
    a cluster imported without its existing providers and on a cluster imported twice with Auto Scaling capacity
    (NEURON056). Returns the association."""
    path = construct_path(capacity)
    if published_as is not None:
        prefix = published_as[0]
        raise rules.PUBLISHED_CLUSTER_CAPACITY.error(
            path,
            f"Auto Scaling capacity on {construct_path(cluster)}, the cluster another app published under {prefix}",
            cluster=construct_path(cluster),
        )
    if existing_capacity_providers is None:
        raise rules.IMPORTED_CLUSTER_PROVIDERS.error(
            path,
            f"{construct_path(cluster)} imports cluster {cluster_name} without existing_capacity_providers, and "
            "the association that adds this capacity would drop every provider it does not list",
            cluster=cluster_name,
        )
    providers = [
        *existing_capacity_providers,
        *(c.capacity_provider.capacity_provider_name for c in (*auto_scaling_capacities, capacity)),
    ]
    if association is not None:
        association.capacity_providers = providers
    else:
        # again: the strategy is a public list, and it is read here
        check_default_strategy(
            construct_path(cluster), cluster_name, existing_capacity_providers, default_capacity_provider_strategy
        )
        stack = Stack.of(cluster)
        key = (stack.account, stack.region, cluster_name)
        first = _ASSOCIATED.setdefault(cluster.node.root, {}).setdefault(key, construct_path(cluster))
        if first != construct_path(cluster):
            raise rules.IMPORTED_CLUSTER_PROVIDERS.error(
                path,
                f"cluster {cluster_name} is imported with Auto Scaling capacity at {first} already, and two "
                "associations of one cluster undo each other",
                cluster=cluster_name,
            )
        association = ecs.CfnClusterCapacityProviderAssociations(
            cluster,
            "CapacityProviderAssociations",
            cluster=ecs_cluster.cluster_name,
            capacity_providers=providers,
            default_capacity_provider_strategy=[
                ecs.CfnClusterCapacityProviderAssociations.CapacityProviderStrategyProperty(
                    capacity_provider=s.capacity_provider, weight=s.weight, base=s.base
                )
                for s in default_capacity_provider_strategy
            ],
        )
    joins = f"echo ECS_CLUSTER={ecs_cluster.cluster_name} >> /etc/ecs/ecs.config"
    capacity.auto_scaling_group.add_user_data(joins)
    return association
