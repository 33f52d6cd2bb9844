"""Small CloudFormation templates written by hand, for the template checks: no AWS CDK involved.

``ecs_template()`` returns a cluster with an Auto Scaling capacity of one instance type, a
Managed Instances capacity, and helpers add task definitions and services to it.
"""

from __future__ import annotations

import copy
from typing import Any

NEURON_AMI = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
STANDARD_AMI = "/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended/image_id"


def ecs_template(instance_type: str = "inf2.48xlarge", *, max_size: int = 2) -> dict[str, Any]:
    """A cluster, an Auto Scaling capacity ``Asg`` of ``instance_type`` and a Managed Instances capacity ``Mi``."""
    return {
        "Parameters": {"Ami": {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": NEURON_AMI}},
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
            "PrivateSubnet": {"Type": "AWS::EC2::Subnet", "Properties": {"MapPublicIpOnLaunch": False}},
            "LaunchTemplate": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {
                        "InstanceType": instance_type,
                        "ImageId": {"Ref": "Ami"},
                        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
                        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 100}}],
                    }
                },
            },
            "Group": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {
                    "MinSize": "0",
                    "MaxSize": str(max_size),
                    "VPCZoneIdentifier": [{"Ref": "PrivateSubnet"}],
                    "LaunchTemplate": {
                        "LaunchTemplateId": {"Ref": "LaunchTemplate"},
                        "Version": {"Fn::GetAtt": ["LaunchTemplate", "LatestVersionNumber"]},
                    },
                },
            },
            "Asg": {
                "Type": "AWS::ECS::CapacityProvider",
                "Properties": {"AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": "Group"}}},
            },
            "Mi": {
                "Type": "AWS::ECS::CapacityProvider",
                "Properties": {
                    "ManagedInstancesProvider": {
                        "InstanceLaunchTemplate": {
                            "InstanceRequirements": {
                                "AcceleratorManufacturers": ["amazon-web-services"],
                                "AcceleratorNames": ["inferentia2"],
                                "AllowedInstanceTypes": ["inf2.*"],
                            },
                            "NetworkConfiguration": {"Subnets": [{"Ref": "PrivateSubnet"}]},
                        }
                    }
                },
            },
            "Associations": {
                "Type": "AWS::ECS::ClusterCapacityProviderAssociations",
                "Properties": {"Cluster": {"Ref": "Cluster"}, "CapacityProviders": [{"Ref": "Asg"}, {"Ref": "Mi"}]},
            },
        },
    }


def container(name: str = "model", *, devices: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    """A container definition mapping ``/dev/neuronN`` for each of ``devices``."""
    body: dict[str, Any] = {"Name": name, "Image": "public.ecr.aws/docker/library/busybox:1.37", **extra}
    if devices is not None:
        body["LinuxParameters"] = {
            "Devices": [{"HostPath": f"/dev/neuron{i}", "ContainerPath": f"/dev/neuron{i}"} for i in devices]
        }
    return body


def manual_task(
    instance_type: str | None = "inf2.48xlarge",
    devices: list[int] | None = None,
    *,
    cpu: int = 1024,
    memory: int = 4096,
    containers: list[dict[str, Any]] | None = None,
    **properties: Any,
) -> dict[str, Any]:
    """An EC2 task definition mapping ``devices`` (default [0, 1]), pinned to ``instance_type``."""
    body: dict[str, Any] = {
        "RequiresCompatibilities": ["EC2"],
        "NetworkMode": "bridge",
        "Cpu": str(cpu),
        "Memory": str(memory),
        "ContainerDefinitions": containers or [container(devices=devices if devices is not None else [0, 1])],
    }
    if instance_type is not None:
        body["PlacementConstraints"] = [
            {"Type": "memberOf", "Expression": f"attribute:ecs.instance-type == {instance_type}"}
        ]
    body.update(properties)
    return {"Type": "AWS::ECS::TaskDefinition", "Properties": body}


def managed_task(*, cpu: int = 4096, memory: int = 8192, **properties: Any) -> dict[str, Any]:
    """A Managed Instances task definition whose one container asks for NeuronDevice = ALL."""
    body: dict[str, Any] = {
        "RequiresCompatibilities": ["MANAGED_INSTANCES"],
        "NetworkMode": "awsvpc",
        "Cpu": str(cpu),
        "Memory": str(memory),
        "ContainerDefinitions": [container(ResourceRequirements=[{"Type": "NeuronDevice", "Value": "ALL"}])],
    }
    body.update(properties)
    return {"Type": "AWS::ECS::TaskDefinition", "Properties": body}


def service(
    task: str, *, capacity: str | None = "Asg", count: int = 1, distinct: bool = True, **properties: Any
) -> dict[str, Any]:
    """A service of ``task`` on ``capacity`` (``None``: launch type EC2), with distinctInstance unless told."""
    body: dict[str, Any] = {"Cluster": {"Ref": "Cluster"}, "TaskDefinition": {"Ref": task}, "DesiredCount": count}
    if capacity is None:
        body["LaunchType"] = "EC2"
    else:
        body["CapacityProviderStrategy"] = [{"CapacityProvider": {"Ref": capacity}, "Weight": 1}]
    if distinct:
        body["PlacementConstraints"] = [{"Type": "distinctInstance"}]
    body.update(properties)
    return {"Type": "AWS::ECS::Service", "Properties": body}


def with_resources(template: dict[str, Any], **resources: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``template`` with ``resources`` added (or replaced) by logical id."""
    result = copy.deepcopy(template)
    result["Resources"].update(copy.deepcopy(resources))
    return result
