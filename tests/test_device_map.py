"""The device map of ``neuron-ecs inspect``: per instance its chips as groups of NeuronCore cells, holders, cores held
twice and idle ones."""

from __future__ import annotations

import io
import re
import time

from conftest import MEASURED_IN_CI

from neuron_constructs.tools.commands.inspect import _print_inspection
from neuron_constructs.tools.commands.output import _Output
from neuron_constructs.tools.device_map import CONFLICT, IDLE, MAX_WIDTH, inspection_layouts, render_device_map
from neuron_constructs.tools.inspection import (
    ClusterInspection,
    ContainerInstance,
    NeuronDevices,
    Task,
    TaskContainer,
    find_problems,
)

ANSI = re.compile(r"\033\[[0-9;]*m")


def _instance(name: str, instance_type: str, registered: range) -> ContainerInstance:
    return ContainerInstance(f"ci/{name}", f"i-{name}", instance_type, NeuronDevices(tuple(map(str, registered)), ()))


def _manual(name: str, on: str, devices: range | list[int]) -> Task:
    paths = tuple(f"/dev/neuron{i}" for i in devices)
    return Task(f"task/{name}", f"td/{name}:1", f"ci/{on}", (TaskContainer("model", (), paths),))


def _inspection(instances: list[ContainerInstance], tasks: list[Task]) -> ClusterInspection:
    return ClusterInspection("c", tuple(instances), tuple(tasks), tuple(find_problems(instances, tasks)))


def _cores(name: str, on: str, devices: list[int], visible: str | None = None, lnc: int | None = None) -> Task:
    paths = tuple(f"/dev/neuron{i}" for i in devices)
    return Task(f"task/{name}", f"td/{name}:1", f"ci/{on}", (TaskContainer("model", (), paths, visible, lnc),))


def test_each_core_is_labelled_with_its_holder_and_conflicts_and_idle_cores_are_marked() -> None:
    inspection = _inspection(
        [_instance("a", "inf2.24xlarge", range(6))], [_manual("first", "a", [0, 1]), _manual("second", "a", [1, 2])]
    )
    (only,) = inspection_layouts(inspection)
    # inf2: 2 NeuronCores a chip, a cell each.
    assert only.cells == ("A", "A", CONFLICT, CONFLICT, "B", "B") + (IDLE,) * 6
    assert only.legend == (("A", "first/model (first:1)"), ("B", "second/model (second:1)"))
    assert only.conflicts == ((2, ("A", "B")), (3, ("A", "B")))
    assert (only.idle_chips, only.idle_cores) == ((3, 4, 5), tuple(range(6, 12)))
    assert render_device_map(inspection, styled=False) == [
        "i-a (inf2.24xlarge): 6 chips, 12 cores, 3 chips idle, 6 cores idle, 2 cores held twice",
        "  chip  0  1  2  3  4  5",
        "  core  0  2  4  6  8  10",
        "        AA !! BB .. .. ..",
        "    A  first/model (first:1)",
        "    B  second/model (second:1)",
        "    !  /dev/neuron1 (cores 2-3) held by A and B",
    ]


def test_tasks_on_disjoint_cores_of_one_chip_share_it_and_one_core_held_twice_is_a_conflict() -> None:
    disjoint = _inspection(
        [_instance("a", "inf2.xlarge", range(1))], [_cores("x", "a", [0], "0"), _cores("y", "a", [0], "1")]
    )
    (only,) = inspection_layouts(disjoint)
    assert only.cells == ("A", "B") and only.conflicts == () and not disjoint.has_conflict
    shared = _inspection(
        [_instance("a", "inf1.6xlarge", range(4))], [_cores("x", "a", [1], "4-5"), _cores("y", "a", [1], "5-6")]
    )
    (only,) = inspection_layouts(shared)
    assert only.cells[4:8] == ("A", CONFLICT, "B", IDLE) and only.conflicts == ((5, ("A", "B")),)
    assert render_device_map(shared, styled=False)[-1] == "    !  core 5 of /dev/neuron1 held by A and B"
    assert shared.has_conflict


def test_managed_allocations_hold_every_core_of_their_devices_and_the_catalog_chip_count_is_drawn() -> None:
    managed = Task("task/m", "td/m:2", "ci/t", (TaskContainer("vllm", tuple(map(str, range(8))), ()),))
    inspection = _inspection([_instance("t", "trn1.32xlarge", range(16))], [managed])
    (only,) = inspection_layouts(inspection)
    assert only.cells == ("A",) * 16 + (IDLE,) * 16
    assert only.holders[0].cores == frozenset(range(16))


def test_wide_instances_wrap_their_chips_within_the_line_width() -> None:
    inf1 = _inspection([_instance("a", "inf1.24xlarge", range(16))], [_cores("x", "a", [12, 13], "48-55")])
    trn2 = _inspection([_instance("b", "trn2.48xlarge", range(16))], [_cores("y", "b", [3], "24-27", lnc=1)])
    inf1_lines = render_device_map(inf1, styled=False)
    trn2_lines = render_device_map(trn2, styled=False)
    assert all(len(line) < MAX_WIDTH for line in inf1_lines + trn2_lines)
    assert inf1_lines[3].split() == ["...."] * 12 + ["AAAA", "AAAA", "....", "...."]  # 64 cores on one row
    # trn2 at LNC=1: 8 cores a chip, 128 in all, in two rows of 8 chips.
    assert trn2_lines[0].startswith("i-b (trn2.48xlarge): 16 chips, 128 cores")
    assert trn2_lines[1].split() == ["chip", *map(str, range(8))]
    assert trn2_lines[3].split()[3] == "AAAA...."
    assert trn2_lines[4].split() == ["chip", *map(str, range(8, 16))]


