"""One app, account, Region and VPC for the parts that must share them, checked where the parts meet.

A service, fleet, load balancer or monitoring and its cluster, a target group and its listener, a training queue
and its VPC, alarms and their topic must be constructs of one CDK app (NEURON077): a part another app made is
imported into this one.
Stacks of one app may each have their own ``env``; a service and its cluster, an alarm and its topic, a load
balancer and its targets, a training queue and its subnet must still be in one account and Region (NEURON058) or
one VPC (NEURON059). A value known only at deploy time (an environment-agnostic stack, an imported id) is never
taken for a difference: only what is provably apart is refused.
"""

from __future__ import annotations

from aws_cdk import IResource
from aws_cdk import aws_ec2 as ec2
from constructs import IConstruct

from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.tree import app_of, construct_path, stack_of
from neuron_constructs.knowledge import rules

__all__ = [
    "IMPORT_CLUSTER",
    "IMPORT_LISTENER",
    "IMPORT_TOPIC",
    "IMPORT_VPC",
    "check_same_account",
    "check_same_app",
    "check_same_environment",
    "check_same_region",
    "check_same_vpc",
    "vpc_of_subnet",
]

IMPORT_CLUSTER = (
    "NeuronCluster.from_cluster_attributes(scope, id, cluster_name=..., vpc=..., existing_capacity_providers=[...])"
)
"""How a cluster another app made is imported (docs/team-apps.md, "An existing cluster")."""
IMPORT_LISTENER = (
    "elbv2.ApplicationListener.from_application_listener_attributes(scope, id, listener_arn=..., "
    "security_group=ec2.SecurityGroup.from_security_group_id(scope, id, <load balancer group id>, mutable=True)), "
    "attached with conditions= and priority="
)
"""How a load balancer's listener another app made is imported; an imported listener keeps its default action."""
IMPORT_VPC = "ec2.Vpc.from_lookup(scope, id, vpc_id=...) or ec2.Vpc.from_vpc_attributes(...)"
"""How a VPC another app made is imported."""
IMPORT_TOPIC = "sns.Topic.from_topic_arn(scope, id, topic_arn)"
"""How an SNS topic another app made is imported."""


def _known(value: str) -> bool:
    return not is_token(value)


def check_same_app(path: str, part: IConstruct, other: IConstruct, *, what: str, other_name: str, how: str) -> None:
    """NEURON077 unless ``part`` and ``other`` are constructs of one CDK app; ``how``: how to import ``other``.

    aws-cdk-lib itself fails only at synth, with a bare ``CannotReferenceAcrossApps`` that names neither part."""
    if app_of(part) is not app_of(other):
        raise rules.ACROSS_APPS.error(
            path,
            f"{what} is in stack {stack_of(part).stack_name} of one CDK app, and {other_name} in stack "
            f"{stack_of(other).stack_name} of another",
            other=other_name,
            how=how,
        )


def check_same_environment(
    path: str, part: IConstruct, other: IConstruct, *, what: str, other_name: str, how: str = IMPORT_CLUSTER
) -> None:
    """NEURON077 unless ``part`` and ``other`` are of one app (``how``: how to import ``other``, by default a
    cluster); NEURON058 unless ``part``'s stack and ``other``'s stack are in one account and Region (as far as
    known)."""
    mine, theirs = stack_of(part), stack_of(other)
    if mine is theirs:  # one stack: one app, one account and Region (the common case, asked without more calls)
        return
    check_same_app(path, part, other, what=what, other_name=other_name, how=how)
    for field, label in (("account", "account"), ("region", "Region")):
        a, b = getattr(mine, field), getattr(theirs, field)
        if _known(a) and _known(b) and a != b:
            raise rules.ACROSS_ENVIRONMENTS.error(
                path,
                f"{what} is in stack {mine.stack_name}, {label} {a}, and {other_name} in stack {theirs.stack_name}, "
                f"{label} {b}",
                what=f"stack {mine.stack_name}",
                other=f"stack {theirs.stack_name}",
            )


def check_same_region(path: str, region: str, where: IConstruct, *, what: str, other_name: str, fix: str) -> None:
    """NEURON058 unless ``region`` (say, of an imported ARN) is the Region of ``where``'s stack (as far as known)."""
    stack = stack_of(where)
    if _known(region) and _known(stack.region) and region != stack.region:
        raise rules.ACROSS_ENVIRONMENTS.error(
            path,
            f"{what} is in Region {region}, and {other_name} in stack {stack.stack_name}, Region {stack.region}",
            what=fix,
            other=f"stack {stack.stack_name}",
        )


def check_same_account(path: str, topic: IResource, where: IConstruct) -> None:
    """NEURON070 unless the SNS ``topic`` (made in a stack, or imported by an ARN) is in the account of ``where``'s
    stack (as far as known)."""
    stack = stack_of(where)
    account = topic.env.account
    if _known(account) and _known(stack.account) and account != stack.account:
        raise rules.ALERT_TOPIC_ACCOUNT.error(
            path,
            f"notifications {construct_path(topic)} is in account {account}, and the queue's job alerts in stack "
            f"{stack.stack_name}, account {stack.account}",
            account=stack.account,
        )


def _describe(vpc: ec2.IVpc) -> str:
    return f"{construct_path(vpc)} ({vpc.vpc_id})" if _known(vpc.vpc_id) else construct_path(vpc)


def _apart(a: ec2.IVpc, b: ec2.IVpc) -> bool:
    """Whether ``a`` and ``b`` are provably two VPCs: two literal ids that differ, or two VPCs made in this app."""
    if a is b:
        return False
    if _known(a.vpc_id) and _known(b.vpc_id):
        return a.vpc_id != b.vpc_id
    return isinstance(a, ec2.Vpc) and isinstance(b, ec2.Vpc)


def check_same_vpc(path: str, mine: ec2.IVpc, theirs: ec2.IVpc, *, what: str, other_name: str, fix: str) -> None:
    """NEURON059 when ``mine`` and ``theirs`` are provably two VPCs."""
    if _apart(mine, theirs):
        raise rules.ACROSS_VPCS.error(
            path, f"{what} is in {_describe(mine)}, and {other_name} in {_describe(theirs)}", fix=fix
        )


def vpc_of_subnet(subnet: ec2.ISubnet) -> ec2.IVpc | None:
    """The VPC whose construct holds ``subnet`` (aws-cdk-lib's VPCs, made or looked up); ``None`` when unknown."""
    parent = subnet.node.scope
    return parent if parent is not None and hasattr(parent, "vpc_id") else None  # type: ignore[return-value]
