"""The resources behind a native rollout: the load balancer role ECS shifts traffic with and the smoke test hook, as
synthesized (one app with cdk-nag's AwsSolutions and NIST 800-53 rev 5 packs), and the shipped code run against a
server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from conftest import imported_vpc
from hypothesis import given
from hypothesis import strategies as st
from test_smoke_test import Recorder, base_url

from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronLoadBalancer
from neuron_constructs.checks.inputs import LAMBDA_ENVIRONMENT_BYTES, environment_bytes
from neuron_constructs.programs.smoke_test import STAGE
from neuron_constructs.serving.rollout import SmokeTest
from neuron_constructs.serving.rollout_resources import (
    DESCRIBE_ACTIONS,
    ENI_ACTIONS,
    load_balancer_role,
    smoke_test_hook,
    smoke_test_source,
)

pytestmark = pytest.mark.xdist_group("rollout_resources")  # one worker builds the module's app once

REPORT_ONLY = "@aws-cdk/core:failSynthOnValidationErrors"
PORT = 8080
SMOKE = SmokeTest(
    "/v1/generate", method="POST", body='{"prompt": "hi"}', expect_status=200, timeout=Duration.seconds(20)
)
HEADER = ("x-neuron-test", "green")
ENV = {"account": "123456789012", "region": "us-east-1"}
ACCOUNT = {"Ref": "AWS::AccountId"}


def _vpc(stack: Stack) -> ec2.Vpc:
    """A VPC without NAT gateways: public and isolated subnets."""
    return ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC),
            ec2.SubnetConfiguration(name="Isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        ],
    )


def _traffic(stack: Stack, lb: NeuronLoadBalancer) -> dict[str, Any]:
    """Blue and green target groups and the production and test listener rules, made directly with elbv2."""
    vpc = lb.cluster.vpc
    groups = {
        name: elbv2.ApplicationTargetGroup(
            stack, name, vpc=vpc, port=PORT, protocol=elbv2.ApplicationProtocol.HTTP, target_type=elbv2.TargetType.IP
        )
        for name in ("Blue", "Green")
    }
    forward = elbv2.ListenerAction.weighted_forward(
        [
            elbv2.WeightedTargetGroup(target_group=groups["Blue"], weight=100),
            elbv2.WeightedTargetGroup(target_group=groups["Green"], weight=0),
        ]
    )
    production = elbv2.ApplicationListenerRule(
        stack,
        "Production",
        listener=lb.listener,
        priority=10,
        conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])],
        action=forward,
    )
    test = elbv2.ApplicationListenerRule(
        stack,
        "Test",
        listener=lb.listener,
        priority=5,
        conditions=[elbv2.ListenerCondition.http_header(HEADER[0], [HEADER[1]])],
        action=forward,
    )
    return {"groups": groups, "production": production, "test": test}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One stack: a cluster, its load balancer, the traffic pair, the role and the hook; AwsSolutions and NIST."""
    from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

    outdir = tmp_path_factory.mktemp("rollout")
    app = App(analytics_reporting=False, outdir=str(outdir), context={REPORT_ONLY: False})
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app))
    stack = Stack(app, "Rollout")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    lb = NeuronLoadBalancer(stack, "Lb", cluster=cluster)
    traffic = _traffic(stack, lb)
    role = load_balancer_role(
        stack,
        "TrafficRole",
        listener_rules=[traffic["production"], traffic["test"]],
        target_groups=list(traffic["groups"].values()),
    )
    granted = load_balancer_role(
        stack, "GrantedRole", listener_rules=[traffic["production"]], target_groups=list(traffic["groups"].values())
    )
    granted.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    hook = smoke_test_hook(
        stack,
        "Smoke",
        smoke_test=SMOKE,
        url=lb.url,
        header=HEADER,
        vpc=cluster.vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        load_balancer=lb.load_balancer,
        port=80,
    )
    assembly = app.synth()
    template = assembly.get_stack_by_name("Rollout").template
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    return {"stack": stack, "template": template, "report": report, "lb": lb, "role": role, "hook": hook, **traffic}


def _resolve(built: dict[str, Any], value: Any) -> Any:
    return built["stack"].resolve(value)


def _logical(built: dict[str, Any], construct: Any) -> str:
    resource = construct if hasattr(construct, "logical_id") else construct.node.default_child
    return str(built["stack"].resolve(resource.logical_id))


def _resource(built: dict[str, Any], construct: Any) -> dict[str, Any]:
    return built["template"]["Resources"][_logical(built, construct)]  # type: ignore[no-any-return]


