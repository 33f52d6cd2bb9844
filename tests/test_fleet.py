"""``NeuronFleet``: several models on one fleet, placed by the same ECS simulation as the slices.

For every catalog type a fleet of mixed models (a large one and single-chip ones filling the rest) is
synthesized; the simulation reads each copy's service and task definition from the template and places
the tasks as ECS would, in several orders: no device is mapped twice and every device the plan gave
out is held, on every instance.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from conftest import resources
from test_sliced_service import INSTANCES, fleet, orders, place, services_of

from neuron_constructs import (
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronInstanceType,
    NeuronService,
    SlicedNeuronService,
)
from neuron_constructs.tools.tables import mixed_fleet

pytestmark = pytest.mark.xdist_group("fleet")  # one worker builds the module's stacks once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


def plan(instance: NeuronInstanceType) -> list[tuple[str, int, int]]:
    """(model, devices_per_task, copies): the docs' mixed fleet for the type (a large model, one-chip copies)."""
    return [(f"Model{i}", k, copies) for i, (k, copies) in enumerate(mixed_fleet(instance))]


@pytest.fixture(scope="module")
def every_fleet() -> dict[str, dict[str, Any]]:
    """One synthesized fleet of mixed models per catalog type."""
    app = App(analytics_reporting=False)
    stacks = {}
    for instance in NeuronInstanceType.all():
        stack = Stack(app, f"Fleet-{instance.name.replace('.', '-')}")
        cluster = NeuronCluster(stack, "Neuron", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        cluster.add_ec2_capacity("Capacity", instance_type=instance.name, max_capacity=INSTANCES)
        neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type=instance.name, instances=INSTANCES)
        for name, devices_per_task, copies in plan(instance):
            neuron_fleet.add_model(name, devices_per_task=devices_per_task, copies=copies, image=IMAGE)
        stacks[instance.name] = stack
    assembly = app.synth()
    return {name: assembly.get_stack_by_name(stack.stack_name).template for name, stack in stacks.items()}


@pytest.mark.parametrize("instance_type", [e.name for e in NeuronInstanceType.all()])
def test_mixed_models_never_share_a_device_and_hold_every_device_planned(
    instance_type: str, every_fleet: dict[str, dict[str, Any]]
) -> None:
    instance = NeuronInstanceType.of(instance_type)
    services = services_of(every_fleet[instance_type], "NeuronCluster")
    planned = sum(devices * copies for _, devices, copies in plan(instance))
    assert planned == instance.chips
    assert len(services) == sum(copies for _, _, copies in plan(instance))
    assert all(s.distinct_instance and s.member_of == (instance_type,) for s in services)
    for label, order in orders(services).items():
        instances = fleet(instance, 0.9)
        place(services, instances, order)
        for i in instances:
            held = Counter(d for t in i.tasks for d in t.devices)
            assert all(n == 1 for n in held.values()), f"{label}: a device mapped twice on one instance: {held}"
            assert set(held) == set(instance.device_paths), f"{label}: planned devices idle: {held}"


def _inf2_fleet(stack: Stack) -> NeuronFleet:
    cluster = NeuronCluster(stack, "Cluster")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    return NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")


def test_models_take_the_lowest_free_ranges_and_their_share_of_the_instance() -> None:
    stack = Stack(App(analytics_reporting=False), "Rag")
    neuron_fleet = _inf2_fleet(stack)
    llm = neuron_fleet.add_model("Llm", devices_per_task=4, copies=2, image=IMAGE)
    embedding = neuron_fleet.add_model("Embedding", devices_per_task=1, copies=4, image=IMAGE)
    assert [list(r) for r in llm.device_ranges] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [list(r) for r in embedding.device_ranges] == [[8], [9], [10], [11]]
    instance = NeuronInstanceType.of("inf2.48xlarge")
    assert (llm.cpu, llm.memory_mib) == (instance.cpu_units // 3, instance.schedulable_memory_mib // 3)
    assert (embedding.cpu, embedding.memory_mib) == (
        instance.cpu_units // 12,
        instance.schedulable_memory_mib // 12,
    )
    assert neuron_fleet.free_devices == []
    template = App.of(stack).synth().get_stack_by_name("Rag").template  # type: ignore[union-attr]
    devices = sorted(
        d["HostPath"]
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in t["Properties"]["ContainerDefinitions"]
        for d in c.get("LinuxParameters", {}).get("Devices", [])
    )
    assert devices == sorted(f"/dev/neuron{i}" for i in range(12))
    assert len(resources(template, "AWS::ECS::Service")) == 6


def test_a_range_the_torus_does_not_allow_is_refused_with_the_free_devices() -> None:
    stack = Stack(App(analytics_reporting=False), "Torus")
    cluster = NeuronCluster(stack, "Cluster")
    cluster.add_ec2_capacity("Trn1", instance_type="trn1.32xlarge", max_capacity=1)
    neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="trn1.32xlarge")
    neuron_fleet.add_model("Eight", devices_per_task=8, image=IMAGE)
    with pytest.raises(
        NeuronConfigurationError, match=r"devices_per_task=3 is no device set the 2d-torus .*1, 4, 8, 16"
    ):
        neuron_fleet.add_model("Three", devices_per_task=3, image=IMAGE)
    assert [
        list(r) for r in neuron_fleet.add_model("Four", devices_per_task=4, copies=2, image=IMAGE).device_ranges
    ] == [
        [8, 9, 10, 11],
        [12, 13, 14, 15],
    ]


