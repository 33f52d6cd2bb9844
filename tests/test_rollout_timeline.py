"""The timeline of a native rollout on Neuron, phase by phase, and the instance-hours its second revision holds."""

from __future__ import annotations

import itertools
import math

import pytest
from conftest import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rollouts import (
    SCALE_IN_MINUTES,
    RolloutPlan,
    bake_cost,
    deployment_minutes,
    peak_room,
    rollout_problems,
    rollout_timeline,
)

INF2_48 = NeuronInstanceType.of("inf2.48xlarge")


def stages(plan: RolloutPlan, **kwargs: float) -> list[tuple[str, float, float, float]]:
    timeline = rollout_timeline(plan, desired=6, **kwargs)  # type: ignore[arg-type]
    return [(p.stage, p.start_minutes, p.end_minutes, p.green_percent) for p in timeline.phases]


def test_a_blue_green_loads_green_then_shifts_everything_at_once_and_bakes() -> None:
    assert stages(RolloutPlan.blue_green(), start_minutes=30, scale_in_minutes=15) == [
        ("SCALE_UP", 0, 30, 0),
        ("BAKE_TIME", 30, 40, 100),
        ("CLEAN_UP", 40, 55, 100),
    ]


def test_a_smoke_test_runs_between_green_s_start_and_any_production_traffic() -> None:
    assert stages(RolloutPlan.blue_green(), start_minutes=30, smoke_test_minutes=1.5, scale_in_minutes=0) == [
        ("SCALE_UP", 0, 30, 0),
        ("TEST_TRAFFIC_SHIFT, POST_TEST_TRAFFIC_SHIFT", 30, 31.5, 0),
        ("BAKE_TIME", 31.5, 41.5, 100),
        ("CLEAN_UP", 41.5, 41.5, 100),
    ]


def test_a_canary_holds_its_share_for_the_interval_then_takes_the_rest() -> None:
    plan = RolloutPlan.canary(percent=10, interval_minutes=5, bake_time_minutes=10)
    assert stages(plan, start_minutes=20, scale_in_minutes=15) == [
        ("SCALE_UP", 0, 20, 0),
        ("PRODUCTION_TRAFFIC_SHIFT", 20, 25, 10),
        ("BAKE_TIME", 25, 35, 100),
        ("CLEAN_UP", 35, 50, 100),
    ]


def test_a_linear_rollout_waits_after_every_step_short_of_100_percent() -> None:
    even = stages(RolloutPlan.linear(step_percent=25), start_minutes=10, scale_in_minutes=0)
    assert [(s, p) for s, _, _, p in even] == [
        ("SCALE_UP", 0),
        ("PRODUCTION_TRAFFIC_SHIFT", 25),
        ("PRODUCTION_TRAFFIC_SHIFT", 50),
        ("PRODUCTION_TRAFFIC_SHIFT", 75),
        ("BAKE_TIME", 100),
        ("CLEAN_UP", 100),
    ]
    uneven = stages(RolloutPlan.linear(step_percent=30), start_minutes=10, scale_in_minutes=0)
    assert [p for *_, p in uneven] == [0, 30, 60, 90, 100, 100]
    assert uneven[-2][1:3] == (25, 35)  # 10 + 3 intervals of 5, then the bake time
    tenths = stages(RolloutPlan.linear(step_percent=33.3), start_minutes=0, scale_in_minutes=0)
    assert [p for *_, p in tenths] == [0, 33.3, 66.6, 99.9, 100, 100]


def test_blue_runs_until_the_bake_time_ends_and_green_from_the_start() -> None:
    timeline = rollout_timeline(RolloutPlan.canary(), start_minutes=30, desired=6)
    assert [(p.blue_copies, p.green_copies) for p in timeline.phases] == [(6, 6)] * 3 + [(0, 6)]
    assert timeline.deployment_minutes == 45
    assert timeline.end_minutes == 45 + SCALE_IN_MINUTES
    assert timeline.at(0).stage == "SCALE_UP"
    assert timeline.at(30).stage == "PRODUCTION_TRAFFIC_SHIFT"  # the later phase at a boundary
    assert timeline.at(timeline.end_minutes).stage == "CLEAN_UP"
    with pytest.raises(ValueError, match="outside the rollout"):
        timeline.at(-1)


def test_a_rolling_update_and_negative_numbers_have_no_timeline() -> None:
    with pytest.raises(ValueError, match="native rollout"):
        rollout_timeline(RolloutPlan.rolling(), start_minutes=10)
    with pytest.raises(ValueError, match="start_minutes must be 0 or more"):
        rollout_timeline(RolloutPlan.blue_green(), start_minutes=-1)
    with pytest.raises(ValueError, match="start_minutes must be 0 or more"):
        rollout_timeline(RolloutPlan.blue_green(), start_minutes=math.nan)
    with pytest.raises(ValueError, match="desired must be"):
        rollout_timeline(RolloutPlan.blue_green(), start_minutes=1, desired=-1)


def test_six_two_chip_copies_on_one_inf2_48xlarge_hold_a_second_instance_for_the_whole_overlap() -> None:
    plan = RolloutPlan.blue_green()
    room = peak_room(plan, INF2_48, desired=6, copies_per_instance=6, chips=2, cpu=4096, memory_mib=8192)
    cost = bake_cost(plan, room, start_minutes=30, instance_hourly_price=12.0, scale_in_minutes=15)
    assert (cost.extra_instances, cost.overlap_minutes, cost.bake_minutes) == (1, 55, 10)
    assert cost.instance_hours == pytest.approx(55 / 60)
    assert cost.bake_instance_hours == pytest.approx(10 / 60)
    assert cost.dollars == pytest.approx(11.0)
    assert cost.bake_dollars == pytest.approx(2.0)
    one_each = peak_room(plan, INF2_48, desired=6, copies_per_instance=1, chips=2, cpu=4096, memory_mib=8192)
    assert bake_cost(plan, one_each, start_minutes=30, scale_in_minutes=15).extra_instances == 6
    assert bake_cost(plan, room, start_minutes=30).dollars is None