def _policies_of(built: dict[str, Any], role: iam.Role) -> dict[str, list[dict[str, Any]]]:
    """Every ``AWS::IAM::Policy`` of the template attached to ``role``: its construct id (under the role) to its
    statements."""
    role_ref = {"Ref": _logical(built, role)}
    attached = {
        logical: resource["Properties"]["PolicyDocument"]["Statement"]
        for logical, resource in built["template"]["Resources"].items()
        if resource["Type"] == "AWS::IAM::Policy" and role_ref in resource["Properties"]["Roles"]
    }
    by_id = {
        policy.node.id: attached.pop(_logical(built, policy))
        for policy in role.node.children
        if isinstance(policy, iam.Policy) and _logical(built, policy) in attached
    }
    assert attached == {}, "a policy attached to the role from elsewhere"
    return by_id


def _own_policies(built: dict[str, Any], role: iam.Role) -> dict[str, list[dict[str, Any]]]:
    """The role's own policies (``Policies`` of the ``AWS::IAM::Role``): name to statements."""
    return {
        p["PolicyName"]: p["PolicyDocument"]["Statement"]
        for p in _resource(built, role)["Properties"].get("Policies", [])
    }


def _moves(stack: Stack, role: iam.Role) -> list[dict[str, Any]]:
    """The statements of ``role``'s ``MoveTraffic`` policy in ``stack``'s template."""
    resource = Template.from_stack(stack).to_json()["Resources"][stack.resolve(role.node.default_child.logical_id)]
    (moves,) = [p for p in resource["Properties"]["Policies"] if p["PolicyName"] == "MoveTraffic"]
    return moves["PolicyDocument"]["Statement"]  # type: ignore[no-any-return]


def _trust(built: dict[str, Any], role: iam.Role) -> list[dict[str, Any]]:
    return _resource(built, role)["Properties"]["AssumeRolePolicyDocument"]["Statement"]  # type: ignore[no-any-return]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _function(built: dict[str, Any]) -> Any:
    return built["stack"].node.find_child("Smoke").node.find_child("Function")


# --- the load balancer role -----------------------------------------------------------------------------------


def test_only_ecs_of_this_account_assumes_the_load_balancer_role(built: dict[str, Any]) -> None:
    assert _trust(built, built["role"]) == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "ecs.amazonaws.com"},
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        }
    ]
    assert "ManagedPolicyArns" not in _resource(built, built["role"])["Properties"]


def test_the_load_balancer_role_changes_only_this_rollout_s_rules_and_target_groups(built: dict[str, Any]) -> None:
    assert _policies_of(built, built["role"]) == {}, "no AWS::IAM::Policy: every permission is the role's own"
    policies = _own_policies(built, built["role"])
    assert set(policies) == {"MoveTraffic", "Describe"}
    by_sid = {s["Sid"]: s for s in policies["MoveTraffic"]}
    assert set(by_sid) == {"TargetGroupOperations", "ModifyRules"}
    groups = by_sid["TargetGroupOperations"]
    assert sorted(_as_list(groups["Action"])) == [
        "elasticloadbalancing:DeregisterTargets",
        "elasticloadbalancing:RegisterTargets",
    ]
    assert groups["Resource"] == [{"Ref": _logical(built, built["groups"][n])} for n in ("Blue", "Green")]
    rules = by_sid["ModifyRules"]
    assert rules["Action"] == "elasticloadbalancing:ModifyRule"
    assert rules["Resource"] == [{"Ref": _logical(built, built[n])} for n in ("production", "test")]
    for statement in policies["MoveTraffic"]:
        assert statement["Effect"] == "Allow" and "*" not in json.dumps(statement["Resource"])


def test_only_the_describe_actions_are_on_every_resource_in_a_policy_of_their_own(built: dict[str, Any]) -> None:
    (statement,) = _own_policies(built, built["role"])["Describe"]
    assert sorted(statement["Action"]) == sorted(DESCRIBE_ACTIONS)
    assert statement["Resource"] == "*"
    assert all(action.startswith("elasticloadbalancing:Describe") for action in DESCRIBE_ACTIONS)


def test_a_network_listener_adds_modify_listener_on_that_listener_only() -> None:
    stack = Stack(App(analytics_reporting=False), "Nlb")
    vpc = _vpc(stack)
    nlb = elbv2.NetworkLoadBalancer(stack, "Nlb", vpc=vpc)
    group = elbv2.NetworkTargetGroup(stack, "Blue", vpc=vpc, port=PORT, target_type=elbv2.TargetType.IP)
    listener = nlb.add_listener("Listener", port=80, default_target_groups=[group])
    role = load_balancer_role(stack, "Role", listener_rules=[], target_groups=[group], network_listener=listener)
    statements = _moves(stack, role)
    by_sid = {s["Sid"]: s for s in statements}
    assert set(by_sid) == {"TargetGroupOperations", "ModifyListener"}
    assert by_sid["ModifyListener"]["Action"] == "elasticloadbalancing:ModifyListener"
    assert by_sid["ModifyListener"]["Resource"] == stack.resolve(listener.listener_arn)


