"""End to end: the real cdk CLI deploys every example stack to a fresh local endpoint (moto on 127.0.0.1).

What a user would check after a deploy is read back through boto3. moto does not create
every resource or keep every property; each such gap, as the deployment report lists it, is
asserted on the synthesized template instead (``TEMPLATE_CHECKS``), and a gap nobody has
accounted for fails the suite.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from app import OLDER_DRIVER_AMI, TRN2_AMI
from conftest import ECS_STACKS, EXAMPLE_STACKS, ROOT, resources

from neuron_constructs import NeuronAmi
from neuron_constructs.compute.container_instances import NEURON_AMI_PARAMETER
from neuron_constructs.knowledge.container_images import VLLM_TRN2
from neuron_constructs.local_endpoint import LocalAwsEndpoint, deploy_app, describe_deployed, local_aws_endpoint
from neuron_constructs.tools.deployment_report import Gap, StackReport, format_reports

STANDARD_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended/image_id"
CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"
pytestmark = pytest.mark.e2e
DEFAULT_OUTPUT_LINES = 100
"""make deploy-local's default output fits two screens."""

# The instance type of every Auto Scaling group's launch template, and the AMI parameter it must use.
EXPECTED_GROUPS = {
    "NeuronInferenceManaged": {},
    "NeuronInferenceEc2": {"inf2.xlarge": NEURON_AMI_PARAMETER},
    "NeuronMixedCluster": {
        "trn1.32xlarge": NEURON_AMI_PARAMETER,
        "inf1.xlarge": NEURON_AMI_PARAMETER,
        "m7i.large": STANDARD_AMI_PARAMETER,
    },
    "NeuronSlicedInf2": {"inf2.48xlarge": NEURON_AMI_PARAMETER},
    "NeuronSlicedTrn1": {"trn1.32xlarge": NEURON_AMI_PARAMETER},
    "NeuronRagFleet": {"inf2.48xlarge": NeuronAmi.release(OLDER_DRIVER_AMI).parameter_name},
    "NeuronInferenceTrn2": {"trn2.48xlarge": NeuronAmi.release(TRN2_AMI).parameter_name},
    "NeuronTrainingTrn1": {},  # AWS Batch launches the training nodes: no Auto Scaling group
}


@dataclass(frozen=True)
class Deployment:
    endpoint: LocalAwsEndpoint
    stack_names: list[str]
    reports: dict[str, StackReport]
    stack_resources: dict[str, list[dict[str, Any]]]
    """ListStackResources summaries per stack, read once after the deploy."""

    def physical_ids(self, stack: str, resource_type: str) -> dict[str, str]:
        """Logical id -> physical id of the created resources of one type."""
        return {
            s["LogicalResourceId"]: s["PhysicalResourceId"]
            for s in self.stack_resources[stack]
            if s.get("ResourceType") == resource_type and s.get("PhysicalResourceId")
        }


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """One fresh local endpoint with every example stack deployed by the pinned cdk CLI."""
    if not CDK_CLI.exists():
        pytest.fail(f"{CDK_CLI} is missing: run make install (npm ci) first")
    cloud_assembly = tmp_path_factory.mktemp("cdk.out")
    with local_aws_endpoint(log=cloud_assembly.parent / "moto.log") as endpoint:
        deployed = deploy_app(endpoint, app_dir=ROOT, cdk=str(CDK_CLI), output=cloud_assembly)
        names = [stack.name for stack in deployed]
        assert {(stack.account, stack.region) for stack in deployed} == {(endpoint.account, endpoint.region)}
        reports = describe_deployed(endpoint, deployed)
        paginator = endpoint.client("cloudformation").get_paginator("list_stack_resources")
        stack_resources = {
            name: [r for page in paginator.paginate(StackName=name) for r in page["StackResourceSummaries"]]
            for name in names
        }
        yield Deployment(endpoint, names, {r.name: r for r in reports}, stack_resources)


def test_every_example_stack_deploys(deployment: Deployment) -> None:
    assert sorted(deployment.stack_names) == sorted(EXAMPLE_STACKS)
    for name in EXAMPLE_STACKS:
        assert deployment.reports[name].status == "CREATE_COMPLETE", name


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_ecs_cluster_exists(stack: str, deployment: Deployment) -> None:
    (cluster_name,) = deployment.physical_ids(stack, "AWS::ECS::Cluster").values()
    (cluster,) = deployment.endpoint.client("ecs").describe_clusters(clusters=[cluster_name])["clusters"]
    assert cluster["status"] == "ACTIVE"
    assert cluster["clusterName"].startswith(f"{stack}-NeuronCluster")


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_launch_templates_use_the_ami_ssm_resolves_and_the_right_instance_type(
    stack: str, deployment: Deployment
) -> None:
    ssm = deployment.endpoint.client("ssm")
    autoscaling = deployment.endpoint.client("autoscaling")
    ec2 = deployment.endpoint.client("ec2")
    seen: dict[str, str] = {}
    for group_name in deployment.physical_ids(stack, "AWS::AutoScaling::AutoScalingGroup").values():
        (group,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
        assert "LaunchConfigurationName" not in group
        reference = group["LaunchTemplate"]
        (version,) = ec2.describe_launch_template_versions(
            LaunchTemplateId=reference["LaunchTemplateId"], Versions=[reference["Version"]]
        )["LaunchTemplateVersions"]
        data = version["LaunchTemplateData"]
        seen[data["InstanceType"]] = data["ImageId"]
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
    expected = {
        instance_type: ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
        for instance_type, parameter in EXPECTED_GROUPS[stack].items()
    }
    assert seen == expected
    neuron_ami = ssm.get_parameter(Name=NEURON_AMI_PARAMETER)["Parameter"]["Value"]
    assert neuron_ami.startswith("ami-")


def _container_devices(container: dict[str, Any], *, live: bool) -> tuple[list[Any], list[Any]]:
    """(NeuronDevice requirements, Neuron device mappings) of a template or live container definition."""
    if live:
        requirements = [(r["type"], r["value"]) for r in container.get("resourceRequirements", [])]
        devices = [
            (d["hostPath"], d.get("containerPath"), sorted(d["permissions"]))
            for d in container.get("linuxParameters", {}).get("devices", [])
        ]
    else:
        requirements = [(r["Type"], r["Value"]) for r in container.get("ResourceRequirements", [])]
        devices = [
            (d["HostPath"], d.get("ContainerPath"), sorted(d["Permissions"]))
            for d in container.get("LinuxParameters", {}).get("Devices", [])
        ]
    return [r for r in requirements if r[0] == "NeuronDevice"], devices


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_task_definitions_keep_their_neuron_devices(
    stack: str, deployment: Deployment, templates: dict[str, dict[str, Any]]
) -> None:
    ecs = deployment.endpoint.client("ecs")
    live_ids = deployment.physical_ids(stack, "AWS::ECS::TaskDefinition")
    declared = resources(templates[stack], "AWS::ECS::TaskDefinition")
    assert set(live_ids) == set(declared)
    for logical_id, resource in declared.items():
        live = ecs.describe_task_definition(taskDefinition=live_ids[logical_id])["taskDefinition"]
        live_containers = {c["name"]: c for c in live["containerDefinitions"]}
        for container in resource["Properties"]["ContainerDefinitions"]:
            assert _container_devices(live_containers[container["Name"]], live=True) == _container_devices(
                container, live=False
            )


def _neuron_settings(deployment: Deployment, stack: str) -> list[tuple[list[Any], list[Any]]]:
    ecs = deployment.endpoint.client("ecs")
    settings = []
    for arn in deployment.physical_ids(stack, "AWS::ECS::TaskDefinition").values():
        for container in ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]["containerDefinitions"]:
            requirements, devices = _container_devices(container, live=True)
            neuron = [d[0] for d in devices if d[0].startswith("/dev/neuron")]
            if requirements or neuron:
                settings.append((requirements, neuron))
    return sorted(settings, key=lambda s: (len(s[0]), len(s[1])))


