"""``SlicedNeuronService``: the synthesized slices, and a placement simulation that proves they never collide.

The simulation reads everything from the synthesized CloudFormation (each service's desired
count, placement constraints and strategy; each task definition's cpu, memory, ``memberOf``
pin and ``/dev/neuronN`` mappings) and places the tasks the way ECS does: an instance is a
candidate when it matches every ``memberOf`` expression, holds no task of the same service
(``distinctInstance``) and has the cpu and memory left; ``binpack`` on memory picks the
candidate with the least memory left.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from conftest import distinct_layouts, imported_vpc, resources, workloads

from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronInstanceType, SlicedNeuronService
from neuron_constructs.knowledge.cores import parse_core_list

EVERY_SLICING = pytest.mark.xdist_group("sliced")  # one worker builds every slicing once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
INSTANCES = 3
REGISTERED_MEMORY_FRACTIONS = (0.9, 0.975)
"""Registered / nominal memory: the library plans into 90 %; an m4.large registers 97.5 %."""


def _combos() -> list[tuple[str, int]]:
    return [(e.name, k) for e in distinct_layouts() for k in e.slice_sizes()]


@pytest.fixture(scope="session")
def every_slicing() -> dict[tuple[str, int], dict[str, Any]]:
    """One synthesized cluster per (instance layout, devices_per_task), each with its sliced service."""
    app = App(analytics_reporting=False)
    stacks: dict[str, Stack] = {}
    for instance in distinct_layouts():
        stack = Stack(app, instance.name.replace(".", "-"))
        stacks[instance.name] = stack
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
        for k in instance.slice_sizes():
            cluster = NeuronCluster(stack, f"Cluster{k}", vpc=vpc)
            cluster.add_ec2_capacity("Capacity", instance_type=instance.name, max_capacity=INSTANCES)
            SlicedNeuronService(
                stack,
                f"Sliced{k}",
                cluster=cluster,
                instance_type=instance.name,
                devices_per_task=k,
                image=IMAGE,
                instances=INSTANCES,
            )
    assembly = app.synth()
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for name, k in _combos():
        template = assembly.get_stack_by_name(stacks[name].stack_name).template
        out[(name, k)] = {"template": template, "cluster": f"Cluster{k}Cluster"}
    return out


# --- the simulation ---------------------------------------------------------------------------------


@dataclass
class SimTask:
    service: str
    devices: tuple[str, ...]
    cores: tuple[int, ...] = ()


@dataclass
class SimInstance:
    instance_type: str
    cpu: int
    memory: int
    tasks: list[SimTask] = field(default_factory=list)


@dataclass(frozen=True)
class SimService:
    name: str
    desired: int
    cpu: int
    memory: int
    member_of: tuple[str, ...]
    distinct_instance: bool
    binpack_memory: bool
    devices: tuple[str, ...]
    cores: tuple[int, ...] = ()
    """The NeuronCores a task holds (host numbering): those NEURON_RT_VISIBLE_CORES names, else its devices' all."""


class Unplaceable(Exception):
    pass


def services_of(template: dict[str, Any], cluster_prefix: str) -> list[SimService]:
    """The ECS services of one cluster, as the simulation needs them, from the template."""
    clusters = [k for k in resources(template, "AWS::ECS::Cluster") if k.startswith(cluster_prefix)]
    (cluster,) = clusters
    task_definitions = workloads(template, "AWS::ECS::TaskDefinition")
    found = []
    for name, service in workloads(template, "AWS::ECS::Service").items():
        props = service["Properties"]
        if props["Cluster"] != {"Ref": cluster}:
            continue
        task = task_definitions[props["TaskDefinition"]["Ref"]]["Properties"]
        constraints = [*props.get("PlacementConstraints", []), *task.get("PlacementConstraints", [])]
        devices = tuple(
            d["HostPath"] for c in task["ContainerDefinitions"] for d in c.get("LinuxParameters", {}).get("Devices", [])
        )
        member_of = tuple(
            re.fullmatch(r"attribute:ecs\.instance-type == (\S+)", c["Expression"]).group(1)  # type: ignore[union-attr]
            for c in constraints
            if c["Type"] == "memberOf"
        )
        found.append(
            SimService(
                name=name,
                desired=props["DesiredCount"],
                cpu=int(task["Cpu"]),
                memory=int(task["Memory"]),
                member_of=member_of,
                cores=_cores(task, NeuronInstanceType.of(member_of[0])) if member_of else (),
                distinct_instance=any(c["Type"] == "distinctInstance" for c in constraints),
                binpack_memory={"Type": "binpack", "Field": "MEMORY"} in props.get("PlacementStrategies", []),
                devices=devices,
            )
        )
    return found