def test_rules_given_as_arns_or_cfn_rules_are_granted_as_given() -> None:
    stack = Stack(App(analytics_reporting=False), "Arns")
    vpc = _vpc(stack)
    group = elbv2.ApplicationTargetGroup(stack, "Blue", vpc=vpc, port=PORT, target_type=elbv2.TargetType.IP)
    arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/lb/50dc6c495c0c9188/f2f7dc8e/9683b2d0"
    cfn_rule = elbv2.CfnListenerRule(
        stack,
        "Rule",
        listener_arn="arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/lb/50dc6c495c0c9188/f2f7dc8e",
        priority=1,
        actions=[elbv2.CfnListenerRule.ActionProperty(type="fixed-response")],
        conditions=[elbv2.CfnListenerRule.RuleConditionProperty(field="path-pattern", values=["/"])],
    )
    role = load_balancer_role(stack, "Role", listener_rules=[arn, cfn_rule], target_groups=[group])
    statements = _moves(stack, role)
    rules = next(s for s in statements if s["Sid"] == "ModifyRules")
    assert rules["Resource"] == [arn, {"Fn::GetAtt": [stack.resolve(cfn_rule.logical_id), "RuleArn"]}]


@pytest.mark.parametrize(
    ("rules", "groups", "named"),
    [([], True, "no listener rule and no network listener"), (["arn:rule"], False, "target_groups=[]")],
)
def test_a_role_with_nothing_to_move_is_refused_at_the_call(rules: list[str], groups: bool, named: str) -> None:
    stack = Stack(App(analytics_reporting=False), "Empty")
    vpc = _vpc(stack)
    group = elbv2.ApplicationTargetGroup(stack, "Blue", vpc=vpc, port=PORT, target_type=elbv2.TargetType.IP)
    with pytest.raises(NeuronConfigurationError, match=rf"{re.escape(named)}.*NEURON026"):
        load_balancer_role(stack, "Role", listener_rules=rules, target_groups=[group] if groups else [])


# --- the smoke test function ----------------------------------------------------------------------------------


def test_the_function_runs_the_shipped_code_on_the_newest_python_with_the_smoke_test_s_settings(
    built: dict[str, Any],
) -> None:
    properties = _resource(built, _function(built))["Properties"]
    assert properties["Runtime"] == "python3.14"
    assert properties["Handler"] == "index.handler"
    assert properties["Code"] == {"ZipFile": smoke_test_source()}
    assert properties["Timeout"] == SMOKE.timeout_seconds + 30 == SMOKE.function_timeout.to_seconds()
    assert properties["MemorySize"] == 128
    environment = properties["Environment"]["Variables"]
    assert environment == {
        "SMOKE_TEST_URL": _resolve(built, built["lb"].url),
        "SMOKE_TEST_PATH": "/v1/generate",
        "SMOKE_TEST_METHOD": "POST",
        "SMOKE_TEST_BODY": '{"prompt": "hi"}',
        "SMOKE_TEST_EXPECT_STATUS": "200",
        "SMOKE_TEST_TIMEOUT": "20",
        "SMOKE_TEST_HEADER": "x-neuron-test: green",
    }


def test_the_environment_leaves_out_a_body_and_header_not_given() -> None:
    stack = Stack(App(analytics_reporting=False), "Plain")
    vpc = _vpc(stack)
    group = ec2.SecurityGroup(stack, "LbGroup", vpc=vpc)
    smoke_test_hook(
        stack,
        "Smoke",
        smoke_test=SmokeTest("/health"),
        url="http://internal-lb.example:8080",
        header=None,
        vpc=vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        load_balancer=ec2.Connections(security_groups=[group]),
        port=8080,
    )
    function = stack.node.find_child("Smoke").node.find_child("Function").node.default_child
    properties = Template.from_stack(stack).to_json()["Resources"][stack.resolve(function.logical_id)]["Properties"]
    environment = properties["Environment"]["Variables"]
    assert environment == {
        "SMOKE_TEST_URL": "http://internal-lb.example:8080",
        "SMOKE_TEST_PATH": "/health",
        "SMOKE_TEST_METHOD": "GET",
        "SMOKE_TEST_EXPECT_STATUS": "200",
        "SMOKE_TEST_TIMEOUT": "60",
    }


def test_the_function_runs_in_the_vpc_behind_its_own_group(built: dict[str, Any]) -> None:
    properties = _resource(built, _function(built))["Properties"]
    smoke = built["stack"].node.find_child("Smoke")
    group = smoke.node.find_child("SecurityGroup")
    vpc_config = properties["VpcConfig"]
    assert vpc_config["SecurityGroupIds"] == [{"Fn::GetAtt": [_logical(built, group), "GroupId"]}]
    private = built["lb"].cluster.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnet_ids
    assert vpc_config["SubnetIds"] == [_resolve(built, s) for s in private]


