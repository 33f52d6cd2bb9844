"""``PublishedPlatform``: a platform another CDK app published, imported in one call.

The platform app publishes with ``NeuronLoadBalancer.publish(prefix)`` (its cluster, VPC, capacity providers and
security groups, and the load balancer's listener and security group) or ``NeuronCluster.publish(prefix)`` (the
cluster only), as Parameter Store parameters under ``prefix`` (:mod:`neuron_constructs.compute.published`). A
consumer app names the same prefix::

    platform = PublishedPlatform(stack, "Platform", prefix="/neuron/team")
    service = NeuronService(stack, "Service", cluster=platform.cluster, task_definition=task)
    service.attach_to_listener(platform.listener, conditions=[...], priority=30)

Nothing is looked up at synthesis: the consumer's template names the parameters, and CloudFormation reads them when
the consumer deploys. What is validated, and where: :mod:`neuron_constructs.compute.published` (each template
parameter is pinned to its name, every published value has a format Parameter Store checks on write, the listener's
and cluster's ARNs are built in the consumer's own account and Region); :meth:`PublishedPlatform.write_protection` is
the deny statement that keeps every principal but the platform's deploying role from writing under the prefix.

The listener, its security group and the URL are read only when used, so a consumer of a platform that published its
cluster alone needs no load balancer parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base.arguments import checked
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.compute import published
from neuron_constructs.compute.cluster import ZONES, NeuronCluster

__all__ = ["PublishedPlatform"]


class PublishedPlatform(Construct):
    """The cluster, VPC and load balancer listener another CDK app published under ``prefix``.

    Parameters
    ----------
    prefix
        The prefix the platform published under (``/neuron/<team>``; NEURON082).
    zones
        How many capacity subnets the platform published, one per Availability Zone; default 2, as in the VPC a
        NeuronCluster makes. More than were published fails this stack's deployment; fewer uses the first.

    Attributes
    ----------
    cluster
        The platform's cluster (:meth:`~neuron_constructs.compute.cluster.NeuronCluster.from_published`): add
        Managed Instances capacity to it and run services, fleets and monitoring on it.
    vpc
        The platform's VPC, with the published capacity subnets as its private subnets.
    listener
        The load balancer's listener, imported with its security group (which the consumer's stack opens to its own
        tasks only): attach with ``conditions=`` and a ``priority`` no other app uses.
    load_balancer_security_group, url
        The load balancer's security group and its URL (``http(s)://<dns name>[:port]``).
    cluster_arn
        The cluster's ARN, for IAM policies.
    capacity_providers, capacity_security_group_ids
        The platform's capacity providers and its capacities' security groups when the platform deployed, each one
        list token (``["none"]`` for none): for properties that take the whole list.
    """

    @checked(ranges={"zones": ZONES})
    def __init__(self, scope: Construct, id: str, *, prefix: str, zones: int = 2) -> None:
        published.check_prefix(f"{construct_path(scope)}/{id}".lstrip("/"), prefix)
        super().__init__(scope, id)
        remember_path(self, scope, id)
        self.prefix = prefix
        self.cluster = NeuronCluster.from_published(self, "Cluster", prefix=prefix, zones=zones)
        self.vpc: ec2.IVpc = self.cluster.vpc
        self._listener: elbv2.IApplicationListener | None = None
        self._security_group: ec2.ISecurityGroup | None = None

    @property
    def cluster_arn(self) -> str:
        """The platform cluster's ARN, for IAM policies: built from this stack's own partition, Region and account
        and the published cluster name (never a published ARN, which could name another account's cluster)."""
        return Stack.of(self).format_arn(
            service="ecs", resource="cluster", resource_name=self.cluster.cluster.cluster_name
        )

    @staticmethod
    def write_protection(prefix: str, *, writers: Sequence[str], partition: str = "aws") -> iam.PolicyStatement:
        """The deny statement a platform team attaches (a service control policy, or the permissions boundary of
        every role) so that only ``writers`` (IAM role ARNs: the role that deploys the platform) may write, delete,
        label or tag the parameters under ``prefix``: :func:`neuron_constructs.compute.published.write_protection`
        (NEURON082, NEURON149)."""
        return published.write_protection(prefix, writers=writers, partition=partition)

    @property
    def capacity_providers(self) -> list[str]:
        """The platform's capacity providers (``<prefix>/cluster/capacity-providers``), one list token."""
        return published.read_list(self, self.prefix, published.CLUSTER_PARAMETERS["CapacityProviders"])

    @property
    def capacity_security_group_ids(self) -> list[str]:
        """The platform capacities' security groups (``<prefix>/cluster/capacity-security-groups``), one list
        token."""
        return published.read_list(self, self.prefix, published.CLUSTER_PARAMETERS["CapacitySecurityGroups"])

    @property
    def load_balancer_security_group(self) -> ec2.ISecurityGroup:
        """The load balancer's security group, imported so that this app adds rules to it only for its own tasks
        (outbound to them, in this app's stack)."""
        if self._security_group is None:
            self._security_group = ec2.SecurityGroup.from_security_group_id(
                self,
                "LoadBalancerSecurityGroup",
                published.read(self, self.prefix, published.LOAD_BALANCER_PARAMETERS["SecurityGroup"]),
                mutable=True,
                allow_all_outbound=False,
            )
        return self._security_group

    @property
    def listener(self) -> elbv2.IApplicationListener:
        """The platform load balancer's listener (read from ``<prefix>/load-balancer/listener-arn``, its ARN rebuilt in
        this stack's own partition, Region and account)."""
        if self._listener is None:
            self._listener = elbv2.ApplicationListener.from_application_listener_attributes(
                self,
                "Listener",
                listener_arn=published.read_own_arn(
                    self, self.prefix, published.LOAD_BALANCER_PARAMETERS["ListenerArn"], "elasticloadbalancing"
                ),
                security_group=self.load_balancer_security_group,
            )
        return self._listener

    @property
    def url(self) -> str:
        """The platform load balancer's URL (``http(s)://<dns name>[:port]``)."""
        return published.read(self, self.prefix, published.LOAD_BALANCER_PARAMETERS["Url"])
