"""The example stacks: snapshots, the Neuron essentials by name, cfn-lint and cdk-nag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_STACKS, resources
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from neuron_constructs.capacity import NEURON_AMI_PARAMETER

NEURON_DEVICE_ALL = [{"Type": "NeuronDevice", "Value": "ALL"}]


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_template_snapshot(stack: str, templates: dict[str, dict[str, Any]], json_snapshot: SnapshotAssertion) -> None:
    assert templates[stack] == json_snapshot


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_template_is_byte_stable(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    text = json.dumps(templates[stack], sort_keys=True)
    assert "BootstrapVersion" not in text
    assert "CDKMetadata" not in text
    assert "AssetParameters" not in text and "cdk-hnb659fds-assets" not in text


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_no_launch_configuration_anywhere(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    assert resources(templates[stack], "AWS::AutoScaling::LaunchConfiguration") == {}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_container_insights_on(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    (cluster,) = resources(templates[stack], "AWS::ECS::Cluster").values()
    assert {"Name": "containerInsights", "Value": "enabled"} in cluster["Properties"]["ClusterSettings"]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_vpc_flow_logs_on(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    (flow_log,) = resources(templates[stack], "AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["LogDestinationType"] == "cloud-watch-logs"


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_container_logs_to_cloudwatch(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    for task in resources(templates[stack], "AWS::ECS::TaskDefinition").values():
        for container in task["Properties"]["ContainerDefinitions"]:
            assert container["LogConfiguration"]["LogDriver"] == "awslogs"


def test_managed_stack_gives_the_vllm_container_every_neuron_device(templates: dict[str, dict[str, Any]]) -> None:
    (task,) = resources(templates["NeuronInferenceManaged"], "AWS::ECS::TaskDefinition").values()
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["MANAGED_INSTANCES"]
    assert props["NetworkMode"] == "awsvpc"
    (container,) = props["ContainerDefinitions"]
    assert container["ResourceRequirements"] == NEURON_DEVICE_ALL
    assert "LinuxParameters" not in container
    assert container["PortMappings"][0]["ContainerPort"] == 8080


def test_managed_instances_capacity_selects_neuron_accelerators(templates: dict[str, dict[str, Any]]) -> None:
    (provider,) = resources(templates["NeuronInferenceManaged"], "AWS::ECS::CapacityProvider").values()
    requirements = provider["Properties"]["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["InstanceRequirements"]
    assert requirements["AcceleratorManufacturers"] == ["amazon-web-services"]
    assert requirements["AcceleratorNames"] == ["inferentia2", "trainium", "trainium2"]
    assert requirements["AllowedInstanceTypes"] == ["inf*", "trn*"]
    assert requirements["VCpuCount"] == {"Min": 4}  # inf2.xlarge, the smallest admitted type
    assert requirements["MemoryMiB"] == {"Min": 16 * 1024}


def test_managed_service_uses_the_managed_instances_strategy(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceManaged"]
    (service,) = resources(template, "AWS::ECS::Service").values()
    (provider_id,) = resources(template, "AWS::ECS::CapacityProvider")
    assert service["Properties"]["CapacityProviderStrategy"] == [
        {"CapacityProvider": {"Ref": provider_id}, "Weight": 1}
    ]
    assert "LaunchType" not in service["Properties"]


def test_ec2_stack_resolves_the_neuron_ami_from_ssm(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceEc2"]
    ((parameter_id, parameter),) = template["Parameters"].items()
    assert parameter == {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": NEURON_AMI_PARAMETER}
    assert NEURON_AMI_PARAMETER == "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
    (launch_template,) = resources(template, "AWS::EC2::LaunchTemplate").values()
    data = launch_template["Properties"]["LaunchTemplateData"]
    assert data["ImageId"] == {"Ref": parameter_id}
    assert data["InstanceType"] == "inf2.xlarge"


def test_ec2_launch_template_is_hardened(templates: dict[str, dict[str, Any]]) -> None:
    (launch_template,) = resources(templates["NeuronInferenceEc2"], "AWS::EC2::LaunchTemplate").values()
    data = launch_template["Properties"]["LaunchTemplateData"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["Monitoring"] == {"Enabled": True}
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"] == {"DeleteOnTermination": True, "Encrypted": True, "VolumeSize": 100, "VolumeType": "gp3"}


def test_ec2_capacity_uses_managed_scaling_and_termination_protection(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceEc2"]
    (provider,) = resources(template, "AWS::ECS::CapacityProvider").values()
    asg_provider = provider["Properties"]["AutoScalingGroupProvider"]
    assert asg_provider["ManagedScaling"]["Status"] == "ENABLED"
    assert asg_provider["ManagedTerminationProtection"] == "ENABLED"
    (group,) = resources(template, "AWS::AutoScaling::AutoScalingGroup").values()
    assert group["Properties"]["NewInstancesProtectedFromScaleIn"] is True


def test_ec2_task_maps_neuron0_pinned_to_its_instance_type(templates: dict[str, dict[str, Any]]) -> None:
    (task,) = resources(templates["NeuronInferenceEc2"], "AWS::ECS::TaskDefinition").values()
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["EC2"]
    assert props["PlacementConstraints"] == [
        {"Type": "memberOf", "Expression": "attribute:ecs.instance-type == inf2.xlarge"}
    ]
    (container,) = props["ContainerDefinitions"]
    assert container["LinuxParameters"]["Devices"] == [
        {"HostPath": "/dev/neuron0", "ContainerPath": "/dev/neuron0", "Permissions": ["read", "write"]}
    ]
    assert container["LinuxParameters"]["Capabilities"] == {"Add": ["IPC_LOCK"]}
    assert "ResourceRequirements" not in container


def test_ec2_service_waits_for_the_capacity_provider_association(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceEc2"]
    (service,) = resources(template, "AWS::ECS::Service").values()
    (association_id,) = resources(template, "AWS::ECS::ClusterCapacityProviderAssociations")
    assert association_id in service["DependsOn"]


def test_mixed_cluster_holds_every_capacity_kind(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronMixedCluster"]
    assert len(resources(template, "AWS::ECS::Cluster")) == 1
    instance_types = sorted(
        lt["Properties"]["LaunchTemplateData"]["InstanceType"]
        for lt in resources(template, "AWS::EC2::LaunchTemplate").values()
    )
    assert instance_types == ["inf1.xlarge", "m7i.large", "trn1.32xlarge"]
    providers = resources(template, "AWS::ECS::CapacityProvider").values()
    managed = [p for p in providers if "ManagedInstancesProvider" in p["Properties"]]
    assert len(managed) == 1
    requirements = managed[0]["Properties"]["ManagedInstancesProvider"]["InstanceLaunchTemplate"][
        "InstanceRequirements"
    ]
    assert requirements["AllowedInstanceTypes"] == ["inf2.*"]


def test_mixed_cluster_standard_group_uses_the_standard_ami(templates: dict[str, dict[str, Any]]) -> None:
    defaults = sorted(p["Default"] for p in templates["NeuronMixedCluster"]["Parameters"].values())
    assert defaults == [
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id",
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended/image_id",
    ]


def test_mixed_cluster_runs_a_service_on_each_neuron_capacity(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronMixedCluster"]
    providers = resources(template, "AWS::ECS::CapacityProvider")
    used = {
        s["Properties"]["CapacityProviderStrategy"][0]["CapacityProvider"]["Ref"]
        for s in resources(template, "AWS::ECS::Service").values()
    }
    neuron_providers = {
        pid for pid, p in providers.items() if "ManagedInstancesProvider" in p["Properties"] or "General" not in pid
    }
    assert used == neuron_providers
    devices = {
        t["Properties"]["PlacementConstraints"][0]["Expression"]: len(
            t["Properties"]["ContainerDefinitions"][0]["LinuxParameters"]["Devices"]
        )
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        if "PlacementConstraints" in t["Properties"]
    }
    assert devices == {
        "attribute:ecs.instance-type == trn1.32xlarge": 16,
        "attribute:ecs.instance-type == inf1.xlarge": 1,
    }


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_cfn_lint_reports_nothing(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(templates[stack]), config=ManualArgs(regions=["us-east-1"]))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


def test_cdk_nag_ran_and_every_finding_is_fixed_or_acknowledged(example_assembly: Any) -> None:
    report = json.loads((Path(example_assembly.directory) / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    assert plugin["pluginName"] == "AwsSolutions"
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    acknowledged = {v["ruleName"].split("[")[0] for v in plugin["suppressedViolations"]}
    # Only findings on aws-cdk-lib's own ECS agent/infrastructure policies and ASG notifications are acknowledged.
    assert acknowledged == {"AwsSolutions-IAM4", "AwsSolutions-IAM5", "AwsSolutions-AS3"}
    assert all(len(v["reason"]) > 40 for v in plugin["suppressedViolations"])


def test_cdk_nag_would_catch_an_unacknowledged_finding() -> None:
    from aws_cdk import App, Stack, Validations
    from aws_cdk import aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks

    app = App(analytics_reporting=False)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    sqs.Queue(Stack(app, "Unencrypted"), "Queue", encryption=sqs.QueueEncryption.UNENCRYPTED)
    with pytest.raises(RuntimeError, match="AwsSolutions-SQS"):
        app.synth()


def test_mixed_stack_names_its_inf1_repository_and_outputs_its_uri(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronMixedCluster"]
    ((logical_id, repository),) = resources(template, "AWS::ECR::Repository").items()
    properties = repository["Properties"]
    # ECR names must be lowercase; a fixed name is where users push the image the Inf1 task runs.
    assert properties["RepositoryName"] == "neuronmixedcluster/inf1-serving"
    assert properties["ImageTagMutability"] == "IMMUTABLE"
    assert properties["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert repository["DeletionPolicy"] == "Retain"
    output = template["Outputs"]["Inf1RepositoryUri"]
    assert {"Ref": logical_id} in output["Value"]["Fn::Join"][1]
