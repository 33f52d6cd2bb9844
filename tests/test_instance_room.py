"""The room of an instance, as plain arithmetic (no CDK): a warm-pooled root volume against what its warm-up fetches
(NEURON091), and a terminate-first instance refresh against the services' minimum healthy tasks (NEURON087)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuron_constructs.knowledge.instance_refresh import minimum_healthy_tasks, refresh_room
from neuron_constructs.knowledge.warm_start import (
    AMI_ROOT_VOLUME_GIB,
    IMAGE_ON_DISK_FACTOR,
    Fetched,
    root_volume_room,
)

# --------------------------------------------------------------------------- root volume room ---

sizes = st.one_of(st.none(), st.floats(min_value=0.1, max_value=200, allow_nan=False))
fetches = st.lists(
    st.builds(Fetched, st.sampled_from(["img-a", "img-b", "s3://m/a", "s3://m/b"]), st.just("image"), sizes)
    | st.builds(Fetched, st.sampled_from(["s3://m/a", "s3://m/b"]), st.just("artifacts"), sizes),
    max_size=12,
)


def test_the_ami_counts_its_whole_snapshot_and_an_image_three_times_its_registry_size() -> None:
    room = root_volume_room(
        100, [Fetched("vllm", "image", 10), Fetched("s3://m/llama", "artifacts", 25), Fetched("cli", "image")]
    )
    assert (AMI_ROOT_VOLUME_GIB, IMAGE_ON_DISK_FACTOR) == (30, 3.0)
    assert room.known_gib == 30 + 30 + 25
    assert (room.needed_gib, room.fits) == (85, True)
    assert [f.what for f in room.unknown] == ["cli"]
    assert "not counting 1 of unknown size (cli)" in room.describe()
    assert not root_volume_room(84, room.fetched).fits


def test_one_image_named_twice_is_pulled_once_at_the_largest_size_stated() -> None:
    room = root_volume_room(100, [Fetched("vllm", "image"), Fetched("vllm", "image", 8), Fetched("vllm", "image", 5)])
    assert room.fetched == (Fetched("vllm", "image", 8),)
    assert room.unknown == ()


@given(root=st.integers(min_value=30, max_value=500), fetched=fetches)
def test_the_volume_fits_exactly_when_the_known_sizes_on_disk_and_the_ami_do(root: int, fetched: list[Fetched]) -> None:
    room = root_volume_room(root, fetched)
    largest: dict[tuple[str, str], float] = {}
    for f in fetched:
        if f.size_gib is not None:
            largest[(f.kind, f.what)] = max(largest.get((f.kind, f.what), 0), f.size_gib)
    on_disk = sum(size * (IMAGE_ON_DISK_FACTOR if kind == "image" else 1) for (kind, _), size in largest.items())
    assert math.isclose(room.known_gib, AMI_ROOT_VOLUME_GIB + on_disk)
    assert room.fits == (room.needed_gib <= root)
    assert room.needed_gib - 1 < room.known_gib + 1e-6 <= room.needed_gib + 1e-6
    assert {(f.kind, f.what) for f in room.unknown} == {(f.kind, f.what) for f in fetched} - set(largest)
    assert root_volume_room(room.needed_gib, fetched).fits


# ------------------------------------------------------------------------- instance refresh ---


def _worst_running_after(instances: int, batch: int, per_instance: int, tasks: int) -> int:
    """Brute force: every way ``tasks`` tasks may sit on the instances (at most ``per_instance`` each) and every
    batch of ``batch`` instances stopped; the fewest tasks that can run once the batch is gone (those on the instances
    left, and replacements in the room left on them)."""
    worst = tasks
    for layout in itertools.product(range(per_instance + 1), repeat=instances):
        if sum(layout) != tasks:
            continue
        for stopped in itertools.combinations(range(instances), batch):
            survivors = sum(n for i, n in enumerate(layout) if i not in stopped)
            free = sum(per_instance - n for i, n in enumerate(layout) if i not in stopped)
            worst = min(worst, survivors + min(tasks - survivors, free))
    return worst


@given(
    instances=st.integers(min_value=1, max_value=5),
    per_instance=st.integers(min_value=1, max_value=3),
    data=st.data(),
)
def test_a_refresh_keeps_the_minimum_exactly_when_no_batch_of_the_worst_layout_drops_below_it(
    instances: int, per_instance: int, data: st.DataObject
) -> None:
    batch = data.draw(st.integers(min_value=1, max_value=instances))
    tasks = data.draw(st.integers(min_value=1, max_value=instances * per_instance))
    percent = data.draw(st.integers(min_value=0, max_value=100))
    room = refresh_room(instances=instances, batch=batch, per_instance=per_instance, services=[(tasks, percent)])
    assert room.keep == minimum_healthy_tasks(tasks, percent) == math.ceil(tasks * percent / 100)
    assert room.taken == min(tasks, batch * per_instance)
    assert room.fits == (_worst_running_after(instances, batch, per_instance, tasks) >= room.keep)
    assert room.fits == (batch <= room.most_at_a_time)


@given(
    instances=st.integers(min_value=1, max_value=200),
    desired=st.integers(min_value=1, max_value=200),
    percent=st.integers(min_value=0, max_value=100),
    data=st.data(),
)
def test_one_task_per_instance_is_the_rule_as_it_was_for_one_service(
    instances: int, desired: int, percent: int, data: st.DataObject
) -> None:
    batch = data.draw(st.integers(min_value=1, max_value=instances))
    room = refresh_room(instances=instances, batch=batch, per_instance=1, services=[(desired, percent)])
    keep = -(-desired * percent // 100)
    assert room.fits == (keep <= instances - batch)
    assert room.most_at_a_time == max(0, instances - keep)


@given(
    instances=st.integers(min_value=1, max_value=50),
    copies=st.integers(min_value=1, max_value=24),
    percent=st.integers(min_value=0, max_value=100),
    data=st.data(),
)
def test_a_model_of_copies_fits_as_a_whole_exactly_when_each_copy_service_fits_alone(
    instances: int, copies: int, percent: int, data: st.DataObject
) -> None:
    """A fleet model's copies are one service each, one task per instance: ECS keeps each copy's minimum, so the
    model as a whole (its copies per instance) is refused exactly when one copy would be."""
    batch = data.draw(st.integers(min_value=1, max_value=instances))
    model = refresh_room(
        instances=instances, batch=batch, per_instance=copies, services=[(instances, percent)] * copies
    )
    one = refresh_room(instances=instances, batch=batch, per_instance=1, services=[(instances, percent)])
    assert model.fits == one.fits
    assert model.most_at_a_time == one.most_at_a_time
    assert model.taken == min(copies * instances, batch * copies)


@pytest.mark.parametrize(("batch", "fits"), [(1, True), (2, True), (3, False)])
def test_three_copies_an_instance_on_four_at_half_their_tasks(batch: int, fits: bool) -> None:
    room = refresh_room(instances=4, batch=batch, per_instance=3, services=[(4, 50)] * 3)
    assert (room.tasks, room.keep, room.room_left, room.fits, room.most_at_a_time) == (12, 6, (4 - batch) * 3, fits, 2)
