"""``NeuronFleet``: several models on one fleet, placed by the same ECS simulation as the slices.

For every catalog layout (types that plan alike share one) a fleet of mixed models (a large one and
single-chip ones filling the rest) is synthesized, and fleets mixing whole-chip and NeuronCore models;
the simulation reads each copy's service and task definition from the template and places the tasks
as ECS would, in several orders: no NeuronCore is held twice and every core the plan gave out is held,
on every instance.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from conftest import distinct_layouts, imported_vpc, resources
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
    """One synthesized fleet of mixed models per catalog layout."""
    app = App(analytics_reporting=False)
    stacks = {}
    for instance in distinct_layouts():
        stack = Stack(app, f"Fleet-{instance.name.replace('.', '-')}")
        cluster = NeuronCluster(stack, "Neuron", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        cluster.add_ec2_capacity("Capacity", instance_type=instance.name, max_capacity=INSTANCES)
        neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type=instance.name, instances=INSTANCES)
        for name, devices_per_task, copies in plan(instance):
            neuron_fleet.add_model(name, devices_per_task=devices_per_task, copies=copies, image=IMAGE)
        stacks[instance.name] = stack
    assembly = app.synth()
    return {name: assembly.get_stack_by_name(stack.stack_name).template for name, stack in stacks.items()}


@pytest.mark.parametrize("instance_type", [e.name for e in distinct_layouts()])
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
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
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
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
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


# --- NeuronCore-level copies ----------------------------------------------------------------------------------------

CORE_MIXES: dict[str, tuple[int | None, list[tuple[str, str, int, int]]]] = {
    # instance type: (lnc, [(model, "devices" or "cores", size, copies)]), each filling every core of the type.
    "inf2.48xlarge": (None, [("Llm", "devices", 4, 2), ("Embedding", "cores", 1, 6), ("Reranker", "cores", 2, 1)]),
    "inf1.6xlarge": (None, [("Detector", "devices", 1, 1), ("Classifier", "cores", 1, 8), ("Ocr", "cores", 2, 2)]),
    "trn2.48xlarge": (2, [("Llm", "devices", 8, 1), ("Draft", "devices", 4, 1), ("Embedding", "cores", 2, 8)]),
}


@pytest.fixture(scope="module")
def core_fleets() -> dict[str, dict[str, Any]]:
    """One synthesized fleet per mix: whole-chip and NeuronCore models side by side, every core planned."""
    app = App(analytics_reporting=False)
    stacks = {}
    for name, (lnc, models) in CORE_MIXES.items():
        stack = Stack(app, f"Cores-{name.replace('.', '-')}")
        cluster = NeuronCluster(stack, "Neuron", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        cluster.add_ec2_capacity("Capacity", instance_type=name, max_capacity=INSTANCES, lnc=lnc)
        neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type=name, instances=INSTANCES, lnc=lnc)
        for model, unit, size, copies in models:
            neuron_fleet.add_model(model, **{f"{unit}_per_task": size}, copies=copies, image=IMAGE)
        assert neuron_fleet.free_cores == []
        stacks[name] = stack
    assembly = app.synth()
    return {name: assembly.get_stack_by_name(stack.stack_name).template for name, stack in stacks.items()}


@pytest.mark.parametrize("instance_type", list(CORE_MIXES))
def test_whole_chip_and_core_models_never_share_a_core_and_hold_every_core(
    instance_type: str, core_fleets: dict[str, dict[str, Any]]
) -> None:
    """Placed as ECS would, in several orders: every core of every instance held exactly once."""
    instance = NeuronInstanceType.of(instance_type)
    lnc, models = CORE_MIXES[instance_type]
    services = services_of(core_fleets[instance_type], "NeuronCluster")
    assert len(services) == sum(copies for *_, copies in models)
    for label, order in orders(services).items():
        instances = fleet(instance, 0.9)
        place(services, instances, order)
        for i in instances:
            held = Counter(core for t in i.tasks for core in t.cores)
            assert all(n == 1 for n in held.values()), f"{label}: a NeuronCore held twice: {held}"
            assert set(held) == set(range(instance.cores(lnc))), f"{label}: planned cores idle: {held}"


def test_the_template_checks_and_lint_pass_a_core_level_fleet(core_fleets: dict[str, dict[str, Any]]) -> None:
    from neuron_constructs.checks.template_checks import check_template

    for name, template in core_fleets.items():
        assert not [f for f in check_template(template) if f.rule.severity == "error"], name


def test_core_copies_get_their_cores_in_host_numbering_and_map_the_chip_that_holds_them(
    core_fleets: dict[str, dict[str, Any]],
) -> None:
    """inf2: 2 cores a chip, so core 9 is on /dev/neuron4; the LLM's copies hold whole chips and name no cores."""
    definitions = resources(core_fleets["inf2.48xlarge"], "AWS::ECS::TaskDefinition").values()
    named = {}
    for definition in definitions:
        (container,) = definition["Properties"]["ContainerDefinitions"]
        environment = {e["Name"]: e["Value"] for e in container.get("Environment", [])}
        devices = [d["HostPath"] for d in container["LinuxParameters"]["Devices"]]
        named[environment.get("NEURON_RT_VISIBLE_CORES")] = devices
    assert named[None] == [f"/dev/neuron{i}" for i in range(4, 8)]  # the second LLM copy (the first is overwritten)
    assert {cores: devices for cores, devices in named.items() if cores} == {
        **{str(core): [f"/dev/neuron{core // 2}"] for core in range(16, 22)},
        "22-23": ["/dev/neuron11"],
    }


