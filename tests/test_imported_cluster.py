"""An ECS cluster that exists already, imported with ``NeuronCluster.from_cluster_attributes``.

One app: a platform stack imports cluster ``ml`` (which has the ``FARGATE`` provider already), gives it an
inf2.48xlarge Auto Scaling capacity, a Managed Instances capacity, monitoring and a load balancer; a model stack
runs a fleet and a Managed Instances service on it behind the load balancer. Nothing creates the cluster again.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import resources

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    NeuronCluster,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
)

pytestmark = pytest.mark.xdist_group("composition")
IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


@functools.cache
def synthesized() -> dict[str, dict[str, Any]]:
    """The platform's and the model's templates, and the stacks each depends on."""
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform")
    vpc = ec2.Vpc(platform, "Vpc", max_azs=2)
    cluster = NeuronCluster.from_cluster_attributes(
        platform, "Ml", cluster_name="ml", vpc=vpc, existing_capacity_providers=["FARGATE"]
    )
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    NeuronMonitoring(platform, "Monitoring", cluster=cluster)
    listener = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener
    model = Stack(app, "Model")
    fleet = NeuronFleet(model, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    embedding = fleet.add_model(
        "Embedding", devices_per_task=1, copies=2, image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)]
    )
    embedding.attach_to_listener(listener, conditions=[elbv2.ListenerCondition.path_patterns(["/embed/*"])], priority=2)
    task = ManagedNeuronTaskDefinition(model, "Llm", cpu=8192, memory_mib=16384)
    task.add_neuron_container("llm", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    llm = NeuronService(model, "LlmService", cluster=cluster, task_definition=task)
    llm.attach_to_listener(listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=1)
    assembly = app.synth()
    return {
        s.stack_name: {
            "template": s.template,
            "depends_on": sorted(d.id for d in s.dependencies if not d.id.endswith(".assets")),
        }
        for s in assembly.stacks
    }


@pytest.fixture
def platform() -> dict[str, Any]:
    return synthesized()["Platform"]["template"]  # type: ignore[no-any-return]


def test_the_cluster_is_not_created_again(platform: dict[str, Any]) -> None:
    assert not resources(platform, "AWS::ECS::Cluster")
    assert not resources(synthesized()["Model"]["template"], "AWS::ECS::Cluster")


def test_auto_scaling_capacity_is_associated_with_the_cluster_beside_its_providers(platform: dict[str, Any]) -> None:
    (association,) = resources(platform, "AWS::ECS::ClusterCapacityProviderAssociations").values()
    properties = association["Properties"]
    assert properties["Cluster"] == "ml"
    (provider,) = [
        id
        for id, r in resources(platform, "AWS::ECS::CapacityProvider").items()
        if "AutoScalingGroupProvider" in r["Properties"]
    ]
    assert properties["CapacityProviders"] == ["FARGATE", {"Ref": provider}]
    (template,) = resources(platform, "AWS::EC2::LaunchTemplate").values()
    user_data = json.dumps(template["Properties"]["LaunchTemplateData"]["UserData"])
    assert user_data.count("ECS_CLUSTER=ml") == 1  # its instances join the cluster


def test_managed_instances_capacity_is_created_in_the_cluster(platform: dict[str, Any]) -> None:
    (managed,) = [
        r["Properties"]
        for r in resources(platform, "AWS::ECS::CapacityProvider").values()
        if "ManagedInstancesProvider" in r["Properties"]
    ]
    assert managed["ClusterName"] == "ml"


def test_services_fleets_and_monitoring_run_on_the_cluster(platform: dict[str, Any]) -> None:
    (association,) = resources(platform, "AWS::ECS::ClusterCapacityProviderAssociations")
    daemons = resources(platform, "AWS::ECS::Daemon")
    assert daemons  # the Managed Instances capacity's monitoring
    for id, daemon in daemons.items():
        assert ":cluster/ml" in json.dumps(daemon["Properties"]["ClusterArn"]), id
        assert association in daemon["DependsOn"], id  # it names providers the association must hold first
    assert all(s["Properties"]["Cluster"] == "ml" for s in resources(platform, "AWS::ECS::Service").values())
    model = synthesized()["Model"]
    services = resources(model["template"], "AWS::ECS::Service")
    assert len(services) == 3  # two fleet copies and the LLM
    assert all(s["Properties"]["Cluster"] == "ml" for s in services.values())
    assert model["depends_on"] == ["Platform"]
    assert synthesized()["Platform"]["depends_on"] == []


def _import(stack: Stack, providers: list[str] | None, *strategy: str) -> NeuronCluster:
    return NeuronCluster.from_cluster_attributes(
        stack,
        "Ml",
        cluster_name="ml",
        vpc=ec2.Vpc(stack, "Vpc", max_azs=2),
        existing_capacity_providers=providers,
        default_capacity_provider_strategy=[
            ecs.CapacityProviderStrategy(capacity_provider=p, weight=1) for p in strategy
        ],
    )


@pytest.mark.parametrize(
    ("providers", "strategy", "message"),
    [
        (["FARGATE"], "legacy-cp", r"names 'legacy-cp', which the cluster's providers \['FARGATE'\]"),
        ([], "FARGATE", r"names 'FARGATE', which the cluster's providers \[\]"),
        (None, "FARGATE", r"names 'FARGATE', but existing_capacity_providers is not given"),
    ],
    ids=["provider-not-listed", "no-providers", "providers-not-given"],
)
def test_a_default_strategy_naming_a_provider_the_cluster_does_not_list_is_refused_at_the_call(
    providers: list[str] | None, strategy: str, message: str
) -> None:
    """GIVEN an imported cluster WHEN its default strategy names a provider its existing providers do not include
    THEN NEURON056 is raised at from_cluster_attributes, naming the provider and the list (ECS refuses a default
    strategy naming a provider the cluster is not associated with)."""
    from neuron_constructs import NeuronConfigurationError

    with pytest.raises(NeuronConfigurationError, match=rf"^Platform/Ml: default_capacity_provider_strategy {message}"):
        _import(Stack(App(analytics_reporting=False), "Platform"), providers, strategy)


def test_a_default_strategy_of_listed_providers_is_the_association_s() -> None:
    """GIVEN an imported cluster listing FARGATE and FARGATE_SPOT WHEN the default strategy names them THEN the
    association carries it; a strategy changed afterwards to name another provider is refused when the association is
    made."""
    from neuron_constructs import NeuronConfigurationError

    stack = Stack(App(analytics_reporting=False), "Platform")
    cluster = _import(stack, ["FARGATE", "FARGATE_SPOT"], "FARGATE", "FARGATE_SPOT")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=1)
    (association,) = cluster.capacity_associations
    assert [s.capacity_provider for s in association.default_capacity_provider_strategy] == [  # type: ignore[union-attr]
        "FARGATE",
        "FARGATE_SPOT",
    ]
    later = _import(Stack(App(analytics_reporting=False), "Other"), ["FARGATE"], "FARGATE")
    assert isinstance(later, NeuronCluster)
    later.default_capacity_provider_strategy.append(ecs.CapacityProviderStrategy(capacity_provider="legacy-cp"))  # type: ignore[attr-defined]
    with pytest.raises(NeuronConfigurationError, match=r"Other/Ml: default_capacity_provider_strategy names 'legacy"):
        later.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=1)
