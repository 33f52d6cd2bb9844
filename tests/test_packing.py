"""Where copies land (``InstancePlan``): one model per NeuronCore is every type's limit, and over random mixes of
whole-chip and NeuronCore copies no core is held twice and no planned core is left idle."""

from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs import NeuronConfigurationError, NeuronInstanceType
from neuron_constructs.knowledge.cores import cores_of_devices, parse_core_list
from neuron_constructs.knowledge.packing import InstancePlan, Placement

TYPES = NeuronInstanceType.all()


@pytest.mark.parametrize(
    ("name", "lnc", "limit"),
    [("inf2.48xlarge", None, 24), ("trn1.32xlarge", None, 32), ("inf1.24xlarge", None, 64), ("trn2.48xlarge", 2, 64)],
)
def test_one_core_copies_reach_the_core_count_and_one_more_is_refused(name: str, lnc: int | None, limit: int) -> None:
    plan = InstancePlan(NeuronInstanceType.of(name), lnc)
    placed = plan.place_cores("Fleet/Embedding", 1, limit)
    assert [p.visible_cores for p in placed] == [str(core) for core in range(limit)]
    assert plan.free_cores == []
    with pytest.raises(NeuronConfigurationError, match=r"Fleet/More: 1 copy of 1 NeuronCore do not fit.*NEURON046"):
        plan.place_cores("Fleet/More", 1, 1)


@pytest.mark.parametrize("instance", TYPES, ids=[t.name for t in TYPES])
def test_every_type_runs_one_model_per_neuron_core(instance: NeuronInstanceType) -> None:
    for lnc in instance.lnc_options:
        plan = InstancePlan(instance, lnc)
        placed = plan.place_cores("Fleet/M", 1, instance.cores(lnc))
        assert len(placed) == instance.cores(lnc) == len({p.cores.start for p in placed})
        with pytest.raises(NeuronConfigurationError, match="NEURON046"):
            plan.place_cores("Fleet/M", 1, 1)


def test_core_copies_fill_shared_chips_before_whole_ones() -> None:
    """An LLM on chips 0-3, then 3 one-core embedders (chips 4-5, one core left), then a one-core reranker lands on
    the core the embedders left, so chips 6-11 stay whole for later whole-chip models."""
    plan = InstancePlan(NeuronInstanceType.of("inf2.48xlarge"))
    plan.place_chips("F/Llm", 4, 1)
    embedders = plan.place_cores("F/Embedding", 1, 3)
    assert [p.cores for p in embedders] == [range(8, 9), range(9, 10), range(10, 11)]
    (reranker,) = plan.place_cores("F/Reranker", 1, 1)
    assert reranker.cores == range(11, 12) and reranker.devices == range(5, 6)
    assert plan.free_chips == list(range(6, 12))
    assert plan.describe_free() == "free chips 6-11 (6 of 12)"


def test_a_refused_request_places_nothing_and_names_what_is_free() -> None:
    plan = InstancePlan(NeuronInstanceType.of("inf2.xlarge"))
    plan.place_cores("F/A", 1, 1)
    with pytest.raises(NeuronConfigurationError) as refused:
        plan.place_cores("F/B", 1, 2)
    assert "F/B: 2 copies of 1 NeuronCore do not fit in what is left of inf2.xlarge (1 would)" in str(refused.value)
    assert "free cores 1 (on chip 0, which other copies share)" in str(refused.value)
    assert plan.free_cores == [1] and len(plan.placements) == 1


def test_a_core_copy_beyond_one_chip_is_refused_with_the_chip_size() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"cores_per_task=3 but a inf2.48xlarge chip holds 2.*NEURON063"):
        InstancePlan(NeuronInstanceType.of("inf2.48xlarge")).place_cores("F/Big", 3, 1)
    with pytest.raises(NeuronConfigurationError, match=r"chip holds 4 NeuronCores at LNC=2"):
        InstancePlan(NeuronInstanceType.of("trn2.48xlarge")).place_cores("F/Big", 5, 1)


def test_commit_refuses_a_core_already_held() -> None:
    plan = InstancePlan(NeuronInstanceType.of("inf2.xlarge"))
    (first,) = plan.place_cores("F/A", 1, 1)
    with pytest.raises(ValueError, match="not all free"):
        plan.commit([Placement(first.cores, first.devices, whole_chips=False)])


# --- random mixes ------------------------------------------------------------------------------------------------

Request = tuple[str, int, int]
"""(``"chips"`` or ``"cores"``, size, copies)."""


@st.composite
def _plans(draw: st.DrawFn) -> tuple[NeuronInstanceType, int, list[Request]]:
    instance = draw(st.sampled_from(TYPES))
    lnc = draw(st.sampled_from(instance.lnc_options))
    per_chip = instance.cores_per_chip(lnc)
    request = st.one_of(
        st.tuples(st.just("chips"), st.sampled_from(instance.copy_sizes()), st.integers(1, 4)),
        st.tuples(st.just("cores"), st.integers(1, per_chip), st.integers(1, 8)),
    )
    return instance, lnc, draw(st.lists(request, min_size=1, max_size=12))


def _check_invariants(plan: InstancePlan) -> None:
    instance, per_chip = plan.instance, plan.cores_per_chip
    held = [core for placement in plan.placements for core in placement.cores]
    assert len(held) == len(set(held)), "a NeuronCore is held twice"
    assert set(held).isdisjoint(plan.free_cores) and set(held) | set(plan.free_cores) == set(range(plan.cores))
    for placement in plan.placements:
        # Nothing planned is idle: the copy's runtime takes exactly the cores planned for it.
        runtime_takes = (
            cores_of_devices(placement.devices, per_chip)
            if placement.visible_cores is None
            else parse_core_list(placement.visible_cores)
        )
        assert runtime_takes == set(placement.cores)
        assert set(placement.cores) <= cores_of_devices(placement.devices, per_chip), "a core off the mapped chips"
        if placement.whole_chips:
            assert instance.is_valid_device_set(placement.devices)
        else:
            assert len(placement.devices) == 1, "a core copy spans chips"


@settings(max_examples=examples(200, loop=50), deadline=None)
@given(_plans())
def test_random_mixes_never_hold_a_core_twice_or_leave_a_planned_core_idle(
    drawn: tuple[NeuronInstanceType, int, list[Request]],
) -> None:
    instance, lnc, requests = drawn
    plan = InstancePlan(instance, lnc)
    for kind, size, copies in requests:
        before = (plan.free_cores, list(plan.placements))
        free_chips, free_cores = len(plan.free_chips), len(plan.free_cores)
        try:
            placed = (plan.place_chips if kind == "chips" else plan.place_cores)("F/M", size, copies)
        except NeuronConfigurationError as refused:
            assert "NEURON046" in str(refused)
            assert (plan.free_cores, plan.placements) == before, "a refused request placed something"
            # Single units are refused only when too few are free.
            if size == 1:
                assert copies > (free_chips if kind == "chips" else free_cores)
            continue
        each = size * plan.cores_per_chip if kind == "chips" else size
        assert len(placed) == copies and all(len(p.cores) == each for p in placed)
        _check_invariants(plan)
