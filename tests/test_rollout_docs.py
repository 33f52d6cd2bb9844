"""The Rollouts page: its numbers are the code's, its defaults the API's, and every page that should leads to it."""

from __future__ import annotations

import inspect
import json
import math
import re

import pytest
from conftest import ROOT

from neuron_constructs import Rollout, RolloutAlarms, SmokeTest
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.rollouts import SCALE_IN_MINUTES, RolloutPlan, bake_cost, rollout_timeline
from neuron_constructs.serving.listeners import MODEL_START_GRACE_PERIOD
from neuron_constructs.tools.tables import EXAMPLE_HOURLY_PRICE, ROLLOUT_EXAMPLE, rewrite, rollout_room

PAGE = ROOT / "docs" / "rollouts.md"


def page() -> str:
    return PAGE.read_text()


def flat(text: str) -> str:
    """``text`` with its line breaks and runs of blanks as single spaces, as Markdown reads a paragraph."""
    return " ".join(text.split())


def test_the_page_s_tables_are_the_functions_output() -> None:
    assert rewrite(page()) == page(), "run `make docs-tables`"


def test_the_example_is_the_library_s_own_numbers() -> None:
    assert ROLLOUT_EXAMPLE.cold_start_minutes == MODEL_START_GRACE_PERIOD.to_minutes()
    assert ROLLOUT_EXAMPLE.smoke_test_minutes == SmokeTest("/").function_timeout.to_seconds() / 60
    text = flat(page())
    assert f"${EXAMPLE_HOURLY_PRICE:.2f} an inf2.48xlarge-hour" in text
    assert f"about {SCALE_IN_MINUTES:g} minutes below the target" in text
    assert f"start of {ROLLOUT_EXAMPLE.cold_start_minutes:g} minutes" in text
    assert f"Six two-chip copies of a model on {ROLLOUT_EXAMPLE.instance_type}, six to an instance" in text


def test_the_timeline_sentences_are_the_timeline_s() -> None:
    plan = RolloutPlan.blue_green()
    copies, chips = ROLLOUT_EXAMPLE.copies, ROLLOUT_EXAMPLE.chips
    timeline = rollout_timeline(
        plan,
        start_minutes=ROLLOUT_EXAMPLE.cold_start_minutes,
        desired=copies,
        smoke_test_minutes=ROLLOUT_EXAMPLE.smoke_test_minutes,
    )
    doubled = timeline.at(0)
    assert (doubled.blue_copies * chips, doubled.green_copies * chips) == (12, 12)
    text = flat(page())
    assert (
        f"the {doubled.blue_copies * chips} chips of blue's copies and {doubled.green_copies * chips} more for "
        f"green's, on a second {ROLLOUT_EXAMPLE.instance_type}" in text
    )
    assert f"until blue stops at minute {timeline.deployment_minutes:g}" in text
    assert rollout_room(plan, copies).instances == 2


def test_the_cost_sentences_are_bake_cost_s() -> None:
    plan = RolloutPlan.blue_green()
    extra = {
        per: bake_cost(plan, rollout_room(plan, per), start_minutes=ROLLOUT_EXAMPLE.warm_start_minutes).extra_instances
        for per in (ROLLOUT_EXAMPLE.copies, 1)
    }
    assert extra == {6: 1, 1: 6}
    text = flat(page())
    assert "Six copies an instance needs one extra inf2.48xlarge; one copy an instance" in text
    # a warm start saves more than dropping the bake time would, whichever the strategy and the layout
    assert "a warm start (compiled graphs at hand) saves more than a shorter bake time would" in text
    for each in (plan, RolloutPlan.canary(), RolloutPlan.linear()):
        for per in (ROLLOUT_EXAMPLE.copies, 1):
            room = rollout_room(each, per)
            warm, cold = (
                bake_cost(each, room, start_minutes=start)
                for start in (ROLLOUT_EXAMPLE.warm_start_minutes, ROLLOUT_EXAMPLE.cold_start_minutes)
            )
            assert cold.instance_hours - warm.instance_hours > cold.bake_instance_hours
    assert "`distinctInstance` - needs six" in text


def test_the_refusal_is_the_sentence_peak_room_writes() -> None:
    """The NEURON074 refusal of six two-chip NeuronService tasks (one an instance) on a capacity of six: the construct
    path, the rollout, ``RolloutRoom.shortfall``'s numbers and the fix, with the rule's long sentence elided."""
    block = page().split("```text\n", 1)[1].split("```", 1)[0]
    rollout, capacity = Rollout.blue_green(), "Inference/Neuron/Inf2"
    room = rollout_room(rollout.plan, 1)
    shortfall = room.shortfall(6, capacity)
    assert shortfall is not None
    problem = f"desired_count={ROLLOUT_EXAMPLE.copies} rolled out {rollout}: {shortfall.partition('; raise')[0]}"
    message = rules.ROLLOUT_ROOM.message(
        "Inference/Llm",
        problem,
        fix=f"raise max_capacity of {capacity} to {room.instances} or more, run fewer tasks, or roll it out rolling "
        "(Rollout.rolling())",
    )
    assert flat(block) == message.replace(rules.ROLLOUT_ROOM.aws_rule, "...")
    assert room.instances == 12