def test_the_function_s_only_way_out_is_the_listener_port_to_the_load_balancer(built: dict[str, Any]) -> None:
    resources = built["template"]["Resources"]
    group = built["stack"].node.find_child("Smoke").node.find_child("SecurityGroup")
    group_id = {"Fn::GetAtt": [_logical(built, group), "GroupId"]}
    lb_group_id = {"Fn::GetAtt": [_logical(built, built["lb"].security_group), "GroupId"]}
    assert resources[_logical(built, group)]["Properties"].get("SecurityGroupEgress") is None
    # EC2's pattern for a group description (no apostrophe)
    assert re.fullmatch(
        r"[a-zA-Z0-9. _\-:/()#,@\[\]+=&;{}!$*]*", resources[_logical(built, group)]["Properties"]["GroupDescription"]
    )
    assert resources[_logical(built, group)]["Properties"].get("SecurityGroupIngress") is None
    egress = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::SecurityGroupEgress"]
    mine = [e for e in egress if e["GroupId"] == group_id]
    assert mine == [
        {
            "GroupId": group_id,
            "IpProtocol": "tcp",
            "FromPort": 80,
            "ToPort": 80,
            "DestinationSecurityGroupId": lb_group_id,
            "Description": "The smoke test to the test listener",
        }
    ]
    ingress = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"]
    from_function = [i for i in ingress if i.get("SourceSecurityGroupId") == group_id]
    assert from_function == [
        {
            "GroupId": lb_group_id,
            "IpProtocol": "tcp",
            "FromPort": 80,
            "ToPort": 80,
            "SourceSecurityGroupId": group_id,
            "Description": "The smoke test to the test listener",
        }
    ]


def test_the_function_logs_to_a_group_of_its_own_kept_a_month_and_deleted_with_the_stack(
    built: dict[str, Any],
) -> None:
    logs = built["stack"].node.find_child("Smoke").node.find_child("Logs")
    log_resource = _resource(built, logs)
    assert log_resource["Properties"]["RetentionInDays"] == 30
    assert log_resource["DeletionPolicy"] == "Delete"
    properties = _resource(built, _function(built))["Properties"]
    assert properties["LoggingConfig"] == {"LogGroup": {"Ref": _logical(built, logs)}}


def test_the_execution_role_writes_its_own_logs_and_manages_its_interfaces_only(built: dict[str, Any]) -> None:
    smoke = built["stack"].node.find_child("Smoke")
    role = smoke.node.find_child("ExecutionRole")
    assert _trust(built, role) == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]
    assert "ManagedPolicyArns" not in _resource(built, role)["Properties"]
    policies = _policies_of(built, role)
    assert set(policies) == {"DefaultPolicy", "NetworkInterfaces"}
    (logs_statement,) = policies["DefaultPolicy"]
    assert sorted(logs_statement["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert logs_statement["Resource"] == {"Fn::GetAtt": [_logical(built, smoke.node.find_child("Logs")), "Arn"]}
    describe, create, manage = policies["NetworkInterfaces"]
    assert sorted([*describe["Action"], create["Action"], *manage["Action"]]) == sorted(ENI_ACTIONS)
    assert all(a.startswith("ec2:") and "*" not in a for a in ENI_ACTIONS)


def test_only_the_describe_actions_are_on_every_resource_and_the_rest_held_to_the_function_s_vpc(
    built: dict[str, Any],
) -> None:
    """GIVEN the smoke test function's network interface policy, THEN only DescribeNetworkInterfaces and
    DescribeSubnets (no resource-level permissions) are on ``*``; creating, deleting and (un)assigning addresses are
    on this Region and account's interface (and subnet, security group) ARNs, with ``ec2:Vpc`` = the function's VPC,
    as the Service Authorization Reference allows for each."""
    role = built["stack"].node.find_child("Smoke").node.find_child("ExecutionRole")
    describe, create, manage = _policies_of(built, role)["NetworkInterfaces"]
    assert describe["Action"] == ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
    assert describe["Resource"] == "*" and "Condition" not in describe
    stack = built["stack"]
    vpc = _resolve(built, stack.format_arn(service="ec2", resource="vpc", resource_name=built["lb"].cluster.vpc.vpc_id))
    kinds = {"network-interface", "subnet", "security-group"}
    arns = {kind: _resolve(built, stack.format_arn(service="ec2", resource=kind, resource_name="*")) for kind in kinds}
    assert create["Resource"] == [arns["network-interface"], arns["subnet"], arns["security-group"]]
    assert manage["Resource"] == arns["network-interface"]
    for statement in (create, manage):
        assert statement["Condition"] == {"ArnEquals": {"ec2:Vpc": vpc}}
    assert create["Action"] == "ec2:CreateNetworkInterface"
    assert manage["Action"] == [
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
    ]


def test_the_function_is_created_after_its_network_interface_permissions(built: dict[str, Any]) -> None:
    """Lambda checks them when it creates a function in a VPC."""
    role = built["stack"].node.find_child("Smoke").node.find_child("ExecutionRole")
    depends_on = _resource(built, _function(built))["DependsOn"]
    assert _logical(built, role.node.find_child("NetworkInterfaces")) in depends_on
    assert _logical(built, role.node.find_child("DefaultPolicy")) in depends_on


def test_the_hook_runs_at_post_test_traffic_shift_through_a_role_that_may_invoke_only_this_function(
    built: dict[str, Any],
) -> None:
    hook = built["hook"]
    assert isinstance(hook, ecs.DeploymentLifecycleLambdaTarget)
    config = hook.bind(built["stack"])
    assert config.lifecycle_stages == [ecs.DeploymentLifecycleStage.POST_TEST_TRAFFIC_SHIFT]
    assert ecs.DeploymentLifecycleStage.POST_TEST_TRAFFIC_SHIFT.value == STAGE
    function = _function(built)
    assert _resolve(built, config.target_arn) == _resolve(built, function.function_arn)
    invoke_role = built["stack"].node.find_child("Smoke").node.find_child("InvokeRole")
    assert config.role is invoke_role
    assert _trust(built, invoke_role) == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "ecs.amazonaws.com"},
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        }
    ]
    assert _policies_of(built, invoke_role) == {}
    assert _own_policies(built, invoke_role) == {
        "InvokeSmokeTest": [
            {
                "Sid": "InvokeSmokeTest",
                "Action": "lambda:InvokeFunction",
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [_logical(built, function), "Arn"]},
            }
        ]
    }
    lambda_permissions = [r for r in built["template"]["Resources"].values() if r["Type"] == "AWS::Lambda::Permission"]
    assert lambda_permissions == [], "no resource policy: only the invoke role reaches the function"


