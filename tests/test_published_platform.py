"""A platform another CDK app can find: published under stable Parameter Store names, imported in one call.

The team app's platform publishes its cluster, VPC and listener under ``/neuron/team``
(``NeuronLoadBalancer.publish``); the consumer app (``examples/consumer_app``) imports them with
``PublishedPlatform`` and serves a model on the platform's listener. Neither app's template names the other's stacks
or a generated export.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from conftest import ROOT, imported_vpc, resources
from hypothesis import given
from hypothesis import strategies as st
from test_composition import imports, synthesized, team

from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronLoadBalancer, PublishedPlatform
from neuron_constructs.checks.inputs import check_parameter_prefix
from neuron_constructs.compute.published import CLUSTER_PARAMETERS, LOAD_BALANCER_PARAMETERS

pytestmark = pytest.mark.xdist_group("composition")  # the team app's layouts are synthesized once, on one worker

_CONSUMER_APP = importlib.util.spec_from_file_location("consumer_app", ROOT / "examples" / "consumer_app" / "app.py")
assert _CONSUMER_APP is not None and _CONSUMER_APP.loader is not None
consumer = importlib.util.module_from_spec(_CONSUMER_APP)
_CONSUMER_APP.loader.exec_module(consumer)
PREFIX = team.PUBLISHED_AS
NAMES = [f"{PREFIX}/{name}" for name in (*CLUSTER_PARAMETERS.values(), *LOAD_BALANCER_PARAMETERS.values())]


@functools.cache
def consumer_synth() -> tuple[dict[str, Any], dict[str, Any]]:
    """The consumer app's template, and the validation report of its one synthesis, with cdk-nag's AwsSolutions pack
    on."""
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    app = App(analytics_reporting=False)
    consumer.build_app(app)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    return assembly.get_stack_by_name("Chat").template, report


def consumer_template() -> dict[str, Any]:
    return consumer_synth()[0]


def _published(template: dict[str, Any]) -> dict[str, Any]:
    """The template's Parameter Store parameters: name -> value."""
    return {
        p["Properties"]["Name"]: p["Properties"]["Value"] for p in resources(template, "AWS::SSM::Parameter").values()
    }


def _read(template: dict[str, Any]) -> dict[str, str]:
    """The Parameter Store names a template reads at deploy time: template parameter -> name."""
    return {
        id: p["Default"]
        for id, p in template.get("Parameters", {}).items()
        if p["Type"].startswith("AWS::SSM::Parameter::Value") and p["Default"].startswith("/neuron/")
    }