def _cores(task: dict[str, Any], instance: NeuronInstanceType) -> tuple[int, ...]:
    held: list[int] = []
    for container in task["ContainerDefinitions"]:
        environment = {e["Name"]: e["Value"] for e in container.get("Environment", [])}
        devices = [
            int(d["HostPath"].removeprefix("/dev/neuron"))
            for d in container.get("LinuxParameters", {}).get("Devices", [])
            if d["HostPath"].startswith("/dev/neuron")
        ]
        per_chip = instance.cores_per_chip(int(environment.get("NEURON_LOGICAL_NC_CONFIG", instance.default_lnc)))
        visible = environment.get("NEURON_RT_VISIBLE_CORES")
        held += (
            sorted(parse_core_list(visible) or ())
            if visible
            else [d * per_chip + k for d in devices for k in range(per_chip)]
        )
    return tuple(held)


def place(services: list[SimService], instances: list[SimInstance], order: list[str]) -> None:
    """Place one task per entry of ``order`` (service names), as ECS's scheduler filters and picks."""
    by_name = {s.name: s for s in services}
    for name in order:
        service = by_name[name]
        candidates = [
            i
            for i in instances
            if all(i.instance_type == t for t in service.member_of)
            and not (service.distinct_instance and any(t.service == name for t in i.tasks))
            and i.cpu >= service.cpu
            and i.memory >= service.memory
        ]
        if not candidates:
            raise Unplaceable(f"no instance for a task of {name}")
        chosen = min(candidates, key=lambda i: i.memory) if service.binpack_memory else candidates[0]
        chosen.cpu -= service.cpu
        chosen.memory -= service.memory
        chosen.tasks.append(SimTask(name, service.devices, service.cores))


def orders(services: list[SimService]) -> dict[str, list[str]]:
    """Service by service, round robin, and three seeded shuffles of every task to start."""
    tasks = [s.name for s in services for _ in range(s.desired)]
    result = {
        "service by service": tasks,
        "round robin": [s.name for n in range(max(s.desired for s in services)) for s in services if n < s.desired],
    }
    for seed in range(3):
        shuffled = list(tasks)
        random.Random(seed).shuffle(shuffled)
        result[f"shuffle {seed}"] = shuffled
    return result


def fleet(instance: NeuronInstanceType, fraction: float) -> list[SimInstance]:
    return [
        SimInstance(instance.name, cpu=instance.cpu_units, memory=int(instance.memory_mib * fraction))
        for _ in range(INSTANCES)
    ]


@EVERY_SLICING
@pytest.mark.parametrize("fraction", REGISTERED_MEMORY_FRACTIONS)
@pytest.mark.parametrize(("instance_type", "devices_per_task"), _combos())
def test_slices_fill_every_chip_and_never_share_a_device(
    instance_type: str, devices_per_task: int, fraction: float, every_slicing: dict[tuple[str, int], dict[str, Any]]
) -> None:
    instance = NeuronInstanceType.of(instance_type)
    synthesized = every_slicing[(instance_type, devices_per_task)]
    services = services_of(synthesized["template"], synthesized["cluster"])
    assert len(services) == instance.chips // devices_per_task
    assert all(s.distinct_instance and s.member_of == (instance_type,) for s in services)
    for label, order in orders(services).items():
        instances = fleet(instance, fraction)
        place(services, instances, order)
        for i in instances:
            held = Counter(d for t in i.tasks for d in t.devices)
            assert all(n == 1 for n in held.values()), f"{label}: a device mapped twice on one instance: {held}"
            assert set(held) == set(instance.device_paths), f"{label}: idle chips on an instance: {held}"


@EVERY_SLICING
def test_the_simulation_catches_collisions_without_distinct_instance(
    every_slicing: dict[tuple[str, int], dict[str, Any]],
) -> None:
    synthesized = every_slicing[("inf2.48xlarge", 2)]
    services = [
        SimService(**{**s.__dict__, "distinct_instance": False})
        for s in services_of(synthesized["template"], synthesized["cluster"])
    ]
    instances = fleet(NeuronInstanceType.of("inf2.48xlarge"), 0.975)
    place(services, instances, orders(services)["service by service"])
    held = Counter(d for t in instances[0].tasks for d in t.devices)
    assert max(held.values()) > 1


@EVERY_SLICING
def test_one_instance_too_few_leaves_tasks_unplaced(every_slicing: dict[tuple[str, int], dict[str, Any]]) -> None:
    synthesized = every_slicing[("trn1.32xlarge", 4)]
    services = services_of(synthesized["template"], synthesized["cluster"])
    with pytest.raises(Unplaceable):
        place(services, fleet(NeuronInstanceType.of("trn1.32xlarge"), 0.975)[:-1], orders(services)["round robin"])


# --- the example stacks, by name --------------------------------------------------------------------