# --- compliance -----------------------------------------------------------------------------------------------


def _findings(built: dict[str, Any], pack: str, key: str) -> dict[str, list[str]]:
    plugin = next(p for p in built["report"]["pluginReports"] if p["pluginName"] == pack)
    found: dict[str, list[str]] = {}
    for violation in plugin[key]:
        paths = [
            c["constructPath"]
            for c in violation["violatingConstructs"]
            if c["constructPath"].startswith(("Rollout/Smoke/", "Rollout/TrafficRole/"))
        ]
        if paths:
            found[violation["ruleName"]] = sorted(found.get(violation["ruleName"], []) + paths)
    return found


def test_aws_solutions_finds_nothing_open_on_the_role_and_the_hook(built: dict[str, Any]) -> None:
    assert _findings(built, "AwsSolutions", "violations") == {}


def test_each_wildcard_acknowledgement_covers_exactly_its_own_policy(built: dict[str, Any]) -> None:
    suppressed = _findings(built, "AwsSolutions", "suppressedViolations")
    interfaces = "Rollout/Smoke/ExecutionRole/NetworkInterfaces/Resource"
    in_account = "arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>"
    assert suppressed == {
        "AwsSolutions-IAM5[Resource::*]": [interfaces, "Rollout/TrafficRole/Resource"],
        **{
            f"AwsSolutions-IAM5[Resource::{in_account}:{kind}/*]": [interfaces]
            for kind in ("network-interface", "security-group", "subnet")
        },
    }


def test_nist_leaves_open_only_the_findings_the_examples_explain(built: dict[str, Any]) -> None:
    from compliance_report import OPEN_NIST_FINDINGS

    open_findings = _findings(built, "NIST.800.53.R5", "violations")
    assert set(open_findings) <= set(OPEN_NIST_FINDINGS), open_findings
    suppressed = _findings(built, "NIST.800.53.R5", "suppressedViolations")
    assert suppressed == {
        "NIST.800.53.R5-LambdaConcurrency": ["Rollout/Smoke/Function/Resource"],
        "NIST.800.53.R5-LambdaDLQ": ["Rollout/Smoke/Function/Resource"],
    }


@pytest.mark.e2e  # cfn-lint takes a few seconds per template: it runs with the deploys (make test-e2e, CI)
def test_cfn_lint_with_the_neuron_rule_pack_reports_nothing(built: dict[str, Any]) -> None:
    from cfnlint.api import ManualArgs, lint
    from cfnlint.core import get_rules

    rules = get_rules(["neuron_constructs.checks.cfn_lint_rules"], [], [])
    matches = lint(json.dumps(built["template"]), rules=rules, config=ManualArgs(regions=["us-east-1"]))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []
    function = _resource(built, _function(built))
    assert function["Metadata"]["cfn-lint"] == {"config": {"ignore_checks": ["W3005"]}}


