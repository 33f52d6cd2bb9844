"""NEURON023 at the call and on the template: one decision (knowledge.cores.core_overlap), one verdict.

Two services on one capacity that map the same /dev/neuronN share it on disjoint NeuronCores - named with
``cores=`` or with a ``NEURON_RT_VISIBLE_CORES`` set by hand - and conflict on shared ones. The constructs refuse at
``NeuronService(...)``; ``neuron-ecs lint``, ``plan`` and the synth checks find the same on the template."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from cfn import container, ecs_template, manual_task, service, with_resources
from conftest import examples, imported_vpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_constructs import ManualNeuronTaskDefinition, NeuronCluster, NeuronConfigurationError, NeuronService
from neuron_constructs.checks.template_checks import check_template
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import core_overlap, format_core_list, task_cores
from neuron_constructs.tools.planning import plan_paths

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
INSTANCE = "inf2.48xlarge"  # 12 chips of 2 NeuronCores


@dataclass(frozen=True)
class Copy:
    """One service's task: the devices it maps, and how it names its cores - ``visible`` by hand in the container's
    environment, ``cores`` through ``cores=`` - or neither (every core of its devices)."""

    devices: tuple[int, ...]
    visible: str | None = None
    cores: tuple[int, ...] | None = None


def refused_at_call(first: Copy, second: Copy) -> bool:
    """Whether ``NeuronService`` refuses the second service with NEURON023 (after accepting the first)."""
    stack = Stack(App(analytics_reporting=False), "Test")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type=INSTANCE, max_capacity=2)
    for index, copy in enumerate((first, second)):
        task = ManualNeuronTaskDefinition(
            stack,
            f"T{index}",
            instance_type=INSTANCE,
            devices=None if copy.cores is not None else copy.devices,
            cores=copy.cores,
            memory_mib=2048,
        )
        environment = {"NEURON_RT_VISIBLE_CORES": copy.visible} if copy.visible is not None else {}
        task.add_neuron_container("model", image=IMAGE, environment=environment)
        try:
            NeuronService(stack, f"S{index}", cluster=cluster, task_definition=task)
        except NeuronConfigurationError as error:
            assert index == 1 and "[NEURON023:" in str(error), error
            return True
    return False


def _task(copy: Copy) -> dict[str, Any]:
    devices = list(copy.devices)
    named = copy.visible if copy.visible is not None else format_core_list(copy.cores) if copy.cores else None
    if copy.cores is not None:
        devices = sorted({core // 2 for core in copy.cores})
    environment = [{"Name": "NEURON_RT_VISIBLE_CORES", "Value": named}] if named is not None else []
    return manual_task(INSTANCE, containers=[container(devices=devices, Environment=environment)], memory=2048)


def _template(first: Copy, second: Copy) -> dict[str, Any]:
    return with_resources(
        ecs_template(INSTANCE), First=_task(first), Second=_task(second), A=service("First"), B=service("Second")
    )


def refused_on_template(first: Copy, second: Copy) -> bool:
    """Whether the template checks (``neuron-ecs lint``, synth) find NEURON023 in a hand-written template of the
    same two services."""
    return any(f.rule is r.SHARED_DEVICE for f in check_template(_template(first, second)))


def drawn_twice_by_plan(first: Copy, second: Copy) -> bool:
    """Whether ``neuron-ecs plan`` draws a NeuronCore held by both services of that template."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "App.template.json"
        path.write_text(json.dumps(_template(first, second)))
        return plan_paths([str(path)]).holds_a_core_twice


CASES = [
    pytest.param(Copy((0,), visible="0"), Copy((0,), visible="1"), False, id="hand-set 0 and 1 on one device"),
    pytest.param(Copy((0,), visible="0"), Copy((0,), visible="0-1"), True, id="hand-set 0 and 0-1"),
    pytest.param(Copy((0,), visible="1"), Copy((0,)), True, id="hand-set 1 beside the whole device"),
    pytest.param(Copy((0,)), Copy((0, 1)), True, id="whole devices that share one"),
    pytest.param(Copy((0,)), Copy((1,)), False, id="disjoint devices"),
    pytest.param(Copy((), cores=(0,)), Copy((0,), visible="1"), False, id="cores= beside a hand-set core"),
    pytest.param(Copy((), cores=(1,)), Copy((0,), visible="1"), True, id="cores= and the same core by hand"),
    pytest.param(Copy((0, 1), visible="1-2"), Copy((1,), visible="3"), False, id="hand-set across two devices"),
]


