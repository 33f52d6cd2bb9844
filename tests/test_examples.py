"""The example stacks: snapshots, the Neuron essentials by name, cfn-lint and cdk-nag."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

import pytest
from conftest import ECS_STACKS, EXAMPLE_STACKS, resources, workloads
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from neuron_constructs import NeuronInstanceType
from neuron_constructs.compute.container_instances import NEURON_AMI_PARAMETER

NEURON_DEVICE_ALL = [{"Type": "NeuronDevice", "Value": "ALL"}]


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


ASSET_KEY = re.compile(r'"[0-9a-f]{64}\.zip"')
DEFAULT_SG_HANDLER = "CustomVpcRestrictDefaultSGCustomResourceProviderHandlerDC833E5E"


def without_asset_hashes(template: dict[str, Any]) -> dict[str, Any]:
    """The template with the S3 key of aws-cdk-lib's bundled handler code replaced by a placeholder."""
    return json.loads(ASSET_KEY.sub('"<asset hash>.zip"', json.dumps(template)))  # type: ignore[no-any-return]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_template_snapshot(stack: str, templates: dict[str, dict[str, Any]], json_snapshot: SnapshotAssertion) -> None:
    assert without_asset_hashes(templates[stack]) == json_snapshot


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_template_is_byte_stable(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    text = json.dumps(template, sort_keys=True)
    assert "BootstrapVersion" not in text
    assert "CDKMetadata" not in text
    assert "AssetParameters" not in text
    # The one asset is aws-cdk-lib's own handler for the default security group (its hash moves only with
    # aws-cdk-lib, pinned); the snapshot holds a placeholder for it.
    assets = [k for k, v in template["Resources"].items() if "cdk-hnb659fds-assets" in json.dumps(v)]
    assert assets == [DEFAULT_SG_HANDLER]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_no_launch_configuration_anywhere(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    assert resources(templates[stack], "AWS::AutoScaling::LaunchConfiguration") == {}


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_container_insights_on(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    (cluster,) = resources(templates[stack], "AWS::ECS::Cluster").values()
    assert {"Name": "containerInsights", "Value": "enabled"} in cluster["Properties"]["ClusterSettings"]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_vpc_flow_logs_on(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    (flow_log,) = resources(templates[stack], "AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["LogDestinationType"] == "cloud-watch-logs"


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_container_logs_to_cloudwatch(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    """Task definitions, Managed Instances daemon task definitions and job definitions alike."""
    containers = [
        container
        for kind in ("AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition")
        for task in resources(templates[stack], kind).values()
        for container in task["Properties"]["ContainerDefinitions"]
    ]
    for job in resources(templates[stack], "AWS::Batch::JobDefinition").values():
        properties = job["Properties"]
        nodes = properties.get("NodeProperties", {}).get("NodeRangeProperties", [])
        containers += [node["Container"] for node in nodes] or [properties["ContainerProperties"]]
    assert containers
    for container in containers:
        assert container["LogConfiguration"]["LogDriver"] == "awslogs"


def test_managed_stack_gives_the_vllm_container_every_neuron_device(templates: dict[str, dict[str, Any]]) -> None:
    (task,) = resources(templates["NeuronInferenceManaged"], "AWS::ECS::TaskDefinition").values()
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["MANAGED_INSTANCES"]
    assert props["NetworkMode"] == "awsvpc"
    container, sidecar = props["ContainerDefinitions"]
    assert sidecar["Name"] == "engine-metrics" and "ResourceRequirements" not in sidecar
    assert container["ResourceRequirements"] == NEURON_DEVICE_ALL
    assert "LinuxParameters" not in container
    assert container["PortMappings"][0]["ContainerPort"] == 8080


def test_managed_instances_capacity_selects_neuron_accelerators(templates: dict[str, dict[str, Any]]) -> None:
    (provider,) = resources(templates["NeuronInferenceManaged"], "AWS::ECS::CapacityProvider").values()
    requirements = provider["Properties"]["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["InstanceRequirements"]
    assert requirements["AcceleratorManufacturers"] == ["amazon-web-services"]
    # Inf2 and Trn1 only: the example's vLLM 0.16 image runs NxD Inference, unsupported on Trn2 (NEURON131).
    assert requirements["AcceleratorNames"] == ["inferentia2", "trainium"]
    assert requirements["AllowedInstanceTypes"] == ["inf2.*", "trn1.*"]
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


LAUNCH_TEMPLATE_STACKS = tuple(s for s in EXAMPLE_STACKS if s != "NeuronInferenceManaged")
"""The examples with Auto Scaling capacity (the training stack's: AWS Batch's groups, from the queue's template)."""


def _metadata_options(template: dict[str, Any], launch_template_data: dict[str, Any]) -> dict[str, Any]:
    """The launch template's metadata options but instance tags, which only a stack with a prefetching warm pool turns
    on (its warm-up reads the group's name from them)."""
    options = dict(launch_template_data["MetadataOptions"])
    tags = options.pop("InstanceMetadataTags", None)
    assert tags in (None, "enabled") and (tags is None or resources(template, "AWS::AutoScaling::WarmPool"))
    return options


@pytest.mark.parametrize("stack", LAUNCH_TEMPLATE_STACKS)
def test_ec2_launch_template_is_hardened(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    launch_templates = resources(templates[stack], "AWS::EC2::LaunchTemplate").values()
    assert launch_templates
    for launch_template in launch_templates:
        data = launch_template["Properties"]["LaunchTemplateData"]
        assert _metadata_options(templates[stack], data) == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
        assert data["Monitoring"] == {"Enabled": True}
        (root,) = data["BlockDeviceMappings"]
        assert {k: v for k, v in root["Ebs"].items() if k != "VolumeSize"} == {
            "DeleteOnTermination": True,
            "Encrypted": True,
            "VolumeType": "gp3",
        }
        neuron = data.get("InstanceType") is None or NeuronInstanceType.find(data["InstanceType"]) is not None
        assert root["Ebs"]["VolumeSize"] == (100 if neuron else 30)  # the general-purpose group's standard AMI


def test_ec2_capacity_uses_managed_scaling_and_termination_protection(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceEc2"]
    (provider,) = resources(template, "AWS::ECS::CapacityProvider").values()
    asg_provider = provider["Properties"]["AutoScalingGroupProvider"]
    assert asg_provider["ManagedScaling"]["Status"] == "ENABLED"
    assert asg_provider["ManagedTerminationProtection"] == "ENABLED"
    (group,) = resources(template, "AWS::AutoScaling::AutoScalingGroup").values()
    assert group["Properties"]["NewInstancesProtectedFromScaleIn"] is True


def test_ec2_task_maps_neuron0_pinned_to_its_instance_type(templates: dict[str, dict[str, Any]]) -> None:
    (task,) = workloads(templates["NeuronInferenceEc2"], "AWS::ECS::TaskDefinition").values()
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["EC2"]
    assert props["PlacementConstraints"] == [
        {"Type": "memberOf", "Expression": "attribute:ecs.instance-type == inf2.xlarge"}
    ]
    container, sidecar = props["ContainerDefinitions"]
    assert sidecar["Name"] == "engine-metrics" and "Devices" not in sidecar["LinuxParameters"]
    assert container["LinuxParameters"]["Devices"] == [
        {"HostPath": "/dev/neuron0", "ContainerPath": "/dev/neuron0", "Permissions": ["read", "write"]}
    ]
    assert container["LinuxParameters"]["Capabilities"] == {"Add": ["IPC_LOCK"]}
    assert "ResourceRequirements" not in container


def test_ec2_service_waits_for_the_capacity_provider_association(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronInferenceEc2"]
    (service,) = workloads(template, "AWS::ECS::Service").values()
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
        for s in workloads(template, "AWS::ECS::Service").values()
    }
    neuron_providers = {
        pid for pid, p in providers.items() if "ManagedInstancesProvider" in p["Properties"] or "General" not in pid
    }
    assert used == neuron_providers
    devices = {
        t["Properties"]["PlacementConstraints"][0]["Expression"]: len(
            t["Properties"]["ContainerDefinitions"][0]["LinuxParameters"]["Devices"]
        )
        for t in workloads(template, "AWS::ECS::TaskDefinition").values()
        if "PlacementConstraints" in t["Properties"]
    }
    assert devices == {
        "attribute:ecs.instance-type == trn1.32xlarge": 16,
        "attribute:ecs.instance-type == inf1.xlarge": 1,
    }


def test_rag_fleet_runs_eight_embedding_copies_on_one_neuron_core_each(templates: dict[str, dict[str, Any]]) -> None:
    """The LLM's copies hold chips 0-7 whole; the embedding copies share chips 8-11, two a chip, on cores 16-23."""
    held: dict[str | None, list[str]] = {}
    for definition in workloads(templates["NeuronRagFleet"], "AWS::ECS::TaskDefinition").values():
        containers = [c for c in definition["Properties"]["ContainerDefinitions"] if "LinuxParameters" in c]
        for container in containers:
            devices = [d["HostPath"] for d in container["LinuxParameters"].get("Devices", [])]
            if not devices:
                continue
            environment = {e["Name"]: e["Value"] for e in container.get("Environment", [])}
            held.setdefault(environment.get("NEURON_RT_VISIBLE_CORES"), []).extend(devices)
    assert sorted(held.pop(None)) == sorted(f"/dev/neuron{i}" for i in range(8))
    assert held == {str(core): [f"/dev/neuron{core // 2}"] for core in range(16, 24)}


@pytest.mark.e2e  # cfn-lint takes a few seconds per template: it runs with the deploys (make test-e2e, CI)
@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_cfn_lint_with_the_neuron_rule_pack_reports_nothing(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    from cfnlint.api import ManualArgs, lint
    from cfnlint.core import get_rules

    rules = get_rules(["neuron_constructs.checks.cfn_lint_rules"], [], [])
    assert any(rule.id.startswith("E91") for rule in rules)
    # The Regions a template names for cfn-lint (as the cfn-lint CLI reads them), else us-east-1.
    regions = templates[stack].get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("regions", ["us-east-1"])
    matches = lint(json.dumps(templates[stack]), rules=rules, config=ManualArgs(regions=regions))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


def test_cdk_nag_ran_and_every_finding_is_fixed_or_acknowledged(validation_report: dict[str, Any]) -> None:
    plugin = next(p for p in validation_report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    acknowledged = {v["ruleName"].split("[")[0] for v in plugin["suppressedViolations"]}
    # Only findings on the ECS agent's and infrastructure's policies, the default-security-group handler's
    # basic execution policy, ASG notifications, the server access logs of the access-log bucket and (in the RAG
    # example) the embedding container's configuration through environment variables are acknowledged.
    assert acknowledged == {
        "AwsSolutions-IAM4",
        "AwsSolutions-IAM5",
        "AwsSolutions-AS3",
        "AwsSolutions-S1",
        "AwsSolutions-ECS2",
    }
    assert all(len(v["reason"]) > 40 for v in plugin["suppressedViolations"])


def test_every_aws_solutions_acknowledgement_sits_on_the_resource_it_suppresses(
    validation_report: dict[str, Any],
) -> None:
    """aws-cdk-lib (and cdk-nag) apply an acknowledgement to the construct it sits on and everything under it: each
    one the examples use is on the very resource with the finding, so it covers nothing else (tests/test_compliance.py
    shows a user's wildcard on the library's roles reported)."""
    plugin = next(p for p in validation_report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    wider = [
        (v["ruleName"], v["acknowledgedAt"], c["constructPath"])
        for v in plugin["suppressedViolations"]
        for c in v["violatingConstructs"]
        if c["constructPath"] != v["acknowledgedAt"]
    ]
    assert wider == []


def test_acknowledgments_are_written_where_the_cdk_reads_them() -> None:
    """The library writes acknowledgments as the metadata ``Validations.acknowledge`` writes, in one entry per
    construct (the cdk-nag report above shows them honoured)."""
    from aws_cdk import Validations

    from neuron_constructs.base import compliance

    assert compliance._ACKNOWLEDGED_RULES == Validations.ACKNOWLEDGED_RULES_METADATA_KEY


def test_every_nist_finding_left_open_has_a_reason(validation_report: dict[str, Any]) -> None:
    from compliance_report import NIST_PACK, OPEN_NIST_FINDINGS, counts

    open_findings, _ = counts(validation_report, NIST_PACK)
    assert set(open_findings) == set(OPEN_NIST_FINDINGS)


@pytest.mark.e2e  # the validation engine takes ~7 s of CPU time: it runs with the deploys (make test-e2e, CI)
def test_aws_cdk_lib_builtin_cloudformation_validation_finds_nothing(
    cloudformation_validation_report: dict[str, Any],
) -> None:
    """What ``cdk synth`` validates by default; a clean run writes no report of its own (next test: it would)."""
    from aws_cdk import CloudFormationValidatePlugin

    reports = [
        p
        for p in cloudformation_validation_report["pluginReports"]
        if p["pluginName"] == CloudFormationValidatePlugin.PLUGIN_NAME
    ]
    # Acknowledged findings leave an empty report: the Managed Daemons' Critical, which the bundled schema predates.
    assert all(not p["violations"] for p in reports)


@pytest.mark.e2e  # with the test above
def test_aws_cdk_lib_builtin_cloudformation_validation_would_report_a_broken_template(
    broken_validation_report: dict[str, Any],
) -> None:
    """The same plugin, in the same synthesis process, on one stack with a property S3 buckets do not have."""
    from aws_cdk import CloudFormationValidatePlugin

    plugin = next(
        p
        for p in broken_validation_report["pluginReports"]
        if p["pluginName"] == CloudFormationValidatePlugin.PLUGIN_NAME
    )
    assert "NoSuchProperty" in json.dumps(plugin["violations"])


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


# --- security claims of the docs (docs/security.md), each on every example template ----------------------------------


def _statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _roles_trusting(template: dict[str, Any], service: str) -> dict[str, dict[str, Any]]:
    return {
        k: v
        for k, v in resources(template, "AWS::IAM::Role").items()
        if any(
            s["Principal"].get("Service") == service for s in v["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        )
    }


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_containers_cannot_reach_instance_metadata(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    for launch_template in resources(templates[stack], "AWS::EC2::LaunchTemplate").values():
        data = launch_template["Properties"]["LaunchTemplateData"]
        # IMDSv2 with a hop limit of 1: bridge-mode containers are one hop too far.
        assert _metadata_options(templates[stack], data) == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
        # awsvpc tasks: the ECS agent blocks the metadata service.
        assert "echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config" in json.dumps(data["UserData"])


@pytest.mark.parametrize("stack", ["NeuronInferenceManaged", "NeuronMixedCluster"])
def test_managed_instances_capacity_sets_no_metadata_options(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    """ECS launches Managed Instances from its own launch template: the capacity provider's
    ``InstanceLaunchTemplate`` has no metadata options, and the library sets none (docs/security.md)."""
    providers = [
        p["Properties"]["ManagedInstancesProvider"]
        for p in resources(templates[stack], "AWS::ECS::CapacityProvider").values()
        if "ManagedInstancesProvider" in p["Properties"]
    ]
    assert providers
    for provider in providers:
        launch_template = set(provider["InstanceLaunchTemplate"])
        assert not {"MetadataOptions", "HttpTokens", "HttpPutResponseHopLimit"} & launch_template


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_instance_roles_hold_only_the_ecs_agent_calls(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    instance_roles = _roles_trusting(template, "ec2.amazonaws.com")
    assert instance_roles
    for role_id, role in instance_roles.items():
        assert "ManagedPolicyArns" not in role["Properties"] and "Policies" not in role["Properties"]
        assert _statements(template, role_id)
        for statement in _statements(template, role_id):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if actions == ["autoscaling:CompleteLifecycleAction"]:  # a prefetching warm pool's warm-up: own group only
                assert resources(template, "AWS::AutoScaling::WarmPool")
                assert "autoScalingGroupName/" in json.dumps(statement["Resource"]) and statement["Resource"] != "*"
                continue
            assert all(a.startswith("ecs:") for a in actions), actions  # no logs:*, no ecr:*
            if statement["Resource"] == "*":
                assert actions == ["ecs:DiscoverPollEndpoint"] or "ecs:cluster" in json.dumps(statement["Condition"])


def _inline_statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in role["Properties"].get("Policies", []) for s in policy["PolicyDocument"]["Statement"]]


def _every_statement(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statement of the template's policies, managed policies and roles' inline policies."""
    documents = [
        p["Properties"]["PolicyDocument"]
        for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for p in resources(template, kind).values()
    ]
    inline = [s for role in resources(template, "AWS::IAM::Role").values() for s in _inline_statements(role)]
    return [s for d in documents for s in d["Statement"]] + inline


def _polls(statement: dict[str, Any]) -> bool:
    """Whether ``statement`` allows ecs:Poll or ecs:StartTelemetrySession (by name or by wildcard)."""
    actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
    return statement["Effect"] == "Allow" and any(
        fnmatch.fnmatchcase(call, action) for call in ("ecs:Poll", "ecs:StartTelemetrySession") for action in actions
    )


def _managed_instances_role(template: dict[str, Any]) -> str:
    """The logical id of the role in the instance profile of the template's one Managed Instances provider."""
    (provider,) = [
        p["Properties"]["ManagedInstancesProvider"]
        for p in resources(template, "AWS::ECS::CapacityProvider").values()
        if "ManagedInstancesProvider" in p["Properties"]
    ]
    (profile_id, _) = provider["InstanceLaunchTemplate"]["Ec2InstanceProfileArn"]["Fn::GetAtt"]
    (role,) = template["Resources"][profile_id]["Properties"]["Roles"]
    return role["Ref"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_ecs_agent_polls_only_its_own_cluster(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    """ecs:Poll carries task credentials: every statement that allows it (or ecs:StartTelemetrySession), in policies
    and in roles' inline policies, holds the caller to the stack's cluster - on Managed Instances capacity too."""
    template = templates[stack]
    instance_roles = _roles_trusting(template, "ec2.amazonaws.com")
    if stack in ("NeuronInferenceManaged", "NeuronMixedCluster"):
        assert _managed_instances_role(template) in instance_roles
    for role_id, role in instance_roles.items():
        assert any(_polls(s) for s in [*_statements(template, role_id), *_inline_statements(role)]), role_id
    polling = [s for s in _every_statement(template) if _polls(s)]
    if stack == "NeuronTrainingTrn1":  # AWS Batch names the cluster it makes AWSBatch-<compute environment>-<uuid>
        (environment_id,) = resources(template, "AWS::Batch::ComputeEnvironment")
        for statement in polling:
            assert list(statement.get("Condition", {})) == ["ArnLike"], statement
            ((key, cluster),) = statement["Condition"]["ArnLike"].items()
            assert key == "ecs:cluster"
            assert ":cluster/AWSBatch-" in json.dumps(cluster) and environment_id in json.dumps(cluster)
        return
    (cluster_id,) = resources(template, "AWS::ECS::Cluster")
    for statement in polling:
        assert statement.get("Condition") == {"ArnEquals": {"ecs:cluster": {"Fn::GetAtt": [cluster_id, "Arn"]}}}


@pytest.mark.parametrize("stack", ["NeuronInferenceManaged", "NeuronMixedCluster"])
def test_managed_instances_infrastructure_role_may_pass_the_instance_role(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    """AmazonECSInfrastructureRolePolicyForManagedInstances lets ECS pass only roles named ecsInstanceRole*; the
    instance role's name is generated, so the infrastructure role may pass it by a grant in place before the
    provider."""
    template = templates[stack]
    role_id = _managed_instances_role(template)
    assert "RoleName" not in template["Resources"][role_id]["Properties"]
    (provider,) = [
        p
        for p in resources(template, "AWS::ECS::CapacityProvider").values()
        if "ManagedInstancesProvider" in p["Properties"]
    ]
    (infrastructure_role_id, _) = provider["Properties"]["ManagedInstancesProvider"]["InfrastructureRoleArn"][
        "Fn::GetAtt"
    ]
    ((policy_id, policy),) = [
        (k, p)
        for k, p in resources(template, "AWS::IAM::Policy").items()
        if p["Properties"]["Roles"] == [{"Ref": infrastructure_role_id}]
    ]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "iam:PassRole", "Effect": "Allow", "Resource": {"Fn::GetAtt": [role_id, "Arn"]}}
    ]
    assert policy_id in provider["DependsOn"]


def _roles_named_by(template: dict[str, Any], keys: tuple[str, ...]) -> set[str]:
    """The logical ids of the roles any resource names under one of ``keys`` (``{"Fn::GetAtt": [id, "Arn"]}``),
    however deep: a task definition's ``TaskRoleArn``, a job definition's ``JobRoleArn`` in its container or nodes."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in keys and isinstance(item, dict) and "Fn::GetAtt" in item:
                    found.add(item["Fn::GetAtt"][0])
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(template["Resources"])
    return found


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_service_roles_carry_confused_deputy_conditions(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    referenced = _roles_named_by(template, ("TaskRoleArn", "JobRoleArn"))
    task_roles = {k: v for k, v in _roles_trusting(template, "ecs-tasks.amazonaws.com").items() if k in referenced}
    assert referenced == set(task_roles)  # every task and job role of the stack, the daemons' included
    flow_log_roles = _roles_trusting(template, "vpc-flow-logs.amazonaws.com")
    assert task_roles and len(flow_log_roles) == 1
    for role in [*task_roles.values(), *flow_log_roles.values()]:
        (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
        assert "aws:SourceArn" in statement["Condition"]["ArnLike"]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_vpc_default_security_group_is_restricted(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    (vpc_id,) = resources(template, "AWS::EC2::VPC")
    (restriction,) = resources(template, "Custom::VpcRestrictDefaultSG").values()
    assert restriction["Properties"]["DefaultSecurityGroupId"] == {"Fn::GetAtt": [vpc_id, "DefaultSecurityGroup"]}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_no_subnet_assigns_public_addresses(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    subnets = resources(templates[stack], "AWS::EC2::Subnet").values()
    # A public and a private subnet per Availability Zone: two zones, or one for the training nodes' placement group.
    assert [s["Properties"]["MapPublicIpOnLaunch"] for s in subnets] == [False] * (2 if "Training" in stack else 4)


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_manual_service_keeps_its_copies_on_distinct_instances(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    template = templates[stack]
    tasks = resources(template, "AWS::ECS::TaskDefinition")
    for service in resources(template, "AWS::ECS::Service").values():
        if service["Properties"].get("SchedulingStrategy") == "DAEMON":
            continue  # one task per instance by definition (the monitoring daemons)
        task = tasks[service["Properties"]["TaskDefinition"]["Ref"]]
        manual = any("Devices" in c.get("LinuxParameters", {}) for c in task["Properties"]["ContainerDefinitions"])
        constraints = service["Properties"].get("PlacementConstraints", [])
        assert ({"Type": "distinctInstance"} in constraints) is manual


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_neuron_template_checks_find_nothing(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    from neuron_constructs.checks.template_checks import check_template

    assert [f.message for f in check_template(templates[stack])] == []


def _training_container(template: dict[str, Any]) -> dict[str, Any]:
    (job,) = resources(template, "AWS::Batch::JobDefinition").values()
    (node_range,) = job["Properties"]["NodeProperties"]["NodeRangeProperties"]
    return node_range["Container"]  # type: ignore[no-any-return]


def test_training_nodes_get_eight_efa_interfaces_card_zero_primary(templates: dict[str, dict[str, Any]]) -> None:
    (launch_template,) = resources(templates["NeuronTrainingTrn1"], "AWS::EC2::LaunchTemplate").values()
    interfaces = launch_template["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    (group_id,) = resources(templates["NeuronTrainingTrn1"], "AWS::EC2::SecurityGroup").keys() - {
        k for k in resources(templates["NeuronTrainingTrn1"], "AWS::EC2::SecurityGroup") if "Storage" in k
    }
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in interfaces] == [
        (0, 0, "efa"),
        *[(card, 1, "efa") for card in range(1, 8)],
    ]
    assert all(i["Groups"] == [{"Fn::GetAtt": [group_id, "GroupId"]}] for i in interfaces)


def test_training_nodes_share_one_placement_group_subnet_and_a_self_only_group(
    templates: dict[str, dict[str, Any]],
) -> None:
    template = templates["NeuronTrainingTrn1"]
    (placement_id, placement) = next(iter(resources(template, "AWS::EC2::PlacementGroup").items()))
    assert placement["Properties"]["Strategy"] == "cluster"
    (environment,) = resources(template, "AWS::Batch::ComputeEnvironment").values()
    compute = environment["Properties"]["ComputeResources"]
    assert compute["PlacementGroup"] == {"Fn::GetAtt": [placement_id, "GroupName"]}
    assert len(compute["Subnets"]) == 1 and "SecurityGroupIds" not in compute
    assert compute["MinvCpus"] == 0 and compute["MaxvCpus"] == 2 * 128 and compute["InstanceTypes"] == ["trn1.32xlarge"]
    nodes = next(k for k in resources(template, "AWS::EC2::SecurityGroup") if "Storage" not in k)
    ingress = [
        rule["Properties"]
        for rule in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"]["GroupId"] == {"Fn::GetAtt": [nodes, "GroupId"]}
    ]
    assert ingress == [
        {
            "IpProtocol": "-1",
            "Description": "Between training nodes",
            "GroupId": {"Fn::GetAtt": [nodes, "GroupId"]},
            "SourceSecurityGroupId": {"Fn::GetAtt": [nodes, "GroupId"]},
        }
    ]
    assert "SecurityGroupIngress" not in resources(template, "AWS::EC2::SecurityGroup")[nodes]["Properties"]


def test_training_container_maps_every_device_with_memlock_and_the_efa_environment(
    templates: dict[str, dict[str, Any]],
) -> None:
    container = _training_container(templates["NeuronTrainingTrn1"])
    devices = [(d["HostPath"], d["ContainerPath"]) for d in container["LinuxParameters"]["Devices"]]
    assert devices == [(f"/dev/neuron{i}",) * 2 for i in range(16)] + [
        (f"/dev/infiniband/uverbs{i}",) * 2 for i in range(8)
    ]
    assert {"Name": "memlock", "SoftLimit": -1, "HardLimit": -1} in container["Ulimits"]
    environment = {
        e["Name"]: e["Value"]
        for e in container["Environment"]
        if not e["Name"].startswith(("NEURON_MONITOR", "NEURON_PREFLIGHT"))
    }
    assert environment == {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_EFA_FORK_SAFE": "1",
        "NEURON_COMPILE_CACHE_URL": "/fsx/neuron-compile-cache",
        "NEURON_CHECKPOINT_DIR": "/fsx/data/checkpoints/pretrain",
        "NEURON_PROCESS_TAG": "NeuronTrainingTrn1/Trn1/Pretrain",
    }
    assert container["Command"][-3:] == ["torchrun", "--nproc_per_node=32", "/fsx/data/train.py"]
    assert container["Image"].startswith("public.ecr.aws/neuron/pytorch-training-neuronx:")


def test_training_job_runs_on_any_node_count_and_its_submit_command_is_an_output(
    templates: dict[str, dict[str, Any]],
) -> None:
    template = templates["NeuronTrainingTrn1"]
    (job,) = resources(template, "AWS::Batch::JobDefinition").values()
    nodes = job["Properties"]["NodeProperties"]
    assert nodes["NumNodes"] == 2 and nodes["MainNode"] == 0
    assert nodes["NodeRangeProperties"][0]["TargetNodes"] == "0:"
    command = json.dumps(next(v for k, v in template["Outputs"].items() if "SubmitCommand" in k)["Value"])
    assert "aws batch submit-job --job-name pretrain --job-queue " in command
    assert " --node-overrides numNodes=2" in command


def test_training_instance_role_is_scoped_to_the_batch_cluster(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronTrainingTrn1"]
    (environment_id,) = resources(template, "AWS::Batch::ComputeEnvironment")
    (role_id,) = [k for k in _roles_trusting(template, "ec2.amazonaws.com") if "InstanceRole" in k]
    (register,) = [s for s in _statements(template, role_id) if "ecs:RegisterContainerInstance" in s["Action"]]
    rendered = json.dumps(register["Resource"])
    assert ":cluster/AWSBatch-" in rendered and environment_id in rendered and rendered.endswith('"-*"]]}')


def test_the_training_example_s_jobs_publish_neuron_metrics(templates: dict[str, dict[str, Any]]) -> None:
    from neuron_constructs.monitoring.daemons import publisher_source

    (job,) = resources(templates["NeuronTrainingTrn1"], "AWS::Batch::JobDefinition").values()
    (node_range,) = job["Properties"]["NodeProperties"]["NodeRangeProperties"]
    environment = {e["Name"]: e["Value"] for e in node_range["Container"]["Environment"]}
    assert environment["NEURON_MONITOR_EMF"] == publisher_source()
    assert json.loads(environment["NEURON_MONITOR_CONFIG"])["period"] == "60s"
    assert "JobQueueArn" in json.dumps(environment["NEURON_MONITOR_CLUSTER"])  # the job queue's name, from its ARN
    assert environment["NEURON_PROCESS_TAG"].startswith("NeuronTrainingTrn1/")  # each job's metrics as a model's


def test_training_example_tells_its_topic_of_failed_jobs_under_a_key_eventbridge_may_use(
    templates: dict[str, dict[str, Any]],
) -> None:
    template = templates["NeuronTrainingTrn1"]
    (rule,) = resources(template, "AWS::Events::Rule").values()
    assert rule["Properties"]["EventPattern"]["detail"]["status"] == ["FAILED"]
    (topic_id,) = resources(template, "AWS::SNS::Topic")
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Ref": topic_id}
    (key,) = resources(template, "AWS::KMS::Key").values()
    events = [
        s for s in key["Properties"]["KeyPolicy"]["Statement"] if s["Principal"] == {"Service": "events.amazonaws.com"}
    ]
    assert events and set(events[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert key["Properties"]["EnableKeyRotation"] is True


def _is_neuron_container(container: dict[str, Any]) -> bool:
    devices = container.get("LinuxParameters", {}).get("Devices", [])
    managed = any(r.get("Type") == "NeuronDevice" for r in container.get("ResourceRequirements", []))
    return managed or any(str(d.get("HostPath", "")).startswith("/dev/neuron") for d in devices)


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_every_neuron_container_reports_as_its_model(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    """neuron-monitor reports each application under its NEURON_PROCESS_TAG: every Neuron container of a service,
    slice or fleet copy carries its model's name, the copies of one model the same one, two models never one."""
    template = templates[stack]
    tags_by_service: dict[str, set[str]] = {}
    definitions = resources(template, "AWS::ECS::TaskDefinition")
    for service in resources(template, "AWS::ECS::Service").values():
        reference = service["Properties"]["TaskDefinition"]
        definition = definitions.get(reference.get("Ref", "") if isinstance(reference, dict) else "")
        if definition is None:
            continue
        for container in definition["Properties"]["ContainerDefinitions"]:
            if _is_neuron_container(container):
                environment = {e["Name"]: e["Value"] for e in container.get("Environment", [])}
                assert "NEURON_PROCESS_TAG" in environment, (stack, container["Name"])
                tags_by_service.setdefault(str(reference), set()).add(environment["NEURON_PROCESS_TAG"])
    assert tags_by_service, "the example runs Neuron services"
    assert all(len(tags) == 1 for tags in tags_by_service.values())
    models = {next(iter(tags)) for tags in tags_by_service.values()}
    assert all(m.startswith(f"{stack}/") for m in models)  # the default: the service's or model's construct path


def _kept_in_the_docs() -> dict[tuple[str, str], int]:
    """(stack, resource type) -> how many of them docs/deploying.md says ``make destroy`` keeps."""
    from conftest import ROOT

    text = (ROOT / "docs" / "deploying.md").read_text()
    table = text.split("<!-- kept:begin -->", 1)[1].split("<!-- kept:end -->", 1)[0]
    kept: dict[tuple[str, str], int] = {}
    for row in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        kind = cells[1].strip("`")
        stacks = EXAMPLE_STACKS if cells[2] == "every example stack" else tuple(cells[2].split(", "))
        for stack in stacks:
            kept[stack, kind] = kept.get((stack, kind), 0) + 1
    return kept


def test_what_make_destroy_keeps_is_what_the_docs_list(templates: dict[str, dict[str, Any]]) -> None:
    """Every resource an example template keeps after its stack is deleted (DeletionPolicy Retain) is listed in
    docs/deploying.md, and nothing listed there is deleted with its stack."""
    kept: dict[tuple[str, str], int] = {}
    for stack in EXAMPLE_STACKS:
        for resource in templates[stack]["Resources"].values():
            if resource.get("DeletionPolicy") in ("Retain", "RetainExceptOnCreate"):
                kept[stack, resource["Type"]] = kept.get((stack, resource["Type"]), 0) + 1
    assert kept == _kept_in_the_docs()


def test_flow_logs_and_job_logs_are_kept_and_service_logs_go_with_the_stack(
    templates: dict[str, dict[str, Any]],
) -> None:
    """Every log group keeps its events one month; the flow logs and the training job logs outlive the stack, the
    containers' and daemons' logs are deleted with it."""
    for stack in EXAMPLE_STACKS:
        for logical_id, group in resources(templates[stack], "AWS::Logs::LogGroup").items():
            assert group["Properties"]["RetentionInDays"] == 30, (stack, logical_id)
            record = "VpcFlowLogs" in logical_id or stack == "NeuronTrainingTrn1"
            assert group["DeletionPolicy"] == ("Retain" if record else "Delete"), (stack, logical_id)


# ------------------------------------------------- images, AMIs and drivers ---


def _ami_parameters(template: dict[str, Any]) -> set[str]:
    """The SSM parameters of the AMIs a template's launch templates and compute environments resolve."""
    return {
        p["Default"]
        for p in template.get("Parameters", {}).values()
        if p.get("Type") == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    }


def _neuron_images(template: dict[str, Any]) -> list[str]:
    """Every image a task or job definition of the template names, as its JSON (deploy-time URIs included)."""
    images = [
        json.dumps(c["Image"])
        for definition in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in definition["Properties"]["ContainerDefinitions"]
    ]
    for job in resources(template, "AWS::Batch::JobDefinition").values():
        images += [json.dumps(m) for m in re.findall(r'"Image": ("[^"]*"|\{[^}]*\})', json.dumps(job))]
    return images


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_image_runs_on_the_driver_of_the_ami_its_capacity_launches(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    """An image whose runtime the newest Neuron driver does not run (the SDK 2.20 embedding and SDK 2.30 training
    images) is only in a stack whose AMI is one release its runtime runs on; every other stack's images run on the
    newest driver, so following the recommended AMI does not break them."""
    from app import OLDER_DRIVER_AMI

    from neuron_constructs import NeuronAmi
    from neuron_constructs.compute.driver_check import image_sdk
    from neuron_constructs.knowledge.neuron_releases import ami_driver_conflict, newest_driver_conflict

    sdks = {sdk for image in _neuron_images(templates[stack]) if (sdk := image_sdk(image))}
    behind = {sdk for sdk in sdks if newest_driver_conflict(sdk)}
    if behind:
        assert _ami_parameters(templates[stack]) == {NeuronAmi.release(OLDER_DRIVER_AMI).parameter_name}, stack
        assert all(ami_driver_conflict(OLDER_DRIVER_AMI, sdk) is None for sdk in sdks)
    assert (
        stack not in ("NeuronRagFleet", "NeuronTrainingTrn1")
        or behind
        == {
            "NeuronRagFleet": {"2.20.0"},
            "NeuronTrainingTrn1": {"2.30.0"},
        }[stack]
    )


def test_the_trn2_example_serves_the_sdk_2_33_vllm_image_on_a_pinned_ami_and_a_warm_pool(
    templates: dict[str, dict[str, Any]],
) -> None:
    from app import TRN2_AMI

    from neuron_constructs import NeuronAmi
    from neuron_constructs.knowledge.container_images import VLLM_TRN2
    from neuron_constructs.knowledge.neuron_releases import ami_driver, ami_driver_conflict

    template = templates["NeuronInferenceTrn2"]
    assert _ami_parameters(template) == {NeuronAmi.release(TRN2_AMI).parameter_name}
    # Dated after Neuron 2.33.1, whose driver is in no source: the floor, 2.31 or later, which the image runs on.
    assert ami_driver(TRN2_AMI).describe() == "2.31 or later" and ami_driver_conflict(TRN2_AMI, "2.33.0") is None
    (group,) = resources(template, "AWS::AutoScaling::AutoScalingGroup").values()
    refresh = group["UpdatePolicy"]["AutoScalingInstanceRefresh"]["Preferences"]
    assert (refresh["MinHealthyPercentage"], refresh["MaxHealthyPercentage"]) == (100, 150)  # one of two at a time
    (pool,) = resources(template, "AWS::AutoScaling::WarmPool").values()
    assert (pool["Properties"]["MinSize"], pool["Properties"]["PoolState"]) == (1, "Stopped")
    (launch_template,) = resources(template, "AWS::EC2::LaunchTemplate").values()
    user_data = json.dumps(launch_template["Properties"]["LaunchTemplateData"]["UserData"])
    assert "NEURON_LOGICAL_NC_CONFIG=2" in user_data and VLLM_TRN2.uri in user_data  # lnc=2; the warm-up's pull
    (vllm,) = [
        c
        for definition in workloads(template, "AWS::ECS::TaskDefinition").values()
        for c in definition["Properties"]["ContainerDefinitions"]
        if c["Name"] == "vllm"
    ]
    assert vllm["Image"] == VLLM_TRN2.uri
    assert vllm["EntryPoint"][:2] == ["/bin/sh", "-c"]  # the driver start check, then the image's entry point
    command = vllm["Command"]
    assert command[:4] == ["python", "/usr/local/bin/vllm_entrypoint.py", "vllm", "serve"]
    assert command[command.index("--tensor-parallel-size") + 1] == "4"  # chip 0: four logical cores at lnc=2
    assert json.loads(command[command.index("--additional-config") + 1])["neuron_config"]["num_seqs_buckets"] == [2]
    environment = {e["Name"]: e["Value"] for e in vllm["Environment"]}
    assert environment["NEURON_LOGICAL_NC_CONFIG"] == "2" and environment["NEURON_SKIP_EFA_AFFINITY"] == "1"
    assert environment["NEURON_DRIVER_CHECK_OLDEST"] == "2.27" and environment["NEURON_DRIVER_CHECK_NEWEST"] == ""
    assert vllm["LinuxParameters"]["Devices"] == [
        {"ContainerPath": "/dev/neuron0", "HostPath": "/dev/neuron0", "Permissions": ["read", "write"]}
    ]
