"""A person's go-ahead in a rollout (``Approval``): ECS's pause hook written into the service, refused where ECS
refuses it, read back by ``neuron-ecs plan --rollout`` and counted in the rollout's timeline."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import imported_vpc, resources
from test_service_rollouts import ENV, _manual

from neuron_constructs import (
    Approval,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronLoadBalancer,
    NeuronService,
    Rollout,
    SmokeTest,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.approvals import (
    LAMBDA_ONLY_STAGES,
    MAX_TIMEOUT_MINUTES,
    PAUSE_STAGES,
    ApprovalPlan,
    approval_problems,
)
from neuron_constructs.knowledge.rollouts import RolloutPlan, rollout_timeline
from neuron_constructs.tools.rollout_reading import read_rollout, timeline


@functools.cache
def _synthesized() -> dict[str, Any]:
    """A platform and two model stacks: a blue/green model with a smoke test and a four-hour approval, and a canary
    with an approval that goes on unanswered before every production shift."""
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Neuron", vpc=imported_vpc(platform))
    capacity = cluster.add_ec2_capacity("Llm", instance_type="inf2.48xlarge", max_capacity=4)
    listener = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener
    services = {}
    for name, rollout, priority, device in (
        (
            "Gated",
            Rollout.blue_green(smoke_test=SmokeTest("/v1/models"), approval=Approval(timeout=Duration.hours(4))),
            10,
            0,
        ),
        (
            "Stepped",
            Rollout.canary(
                approval=Approval("PRE_PRODUCTION_TRAFFIC_SHIFT", timeout=Duration.minutes(30), on_timeout="CONTINUE")
            ),
            20,
            1,
        ),
    ):
        stack = Stack(app, name, env=ENV)
        services[name] = NeuronService(
            stack, "Service", cluster=cluster, task_definition=_manual(stack, "Task", [device]), capacity=capacity,
            rollout=rollout,
        )  # fmt: skip
        services[name].attach_to_listener(
            listener, conditions=[elbv2.ListenerCondition.path_patterns([f"/{name.lower()}/*"])], priority=priority
        )
    assembly = app.synth()
    return {
        "templates": {s.stack_name: s.template for s in assembly.stacks},
        "warnings": {s.stack_name: [str(m.entry.data) for s_ in [s] for m in s_.messages] for s in assembly.stacks},
    }


def _deployment(stack: str) -> dict[str, Any]:
    template = _synthesized()["templates"][stack]
    (service,) = [
        s
        for s in resources(template, "AWS::ECS::Service").values()
        if s["Properties"].get("SchedulingStrategy") != "DAEMON"
    ]
    return service["Properties"]["DeploymentConfiguration"]  # type: ignore[no-any-return]


def test_the_pause_hook_follows_the_smoke_test_at_its_stage_with_its_timeout_and_action() -> None:
    smoke, pause = _deployment("Gated")["LifecycleHooks"]
    assert smoke["LifecycleStages"] == ["POST_TEST_TRAFFIC_SHIFT"] and "HookTargetArn" in smoke
    # THEN ECS pauses after the smoke test's stage, waits four hours, then rolls back; a pause has no target or role
    assert pause == {
        "TargetType": "PAUSE",
        "LifecycleStages": ["POST_TEST_TRAFFIC_SHIFT"],
        "TimeoutConfiguration": {"TimeoutInMinutes": 240, "Action": "ROLLBACK"},
    }


def test_a_pause_alone_is_the_only_hook_and_going_on_unanswered_is_warned() -> None:
    (pause,) = _deployment("Stepped")["LifecycleHooks"]
    assert pause["LifecycleStages"] == ["PRE_PRODUCTION_TRAFFIC_SHIFT"]
    assert pause["TimeoutConfiguration"] == {"TimeoutInMinutes": 30, "Action": "CONTINUE"}
    warned = _synthesized()["warnings"]["Stepped"]
    assert any(r.APPROVAL_CONTINUES.id in w and "on_timeout='CONTINUE'" in w for w in warned)
    assert not any(r.APPROVAL_CONTINUES.id in w for w in _synthesized()["warnings"]["Gated"])


def test_plan_rollout_reads_the_pause_back_from_the_template() -> None:
    read = read_rollout({"DeploymentConfiguration": _deployment("Gated"), "LoadBalancers": [{}]})
    assert read.plan is not None and not read.problems
    assert read.plan.approval == ApprovalPlan("POST_TEST_TRAFFIC_SHIFT", 240, "ROLLBACK")
    assert timeline(read.plan).endswith(
        "blue kept 10 min after; waits for approval at POST_TEST_TRAFFIC_SHIFT up to 240 min, then rolls back"
    )
    bare = read_rollout(
        {
            "DeploymentConfiguration": {
                "Strategy": "BLUE_GREEN",
                "BakeTimeInMinutes": 0,
                "LifecycleHooks": [{"TargetType": "PAUSE", "LifecycleStages": ["POST_SCALE_UP"]}],
            },
            "LoadBalancers": [{}],
        }
    )
    assert bare.plan is not None and bare.plan.approval == ApprovalPlan("POST_SCALE_UP", 1440, "ROLLBACK")
    refused = read_rollout(
        {
            "DeploymentConfiguration": {
                "Strategy": "BLUE_GREEN",
                "BakeTimeInMinutes": 0,
                "LifecycleHooks": [
                    {"TargetType": "PAUSE", "LifecycleStages": ["PRODUCTION_TRAFFIC_SHIFT"]},
                ],
            },
            "LoadBalancers": [{}],
        }
    )
    assert any("ECS runs only Lambda hooks" in p for p in refused.problems)


def test_the_timeline_waits_the_whole_timeout_once_or_before_every_production_shift() -> None:
    once = RolloutPlan.canary(percent=10, interval_minutes=5, bake_time_minutes=10)
    gated = rollout_timeline(
        RolloutPlan(**{**once.__dict__, "approval": ApprovalPlan("POST_TEST_TRAFFIC_SHIFT", 60, "ROLLBACK")}),
        start_minutes=20,
        smoke_test_minutes=1,
    )
    plain = rollout_timeline(once, start_minutes=20, smoke_test_minutes=1)
    assert gated.deployment_minutes == plain.deployment_minutes + 60
    waits = [p for p in gated.phases if p.stage.endswith("(approval)")]
    assert [(p.stage, p.start_minutes, p.green_percent) for p in waits] == [
        ("POST_TEST_TRAFFIC_SHIFT (approval)", 21, 0.0)
    ]
    every = rollout_timeline(
        RolloutPlan(**{**once.__dict__, "approval": ApprovalPlan("PRE_PRODUCTION_TRAFFIC_SHIFT", 30, "ROLLBACK")}),
        start_minutes=20,
    )
    # THEN a canary pauses before its share and before the rest: twice, each with the share green had before
    stepped = [(p.green_percent, p.minutes) for p in every.phases if p.stage.endswith("(approval)")]
    assert stepped == [(0.0, 30), (10.0, 30)]
    assert ApprovalPlan("PRE_PRODUCTION_TRAFFIC_SHIFT", 30, "ROLLBACK").pauses(2) == 2


@pytest.mark.parametrize("stage", PAUSE_STAGES)
def test_every_stage_ecs_pauses_at_is_taken(stage: str) -> None:
    assert Approval(stage).plan.stage == stage
    assert not approval_problems(ApprovalPlan(stage, MAX_TIMEOUT_MINUTES, "CONTINUE"))


@pytest.mark.parametrize(
    ("build", "text"),
    [
        *[(lambda s=s: Approval(s), "ECS runs only Lambda hooks") for s in LAMBDA_ONLY_STAGES],
        (lambda: Approval("AFTER_LUNCH"), "'AFTER_LUNCH' is none of ECS's lifecycle stages a pause takes"),
        (lambda: Approval(timeout=Duration.days(15)), "timeout of 21600 minutes: ECS waits 1 to 20160"),
        (lambda: Approval(timeout=Duration.seconds(90)), "timeout of 1.5 minutes"),
        (lambda: Approval(on_timeout="WAIT"), "on_timeout='WAIT' is neither ROLLBACK nor CONTINUE"),
    ],
)
def test_what_ecs_cannot_pause_for_is_refused_at_the_call(build: Any, text: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=r.APPROVAL.id) as raised:
        build()
    assert text in str(raised.value)


def test_a_bare_number_timeout_and_a_fleet_model_approval_are_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r.WRONG_TYPE.id):
        Approval(timeout=60)  # type: ignore[arg-type]
    from neuron_constructs.serving.fleet_stages import fleet_rollout

    with pytest.raises(NeuronConfigurationError, match=r.ROLLOUT_ON_FLEET.id) as raised:
        fleet_rollout("Fleet/Model", Rollout.canary(approval=Approval()), 4)
    assert "an approval on a fleet model" in str(raised.value)
    assert "waits for approval at POST_TEST_TRAFFIC_SHIFT up to 1440 min" in str(Rollout.linear(approval=Approval()))