def _own_arn(service: str, published_arn: dict[str, str]) -> dict[str, Any]:
    """A published ARN as a consumer uses it: its resource part, in the consumer's own partition, Region and
    account."""
    resource = {"Fn::Select": [5, {"Fn::Split": [":", published_arn]}]}
    own = [{"Ref": "AWS::Partition"}, f":{service}:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}, ":"]
    return {"Fn::Join": ["", ["arn:", *own, resource]]}


def test_the_team_platform_publishes_every_stable_name_from_its_own_resources() -> None:
    """GIVEN the team app WHEN synthesized THEN its platform stack writes each name under /neuron/team, each value
    from the platform's own cluster, VPC, capacity and load balancer."""
    platform = synthesized(team.SPLITS[0])["Platform"]["template"]
    published = _published(platform)
    assert sorted(published) == sorted(NAMES)
    (cluster,) = resources(platform, "AWS::ECS::Cluster")
    (listener,) = [
        id
        for id, r in resources(platform, "AWS::ElasticLoadBalancingV2::Listener").items()
        if r["Properties"]["Port"] == 80
    ]
    assert published[f"{PREFIX}/cluster/name"] == {"Ref": cluster}
    assert published[f"{PREFIX}/load-balancer/listener-arn"] == {"Ref": listener}
    providers = [{"Ref": id} for id in resources(platform, "AWS::ECS::CapacityProvider")]
    assert sorted(map(json.dumps, published[f"{PREFIX}/cluster/capacity-providers"]["Fn::Join"][1])) == sorted(
        map(json.dumps, providers)
    )
    assert published[f"{PREFIX}/vpc/cidr"] == "10.0.0.0/16"
    subnets = json.dumps(published[f"{PREFIX}/vpc/subnets"])
    assert subnets.count("PrivateSubnet") == 2 and "PublicSubnet" not in subnets  # the capacity subnets


def test_publishing_leaves_the_platform_free_of_its_consumers() -> None:
    """The platform stack still imports nothing and depends on no stack (the consumer reads it, never the reverse)."""
    stacks = synthesized(team.SPLITS[0])
    assert stacks["Platform"]["depends_on"] == [] and imports(stacks["Platform"]["template"]) == set()


def test_the_consumer_names_the_published_parameters_never_a_stack_or_a_generated_export() -> None:
    template = consumer_template()
    assert imports(template) == set()
    assert "ExportsOutput" not in json.dumps(template)
    assert sorted(_read(template).values()) == sorted(
        f"{PREFIX}/{n}"
        for n in ("cluster/name", "vpc/attributes", "load-balancer/listener-arn", "load-balancer/security-group")
    )
    body = json.dumps(template["Resources"])  # each one used: CloudFormation warns of a parameter nothing refers to
    assert all(f'"Ref": "{id}"' in body for id in _read(template))


def test_the_consumer_s_service_runs_in_the_platform_s_cluster_on_capacity_of_its_own() -> None:
    template = consumer_template()
    by_name = {name: id for id, name in _read(template).items()}
    cluster = {"Ref": by_name[f"{PREFIX}/cluster/name"]}
    assert not resources(template, "AWS::ECS::Cluster")
    (service,) = resources(template, "AWS::ECS::Service").values()
    assert service["Properties"]["Cluster"] == cluster
    (provider_id, provider), *_ = resources(template, "AWS::ECS::CapacityProvider").items()
    assert provider["Properties"]["ClusterName"] == cluster  # Managed Instances: created in the platform's cluster
    assert service["Properties"]["CapacityProviderStrategy"] == [
        {"CapacityProvider": {"Ref": provider_id}, "Weight": 1}
    ]
    subnets = json.dumps(service["Properties"]["NetworkConfiguration"])
    assert by_name[f"{PREFIX}/vpc/attributes"] in subnets  # the platform's capacity subnets


def test_the_consumer_adds_its_own_rule_to_the_platform_s_listener_and_opens_only_its_port() -> None:
    template = consumer_template()
    by_name = {name: id for id, name in _read(template).items()}
    (rule,) = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    published_arn = {"Ref": by_name[f"{PREFIX}/load-balancer/listener-arn"]}
    assert rule["Properties"]["ListenerArn"] == _own_arn("elasticloadbalancing", published_arn)
    assert rule["Properties"]["Priority"] == 30
    assert rule["Properties"]["Conditions"][0]["PathPatternConfig"]["Values"] == ["/chat/*"]
    group = {"Ref": by_name[f"{PREFIX}/load-balancer/security-group"]}
    (egress,) = resources(template, "AWS::EC2::SecurityGroupEgress").values()
    assert egress["Properties"]["GroupId"] == group
    assert (egress["Properties"]["FromPort"], egress["Properties"]["ToPort"]) == (8080, 8080)
    (ingress,) = resources(template, "AWS::EC2::SecurityGroupIngress").values()
    assert ingress["Properties"]["SourceSecurityGroupId"] == group


def test_the_team_app_s_priorities_leave_the_consumer_s_free() -> None:
    stacks = synthesized(team.SPLITS[0])
    held = {
        r["Properties"]["Priority"]
        for s in stacks.values()
        for r in resources(s["template"], "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    }
    (rule,) = resources(consumer_template(), "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    assert rule["Properties"]["Priority"] not in held


def _stack() -> Stack:
    return Stack(App(analytics_reporting=False), "Test")


def test_a_cluster_only_consumer_reads_no_load_balancer_name_and_every_name_it_reads_is_used() -> None:
    """GIVEN a platform that published its cluster alone WHEN another app imports the cluster THEN its template
    reads only cluster and VPC names, and refers to each (CloudFormation warns of a parameter nothing uses)."""
    stack = _stack()
    cluster = NeuronCluster.from_published(stack, "Ml", prefix="/neuron/ml")
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    template = App.of(stack).synth().get_stack_by_name("Test").template  # type: ignore[union-attr]
    read = _read(template)
    assert sorted(read.values()) == ["/neuron/ml/cluster/name", "/neuron/ml/vpc/attributes"]
    body = json.dumps(template["Resources"])
    assert all(f'"Ref": "{id}"' in body for id in read)


def test_capacity_added_after_publishing_is_published_and_none_reads_none() -> None:
    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    parameters = cluster.publish("/neuron/t")
    assert cluster.publish("/neuron/t") is parameters  # once per prefix
    empty = Stack(App(analytics_reporting=False), "Empty")
    NeuronCluster(empty, "C", vpc=imported_vpc(empty)).publish("/neuron/e")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=1)
    published = _published(App.of(stack).synth().get_stack_by_name("Test").template)  # type: ignore[union-attr]
    (provider,) = resources(App.of(stack).synth().get_stack_by_name("Test").template, "AWS::ECS::CapacityProvider")  # type: ignore[union-attr]
    assert published["/neuron/t/cluster/capacity-providers"] == {"Ref": provider}
    nothing = _published(App.of(empty).synth().get_stack_by_name("Empty").template)  # type: ignore[union-attr]
    assert nothing["/neuron/e/cluster/capacity-providers"] == "none"


def test_a_load_balancer_publishes_its_cluster_with_it_once() -> None:
    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    load_balancer = NeuronLoadBalancer(stack, "Lb", cluster=cluster)
    everything = load_balancer.publish("/neuron/t")
    assert sorted(everything) == sorted(
        f"/neuron/t/{n}" for n in (*CLUSTER_PARAMETERS.values(), *LOAD_BALANCER_PARAMETERS.values())
    )
    assert all(everything[name] is p for name, p in cluster.publish("/neuron/t").items())


def test_zones_sets_how_many_subnets_the_consumer_reads() -> None:
    stack = _stack()
    platform = PublishedPlatform(stack, "Platform", prefix="/neuron/t", zones=3)
    assert len(platform.vpc.private_subnets) == 3
    with pytest.raises(NeuronConfigurationError, match=r"zones=0.*NEURON027"):
        PublishedPlatform(stack, "None", prefix="/neuron/t", zones=0)


BAD_PREFIXES = {
    "/aws/team": r"begins with 'aws'",
    "/SSM-team": r"begins with 'SSM'",
    "neuron/team": r"does not begin with a slash",
    "/neuron/team/": r"ends with one",
    "/neuron//team": r"has the level ''",
    "/neuron/my team": r"has the level 'my team'",
    "/" + "/".join("l" * 14): r"16 levels deep",
    "/" + "n" * 940: r"too long with its ARN",
}


@pytest.mark.parametrize("prefix", list(BAD_PREFIXES))
def test_a_prefix_parameter_store_refuses_is_refused_at_the_call_on_both_sides(prefix: str) -> None:
    """NEURON082 at ``publish`` and at the import, naming the construct, what is wrong and the fix."""
    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    for call, path in (
        (lambda: cluster.publish(prefix), "Test/C"),
        (lambda: NeuronLoadBalancer(stack, "Lb", cluster=cluster).publish(prefix), "Test/Lb"),
        (lambda: PublishedPlatform(stack, "P", prefix=prefix), "Test/P"),
    ):
        with pytest.raises(NeuronConfigurationError) as raised:
            call()
        message = str(raised.value)
        assert message.startswith(f"{path}: prefix=")
        assert re.search(BAD_PREFIXES[prefix], message), message
        assert "[NEURON082: " in message and "Fix: pass prefix='/neuron/<team>'" in message


_LEVEL = st.text(alphabet="abcXYZ019_.-", min_size=1, max_size=12).filter(
    lambda s: not s.lower().startswith(("aws", "ssm"))
)


@given(st.lists(_LEVEL, min_size=1, max_size=8))
def test_any_prefix_of_parameter_store_levels_is_accepted(levels: list[str]) -> None:
    check_parameter_prefix("P", "/" + "/".join(levels), ["cluster/name"])


@given(st.text(max_size=60))
def test_any_other_text_is_accepted_only_when_it_is_such_a_prefix(prefix: str) -> None:
    valid = (
        bool(re.fullmatch(r"(/[A-Za-z0-9_.-]+)+", prefix))
        and not prefix[1:4].lower().startswith(("aws", "ssm"))
        and prefix.count("/") + 2 <= 15  # with cluster/name, at most 15 levels
    )
    try:
        check_parameter_prefix("P", prefix, ["cluster/name"])
    except NeuronConfigurationError as error:
        assert not valid, error
        assert "[NEURON082: " in str(error)
    else:
        assert valid, prefix


def test_a_published_vpc_imports_its_subnets_without_route_table_warnings() -> None:
    stack = _stack()
    cluster = NeuronCluster.from_published(stack, "Ml", prefix="/neuron/ml")
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    messages = App.of(stack).synth().get_stack_by_name("Test").messages  # type: ignore[union-attr]
    assert len(cluster.vpc.private_subnets) == 2
    assert not [m for m in messages if "routeTableId" in json.dumps(m.entry.data)]


def test_the_team_apps_page_shows_the_consumer_app_as_it_is_and_the_platform_s_publishing_line() -> None:
    """The worked second app on the docs site is the file the tests synthesize and deploy, byte for byte."""
    page = (ROOT / "docs" / "team-apps.md").read_text()
    consumer_source = (ROOT / "examples" / "consumer_app" / "app.py").read_text()
    assert f"```python\n{consumer_source}```\n" in page
    assert "self.load_balancer.publish(PUBLISHED_AS)" in (ROOT / "examples" / "team_app" / "app.py").read_text()
    assert "self.load_balancer.publish(PUBLISHED_AS)" in page


def test_the_consumer_app_passes_cdk_nag_s_aws_solutions_pack() -> None:
    report = consumer_synth()[1]
    assert {p["pluginName"] for p in report["pluginReports"]} >= {"AwsSolutions"}
    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success" and plugin["violations"] == [], plugin["pluginName"]
