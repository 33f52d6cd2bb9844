"""Each example stack, broken three ways - through the library after construction, beside it with plain
aws-cdk-lib, and with an escape hatch - fails ``cdk synth`` with every broken rule named by the template
checks, with the construct path and the rule's message."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from app import (
    DEFAULT_MODEL_ID,
    NeuronInferenceEc2,
    NeuronInferenceManaged,
    NeuronMixedCluster,
    NeuronSlicedVllm,
)
from aws_cdk import App, CfnResource, Stack
from aws_cdk import aws_ecs as ecs
from conftest import imported_vpc

from neuron_constructs.knowledge import rules as r

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
BROKEN_APP = pytest.mark.xdist_group("every_path")  # one worker synthesizes the broken examples once


def _devices(scope: Stack, id: str, *indices: int) -> ecs.LinuxParameters:
    parameters = ecs.LinuxParameters(scope, id)
    parameters.add_devices(*[ecs.Device(host_path=f"/dev/neuron{i}") for i in indices])
    return parameters


def _l1(construct: Any) -> CfnResource:
    resource = construct.node.default_child
    assert isinstance(resource, CfnResource)
    return resource


def _plain_task(scope: Stack, id: str, *, instance_type: str, devices: tuple[int, ...] = ()) -> ecs.TaskDefinition:
    task = ecs.TaskDefinition(
        scope,
        id,
        compatibility=ecs.Compatibility.EC2,
        memory_mib="2048",
        placement_constraints=[ecs.PlacementConstraint.member_of(f"attribute:ecs.instance-type == {instance_type}")],
    )
    task.add_container(
        "plain",
        image=IMAGE,
        memory_limit_mib=1024,
        linux_parameters=_devices(scope, f"{id}Devices", *devices) if devices else None,
    )
    return task


def _strategy(provider: Any) -> list[ecs.CapacityProviderStrategy]:
    return [ecs.CapacityProviderStrategy(capacity_provider=provider.capacity_provider_name, weight=1)]


def break_managed(app: App) -> Stack:
    stack = NeuronInferenceManaged(app, "NeuronInferenceManaged", model_id=DEFAULT_MODEL_ID)
    # library, after construction: a sidecar with tmpfs, which Managed Instances reject
    parameters = ecs.LinuxParameters(stack, "Scratch")
    parameters.add_tmpfs(ecs.Tmpfs(container_path="/scratch", size=64))
    stack.task_definition.add_container("scratch", image=IMAGE, linux_parameters=parameters)
    # plain aws-cdk-lib: a hand-mapped task on the same Managed Instances capacity
    plain = ecs.TaskDefinition(
        stack, "Plain", compatibility=ecs.Compatibility.MANAGED_INSTANCES, cpu="1024", memory_mib="2048"
    )
    plain.add_container("plain", image=IMAGE, linux_parameters=_devices(stack, "PlainDevices", 0))
    capacity = stack.neuron.managed_instances_capacities[0]
    ecs.FargateService(
        stack,
        "PlainService",
        cluster=stack.neuron.cluster,
        task_definition=plain,
        capacity_provider_strategies=_strategy(capacity.capacity_provider),
        min_healthy_percent=100,
    )
    # escape hatch: the sidecar asks for NeuronDevice too
    _l1(stack.task_definition.task_definition).add_property_override(
        "ContainerDefinitions.2.ResourceRequirements", [{"Type": "NeuronDevice", "Value": "ALL"}]
    )
    return stack


def break_ec2(app: App) -> Stack:
    stack = NeuronInferenceEc2(app, "NeuronInferenceEc2", model_id=DEFAULT_MODEL_ID)
    # library, after construction: a sidecar mapping the device the model holds
    stack.task_definition.add_container(
        "peek", image=IMAGE, memory_limit_mib=64, linux_parameters=_devices(stack, "Peek", 0)
    )
    # plain aws-cdk-lib: a second service of the same manual task definition
    (capacity,) = stack.neuron.auto_scaling_capacities
    ecs.Ec2Service(
        stack,
        "Twin",
        cluster=stack.neuron.cluster,
        task_definition=stack.task_definition.task_definition,
        capacity_provider_strategies=_strategy(capacity.capacity_provider),
        min_healthy_percent=100,
    )
    # escape hatch: more CPU than an inf2.xlarge has
    _l1(stack.task_definition.task_definition).add_property_override("Cpu", "8192")
    return stack


def break_mixed(app: App) -> Stack:
    stack = NeuronMixedCluster(app, "NeuronMixedCluster", model_id=DEFAULT_MODEL_ID, inf1_image_tag="v1")
    managed = stack.node.find_child("Inf2Vllm")
    inf1 = stack.node.find_child("Inf1Serving")
    # library, after construction: a sidecar mapping a device into the managed task
    managed.add_container("side", image=IMAGE, linux_parameters=_devices(stack, "Side", 0))  # type: ignore[attr-defined]
    # plain aws-cdk-lib: a trn1.32xlarge task mapping a device that does not exist
    trn1 = next(c for c in stack.neuron.auto_scaling_capacities if c.node.id == "Trn1")
    ecs.Ec2Service(
        stack,
        "Beyond",
        cluster=stack.neuron.cluster,
        task_definition=_plain_task(stack, "BeyondTask", instance_type="trn1.32xlarge", devices=(16,)),
        capacity_provider_strategies=_strategy(trn1.capacity_provider),
        min_healthy_percent=100,
    )
    # escape hatch: the Inf1 task's instance-type pin dropped
    _l1(inf1.task_definition).add_property_override("PlacementConstraints", [])  # type: ignore[attr-defined]
    return stack


def _sliced(app: App, name: str) -> NeuronSlicedVllm:
    instance_type, capacity_id, devices_per_task, instances = {
        "NeuronSlicedInf2": ("inf2.48xlarge", "Inf2", 2, 1),
        "NeuronSlicedTrn1": ("trn1.32xlarge", "Trn1", 4, 2),
    }[name]
    return NeuronSlicedVllm(
        app,
        name,
        model_id=DEFAULT_MODEL_ID,
        instance_type=instance_type,
        capacity_id=capacity_id,
        devices_per_task=devices_per_task,
        instances=instances,
    )


def break_sliced_inf2(app: App) -> Stack:
    stack = _sliced(app, "NeuronSlicedInf2")
    # library, after construction: slice 0 (devices 0-1, cores 0-3) told to use cores 4-7
    stack.vllm.task_definitions[0].neuron_containers[0].add_environment("NEURON_RT_VISIBLE_CORES", "4-7")
    # plain aws-cdk-lib: another service on the sliced capacity
    ecs.Ec2Service(
        stack,
        "Intruder",
        cluster=stack.neuron.cluster,
        task_definition=_plain_task(stack, "IntruderTask", instance_type="inf2.48xlarge"),
        capacity_provider_strategies=_strategy(stack.vllm.capacity.capacity_provider),
        min_healthy_percent=100,
    )
    # escape hatch: the Auto Scaling group may not launch a single instance
    _l1(stack.vllm.capacity.auto_scaling_group).add_property_override("MaxSize", "0")
    return stack


def break_sliced_trn1(app: App) -> Stack:
    stack = _sliced(app, "NeuronSlicedTrn1")
    # library, after construction: a slice binds host port 9000
    stack.vllm.task_definitions[0].neuron_containers[0].add_port_mappings(
        ecs.PortMapping(container_port=9000, host_port=9000)
    )
    # plain aws-cdk-lib: NeuronDevice = ALL on the Auto Scaling capacity (escape hatch inside a plain task)
    plain = _plain_task(stack, "Managed", instance_type="trn1.32xlarge")
    _l1(plain).add_property_override(
        "ContainerDefinitions.0.ResourceRequirements", [{"Type": "NeuronDevice", "Value": "ALL"}]
    )
    other = stack.neuron.add_ec2_capacity("Other", instance_type="trn1.32xlarge", max_capacity=1)
    ecs.Ec2Service(
        stack,
        "ManagedOnEc2",
        cluster=stack.neuron.cluster,
        task_definition=plain,
        capacity_provider_strategies=_strategy(other.capacity_provider),
        min_healthy_percent=100,
    )
    # escape hatch: slice 0 asks for more tasks than the group has instances
    _l1(stack.vllm.services[0]).add_property_override("DesiredCount", 5)
    return stack


BREAKS: dict[str, tuple[Callable[[App], Stack], list[tuple[r.Rule, str]]]] = {
    "NeuronInferenceManaged": (
        break_managed,
        [
            (r.MANAGED_INSTANCES_FIELD, r"NeuronInferenceManaged/Vllm/TaskDefinition/scratch: linuxParameters.Tmpfs"),
            (r.SHARED_DEVICE, r"NeuronInferenceManaged/PlainService: it and NeuronInferenceManaged/Service/Service"),
            (r.ONE_NEURON_CONTAINER, r"NeuronInferenceManaged/Vllm/TaskDefinition: containers \['vllm', 'scratch'\]"),
        ],
    ),
    "NeuronInferenceEc2": (
        break_ec2,
        [
            (r.DUPLICATE_DEVICE, r"NeuronInferenceEc2/Vllm/TaskDefinition: /dev/neuron0 is mapped 2 times"),
            (r.SHARED_DEVICE, r"NeuronInferenceEc2/Twin: it and NeuronInferenceEc2/Service/Service both map"),
            (r.TASK_EXCEEDS_INSTANCE, r"NeuronInferenceEc2/Vllm/TaskDefinition: cpu 8192 exceeds"),
        ],
    ),
    "NeuronMixedCluster": (
        break_mixed,
        [
            (r.MIXED_DEVICE_MODES, r"NeuronMixedCluster/Inf2Vllm/TaskDefinition/side: container maps"),
            (r.DEVICE_INDEX_RANGE, r"NeuronMixedCluster/BeyondTask/plain: /dev/neuron16 does not exist"),
            (r.UNPINNED_MANUAL_TASK, r"NeuronMixedCluster/Inf1Serving/TaskDefinition: it maps /dev/neuron devices"),
        ],
    ),
    "NeuronSlicedInf2": (
        break_sliced_inf2,
        [
            (
                r.SLICE_RUNTIME_VARIABLE,
                r"NeuronSlicedInf2/Vllm/Slice0/TaskDefinition/vllm: NEURON_RT_VISIBLE_CORES=4-7",
            ),
            (r.SLICED_CAPACITY_SHARED, r"NeuronSlicedInf2/Intruder: it runs on NeuronSlicedInf2/Neuron/Inf2"),
            (r.CAPACITY_SIZE, r"NeuronSlicedInf2/Neuron/Inf2/Group: MinSize 0, MaxSize 0"),
        ],
    ),
    "NeuronSlicedTrn1": (
        break_sliced_trn1,
        [
            (r.SLICE_HOST_PORT, r"NeuronSlicedTrn1/Vllm/Slice0/TaskDefinition: host port 9000 of a slice"),
            (r.MANAGED_ALLOCATION_CAPACITY, r"NeuronSlicedTrn1/Managed: NeuronDevice in a task definition"),
            (r.SLICES_EXCEED_CAPACITY, r"NeuronSlicedTrn1/Vllm/Slice0Service/Service: 5 tasks with distinctInstance"),
        ],
    ),
}


@pytest.fixture(scope="module")
def broken_report() -> str:
    """Every broken example in one app, synthesized once: the report the template checks fail ``cdk synth`` with."""
    app = App(analytics_reporting=False)
    for build, _ in BREAKS.values():
        build(app)
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    return str(raised.value)


@BROKEN_APP
@pytest.mark.parametrize("example", list(BREAKS))
def test_the_template_check_names_every_broken_rule(example: str, broken_report: str) -> None:
    _, expected = BREAKS[example]
    assert broken_report.startswith("ValidationFailed: FATAL ")
    blocks_of = broken_report.split("\n\n")
    for rule, text in expected:
        assert text.startswith(f"{example}/"), "each expectation names its own stack"
        blocks = [b for b in blocks_of if f"Rule NeuronConstructs::{rule.id}" in b]
        assert blocks, f"{rule.id} not reported:\n{broken_report}"
        assert any(re.search(text, b) for b in blocks), f"{rule.id}: {text!r} not in\n" + "\n".join(blocks)
        assert any(f"[{rule.id}: {rule.aws_rule}] Fix: " in b for b in blocks)


def test_an_untouched_example_synthesizes(templates: dict[str, dict[str, Any]]) -> None:
    assert set(templates) >= set(BREAKS)


def _mistakes_after_construction(app: App) -> dict[str, tuple[r.Rule, str]]:
    """One stack per mistake made through the library after construction or an escape hatch."""
    from aws_cdk import Stack as PlainStack

    from neuron_constructs import (
        ManagedNeuronTaskDefinition,
        ManualNeuronTaskDefinition,
        NeuronCluster,
        NeuronService,
        SlicedNeuronService,
    )

    expected: dict[str, tuple[r.Rule, str]] = {}

    stack = PlainStack(app, "SidecarOnASlice")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
    sliced = SlicedNeuronService(
        stack, "Sliced", cluster=cluster, instance_type="inf2.48xlarge", devices_per_task=2, image=IMAGE
    )
    sliced.task_definitions[0].add_container("sidecar", image=IMAGE, linux_parameters=_devices(stack, "Peek", 2))
    expected[stack.stack_name] = (
        r.UNDECLARED_DEVICE,
        r"Sliced/Slice0/TaskDefinition: its containers map /dev/neuron2",
    )

    for name, override, rule, text in (
        ("BridgeOnManagedInstances", ("NetworkMode", "bridge"), r.MANAGED_INSTANCES_FIELD, r"network mode bridge"),
        (
            "NeuronDeviceRemoved",
            ("ContainerDefinitions.0.ResourceRequirements", []),
            r.NEURON_CONTAINER_STRIPPED,
            r"T/TaskDefinition/model: the Neuron container of a managed task definition no longer asks",
        ),
    ):
        stack = PlainStack(app, name)
        cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
        cluster.add_managed_instances_capacity("Mi")
        task = ManagedNeuronTaskDefinition(stack, "T", cpu=1024, memory_mib=2048)
        task.add_neuron_container("model", image=IMAGE)
        NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
        _l1(task.task_definition).add_property_override(*override)
        expected[name] = (rule, text)

    stack = PlainStack(app, "GpuOnAManualTask")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", memory_mib=2048)
    task.add_neuron_container("model", image=IMAGE)
    _l1(task.task_definition).add_property_override(
        "ContainerDefinitions.0.ResourceRequirements", [{"Type": "GPU", "Value": "1"}]
    )
    expected[stack.stack_name] = (
        r.NEURON_CONTAINER_RESOURCES,
        r"T/TaskDefinition/model: resourceRequirements ask for GPU",
    )
    return expected


def test_mistakes_after_construction_and_through_escape_hatches_fail_synth() -> None:
    app = App(analytics_reporting=False)
    expected = _mistakes_after_construction(app)
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    blocks = str(raised.value).split("\n\n")
    for stack, (rule, text) in expected.items():
        mine = [b for b in blocks if f"FATAL {stack}/" in b and f"Rule NeuronConstructs::{rule.id}" in b]
        assert any(re.search(text, b) for b in mine), f"{stack}: {rule.id} {text!r} not in\n{raised.value}"


def test_copies_of_a_manual_task_get_distinct_instances() -> None:
    from aws_cdk.assertions import Template

    from neuron_constructs import ManualNeuronTaskDefinition, NeuronCluster, NeuronService

    stack = Stack(App(analytics_reporting=False), "Copies")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=3)
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=1024)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task, desired_count=3)  # three fit on one instance
    Template.from_stack(stack).has_resource_properties(
        "AWS::ECS::Service", {"DesiredCount": 3, "PlacementConstraints": [{"Type": "distinctInstance"}]}
    )