def test_managed_allocation_survives_the_deploy(deployment: Deployment) -> None:
    assert _neuron_settings(deployment, "NeuronInferenceManaged") == [([("NeuronDevice", "ALL")], [])]


def test_manual_mappings_survive_the_deploy(deployment: Deployment) -> None:
    assert _neuron_settings(deployment, "NeuronInferenceEc2") == [([], ["/dev/neuron0"])]
    mixed = _neuron_settings(deployment, "NeuronMixedCluster")
    assert ([], ["/dev/neuron0"]) in mixed  # inf1.xlarge: one chip
    assert ([], [f"/dev/neuron{i}" for i in range(16)]) in mixed  # trn1.32xlarge: every chip
    assert ([("NeuronDevice", "ALL")], []) in mixed  # Managed Instances


@pytest.mark.parametrize(("stack", "chips", "per_task"), [("NeuronSlicedInf2", 12, 2), ("NeuronSlicedTrn1", 16, 4)])
def test_sliced_task_definitions_survive_the_deploy(
    stack: str, chips: int, per_task: int, deployment: Deployment
) -> None:
    slices = sorted(devices for _, devices in _neuron_settings(deployment, stack))
    expected = sorted([f"/dev/neuron{d}" for d in range(i, i + per_task)] for i in range(0, chips, per_task))
    assert slices == expected


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_iam_roles_and_instance_profiles_exist(
    stack: str, deployment: Deployment, templates: dict[str, dict[str, Any]]
) -> None:
    iam = deployment.endpoint.client("iam")
    roles = deployment.physical_ids(stack, "AWS::IAM::Role")
    assert set(roles) == set(resources(templates[stack], "AWS::IAM::Role"))
    for role_name in roles.values():
        assert iam.get_role(RoleName=role_name)["Role"]["RoleName"] == role_name
    profiles = deployment.physical_ids(stack, "AWS::IAM::InstanceProfile")
    assert set(profiles) == set(resources(templates[stack], "AWS::IAM::InstanceProfile"))
    assert profiles, "every example stack has instance capacity"
    for profile_name in profiles.values():
        profile = iam.get_instance_profile(InstanceProfileName=profile_name)["InstanceProfile"]
        role_names = {r["RoleName"] for r in profile["Roles"]}
        assert role_names and role_names <= set(roles.values())


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_services_run_their_task_definitions(
    stack: str, deployment: Deployment, templates: dict[str, dict[str, Any]]
) -> None:
    ecs = deployment.endpoint.client("ecs")
    (cluster,) = deployment.physical_ids(stack, "AWS::ECS::Cluster").values()
    task_definitions = set(deployment.physical_ids(stack, "AWS::ECS::TaskDefinition").values())
    services = deployment.physical_ids(stack, "AWS::ECS::Service")
    assert services
    # DAEMON services (the monitoring daemons) have no desired count: one task per matching instance.
    desired = {
        logical_id: templates[stack]["Resources"][logical_id]["Properties"].get("DesiredCount")
        for logical_id in services
    }
    described = ecs.describe_services(cluster=cluster, services=list(services.values()))["services"]
    by_arn = {service["serviceArn"]: service for service in described}
    for logical_id, arn in services.items():
        service = by_arn[arn]
        assert service["status"] == "ACTIVE"
        if desired[logical_id] is not None:
            assert service["desiredCount"] == desired[logical_id] >= 1
        assert service["taskDefinition"] in task_definitions


# --- What moto does not do, asserted on the synthesized template -----------------------------------

Check = Callable[[dict[str, Any], dict[str, Any]], None]


