"""Scaling a language model on what its users wait for: ``scale_on_waiting_requests`` tracks the requests waiting per
copy that each copy's engine-metrics sidecar writes, with the scale-out cooldown sized to the model's stated time to
serve; the platform and the model in stacks of their own."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Template
from conftest import imported_vpc

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    Rollout,
    RolloutAlarms,
    Startup,
    VllmServer,
)
from neuron_constructs.knowledge.container_images import VLLM_TRN2
from neuron_constructs.programs.metric_publisher import NAMESPACE

ENV = {"account": "111111111111", "region": "us-east-2"}


def _model(
    *, startup: Startup | None = None, engine_metrics: bool = True, rollout: Rollout | None = None
) -> tuple[Stack, Stack, NeuronService]:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=4)
    model = Stack(app, "Model", env=ENV)
    task = ManualNeuronTaskDefinition(model, "Task", instance_type="trn2.48xlarge", devices=[0], memory_mib=65536)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        server=VllmServer(model="meta-llama/Llama-3.1-8B-Instruct", served_model_name="chat"),
        environment={"VLLM_CACHE_ROOT": "/var/cache/vllm"},
        startup=startup,
    )
    service = NeuronService(
        model, "Llm", cluster=cluster, task_definition=task, engine_metrics=engine_metrics, rollout=rollout
    )
    return platform, model, service


def _policy(model: Stack) -> dict[str, Any]:
    (policy,) = Template.from_stack(model).find_resources("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    return policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]  # type: ignore[no-any-return]


def test_the_model_scales_on_the_requests_waiting_per_copy_its_copies_write() -> None:
    """GIVEN a vLLM Neuron model with its engine-metrics sidecar WHEN it scales on waiting requests THEN target
    tracking follows WaitingRequests of the model (an average over its copies, so per copy) in the library's
    namespace, and the model's stack alone holds the policy."""
    platform, model, service = _model()
    target = service.scale_on_waiting_requests(per_copy=4, max_count=3)
    configuration = _policy(model)
    metric = configuration["CustomizedMetricSpecification"]
    assert (metric["MetricName"], metric["Namespace"], metric["Statistic"]) == ("WaitingRequests", NAMESPACE, "Average")
    dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
    assert dimensions["Model"] == "chat" == service.model_name and "ClusterName" in dimensions
    assert configuration["TargetValue"] == 4
    assert (configuration["ScaleOutCooldown"], configuration["ScaleInCooldown"]) == (60, 1800)
    assert target is service.scalable_target
    assert Template.from_stack(platform).find_resources("AWS::ApplicationAutoScaling::ScalingPolicy") == {}


def test_the_scale_out_cooldown_is_the_model_s_stated_time_to_serve() -> None:
    """A copy added serves only after its instance, image, compile and load: before then the queue it is meant to
    drain is still there, and a shorter cooldown would add copies for the same queue."""
    startup = Startup(
        image_pull=Duration.minutes(2),
        compile=Duration.minutes(9),
        cache_fetch=Duration.minutes(1),
        load=Duration.minutes(1),
    )
    _, model, service = _model(startup=startup)
    service.scale_on_waiting_requests(per_copy=2, max_count=3)
    assert _policy(model)["ScaleOutCooldown"] == (2 + 9 + 1) * 60  # a cache miss: the compile, not the fetch
    _, model, service = _model(startup=startup)
    service.scale_on_waiting_requests(per_copy=2, max_count=3, scale_out_cooldown=Duration.minutes(3))
    assert _policy(model)["ScaleOutCooldown"] == 180


def test_a_model_without_the_sidecar_cannot_scale_on_what_it_never_writes() -> None:
    _, _, service = _model(engine_metrics=False)
    with pytest.raises(
        NeuronConfigurationError, match=r"Model/Llm: the model has no engine-metrics sidecar.*NEURON178"
    ):
        service.scale_on_waiting_requests(per_copy=4, max_count=3)


def _blue_green(alarms: RolloutAlarms, *, engine_metrics: bool = True) -> tuple[Stack, NeuronService]:
    _, model, service = _model(engine_metrics=engine_metrics, rollout=Rollout.blue_green(alarms=alarms))
    return model, service


def test_a_rollout_rolls_back_when_the_worst_copy_s_time_to_first_token_or_between_tokens_reaches_its_limit() -> None:
    """Blue and green write under one model name: the alarms take the worst copy's mean (Maximum), which a healthy
    blue cannot average away, and the service's deployment watches them."""
    alarms = RolloutAlarms(time_to_first_token=Duration.seconds(2), inter_token_latency=Duration.millis(150))
    model, service = _blue_green(alarms)
    found = Template.from_stack(model).find_resources("AWS::CloudWatch::Alarm")
    names = {"TimeToFirstToken", "InterTokenLatency"}
    properties = [r["Properties"] for r in found.values()]
    latency = {p["MetricName"]: p for p in properties if p.get("MetricName") in names}
    assert set(latency) == {"TimeToFirstToken", "InterTokenLatency"}
    assert latency["TimeToFirstToken"]["Threshold"] == 2 and latency["InterTokenLatency"]["Threshold"] == 0.15
    assert {p["Statistic"] for p in latency.values()} == {"Maximum"}
    assert {p["ComparisonOperator"] for p in latency.values()} == {"GreaterThanOrEqualToThreshold"}
    watched = {a.node.id for a in service.deployment_alarms}
    assert {"RolloutTimeToFirstToken", "RolloutInterTokenLatency"} <= watched


