"""``NeuronLoadBalancer``: an Application Load Balancer for the models of a :class:`NeuronCluster`.

Internal by default (in the cluster's private subnets), reachable only from the clients it is given
(default: the VPC's own address range) on its one listener port, with no other inbound and no outbound
rule until a service is attached (:meth:`~.ListenerTarget.attach_to_listener` opens exactly the path to
the tasks). Secure and observable by default:

* access logs to an S3 bucket made here: SSE-S3 (the only encryption Elastic Load Balancing writes to),
  public access blocked, TLS-only, versioned, objects expiring after ``access_log_retention`` (90 days);
* invalid HTTP header fields dropped;
* an idle timeout of 5 minutes (default 60 s), so a model's non-streaming answer is not cut;
* HTTPS when a ``certificate`` is given (TLS 1.3 policy), HTTP otherwise (inside the VPC); an internet-facing one
  open to everyone (a client peer of 0.0.0.0/0 or ::/0) without a certificate warns (NEURON119): it would serve
  plain HTTP to the internet.

Access logs need the Elastic Load Balancing account of the stack's Region in the bucket policy. For a
stack with a Region, aws-cdk-lib's ``log_access_logs`` writes it; for an environment-agnostic stack the
account is looked up at deploy time from aws-cdk-lib's table of those accounts, which covers every Region
launched before August 2022 (every Region with Inferentia or Trainium at the time of writing); give a
stack for a later Region its Region.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import (
    AspectPriority,
    Aws,
    CfnOutput,
    Duration,
    RemovalPolicy,
    Stack,
    Validations,
    region_info,
)
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import Range, checked, is_token
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.environments import check_same_environment
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.compute import published
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.knowledge import rules
from neuron_constructs.serving.listener_rules import attached_to
from neuron_constructs.serving.listeners import IDLE_TIMEOUT
from neuron_constructs.serving.rollout_traffic import register_test_listener

__all__ = ["NeuronLoadBalancer"]

_ACCESS_LOG_PREFIX = "load-balancer"


class NeuronLoadBalancer(Construct):
    """An internal, access-logged Application Load Balancer with one listener, for Neuron model services.

    The listener forwards to the model attached to it without conditions; with only path or host rules
    (``attach_to_listener(..., conditions=, priority=)``) other requests get a 404.

    Parameters
    ----------
    cluster
        The :class:`NeuronCluster` whose VPC it is placed in.
    internet_facing
        Default False (internal, in the private subnets); True places it in the public subnets. With clients open to
        everyone (``ec2.Peer.any_ipv4()``, ``any_ipv6()`` or a ``/0`` range) and no ``certificate`` it warns
        (NEURON119, acknowledgeable): pass ``certificate=`` for HTTPS.
    clients
        Who may connect, on the listener port; default the VPC's IPv4 range (an empty list admits nobody).
    port
        The listener port; default 443 with ``certificate``, else 80.
    certificate
        An ACM certificate for an HTTPS listener; default none (HTTP inside the VPC).
    idle_timeout
        Default 5 minutes (Elastic Load Balancing accepts 1-4,000 s).
    access_log_retention
        How long access logs are kept, in days; default 90.
    deletion_protection
        Default False (``cdk destroy`` removes it).
    test_port
        A second, plain-HTTP listener on this port for rollout test traffic; default none. A smoke test
        (:class:`~neuron_constructs.serving.rollout.SmokeTest`) sends its request through it when given: it takes no
        client (only the smoke tests' own security groups, which the model stacks open), answers 404 to what no test
        rule matches, and serves an HTTPS production listener whose certificate the load balancer's DNS name does
        not match. Without it a smoke test goes through the production listener with a header, HTTP only.

    Attributes
    ----------
    load_balancer, listener, security_group, access_logs_bucket
        What it is made of; ``test_listener`` with ``test_port``, else ``None``.
    url
        ``http(s)://<dns name>[:port]``.
    default_target
        The path of the service attached as the listener's default action, if any.
    """

    @checked(
        ranges={
            "port": Range(1, 65535, "a TCP port"),
            "test_port": Range(1, 65535, "a TCP port"),
            "access_log_retention": Range(1),
        }
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        internet_facing: bool = False,
        clients: Sequence[ec2.IPeer] | None = None,
        port: int | None = None,
        certificate: acm.ICertificate | None = None,
        idle_timeout: Duration = IDLE_TIMEOUT,
        access_log_retention: int = 90,
        deletion_protection: bool = False,
        test_port: int | None = None,
    ) -> None:
        check_same_environment(
            f"{construct_path(scope)}/{id}",
            scope,
            cluster,
            what="the load balancer",
            other_name=construct_path(cluster),
        )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        vpc = cluster.vpc
        port = port if port is not None else (443 if certificate else 80)
        self.cluster = cluster
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="Neuron model load balancer: clients in on the listener port; out only to attached tasks",
            allow_all_outbound=False,
        )
        if not 1 <= idle_timeout.to_seconds() <= 4000:
            raise rules.OUT_OF_RANGE.error(
                construct_path(self),
                f"idle_timeout={idle_timeout.to_seconds():g} s",
                name="idle_timeout",
                minimum="1 second",
                maximum="4,000 seconds (Elastic Load Balancing)",
            )
        peers = list(clients) if clients is not None else [ec2.Peer.ipv4(cluster.vpc_cidr)]
        for peer in peers:
            self.security_group.add_ingress_rule(peer, ec2.Port.tcp(port), "Clients of the models")
        open_to = [_everyone(peer) for peer in peers if _everyone(peer)]
        if internet_facing and certificate is None and open_to:
            Validations.of(self).add_warning(
                rules.OPEN_PLAIN_HTTP.warning_id,
                rules.OPEN_PLAIN_HTTP.message(
                    construct_path(self),
                    f"internet_facing=True with clients {', '.join(open_to)} and no certificate: HTTP on port {port} "
                    "to the whole internet",
                ),
            )
        self.access_logs_bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(access_log_retention), noncurrent_version_expiration=Duration.days(1)
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        compliance.acknowledge_access_log_bucket(self.access_logs_bucket)
        self.load_balancer = elbv2.ApplicationLoadBalancer(
            self,
            "LoadBalancer",
            vpc=vpc,
            internet_facing=internet_facing,
            vpc_subnets=ec2.SubnetSelection(
                subnet_type=ec2.SubnetType.PUBLIC if internet_facing else ec2.SubnetType.PRIVATE_WITH_EGRESS
            ),
            security_group=self.security_group,
            idle_timeout=idle_timeout,
            drop_invalid_header_fields=True,
            deletion_protection=deletion_protection,
        )
        self._log_access(self.load_balancer, self.access_logs_bucket)
        cluster.load_balancers.append(self.load_balancer)
        self.listener = self.load_balancer.add_listener(
            "Listener",
            port=port,
            open=False,
            protocol=elbv2.ApplicationProtocol.HTTPS if certificate else elbv2.ApplicationProtocol.HTTP,
            certificates=[elbv2.ListenerCertificate.from_certificate_manager(certificate)] if certificate else None,
            ssl_policy=elbv2.SslPolicy.TLS13_RES if certificate else None,
        )
        # A model attached without conditions becomes the listener's default action; otherwise (only path or
        # host rules) requests no rule matches get a 404, added once the tree is complete.
        once_before_synthesis(self.listener, self._not_found_by_default, priority=AspectPriority.MUTATING)
        self.test_listener: elbv2.ApplicationListener | None = None
        if test_port is not None:
            if test_port == port:
                raise rules.OUT_OF_RANGE.error(
                    construct_path(self),
                    f"test_port={test_port} is the listener's own port",
                    name="test_port",
                    minimum=1,
                    maximum="65535, other than port",
                )
            self.test_listener = self.load_balancer.add_listener(
                "TestListener",
                port=test_port,
                open=False,
                protocol=elbv2.ApplicationProtocol.HTTP,
                default_action=elbv2.ListenerAction.fixed_response(404),
            )
            register_test_listener(self.listener, self.test_listener)
        scheme = "https" if certificate else "http"
        suffix = "" if port == (443 if certificate else 80) else f":{port}"
        self.url: str = f"{scheme}://{self.load_balancer.load_balancer_dns_name}{suffix}"
        self._published: dict[str, dict[str, ssm.StringParameter]] = {}

    def _not_found_by_default(self) -> None:
        """Give the listener a 404 default action unless something (a model, or aws-cdk-lib's ``add_targets``) was
        attached as its default."""
        declared = self.listener.node.default_child
        assert isinstance(declared, elbv2.CfnListener)
        if not Stack.of(self).resolve(declared.default_actions):  # nothing attached as the default, by any API
            self.listener.add_action(
                "NotFound",
                action=elbv2.ListenerAction.fixed_response(
                    404, content_type="text/plain", message_body="No model is served at this path.\n"
                ),
            )

    @property
    def default_target(self) -> str | None:
        """The path of the service attached as the listener's default action, if any."""
        return attached_to(self.listener)

    def add_url_output(self, id: str = "Url", *, path: str = "") -> CfnOutput:
        """A stack output with ``url`` (plus ``path``), for clients and ``make deploy-local``'s report."""
        return CfnOutput(self, id, value=f"{self.url}{path}", description="Model endpoint (load balancer URL)")

    @checked()
    def publish(self, prefix: str) -> dict[str, ssm.StringParameter]:
        """Publish the platform under ``prefix`` (``/neuron/<team>``; NEURON082) for another CDK app's
        :class:`~neuron_constructs.serving.published_platform.PublishedPlatform`: what its cluster publishes
        (:meth:`~neuron_constructs.compute.cluster.NeuronCluster.publish`) and the listener's ARN, the load balancer's
        security group and its ``url``, as Parameter Store parameters. A consumer attaches its models to the listener
        with listener rules of its own (conditions and a priority no other app uses); the listener's default action
        stays this app's. Returns every parameter by name; publishing twice under one prefix returns the same ones."""
        if prefix in self._published:
            return self._published[prefix]
        published.check_prefix(construct_path(self), prefix)
        parameters = dict(self.cluster.publish(prefix))
        parameters.update(
            published.publish(
                Construct(self, f"Published{len(self._published) or ''}"),
                prefix,
                published.LOAD_BALANCER_PARAMETERS,
                {
                    "ListenerArn": self.listener.listener_arn,
                    "SecurityGroup": self.security_group.security_group_id,
                    "Url": self.url,
                },
                f"load balancer {construct_path(self)}",
            )
        )
        self._published[prefix] = parameters
        return parameters

    def _log_access(self, load_balancer: elbv2.ApplicationLoadBalancer, bucket: s3.Bucket) -> None:
        """Access logs into ``bucket`` (module docstring: the Elastic Load Balancing account per Region)."""
        stack = Stack.of(self)
        if not is_token(stack.region):
            load_balancer.log_access_logs(bucket, _ACCESS_LOG_PREFIX)
            return
        account = stack.regional_fact(region_info.FactName.ELBV2_ACCOUNT)
        bucket.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.AccountPrincipal(account)],
                actions=["s3:PutObject"],
                resources=[bucket.arn_for_objects(f"{_ACCESS_LOG_PREFIX}/AWSLogs/{Aws.ACCOUNT_ID}/*")],
            )
        )
        load_balancer.set_attribute("access_logs.s3.enabled", "true")
        load_balancer.set_attribute("access_logs.s3.bucket", bucket.bucket_name)
        load_balancer.set_attribute("access_logs.s3.prefix", _ACCESS_LOG_PREFIX)
        # Elastic Load Balancing checks that it may write to the bucket when access logs are turned on.
        if bucket.policy is not None:
            load_balancer.node.add_dependency(bucket.policy)


def _everyone(peer: ec2.IPeer) -> str:
    """``0.0.0.0/0`` or ``::/0`` when ``peer`` admits every address of its family, else ``""``."""
    config = peer.to_ingress_rule_config()
    for field in ("cidr_ip", "cidr_ipv6"):
        value = getattr(config, field, None)
        if isinstance(value, str) and not is_token(value) and value.endswith("/0"):
            return value
    return ""
