"""Capacity a team chooses: the objects ``add_*_capacity`` return, subnets, Spot, On-Demand Capacity
Reservations, Capacity Blocks for ML and reserved Managed Instances, read from the synthesized template."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from conftest import imported_vpc

from neuron_constructs import (
    AutoScalingCapacity,
    CapacityReservation,
    ManagedInstancesCapacity,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    SlicedNeuronService,
)

pytestmark = pytest.mark.xdist_group("capacity")  # one worker builds the module's stacks once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
BLOCK = "cr-0123456789abcdef0"
GROUP = "arn:aws:resource-groups:us-east-1:111122223333:group/neuron-reservations"


def _only(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (resource,) = [r for r in template["Resources"].values() if r["Type"] == kind]
    return resource["Properties"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def choices() -> dict[str, Any]:
    """One stack per choice, synthesized together; the returned capacity objects by name."""
    app = App(analytics_reporting=False)
    made: dict[str, Any] = {"app": app}
    for name, options in {
        "Spot": {"instance_type": "inf2.xlarge", "spot": True},
        "Block": {"instance_type": "trn1.32xlarge", "capacity_reservation": CapacityReservation.capacity_block(BLOCK)},
        "Odcr": {"instance_type": "inf2.48xlarge", "capacity_reservation": CapacityReservation.on_demand(BLOCK)},
        "Group": {
            "instance_type": "inf2.48xlarge",
            "capacity_reservation": CapacityReservation.on_demand_group(GROUP, fallback_to_on_demand=True),
        },
        "Public": {
            "instance_type": "inf2.xlarge",
            "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
        },
    }.items():
        stack = Stack(app, name)
        made[name] = NeuronCluster(stack, "C").add_ec2_capacity("Neuron", **options)
    stack = Stack(app, "Reserved")
    made["Reserved"] = NeuronCluster(stack, "C").add_managed_instances_capacity(
        "Mi", capacity_reservation=CapacityReservation.on_demand_group(GROUP)
    )
    everything = NeuronCluster(Stack(app, "Everything"), "C")  # every choice in one cluster, for cfn-lint
    everything.add_ec2_capacity("Spot", instance_type="inf2.xlarge", spot=True)
    everything.add_ec2_capacity(
        "Block", instance_type="trn1.32xlarge", capacity_reservation=CapacityReservation.capacity_block(BLOCK)
    )
    everything.add_ec2_capacity(
        "Odcr", instance_type="inf2.48xlarge", capacity_reservation=CapacityReservation.on_demand(BLOCK)
    )
    everything.add_ec2_capacity(
        "Group", instance_type="inf2.24xlarge", capacity_reservation=CapacityReservation.on_demand_group(GROUP)
    )
    everything.add_managed_instances_capacity("Mi", capacity_reservation=CapacityReservation.on_demand_group(GROUP))
    assembly = app.synth()
    made["templates"] = {s.stack_name: s.template for s in assembly.stacks}
    return made


def test_add_ec2_capacity_returns_the_capacity_with_its_parts(choices: dict[str, Any]) -> None:
    capacity = choices["Spot"]
    assert isinstance(capacity, AutoScalingCapacity)
    assert isinstance(capacity.capacity_provider, ecs.AsgCapacityProvider)
    assert isinstance(capacity.launch_template, ec2.LaunchTemplate)
    assert isinstance(capacity.security_group, ec2.SecurityGroup)
    assert isinstance(capacity.role, iam.Role)
    assert capacity.instance_type.to_string() == "inf2.xlarge"
    assert capacity.neuron_instance_type is not None and capacity.neuron_instance_type.chips == 1
    assert capacity.auto_scaling_group.node.path == "Spot/C/Neuron/Group"


def test_add_managed_instances_capacity_returns_the_capacity_with_its_parts(choices: dict[str, Any]) -> None:
    capacity = choices["Reserved"]
    assert isinstance(capacity, ManagedInstancesCapacity)
    assert isinstance(capacity.capacity_provider, ecs.ManagedInstancesCapacityProvider)
    assert capacity.security_group is capacity.security_groups[0]
    assert capacity.infrastructure_role.node.path == "Reserved/C/Mi/Provider/ProviderRole"
    assert isinstance(capacity.role, iam.Role)
    assert capacity.role.node.path == "Reserved/C/Mi/InstanceRole"
    assert capacity.instance_profile.node.path == "Reserved/C/Mi/InstanceProfile"
    assert capacity.capacity_provider.ec2_instance_profile is capacity.instance_profile


def test_spot_requests_spot_rebalances_and_drains(choices: dict[str, Any]) -> None:
    template = choices["templates"]["Spot"]
    data = _only(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceMarketOptions"]["MarketType"] == "spot"
    assert "ECS_ENABLE_SPOT_INSTANCE_DRAINING=true" in str(data["UserData"])
    assert _only(template, "AWS::AutoScaling::AutoScalingGroup")["CapacityRebalance"] is True


def test_a_capacity_block_is_the_launch_templates_market_and_reservation(choices: dict[str, Any]) -> None:
    data = _only(choices["templates"]["Block"], "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {"CapacityReservationTarget": {"CapacityReservationId": BLOCK}}
    group = _only(choices["templates"]["Block"], "AWS::AutoScaling::AutoScalingGroup")
    assert "MixedInstancesPolicy" not in group  # Capacity Blocks take no mixed instances group


def test_on_demand_reservations_are_on_the_group(choices: dict[str, Any]) -> None:
    odcr = _only(choices["templates"]["Odcr"], "AWS::AutoScaling::AutoScalingGroup")
    assert odcr["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationIds": [BLOCK]},
    }
    group = _only(choices["templates"]["Group"], "AWS::AutoScaling::AutoScalingGroup")
    assert group["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-first",
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArns": [GROUP]},
    }


def test_reserved_managed_instances(choices: dict[str, Any]) -> None:
    provider = _only(choices["templates"]["Reserved"], "AWS::ECS::CapacityProvider")
    launch = provider["ManagedInstancesProvider"]["InstanceLaunchTemplate"]
    assert launch["CapacityOptionType"] == "RESERVED"
    assert launch["CapacityReservations"] == {
        "ReservationGroupArn": GROUP,
        "ReservationPreference": "RESERVATIONS_ONLY",
    }


def test_vpc_subnets_choose_where_one_capacity_launches(choices: dict[str, Any]) -> None:
    template = choices["templates"]["Public"]
    subnets = _only(template, "AWS::AutoScaling::AutoScalingGroup")["VPCZoneIdentifier"]
    public = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::EC2::Subnet" and "Public" in k]
    assert sorted(s["Ref"] for s in subnets) == sorted(public)


def test_the_returned_capacity_is_what_capacity_takes() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    first = cluster.add_ec2_capacity("A", instance_type="inf2.48xlarge")
    second = cluster.add_ec2_capacity("B", instance_type="inf2.48xlarge")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=1024)
    task.add_neuron_container("model", image=IMAGE)
    assert NeuronService(stack, "Svc", cluster=cluster, task_definition=task, capacity=second).capacity is second
    sliced = SlicedNeuronService(
        stack, "Sliced", cluster=cluster, instance_type="inf2.48xlarge", devices_per_task=6, image=IMAGE, capacity=first
    )
    assert sliced.capacity is first
    template = Template.from_stack(stack).to_json()
    strategies = [
        r["Properties"]["CapacityProviderStrategy"][0]["CapacityProvider"]["Ref"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::ECS::Service"
    ]
    assert len(set(strategies)) == 2


@pytest.mark.e2e  # cfn-lint runs on the examples in the everyday loop, on test stacks in make test-e2e
def test_every_capacity_choice_passes_cfn_lint(choices: dict[str, Any]) -> None:
    """Spot, a Capacity Block, an On-Demand Capacity Reservation, a reservation group and reserved Managed
    Instances in one template: what the L1 overrides write is what the CloudFormation schemas accept."""
    import json

    from cfnlint.api import ManualArgs, lint

    template = choices["templates"]["Everything"]
    assert len(_all(template, "AWS::AutoScaling::AutoScalingGroup")) == 4
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


def _all(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def test_inf1_capacity_warns_that_current_neuron_releases_dropped_it_and_names_the_last() -> None:
    from aws_cdk.assertions import Annotations

    from neuron_constructs.knowledge import rules

    stack = Stack(App(analytics_reporting=False), "Inf1")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf1", instance_type="inf1.xlarge", max_capacity=1)
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=1)
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON113"))
    assert [w.id for w in warnings] == ["/Inf1/Cluster/Inf1"]
    assert "SDK 2.20.2" in str(warnings[0].entry.data) and rules.INF1_OUT_OF_SUPPORT.warning_id in str(
        warnings[0].entry.data
    )


def test_lnc_is_written_where_the_neuron_runtime_reads_it() -> None:
    stack = Stack(App(analytics_reporting=False), "Lnc")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1, lnc=1)
    assert capacity.lnc == 1
    user_data = json.dumps(Template.from_stack(stack).find_resources("AWS::EC2::LaunchTemplate"))
    assert "echo NEURON_LOGICAL_NC_CONFIG=1 > /opt/aws/neuron/logical_nc_config" in user_data


@pytest.mark.parametrize(
    "build",
    [CapacityReservation.on_demand, CapacityReservation.capacity_block],
    ids=["on_demand", "capacity_block"],
)
def test_a_reservation_s_arn_where_its_id_is_expected_is_refused_naming_the_id(build: Any) -> None:
    """GIVEN a Capacity Reservation's ARN, WHEN it is passed where the reservation's id goes (CapacityReservationIds,
    a Capacity Block's CapacityReservationId take ids only), THEN NEURON140 refuses it and names the id to pass:
    nothing is rewritten."""
    arn = f"arn:aws:ec2:us-east-1:111122223333:capacity-reservation/{BLOCK}"
    with pytest.raises(NeuronConfigurationError, match=rf"is the reservation's ARN.*NEURON140.*Fix: pass .*'{BLOCK}'"):
        build(arn)
    with pytest.raises(NeuronConfigurationError, match=r"is not a Capacity Reservation id.*NEURON140"):
        build("cr 0123; rm")
    assert build(BLOCK).target == BLOCK


def test_a_reservation_s_id_where_a_group_arn_is_expected_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"group_arn='cr-.*not a resource group's ARN.*NEURON140"):
        CapacityReservation.on_demand_group(BLOCK)
    arn = f"arn:aws:ec2:us-east-1:111122223333:capacity-reservation/{BLOCK}"
    refusal = rf"Capacity Reservation's ARN.*Fix: pass .*on_demand\('{BLOCK}'\)"
    with pytest.raises(NeuronConfigurationError, match=refusal):
        CapacityReservation.on_demand_group(arn)
    not_a_group = r"group_arn='my-group' is not a resource group's ARN.*NEURON140"
    with pytest.raises(NeuronConfigurationError, match=not_a_group):
        CapacityReservation.on_demand_group("my-group")
    assert CapacityReservation.on_demand_group(GROUP).target == GROUP


_DEFINED_IN = {
    "ami_rollout": ("DEFAULT_AMI_WARMUP", "AmiRollout"),
    "auto_scaling": ("AutoScalingCapacity",),
    "container_instances": (
        "DEFAULT_ROOT_VOLUME_GIB",
        "ECS_AGENT_SETTINGS",
        "NEURON_AMI_PARAMETER",
        "encrypted_root_volume",
        "grant_ecs_agent",
        "warn_about_public_subnets",
    ),
    "managed_instances": (
        "DEFAULT_AUTO_REPAIR",
        "DEFAULT_MANAGED_INSTANCES_ACCELERATORS",
        "DEFAULT_MANAGED_INSTANCES_TYPES",
        "DEFAULT_SCALE_IN_AFTER_S",
        "ManagedInstancesCapacity",
    ),
    "reservations": ("CapacityReservation",),
}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in _DEFINED_IN.items() for n in names])
def test_a_name_the_capacity_module_defined_is_still_imported_from_it_and_is_its_new_module_s(
    module: str, name: str
) -> None:
    # GIVEN the names neuron_constructs.compute.capacity defined before it was split by kind and concern
    capacity = importlib.import_module("neuron_constructs.compute.capacity")
    defining = importlib.import_module(f"neuron_constructs.compute.{module}")
    # WHEN one is imported from the old module
    # THEN it is the very object the module that now defines it holds, documented there only
    assert getattr(capacity, name) is getattr(defining, name)
    assert name not in capacity.__all__