def test_latency_limits_need_the_sidecar_and_a_literal_duration_within_an_hour() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"RolloutAlarms\(time_to_first_token=...\).*NEURON178"):
        _blue_green(RolloutAlarms(time_to_first_token=Duration.seconds(2)), engine_metrics=False)
    with pytest.raises(NeuronConfigurationError, match=r"inter_token_latency=2 hours"):
        RolloutAlarms(inter_token_latency=Duration.hours(2))


def test_every_slice_tracks_the_model_s_waiting_requests_per_copy_from_the_model_s_stack() -> None:
    from neuron_constructs import SlicedNeuronService

    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=2)
    model = Stack(app, "Model", env=ENV)
    sliced = SlicedNeuronService(
        model,
        "Chat",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        devices_per_task=8,
        environment={"VLLM_CACHE_ROOT": "/var/cache/vllm"},
        server=VllmServer(model="meta-llama/Llama-3.1-8B-Instruct"),
        model_name="chat",
    )
    targets = sliced.scale_on_waiting_requests(per_copy=3, max_count=2)
    policies = Template.from_stack(model).find_resources("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    configurations = [p["Properties"]["TargetTrackingScalingPolicyConfiguration"] for p in policies]
    assert len(targets) == len(configurations) == 2  # one per slice, both on the model's metric
    for configuration in configurations:
        metric = configuration["CustomizedMetricSpecification"]
        assert metric["MetricName"] == "WaitingRequests" and configuration["TargetValue"] == 3
        assert {d["Name"]: d["Value"] for d in metric["Dimensions"]}["Model"] == "chat"
    assert [d.id for d in platform.dependencies] == []


def test_the_model_scales_on_its_mean_time_to_first_token_in_fractions_of_a_second() -> None:
    _, model, service = _model()
    service.scale_on_time_to_first_token(target=Duration.millis(800), max_count=3)
    configuration = _policy(model)
    metric = configuration["CustomizedMetricSpecification"]
    assert (metric["MetricName"], metric["Statistic"], configuration["TargetValue"]) == (
        "TimeToFirstToken",
        "Average",
        0.8,
    )
    with pytest.raises(NeuronConfigurationError, match=r"target=2 hours.*NEURON027"):
        _model()[2].scale_on_time_to_first_token(target=Duration.hours(2), max_count=3)
    with pytest.raises(NeuronConfigurationError, match=r"no copy writes TimeToFirstToken.*NEURON178"):
        _model(engine_metrics=False)[2].scale_on_time_to_first_token(target=Duration.seconds(1), max_count=3)


def _fleet_with(alarms: RolloutAlarms, *, engine_metrics: bool) -> Stack:
    from neuron_constructs import NeuronFleet

    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=2)
    model = Stack(app, "Model", env=ENV)
    fleet = NeuronFleet(model, "Fleet", cluster=cluster, instance_type="trn2.48xlarge", instances=2)
    fleet.add_model(
        "Chat",
        devices_per_task=8,
        copies=2,
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        environment={"VLLM_CACHE_ROOT": "/var/cache/vllm"},
        server=VllmServer(model="meta-llama/Llama-3.1-8B-Instruct"),
        model_name="chat",
        rollout=Rollout.canary(percent=50, alarms=alarms),
        engine_metrics=engine_metrics,
    )
    return model


def test_every_copy_of_a_fleet_model_rolls_back_on_the_model_s_time_to_first_token() -> None:
    model = _fleet_with(RolloutAlarms(time_to_first_token=Duration.seconds(2)), engine_metrics=True)
    alarms = Template.from_stack(model).find_resources("AWS::CloudWatch::Alarm").values()
    assert [
        a["Properties"]["Threshold"] for a in alarms if a["Properties"].get("MetricName") == "TimeToFirstToken"
    ] == [2]
    services = Template.from_stack(model).find_resources("AWS::ECS::Service").values()
    watched = [s["Properties"]["DeploymentConfiguration"]["Alarms"]["AlarmNames"] for s in services]
    assert len(watched) == 2 and all(len(names) >= 1 for names in watched)
    with pytest.raises(NeuronConfigurationError, match=r"the model's copies have none.*NEURON178"):
        _fleet_with(RolloutAlarms(time_to_first_token=Duration.seconds(2)), engine_metrics=False)