def test_a_wildcard_granted_to_the_role_later_is_reported_not_acknowledged(built: dict[str, Any]) -> None:
    plugin = next(p for p in built["report"]["pluginReports"] if p["pluginName"] == "AwsSolutions")
    open_paths = [
        c["constructPath"]
        for v in plugin["violations"]
        if v["ruleName"] == "AwsSolutions-IAM5[Resource::*]"
        for c in v["violatingConstructs"]
    ]
    assert open_paths == ["Rollout/GrantedRole/DefaultPolicy/Resource"]


# --- the shipped code runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(("path", "status"), [("/ok", "SUCCEEDED"), ("/fail", "FAILED")])
def test_the_inline_code_as_lambda_loads_it_answers_by_the_status_it_gets(
    built: dict[str, Any],
    server: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    path: str,
    status: str,
) -> None:
    properties = _resource(built, _function(built))["Properties"]
    for name, value in properties["Environment"]["Variables"].items():
        monkeypatch.setenv(name, value if isinstance(value, str) else "")
    monkeypatch.setenv("SMOKE_TEST_URL", base_url(server))
    monkeypatch.setenv("SMOKE_TEST_PATH", path)
    namespace: dict[str, Any] = {"__name__": "index"}
    exec(compile(properties["Code"]["ZipFile"], "index.py", "exec"), namespace)
    assert namespace["handler"]({"targetServiceRevisionArn": "arn:aws:ecs:r:1:service-revision/c/s/1"}, None) == {
        "hookStatus": status
    }
    method, seen_path, headers, body = server.seen[-1]  # type: ignore[attr-defined]
    assert (method, seen_path, body) == ("POST", path, b'{"prompt": "hi"}')
    sent = {name.lower(): value for name, value in headers.items()}
    assert sent[HEADER[0]] == HEADER[1] and sent["content-type"] == "application/json"
    assert f"Smoke test {status}" in capsys.readouterr().out


# --- stacks ---------------------------------------------------------------------------------------------------


def test_the_model_s_stack_holds_every_rule_and_the_platform_never_depends_on_it() -> None:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster")
    lb = NeuronLoadBalancer(platform, "Lb", cluster=cluster)
    traffic = _traffic(platform, lb)
    model = Stack(app, "Model", env=ENV)
    load_balancer_role(
        model,
        "TrafficRole",
        listener_rules=[traffic["production"], traffic["test"]],
        target_groups=list(traffic["groups"].values()),
    )
    smoke_test_hook(
        model,
        "Smoke",
        smoke_test=SMOKE,
        url=lb.url,
        header=HEADER,
        vpc=cluster.vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        load_balancer=lb.load_balancer,
        port=80,
    )
    assembly = app.synth()
    assert platform in model.dependencies and model not in platform.dependencies
    platform_types = {r["Type"] for r in assembly.get_stack_by_name("Platform").template["Resources"].values()}
    model_resources = assembly.get_stack_by_name("Model").template["Resources"].values()
    model_types = sorted(r["Type"] for r in model_resources)
    assert "AWS::IAM::Role" in platform_types and "AWS::EC2::SecurityGroup" in platform_types
    platform_code = [
        r["Properties"]["Code"].get("ZipFile")
        for r in assembly.get_stack_by_name("Platform").template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert smoke_test_source() not in platform_code
    assert model_types.count("AWS::EC2::SecurityGroupIngress") == 1
    assert model_types.count("AWS::EC2::SecurityGroupEgress") == 1
    ingress = next(r for r in model_resources if r["Type"] == "AWS::EC2::SecurityGroupIngress")
    assert "Fn::ImportValue" in ingress["Properties"]["GroupId"]  # the platform's load balancer group


def test_a_hook_with_a_bad_port_header_or_url_is_refused_at_the_call() -> None:
    stack = Stack(App(analytics_reporting=False), "Bad")
    vpc = _vpc(stack)
    group = ec2.SecurityGroup(stack, "LbGroup", vpc=vpc)
    common: dict[str, Any] = {
        "smoke_test": SmokeTest("/health"),
        "url": "http://lb.internal",
        "vpc": vpc,
        "subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        "load_balancer": ec2.Connections(security_groups=[group]),
    }
    with pytest.raises(NeuronConfigurationError, match=r"port=0.*NEURON027"):
        smoke_test_hook(stack, "A", header=None, port=0, **common)
    with pytest.raises(NeuronConfigurationError, match=r"header=.*NEURON026"):
        smoke_test_hook(stack, "B", header="x-test: 1", port=80, **common)  # type: ignore[arg-type]
    with pytest.raises(NeuronConfigurationError, match=r"SMOKE_TEST_HEADER must be 'Name: value'.*NEURON079"):
        smoke_test_hook(stack, "C", header=("x test", "1"), port=80, **common)
    with pytest.raises(NeuronConfigurationError, match=r"SMOKE_TEST_HEADER must be 'Name: value'.*NEURON079"):
        smoke_test_hook(stack, "D", header=("x-test", "one\ntwo"), port=80, **common)
    common["url"] = "http://lb.internal/v1"
    with pytest.raises(NeuronConfigurationError, match=r"SMOKE_TEST_URL must be http\(s\)://host\[:port\].*NEURON079"):
        smoke_test_hook(stack, "E", header=None, port=80, **common)
    assert [stack.node.try_find_child(id) for id in "ABCDE"] == [None] * 5


# --- the environment fits Lambda's 4 KB ------------------------------------------------------------------------


@given(
    st.dictionaries(
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=200),
        max_size=8,
    )
)
def test_the_environment_is_counted_as_its_json_never_less_than_names_and_values(environment: dict[str, str]) -> None:
    size = environment_bytes(environment)
    assert size == len(json.dumps(environment, ensure_ascii=False, separators=(",", ":")).encode())
    assert size >= sum(len(k.encode()) + len(v.encode()) for k, v in environment.items())


