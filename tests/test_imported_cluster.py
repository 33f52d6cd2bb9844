"""An ECS cluster that exists already, imported with ``NeuronCluster.from_cluster_attributes``.

A model stack in another CDK app is refused at the call, pointing to the import; the import works there.

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
from aws_cdk import aws_sns as sns
from conftest import imported_vpc, resources

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    NeuronTrainingQueue,
    SlicedNeuronService,
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


# --- a model stack in another CDK app ----------------------------------------------------------------------------


def _platform() -> tuple[NeuronCluster, Any]:
    """A platform app: a cluster with inf2.48xlarge capacity and a load balancer."""
    platform = Stack(App(analytics_reporting=False), "Platform")
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    return cluster, NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener


def _service_in(model: Stack, cluster: NeuronCluster) -> NeuronService:
    task = ManagedNeuronTaskDefinition(model, "Llm", cpu=8192, memory_mib=16384)
    task.add_neuron_container("llm", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    return NeuronService(model, "LlmService", cluster=cluster, task_definition=task)


def _imported_cluster(model: Stack) -> NeuronCluster:
    vpc = ec2.Vpc.from_vpc_attributes(
        model,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        vpc_cidr_block="10.0.0.0/16",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    )
    cluster = NeuronCluster.from_cluster_attributes(model, "Ml", cluster_name="ml", vpc=vpc)
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    return cluster


def _imported_listener(model: Stack) -> Any:
    return elbv2.ApplicationListener.from_application_listener_attributes(
        model,
        "Listener",
        listener_arn="arn:aws:elasticloadbalancing:us-east-1:111122223333:listener/app/platform/1/2",
        security_group=ec2.SecurityGroup.from_security_group_id(model, "LbGroup", "sg-0123456789abcdef0", mutable=True),
    )


ROUTE = {"conditions": [elbv2.ListenerCondition.path_patterns(["/v1/*"])], "priority": 1}

ACROSS_APPS: dict[str, tuple[Any, str, str]] = {
    # what the model app does with the platform app's objects: (call, what is refused, the import it points to)
    "service": (lambda m, c, _: _service_in(m, c), "Model/LlmService", "NeuronCluster.from_cluster_attributes"),
    "sliced service": (
        lambda m, c, _: SlicedNeuronService(
            m, "Sliced", cluster=c, instance_type="inf2.48xlarge", devices_per_task=1, image=IMAGE
        ),
        "Model/Sliced",
        "NeuronCluster.from_cluster_attributes",
    ),
    "fleet": (
        lambda m, c, _: NeuronFleet(m, "Fleet", cluster=c, instance_type="inf2.48xlarge"),
        "Model/Fleet",
        "NeuronCluster.from_cluster_attributes",
    ),
    "load balancer": (
        lambda m, c, _: NeuronLoadBalancer(m, "Lb", cluster=c),
        "Model/Lb",
        "NeuronCluster.from_cluster_attributes",
    ),
    "monitoring": (
        lambda m, c, _: NeuronMonitoring(m, "Monitoring", cluster=c),
        "Model/Monitoring",
        "NeuronCluster.from_cluster_attributes",
    ),
    "attach to the platform's listener": (
        lambda m, _, listener: _service_in(m, _imported_cluster(m)).attach_to_listener(listener, **ROUTE),
        "Model/LlmService/TargetGroup",
        "elbv2.ApplicationListener.from_application_listener_attributes",
    ),
    "monitoring alarms to the platform's topic": (
        lambda m, c, _: NeuronMonitoring(
            m, "Monitoring", cluster=_imported_cluster(m), alarm_topic=sns.Topic(Stack.of(c), "Alarms")
        ),
        "Model/Monitoring",
        "sns.Topic.from_topic_arn",
    ),
    "training queue notifying the platform's topic": (
        lambda m, c, _: NeuronTrainingQueue(
            m, "Queue", instance_type="trn1.32xlarge", max_nodes=2, notifications=sns.Topic(Stack.of(c), "Jobs")
        ),
        "Model/Queue",
        "sns.Topic.from_topic_arn",
    ),
    "training queue on the platform's VPC": (
        lambda m, c, _: NeuronTrainingQueue(m, "Queue", instance_type="trn1.32xlarge", max_nodes=2, vpc=c.vpc),
        "Model/Queue",
        "ec2.Vpc.from_lookup",
    ),
}


@pytest.mark.parametrize("case", list(ACROSS_APPS))
def test_a_model_stack_in_another_app_is_refused_at_the_call_pointing_to_the_import(case: str) -> None:
    """aws-cdk-lib would fail only at synth, with a bare CannotReferenceAcrossApps naming neither part."""
    cluster, listener = _platform()
    model = Stack(App(analytics_reporting=False), "Model")
    call, path, how = ACROSS_APPS[case]
    with pytest.raises(NeuronConfigurationError) as raised:
        call(model, cluster, listener)
    message = str(raised.value)
    assert message.startswith(f"{path}: ")
    assert "in stack Model of one CDK app, and " in message and "in stack Platform of another" in message
    assert "[NEURON077: " in message and "Fix: make both in one app, or import " in message
    assert how in message


def test_the_import_the_refusal_points_to_works_in_the_model_s_own_app() -> None:
    """The model app imports the cluster and the listener by name and ARN: it synthesizes alone, and its listener
    rule names the platform's listener by its ARN."""
    model = Stack(App(analytics_reporting=False), "Model")
    service = _service_in(model, _imported_cluster(model))
    service.attach_to_listener(_imported_listener(model), **ROUTE)
    template = App.of(model).synth().get_stack_by_name("Model").template  # type: ignore[union-attr]
    (rule,) = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    assert rule["Properties"]["ListenerArn"].endswith("listener/app/platform/1/2")
    assert not resources(template, "AWS::ECS::Cluster")