def _slices(template: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(service properties, task definition properties) per slice, in slice order."""
    task_definitions = workloads(template, "AWS::ECS::TaskDefinition")
    pairs = [
        (props, task_definitions[props["TaskDefinition"]["Ref"]]["Properties"])
        for props in (s["Properties"] for s in workloads(template, "AWS::ECS::Service").values())
    ]
    return sorted(
        pairs, key=lambda p: p[1]["ContainerDefinitions"][0]["LinuxParameters"]["Devices"][0]["HostPath"][11:].zfill(3)
    )


@pytest.mark.parametrize(
    ("stack", "instance_type", "devices_per_task", "instances", "min_healthy"),
    [("NeuronSlicedInf2", "inf2.48xlarge", 2, 1, 0), ("NeuronSlicedTrn1", "trn1.32xlarge", 4, 2, 50)],
)
def test_example_slices(
    stack: str,
    instance_type: str,
    devices_per_task: int,
    instances: int,
    min_healthy: int,
    templates: dict[str, dict[str, Any]],
) -> None:
    instance = NeuronInstanceType.of(instance_type)
    slices = _slices(templates[stack])
    assert len(slices) == instance.chips // devices_per_task
    for index, (service, task) in enumerate(slices):
        container, sidecar = task["ContainerDefinitions"]  # the model and its engine-metrics sidecar
        assert sidecar["Name"] == "engine-metrics" and "Devices" not in sidecar["LinuxParameters"]
        expected = [f"/dev/neuron{d}" for d in range(index * devices_per_task, (index + 1) * devices_per_task)]
        assert [d["HostPath"] for d in container["LinuxParameters"]["Devices"]] == expected
        assert [d["ContainerPath"] for d in container["LinuxParameters"]["Devices"]] == expected
        assert container["LinuxParameters"]["Capabilities"] == {"Add": ["IPC_LOCK"]}
        assert task["Cpu"] == str(instance.cpu_units // len(slices))
        assert task["Memory"] == str(instance.schedulable_memory_mib // len(slices))
        assert task["NetworkMode"] == "bridge"
        assert task["PlacementConstraints"] == [
            {"Type": "memberOf", "Expression": f"attribute:ecs.instance-type == {instance_type}"}
        ]
        # The runtime takes every core of the mapped devices; no Neuron runtime variable is set.
        assert not any(e["Name"].startswith("NEURON_RT_") for e in container.get("Environment", []))
        tensor_parallel = container["Command"][container["Command"].index("--tensor-parallel-size") + 1]
        assert tensor_parallel == str(devices_per_task * instance.neuron_cores_per_chip)
        assert container["PortMappings"] == [{"ContainerPort": 8080, "HostPort": 0, "Protocol": "tcp"}]
        assert service["PlacementConstraints"] == [{"Type": "distinctInstance"}]
        assert service["PlacementStrategies"] == [{"Type": "binpack", "Field": "MEMORY"}]
        assert service["DesiredCount"] == instances
        assert service["DeploymentConfiguration"]["MaximumPercent"] == 100
        assert service["DeploymentConfiguration"]["MinimumHealthyPercent"] == min_healthy
        (strategy,) = service["CapacityProviderStrategy"]
        assert strategy["CapacityProvider"]["Ref"] in resources(templates[stack], "AWS::ECS::CapacityProvider")


@pytest.mark.parametrize("stack", ["NeuronSlicedInf2", "NeuronSlicedTrn1"])
def test_slices_share_one_log_group_and_one_pair_of_roles(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    slices = _slices(templates[stack])
    groups = {
        c["LogConfiguration"]["Options"]["awslogs-group"]["Ref"] for _, t in slices for c in t["ContainerDefinitions"]
    }
    prefixes = [t["ContainerDefinitions"][0]["LogConfiguration"]["Options"]["awslogs-stream-prefix"] for _, t in slices]
    assert len(groups) == 1 and prefixes == [f"slice{i}" for i in range(len(slices))]
    assert len({t["TaskRoleArn"]["Fn::GetAtt"][0] for _, t in slices}) == 1
    assert len({t["ExecutionRoleArn"]["Fn::GetAtt"][0] for _, t in slices}) == 1


# --- the construct ----------------------------------------------------------------------------------


@pytest.fixture
def inf2_slices() -> SlicedNeuronService:
    stack = Stack(App(analytics_reporting=False), "Test")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=4)
    return SlicedNeuronService(
        stack, "Sliced", cluster=cluster, instance_type="inf2.24xlarge", devices_per_task=2, image=IMAGE, instances=2
    )


def test_construct_exposes_its_layout(inf2_slices: SlicedNeuronService) -> None:
    assert (inf2_slices.slices, inf2_slices.devices_per_task, inf2_slices.instances) == (3, 2, 2)
    assert [t.devices for t in inf2_slices.task_definitions] == [(0, 1), (2, 3), (4, 5)]
    assert len(inf2_slices.services) == 3
    assert inf2_slices.cpu == 96 * 1024 // 3
    assert inf2_slices.memory_mib == int(384 * 1024 * 0.9) // 3
    assert inf2_slices.capacity is not None and inf2_slices.capacity.neuron_instance_type.name == "inf2.24xlarge"


def test_auto_scale_scales_every_slice_together(inf2_slices: SlicedNeuronService) -> None:
    targets = inf2_slices.auto_scale(min_count=2, max_count=4)
    assert len(targets) == 3
    for target in targets:
        target.scale_on_cpu_utilization("Cpu", target_utilization_percent=60)
    template = App.of(inf2_slices).synth().get_stack_by_name("Test").template  # type: ignore[union-attr]
    scalable = resources(template, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert sorted((t["Properties"]["MinCapacity"], t["Properties"]["MaxCapacity"]) for t in scalable) == [(2, 4)] * 3
    assert len(resources(template, "AWS::ApplicationAutoScaling::ScalingPolicy")) == 3


def test_scaling_to_one_instance_lowers_the_minimum_the_library_chose(inf2_slices: SlicedNeuronService) -> None:
    """Slices deploy with a 100 % maximum; ECS rounds 50 % of one task up to one, so nothing could stop or start
    (NEURON040). The library chose 50 %: scaling to one instance deploys every copy with 0 % instead."""
    inf2_slices.auto_scale(min_count=1, max_count=4)
    assert inf2_slices.min_healthy_percent == 0
    template = App.of(inf2_slices).synth().get_stack_by_name("Test").template  # type: ignore[union-attr]
    percents = {
        s["Properties"]["DeploymentConfiguration"]["MinimumHealthyPercent"]
        for s in resources(template, "AWS::ECS::Service").values()
    }
    assert percents == {0}


def test_a_minimum_passed_that_leaves_no_room_is_refused_naming_the_call() -> None:
    stack = Stack(App(analytics_reporting=False), "Passed")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=4)
    sliced = SlicedNeuronService(
        stack,
        "Sliced",
        cluster=cluster,
        instance_type="inf2.24xlarge",
        devices_per_task=2,
        image=IMAGE,
        instances=2,
        min_healthy_percent=50,
    )
    with pytest.raises(
        NeuronConfigurationError,
        match=r"Passed/Sliced: with 1 task, the 100 % maximum slices deploy with starts none beyond it and "
        r"min_healthy_percent=50 \(passed to SlicedNeuronService\) stops none.*\[NEURON040: .*"
        r"Fix: pass min_healthy_percent=0, or never run fewer than 2 tasks",
    ):
        sliced.auto_scale(min_count=1, max_count=4)


def test_core_slices_fill_every_core_each_naming_its_own() -> None:
    """cores_per_task=1 on an inf2.24xlarge (6 chips x 2 NeuronCores): 12 slices, slice i on core i of chip i // 2."""
    stack = Stack(App(analytics_reporting=False), "CoreSlices")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        stack, "Sliced", cluster=cluster, instance_type="inf2.24xlarge", cores_per_task=1, image=IMAGE
    )
    assert (sliced.slices, sliced.cores_per_task, sliced.devices_per_task) == (12, 1, None)
    assert [t.cores for t in sliced.task_definitions] == [(i,) for i in range(12)]
    assert [t.devices for t in sliced.task_definitions] == [(i // 2,) for i in range(12)]
    instance = NeuronInstanceType.of("inf2.24xlarge")
    assert (sliced.cpu, sliced.memory_mib) == (instance.cpu_units // 12, instance.schedulable_memory_mib // 12)


@pytest.mark.parametrize(
    ("instance_type", "options", "message"),
    [
        ("inf1.6xlarge", {"cores_per_task": 3}, r"cores_per_task=3 does not cut the 4 NeuronCores.*in \[1, 2, 4\]"),
        ("inf2.xlarge", {"cores_per_task": 1, "devices_per_task": 1}, r"both of devices_per_task and cores_per_task"),
        ("trn2.48xlarge", {"devices_per_task": 2}, r"devices_per_task=2 does not cut.*in \[1, 4, 8, 16\]"),
    ],
)
def test_core_slices_the_runtime_cannot_have_are_refused(
    instance_type: str, options: dict[str, int], message: str
) -> None:
    stack = Stack(App(analytics_reporting=False), "Refused")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Capacity", instance_type=instance_type, max_capacity=1)
    with pytest.raises(NeuronConfigurationError, match=message):
        SlicedNeuronService(stack, "Sliced", cluster=cluster, instance_type=instance_type, image=IMAGE, **options)
