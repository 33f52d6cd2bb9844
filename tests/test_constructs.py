"""Construct behaviour beyond the rules: rendering, defaults, composition."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match, Template
from conftest import ROOT, imported_vpc, resources

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronInstanceType,
    NeuronService,
    SlicedNeuronService,
)

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


def template_of(stack: Stack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()  # type: ignore[no-any-return]


def task_containers(stack: Stack) -> list[dict[str, Any]]:
    (task,) = resources(template_of(stack), "AWS::ECS::TaskDefinition").values()
    return task["Properties"]["ContainerDefinitions"]  # type: ignore[no-any-return]


def test_neuron_device_requirement_lands_on_the_neuron_container_after_sidecars() -> None:
    stack = Stack(App(), "S")
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=4096, memory_mib=8192)
    task.add_container("proxy", image=IMAGE)
    task.task_definition.add_container("plain", image=IMAGE)
    task.add_neuron_container("model", image=IMAGE)
    proxy, plain, model = task_containers(stack)
    assert "ResourceRequirements" not in proxy and "ResourceRequirements" not in plain
    assert model["Name"] == "model"
    assert model["ResourceRequirements"] == [{"Type": "NeuronDevice", "Value": "ALL"}]
    assert task.neuron_container is not None


def test_manual_task_maps_every_chip_by_default() -> None:
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.24xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    (container,) = task_containers(stack)
    assert [d["HostPath"] for d in container["LinuxParameters"]["Devices"]] == [f"/dev/neuron{i}" for i in range(6)]
    assert task.device_paths == NeuronInstanceType.of("inf2.24xlarge").device_paths


def test_a_task_holding_chosen_cores_maps_their_chips_and_names_them_in_host_numbering() -> None:
    """inf1.24xlarge, 4 cores a chip: cores 50-51 are on /dev/neuron12 (the Neuron container guide's numbering)."""
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf1.24xlarge", cores=[50, 51], memory_mib=2048)
    task.add_neuron_container("model", image=IMAGE)
    (container,) = task_containers(stack)
    assert (task.devices, task.cores, task.names_cores) == ((12,), (50, 51), True)
    assert [d["HostPath"] for d in container["LinuxParameters"]["Devices"]] == ["/dev/neuron12"]
    assert container["Environment"] == [{"Name": "NEURON_RT_VISIBLE_CORES", "Value": "50-51"}]


def test_a_trn2_task_with_lnc_carries_it_and_counts_cores_at_it() -> None:
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn2.48xlarge", cores=[8], lnc=1, memory_mib=2048)
    task.add_neuron_container("model", image=IMAGE)
    (container,) = task_containers(stack)
    assert task.devices == (1,)  # eight logical cores a chip at LNC=1
    assert {e["Name"]: e["Value"] for e in container["Environment"]} == {
        "NEURON_RT_VISIBLE_CORES": "8",
        "NEURON_LOGICAL_NC_CONFIG": "1",
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cores": [0, 2]}, r"cores=\[0, 2\] is not a contiguous range.*NEURON019"),
        ({"cores": [24]}, r"cores=\[24\] but inf2.48xlarge has NeuronCores 0-23.*NEURON019"),
        ({"cores": [4], "devices": [0]}, r"cores=4 but the devices \[0\] hold cores 0-1.*NEURON019"),
        ({"lnc": 2}, r"lnc=2: only Trainium2 takes a logical NeuronCore setting.*NEURON064"),
    ],
)
def test_cores_and_lnc_the_runtime_would_not_take_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=message):
        ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="inf2.48xlarge", memory_mib=2048, **options)


def _lnc_entry_points() -> dict[str, Callable[[Stack, str, int], object]]:
    """Every call that takes ``lnc=``, given an instance type and a setting."""

    def cluster(stack: Stack) -> NeuronCluster:
        return NeuronCluster(stack, "C", vpc=imported_vpc(stack))

    return {
        "add_ec2_capacity": lambda s, t, lnc: cluster(s).add_ec2_capacity("Cap", instance_type=t, lnc=lnc),
        "add_non_neuron_capacity": lambda s, t, lnc: cluster(s).add_non_neuron_capacity(
            "Cap", instance_type="m7i.large", lnc=lnc
        ),
        "ManualNeuronTaskDefinition": lambda s, t, lnc: ManualNeuronTaskDefinition(
            s, "T", instance_type=t, memory_mib=2048, lnc=lnc
        ),
        "SlicedNeuronService": lambda s, t, lnc: SlicedNeuronService(
            s, "Sliced", cluster=cluster(s), instance_type=t, devices_per_task=1, image=IMAGE, lnc=lnc
        ),
        "NeuronFleet": lambda s, t, lnc: NeuronFleet(s, "Fleet", cluster=cluster(s), instance_type=t, lnc=lnc),
    }


