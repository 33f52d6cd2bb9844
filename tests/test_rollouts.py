"""The rollout model: ECS's limits on each strategy's numbers, CloudFormation's 33 hours, and the room on the chips."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs.checks import inputs
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rollouts import (
    CLOUDFORMATION_DEPLOYMENT_MINUTES,
    RolloutPlan,
    deployment_minutes,
    fewest_running,
    linear_steps,
    most_running,
    peak_room,
    rollout_problems,
    rollout_warnings,
)

BEHIND_LB = {"has_load_balancer": True, "has_service_connect": False}
HEADLESS = {"has_load_balancer": False, "has_service_connect": False}


def problems(plan: RolloutPlan) -> list[str]:
    return rollout_problems(plan, **BEHIND_LB)


def test_constructors_carry_the_defaults_of_the_rollout_api() -> None:
    assert RolloutPlan.rolling() == RolloutPlan("rolling")
    assert RolloutPlan.blue_green().bake_time_minutes == 10
    canary = RolloutPlan.canary()
    assert (canary.canary_percent, canary.interval_minutes, canary.bake_time_minutes) == (10, 5, 10)
    linear = RolloutPlan.linear()
    assert (linear.linear_step_percent, linear.interval_minutes, linear.bake_time_minutes) == (25, 5, 10)
    assert not RolloutPlan.rolling().native
    assert all(p.native for p in (RolloutPlan.blue_green(), canary, linear))


@pytest.mark.parametrize(
    "plan",
    [
        RolloutPlan.rolling(),
        RolloutPlan.blue_green(),
        RolloutPlan.canary(),
        RolloutPlan.linear(),
        RolloutPlan.blue_green(bake_time_minutes=0),
        RolloutPlan.blue_green(bake_time_minutes=1440),
        RolloutPlan.canary(percent=0.1),
        RolloutPlan.canary(percent=100),
        RolloutPlan.canary(percent=33.3),
        RolloutPlan.canary(interval_minutes=0, bake_time_minutes=0),
        RolloutPlan.linear(step_percent=3),
        RolloutPlan.linear(step_percent=100),
        RolloutPlan.linear(step_percent=12.5),
        RolloutPlan.linear(interval_minutes=1440, step_percent=50),
    ],
    ids=repr,
)
def test_values_ecs_takes_are_accepted(plan: RolloutPlan) -> None:
    assert problems(plan) == []


@pytest.mark.parametrize(
    ("plan", "sentence"),
    [
        (
            RolloutPlan.canary(percent=0),
            "a canary percent of 0 %: ECS takes canaryPercent as a multiple of 0.1 from 0.1 to 100.0; "
            "pass percent between 0.1 and 100.0 in steps of 0.1",
        ),
        (RolloutPlan.canary(percent=0.09), "a canary percent of 0.09 %: ECS takes canaryPercent"),
        (RolloutPlan.canary(percent=100.1), "a canary percent of 100.1 %: ECS takes canaryPercent"),
        (RolloutPlan.canary(percent=10.05), "a canary percent of 10.05 %: ECS takes canaryPercent"),
        (RolloutPlan.canary(percent=math.nan), "a canary percent of nan %"),
        (
            RolloutPlan.linear(step_percent=2.9),
            "a linear step of 2.9 %: ECS takes stepPercent as a multiple of 0.1 from 3.0 to 100.0; "
            "pass step_percent between 3.0 and 100.0 in steps of 0.1",
        ),
        (RolloutPlan.linear(step_percent=100.1), "a linear step of 100.1 %: ECS takes stepPercent"),
        (RolloutPlan.linear(step_percent=3.25), "a linear step of 3.25 %: ECS takes stepPercent"),
        (
            RolloutPlan.blue_green(bake_time_minutes=-1),
            "a bake time of -1 minutes: ECS takes bakeTimeInMinutes as whole minutes from 0 to 1440 (24 hours); "
            "pass bake_time between 0 and 1440 whole minutes",
        ),
        (RolloutPlan.blue_green(bake_time_minutes=1441), "a bake time of 1441 minutes: ECS takes bakeTimeInMinutes"),
        (RolloutPlan.blue_green(bake_time_minutes=2.5), "a bake time of 2.5 minutes: ECS takes bakeTimeInMinutes"),
        (
            RolloutPlan.canary(interval_minutes=1441),
            "an interval of 1441 minutes: ECS takes canaryBakeTimeInMinutes as whole minutes from 0 to 1440",
        ),
        (RolloutPlan.canary(interval_minutes=-1), "an interval of -1 minutes: ECS takes canaryBakeTimeInMinutes"),
        (
            RolloutPlan.linear(interval_minutes=1441),
            "an interval of 1441 minutes: ECS takes stepBakeTimeInMinutes as whole minutes from 0 to 1440",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_values_ecs_refuses_are_named_with_the_rule_and_the_fix(plan: RolloutPlan, sentence: str) -> None:
    found = problems(plan)
    assert len(found) == 1
    assert found[0].startswith(sentence)


@pytest.mark.parametrize(
    ("step", "steps"),
    [(100, 0), (50, 1), (25, 3), (33.3, 3), (11, 9), (10, 9), (3, 33), (3.1, 32), (12.5, 7)],
)
def test_linear_steps_follow_cloudformations_count(step: float, steps: int) -> None:
    # evenly dividing: 100 / step - 1; otherwise floor(100 / step)
    assert linear_steps(step) == steps


def test_deployment_minutes_are_cloudformations_calculation() -> None:
    assert deployment_minutes(RolloutPlan.canary(interval_minutes=5, bake_time_minutes=10)) == 15
    assert deployment_minutes(RolloutPlan.linear(step_percent=25, interval_minutes=5, bake_time_minutes=10)) == 25
    assert deployment_minutes(RolloutPlan.linear(step_percent=11, interval_minutes=60, bake_time_minutes=0)) == 540
    assert deployment_minutes(RolloutPlan.blue_green()) is None
    assert deployment_minutes(RolloutPlan.rolling()) is None


def test_a_canary_of_exactly_33_hours_passes_and_one_minute_more_is_refused() -> None:
    assert problems(RolloutPlan.canary(interval_minutes=1440, bake_time_minutes=540)) == []
    assert problems(RolloutPlan.canary(interval_minutes=1440, bake_time_minutes=541)) == [
        "a canary deployment of 1981 minutes (bake time 541 + interval 1440): CloudFormation rejects a canary "
        "deployment whose calculated time exceeds 33 hours (1980 minutes), since its operations time out after 36; "
        "shorten the bake time or the interval to 1980 minutes or less"
    ]


def test_a_linear_deployment_over_33_hours_is_refused_with_its_steps() -> None:
    # 3 % steps: 33 steps of the interval; 60 x 33 = 1980 is the limit itself
    assert problems(RolloutPlan.linear(step_percent=3, interval_minutes=60, bake_time_minutes=0)) == []
    assert CLOUDFORMATION_DEPLOYMENT_MINUTES == 1980
    assert problems(RolloutPlan.linear(step_percent=3, interval_minutes=60, bake_time_minutes=1)) == [
        "a linear deployment of 1981 minutes (bake time 1 + interval 60 x 33 steps): CloudFormation rejects a "
        "linear deployment whose calculated time exceeds 33 hours (1980 minutes), since its operations time out "
        "after 36; shorten the bake time or the interval, or take larger steps to 1980 minutes or less"
    ]


def test_blue_green_bake_time_alone_is_not_limited_to_33_hours_beyond_ecs_range() -> None:
    assert problems(RolloutPlan.blue_green(bake_time_minutes=1440)) == []


@pytest.mark.parametrize("plan", [RolloutPlan.canary(), RolloutPlan.linear()], ids=lambda p: p.strategy)
def test_gradual_shifts_need_a_load_balancer_or_service_connect(plan: RolloutPlan) -> None:
    assert rollout_problems(plan, has_load_balancer=False, has_service_connect=True) == []
    assert rollout_problems(plan, **BEHIND_LB) == []
    assert rollout_problems(plan, **HEADLESS) == [
        f"a {plan.strategy} rollout of a service with neither a load balancer nor Service Connect: ECS shifts "
        "production traffic in parts only through Elastic Load Balancing or Service Connect; put the service behind "
        "a load balancer or Service Connect, or roll it out blue/green or rolling"
    ]


def test_blue_green_without_traffic_routing_is_legal_but_warned() -> None:
    plan = RolloutPlan.blue_green()
    assert rollout_problems(plan, **HEADLESS) == []
    (warning,) = rollout_warnings(plan, **HEADLESS)
    assert warning.startswith("a blue/green rollout of a service with neither a load balancer nor Service Connect")
    assert "manages no traffic shift" in warning
    assert rollout_warnings(plan, **BEHIND_LB) == []
    assert rollout_warnings(plan, has_load_balancer=False, has_service_connect=True) == []
    assert rollout_warnings(RolloutPlan.rolling(), **HEADLESS) == []


def test_rolling_has_no_ecs_limits_here() -> None:
    assert rollout_problems(RolloutPlan.rolling(), **HEADLESS) == []


def test_six_two_chip_copies_on_a_full_inf2_48xlarge_need_a_second_instance() -> None:
    inf2 = NeuronInstanceType.of("inf2.48xlarge")
    room = peak_room(
        RolloutPlan.blue_green(), inf2, desired=6, copies_per_instance=6, chips=2, cpu=4096, memory_mib=8192
    )
    assert (room.tasks, room.chips, room.cores, room.instances) == (12, 24, 48, 2)
    assert (room.cpu, room.memory_mib) == (12 * 4096, 12 * 8192)
    assert room.fits(2)
    assert room.shortfall(2) is None
    assert not room.fits(1)
    assert room.shortfall(1, "the Inference capacity") == (
        "a blue/green deployment runs blue and green together, each at the full desired count: 12 copies holding "
        "24 chips and 48 NeuronCores, 49152 CPU units and 98304 MiB, which take 2 inf2.48xlarge instances at 6 "
        "copies per instance, but the Inference capacity launches at most 1; raise its max_capacity to 2 or more"
    )


def test_rolling_replaces_in_place_when_the_minimum_lets_it_stop_a_task() -> None:
    inf2 = NeuronInstanceType.of("inf2.xlarge")
    common = {"desired": 4, "copies_per_instance": 1, "chips": 1, "cpu": 2048, "memory_mib": 4096}
    in_place = peak_room(RolloutPlan.rolling(), inf2, minimum_healthy_percent=50, **common)
    assert (in_place.tasks, in_place.instances) == (4, 4)
    spare = peak_room(RolloutPlan.rolling(), inf2, minimum_healthy_percent=100, **common)
    assert (spare.tasks, spare.instances) == (5, 5)
    assert spare.shortfall(4) is not None and "a rolling deployment runs at its peak 5 copies holding" in str(
        spare.shortfall(4)
    )


def test_core_sized_copies_count_the_chips_their_cores_fill() -> None:
    inf2 = NeuronInstanceType.of("inf2.8xlarge")  # one chip, two cores
    room = peak_room(RolloutPlan.canary(), inf2, desired=3, copies_per_instance=2, cores=1, cpu=1024, memory_mib=512)
    assert (room.tasks, room.cores, room.instances, room.chips) == (6, 6, 3, 3)


def test_a_copy_count_that_would_hold_a_chip_twice_is_refused() -> None:
    inf2 = NeuronInstanceType.of("inf2.24xlarge")
    with pytest.raises(ValueError, match=re.escape("7 copies of 2 chips do not fit the 6 chips of inf2.24xlarge")):
        peak_room(RolloutPlan.blue_green(), inf2, desired=1, copies_per_instance=7, chips=2, cpu=0, memory_mib=0)
    with pytest.raises(ValueError, match="exactly one of chips= and cores="):
        peak_room(RolloutPlan.blue_green(), inf2, desired=1, copies_per_instance=1, cpu=0, memory_mib=0)


def test_the_checks_share_the_rolling_arithmetic() -> None:
    assert most_running(3, 150) == 4  # rounded down
    assert fewest_running(3, 50) == 2  # rounded up
    assert inputs.deployment_stalls(1, 100, 150)
    assert not inputs.deployment_stalls(2, 100, 150)


INSTANCES = NeuronInstanceType.all()


@st.composite
def services(draw: st.DrawFn) -> tuple[NeuronInstanceType, dict[str, int]]:
    instance = draw(st.sampled_from(INSTANCES))
    lnc = draw(st.sampled_from(instance.lnc_options))
    if draw(st.booleans()):
        chips = draw(st.sampled_from([s for s in range(1, instance.chips + 1) if instance.chips % s == 0]))
        size = {"chips": chips}
        most = instance.chips // chips
    else:
        cores = draw(st.integers(1, instance.cores(lnc)))
        size = {"cores": cores}
        most = instance.cores(lnc) // cores
    return instance, {
        "lnc": lnc,
        "desired": draw(st.integers(0, 500)),
        "copies_per_instance": draw(st.integers(1, most)),
        "cpu": draw(st.integers(0, 8192)),
        "memory_mib": draw(st.integers(0, 65536)),
        "minimum_healthy_percent": draw(st.integers(0, 100)),
        **size,
    }


NATIVE = [RolloutPlan.blue_green(), RolloutPlan.canary(), RolloutPlan.linear()]


@settings(max_examples=150, deadline=None)
@given(services(), st.sampled_from(NATIVE))
def test_native_peak_is_blue_and_green_at_full_size(
    service: tuple[NeuronInstanceType, dict[str, int]], plan: RolloutPlan
) -> None:
    instance, args = service
    room = peak_room(plan, instance, **args)
    desired, per, lnc = args["desired"], args["copies_per_instance"], args["lnc"]
    copy_cores = args["cores"] if "cores" in args else args["chips"] * instance.cores_per_chip(lnc)
    assert room.tasks == 2 * desired
    assert room.cores == 2 * desired * copy_cores
    assert room.cpu == 2 * desired * args["cpu"]
    assert room.memory_mib == 2 * desired * args["memory_mib"]
    if "chips" in args:
        assert room.chips == 2 * desired * args["chips"]
    assert room.instances == math.ceil(2 * desired / per)
    # never a chip or core held twice: each instance's share fits it
    assert per * copy_cores <= instance.cores(lnc)
    assert room.chips <= room.instances * instance.chips
    assert room.cores <= room.instances * instance.cores(lnc)
    assert room.fits(room.instances)
    assert not room.fits(room.instances - 1)


@settings(max_examples=150, deadline=None)
@given(services(), st.sampled_from(NATIVE))
def test_rolling_never_needs_more_than_a_native_strategy(
    service: tuple[NeuronInstanceType, dict[str, int]], plan: RolloutPlan
) -> None:
    instance, args = service
    rolling = peak_room(RolloutPlan.rolling(), instance, **args)
    native = peak_room(plan, instance, **args)
    for field in ("tasks", "chips", "cores", "instances", "cpu", "memory_mib"):
        assert getattr(rolling, field) <= getattr(native, field), field


# --- the Rollout API's values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("computed", "tenths"), [(0.1 + 0.2, 3), (0.1 * 33, 33), (0.7 + 0.1, 8), (0.1 * 333, 333)])
def test_a_percent_computed_in_floating_point_is_the_multiple_of_0_1_it_stands_for(
    computed: float, tenths: int
) -> None:
    """GIVEN a percent binary floating point leaves a hair off a tenth (0.1 + 0.2 is 0.30000000000000004), WHEN it is
    checked and written, THEN it passes as that tenth and ECS gets the rounded value."""
    from neuron_constructs.serving.rollout import Rollout

    assert computed != tenths / 10  # the float noise is there
    assert problems(RolloutPlan.canary(percent=computed)) == []
    assert Rollout.canary(percent=computed).plan.canary_percent == tenths / 10
    if tenths >= 30:
        assert problems(RolloutPlan.linear(step_percent=computed)) == []
        assert Rollout.linear(step_percent=computed).plan.linear_step_percent == tenths / 10


def test_a_percent_off_a_tenth_by_more_than_float_noise_is_refused_with_all_its_digits() -> None:
    (problem,) = problems(RolloutPlan.canary(percent=0.3000001))
    assert problem.startswith("a canary percent of 0.3000001 %: ECS takes canaryPercent as a multiple of 0.1")


@pytest.mark.parametrize(
    ("build", "named", "fix"),
    [
        ("blue_green", "Rollout.blue_green: bake_time=15, a number without a unit", "bake_time=Duration.minutes(15)"),
        ("canary", "Rollout.canary: interval=3, a number without a unit", "interval=Duration.minutes(3)"),
        ("smoke_test", "SmokeTest: timeout=30, a number without a unit", "timeout=Duration.seconds(30)"),
        ("alarms", "RolloutAlarms: p99_response_time=30, a number without a unit", "Duration.seconds(30)"),
    ],
)
def test_a_duration_given_as_a_bare_number_is_refused_naming_the_duration(build: str, named: str, fix: str) -> None:
    """GIVEN a number where a Duration goes, WHEN the value is built, THEN the library refuses it with the Duration
    that says what was meant (nothing silently corrected), not an AttributeError from deep inside."""
    from neuron_constructs import NeuronConfigurationError
    from neuron_constructs.serving.rollout import Rollout, RolloutAlarms, SmokeTest

    calls = {
        "blue_green": lambda: Rollout.blue_green(bake_time=15),  # type: ignore[arg-type]
        "canary": lambda: Rollout.canary(interval=3),  # type: ignore[arg-type]
        "smoke_test": lambda: SmokeTest("/health", timeout=30),  # type: ignore[arg-type]
        "alarms": lambda: RolloutAlarms(p99_response_time=30),  # type: ignore[arg-type]
    }
    with pytest.raises(NeuronConfigurationError) as raised:
        calls[build]()
    message = str(raised.value)
    assert message.startswith(named) and "[NEURON026:" in message and fix in message


def test_a_p99_response_time_outside_the_load_balancer_s_wait_is_refused_naming_its_value() -> None:
    from aws_cdk import Duration

    from neuron_constructs import NeuronConfigurationError
    from neuron_constructs.serving.rollout import RolloutAlarms

    with pytest.raises(NeuronConfigurationError) as raised:
        RolloutAlarms(p99_response_time=Duration.minutes(70))
    assert "RolloutAlarms: p99_response_time=1 hour 10 minutes, outside what a load balancer can wait" in str(
        raised.value
    )


def test_a_smoke_test_s_options_are_keyword_only() -> None:
    from neuron_constructs.serving.rollout import SmokeTest

    with pytest.raises(TypeError):
        SmokeTest("/v1/completions", "POST")  # type: ignore[misc]
    assert SmokeTest("/v1/completions", method="POST").method == "POST"
