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

What is validated, and where (a value under the prefix decides which listener, security groups, cluster and subnets a
consumer's resources use, so a principal who can write it could point a consumer at resources of its choosing):

* CloudFormation validates a Systems Manager parameter type's *key*, not the value it resolves to (CloudFormation
  User Guide, "Specify existing resources at runtime with CloudFormation-supplied parameter types", Systems Manager
  parameter types: "CloudFormation can perform validation on Systems Manager parameter keys, but not on their
  corresponding values ... You should do any validation for Systems Manager parameter values in Parameter Store").
  So each template parameter a consumer declares (:func:`read`) carries an ``AllowedPattern`` that is its own
  Parameter Store name, exactly: a deploy cannot be pointed at another name with ``--parameters``; it does not check
  the value.
* The value's format is checked where it is written: every published parameter carries an ``AllowedPattern``
  (:data:`VALUE_PATTERNS`), which Parameter Store applies on ``PutParameter`` (Systems Manager API reference,
  PutParameter ``AllowedPattern``), and aws-cdk-lib at synthesis for a literal value. A writer's ``PutParameter``
  carries its own ``AllowedPattern``, so this keeps a mistake out, not a principal allowed to overwrite: that is the
  deny statement's work (:func:`write_protection`).
* The consumer's own account and Region hold by construction: the listener's ARN is rebuilt from the consumer's own
  partition, Region and account and the published ARN's resource part (:func:`read_own_arn`), and the cluster's ARN
  from the consumer's own ones and the published name; the cluster name, VPC, subnets and security group ids are
  looked up in the caller's own account and Region by the APIs that take them. A value naming another account's or
  Region's resource then names one that does not exist, and the consumer's deployment fails.
* Who may write under the prefix: :func:`write_protection`, a deny statement for every principal but the platform's
  deploying role, which the platform team attaches as a service control policy or permissions boundary;
  :func:`warm_up_write_protection` when model stacks deployed by other roles publish what a warm pool prefetches
  under ``<prefix>/warm-up/`` (:mod:`neuron_constructs.compute.warm_up_needs`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping, Sequence

import jsii
from aws_cdk import Annotations, CfnParameter, Fn, IStableStringProducer, Lazy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.knowledge import rules

__all__ = [
    "CLUSTER_PARAMETERS",
    "LOAD_BALANCER_PARAMETERS",
    "NONE",
    "PLATFORM_SUBTREES",
    "VALUE_PATTERNS",
    "WRITE_ACTIONS",
    "check_prefix",
    "cluster_values",
    "import_vpc",
    "joined",
    "publish",
    "read",
    "read_list",
    "read_own_arn",
    "warm_up_write_protection",
    "write_protection",
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

_NAME = (
    r"[a-zA-Z0-9_-]{1,255}"  # ECS cluster and capacity provider names (ECS API: CreateCluster, CreateCapacityProvider)
)
_SECURITY_GROUP = r"sg-[0-9a-f]{8,17}"
_SUBNET = r"subnet-[0-9a-f]{8,17}"
_VPC = r"vpc-[0-9a-f]{8,17}"
_CIDR = r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}"
_ZONE = r"[a-z0-9-]{4,64}"  # us-east-1a, and Local and Wavelength Zones (us-west-2-lax-1a)
_PARTITION = r"aws(-[a-z]{1,10}){0,3}"
_REGION = r"[a-z]{2}(-[a-z]{1,10}){1,3}-[0-9]{1,2}"
_ACCOUNT = r"[0-9]{12}"


def _list_of(entry: str) -> str:
    return f"{entry}(,{entry})*"


VALUE_PATTERNS: Mapping[str, str] = {
    "ClusterName": f"^{_NAME}$",
    "ClusterArn": f"^arn:{_PARTITION}:ecs:{_REGION}:{_ACCOUNT}:cluster/{_NAME}$",
    "CapacityProviders": f"^({NONE}|{_list_of(_NAME)})$",
    "CapacitySecurityGroups": f"^({NONE}|{_list_of(_SECURITY_GROUP)})$",
    "VpcId": f"^{_VPC}$",
    "VpcCidr": f"^{_CIDR}$",
    "AvailabilityZones": f"^{_list_of(_ZONE)}$",
    "Subnets": f"^{_list_of(_SUBNET)}$",
    "Vpc": f"^{_VPC}[|]{_CIDR}[|]{_list_of(_ZONE)}[|]{_list_of(_SUBNET)}$",
    "ListenerArn": (
        f"^arn:{_PARTITION}:elasticloadbalancing:{_REGION}:{_ACCOUNT}:listener/app/[a-zA-Z0-9-]{{1,32}}/[0-9a-f]{{16}}/"
        "[0-9a-f]{16}$"
    ),
    "SecurityGroup": f"^{_SECURITY_GROUP}$",
    "Url": r"^https?://[a-zA-Z0-9.-]{1,253}(:[0-9]{1,5})?$",
}
"""The ``AllowedPattern`` of each published parameter, by construct id: Parameter Store refuses a value that does not
match. The formats: ECS names (1-255 letters, digits, ``-``, ``_``), EC2 ids (``sg-``, ``subnet-``, ``vpc-`` and 8 or
17 hexadecimal digits), an Application Load Balancer listener's ARN (``listener/app/<name>/<id>/<id>``, Elastic Load
Balancing API reference, Listener ARN), the load balancer's URL."""
WRITE_ACTIONS = (
    "ssm:PutParameter",
    "ssm:DeleteParameter",
    "ssm:DeleteParameters",
    "ssm:LabelParameterVersion",
    "ssm:UnlabelParameterVersion",
    "ssm:AddTagsToResource",
    "ssm:RemoveTagsFromResource",
)
"""What :func:`write_protection` denies: every Parameter Store action that writes, removes or relabels a parameter
(Service Authorization Reference, AWS Systems Manager actions of access level Write and Tagging)."""


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
    A stack whose account or Region is a deploy-time value (no ``env``) may deploy to any: it is taken to share them
    with every other stack."""
    stack = Stack.of(scope)
    claimed = _PUBLISHED.setdefault(scope.node.root, {})
    here = construct_path(stack)

    def same(one: str, other: str) -> bool:  # an environment fixed only at deploy time may be any
        return one == other or Token.is_unresolved(one) or Token.is_unresolved(other)

    for name in names:
        first = next(
            (
                where
                for (account, region, claimed_name), where in claimed.items()
                if claimed_name == name and same(account, stack.account) and same(region, stack.region)
            ),
            None,
        )
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
            allowed_pattern=VALUE_PATTERNS[id],
        )
        for id, value in values.items()
    }


def cluster_values(
    cluster: ecs.ICluster,
    vpc: ec2.IVpc,
    vpc_cidr: str,
    subnets: Sequence[ec2.ISubnet],
    capacities: Callable[[], Sequence[AutoScalingCapacity | ManagedInstancesCapacity]],
) -> dict[str, str]:
    """What ``NeuronCluster.publish`` publishes (:data:`CLUSTER_PARAMETERS`): the cluster's name and ARN, its VPC's
    id and IPv4 range, the capacity ``subnets`` and their Availability Zones, the providers and the security groups
    of ``capacities()`` (joined when the template is written, so capacity added later is listed), and
    ``vpc/attributes``."""
    values = {
        "ClusterName": cluster.cluster_name,
        "ClusterArn": cluster.cluster_arn,
        "CapacityProviders": joined(lambda: [c.capacity_provider.capacity_provider_name for c in capacities()]),
        "CapacitySecurityGroups": joined(
            lambda: [
                g.security_group_id
                for c in capacities()
                for g in (c.security_groups if isinstance(c, ManagedInstancesCapacity) else [c.security_group])
            ]
        ),
        "VpcId": vpc.vpc_id,
        "VpcCidr": vpc_cidr,
        "AvailabilityZones": ",".join(s.availability_zone for s in subnets),
        "Subnets": ",".join(s.subnet_id for s in subnets),
    }
    values["Vpc"] = vpc_attributes(values)
    return values


def read(scope: Construct, prefix: str, name: str) -> str:
    """The value of parameter ``<prefix>/<name>`` when ``scope``'s stack deploys: a template parameter of type
    ``AWS::SSM::Parameter::Value<String>`` (one per stack and name) whose ``AllowedPattern`` is that name, exactly
    (CloudFormation checks the key of such a parameter, never its value: the module's notes)."""
    stack = Stack.of(scope)
    full = f"{prefix}/{name}"
    id = f"Published{full}"
    found = stack.node.try_find_child(id.replace("/", "--"))
    parameter = (
        found
        if isinstance(found, CfnParameter)
        else CfnParameter(
            stack,
            id,
            type="AWS::SSM::Parameter::Value<String>",
            default=full,
            allowed_pattern=f"^{re.escape(full)}$",
            constraint_description=f"the Parameter Store name the platform publishes, {full}",
            description=f"Read from Parameter Store at deploy: {full} (neuron-constructs)",
        )
    )
    return parameter.value_as_string


def read_own_arn(scope: Construct, prefix: str, name: str, service: str) -> str:
    """A published ARN rebuilt in ``scope``'s own partition, Region and account: ``arn:<partition>:<service>:<region>:
    <account>:`` and the published ARN's resource part (its sixth ``:``-separated field). A value with fewer fields
    fails the deployment (``Fn::Select`` out of range); one of another account or Region names a resource that does
    not exist here."""
    stack = Stack.of(scope)
    resource = Fn.select(5, Fn.split(":", read(scope, prefix, name)))
    return Fn.join("", [f"arn:{stack.partition}:{service}:{stack.region}:{stack.account}:", resource])


def write_protection(prefix: str, *, writers: Sequence[str], partition: str = "aws") -> iam.PolicyStatement:
    """A statement that denies :data:`WRITE_ACTIONS` on every parameter under ``prefix``, in every account and Region,
    to every principal but ``writers`` (IAM role ARNs, ``aws:PrincipalArn``, or tokens of them; the role that deploys
    the platform: with the CDK's default bootstrap, its CloudFormation execution role,
    ``arn:aws:iam::<account>:role/cdk-hnb659fds-cfn-exec-role-<account>-<region>``).

    A deny in an identity policy binds only the principal it is attached to: to keep every other principal of the
    account out, attach it where it applies to all of them, a service control policy (AWS Organizations; it does not
    apply to the management account) or the permissions boundary of every role. NEURON082 for a prefix that is not
    one, NEURON149 without a writer or with one that is not the ARN of one IAM role in ``partition`` (a wildcard would
    exempt every role it matches, and a writer of another partition would leave the deny matching no parameter;
    IAM User Guide, global condition context keys: aws:PrincipalArn; policy evaluation logic: an explicit deny
    overrides any allow)."""
    inputs.check_parameter_prefix("write_protection", prefix, ["x"])
    listed = _roles(f"write_protection({prefix!r})", "writers", writers, partition)
    return iam.PolicyStatement(
        sid="DenyWritesToThePublishedPlatform",
        effect=iam.Effect.DENY,
        actions=list(WRITE_ACTIONS),
        resources=[f"arn:{partition}:ssm:*:*:parameter{prefix}/*"],
        conditions={"ArnNotLike": {"aws:PrincipalArn": listed}},
    )


def _roles(where: str, argument: str, roles: Sequence[str], partition: str) -> list[str]:
    """NEURON149: ``roles`` as a list of IAM role ARNs of ``partition`` (or tokens of them), at least one."""
    listed = list(roles) if not isinstance(roles, str) else [roles]
    role = re.compile(rf"arn:{re.escape(partition)}:iam::[0-9]{{12}}:role/[\w+=,.@/-]{{1,512}}")
    bad = next((w for w in listed if not isinstance(w, str) or not (Token.is_unresolved(w) or role.fullmatch(w))), None)
    if not listed or bad is not None:
        raise rules.PUBLISHED_WRITERS.error(
            where,
            f"{argument} is empty"
            if not listed
            else f"{argument} holds {str(bad)[:80]!r}, which is not an IAM role ARN of partition {partition!r} "
            "without a wildcard (ArnNotLike would exempt every role a wildcard matches from the deny)",
        )
    return listed


PLATFORM_SUBTREES = tuple(
    dict.fromkeys(name.split("/", 1)[0] for name in (*CLUSTER_PARAMETERS.values(), *LOAD_BALANCER_PARAMETERS.values()))
)
"""The levels under a prefix that hold what the platform publishes for its consumers (``cluster``, ``vpc``,
``load-balancer``)."""


def warm_up_write_protection(
    prefix: str, *, writers: Sequence[str], model_writers: Sequence[str], partition: str = "aws"
) -> list[iam.PolicyStatement]:
    """:func:`write_protection` for a platform whose warm-pooled capacity other stacks publish their needs to
    (``<prefix>/warm-up/<capacity>/<stack>``): two deny statements, attached where :func:`write_protection` says.

    The first denies :data:`WRITE_ACTIONS` under ``prefix`` to every principal but ``writers`` (the platform's
    deploying role) and ``model_writers`` (the roles that deploy the model stacks, when they are not the platform's:
    with the CDK's default bootstrap every stack of an account and Region deploys with the same CloudFormation
    execution role, which ``writers`` already names); the second denies ``model_writers`` those actions on the levels
    that hold the platform's own values (:data:`PLATFORM_SUBTREES`), so a model's deploying role may write the warm-up
    path, where the warm-up checks every value, and never a value a consumer reads. A model writer may write another
    model's entry under the path: the warm-up then pulls what the instance role may pull, and runs nothing it pulls.
    NEURON082 for a prefix that is not one, NEURON149 for ``writers`` or ``model_writers`` that are not IAM role
    ARNs."""
    inputs.check_parameter_prefix("warm_up_write_protection", prefix, ["x"])
    where = f"warm_up_write_protection({prefix!r})"
    platform = _roles(where, "writers", writers, partition)
    models = _roles(where, "model_writers", model_writers, partition)
    everyone = write_protection(prefix, writers=[*platform, *models], partition=partition)
    platform_values = iam.PolicyStatement(
        sid="DenyModelWritesToThePlatformsValues",
        effect=iam.Effect.DENY,
        actions=list(WRITE_ACTIONS),
        resources=[f"arn:{partition}:ssm:*:*:parameter{prefix}/{level}/*" for level in PLATFORM_SUBTREES],
        conditions={"ArnLike": {"aws:PrincipalArn": models}},
    )
    return [everyone, platform_values]


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