@pytest.mark.parametrize("lnc", [1, 2])
@pytest.mark.parametrize("instance_type", ["inf2.xlarge", "trn1.32xlarge", "inf1.xlarge"])
@pytest.mark.parametrize("entry_point", list(_lnc_entry_points()))
def test_lnc_of_any_value_is_refused_for_a_type_that_is_not_trainium2(
    entry_point: str, instance_type: str, lnc: int
) -> None:
    """Only Trainium2 groups NeuronCores; even lnc=1 on another type would be written into user data and
    environments the runtime never reads, so the call is refused before anything is built."""
    stack = Stack(App(), "S")
    with pytest.raises(NeuronConfigurationError) as raised:
        _lnc_entry_points()[entry_point](stack, instance_type, lnc)
    message = str(raised.value)
    assert f"lnc={lnc}: only Trainium2 takes a logical NeuronCore setting" in message
    assert "[NEURON064: " in message and "Fix: pass lnc= (1 or 2) only for trn2 types" in message


def test_a_hand_set_visible_cores_beside_chosen_cores_is_refused() -> None:
    task = ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="inf2.xlarge", cores=[1], memory_mib=2048)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON_RT_VISIBLE_CORES=0 is set by hand.*NEURON019"):
        task.add_neuron_container("model", image=IMAGE, environment={"NEURON_RT_VISIBLE_CORES": "0"})


def test_manual_task_extends_given_linux_parameters() -> None:
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn1.32xlarge", devices=[4, 5, 6, 7], memory_mib=8192)
    params = ecs.LinuxParameters(stack, "P", init_process_enabled=True)
    task.add_neuron_container("model", image=IMAGE, linux_parameters=params)
    (container,) = task_containers(stack)
    assert container["LinuxParameters"]["InitProcessEnabled"] is True
    assert [d["ContainerPath"] for d in container["LinuxParameters"]["Devices"]] == [
        "/dev/neuron4",
        "/dev/neuron5",
        "/dev/neuron6",
        "/dev/neuron7",
    ]


def test_manual_task_on_managed_instances_needs_a_capacity_of_only_its_type() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Inf2", instance_types=["inf2.*"])
    exact = cluster.add_managed_instances_capacity("Inf2Large", instance_types=["inf2.8xlarge"])
    task = ManualNeuronTaskDefinition(
        stack, "T", instance_type="inf2.8xlarge", memory_mib=8192, compatibility=ecs.Compatibility.MANAGED_INSTANCES
    )
    task.add_neuron_container("model", image=IMAGE)
    service = NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
    assert isinstance(service.service, ecs.FargateService)
    assert service.capacity is exact
    (props,) = [t["Properties"] for t in resources(template_of(stack), "AWS::ECS::TaskDefinition").values()]
    assert props["NetworkMode"] == "awsvpc"
    assert props["RequiresCompatibilities"] == ["MANAGED_INSTANCES"]


def test_manual_task_refuses_managed_instances_capacity_of_several_types() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Inf2", instance_types=["inf2.*"])
    task = ManualNeuronTaskDefinition(
        stack, "T", instance_type="inf2.8xlarge", memory_mib=8192, compatibility=ecs.Compatibility.MANAGED_INSTANCES
    )
    with pytest.raises(NeuronConfigurationError, match=r"admitting only inf2\.8xlarge"):
        NeuronService(stack, "Svc", cluster=cluster, task_definition=task)


