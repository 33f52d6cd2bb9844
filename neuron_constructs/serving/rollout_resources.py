"""The AWS resources behind a native ECS rollout: the load balancer infrastructure role ECS shifts traffic with, and
the smoke test's Lambda function with the lifecycle hook that runs it.

* :func:`load_balancer_role`: the role ECS assumes (``AlternateTarget(role=)``) to register the green tasks in the
  alternate target group, deregister the blue ones, and move the weights of the production and test listener rules.
  aws-cdk-lib's default attaches the AWS managed policy ``AmazonECSInfrastructureRolePolicyForLoadBalancers`` (its
  modifying actions on every target group, listener and rule in the account) to a role ``ecs.amazonaws.com`` may
  assume with no condition; this one grants those actions on the given rules, listener and target groups only, to
  ECS acting for this account.
* :func:`smoke_test_hook`: the function of :mod:`neuron_constructs.programs.smoke_test`, inline, in the VPC, able
  to reach only the load balancer's listener, and the ``DeploymentLifecycleLambdaTarget`` ECS invokes it through at
  ``POST_TEST_TRAFFIC_SHIFT`` with a role that may invoke this one function and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from neuron_constructs.base import compliance, l1_overrides
from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL, log_group
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks.inputs import check_smoke_test_environment, smoke_test_tls_warning
from neuron_constructs.knowledge import rules
from neuron_constructs.programs.carrying import program_source
from neuron_constructs.programs.smoke_test import read_configuration
from neuron_constructs.serving.rollout import SmokeTest

__all__ = [
    "DESCRIBE_ACTIONS",
    "ENI_ACTIONS",
    "ENI_CREATE_ACTIONS",
    "ENI_DESCRIBE_ACTIONS",
    "ENI_MANAGE_ACTIONS",
    "RUNTIME",
    "load_balancer_role",
    "smoke_test_hook",
    "smoke_test_source",
]

_ECS = "ecs.amazonaws.com"
DESCRIBE_ACTIONS = (
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
)
"""What ECS reads of the load balancer during a rollout (``ELBReadOperations`` of the managed policy); Elastic Load
Balancing's Describe actions support no resource-level permissions, so they are granted on ``*``."""
_TARGET_GROUP_ACTIONS = ("elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets")
_RULE_ACTIONS = ("elasticloadbalancing:ModifyRule",)
_LISTENER_ACTIONS = ("elasticloadbalancing:ModifyListener",)
ENI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
"""The network interface actions a function in a VPC needs (the AWS managed policy
``AWSLambdaVPCAccessExecutionRole``, version 3 (January 2024), statement ``AWSLambdaVPCAccessExecutionPermissions``,
without its logs actions; Lambda developer guide, "Giving Lambda functions access to resources in an Amazon VPC",
required IAM permissions). The managed policy grants them on ``*``; here each is held to what it supports
(:data:`ENI_DESCRIBE_ACTIONS`, :data:`ENI_CREATE_ACTIONS`, :data:`ENI_MANAGE_ACTIONS`)."""
ENI_DESCRIBE_ACTIONS = ("ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets")
"""On ``*``: the Service Authorization Reference (Amazon EC2) lists no resource type for either, and no condition key
but ``ec2:Region``; the Lambda guide adds that DescribeNetworkInterfaces "only works if it's allowed on all
resources"."""
ENI_CREATE_ACTIONS = ("ec2:CreateNetworkInterface",)
"""On the network interface, subnet and security group ARNs of the stack's Region and account, with ``ec2:Vpc`` =
the function's VPC: the Service Authorization Reference gives CreateNetworkInterface those three resource types and
``ec2:Vpc`` on each, so the function's interfaces can be created in its own VPC only."""
ENI_MANAGE_ACTIONS = (
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
"""On the network interface ARNs of the stack's Region and account, with ``ec2:Vpc`` = the function's VPC: their one
resource type is ``network-interface``, which takes ``ec2:Vpc``; the interface IDs Lambda creates are not known
before, so the ARN ends in ``*`` (the Lambda guide: "include all resource IDs" for DeleteNetworkInterface)."""
RUNTIME = lambda_.Runtime.PYTHON_3_14
"""The newest Python runtime aws-cdk-lib 2.275 knows, the one cdk-nag's AwsSolutions-L1 accepts (it compares with
the newest of the family in ``Runtime.ALL``)."""
_DEPLOY_TIME_URL = "http://load-balancer.invalid"
MEMORY_MIB = 128
"""One HTTP request and a log line: Lambda's smallest memory size is plenty."""


def _trusted_by_ecs(scope: Construct) -> iam.ServicePrincipal:
    """``ecs.amazonaws.com``, only when it acts for ``scope``'s account (``aws:SourceAccount``)."""
    return iam.ServicePrincipal(_ECS, conditions={"StringEquals": {"aws:SourceAccount": Stack.of(scope).account}})


def smoke_test_source() -> str:
    """The function's code: :mod:`neuron_constructs.programs.smoke_test` without docstrings and comments.

    About 5.6 KB. The ``Code.ZipFile`` of ``AWS::Lambda::Function`` once held at most 4,096 characters; CloudFormation
    removed that limit ("This zip file cannot exceed 4MB", CloudFormation template reference,
    ``AWS::Lambda::Function Code``; aws/aws-cdk#20624 dropped the CDK's own 4,096 check), so the stripped module
    ships as it is, with no minified form to keep in step."""
    return program_source("neuron_constructs.programs", "smoke_test.py")


def _rule_arn(rule: elbv2.ApplicationListenerRule | elbv2.CfnListenerRule | str) -> str:
    if isinstance(rule, str):
        return rule
    if isinstance(rule, elbv2.CfnListenerRule):
        return str(rule.attr_rule_arn)
    return str(rule.listener_rule_arn)


def load_balancer_role(
    owner: Construct,
    id: str,
    *,
    listener_rules: Sequence[elbv2.ApplicationListenerRule | elbv2.CfnListenerRule | str],
    target_groups: Sequence[elbv2.ITargetGroup],
    network_listener: elbv2.INetworkListener | None = None,
) -> iam.Role:
    """The infrastructure role ECS assumes to move a rollout's traffic between the blue and green target groups.

    The actions are those of the AWS managed policy ``AmazonECSInfrastructureRolePolicyForLoadBalancers`` (version
    6, the AWS Managed Policy Reference; the ECS developer guide, "Amazon ECS infrastructure IAM role for load
    balancers", names it as the permissions ECS needs to manage the load balancer for its deployments), each on what
    this rollout uses instead of every resource of its kind:

    * ``RegisterTargets`` and ``DeregisterTargets`` on ``target_groups`` (blue's and green's);
    * ``ModifyRule`` on ``listener_rules`` (the production and, if any, the test listener rule of an Application Load
      Balancer: ``ApplicationListenerRule``, ``CfnListenerRule`` or an ARN; aws-cdk-lib 2.275 has no
      ``IApplicationListenerRule``);
    * ``ModifyListener`` on ``network_listener`` only (a Network Load Balancer's weights live on the listener); not
      on an Application Load Balancer's listener, whose default action a rollout never uses (NEURON073: the service
      needs a listener rule of its own);
    * the four Describe actions (:data:`DESCRIBE_ACTIONS`) on ``*``, in a policy of their own (``Describe``): Elastic
      Load Balancing supports no resource-level permissions for Describe actions (Service Authorization Reference,
      Elastic Load Balancing V2).

    Both policies are the role's own (``Policies`` of the ``AWS::IAM::Role``), so whatever refers to the role (the
    service's ``AlternateTarget``) is created after its permissions, and the AwsSolutions-IAM5 finding of ``*`` is
    acknowledged on the role resource: a statement granted later with ``role.add_to_policy`` lands in its
    ``DefaultPolicy``, where a ``*`` is reported.

    Trusted by ``ecs.amazonaws.com`` only with ``aws:SourceAccount`` = the stack's account (the confused-deputy
    condition). Made in ``owner``'s stack; rules, listener and target groups of another stack are referenced, so
    that stack does not depend on this one.
    """
    where = f"{construct_path(owner)}/{id}"
    rule_arns = [_rule_arn(rule) for rule in listener_rules]
    if not rule_arns and network_listener is None:
        raise rules.WRONG_TYPE.error(
            where,
            "no listener rule and no network listener: ECS would have no traffic to move",
            expected="listener_rules=[production rule, test rule] or network_listener=",
        )
    if not target_groups:
        raise rules.WRONG_TYPE.error(
            where, "target_groups=[]", expected="target_groups=[blue target group, green target group]"
        )
    moves = [
        iam.PolicyStatement(
            sid="TargetGroupOperations",
            actions=list(_TARGET_GROUP_ACTIONS),
            resources=[group.target_group_arn for group in target_groups],
        )
    ]
    if rule_arns:
        moves.append(iam.PolicyStatement(sid="ModifyRules", actions=list(_RULE_ACTIONS), resources=rule_arns))
    if network_listener is not None:
        moves.append(
            iam.PolicyStatement(
                sid="ModifyListener", actions=list(_LISTENER_ACTIONS), resources=[network_listener.listener_arn]
            )
        )
    describe = iam.PolicyStatement(sid="ReadOperations", actions=list(DESCRIBE_ACTIONS), resources=["*"])
    role = iam.Role(
        owner,
        id,
        assumed_by=_trusted_by_ecs(owner),
        description="ECS shifts a rollout's traffic between its two target groups through the listener rules",
        inline_policies={
            "MoveTraffic": iam.PolicyDocument(statements=moves),
            "Describe": iam.PolicyDocument(statements=[describe]),
        },
    )
    compliance.acknowledge_rollout_describe(role)
    return role


def _interface_arns(scope: Construct) -> dict[str, str]:
    """The ARN patterns of the function's interfaces, subnets and security groups in ``scope``'s Region and account."""
    stack = Stack.of(scope)
    return {
        kind: stack.format_arn(service="ec2", resource=kind, resource_name="*")
        for kind in ("network-interface", "subnet", "security-group")
    }


def _interface_statements(scope: Construct, vpc: ec2.IVpc) -> list[iam.PolicyStatement]:
    """The function's network interface permissions, each held to what the action supports (:data:`ENI_ACTIONS`)."""
    arns = _interface_arns(scope)
    in_vpc = {
        "ArnEquals": {"ec2:Vpc": Stack.of(scope).format_arn(service="ec2", resource="vpc", resource_name=vpc.vpc_id)}
    }
    return [
        iam.PolicyStatement(sid="DescribeNetworkInterfaces", actions=list(ENI_DESCRIBE_ACTIONS), resources=["*"]),
        iam.PolicyStatement(
            sid="CreateNetworkInterfaces",
            actions=list(ENI_CREATE_ACTIONS),
            resources=list(arns.values()),
            conditions=in_vpc,
        ),
        iam.PolicyStatement(
            sid="ManageNetworkInterfaces",
            actions=list(ENI_MANAGE_ACTIONS),
            resources=[arns["network-interface"]],
            conditions=in_vpc,
        ),
    ]


def _literal_host(url: str) -> str | None:
    """The host of ``url`` (``scheme://host[:port]``), or None where it is known only at deploy time."""
    host = url.partition("://")[2].split("/", 1)[0].rsplit(":", 1)[0] if "://" in url else url
    return None if is_token(host) else host


def _environment(smoke_test: SmokeTest, url: str, header: tuple[str, str] | None) -> dict[str, str]:
    environment = {
        "SMOKE_TEST_URL": url,
        "SMOKE_TEST_PATH": smoke_test.path,
        "SMOKE_TEST_METHOD": smoke_test.method,
        "SMOKE_TEST_EXPECT_STATUS": str(smoke_test.expect_status),
        "SMOKE_TEST_TIMEOUT": str(smoke_test.timeout_seconds),
    }
    if smoke_test.body is not None:
        environment["SMOKE_TEST_BODY"] = smoke_test.body
    if header is not None:
        environment["SMOKE_TEST_HEADER"] = f"{header[0]}: {header[1]}"
    return environment


def smoke_test_hook(
    owner: Construct,
    id: str,
    *,
    smoke_test: SmokeTest,
    url: str,
    header: tuple[str, str] | None,
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    load_balancer: ec2.IConnectable,
    port: int,
    log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
    log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
    log_encryption_key: kms.IKey | None = None,
) -> ecs.DeploymentLifecycleLambdaTarget:
    """The smoke test as a lifecycle hook: a Lambda function that sends ``smoke_test``'s request to ``url`` (the
    test listener, ``http(s)://<load balancer DNS name>[:port]``, with ``header`` as ``Name: value`` if the test
    listener rule matches one), and the target ECS invokes it through at ``POST_TEST_TRAFFIC_SHIFT``.

    Under ``owner``/``id``, all in ``owner``'s stack:

    * ``Function``: :data:`RUNTIME`, handler ``index.handler``, the inline code of :func:`smoke_test_source`, the
      ``SMOKE_TEST_*`` environment the code reads, timeout ``smoke_test.function_timeout``, in ``vpc`` on
      ``subnets``;
    * ``SecurityGroup``: the function's own, whose only egress is TCP ``port`` to ``load_balancer``'s groups, which
      admit it on that port (rules made from the function's side, so they land in ``owner``'s stack even when the
      load balancer is in another). DNS needs no rule: security groups do not filter traffic to the Amazon DNS
      server (VPC user guide, security group rules);
    * ``Logs``: its log group, kept ``log_retention`` (default one month), removed as ``log_removal_policy`` says
      (default with the stack), encrypted with ``log_encryption_key`` if given;
    * ``ExecutionRole``: trusted by ``lambda.amazonaws.com``; may write to its log group only (``DefaultPolicy``)
      and create, describe and delete its network interfaces (:data:`ENI_ACTIONS`, in a policy of its own,
      ``NetworkInterfaces``): create, delete and assign or unassign addresses only in ``vpc`` (``ec2:Vpc``) on this
      Region and account's interface ARNs, describe on ``*``, which those two actions alone need; the wildcards are
      acknowledged there (Lambda creates the interfaces before the function has any to name). No AWS managed policy;
    * ``InvokeRole``: the role ECS invokes the function with, trusted by ``ecs.amazonaws.com`` only with
      ``aws:SourceAccount`` = the stack's account; ``lambda:InvokeFunction`` on this function's ARN only, in the
      role's own policy so that the service naming the role is created after it (ECS
      developer guide, "Permissions required for Lambda functions in Amazon ECS blue/green deployments", where the
      example grants every function).

    Refused at the call: a configuration the function's own
    :func:`~neuron_constructs.programs.smoke_test.read_configuration` refuses (NEURON079: a ``url`` other than
    ``http(s)://host[:port]``, a header name that is no HTTP token or a value that is empty or not printable), an
    environment above Lambda's 4 KB (NEURON080; a URL known only at deploy time counted at its longest,
    :func:`~neuron_constructs.checks.inputs.check_smoke_test_environment`), a port outside 1-65535 (NEURON027), a
    header that is not a pair of strings (NEURON026). Warned (NEURON123, acknowledgeable): an HTTPS ``url`` to the
    load balancer's own DNS name or to a host known only at deploy time, which no certificate of yours covers.

    Returned: the ``DeploymentLifecycleLambdaTarget`` for ``service.add_lifecycle_hook``.
    """
    where = f"{construct_path(owner)}/{id}"
    if not isinstance(smoke_test, SmokeTest):
        raise rules.WRONG_TYPE.error(where, f"smoke_test={smoke_test!r}", expected="smoke_test=SmokeTest(...)")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise rules.OUT_OF_RANGE.error(where, f"port={port!r}", name="port", minimum=1, maximum=65535)
    if header is not None and not (
        isinstance(header, tuple) and len(header) == 2 and all(isinstance(part, str) for part in header)
    ):
        raise rules.WRONG_TYPE.error(where, f"header={header!r}", expected="header=('Name', 'value') or None")
    if not isinstance(url, str):
        raise rules.WRONG_TYPE.error(where, f"url={url!r}", expected="url='http(s)://<host>[:port]'")
    environment = _environment(smoke_test, url, header)
    # What the function will read, read now by the function's own code: a configuration it would refuse fails here,
    # not as a rolled-back deployment. A URL known only at deploy time is the load balancer's: a valid stand-in.
    refused = read_configuration(
        {name: _DEPLOY_TIME_URL if is_token(value) else value for name, value in environment.items()}
    )
    if isinstance(refused, str):
        raise rules.SMOKE_TEST.error(where, f"the function would refuse its configuration: {refused}")
    check_smoke_test_environment(
        where, {name: None if is_token(value) else value for name, value in environment.items()}
    )
    scope = Construct(owner, id)
    tls_warning = smoke_test_tls_warning(where, url, _literal_host(url))
    if tls_warning is not None:
        Validations.of(scope).add_warning(rules.SMOKE_TEST_TLS_NAME.warning_id, tls_warning)
    logs_group = log_group(
        scope, "Logs", retention=log_retention, removal_policy=log_removal_policy, encryption_key=log_encryption_key
    )
    role = iam.Role(
        scope,
        "ExecutionRole",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description="The smoke test function: its own logs and its network interfaces in the VPC",
    )
    logs_group.grant_write(role)
    # A child of the role, so the function (which depends on the role) is created after it: Lambda checks the
    # network interface permissions when the function is created in a VPC.
    interfaces = iam.Policy(role, "NetworkInterfaces", roles=[role], statements=_interface_statements(owner, vpc))
    security_group = ec2.SecurityGroup(
        scope,
        "SecurityGroup",
        vpc=vpc,
        allow_all_outbound=False,
        description="Neuron smoke test: out only to the load balancer listener",
    )
    function = lambda_.Function(
        scope,
        "Function",
        runtime=RUNTIME,
        handler="index.handler",
        code=lambda_.Code.from_inline(smoke_test_source()),
        description=f"Smoke test of {where}: {smoke_test.method} {smoke_test.path}"[:256],
        role=role,
        vpc=vpc,
        vpc_subnets=subnets,
        security_groups=[security_group],
        timeout=smoke_test.function_timeout,
        memory_size=MEMORY_MIB,
        environment=environment,
        log_group=logs_group,
    )
    function.connections.allow_to(load_balancer, ec2.Port.tcp(port), "The smoke test to the test listener")
    l1_overrides.keep_role_dependency_of_function(function)
    compliance.acknowledge_smoke_test_function(function, interfaces, _interface_arns(owner))
    invoke_role = iam.Role(
        scope,
        "InvokeRole",
        assumed_by=_trusted_by_ecs(owner),
        description="ECS invokes the smoke test function at a deployment's lifecycle stage",
        # The role's own policy: the service that names the role is created after the permission.
        inline_policies={
            "InvokeSmokeTest": iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="InvokeSmokeTest", actions=["lambda:InvokeFunction"], resources=[function.function_arn]
                    )
                ]
            )
        },
    )
    return ecs.DeploymentLifecycleLambdaTarget(
        function,
        id,
        lifecycle_stages=[ecs.DeploymentLifecycleStage.POST_TEST_TRAFFIC_SHIFT],
        role=invoke_role,
    )