def _hook_with_body(body: str, url: str = "http://lb.internal:8080") -> None:
    stack = Stack(App(analytics_reporting=False), "Sized")
    vpc = _vpc(stack)
    smoke_test_hook(
        stack,
        "Smoke",
        smoke_test=SmokeTest("/v1/generate", method="POST", body=body),
        url=url,
        header=HEADER,
        vpc=vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        load_balancer=ec2.Connections(security_groups=[ec2.SecurityGroup(stack, "LbGroup", vpc=vpc)]),
        port=8080,
    )


def test_a_smoke_test_fills_the_environment_to_4096_bytes_and_no_further() -> None:
    environment = {
        "SMOKE_TEST_URL": "http://lb.internal:8080",
        "SMOKE_TEST_PATH": "/v1/generate",
        "SMOKE_TEST_METHOD": "POST",
        "SMOKE_TEST_EXPECT_STATUS": "200",
        "SMOKE_TEST_TIMEOUT": "60",
        "SMOKE_TEST_BODY": "",
        "SMOKE_TEST_HEADER": f"{HEADER[0]}: {HEADER[1]}",
    }
    room = LAMBDA_ENVIRONMENT_BYTES - environment_bytes(environment)
    _hook_with_body("x" * room)
    with pytest.raises(NeuronConfigurationError, match=r"Sized/Smoke: .* 4097 bytes.*NEURON080.*SmokeTest body"):
        _hook_with_body("x" * (room + 1))


def test_a_deploy_time_url_is_counted_at_its_longest() -> None:
    """The load balancer's DNS name is a token at synth: counted as the longest URL it can be."""
    stack = Stack(App(analytics_reporting=False), "Token")
    vpc = _vpc(stack)
    nlb_dns = elbv2.NetworkLoadBalancer(stack, "Nlb", vpc=vpc).load_balancer_dns_name
    _hook_with_body("x" * (LAMBDA_ENVIRONMENT_BYTES - 300))  # fits with a short literal URL
    with pytest.raises(NeuronConfigurationError, match="NEURON080"):
        _hook_with_body("x" * (LAMBDA_ENVIRONMENT_BYTES - 300), url=f"http://{nlb_dns}")


# --- what aws-cdk-lib's service makes of them -------------------------------------------------------------------