def test_a_type_the_catalog_lacks_is_drawn_a_cell_per_chip() -> None:
    tasks = [_cores("x", "a", [0], "0"), _cores("y", "a", [0], "1")]
    inspection = _inspection([_instance("a", "inf9.large", range(2))], tasks)
    (only,) = inspection_layouts(inspection)
    assert only.cells == (CONFLICT, IDLE) and not only.knows_cores


def test_plain_when_piped_coloured_on_a_terminal_with_the_same_text() -> None:
    inspection = _inspection([_instance("a", "inf2.xlarge", range(1))], [_manual("x", "a", [0])])
    plain = render_device_map(inspection, styled=False)
    coloured = render_device_map(inspection, styled=True)
    assert not any(ANSI.search(line) for line in plain)
    assert any(ANSI.search(line) for line in coloured)
    # Same cells in the same columns: colour (and a middle dot for idle) is all that differs.
    assert [ANSI.sub("", line).replace("·", IDLE) for line in coloured] == plain


def test_inspect_prints_the_map_after_the_tables() -> None:
    inspection = _inspection([_instance("a", "inf2.xlarge", range(1))], [])
    stream = io.StringIO()
    _print_inspection(inspection, _Output(stream))
    text = stream.getvalue()
    assert "NeuronCores per instance" in text
    assert "i-a (inf2.xlarge): 1 chip, 2 cores, 1 chip idle, 2 cores idle" in text and not ANSI.search(text)


@MEASURED_IN_CI
def test_the_map_of_1000_instances_and_5000_tasks_is_drawn_within_the_inspect_budget() -> None:
    instances = [_instance(f"{n:04x}", "inf2.48xlarge", range(12)) for n in range(1000)]
    tasks = [_manual(f"t{n}", f"{n % 1000:04x}", [2 * (n // 1000), 2 * (n // 1000) + 1]) for n in range(5000)]
    inspection = _inspection(instances, tasks)
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        lines = render_device_map(inspection, styled=True)
        timings.append(time.perf_counter() - start)
    assert len([line for line in lines if line.startswith("i-")]) == 1000
    assert sorted(timings)[1] < 1.0, timings  # bench-inspect draws its fleet of 28,000 core cells in 0.28 s


def test_containers_of_one_task_on_one_chip_are_no_conflict() -> None:
    both = Task(
        "task/one",
        "td/one:1",
        "ci/a",
        (TaskContainer("model", (), ("/dev/neuron0",)), TaskContainer("sidecar", (), ("/dev/neuron0",))),
    )
    inspection = _inspection([_instance("a", "inf2.xlarge", range(1))], [both])
    (only,) = inspection_layouts(inspection)
    assert only.cells == ("A", "A") and only.conflicts == ()
    assert not [f for f in inspection.findings if f.kind == "conflict"]


def test_the_docs_show_the_map_the_code_draws() -> None:
    from pathlib import Path

    def manual(name: str, family: str, on: str, devices: list[int], cores: str | None = None) -> Task:
        return Task(
            f"arn:aws:ecs:us-east-1:123456789012:task/neuron/{name}",
            f"arn:aws:ecs:us-east-1:123456789012:task-definition/{family}",
            on,
            (TaskContainer("vllm", (), tuple(f"/dev/neuron{i}" for i in devices), cores),),
        )

    a = ContainerInstance("ci/a", "i-0a1b2c3d4e5f60718", "inf2.48xlarge", NeuronDevices(tuple(map(str, range(12))), ()))
    b = ContainerInstance("ci/b", "i-0f9e8d7c6b5a49382", "inf2.24xlarge", NeuronDevices(tuple(map(str, range(6))), ()))
    tasks = [
        manual("4f1c9e2a", "llm-slice-0:3", "ci/a", [0, 1, 2, 3]),
        manual("7d2e0b51", "llm-slice-1:3", "ci/a", [4, 5, 6, 7]),
        manual("a3c5f7e9", "embedding-0:2", "ci/a", [8], "16"),
        manual("b6d80e12", "embedding-1:2", "ci/a", [8], "17"),
        manual("c81d44f0", "vllm:5", "ci/b", [0, 1]),
        manual("e09b7a3c", "vllm:5", "ci/b", [0, 1]),
    ]
    drawn = render_device_map(
        _inspection([a, b], tasks),
        styled=False,
        utilization={"i-0a1b2c3d4e5f60718": 61.3, "i-0f9e8d7c6b5a49382": 12.0},
    )
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    sample = page.split("The device map, here with `--metrics`", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert sample.strip().splitlines() == [line.rstrip() for line in drawn]