@pytest.mark.parametrize(("first", "second", "conflict"), CASES)
def test_call_and_template_agree_on_shared_cores(first: Copy, second: Copy, conflict: bool) -> None:
    """GIVEN two services on one capacity WHEN the constructs and the template checks judge them THEN both give the
    same verdict: disjoint NeuronCores accepted, shared ones refused (NEURON023)."""
    assert refused_at_call(first, second) is conflict
    assert refused_on_template(first, second) is conflict
    assert drawn_twice_by_plan(first, second) is conflict


def test_hand_set_disjoint_cores_synthesize_and_lint_clean() -> None:
    """GIVEN two services whose containers set NEURON_RT_VISIBLE_CORES 0 and 1 by hand on one /dev/neuron0 WHEN the
    app synthesizes (the synth checks run the template checks) THEN it does, and the template has no NEURON023."""
    stack = Stack(App(analytics_reporting=False), "Test")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
    for core in (0, 1):
        task = ManualNeuronTaskDefinition(stack, f"T{core}", instance_type="inf2.xlarge", memory_mib=2048)
        task.add_neuron_container("model", image=IMAGE, environment={"NEURON_RT_VISIBLE_CORES": str(core)})
        NeuronService(stack, f"S{core}", cluster=cluster, task_definition=task)
    template = App.of(stack).synth().get_stack_by_name("Test").template  # type: ignore[union-attr]
    assert not [f for f in check_template(template) if f.rule is r.SHARED_DEVICE]


def test_one_decision_reads_a_shared_device_on_disjoint_cores_as_no_conflict() -> None:
    """The shared decision itself: cores 0 and 1 of chip 0 do not overlap; 0-1 and 1 overlap on core 1; whole
    devices overlap on the device."""
    inf2 = NeuronInstanceType.of(INSTANCE)

    def held(devices: list[int], visible: str | None) -> Any:
        return task_cores(inf2, None, [(devices, {"NEURON_RT_VISIBLE_CORES": visible} if visible else {})])

    assert core_overlap(held([0], "0"), held([0], "1")) is None
    overlap = core_overlap(held([0], "0-1"), held([0], "1"))
    assert overlap is not None and overlap.cores == frozenset({1}) and overlap.devices == frozenset({0})
    whole = core_overlap(held([0, 1], None), held([1], None))
    assert whole is not None and whole.cores is None and whole.devices == frozenset({1})


def _copies() -> st.SearchStrategy[Copy]:
    """A task on the first four chips: its contiguous devices, and a hand-set contiguous core range within them
    (or none)."""

    @st.composite
    def build(draw: st.DrawFn) -> Copy:
        first = draw(st.integers(0, 3))
        last = draw(st.integers(first, min(first + 1, 3)))
        devices = tuple(range(first, last + 1))
        if not draw(st.booleans()):
            return Copy(devices)
        low = draw(st.integers(first * 2, last * 2 + 1))
        high = draw(st.integers(low, last * 2 + 1))
        return Copy(devices, visible=f"{low}-{high}" if high > low else str(low))

    return build()


@settings(max_examples=examples(40, loop=15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_copies(), second=_copies())
def test_random_hand_set_cores_get_one_verdict(first: Copy, second: Copy) -> None:
    """GIVEN random devices and hand-set core ranges for two services on one capacity WHEN the constructs and the
    template checks (and the plan) judge them THEN their verdicts are equal."""
    verdict = refused_at_call(first, second)
    assert refused_on_template(first, second) is verdict
    assert drawn_twice_by_plan(first, second) is verdict