def test_ec2_and_managed_instances_task_keeps_its_pin_on_the_ec2_service() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    task = ManualNeuronTaskDefinition(
        stack,
        "T",
        instance_type="inf2.xlarge",
        memory_mib=8192,
        compatibility=ecs.Compatibility.EC2_AND_MANAGED_INSTANCES,
    )
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
    (service,) = resources(template_of(stack), "AWS::ECS::Service").values()
    assert service["Properties"]["PlacementConstraints"] == [
        {"Type": "memberOf", "Expression": "attribute:ecs.instance-type == inf2.xlarge"},
        {"Type": "distinctInstance"},
    ]


def test_service_picks_the_capacity_of_the_tasks_instance_type() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    trn1 = cluster.add_ec2_capacity("Trn1", instance_type="trn1.2xlarge")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn1.2xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    service = NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
    assert isinstance(service.service, ecs.Ec2Service)
    assert service.capacity is trn1


def test_capacity_from_another_cluster_is_refused() -> None:
    stack = Stack(App(), "S")
    cluster, other = (
        NeuronCluster(stack, "C", vpc=imported_vpc(stack)),
        NeuronCluster(stack, "D", vpc=imported_vpc(stack)),
    )
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    foreign = other.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", memory_mib=8192)
    with pytest.raises(NeuronConfigurationError, match=r"not a capacity of this NeuronCluster\. \[NEURON014"):
        NeuronService(stack, "Svc", cluster=cluster, task_definition=task, capacity=foreign)


def test_existing_vpc_is_used_and_insights_can_be_turned_off() -> None:
    stack = Stack(App(), "S")
    vpc = ec2.Vpc(stack, "Mine", max_azs=2)
    cluster = NeuronCluster(stack, "C", vpc=vpc, container_insights=False)
    assert cluster.vpc is vpc
    template = template_of(stack)
    assert len(resources(template, "AWS::EC2::VPC")) == 1
    (ecs_cluster,) = resources(template, "AWS::ECS::Cluster").values()
    assert {"Name": "containerInsights", "Value": "disabled"} in ecs_cluster["Properties"]["ClusterSettings"]


def test_unknown_capacity_type_is_refused_with_the_construct_path() -> None:
    stack = Stack(App(), "S")
    with pytest.raises(NeuronConfigurationError, match=r"^S/C/Gpu: 'g5.xlarge' is not a Neuron instance type"):
        NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity("Gpu", instance_type="g5.xlarge")


def test_catalog_rules_and_tooling_import_without_the_cdk() -> None:
    code = (
        "import sys, neuron_constructs as n; n.NeuronInstanceType.of('inf2.xlarge'); n.RULES;"
        "import neuron_constructs.local_endpoint, neuron_constructs.tools.deployment_report;"
        "import neuron_constructs.tools.cli;"
        "import neuron_constructs.tools.inspection, neuron_constructs.knowledge.ami;"
        "assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_dir_and_help_list_every_public_name() -> None:
    """The constructs load lazily (the catalog and the rules import without the CDK), yet ``dir()``, ``help()``
    and completion see every public name."""
    import pydoc

    import neuron_constructs

    assert set(neuron_constructs.__all__) <= set(dir(neuron_constructs))
    text = pydoc.render_doc(neuron_constructs, renderer=pydoc.plaintext)
    for name in neuron_constructs.__all__:
        assert name in text, name
    assert "class NeuronCluster(constructs.Construct)" in text


@pytest.mark.parametrize("add", ["add_neuron_container", "add_container"])
def test_an_ecr_image_named_by_uri_is_pulled_with_a_grant_scoped_to_its_repository(add: str) -> None:
    stack = Stack(App(analytics_reporting=False), "Test")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", memory_mib=8192)
    image = ecs.ContainerImage.from_registry("111122223333.dkr.ecr.us-west-2.amazonaws.com/team/llm:v3")
    getattr(task, add)("model", image=image)
    statements = [
        s
        for policy in resources(template_of(stack), "AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    pull = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    assert pull["Resource"] == "arn:aws:ecr:us-west-2:111122223333:repository/team/llm"
    assert any(s["Action"] == "ecr:GetAuthorizationToken" for s in statements)
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("Proper policies"))
    assert warnings == []  # aws-cdk-lib's warning is answered, and acknowledged


def test_a_public_image_gets_no_ecr_grant() -> None:
    stack = Stack(App(analytics_reporting=False), "Test")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    policies = json.dumps(resources(template_of(stack), "AWS::IAM::Policy"))
    assert "ecr:" not in policies