def _check_capacity_provider(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2 has no AWS::ECS::CapacityProvider: the local endpoint names one, and ECS does not know it.
    if "ManagedInstancesProvider" in properties:
        requirements = properties["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["InstanceRequirements"]
        assert requirements["AcceleratorManufacturers"] == ["amazon-web-services"]
        assert all(t.startswith(("inf", "trn")) for t in requirements["AllowedInstanceTypes"])
    else:
        provider = properties["AutoScalingGroupProvider"]
        assert provider["ManagedScaling"]["Status"] == "ENABLED"
        assert provider["ManagedTerminationProtection"] == "ENABLED"
        assert provider["AutoScalingGroupArn"]["Ref"] in resources(template, "AWS::AutoScaling::AutoScalingGroup")


def _check_association(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2 has no AWS::ECS::ClusterCapacityProviderAssociations.
    providers = resources(template, "AWS::ECS::CapacityProvider")
    assert properties["CapacityProviders"] and all(p["Ref"] in providers for p in properties["CapacityProviders"])
    assert properties["Cluster"]["Ref"] in resources(template, "AWS::ECS::Cluster")


def _check_container_insights(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's CloudFormation handler ignores ClusterSettings.
    assert {"Name": "containerInsights", "Value": "enabled"} in properties["ClusterSettings"]


def _check_placement_constraints(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's CloudFormation handler drops a task definition's PlacementConstraints.
    (constraint,) = properties["PlacementConstraints"]
    assert constraint["Type"] == "memberOf"
    assert constraint["Expression"].startswith("attribute:ecs.instance-type == ")


def _check_managed_instances_task(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto drops RequiresCompatibilities, NetworkMode and task-level Cpu/Memory when created by CloudFormation.
    if any(c["Name"] in ("neuron-monitor", "npd") for c in properties["ContainerDefinitions"]):
        # The problem detector and recovery run in the host network (recovery reads its instance from the instance
        # metadata service); neuron-monitor in the bridge network.
        assert properties["NetworkMode"] == (
            "host" if properties["ContainerDefinitions"][0]["Name"] == "npd" else "bridge"
        )
        return
    assert properties["RequiresCompatibilities"] in (["MANAGED_INSTANCES"], ["EC2"], ["EC2", "MANAGED_INSTANCES"])
    if properties["RequiresCompatibilities"] == ["MANAGED_INSTANCES"]:
        assert properties["NetworkMode"] == "awsvpc"
    assert int(properties["Cpu"]) > 0 and int(properties["Memory"]) > 0


def _check_service_strategy(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's CloudFormation handler drops a service's CapacityProviderStrategy.
    (strategy,) = properties["CapacityProviderStrategy"]
    assert strategy["CapacityProvider"]["Ref"] in resources(template, "AWS::ECS::CapacityProvider")
    assert "LaunchType" not in properties


def _check_service_placement(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's CloudFormation handler drops a service's PlacementConstraints and PlacementStrategies.
    if properties.get("SchedulingStrategy") == "DAEMON":
        # A monitoring daemon: on the cluster's Neuron instance types only.
        (constraint,) = properties["PlacementConstraints"]
        assert constraint["Type"] == "memberOf"
        assert constraint["Expression"].startswith("attribute:ecs.instance-type in [")
        return
    assert {"Type": "distinctInstance"} in properties["PlacementConstraints"]
    assert properties.get("PlacementStrategies", [{"Type": "binpack", "Field": "MEMORY"}]) == [
        {"Type": "binpack", "Field": "MEMORY"}
    ]


def _check_default_security_group_restriction(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto runs no Lambda function: the local endpoint marks the custom resource created without running it.
    (vpc_id,) = resources(template, "AWS::EC2::VPC")
    assert properties["DefaultSecurityGroupId"] == {"Fn::GetAtt": [vpc_id, "DefaultSecurityGroup"]}
    handler = properties["ServiceToken"]["Fn::GetAtt"][0]
    assert template["Resources"][handler]["Type"] == "AWS::Lambda::Function"


def _check_load_balancer_rule(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler creates no separate AWS::EC2::SecurityGroupIngress/Egress between groups.
    from serving_paths import paths

    peer = properties.get("SourceSecurityGroupId") or properties["DestinationSecurityGroupId"]
    pair = {properties["GroupId"]["Fn::GetAtt"][0], peer["Fn::GetAtt"][0]}
    if any(group.startswith("CompileCacheSecurityGroup") for group in pair):
        # The compile cache's mount targets admit NFS from the capacity's instances and the precompile job only.
        assert (properties["IpProtocol"], properties["FromPort"], properties["ToPort"]) == ("tcp", 2049, 2049)
        (other,) = [group for group in pair if not group.startswith("CompileCacheSecurityGroup")]
        assert other.startswith(("NeuronTrn2SecurityGroup", "ServicePrecompileSecurityGroup")), other
        return
    if resources(template, "AWS::FSx::FileSystem"):
        _check_training_rule(pair, properties)
        return
    ports = (properties["FromPort"], properties["ToPort"])
    assert properties["IpProtocol"] == "tcp"
    assert any(
        ports == path.ports and pair & set(path.load_balancer_groups) and pair & set(path.task_groups)
        for path in paths(template)
    ), properties


def _check_training_rule(pair: set[str], properties: dict[str, Any]) -> None:
    # The training nodes admit each other on every port; the file system admits the nodes on Lustre's ports.
    nodes = "Trn1SecurityGroup"
    if len(pair) == 1:
        (group,) = pair
        assert properties["IpProtocol"] in ("-1", "tcp")
        assert group.startswith((nodes, "Trn1StorageSecurityGroup"))
        if group.startswith(nodes):
            assert properties["IpProtocol"] == "-1"
    else:
        assert any(g.startswith(nodes) for g in pair) and any(g.startswith("Trn1StorageSecurityGroup") for g in pair)
        assert properties["IpProtocol"] == "tcp"
        assert (properties["FromPort"], properties["ToPort"]) in ((988, 988), (1018, 1023))


def _check_placement_group(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's EC2 has no placement groups: the compute environment names the one cluster placement group.
    assert properties["Strategy"] == "cluster"
    (environment,) = resources(template, "AWS::Batch::ComputeEnvironment").values()
    assert "Fn::GetAtt" in environment["Properties"]["ComputeResources"]["PlacementGroup"]


def _check_warm_pool(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's Auto Scaling has no warm pools: one stopped instance ready for the group, never reused on scale in (ECS).
    assert properties["AutoScalingGroupName"]["Ref"] in resources(template, "AWS::AutoScaling::AutoScalingGroup")
    assert (properties["MinSize"], properties["PoolState"]) == (1, "Stopped")
    assert "ReuseOnScaleIn" not in str(properties.get("InstanceReusePolicy"))


def _check_warm_up_hook(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's Auto Scaling keeps no lifecycle hooks: the warm-up's hook holds a launching instance of the group until the
    # prefetch completes it, and lets it go on after half an hour without an answer.
    assert properties["AutoScalingGroupName"]["Ref"] in resources(template, "AWS::AutoScaling::AutoScalingGroup")
    assert properties["LifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"
    assert (properties["DefaultResult"], properties["HeartbeatTimeout"]) == ("CONTINUE", 1800)


def _check_data_repository_association(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's FSx has no data repository associations: the dataset bucket linked at /data, both directions.
    assert properties["FileSystemPath"] == "/data"
    assert properties["BatchImportMetaDataOnCreate"] is True
    s3 = properties["S3"]
    assert s3["AutoImportPolicy"]["Events"] == s3["AutoExportPolicy"]["Events"] == ["NEW", "CHANGED", "DELETED"]


def _check_topic_policy(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler does not create AWS::SNS::TopicPolicy: the alarm topic takes TLS only.
    (deny,) = [s for s in properties["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def _check_managed_daemon(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto has no ECS Managed Daemons: each Managed Instances capacity provider gets the monitor and, critical,
    # the health daemon, on the cluster, after the capacity provider association.
    providers = resources(template, "AWS::ECS::CapacityProvider")
    assert any(p in json.dumps(properties["CapacityProviderArns"]) for p in providers)
    (cluster_id,) = resources(template, "AWS::ECS::Cluster")
    assert properties["ClusterArn"] == {"Fn::GetAtt": [cluster_id, "Arn"]}
    definition = template["Resources"][properties["DaemonTaskDefinitionArn"]["Fn::GetAtt"][0]]["Properties"]
    (container,) = definition["ContainerDefinitions"]
    assert properties["Critical"] is (container["Name"] == "neuron-health")


def _check_metric_filter(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler does not create AWS::Logs::MetricFilter: the daemons' log lines with
    # NEURON_HW_ERR= count into the metric the kernel hardware errors alarm watches.
    assert properties["FilterPattern"] == '"NEURON_HW_ERR=" -"Finish parsing"'
    (group_id,) = [k for k in resources(template, "AWS::Logs::LogGroup") if k.startswith("NeuronMonitoringLogs")]
    assert properties["LogGroupName"] == {"Ref": group_id}
    (transform,) = properties["MetricTransformations"]
    alarms = resources(template, "AWS::CloudWatch::Alarm").values()
    assert any(a["Properties"].get("MetricName") == transform["MetricName"] for a in alarms)


def _check_alarm_math(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's alarms keep no metric math: the hardware alarm is the larger of uncorrected ECC events and hardware
    # execution errors; a rollout's alarms add the 5xx answers, or take the larger p99, of blue's and green's target
    # groups.
    (expression,) = [m["Expression"] for m in properties["Metrics"] if "Expression" in m]
    names = {m["MetricStat"]["Metric"]["MetricName"] for m in properties["Metrics"] if "MetricStat" in m}
    if str(properties.get("AlarmDescription", "")).startswith("Rolls a deployment back"):
        assert (expression, names) in (
            ("FILL(e0, 0) + FILL(e1, 0)", {"HTTPCode_Target_5XX_Count"}),
            ("MAX([p0, p1])", {"TargetResponseTime"}),
        )
        return
    assert expression == "MAX([ecc, execution])"
    assert names == {"HardwareEccUncorrected", "ExecutionHardwareErrors"}


def _check_scalable_target(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler creates no Application Auto Scaling resources.
    assert (properties["ServiceNamespace"], properties["ScalableDimension"]) == ("ecs", "ecs:service:DesiredCount")
    assert 1 <= properties["MinCapacity"] <= properties["MaxCapacity"]


def _check_scaling_policy(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # As above: request scaling or the model's NeuronCore utilization (70 %), out after a minute, in after the
    # 30-minute start-up allowance.
    configuration = properties["TargetTrackingScalingPolicyConfiguration"]
    if "CustomizedMetricSpecification" in configuration:
        metric = configuration["CustomizedMetricSpecification"]
        assert (metric["Namespace"], metric["MetricName"]) == ("NeuronConstructs/Neuron", "NeuronCoreUtilization")
        assert {d["Name"] for d in metric["Dimensions"]} == {"ClusterName", "Model"}
        assert configuration["TargetValue"] == 70
    else:
        assert configuration["PredefinedMetricSpecification"]["PredefinedMetricType"] == "ALBRequestCountPerTarget"
    assert (configuration["ScaleOutCooldown"], configuration["ScaleInCooldown"]) == (60, 1800)
    assert properties["ScalingTargetId"]["Ref"] in resources(template, "AWS::ApplicationAutoScaling::ScalableTarget")


def _check_bucket_policy(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler does not create AWS::S3::BucketPolicy: TLS only on every bucket, and on the
    # access-log bucket writes by the Elastic Load Balancing account of the Region.
    statements = properties["PolicyDocument"]["Statement"]
    deny = next(s for s in statements if s["Effect"] == "Deny")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    for write in (s for s in statements if s["Effect"] == "Allow"):
        assert write["Action"] == "s3:PutObject"
        assert "Elbv2AccountMap" in str(write["Principal"])


def _check_deployment_configuration(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's ECS keeps no deploymentConfiguration: the percentages, the circuit breaker and the deployment alarms
    # (a fleet's copies and a rolled-out service: alarms of this template that roll the deployment back).
    configuration = properties["DeploymentConfiguration"]
    assert 0 <= configuration.get("MinimumHealthyPercent", 0) <= 100 <= configuration.get("MaximumPercent", 200)
    breaker = configuration.get("DeploymentCircuitBreaker")
    assert breaker is None or breaker == {"Enable": True, "Rollback": True}
    alarms = configuration.get("Alarms")
    if alarms is not None and alarms.get("Enable"):
        declared = resources(template, "AWS::CloudWatch::Alarm")
        assert alarms["AlarmNames"] and all(n["Ref"] in declared for n in alarms["AlarmNames"]), alarms
        assert alarms["Rollback"] is True


def _check_update_policy(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # No API reads a group's UpdatePolicy back, and the endpoint updates no stack: an AMI rollout refreshes the group
    # when a deploy changes its launch template, keeping the minimum healthy percentage it computed.
    (group,) = [r for r in template["Resources"].values() if r.get("Properties") is properties]
    preferences = group["UpdatePolicy"]["AutoScalingInstanceRefresh"]["Preferences"]
    assert 0 <= preferences["MinHealthyPercentage"] <= 100 <= preferences["MaxHealthyPercentage"] <= 200


def _check_native_rollout(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto's ECS keeps no native deployment strategy: the Trainium2 model's blue/green rollout with its bake time, the
    # alternate target group and listener rule ECS shifts, and the precompile's PRE_SCALE_UP hook, which names the
    # precompile function through a role ECS assumes.
    configuration = properties["DeploymentConfiguration"]
    assert configuration["Strategy"] == "BLUE_GREEN" and configuration["BakeTimeInMinutes"] >= 0
    (hook,) = [h for h in configuration["LifecycleHooks"] if h["LifecycleStages"] == ["PRE_SCALE_UP"]]
    functions = resources(template, "AWS::Lambda::Function")
    assert hook["HookTargetArn"]["Fn::GetAtt"][0] in functions and hook["HookTargetArn"]["Fn::GetAtt"][0].startswith(
        "ServicePrecompile"
    )
    assert hook["RoleArn"]["Fn::GetAtt"][0] in resources(template, "AWS::IAM::Role")
    (balancer,) = properties["LoadBalancers"]
    advanced = balancer["AdvancedConfiguration"]
    groups = resources(template, "AWS::ElasticLoadBalancingV2::TargetGroup")
    assert advanced["AlternateTargetGroupArn"]["Ref"] in groups
    assert advanced["ProductionListenerRule"]["Ref"] in resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule")


def _check_precompile_run(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto runs no Lambda function: the endpoint marks the precompile's custom resource created without running it.
    # It runs the job once before the service is created (no job definition revision among its properties), through
    # the precompile function, within CloudFormation's hour.
    handler = properties["ServiceToken"]["Fn::GetAtt"][0]
    assert template["Resources"][handler]["Type"] == "AWS::Lambda::Function" and handler.startswith("ServicePrecompile")
    assert set(properties) == {"ServiceToken", "ServiceTimeout", "JobQueue", "Model"}
    assert int(properties["ServiceTimeout"]) == 3600


def _check_job_ended_permission(template: dict[str, Any], properties: dict[str, Any]) -> None:
    # moto 5.2's CloudFormation handler creates no AWS::Lambda::Permission: EventBridge may invoke the precompile
    # function, from the rule on its job queue's ended jobs only.
    assert properties["Action"] == "lambda:InvokeFunction" and properties["Principal"] == "events.amazonaws.com"
    assert properties["FunctionName"]["Fn::GetAtt"][0].startswith("ServicePrecompileFunction")
    rule = template["Resources"][properties["SourceArn"]["Fn::GetAtt"][0]]
    assert rule["Type"] == "AWS::Events::Rule" and rule["Properties"]["EventPattern"]["detail-type"] == [
        "Batch Job State Change"
    ]


TEMPLATE_CHECKS: dict[tuple[str, str], Check] = {
    ("Custom::NeuronPrecompile", "resource"): _check_precompile_run,
    ("AWS::Lambda::Permission", "resource"): _check_job_ended_permission,
    ("AWS::ECS::Service", "strategy"): _check_native_rollout,
    ("AWS::ECS::Service", "bakeTimeInMinutes"): _check_native_rollout,
    ("AWS::ECS::Service", "lifecycleHooks"): _check_native_rollout,
    ("AWS::ECS::Service", "advancedConfiguration"): _check_native_rollout,
    ("AWS::ECS::Service", "deploymentConfiguration"): _check_deployment_configuration,
    ("AWS::AutoScaling::AutoScalingGroup", "UpdatePolicy"): _check_update_policy,
    ("AWS::ECS::CapacityProvider", "resource"): _check_capacity_provider,
    ("AWS::ECS::ClusterCapacityProviderAssociations", "resource"): _check_association,
    ("AWS::ECS::Cluster", "containerInsights"): _check_container_insights,
    ("AWS::ECS::TaskDefinition", "placementConstraints"): _check_placement_constraints,
    ("AWS::ECS::TaskDefinition", "requiresCompatibilities"): _check_managed_instances_task,
    ("AWS::ECS::TaskDefinition", "networkMode"): _check_managed_instances_task,
    ("AWS::ECS::TaskDefinition", "cpu"): _check_managed_instances_task,
    ("AWS::ECS::TaskDefinition", "memory"): _check_managed_instances_task,
    ("AWS::ECS::Service", "capacityProviderStrategy"): _check_service_strategy,
    ("AWS::ECS::Service", "placementConstraints"): _check_service_placement,
    ("AWS::ECS::Service", "placementStrategy"): _check_service_placement,
    ("Custom::VpcRestrictDefaultSG", "resource"): _check_default_security_group_restriction,
    ("AWS::EC2::SecurityGroupIngress", "resource"): _check_load_balancer_rule,
    ("AWS::EC2::SecurityGroupEgress", "resource"): _check_load_balancer_rule,
    ("AWS::ApplicationAutoScaling::ScalableTarget", "resource"): _check_scalable_target,
    ("AWS::ApplicationAutoScaling::ScalingPolicy", "resource"): _check_scaling_policy,
    ("AWS::S3::BucketPolicy", "resource"): _check_bucket_policy,
    ("AWS::EC2::PlacementGroup", "resource"): _check_placement_group,
    ("AWS::SNS::TopicPolicy", "resource"): _check_topic_policy,
    ("AWS::ECS::Daemon", "resource"): _check_managed_daemon,
    ("AWS::Logs::MetricFilter", "resource"): _check_metric_filter,
    ("AWS::CloudWatch::Alarm", "Metrics"): _check_alarm_math,
    ("AWS::FSx::DataRepositoryAssociation", "resource"): _check_data_repository_association,
    ("AWS::AutoScaling::WarmPool", "resource"): _check_warm_pool,
    ("AWS::AutoScaling::LifecycleHook", "resource"): _check_warm_up_hook,
}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_gap_is_asserted_on_the_template(
    stack: str, deployment: Deployment, templates: dict[str, dict[str, Any]]
) -> None:
    template = templates[stack]
    gaps: list[Gap] = deployment.reports[stack].gaps
    unaccounted = [g for g in gaps if (g.resource_type, g.attribute) not in TEMPLATE_CHECKS]
    assert not unaccounted, f"new gaps between the template and the local endpoint: {unaccounted}"
    for gap in gaps:
        declared = template["Resources"][gap.logical_id]["Properties"]
        TEMPLATE_CHECKS[(gap.resource_type, gap.attribute)](template, declared)


def test_capacity_providers_are_reported_as_gaps_not_hidden(deployment: Deployment) -> None:
    gaps = deployment.reports["NeuronMixedCluster"].gaps
    providers = {g.logical_id for g in gaps if g.resource_type == "AWS::ECS::CapacityProvider"}
    assert len(providers) == 4  # Managed Instances, trn1.32xlarge, inf1.xlarge, the non-Neuron group
    label = deployment.endpoint.label
    summary = format_reports([deployment.reports["NeuronMixedCluster"]], endpoint=label)
    assert "ECS::CapacityProvider x4" in summary.splitlines()[2]
    text = format_reports([deployment.reports["NeuronMixedCluster"]], endpoint=label, verbose=True)
    assert f"not created or not kept by {label}" in text and "by AWS" not in text
    assert "AWS::ECS::CapacityProvider" in text
    assert "accelerators inferentia2, trainium, trainium2" in text


def test_report_shows_neuron_settings_per_task_definition(deployment: Deployment) -> None:
    text = format_reports([deployment.reports["NeuronMixedCluster"]], verbose=True)
    assert "vllm: NeuronDevice=ALL" in text
    assert "vllm: /dev/neuron0..15 (read/write) + IPC_LOCK" in text
    assert "serving: /dev/neuron0 (read/write) + IPC_LOCK" in text
    assert f"from SSM {NEURON_AMI_PARAMETER}" in text


# --- The endpoint itself -----------------------------------------------------------------------------


def _accepts_connections(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_endpoint_is_stopped_on_exit_and_on_error() -> None:
    with local_aws_endpoint() as endpoint:
        assert _accepts_connections(endpoint.port)
        assert endpoint.client("sts").get_caller_identity()["Account"]
    assert not _accepts_connections(endpoint.port)

    with pytest.raises(RuntimeError, match="boom"), local_aws_endpoint() as failing:
        raise RuntimeError("boom")
    assert not _accepts_connections(failing.port)


def test_environment_talks_only_to_the_loopback_endpoint() -> None:
    endpoint = LocalAwsEndpoint(port=4566)
    env = endpoint.environment({"AWS_PROFILE": "production", "AWS_SESSION_TOKEN": "x", "PATH": os.defpath})
    assert "AWS_PROFILE" not in env and "AWS_SESSION_TOKEN" not in env
    assert env["PATH"] == os.defpath
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4566"
    assert env["AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION"] == "http://localhost:4566"
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["CDK_DISABLE_CLI_TELEMETRY"] == "true" and env["CDK_DISABLE_VERSION_CHECK"] == "true"
    assert env["AWS_CONFIG_FILE"] == os.devnull == env["AWS_SHARED_CREDENTIALS_FILE"]


# Variables that would send an SDK call of the deployment (or of moto) elsewhere, or break the moto server.
HOSTILE = {
    "AWS_PROFILE": "no-such-profile",
    "AWS_DEFAULT_PROFILE": "no-such-profile",
    "AWS_ENDPOINT_URL_SSM": "https://ssm.us-east-1.amazonaws.com",
    "AWS_ENDPOINT_URL_CLOUDFORMATION": "https://cloudformation.us-east-1.amazonaws.com",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_CA_BUNDLE": "/nonexistent/bundle.pem",
    "AWS_ACCESS_KEY_ID": "AKIAREALLOOKINGKEY00",
    "AWS_SECRET_ACCESS_KEY": "real-looking-secret",
    "AWS_SESSION_TOKEN": "real-looking-token",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.2/creds",
}


def test_the_deployment_sees_only_its_endpoint_and_fake_credentials() -> None:
    env = LocalAwsEndpoint(port=4566).environment({**HOSTILE, "PATH": os.defpath})
    aws = {k: v for k, v in env.items() if k.startswith("AWS_")}
    assert not any(k.startswith("AWS_ENDPOINT_URL_") and k != "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION" for k in aws)
    assert "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS" not in aws and "AWS_PROFILE" not in aws
    assert "AWS_CONTAINER_CREDENTIALS_FULL_URI" not in aws and "AWS_CA_BUNDLE" not in aws
    assert (aws["AWS_ACCESS_KEY_ID"], aws["AWS_SECRET_ACCESS_KEY"]) == ("testing", "testing")
    assert "AWS_SESSION_TOKEN" not in aws
    assert set(aws) == {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_EC2_METADATA_DISABLED",
    }


def test_the_endpoint_starts_and_answers_with_every_hostile_variable_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing profile once crashed the moto server: it now sees fake credentials only, and so does a client."""
    for key, value in HOSTILE.items():
        monkeypatch.setenv(key, value)
    with local_aws_endpoint() as endpoint:
        assert endpoint.client("sts").get_caller_identity()["Account"]
        assert _accepts_connections(endpoint.port)


def test_examples_have_one_group_per_expected_instance_type(templates: dict[str, dict[str, Any]]) -> None:
    for stack in ECS_STACKS:
        groups = EXPECTED_GROUPS[stack]
        launch_templates = resources(templates[stack], "AWS::EC2::LaunchTemplate").values()
        assert sorted(lt["Properties"]["LaunchTemplateData"]["InstanceType"] for lt in launch_templates) == sorted(
            groups
        )


def _normalised(text: str) -> list[str]:
    """Report lines without what changes per run: generated name suffixes and the port."""
    text = re.sub(r"-[A-Z0-9]{10,}(?=[:;\s]|$)", "-…", text, flags=re.M)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "…", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    return [line.rstrip() for line in text.strip().splitlines()]


def test_the_docs_show_the_report_deploy_local_prints(deployment: Deployment) -> None:
    """The page's two samples: the default output (its report part), and the report with --verbose."""
    page = (ROOT / "docs" / "deploying.md").read_text().split("## Deploying locally", 1)[1]
    default, verbose = (block.split("```", 1)[0] for block in page.split("```text")[1:3])
    report = deployment.reports["NeuronInferenceEc2"]
    printed = format_reports([report], endpoint=deployment.endpoint.label)
    heading = printed.splitlines()[0]
    shown = default.split(heading.split("127.0.0.1")[0], 1)[1].split("\nThe local endpoint is shut down")[0]
    assert _normalised(heading.split("127.0.0.1")[0] + shown) == _normalised(printed)
    printed = format_reports([report], endpoint=deployment.endpoint.label, verbose=True)
    assert _normalised(verbose) == _normalised(printed)


def test_the_default_report_of_every_example_stack_is_two_lines_a_stack(deployment: Deployment) -> None:
    """What make deploy-local prints after the cdk CLI's outcome lines: a heading, a result line and a one-line
    gap summary per stack, and the pointer to --verbose; the whole default output stays within two screens."""
    reports = [deployment.reports[name] for name in EXAMPLE_STACKS]
    printed = format_reports(reports, endpoint=deployment.endpoint.label).splitlines()
    assert len(printed) == 2 + 2 * len(reports)
    for index, report in enumerate(reports):
        result, gaps = printed[1 + 2 * index], printed[2 + 2 * index]
        assert result.startswith(f"{report.name}: created (CREATE_COMPLETE); ")
        assert gaps.startswith("  not created or not kept by the endpoint: ") or not report.gaps
    outcome_lines = 2 + len(reports)  # the endpoint's URL, the bootstrap, one per stack
    closing = 2 + 1  # the synth warnings' heading and line, the shutdown line
    assert outcome_lines + len(printed) + closing <= DEFAULT_OUTPUT_LINES


def test_the_docs_show_what_neuron_ecs_prints_against_the_local_endpoint(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuron_constructs.tools.cli import main as neuron_ecs

    for key, value in deployment.endpoint.environment().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    (cluster,) = deployment.physical_ids("NeuronInferenceEc2", "AWS::ECS::Cluster").values()
    transcript = []
    for argv in (["ami"], ["inspect", "--cluster", cluster]):
        out = io.StringIO()
        assert neuron_ecs(argv, stdout=out, stderr=out) == 0
        transcript.append(f"$ .venv/bin/neuron-ecs {' '.join(argv)}\n{out.getvalue()}")
    page = (ROOT / "docs" / "cli.md").read_text()
    sample = page.split("Against the local endpoint:", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    assert _normalised(sample) == _normalised("".join(transcript))


@pytest.mark.parametrize("stack", ["NeuronInferenceManaged", "NeuronSlicedInf2"])
def test_report_shows_the_load_balancer_its_listener_and_target_group(deployment: Deployment, stack: str) -> None:
    report = deployment.reports[stack]
    kinds = {item.kind: item for item in report.items}
    assert kinds["load balancer"].details[0] == "internal"
    listener = kinds["listener"]
    assert listener.name == "HTTP:80" and listener.details[0].startswith("default forward to ")
    target_group = kinds["target group"]
    assert listener.details[0] == f"default forward to {target_group.name}"
    assert target_group.details[1] == "health check /health every 30 s"
    print(format_reports([report], endpoint="moto"))


def test_report_shows_each_model_s_listener_rule_of_the_rag_fleet(deployment: Deployment) -> None:
    report = deployment.reports["NeuronRagFleet"]
    rules = sorted((item.name, item.details) for item in report.items if item.kind == "listener rule")
    assert [details[0] for _, details in rules] == ["path-pattern /v1/*", "path-pattern /invocations"]
    groups = {item.name for item in report.items if item.kind == "target group"}
    assert len(groups) == 2 and {details[1].removeprefix("forward to ") for _, details in rules} == groups
    (listener,) = (item for item in report.items if item.kind == "listener")
    assert listener.details == ("default fixed-response 404",)


def test_the_training_queue_and_its_multi_node_job_deploy(
    deployment: Deployment, templates: dict[str, dict[str, Any]]
) -> None:
    batch = deployment.endpoint.client("batch")
    (environment_name,) = deployment.physical_ids("NeuronTrainingTrn1", "AWS::Batch::ComputeEnvironment").values()
    (environment,) = batch.describe_compute_environments(computeEnvironments=[environment_name])["computeEnvironments"]
    compute = environment["computeResources"]
    assert (compute["instanceTypes"], compute["minvCpus"], compute["maxvCpus"]) == (["trn1.32xlarge"], 0, 256)
    (definition_arn,) = deployment.physical_ids("NeuronTrainingTrn1", "AWS::Batch::JobDefinition").values()
    (definition,) = batch.describe_job_definitions(jobDefinitions=[definition_arn])["jobDefinitions"]
    nodes = definition["nodeProperties"]
    assert (definition["type"], nodes["numNodes"], nodes["mainNode"]) == ("multinode", 2, 0)
    (node_range,) = nodes["nodeRangeProperties"]
    assert node_range["targetNodes"] == "0:"
    devices = [d["hostPath"] for d in node_range["container"]["linuxParameters"]["devices"]]
    assert devices == [f"/dev/neuron{i}" for i in range(16)] + [f"/dev/infiniband/uverbs{i}" for i in range(8)]
    (file_system_id,) = deployment.physical_ids("NeuronTrainingTrn1", "AWS::FSx::FileSystem").values()
    (file_system,) = deployment.endpoint.client("fsx").describe_file_systems(FileSystemIds=[file_system_id])[
        "FileSystems"
    ]
    assert file_system["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    report = format_reports(
        [deployment.reports["NeuronTrainingTrn1"]], endpoint=deployment.endpoint.label, verbose=True
    )
    assert "multinode, 2 node(s); nodes 0:: 16 Neuron + 8 EFA devices" in report
    assert "AWS::EC2::PlacementGroup" in report  # listed as not created, never hidden
    summary = format_reports([deployment.reports["NeuronTrainingTrn1"]], endpoint=deployment.endpoint.label)
    assert "EC2::PlacementGroup" in summary.splitlines()[2]


KEPT_STORAGE_APP = """
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs

from neuron_constructs import LustreStorage, NeuronTrainingQueue
from neuron_constructs.base.vpc import private_vpc

app = App(analytics_reporting=False)
network = Stack(app, "Network")
vpc = private_vpc(network, max_azs=1)
stack = Stack(app, "KeptStorage")
storage = LustreStorage.in_new_bucket(stack, "Data")
queue = NeuronTrainingQueue(stack, "Queue", instance_type="trn1.32xlarge", max_nodes=2, vpc=vpc, storage=storage)
queue.add_job(
    "Train", nodes=2, image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37"),
    command=["torchrun", "train.py"],
)
app.synth()
"""


def test_a_training_stack_with_kept_storage_deletes_and_keeps_what_it_says(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIVEN a training queue whose FSx file system is kept after the stack (the default), in the VPC of a network
    stack (as NEURON120 advises), WHEN the training stack is deployed and destroyed on the local endpoint, THEN the
    destroy succeeds, the network stack stays, and the file system, the dataset bucket and the job log group are still
    there."""
    import sys

    from neuron_constructs.local_endpoint.cdk_cli import run_cdk

    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(KEPT_STORAGE_APP)
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py"}))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    assembly = tmp_path / "cdk.out"
    with local_aws_endpoint() as endpoint:
        deploy_app(endpoint, app_dir=app_dir, cdk=str(CDK_CLI), output=assembly, stacks=["Network", "KeptStorage"])
        cloudformation = endpoint.client("cloudformation")
        summaries = cloudformation.list_stack_resources(StackName="KeptStorage")["StackResourceSummaries"]
        physical = [(s["ResourceType"], s["PhysicalResourceId"]) for s in summaries]
        (file_system_id,) = (v for kind, v in physical if kind == "AWS::FSx::FileSystem")
        (bucket,) = (v for kind, v in physical if kind == "AWS::S3::Bucket")
        (log_group,) = (v for kind, v in physical if kind == "AWS::Logs::LogGroup")  # the job logs

        destroy = ["destroy", "--no-notices", "--app", str(assembly), "KeptStorage", "--force"]
        run_cdk(str(CDK_CLI), destroy, env=endpoint.environment(), cwd=app_dir)

        live = {s["StackName"]: s["StackStatus"] for s in cloudformation.describe_stacks()["Stacks"]}
        assert "KeptStorage" not in live and live["Network"] == "CREATE_COMPLETE"
        fsx = endpoint.client("fsx").describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"]
        assert [f["FileSystemId"] for f in fsx] == [file_system_id]
        endpoint.client("s3").head_bucket(Bucket=bucket)
        groups = endpoint.client("logs").describe_log_groups(logGroupNamePrefix=log_group)["logGroups"]
        assert [g["logGroupName"] for g in groups] == [log_group]


def test_the_trainium2_precompile_job_its_efs_cache_and_hook_deploy(deployment: Deployment) -> None:
    """The Trainium2 example's precompile: its Batch queue and job definition (the service's image on Fargate with
    the CPU compile variables and the model's EFS access point), the EFS cache and the function exist on the endpoint;
    the report says that the endpoint keeps no lifecycle hook (it runs no deployment)."""
    stack = "NeuronInferenceTrn2"
    batch = deployment.endpoint.client("batch")
    (definition_arn,) = deployment.physical_ids(stack, "AWS::Batch::JobDefinition").values()
    (definition,) = batch.describe_job_definitions(jobDefinitions=[definition_arn])["jobDefinitions"]
    container = definition["containerProperties"]
    environment = {pair["name"]: pair["value"] for pair in container["environment"]}
    assert definition["platformCapabilities"] == ["FARGATE"]
    assert container["image"] == VLLM_TRN2.uri
    assert (environment["VLLM_NEURON_CPU_COMPILE"], environment["NEURON_PLATFORM_TARGET_OVERRIDE"]) == ("1", "trn2")
    (volume,) = container["volumes"]
    (access_point_id,) = deployment.physical_ids(stack, "AWS::EFS::AccessPoint").values()
    assert volume["efsVolumeConfiguration"]["authorizationConfig"] == {
        "accessPointId": access_point_id,
        "iam": "ENABLED",
    }
    (queue,) = deployment.physical_ids(stack, "AWS::Batch::JobQueue").values()
    assert batch.describe_job_queues(jobQueues=[queue])["jobQueues"][0]["state"] == "ENABLED"
    (file_system_id,) = deployment.physical_ids(stack, "AWS::EFS::FileSystem").values()
    (file_system,) = deployment.endpoint.client("efs").describe_file_systems(FileSystemId=file_system_id)["FileSystems"]
    assert file_system["Encrypted"] is True
    functions = deployment.physical_ids(stack, "AWS::Lambda::Function")
    (precompile_function,) = [name for logical, name in functions.items() if logical.startswith("ServicePrecompile")]
    configuration = deployment.endpoint.client("lambda").get_function_configuration(FunctionName=precompile_function)
    assert configuration["Environment"]["Variables"]["PRECOMPILE_JOB_DEFINITION"] == definition_arn
    report = format_reports([deployment.reports[stack]], endpoint=deployment.endpoint.label, verbose=True)
    assert "deploymentConfiguration.lifecycleHooks not kept" in report