def test_a_blue_green_service_takes_the_role_and_the_hook_and_makes_no_role_of_its_own() -> None:
    """aws-cdk-lib's ``AlternateTarget(role=)`` and ``add_lifecycle_hook``: the service names these roles, and the
    default role with the AWS managed policy is never made."""
    stack = Stack(App(analytics_reporting=False), "Service")
    vpc = _vpc(stack)
    lb = elbv2.ApplicationLoadBalancer(stack, "Lb", vpc=vpc)
    listener = lb.add_listener("Listener", port=80, open=False)
    listener.add_action("Default", action=elbv2.ListenerAction.fixed_response(404))
    groups = [
        elbv2.ApplicationTargetGroup(
            stack, n, vpc=vpc, port=PORT, protocol=elbv2.ApplicationProtocol.HTTP, target_type=elbv2.TargetType.IP
        )
        for n in ("Blue", "Green")
    ]
    forward = elbv2.ListenerAction.weighted_forward([elbv2.WeightedTargetGroup(target_group=g) for g in groups])
    production = elbv2.ApplicationListenerRule(
        stack,
        "Production",
        listener=listener,
        priority=10,
        action=forward,
        conditions=[elbv2.ListenerCondition.path_patterns(["/*"])],
    )
    test = elbv2.ApplicationListenerRule(
        stack,
        "Test",
        listener=listener,
        priority=5,
        action=forward,
        conditions=[elbv2.ListenerCondition.http_header(HEADER[0], [HEADER[1]])],
    )
    role = load_balancer_role(stack, "TrafficRole", listener_rules=[production, test], target_groups=groups)
    hook = smoke_test_hook(
        stack,
        "Smoke",
        smoke_test=SmokeTest("/health"),
        url=f"http://{lb.load_balancer_dns_name}",
        header=HEADER,
        vpc=vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        load_balancer=lb,
        port=80,
    )
    task = ecs.FargateTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37"),
        port_mappings=[ecs.PortMapping(container_port=PORT)],
    )
    service = ecs.FargateService(
        stack,
        "Model",
        cluster=ecs.Cluster(stack, "Cluster", vpc=vpc),
        task_definition=task,
        deployment_strategy=ecs.DeploymentStrategy.BLUE_GREEN,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
    )
    target = service.load_balancer_target(
        container_name="model",
        container_port=PORT,
        alternate_target=ecs.AlternateTarget(
            "Alternate",
            alternate_target_group=groups[1],
            production_listener=ecs.ListenerRuleConfiguration.application_listener_rule(production),
            test_listener=ecs.ListenerRuleConfiguration.application_listener_rule(test),
            role=role,
        ),
    )
    groups[0].add_target(target)
    service.add_lifecycle_hook(hook)
    template = Template.from_stack(stack).to_json()
    resolve = stack.resolve
    (properties,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::ECS::Service"]
    (balancer,) = properties["LoadBalancers"]
    advanced = balancer["AdvancedConfiguration"]
    assert advanced["RoleArn"] == {"Fn::GetAtt": [resolve(role.node.default_child.logical_id), "Arn"]}
    assert advanced["ProductionListenerRule"] == {"Ref": resolve(production.node.default_child.logical_id)}
    assert advanced["TestListenerRule"] == {"Ref": resolve(test.node.default_child.logical_id)}
    assert properties["DeploymentConfiguration"]["Strategy"] == "BLUE_GREEN"
    (lifecycle,) = properties["DeploymentConfiguration"]["LifecycleHooks"]
    function = stack.node.find_child("Smoke").node.find_child("Function").node.default_child
    invoke_role = stack.node.find_child("Smoke").node.find_child("InvokeRole").node.default_child
    assert lifecycle["HookTargetArn"] == {"Fn::GetAtt": [resolve(function.logical_id), "Arn"]}
    assert lifecycle["RoleArn"] == {"Fn::GetAtt": [resolve(invoke_role.logical_id), "Arn"]}
    assert lifecycle["LifecycleStages"] == [STAGE]
    managed = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Role" and "ManagedPolicyArns" in r["Properties"]
    ]
    assert managed == [], "no role with AmazonECSInfrastructureRolePolicyForLoadBalancers"


# --- HTTPS to a name no certificate covers ------------------------------------------------------------------------


def _tls_warnings(url: str) -> list[str]:
    from aws_cdk.assertions import Annotations, Match

    from neuron_constructs.knowledge import rules

    stack = Stack(App(analytics_reporting=False), "Tls")
    vpc = _vpc(stack)
    lb = elbv2.ApplicationLoadBalancer(stack, "Lb", vpc=vpc)
    smoke_test_hook(
        stack,
        "Smoke",
        smoke_test=SmokeTest("/health"),
        url=url.replace("<dns>", lb.load_balancer_dns_name),
        header=None,
        vpc=vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        load_balancer=lb,
        port=443,
    )
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(rules.SMOKE_TEST_TLS_NAME.id))
    return [str(message.entry.data) for message in found]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://<dns>", "a host known only at deploy time"),
        ("https://internal-models-1234567890.us-east-1.elb.amazonaws.com:8443", "internal-models-1234567890"),
    ],
    ids=["deploy-time-name", "elb-name"],
)
def test_https_to_the_load_balancer_s_own_name_warns(url: str, shown: str) -> None:
    """GIVEN an HTTPS url to the load balancer's DNS name (which no ACM certificate covers), THEN NEURON123 names it
    and the fix, under an id the user can acknowledge."""
    from neuron_constructs.knowledge import rules

    (warning,) = _tls_warnings(url)
    assert warning.startswith(f"Tls/Smoke: url= is HTTPS to {shown}")
    assert "Fix: pass url= with a host name the listener's certificate covers" in warning
    assert warning.endswith(f"[ack: Annotation::{rules.SMOKE_TEST_TLS_NAME.warning_id}]")


@pytest.mark.parametrize("url", ["https://models.example.com", "http://<dns>", "http://<dns>:8080"])
def test_https_to_your_domain_or_plain_http_does_not_warn(url: str) -> None:
    assert _tls_warnings(url) == []
