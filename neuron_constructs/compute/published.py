"""A platform's parts under stable names: Systems Manager Parameter Store parameters that another CDK app reads.

The app that owns a cluster writes one ``String`` parameter per value under a prefix it chooses (``/neuron/team``):
``<prefix>/cluster/name``, ``<prefix>/vpc/subnets`` and so on (:data:`CLUSTER_PARAMETERS`); lists are joined with
commas. Another app reads them at deploy time, through template parameters of type
``AWS::SSM::Parameter::Value<String>`` (aws-cdk-lib's ``StringParameter.value_for_string_parameter``): its stacks name
the parameters, never the platform's stacks, so neither app's stacks depend on the other's, and the platform may
replace what a value names (a new load balancer) without first removing its consumers (a CloudFormation export in use
cannot change). A consumer deployed before the platform fails at once: CloudFormation refuses a template parameter
whose Parameter Store name does not exist.

A consumer's stack is synthesized without reading the values, so it must know how many subnets (one per
Availability Zone) the platform published: ``zones``, 2 for the VPC a :class:`~neuron_constructs.NeuronCluster`
makes. More than were published fails the consumer's deployment (``Fn::Select`` out of range); fewer uses the first
``zones``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence

import jsii
from aws_cdk import Annotations, Fn, IStableStringProducer, Lazy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.knowledge import rules

__all__ = [
    "CLUSTER_PARAMETERS",
    "LOAD_BALANCER_PARAMETERS",
    "NONE",
    "check_prefix",
    "import_vpc",
    "joined",
    "publish",
    "read",
    "read_list",
]

CLUSTER_PARAMETERS: Mapping[str, str] = {
    "ClusterName": "cluster/name",
    "ClusterArn": "cluster/arn",
    "CapacityProviders": "cluster/capacity-providers",
    "CapacitySecurityGroups": "cluster/capacity-security-groups",
    "VpcId": "vpc/id",
    "VpcCidr": "vpc/cidr",
    "AvailabilityZones": "vpc/availability-zones",
    "Subnets": "vpc/subnets",
    "Vpc": "vpc/attributes",
}
"""What a cluster publishes: construct id -> name under the prefix. ``vpc/subnets`` are the cluster's capacity
subnets (where its capacity and tasks run), ``vpc/availability-zones`` their zones, in the same order;
``vpc/attributes`` holds the four ``vpc/`` values in one (``<id>|<cidr>|<zones>|<subnets>``), which an importing stack
reads as one template parameter: every part of the VPC it uses or none (CloudFormation warns of a parameter nothing
refers to)."""
VPC_PARTS = ("VpcId", "VpcCidr", "AvailabilityZones", "Subnets")
"""The values ``vpc/attributes`` joins, in order."""
LOAD_BALANCER_PARAMETERS: Mapping[str, str] = {
    "ListenerArn": "load-balancer/listener-arn",
    "SecurityGroup": "load-balancer/security-group",
    "Url": "load-balancer/url",
}
"""What a :class:`~neuron_constructs.NeuronLoadBalancer` publishes beside its cluster."""
NONE = "none"
"""The value of a published list with no entry (Parameter Store refuses an empty value)."""


def check_prefix(path: str, prefix: str) -> None:
    """NEURON082: every name published under ``prefix`` is a Parameter Store name."""
    inputs.check_parameter_prefix(path, prefix, [*CLUSTER_PARAMETERS.values(), *LOAD_BALANCER_PARAMETERS.values()])


@jsii.implements(IStableStringProducer)
class _Joined:
    """A list joined with commas when the template is written, so entries added after publishing are in it."""

    def __init__(self, entries: Callable[[], Sequence[str]]) -> None:
        self._entries = entries

    def produce(self) -> str | None:
        entries = list(self._entries())
        return Fn.join(",", entries) if entries else NONE


def joined(entries: Callable[[], Sequence[str]]) -> str:
    """``entries()`` at synthesis, joined with commas (:data:`NONE` for none)."""
    return Lazy.string(_Joined(entries))


_PUBLISHED: weakref.WeakKeyDictionary[object, dict[tuple[str, str, str], str]] = weakref.WeakKeyDictionary()
"""Per app: each Parameter Store name published (account, Region, name) and the stack that declares it."""


def claim_names(scope: Construct, names: Sequence[str]) -> None:
    """NEURON148: no other stack of ``scope``'s app, in the same account and Region, declares any of ``names``
    (CloudFormation creates a parameter without overwrite: the second deploy fails with ParameterAlreadyExists).
    Stacks whose account or Region is a deploy-time value are taken to share it."""
    stack = Stack.of(scope)
    claimed = _PUBLISHED.setdefault(scope.node.root, {})
    here = construct_path(stack)
    for name in names:
        first = claimed.get((stack.account, stack.region, name))
        if first is not None:
            where = "this stack" if first == here else first
            raise rules.PUBLISHED_TWICE.error(
                construct_path(scope),
                f"{name} is published by {where} already, and {here} would declare it again",
                stacks=f"{first} and {here}" if first != here else f"two constructs of {here}",
            )
    for name in names:
        claimed[(stack.account, stack.region, name)] = here


def publish(
    scope: Construct, prefix: str, names: Mapping[str, str], values: Mapping[str, str], what: str
) -> dict[str, ssm.StringParameter]:
    """One ``String`` parameter per entry of ``values`` (construct id -> value), named ``<prefix>/<names[id]>``, in
    ``scope``; by name. NEURON148 when another stack of the app (or another construct of this one) publishes one of
    the names."""
    claim_names(scope, [f"{prefix}/{names[id]}" for id in values])
    return {
        f"{prefix}/{names[id]}": ssm.StringParameter(
            scope,
            id,
            parameter_name=f"{prefix}/{names[id]}",
            string_value=value,
            description=f"{what}: {names[id]} (neuron-constructs)",
            tier=ssm.ParameterTier.STANDARD,
        )
        for id, value in values.items()
    }


def read(scope: Construct, prefix: str, name: str) -> str:
    """The value of parameter ``<prefix>/<name>`` when ``scope``'s stack deploys."""
    return ssm.StringParameter.value_for_string_parameter(scope, f"{prefix}/{name}")


