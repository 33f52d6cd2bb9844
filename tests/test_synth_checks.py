"""The template checks at ``cdk synth``: where they run (any app, nested stacks, stacks that import from each
other), how warnings behave, and what the library's own constructs do with the inputs around them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk import Acknowledgment, App, NestedStack, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Template
from conftest import imported_vpc, synth_warnings

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    SlicedNeuronService,
)
from neuron_constructs.base import synth_checks
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.knowledge import rules as r

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


def _plain_copies(scope: Any, cluster: ecs.ICluster, provider_name: str, id: str = "Copies") -> None:
    """A plain aws-cdk-lib service: two copies of a task mapping /dev/neuron0, no distinctInstance."""
    task = ecs.TaskDefinition(
        scope,
        f"{id}Task",
        compatibility=ecs.Compatibility.EC2,
        memory_mib="1024",
        placement_constraints=[ecs.PlacementConstraint.member_of("attribute:ecs.instance-type == inf2.48xlarge")],
    )
    devices = ecs.LinuxParameters(scope, f"{id}Devices")
    devices.add_devices(ecs.Device(host_path="/dev/neuron0"))
    task.add_container("plain", image=IMAGE, memory_limit_mib=512, linux_parameters=devices)
    ecs.Ec2Service(
        scope,
        id,
        cluster=cluster,
        task_definition=task,
        desired_count=2,
        min_healthy_percent=50,
        capacity_provider_strategies=[ecs.CapacityProviderStrategy(capacity_provider=provider_name, weight=1)],
    )


def _report(app: App) -> str:
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    return str(raised.value)


def _plain_app() -> App:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Plain")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0))
    cluster.add_capacity("Inf2", instance_type=ec2.InstanceType("inf2.48xlarge"))
    _plain_copies(stack, cluster, "SomeProvider")
    return app


def test_an_app_without_library_constructs_turns_the_checks_on_with_one_call() -> None:
    _plain_app().synth()  # nothing checks the template yet
    app = _plain_app()
    enable_template_checks(app)
    enable_template_checks(app)  # once per app, however often it is called
    report = _report(app)
    assert report.count("Rule NeuronConstructs::NEURON022") == 1
    assert "FATAL Plain/Copies: its tasks map /dev/neuron0" in report


def test_nested_stacks_are_checked() -> None:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Parent")
    nested = NestedStack(stack, "Services")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
    _plain_copies(nested, cluster.cluster, capacity.capacity_provider.capacity_provider_name)
    report = _report(app)
    assert "Rule NeuronConstructs::NEURON022" in report
    assert re.search(r"FATAL Parent/Services/Copies: its tasks map /dev/neuron0", report), report


def test_stacks_that_import_from_each_other_are_checked_together() -> None:
    app = App(analytics_reporting=False)
    base = Stack(app, "Base")
    cluster = NeuronCluster(base, "C", vpc=imported_vpc(base))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        base, "Sliced", cluster=cluster, instance_type="inf2.48xlarge", devices_per_task=6, image=IMAGE
    )
    other = Stack(app, "Other")
    _plain_copies(other, cluster.cluster, sliced.capacity.capacity_provider.capacity_provider_name, id="Intruder")
    report = _report(app)
    assert "FATAL Other/Intruder: it runs on Base/C/Inf2/Provider, whose 2 slice services" in report
    assert "FATAL Other/Intruder: it and Base/Sliced/Slice0Service/Service both map /dev/neuron0" in report


def test_the_construct_paths_read_from_the_assembly_are_the_construct_tree_s(tmp_path: Any) -> None:
    """The checks name resources by the paths and acknowledgements aws-cdk-lib wrote to the cloud assembly (no call
    to the JavaScript runtime per construct); they must be what the construct tree says: in a Stage, in a stack
    inside a stack, for an overridden logical id and for an L2 with two L1s."""
    import json
    from pathlib import Path

    from aws_cdk import CfnResource, Stage
    from constructs import Construct

    app = App(analytics_reporting=False, outdir=str(tmp_path))
    stage = Stage(app, "Prod")
    stack = Stack(stage, "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    two = Construct(stack, "Two")
    CfnResource(two, "First", type="AWS::SNS::Topic")
    CfnResource(two, "Second", type="AWS::SNS::Topic").override_logical_id("Renamed")
    CfnResource(Construct(stack, "One"), "Resource", type="AWS::SNS::Topic")
    inner = Stack(stack, "Inner")
    CfnResource(inner, "Alone", type="AWS::SNS::Topic")
    Validations.of(inner).acknowledge(Acknowledgment(id="NeuronConstructs::NEURON000", reason="a test"))
    app.synth()

    outdir = Path(stage.outdir)
    templates = {name: json.loads(path.read_text()) for name, path in synth_checks._stack_templates(outdir).items()}
    fast = synth_checks._Tree(lambda: app, assembly=outdir, templates=templates)
    tree = synth_checks._Tree(lambda: app)
    assert set(templates) == {"Prod/S", "Prod/S/Inner"}
    for name, template in templates.items():
        for logical_id in template["Resources"]:
            assert fast.construct_path(name, logical_id) == tree.construct_path(name, logical_id), logical_id
    assert fast._tree_paths is None  # every answer came from the assembly
    assert fast.construct_path("Prod/S", "Renamed") == "Prod/S/Two/Second"  # its parent has two L1s
    assert fast._paths is not None and "Prod/S/One" in fast._paths["Prod/S"].values()  # the owner of its one L1
    for path in ("Prod/S/Inner", "Prod/S/C/Inf2", "Prod", ""):
        assert [e for e in fast._entries(path) if e[0] == Validations.ACKNOWLEDGED_RULES_METADATA_KEY] == [
            e for e in tree._entries(path) if e[0] == Validations.ACKNOWLEDGED_RULES_METADATA_KEY
        ], path
    assert fast._entries("Prod/S/Inner")


def test_template_warnings_show_at_synth_unless_raised_or_acknowledged() -> None:
    def build(acknowledge: str | None) -> App:
        app = App(analytics_reporting=False)
        stack = Stack(app, "W")
        cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
        cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", root_volume_gib=40)
        (capacity,) = cluster.auto_scaling_capacities
        launch_template = capacity.node.find_child("LaunchTemplate").node.default_child
        launch_template.add_property_override("LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit", 2)
        if acknowledge:
            Validations.of(capacity if acknowledge == "capacity" else app).acknowledge(
                Acknowledgment(id=r.METADATA_REACHABLE.warning_id, reason="the instances run no container")
            )
        return app

    warnings = synth_warnings(build(acknowledge=None))
    assert [w.split(". [")[0] for w in warnings] == [
        "W/C/Inf2/LaunchTemplate: HttpTokens required, HttpPutResponseHopLimit 2"
    ]  # NEURON102 is not repeated: the capacity raised it already, as an acknowledgeable CDK warning
    assert synth_warnings(build(acknowledge="capacity")) == []
    assert synth_warnings(build(acknowledge="app")) == []  # any scope above it, up to the App


def test_container_level_sizes_count_against_the_instance() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge")
    with pytest.raises(
        NeuronConfigurationError,
        match=r"S/T/model: its containers' memory_limit_mib/memory_reservation_mib \(20000 MiB in total\) exceeds "
        r"the 16384 MiB of inf2",
    ):
        task.add_neuron_container("model", image=IMAGE, memory_limit_mib=20000)


def test_a_standard_ami_resolved_at_launch_is_refused_for_neuron_capacity() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    image = ec2.MachineImage.resolve_ssm_parameter_at_launch(
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended/image_id"
    )
    with pytest.raises(
        NeuronConfigurationError, match=r"\[NEURON030: .*add_ec2_capacity\(instance_type='inf2.xlarge'\)"
    ):
        NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
            "Inf2", instance_type="inf2.xlarge", machine_image=image
        )


def test_the_neuron_ami_resolved_at_launch_needs_no_warning() -> None:
    from aws_cdk.assertions import Annotations, Match

    stack = Stack(App(analytics_reporting=False), "S")
    image = ec2.MachineImage.resolve_ssm_parameter_at_launch(
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
    )
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", machine_image=image
    )
    assert Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON105")) == []


def _two_slices(**options: Any) -> Stack:
    """An inf2.48xlarge group and a sliced service of two 6-chip slices on it."""
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
    SlicedNeuronService(
        stack, "V", cluster=cluster, instance_type="inf2.48xlarge", devices_per_task=6, image=IMAGE, **options
    )
    return stack


def test_one_linux_parameters_object_serves_every_slice() -> None:
    holder = Stack(App(analytics_reporting=False), "Holder")
    shared = ecs.LinuxParameters(holder, "Shm", shared_memory_size=4096, init_process_enabled=True)
    stack = _two_slices(linux_parameters=shared)
    template = Template.from_stack(stack).to_json()
    slices = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    linux = [s["Properties"]["ContainerDefinitions"][0]["LinuxParameters"] for s in slices]
    assert [[d["HostPath"] for d in p["Devices"]] for p in linux] == [
        [f"/dev/neuron{i}" for i in range(6)],
        [f"/dev/neuron{i}" for i in range(6, 12)],
    ]
    assert all(p["SharedMemorySize"] == 4096 and p["InitProcessEnabled"] for p in linux)
    assert Stack.of(shared).resolve(shared.render_linux_parameters()).get("devices") is None  # left as given


def test_fargate_is_refused_for_a_neuron_task() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    with pytest.raises(NeuronConfigurationError, match=r"S/T: compatibility=FARGATE: Fargate has no Neuron devices"):
        ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", compatibility=ecs.Compatibility.FARGATE)


def test_a_sliced_service_deploys_below_its_100_percent_maximum() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"min_healthy_percent=100 is above the maximum of 99"):
        _two_slices(min_healthy_percent=100)


def test_one_task_on_one_instance_deploys_by_replacing_it() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=1)
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
    Template.from_stack(stack).has_resource_properties(
        "AWS::ECS::Service", {"DeploymentConfiguration": {"MinimumHealthyPercent": 0, "MaximumPercent": 200}}
    )


def test_errors_in_a_stage_fail_the_app_under_the_cdk_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cdk CLI asks apps not to fail on validation errors and reports them for the stacks it selected; a bare
    ``cdk synth`` selects no stack inside a Stage (CDK Pipelines), so for those the app exits 1 itself."""
    from aws_cdk import Stage

    failures: list[str] = []
    monkeypatch.setattr(synth_checks, "_fail_when_the_app_exits", failures.append)

    def build(*, in_stage: bool) -> None:
        app = App(analytics_reporting=False, context={"@aws-cdk/core:failSynthOnValidationErrors": False})
        stack = Stack(Stage(app, "Prod") if in_stage else app, "S")
        cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
        capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
        _plain_copies(stack, cluster.cluster, capacity.capacity_provider.capacity_provider_name)
        app.synth()

    build(in_stage=False)  # a top-level stack: the CLI reports it
    assert failures == []
    build(in_stage=True)
    (message,) = failures
    assert message.startswith("1 Neuron rule error in stacks inside a Stage")
    assert "Prod/S/Copies" in message and "[NEURON022: " in message