def test_bake_cost_refuses_a_room_of_another_strategy_and_a_negative_price() -> None:
    room = peak_room(RolloutPlan.rolling(), INF2_48, desired=2, copies_per_instance=1, chips=12, cpu=1, memory_mib=1)
    with pytest.raises(ValueError, match="the room is of a rolling deployment, the plan blue_green"):
        bake_cost(RolloutPlan.blue_green(), room, start_minutes=10)
    with pytest.raises(ValueError, match="native rollout"):
        bake_cost(RolloutPlan.rolling(), room, start_minutes=10)
    native = peak_room(RolloutPlan.canary(), INF2_48, desired=2, copies_per_instance=1, chips=12, cpu=1, memory_mib=1)
    with pytest.raises(ValueError, match="instance_hourly_price must be 0 or more"):
        bake_cost(RolloutPlan.canary(), native, start_minutes=10, instance_hourly_price=-1)


minutes = st.integers(0, 1440)


@st.composite
def plans(draw: st.DrawFn) -> RolloutPlan:
    kind = draw(st.sampled_from(["blue_green", "canary", "linear"]))
    bake = draw(minutes)
    if kind == "blue_green":
        return RolloutPlan.blue_green(bake_time_minutes=bake)
    interval = draw(st.integers(0, 60))
    if kind == "canary":
        return RolloutPlan.canary(
            percent=draw(st.integers(1, 1000)) / 10, interval_minutes=interval, bake_time_minutes=bake
        )
    return RolloutPlan.linear(
        step_percent=draw(st.integers(30, 1000)) / 10, interval_minutes=interval, bake_time_minutes=bake
    )


durations = st.floats(0, 10_000, allow_nan=False, allow_infinity=False)


@settings(max_examples=examples(200, loop=50))
@given(plans(), durations, st.none() | durations, durations, st.integers(0, 500))
def test_phases_are_contiguous_and_traffic_only_grows_to_100_percent(
    plan: RolloutPlan, start: float, smoke: float | None, scale_in: float, desired: int
) -> None:
    assume(rollout_problems(plan, has_load_balancer=True, has_service_connect=False) == [])  # a plan ECS takes
    timeline = rollout_timeline(
        plan, start_minutes=start, desired=desired, smoke_test_minutes=smoke, scale_in_minutes=scale_in
    )
    phases = timeline.phases
    assert phases[0].start_minutes == 0
    for before, after in itertools.pairwise(phases):
        assert after.start_minutes == before.end_minutes  # contiguous, never overlapping
        assert after.green_percent >= before.green_percent  # traffic only moves to green
    assert all(p.minutes >= 0 for p in phases)
    assert phases[0].green_percent == 0 and phases[-1].green_percent == 100
    assert all(0 <= p.green_percent <= 100 for p in phases)
    # total time: green's start, the smoke test, the shifts, the bake time (CloudFormation's calculation for
    # canary and linear), then the scale-in
    shifts_and_bake = deployment_minutes(plan)
    if shifts_and_bake is None:
        shifts_and_bake = plan.bake_time_minutes or 0
    assert math.isclose(timeline.deployment_minutes, start + (smoke or 0) + shifts_and_bake, abs_tol=1e-6)
    assert math.isclose(timeline.end_minutes, timeline.deployment_minutes + scale_in, abs_tol=1e-6)
    # blue at the full count until the bake time ends, green at the full count throughout
    assert all(p.blue_copies == (0 if p.stage == "CLEAN_UP" else desired) for p in phases)
    assert all(p.green_copies == desired for p in phases)


INSTANCES = NeuronInstanceType.all()


@settings(max_examples=examples(200, loop=50))
@given(
    plans(),
    st.sampled_from(INSTANCES),
    st.integers(0, 200),
    st.data(),
    durations,
    durations,
    st.none() | st.floats(0, 100, allow_nan=False),
)
def test_the_cost_is_the_extra_instances_times_the_overlap(
    plan: RolloutPlan,
    instance: NeuronInstanceType,
    desired: int,
    data: st.DataObject,
    start: float,
    scale_in: float,
    price: float | None,
) -> None:
    chips = data.draw(st.sampled_from([k for k in range(1, instance.chips + 1) if instance.chips % k == 0]))
    per = data.draw(st.integers(1, instance.chips // chips))
    room = peak_room(plan, instance, desired=desired, copies_per_instance=per, chips=chips, cpu=1, memory_mib=1)
    cost = bake_cost(plan, room, start_minutes=start, instance_hourly_price=price, scale_in_minutes=scale_in)
    timeline = rollout_timeline(plan, start_minutes=start, desired=desired, scale_in_minutes=scale_in)
    blue_instances = math.ceil(desired / per)
    assert cost.extra_instances == room.instances - blue_instances
    # blue and green fit the peak's instances, and every extra one is needed
    assert 2 * desired <= room.instances * per
    assert desired == 0 or (room.instances - 1) * per < 2 * desired
    assert 0 <= cost.extra_instances <= blue_instances
    assert cost.overlap_minutes == timeline.end_minutes
    assert math.isclose(cost.instance_hours, cost.extra_instances * timeline.end_minutes / 60, abs_tol=1e-9)
    assert cost.bake_instance_hours <= cost.instance_hours + 1e-9
    if price is None:
        assert cost.dollars is None
    else:
        assert cost.dollars is not None
        assert math.isclose(cost.dollars, cost.instance_hours * price, abs_tol=1e-6)