def read_list(scope: Construct, prefix: str, name: str, length: int | None = None) -> list[str]:
    """A published list when ``scope``'s stack deploys: ``length`` entries (``Fn::Select`` of each, for what needs
    a count at synthesis), or one list token for properties that take the list whole."""
    value = read(scope, prefix, name)
    return Fn.split(",", value, length) if length is not None else Fn.split(",", value)


def vpc_attributes(values: Mapping[str, str]) -> str:
    """The value of ``vpc/attributes``: the :data:`VPC_PARTS` of ``values`` joined with ``|``."""
    return Fn.join("|", [values[part] for part in VPC_PARTS])


def import_vpc(scope: Construct, id: str, prefix: str, zones: int) -> ec2.IVpc:
    """The published VPC (``vpc/attributes``): its id and IPv4 range, and the ``zones`` capacity subnets as its
    private subnets."""
    vpc_id, cidr, zone_names, subnets = Fn.split("|", read(scope, prefix, CLUSTER_PARAMETERS["Vpc"]), len(VPC_PARTS))
    vpc = ec2.Vpc.from_vpc_attributes(
        scope,
        id,
        vpc_id=vpc_id,
        vpc_cidr_block=cidr,
        availability_zones=Fn.split(",", zone_names, zones),
        private_subnet_ids=Fn.split(",", subnets, zones),
    )
    for subnet in vpc.private_subnets:  # aws-cdk-lib warns once something reads a route table; nothing here does
        Annotations.of(subnet).acknowledge_warning(
            "@aws-cdk/aws-ec2:noSubnetRouteTableId",
            "A published VPC's subnets are imported without route tables: services, capacity and load balancer "
            "rules never read them (a gateway endpoint would; give it the platform's route tables).",
        )
    return vpc