def test_the_defaults_the_page_names_are_the_api_s() -> None:
    text = flat(page())
    canary, linear, blue_green = Rollout.canary().plan, Rollout.linear().plan, Rollout.blue_green().plan
    assert f"`Rollout.blue_green(bake_time={blue_green.bake_time_minutes:g} min, smoke_test=None, alarms=True)`" in text
    assert (
        f"`Rollout.canary(percent={canary.canary_percent:g}, interval={canary.interval_minutes:g} min, "
        f"bake_time={canary.bake_time_minutes:g} min, ...)`" in text
    )
    assert (
        f"`Rollout.linear(step_percent={linear.linear_step_percent:g}, interval={linear.interval_minutes:g} min, "
        f"bake_time={linear.bake_time_minutes:g} min, ...)`" in text
    )
    alarms = RolloutAlarms()
    assert (
        f"`RolloutAlarms(execution_errors={alarms.execution_errors}, target_5xx={alarms.target_5xx}, "
        f"p99_response_time={alarms.p99_response_time.to_seconds():g} s, periods={alarms.periods}, "
        f"datapoints={alarms.datapoints})`" in text
    )
    chosen = Rollout.blue_green().alarms  # alarms=True is these defaults
    assert chosen is not None
    assert (chosen.execution_errors, chosen.target_5xx, chosen.periods, chosen.datapoints) == (
        alarms.execution_errors,
        alarms.target_5xx,
        alarms.periods,
        alarms.datapoints,
    )
    assert chosen.p99_response_time.to_seconds() == alarms.p99_response_time.to_seconds()
    smoke = SmokeTest("/")
    assert (
        f'`SmokeTest(path, *, method="{smoke.method}", body=None, expect_status={smoke.expect_status}, '
        f"timeout={smoke.timeout_seconds} s)`" in text
    )


def test_the_fleet_example_s_first_stage_is_ceil_of_the_percent_of_the_copies() -> None:
    said = re.search(
        r"rollout=Rollout\.canary\(percent=(\d+)\),  # (\d) of the (\d) copies first, then the other (\d)", page()
    )
    assert said, "the fleet example states its stages"
    percent, first, copies, rest = map(int, said.groups())
    assert first == math.ceil(copies * percent / 100)
    assert rest == copies - first
    assert f"copies={copies}," in page()


def test_the_page_is_in_the_site_and_linked_where_rollouts_belong() -> None:
    docs = ROOT / "docs"
    index = (docs / "index.md").read_text()
    assert "(rollouts.md)" in index
    assert re.search(r"^rollouts$", index.split("```{toctree}", 1)[1], re.M)
    assert "(docs/rollouts.md)" in (ROOT / "README.md").read_text()
    for name in ("serving.md", "fleets.md"):
        assert "(rollouts.md" in (docs / name).read_text(), name
    assert page().startswith("# Rollouts\n")


def test_the_local_endpoint_keeps_no_deployment_configuration_of_a_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the page says moto does not model: a service deployed through CloudFormation keeps its cluster, task
    definition and desired count, and none of a blue/green deployment configuration (in-process moto, no network)."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    import boto3
    from moto import mock_aws

    template = {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {"ClusterName": "neuron"}},
            "Task": {
                "Type": "AWS::ECS::TaskDefinition",
                "Properties": {
                    "Family": "llm",
                    "ContainerDefinitions": [{"Name": "vllm", "Image": "vllm", "Memory": 512}],
                },
            },
            "Service": {
                "Type": "AWS::ECS::Service",
                "Properties": {
                    "Cluster": {"Ref": "Cluster"},
                    "TaskDefinition": {"Ref": "Task"},
                    "DesiredCount": 2,
                    "DeploymentConfiguration": {
                        "Strategy": "BLUE_GREEN",
                        "BakeTimeInMinutes": 10,
                        "Alarms": {"AlarmNames": ["errors"], "Enable": True, "Rollback": True},
                    },
                },
            },
        }
    }
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="Rollout", TemplateBody=json.dumps(template))
        ecs = boto3.client("ecs")
        (arn,) = ecs.list_services(cluster="neuron")["serviceArns"]
        (service,) = ecs.describe_services(cluster="neuron", services=[arn])["services"]
    assert service["desiredCount"] == 2
    assert service["taskDefinition"].endswith("task-definition/llm:1")
    configuration = service.get("deploymentConfiguration", {})
    assert "strategy" not in configuration and "bakeTimeInMinutes" not in configuration
    assert "alarms" not in configuration
    assert service.get("runningCount", 0) == 0  # and no task runs
    assert "moto 5.2 creates an ECS service from its cluster, task definition and desired count only" in flat(page())


def test_the_signatures_the_page_gives_are_the_functions() -> None:
    def written(function: object, given: int) -> str:
        parameters = list(inspect.signature(function).parameters.values())[:given]  # type: ignore[arg-type]
        bare = [p.replace(annotation=inspect.Parameter.empty) for p in parameters]
        return str(inspect.Signature(bare))

    text = flat(page())
    assert f"`rollout_timeline{written(rollout_timeline, 5)}`".replace("15.0", "15") in text
    assert f"`bake_cost{written(bake_cost, 4)[:-1]}, ...)`" in text