def test_copies_that_fit_only_unaligned_are_placed() -> None:
    stack = Stack(App(analytics_reporting=False), "Unaligned")
    neuron_fleet = _inf2_fleet(stack)
    neuron_fleet.add_model("Two", devices_per_task=2, image=IMAGE)
    five = neuron_fleet.add_model("Five", devices_per_task=5, copies=2, image=IMAGE)
    assert [list(r) for r in five.device_ranges] == [[2, 3, 4, 5, 6], [7, 8, 9, 10, 11]]


def test_cpu_or_memory_beyond_what_is_left_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Cpu")
    neuron_fleet = _inf2_fleet(stack)
    neuron_fleet.add_model("Llm", devices_per_task=8, image=IMAGE, task_cpu=180_000)
    with pytest.raises(NeuronConfigurationError, match=r"\[NEURON046: .*free chips 8-11 \(4 of 12\)"):
        neuron_fleet.add_model("Embedding", devices_per_task=1, copies=4, image=IMAGE)


def test_a_fleet_capacity_is_the_fleet_s_alone() -> None:
    stack = Stack(App(analytics_reporting=False), "Shared")
    neuron_fleet = _inf2_fleet(stack)
    neuron_fleet.add_model("Llm", devices_per_task=8, image=IMAGE)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON020"):
        SlicedNeuronService(
            stack,
            "Sliced",
            cluster=neuron_fleet.cluster,
            instance_type="inf2.48xlarge",
            devices_per_task=2,
            image=IMAGE,
        )
    from neuron_constructs import ManualNeuronTaskDefinition

    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.48xlarge", devices=[11], memory_mib=4096)
    task.add_neuron_container("model", image=IMAGE)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON020"):
        NeuronService(stack, "Other", cluster=neuron_fleet.cluster, task_definition=task)


def test_each_model_deploys_in_two_waves_and_attaches_on_its_own_path() -> None:
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    from neuron_constructs import NeuronLoadBalancer

    stack = Stack(App(analytics_reporting=False), "Paths")
    neuron_fleet = _inf2_fleet(stack)
    port = [ecs.PortMapping(container_port=8080)]
    llm = neuron_fleet.add_model("Llm", devices_per_task=4, copies=2, image=IMAGE, port_mappings=port)
    embedding = neuron_fleet.add_model("Embedding", devices_per_task=1, copies=4, image=IMAGE, port_mappings=port)
    assert (llm.waves, embedding.waves) == ([[0], [1]], [[0, 1], [2, 3]])
    listener = NeuronLoadBalancer(stack, "Lb", cluster=neuron_fleet.cluster).listener
    for priority, (model, path) in enumerate(((llm, "/v1/*"), (embedding, "/embed/*")), start=1):
        model.attach_to_listener(
            listener, conditions=[elbv2.ListenerCondition.path_patterns([path])], priority=priority
        )
    template = App.of(stack).synth().get_stack_by_name("Paths").template  # type: ignore[union-attr]
    rules = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    assert sorted(r["Properties"]["Conditions"][0]["PathPatternConfig"]["Values"][0] for r in rules) == [
        "/embed/*",
        "/v1/*",
    ]
    assert len(resources(template, "AWS::ElasticLoadBalancingV2::TargetGroup")) == 2


def test_the_template_check_keeps_a_fleet_s_capacity_its_own_with_chips_free() -> None:
    """A fleet that leaves chips free still owns its capacity, and its copies share every instance: a plain service
    on the capacity (NEURON020) and a fixed host port added after construction (NEURON018) fail the synth."""
    stack = Stack(App(analytics_reporting=False), "Partial")
    neuron_fleet = _inf2_fleet(stack)
    model = neuron_fleet.add_model(
        "Llm", devices_per_task=4, copies=2, image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)]
    )
    model.task_definitions[0].neuron_containers[0].add_port_mappings(
        ecs.PortMapping(container_port=9000, host_port=9000)
    )
    task = ecs.Ec2TaskDefinition(stack, "Plain")
    task.add_container("plain", image=IMAGE, memory_limit_mib=256)
    ecs.Ec2Service(
        stack,
        "PlainService",
        cluster=neuron_fleet.cluster.cluster,
        task_definition=task,
        capacity_provider_strategies=[
            ecs.CapacityProviderStrategy(
                capacity_provider=neuron_fleet.capacity.capacity_provider.capacity_provider_name, weight=1
            )
        ],
    )
    with pytest.raises(RuntimeError) as failed:
        App.of(stack).synth()  # type: ignore[union-attr]
    import json
    import re
    from pathlib import Path

    directory = re.search(r"found in: (\S+validation-report\.json)", str(failed.value))
    assert directory
    report = json.loads(Path(directory.group(1)).read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "NeuronConstructs")
    rules = {v["ruleName"] for v in plugin["violations"]}
    assert {"NEURON020", "NEURON018"} <= {r.rsplit("::", 1)[-1] for r in rules}
    assert "are one fleet that owns it" in json.dumps(plugin)
