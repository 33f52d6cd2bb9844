"""What keeps a published platform's values honest: a format Parameter Store checks on every write, template
parameters pinned to their own names, ARNs a consumer builds in its own account and Region, the deny statement that
keeps every principal but the platform's deploying role from writing under the prefix, and one publisher per name."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

import pytest
from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk.assertions import Template
from conftest import imported_vpc

from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronLoadBalancer, PublishedPlatform
from neuron_constructs.compute.published import (
    CLUSTER_PARAMETERS,
    LOAD_BALANCER_PARAMETERS,
    VALUE_PATTERNS,
    WRITE_ACTIONS,
)

PREFIX = "/neuron/team"
DEPLOYER = "arn:aws:iam::111122223333:role/cdk-hnb659fds-cfn-exec-role-111122223333-us-east-1"
NAMES = {**CLUSTER_PARAMETERS, **LOAD_BALANCER_PARAMETERS}

GOOD: dict[str, str] = {
    "ClusterName": "Platform-NeuronCluster877957E9-AbC_1",
    "ClusterArn": "arn:aws:ecs:us-east-1:111122223333:cluster/Platform-NeuronCluster877957E9-AbC_1",
    "CapacityProviders": "Platform-Inf2Provider-1A2B,Platform-Trn1Provider-3C4D",
    "CapacitySecurityGroups": "sg-0123456789abcdef0,sg-01234567",
    "VpcId": "vpc-0123456789abcdef0",
    "VpcCidr": "10.0.0.0/16",
    "AvailabilityZones": "us-east-1a,us-west-2-lax-1a",
    "Subnets": "subnet-0123456789abcdef0,subnet-01234567",
    "Vpc": "vpc-0123456789abcdef0|10.0.0.0/16|us-east-1a,us-east-1b|subnet-0123456789abcdef0,subnet-01234567",
    "ListenerArn": "arn:aws-us-gov:elasticloadbalancing:us-gov-west-1:111122223333:listener/app/my-lb/"
    "50dc6c495c0c9188/f2f7dc8efc522ab2",
    "SecurityGroup": "sg-0123456789abcdef0",
    "Url": "http://internal-Platform-LoadB-1A2B3C4D-123456789.us-east-1.elb.amazonaws.com:8080",
}
BAD: dict[str, list[str]] = {
    "ClusterName": ["arn:aws:ecs:eu-west-1:999999999999:cluster/theirs", "a b"],
    "ClusterArn": ["arn:aws:ecs:us-east-1:111122223333:service/x", "arn:aws:s3:::bucket"],
    "CapacityProviders": ["", "a,,b", "FARGATE;rm"],
    "CapacitySecurityGroups": ["sg-XYZ", "none,sg-01234567"],
    "VpcId": ["vpc-123", "subnet-0123456789abcdef0"],
    "VpcCidr": ["10.0.0.0", "0.0.0.0/0 "],
    "AvailabilityZones": ["US-EAST-1A", ""],
    "Subnets": ["subnet-0123456789abcdef0,sg-01234567", ""],
    "Vpc": ["vpc-0123456789abcdef0|10.0.0.0/16|us-east-1a", "vpc-0123456789abcdef0"],
    "ListenerArn": [
        "arn:aws:elasticloadbalancing:us-east-1:111122223333:loadbalancer/app/my-lb/50dc6c495c0c9188",
        "arn:aws:elasticloadbalancing:us-east-1:111122223333:listener/net/my-lb/50dc6c495c0c9188/f2f7dc8efc522ab2",
        "arn:aws:elasticloadbalancing:us-east-1:1111:listener/app/my-lb/50dc6c495c0c9188/f2f7dc8efc522ab2",
    ],
    "SecurityGroup": ["sg-0123456789abcdef0,sg-01234567", "sg-"],
    "Url": ["javascript:alert(1)", "http://a.example/path", "ftp://a.example"],
}


def _published_stack() -> Template:
    stack = Stack(App(analytics_reporting=False), "Platform")
    load_balancer = NeuronLoadBalancer(
        stack, "LoadBalancer", cluster=NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    )
    load_balancer.publish(PREFIX)
    return Template.from_stack(stack)


@pytest.mark.parametrize("id", sorted(NAMES))
def test_each_value_s_format_accepts_what_aws_returns_and_refuses_anything_else(id: str) -> None:
    """Parameter Store applies AllowedPattern (a Java regular expression; these use no construct Python reads
    otherwise) on every PutParameter: the formats of real values pass, another resource's or another kind's fail."""
    pattern = VALUE_PATTERNS[id]
    assert len(pattern) <= 1024  # PutParameter AllowedPattern: at most 1,024 characters
    assert re.fullmatch(pattern, GOOD[id]), (id, GOOD[id])
    for value in BAD[id]:
        assert not re.fullmatch(pattern, value), (id, value)


def test_every_published_parameter_carries_its_format() -> None:
    """GIVEN a load balancer published under /neuron/team WHEN synthesized THEN each AWS::SSM::Parameter has the
    AllowedPattern of its value, so Parameter Store refuses a write of any other form."""
    parameters = _published_stack().find_resources("AWS::SSM::Parameter")
    by_name = {p["Properties"]["Name"]: p["Properties"] for p in parameters.values()}
    assert set(by_name) == {f"{PREFIX}/{name}" for name in NAMES.values()}
    for id, name in NAMES.items():
        assert by_name[f"{PREFIX}/{name}"]["AllowedPattern"] == VALUE_PATTERNS[id]


def _consumer() -> tuple[Stack, PublishedPlatform, dict[str, Any]]:
    stack = Stack(App(analytics_reporting=False), "Consumer")
    platform = PublishedPlatform(stack, "Platform", prefix=PREFIX)
    used = {
        "Cluster": platform.cluster.cluster.cluster_name,
        "Vpc": platform.vpc.vpc_id,
        "Listener": platform.listener.listener_arn,
        "Url": platform.url,
    }
    for id, value in used.items():  # each template parameter used, as in an app
        CfnOutput(stack, id, value=value)
    arn = stack.resolve(platform.cluster_arn)
    return stack, platform, {"template": Template.from_stack(stack).to_json(), "cluster_arn": arn}


def test_each_template_parameter_of_a_consumer_is_pinned_to_its_own_name() -> None:
    """CloudFormation checks an SSM parameter type's key, not its value: the key is pinned, so a deploy cannot be
    pointed at another Parameter Store name (--parameters Foo=/attacker/value) and pass."""
    template = _consumer()[2]["template"]
    read = {k: p for k, p in template["Parameters"].items() if p["Type"] == "AWS::SSM::Parameter::Value<String>"}
    read = {k: p for k, p in read.items() if p["Default"].startswith(f"{PREFIX}/")}  # not the bootstrap version's
    assert len(read) == 5
    for parameter in read.values():
        assert re.fullmatch(parameter["AllowedPattern"], parameter["Default"])
        for other in ("/attacker/cluster/name", parameter["Default"] + "x", "/neuron/teamx/cluster/name"):
            assert not re.fullmatch(parameter["AllowedPattern"], other), other


def test_a_consumer_builds_the_cluster_s_and_the_listener_s_arns_in_its_own_account_and_region() -> None:
    """GIVEN a consumer WHEN it names the platform's cluster ARN (IAM) and listener THEN both are its own partition,
    Region and account with the published name or resource part: a value of another account names nothing here."""
    stack, platform, found = _consumer()
    arn = json.dumps(found["cluster_arn"])
    assert '"Ref": "AWS::AccountId"' in arn and '"Ref": "AWS::Region"' in arn and "cluster/arn" not in arn
    names = {p["Default"] for p in found["template"]["Parameters"].values() if "Default" in p}
    assert f"{PREFIX}/cluster/arn" not in names
    listener = json.dumps(stack.resolve(platform.listener.listener_arn))
    assert listener.startswith('{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":elasticloadbalancing:"')
    assert (
        '{"Fn::Select": [5, {"Fn::Split": [":", {"Ref": "Publishedneuronteamloadbalancerlistenerarn"}]}]}' in listener
    )


def test_the_write_protection_denies_every_write_under_the_prefix_to_all_but_the_deployer() -> None:
    statement = PublishedPlatform.write_protection(PREFIX, writers=[DEPLOYER]).to_statement_json()
    assert statement["Effect"] == "Deny" and "Principal" not in statement  # a service control policy's form
    assert sorted(statement["Action"]) == sorted(WRITE_ACTIONS)
    assert {"ssm:PutParameter", "ssm:DeleteParameter", "ssm:DeleteParameters"} <= set(statement["Action"])
    assert statement["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [DEPLOYER]}}
    resource = statement["Resource"]
    for name in NAMES.values():
        for region, account in (("us-east-1", "111122223333"), ("eu-west-1", "444455556666")):
            assert fnmatch.fnmatchcase(f"arn:aws:ssm:{region}:{account}:parameter{PREFIX}/{name}", resource)
    for other in ("/neuron/team2/cluster/name", "/neuron/other/cluster/name", "/neuron"):
        assert not fnmatch.fnmatchcase(f"arn:aws:ssm:us-east-1:111122223333:parameter{other}", resource)


def test_a_stack_without_an_environment_and_one_with_it_publishing_one_name_are_refused() -> None:
    """GIVEN a stack with no env (it may deploy to any account and Region) and one in a fixed account and Region WHEN
    both publish under one prefix THEN the second is refused (NEURON148): deployed to that account, the names meet."""
    from aws_cdk import App, Environment, Stack

    from neuron_constructs import NeuronCluster, NeuronConfigurationError

    app = App(analytics_reporting=False)
    NeuronCluster(Stack(app, "Anywhere"), "C").publish(PREFIX)
    fixed = Stack(app, "Fixed", env=Environment(account="111122223333", region="us-east-1"))
    with pytest.raises(NeuronConfigurationError, match=r"published by Anywhere already.*NEURON148"):
        NeuronCluster(fixed, "C", vpc=imported_vpc(fixed)).publish(PREFIX)


def test_the_write_protection_is_a_valid_identity_policy_statement() -> None:
    from aws_cdk import aws_iam as iam

    deployer = DEPLOYER.replace("arn:aws:", "arn:aws-cn:", 1)
    statement = PublishedPlatform.write_protection(PREFIX, writers=[deployer], partition="aws-cn")
    assert iam.PolicyDocument(statements=[statement]).validate_for_identity_policy() == []
    assert statement.to_statement_json()["Resource"] == f"arn:aws-cn:ssm:*:*:parameter{PREFIX}/*"


@pytest.mark.parametrize(
    ("writers", "text"),
    [
        ([], r"writers is empty.*NEURON149"),
        (["arn:aws:iam::111122223333:user/admin"], r"'arn:aws:iam::111122223333:user/admin'.* not an IAM role ARN"),
        (["*"], r"writers holds '\*', which is not an IAM role ARN"),
        (["arn:aws:iam::*:role/*"], r"'arn:aws:iam::\*:role/\*', which is not an IAM role ARN.*without a wildcard"),
        (["arn:aws:iam::111122223333:role/deploy-*"], r"role/deploy-\*', which is not an IAM role ARN"),
        ([DEPLOYER.replace("arn:aws:", "arn:aws-cn:", 1)], r"not an IAM role ARN of partition 'aws'"),
    ],
)
def test_the_write_protection_without_a_role_to_exempt_is_refused(writers: list[str], text: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=text):
        PublishedPlatform.write_protection(PREFIX, writers=writers)


def test_the_write_protection_takes_a_role_arn_known_at_deploy_time() -> None:
    from aws_cdk import aws_iam as iam

    stack = Stack(App(analytics_reporting=False), "Guard")
    deployer = iam.Role.from_role_name(stack, "Deployer", "platform-deployer").role_arn
    statement = PublishedPlatform.write_protection(PREFIX, writers=[deployer])
    resolved = stack.resolve(statement.to_statement_json())
    assert "platform-deployer" in json.dumps(resolved["Condition"]["ArnNotLike"]["aws:PrincipalArn"])


def test_the_write_protection_of_a_prefix_that_is_not_one_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"NEURON082"):
        PublishedPlatform.write_protection("neuron/team", writers=[DEPLOYER])


def test_two_clusters_of_one_stack_publishing_one_prefix_are_refused_naming_the_stack() -> None:
    stack = Stack(App(analytics_reporting=False), "Platform")
    NeuronCluster(stack, "First", vpc=imported_vpc(stack)).publish(PREFIX)
    with pytest.raises(NeuronConfigurationError, match=r"Platform/Second/Published: .*two constructs of Platform"):
        NeuronCluster(stack, "Second", vpc=imported_vpc(stack)).publish(PREFIX)


def test_stacks_in_two_regions_may_publish_one_prefix_and_one_cluster_publishing_twice_is_one_set() -> None:
    app = App(analytics_reporting=False)
    for region in ("us-east-1", "eu-west-1"):
        stack = Stack(app, f"Platform-{region}", env=Environment(account="111122223333", region=region))
        cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
        assert cluster.publish(PREFIX) is cluster.publish(PREFIX)