def test_trn2_core_copies_count_logical_cores_and_carry_the_fleet_s_lnc(
    core_fleets: dict[str, dict[str, Any]],
) -> None:
    definitions = resources(core_fleets["trn2.48xlarge"], "AWS::ECS::TaskDefinition").values()
    environments = [
        {e["Name"]: e["Value"] for e in d["Properties"]["ContainerDefinitions"][0].get("Environment", [])}
        for d in definitions
    ]
    assert all(e["NEURON_LOGICAL_NC_CONFIG"] == "2" for e in environments)
    assert sorted(e["NEURON_RT_VISIBLE_CORES"] for e in environments if "NEURON_RT_VISIBLE_CORES" in e) == sorted(
        f"{c}-{c + 1}" for c in range(48, 64, 2)
    )


def test_one_core_copies_reach_24_on_an_inf2_48xlarge_and_one_more_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Limit")
    neuron_fleet = _inf2_fleet(stack)
    model = neuron_fleet.add_model("Embedding", cores_per_task=1, copies=24, image=IMAGE)
    assert [list(r) for r in model.core_ranges] == [[core] for core in range(24)]
    assert [list(r) for r in model.device_ranges] == [[core // 2] for core in range(24)]
    assert [t.cores for t in model.task_definitions] == [(core,) for core in range(24)]
    assert (model.cores_per_task, model.devices_per_task) == (1, None)
    instance = NeuronInstanceType.of("inf2.48xlarge")
    assert (model.cpu, model.memory_mib) == (instance.cpu_units // 24, instance.schedulable_memory_mib // 24)
    with pytest.raises(
        NeuronConfigurationError,
        match=r"Limit/Fleet/More: 1 copy of 1 NeuronCore do not fit in what is left of inf2.48xlarge.*"
        r"no NeuronCore of the 24 is free",
    ):
        neuron_fleet.add_model("More", cores_per_task=1, image=IMAGE)


def test_sizes_are_refused_where_the_runtime_cannot_have_them() -> None:
    stack = Stack(App(analytics_reporting=False), "Sizes")
    neuron_fleet = _inf2_fleet(stack)
    with pytest.raises(NeuronConfigurationError, match=r"neither of devices_per_task and cores_per_task.*NEURON063"):
        neuron_fleet.add_model("None", image=IMAGE)
    with pytest.raises(NeuronConfigurationError, match=r"cores_per_task=3 but a inf2.48xlarge chip holds 2.*NEURON063"):
        neuron_fleet.add_model("Three", cores_per_task=3, image=IMAGE)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON_RT_VISIBLE_CORES=0 is the same in every slice"):
        neuron_fleet.add_model("Pinned", cores_per_task=1, image=IMAGE, environment={"NEURON_RT_VISIBLE_CORES": "0"})


def test_lnc_must_match_the_capacity_and_exist_on_the_chip() -> None:
    stack = Stack(App(analytics_reporting=False), "Lnc")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1, lnc=1)
    neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="trn2.48xlarge")
    with pytest.raises(NeuronConfigurationError, match=r"runs at LNC=2, but Lnc/Cluster/Trn2 sets LNC=1.*NEURON064"):
        neuron_fleet.add_model("Default", cores_per_task=1, image=IMAGE)
    other = Stack(App(analytics_reporting=False), "One")
    one = NeuronCluster(other, "Cluster", vpc=imported_vpc(other))
    one.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1, lnc=1)
    at_one = NeuronFleet(other, "Fleet", cluster=one, instance_type="trn2.48xlarge", lnc=1)
    model = at_one.add_model("Embedding", cores_per_task=1, copies=9, image=IMAGE)
    # Eight logical cores a chip at LNC=1: the ninth copy starts chip 1.
    assert model.core_ranges[-1] == range(8, 9) and model.device_ranges[-1] == range(1, 2)
    assert at_one.plan.cores == 128
    with pytest.raises(NeuronConfigurationError, match=r"lnc=2: only Trainium2 takes a logical NeuronCore setting"):
        NeuronFleet(stack, "Inf2", cluster=cluster, instance_type="inf2.48xlarge", lnc=2)


def test_two_models_of_one_fleet_on_one_compile_cache_get_a_prefix_each() -> None:
    """GIVEN two models of one NeuronFleet given one CompileCache, WHEN synthesized, THEN each model's copies point at
    and may write that model's own prefix (the fleet model's path), so neither can overwrite the other's graphs; the
    copies of one model share theirs."""
    from neuron_constructs import CompileCache

    app = App(analytics_reporting=False)
    stack = Stack(app, "Cached")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    cache = CompileCache.in_new_bucket(stack, "Cache")
    neuron_fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    for name in ("Llm", "Embedding"):
        neuron_fleet.add_model(name, devices_per_task=1, copies=2, image=IMAGE, compile_cache=cache)
    template = app.synth().get_stack_by_name("Cached").template
    urls = sorted(
        variable["Value"]["Fn::Join"][1][2]
        for definition in resources(template, "AWS::ECS::TaskDefinition").values()
        for variable in definition["Properties"]["ContainerDefinitions"][0]["Environment"]
        if variable["Name"] == "NEURON_COMPILE_CACHE_URL"
    )
    assert urls == [
        "/neuron-compile-cache/Cached/Fleet/Embedding/",
        "/neuron-compile-cache/Cached/Fleet/Embedding/",
        "/neuron-compile-cache/Cached/Fleet/Llm/",
        "/neuron-compile-cache/Cached/Fleet/Llm/",
    ]
    writes = {
        json.dumps(statement["Resource"])
        for policy in resources(template, "AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "s3:PutObject" in statement["Action"]
    }
    assert all("Fleet/Llm/*" in w or "Fleet/Embedding/*" in w for w in writes) and len(writes) == 2
