"""Idle models that cost nothing (``NeuronService.scale_to_zero``): the alarms and policies read from the template of
a model stack apart from its platform, their metric math run minute by minute against random traffic, and each input
refused with its rule."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import imported_vpc, resources
from hypothesis import given
from hypothesis import strategies as st

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronLoadBalancer,
    NeuronService,
    Rollout,
    SmokeTest,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.container_images import VLLM

ENV = {"account": "111111111111", "region": "us-east-1"}
IDLE_MINUTES = 20


def _platform(app: App, *, internet_facing: bool = False, container_insights: bool = True) -> dict[str, Any]:
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Neuron", container_insights=container_insights, vpc=imported_vpc(platform))
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=4)
    balancer = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster, internet_facing=internet_facing)
    return {"cluster": cluster, "capacity": capacity, "listener": balancer.listener}


def _model(
    stack: Stack, platform: dict[str, Any], *, rollout: Rollout | None = None, attach: bool = True, device: int = 0
) -> Any:
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.48xlarge", devices=[device], memory_mib=8192)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        port_mappings=[ecs.PortMapping(container_port=8000)],
    )
    service = NeuronService(
        stack, "Dev", cluster=platform["cluster"], task_definition=task, capacity=platform["capacity"], rollout=rollout
    )
    if attach:
        service.attach_to_listener(
            platform["listener"],
            conditions=[elbv2.ListenerCondition.path_patterns([f"/dev{device}/*"])],
            priority=30 + device,
        )
    return service


@functools.cache
def _synthesized() -> dict[str, Any]:
    app = App(analytics_reporting=False)
    platform = _platform(app)
    model = Stack(app, "DevModel", env=ENV)
    service = _model(model, platform, rollout=Rollout.blue_green())
    service.scale_on_waiting_requests(per_copy=2, min_count=0, max_count=2)
    made = service.scale_to_zero(idle=Duration.minutes(IDLE_MINUTES))
    assembly = app.synth()
    stack = assembly.get_stack_by_name("DevModel")
    return {
        "template": stack.template,
        "depends_on": sorted(d.id for d in stack.dependencies if not d.id.endswith(".assets")),
        "made": made,
    }


def _alarm(description_start: str) -> dict[str, Any]:
    (alarm,) = [
        a["Properties"]
        for a in resources(_synthesized()["template"], "AWS::CloudWatch::Alarm").values()
        if str(a["Properties"].get("AlarmDescription", "")).startswith(description_start)
    ]
    return alarm


def _queries(alarm: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
    stats = {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}
    return expression, stats


def _policy(alarm: dict[str, Any]) -> dict[str, Any]:
    (action,) = alarm["AlarmActions"]
    return resources(_synthesized()["template"], "AWS::ApplicationAutoScaling::ScalingPolicy")[action["Ref"]][
        "Properties"
    ]


def test_the_model_stack_depends_on_the_platform_only_and_its_target_reaches_zero() -> None:
    assert _synthesized()["depends_on"] == ["Platform"]
    (target,) = resources(_synthesized()["template"], "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert target["Properties"]["MinCapacity"] == 0 and target["Properties"]["MaxCapacity"] == 2
    tracking = [
        p["Properties"]
        for p in resources(_synthesized()["template"], "AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if p["Properties"]["PolicyType"] == "TargetTrackingScaling"
    ]
    # THEN waiting requests (0 whenever the batch has room) scale out only: the idle rule alone scales in
    assert [t["TargetTrackingScalingPolicyConfiguration"]["DisableScaleIn"] for t in tracking] == [True]


def test_the_idle_alarm_counts_both_target_groups_requests_while_a_copy_is_healthy_and_sets_zero() -> None:
    alarm = _alarm("A healthy copy of the model received no request")
    expression, stats = _queries(alarm)
    assert expression == (
        "IF((FILL(healthy0, 0) + FILL(healthy1, 0)) >= 1 AND (FILL(requests0, 0) + FILL(requests1, 0)) < 1, 1, 0)"
    )
    for index in ("0", "1"):  # blue's and green's target groups: ECS swaps them at each deployment
        for name, metric_name, statistic in (
            ("requests", "RequestCount", "Sum"),
            ("healthy", "HealthyHostCount", "Minimum"),
        ):
            stat = stats[name + index]
            assert (stat["Metric"]["MetricName"], stat["Stat"]) == (metric_name, statistic)
            assert {d["Name"] for d in stat["Metric"]["Dimensions"]} == {"LoadBalancer", "TargetGroup"}
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == IDLE_MINUTES
    assert alarm["Threshold"] == 1 and alarm["TreatMissingData"] == "notBreaching"
    policy = _policy(alarm)["StepScalingPolicyConfiguration"]
    assert policy["AdjustmentType"] == "ExactCapacity"
    assert policy["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 0}]


def test_the_wake_alarm_reads_the_load_balancer_s_503s_while_no_copy_runs_and_sets_one() -> None:
    alarm = _alarm("The load balancer answered 503")
    expression, stats = _queries(alarm)
    assert expression == "IF(FILL(e503, 0) >= 1 AND FILL(running, 0) < 1, 1, 0)"
    running = stats["running"]["Metric"]
    assert (running["Namespace"], running["MetricName"]) == ("ECS/ContainerInsights", "RunningTaskCount")
    assert {d["Name"] for d in running["Dimensions"]} == {"ClusterName", "ServiceName"}
    metric = stats["e503"]["Metric"]
    assert (metric["Namespace"], metric["MetricName"]) == ("AWS/ApplicationELB", "HTTPCode_ELB_503_Count")
    assert [d["Name"] for d in metric["Dimensions"]] == ["LoadBalancer"]  # no TargetGroup dimension exists for it
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 1
    policy = _policy(alarm)["StepScalingPolicyConfiguration"]
    assert policy["AdjustmentType"] == "ExactCapacity"
    assert policy["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]


def _evaluate(expression: str, values: dict[str, float | None]) -> float:
    """One minute of CloudWatch metric math of the forms these alarms use: IF, FILL, AND, comparisons, sums."""
    python = re.sub(r"FILL\((\w+), 0\)", r"_fill(\1)", expression).replace(" AND ", " and ")
    python = python.replace("IF(", "_if(")
    scope = {"_fill": lambda v: 0.0 if v is None else v, "_if": lambda c, a, b: a if c else b, **values}
    return float(eval(python, {"__builtins__": {}}, scope))


@given(st.lists(st.integers(0, 3), min_size=1, max_size=180), st.integers(0, 2 * IDLE_MINUTES))
def test_a_copy_goes_exactly_after_a_whole_idle_time_healthy_and_never_while_it_starts(
    traffic: list[int], start_minutes: int
) -> None:
    """Minute by minute: ``traffic`` requests arrive; a copy runs ``start_minutes`` before it is healthy, and until
    then, as with no copy, requests get 503s (not counted per target group). The alarms' own expressions and periods
    decide the desired count, which takes effect the next minute."""
    idle_expression, _ = _queries(_alarm("A healthy copy of the model received no request"))
    wake_expression, _ = _queries(_alarm("The load balancer answered 503"))
    running, started, breaching, quiet = 1, start_minutes, 0, 0  # the first copy was deployed healthy
    for requests in traffic:
        healthy = running and started >= start_minutes
        served = requests if healthy else 0
        refused = requests - served
        quiet = quiet + 1 if healthy and not served else 0  # minutes a healthy copy received no request
        idle = _evaluate(
            idle_expression,
            {"healthy0": 1 if healthy else None, "healthy1": None, "requests0": served or None, "requests1": None},
        )
        breaching = breaching + 1 if idle >= 1 else 0
        wake = _evaluate(wake_expression, {"e503": refused or None, "running": running})
        desired = 0 if breaching >= IDLE_MINUTES else running
        desired = 1 if wake >= 1 else desired
        # THEN a copy goes exactly when it was healthy and unasked a whole idle time: never sooner, never while starting
        assert (running == 1 and desired == 0) == (quiet >= IDLE_MINUTES)
        assert not (refused and not running) or desired == 1  # THEN a request that found no copy wakes one
        started = started + 1 if running and desired else 0
        running = desired


def _refused(build: Any, text: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=r.SCALE_TO_ZERO.id) as raised:
        build()
    assert text in str(raised.value)


def test_what_no_request_could_wake_is_refused_at_the_call() -> None:
    app = App(analytics_reporting=False)
    platform = _platform(app)
    stack = Stack(app, "Model", env=ENV)
    smoke = _model(stack, platform, rollout=Rollout.blue_green(smoke_test=SmokeTest("/health")))
    smoke.scale_on_requests(requests_per_target=10, min_count=0, max_count=2)
    _refused(smoke.scale_to_zero, "whose smoke test needs a running copy")
    unattached = _model(Stack(app, "Loose", env=ENV), platform, attach=False, device=1)
    unattached.scale_on_neuron_utilization(min_count=0, max_count=2)
    _refused(unattached.scale_to_zero, "no Application Load Balancer target group")
    _refused(lambda: unattached.scale_to_zero(idle=Duration.minutes(1441)), "idle=1 day 1 minute")
    _refused(lambda: unattached.scale_to_zero(idle=Duration.seconds(90)), "idle=")


def test_a_production_listener_needs_the_opt_in_and_container_insights_must_be_on() -> None:
    app = App(analytics_reporting=False)
    public = _platform(app, internet_facing=True)
    service = _model(Stack(app, "Public", env=ENV), public)
    service.scale_on_waiting_requests(per_copy=2, min_count=0, max_count=2)
    _refused(service.scale_to_zero, "a production listener (internet-facing, HTTPS, or imported)")
    assert service.scale_to_zero(on_production_listener=True).wake_alarm is not None
    _refused(service.scale_to_zero, "scale_to_zero was already called")
    dark = App(analytics_reporting=False)
    unlit = _model(Stack(dark, "Dark", env=ENV), _platform(dark, container_insights=False))
    unlit.scale_on_waiting_requests(per_copy=2, min_count=0, max_count=2)
    _refused(unlit.scale_to_zero, "whose Container Insights is off")


def test_a_zero_minimum_without_scale_to_zero_is_refused_at_synth_and_no_wake_is_warned() -> None:
    app = App(analytics_reporting=False)
    platform = _platform(app)
    stack = Stack(app, "Model", env=ENV)
    _model(stack, platform).scale_on_waiting_requests(per_copy=2, min_count=0, max_count=2)
    with pytest.raises(RuntimeError, match=r"min_count=0\) and no scale_to_zero.*NEURON182"):
        app.synth()
    quiet = App(analytics_reporting=False)
    service = _model(Stack(quiet, "Quiet", env=ENV), _platform(quiet))
    service.scale_on_waiting_requests(per_copy=2, min_count=0, max_count=2)
    made = service.scale_to_zero(wake_on_request=False)
    assert made.wake_alarm is None and made.wake_action is None
    warnings = [str(m.entry.data) for s in quiet.synth().stacks for m in s.messages]
    assert any(r.WAKE_BY_HAND.id in w for w in warnings)


def test_a_fleet_model_is_refused_a_zero_minimum() -> None:
    from neuron_constructs import NeuronFleet

    app = App(analytics_reporting=False)
    platform = _platform(app)
    fleet = NeuronFleet(
        Stack(app, "Fleet", env=ENV),
        "Fleet",
        cluster=platform["cluster"],
        instance_type="inf2.48xlarge",
        capacity=platform["capacity"],
    )
    model = fleet.add_model(
        "Model",
        cores_per_task=1,
        copies=2,
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        port_mappings=[ecs.PortMapping(container_port=8000)],
    )
    _refused(lambda: model.scale_on_neuron_utilization(min_count=0, max_count=2), "min_count=0 on a fleet model")
