"""The template checks, rule by rule, on hand-written CloudFormation (no AWS CDK): a compliant template
finds nothing, and each broken one gets exactly its rule with the rule-style message."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from cfn import STANDARD_AMI, container, ecs_template, managed_task, manual_task, service, with_resources
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs.checks.inputs import secret_like
from neuron_constructs.checks.template_checks import TEMPLATE_CHECKS, check_template
from neuron_constructs.checks.template_loading import parse_template
from neuron_constructs.knowledge import rules as r

BASE = ecs_template()


def slices(count: int = 6, size: int = 2, **service_extra: Any) -> dict[str, dict[str, Any]]:
    """``count`` slice task definitions of ``size`` devices on inf2.48xlarge, each with a distinctInstance service."""
    resources: dict[str, dict[str, Any]] = {}
    for i in range(count):
        resources[f"Slice{i}"] = manual_task(devices=list(range(i * size, (i + 1) * size)))
        resources[f"Slice{i}Service"] = service(f"Slice{i}", **service_extra)
    return resources


def _scaling(service: str, minimum: int, maximum: int) -> dict[str, Any]:
    """An Application Auto Scaling target on the desired count of ``service``, as aws-cdk-lib writes it."""
    return {
        "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
        "Properties": {
            "MinCapacity": minimum,
            "MaxCapacity": maximum,
            "ResourceId": {"Fn::Join": ["", ["service/", {"Ref": "Cluster"}, "/", {"Fn::GetAtt": [service, "Name"]}]]},
            "ScalableDimension": "ecs:service:DesiredCount",
            "ServiceNamespace": "ecs",
        },
    }


def _sidecar_on_a_slice() -> dict[str, Any]:
    template = with_resources(BASE, **slices())
    template["Resources"]["Slice0"]["Metadata"] = _intent("manual", instanceType="inf2.48xlarge", devices=[0, 1])
    template["Resources"]["Slice0"]["Properties"]["ContainerDefinitions"].append(container("sidecar", devices=[2]))
    return template


def _mi_task(**overrides: Any) -> dict[str, Any]:
    return with_resources(BASE, Task=managed_task(**overrides), Svc=service("Task", capacity="Mi", distinct=False))


def _ami(parameter: str | None = None, literal: str | None = None) -> dict[str, Any]:
    template = with_resources(BASE)
    data = template["Resources"]["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
    if parameter:
        template["Parameters"]["Ami"]["Default"] = parameter
    if literal:
        data["ImageId"] = literal
    return template


def _launch_data(**changes: Any) -> dict[str, Any]:
    template = with_resources(BASE)
    template["Resources"]["LaunchTemplate"]["Properties"]["LaunchTemplateData"].update(changes)
    return template


def _warm_up_fetching(image_gib: float, artifacts_gib: float, root_gib: int = 100) -> dict[str, Any]:
    """A warm-pooled group (the warm-up's lifecycle hook) whose one service states its image and model sizes."""
    sync = container(
        "model-model-sync", Command=["s3", "sync", "--only-show-errors", "s3://models/llama", "/opt/ml/model"]
    )
    task = manual_task(containers=[container(devices=[0, 1]), sync])
    task["Metadata"] = _intent(
        "manual", imageSizesGiB={"model": image_gib}, artifactSizesGiB={"model-model-sync": artifacts_gib}
    )
    hook = {
        "Type": "AWS::AutoScaling::LifecycleHook",
        "Properties": {
            "AutoScalingGroupName": {"Ref": "Group"},
            "LifecycleHookName": "neuron-warm-up",
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
        },
    }
    template = with_resources(BASE, Task=task, Svc=service("Task"), WarmUp=hook)
    data = template["Resources"]["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
    data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] = root_gib
    return template


def _public_subnet() -> dict[str, Any]:
    template = with_resources(BASE)
    template["Resources"]["PrivateSubnet"]["Properties"]["MapPublicIpOnLaunch"] = True
    return template


def _intent(allocation: str, **task: Any) -> dict[str, Any]:
    return {"NeuronConstructs": {"allocation": allocation, "neuronContainers": ["model"], **task}}


def _load_balanced(*rules: dict[str, Any], awsvpc: bool = False, **changes: Any) -> dict[str, Any]:
    """A bridge service on the Auto Scaling capacity (or an awsvpc one with its own group) registered on port 8080
    with a target group an Application Load Balancer's listener forwards to; ``rules`` are added to the group in
    front of the tasks (``InstanceGroup`` or ``TaskGroup``), inbound from ``BalancerGroup``."""
    group = {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "g", "VpcId": "vpc-1"}}
    balancer_group = copy.deepcopy(group)
    balancer_group["Properties"]["SecurityGroupEgress"] = [{"CidrIp": "0.0.0.0/0", "IpProtocol": "-1"}]
    task = manual_task(containers=[container(devices=[0], PortMappings=[{"ContainerPort": 8080}])])
    extra: dict[str, Any] = {}
    if awsvpc:
        task["Properties"]["NetworkMode"] = "awsvpc"
        extra["NetworkConfiguration"] = {
            "AwsvpcConfiguration": {"SecurityGroups": [{"Fn::GetAtt": ["TaskGroup", "GroupId"]}], "Subnets": ["s"]}
        }
    front = "TaskGroup" if awsvpc else "InstanceGroup"
    resources = {
        "InstanceGroup": group,
        "TaskGroup": group,
        "BalancerGroup": balancer_group,
        "Balancer": {
            "Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
            "Properties": {"SecurityGroups": [{"Fn::GetAtt": ["BalancerGroup", "GroupId"]}], "Subnets": ["s"]},
        },
        "Listener": {
            "Type": "AWS::ElasticLoadBalancingV2::Listener",
            "Properties": {
                "LoadBalancerArn": {"Ref": "Balancer"},
                "Port": 80,
                "Protocol": "HTTP",
                "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": "Targets"}}],
            },
        },
        "Targets": {
            "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
            "Properties": {"Port": 8080, "Protocol": "HTTP", "VpcId": "vpc-1"},
        },
        "Task": task,
        "Svc": service(
            "Task",
            LoadBalancers=[{"ContainerName": "model", "ContainerPort": 8080, "TargetGroupArn": {"Ref": "Targets"}}],
            **extra,
        ),
        **{
            f"Rule{i}": {
                "Type": "AWS::EC2::SecurityGroupIngress",
                "Properties": {
                    "GroupId": {"Fn::GetAtt": [front, "GroupId"]},
                    "SourceSecurityGroupId": {"Fn::GetAtt": ["BalancerGroup", "GroupId"]},
                    **rule,
                },
            }
            for i, rule in enumerate(rules)
        },
    }
    template = with_resources(BASE, **resources)
    data = template["Resources"]["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
    data["SecurityGroupIds"] = [{"Fn::GetAtt": ["InstanceGroup", "GroupId"]}]
    for logical_id, properties in changes.items():
        template["Resources"][logical_id]["Properties"].update(properties)
    return template


DYNAMIC = {"IpProtocol": "tcp", "FromPort": 32768, "ToPort": 65535}


def _core_task(device: int, cores: str, instance_type: str = "inf2.48xlarge", lnc: str | None = None) -> dict[str, Any]:
    """A task mapping ``/dev/neuron<device>`` that names ``cores`` in NEURON_RT_VISIBLE_CORES."""
    environment = [{"Name": "NEURON_RT_VISIBLE_CORES", "Value": cores}]
    if lnc is not None:
        environment.append({"Name": "NEURON_LOGICAL_NC_CONFIG", "Value": lnc})
    return manual_task(instance_type, containers=[container(devices=[device], Environment=environment)])


def _plain_task(*containers: dict[str, Any], **properties: Any) -> dict[str, Any]:
    """A task definition of no Neuron kind: no device, no NeuronDevice, no intent."""
    body = {"RequiresCompatibilities": ["EC2"], "NetworkMode": "bridge", "ContainerDefinitions": list(containers)}
    return {"Type": "AWS::ECS::TaskDefinition", "Properties": {**body, **properties}}


_VLLM_NEURON = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
_VLLM_NXDI = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"


def _cache_variable(image: str, name: str, value: str, instance_type: str = "trn2.48xlarge") -> dict[str, Any]:
    """A task whose one container runs ``image`` with the compile cache variable ``name`` set."""
    model = container(devices=[0, 1], Image=image, Environment=[{"Name": name, "Value": value}])
    return with_resources(BASE, Task=manual_task(instance_type, containers=[model]))


CASES: list[tuple[r.Rule, dict[str, Any], str]] = [
    (
        r.CACHE_ENGINE_MISMATCH,
        _cache_variable(_VLLM_NEURON, "NEURON_COMPILE_CACHE_URL", "s3://cache/neuron-compile-cache/"),
        r"Task/model: NEURON_COMPILE_CACHE_URL is set for an image of vLLM Neuron \(native route\), which does not "
        r"read it.*Fix: set NEURON_LIBTORCH_REMOTE_CACHE",
    ),
    (
        r.CACHE_ENGINE_MISMATCH,
        _cache_variable(_VLLM_NXDI, "NEURON_LIBTORCH_REMOTE_CACHE", "/mnt/cache", "inf2.48xlarge"),
        r"Task/model: NEURON_LIBTORCH_REMOTE_CACHE is set for an image of vLLM on NxD Inference, which reads "
        r"NEURON_COMPILE_CACHE_URL.*Fix: set NEURON_COMPILE_CACHE_URL to an s3:// URL",
    ),
    (
        r.UNKNOWN_INSTANCE_TYPE,
        with_resources(BASE, Task=manual_task("inf2.2xlarge")),
        r"Task: the task maps Neuron devices but is pinned to 'inf2.2xlarge'",
    ),
    (
        r.INF1_ON_MANAGED_INSTANCES,
        with_resources(
            BASE,
            Mi={
                "Type": "AWS::ECS::CapacityProvider",
                "Properties": {
                    "ManagedInstancesProvider": {
                        "InstanceLaunchTemplate": {"InstanceRequirements": {"AcceleratorNames": ["inferentia"]}}
                    }
                },
            },
        ),
        r"Mi: accelerator 'inferentia' \(Inf1\)",
    ),
    (r.CAPACITY_SIZE, ecs_template(max_size=0), r"Group: MinSize 0, MaxSize 0"),
    (
        r.ONE_NEURON_CONTAINER,
        _mi_task(
            ContainerDefinitions=[
                container(name, ResourceRequirements=[{"Type": "NeuronDevice", "Value": "ALL"}]) for name in "ab"
            ]
        ),
        r"Task: containers \['a', 'b'\] ask for NeuronDevice",
    ),
    (
        r.MIXED_DEVICE_MODES,
        _mi_task(
            ContainerDefinitions=[
                container("model", ResourceRequirements=[{"Type": "NeuronDevice", "Value": "ALL"}]),
                container("sidecar", devices=[0]),
            ]
        ),
        r"Task/sidecar: container maps \['/dev/neuron0'\] while \['model'\] ask for NeuronDevice",
    ),
    (r.MANAGED_INSTANCES_FIELD, _mi_task(NetworkMode="bridge"), r"Task: network mode bridge on a Managed Instances"),
    (
        r.MANAGED_ALLOCATION_CAPACITY,
        with_resources(BASE, Task=managed_task(RequiresCompatibilities=["EC2"]), Svc=service("Task", distinct=False)),
        r"NeuronDevice in a task definition compatible with \['EC2'\] only",
    ),
    (
        r.DEVICE_INDEX_RANGE,
        with_resources(BASE, Task=manual_task(devices=[11, 12])),
        r"Task/model: /dev/neuron12 does not exist on inf2.48xlarge.*indices 0..11",
    ),
    (
        r.UNDECLARED_DEVICE,
        _sidecar_on_a_slice(),
        r"Slice0: its containers map /dev/neuron2, outside the devices \[0, 1\].*map only /dev/neuron0, /dev/neuron1",
    ),
    (
        r.DEPLOYMENT_WITHOUT_ROOM,
        with_resources(BASE, Task=manual_task(), Svc=service("Task", count=2)),
        r"Svc: 2 tasks with distinctInstance on Group, which launches at most 2 instances, and a minimum healthy "
        r"percent of 100.*pass min_healthy_percent=50 or less",
    ),
    (
        r.DEPLOYMENT_WITHOUT_ROOM,
        with_resources(BASE, Task=manual_task(), Svc=service("Task"), Scaling=_scaling("Svc", 1, 2)),
        r"Svc: 2 tasks \(auto scaling reaches that many\) with distinctInstance on Group.*"
        r"pass min_healthy_percent=50 or less",
    ),
    (
        r.DEPLOYMENT_STALLS,
        with_resources(
            BASE,
            Task=manual_task(),
            Svc=service("Task", DeploymentConfiguration={"MinimumHealthyPercent": 99, "MaximumPercent": 100}),
        ),
        r"Svc: with 1 task, a maximum percent of 100 starts none beyond them and a minimum healthy percent of 99 "
        r"stops none.*pass min_healthy_percent=0, or max_healthy_percent=200 or more",
    ),
    (
        r.DEPLOYMENT_STALLS,
        with_resources(
            BASE,
            Task=manual_task(),
            Svc=service("Task", count=3, DeploymentConfiguration={"MinimumHealthyPercent": 50, "MaximumPercent": 100}),
            Scaling=_scaling("Svc", 1, 3),
        ),
        r"Svc: with 1 task \(a count its auto scaling reaches\).*pass min_healthy_percent=0",
    ),
    (
        r.GRACE_SHORTER_THAN_COMPILE,
        with_resources(
            BASE,
            Task={
                **manual_task(),
                "Metadata": {"NeuronConstructs": {"startupSeconds": {"model": {"compile": 2400, "load": 300}}}},
            },
            Svc=service(
                "Task",
                HealthCheckGracePeriodSeconds=600,
                LoadBalancers=[{"ContainerName": "model", "ContainerPort": 8080, "TargetGroupArn": "arn"}],
            ),
        ),
        r"Svc: a copy compiles at start \(with no compile cache, no precompile\) for compile 40 min \+ load 5 min = "
        r"45 min stated, and the health check grace period is 10 min.*"
        r"pass health_check_grace_period=Duration.minutes\(45\) or longer",
    ),
    (r.SHARED_DEVICE, _sidecar_on_a_slice(), r"Slice1Service: it and Slice0Service both map /dev/neuron2"),
    (
        r.DUPLICATE_DEVICE,
        with_resources(
            BASE, Task=manual_task(containers=[container("a", devices=[0, 1]), container("b", devices=[1])])
        ),
        r"Task: /dev/neuron1 is mapped 2 times \(containers \['a', 'b'\]\)",
    ),
    (
        r.TASK_EXCEEDS_INSTANCE,
        with_resources(BASE, Task=manual_task("inf2.xlarge", [0], cpu=8192)),
        r"Task: cpu 8192 exceeds the 4096 CPU units of inf2.xlarge",
    ),
    (
        r.TASK_EXCEEDS_INSTANCE,
        with_resources(
            ecs_template(),
            Task=managed_task(cpu=4096, memory=900_000),
            Svc=service("Task", capacity="Mi", distinct=False),
        ),
        r"memory 900000 MiB exceeds the 786432 MiB of inf2.48xlarge \(the largest type its capacity admits\)",
    ),
    (
        r.TASK_EXCEEDS_INSTANCE,
        with_resources(
            ecs_template("inf2.xlarge"),
            Task=manual_task(None, memory=100_000, containers=[container()]),  # no devices, no placement
            Svc=service("Task", distinct=False),
        ),
        r"memory 100000 MiB exceeds the 16384 MiB of inf2.xlarge \(the largest type its capacity admits\)",
    ),
    (
        r.NEURON_CONTAINER_RESOURCES,
        with_resources(
            BASE,
            Task=manual_task(
                containers=[
                    container(devices=[0]),
                    container("gpu", ResourceRequirements=[{"Type": "GPU", "Value": "1"}]),
                ]
            ),
        ),
        r"Task/gpu: resourceRequirements ask for GPU in a task that holds Neuron devices",
    ),
    (
        r.NO_MATCHING_CAPACITY,
        with_resources(BASE, Task=manual_task("inf2.xlarge", [0]), Svc=service("Task")),
        r"Svc: its task maps devices of inf2.xlarge, but no capacity in its strategy launches inf2.xlarge",
    ),
    (
        r.SLICES_EXCEED_CAPACITY,
        with_resources(BASE, Task=manual_task(), Svc=service("Task", count=3)),
        r"Svc: 3 tasks with distinctInstance, but Group launches at most 2 instances",
    ),
    (
        r.SLICE_HOST_PORT,
        with_resources(
            BASE,
            **{
                **slices(),
                "Slice1": manual_task(
                    devices=[2, 3],
                    containers=[container(devices=[2, 3], PortMappings=[{"ContainerPort": 80, "HostPort": 80}])],
                ),
                "Slice2": manual_task(
                    devices=[4, 5],
                    containers=[container(devices=[4, 5], PortMappings=[{"ContainerPort": 80, "HostPort": 80}])],
                ),
            },
        ),
        r"Slice1: host port 80 of a slice that runs on every instance beside the other 5 slices",
    ),
    (
        r.SLICE_RUNTIME_VARIABLE,
        with_resources(
            BASE,
            Task=manual_task(
                devices=[2, 3],
                containers=[
                    container(devices=[2, 3], Environment=[{"Name": "NEURON_RT_VISIBLE_CORES", "Value": "0-3"}])
                ],
            ),
        ),
        r"Task/model: NEURON_RT_VISIBLE_CORES=0-3 but the container maps /dev/neuron2, /dev/neuron3, "
        r"which hold cores 4-7",
    ),
    (
        r.SLICED_CAPACITY_SHARED,
        with_resources(
            BASE, **slices(), Other=manual_task("inf2.48xlarge", containers=[container()]), OtherSvc=service("Other")
        ),
        r"OtherSvc: it runs on Asg, whose 6 slice services \(Slice0Service, .*\) hold every chip"
        r".*give the sliced service its own",
    ),
    (
        r.UNPINNED_MANUAL_TASK,
        with_resources(BASE, Task=manual_task(None), Svc=service("Task")),
        r"Task: it maps /dev/neuron devices but no memberOf constraint pins it to one instance type",
    ),
    (
        r.COPIES_SHARE_INSTANCE,
        with_resources(BASE, Task=manual_task(), Svc=service("Task", distinct=False, count=2)),
        r"Svc: its tasks map /dev/neuron0, /dev/neuron1 and nothing keeps two of them off one instance",
    ),
    (
        r.SHARED_DEVICE,
        with_resources(
            BASE,
            First=_core_task(0, "0"),
            Second=_core_task(0, "0-1"),
            A=service("First"),
            B=service("Second"),
        ),
        r"B: it and A both hold NeuronCore 0 of /dev/neuron0 and can land on one instance",
    ),
    (
        r.LOGICAL_CORES,
        with_resources(
            BASE,
            Task=manual_task(
                containers=[container(devices=[0], Environment=[{"Name": "NEURON_LOGICAL_NC_CONFIG", "Value": "2"}])]
            ),
        ),
        r"Task/model: NEURON_LOGICAL_NC_CONFIG=2: only Trainium2 takes a logical NeuronCore setting, and "
        r"inf2.48xlarge is not one",
    ),
    (
        r.SHARED_DEVICE,
        with_resources(BASE, Task=manual_task(), A=service("Task"), B=service("Task")),
        r"B: it and A both map /dev/neuron0, /dev/neuron1 \(the same task definition\)",
    ),
    (
        r.SHARED_DEVICE,
        with_resources(
            BASE,
            Manual=manual_task(
                "inf2.48xlarge", [0], RequiresCompatibilities=["MANAGED_INSTANCES"], NetworkMode="awsvpc"
            ),
            Managed=managed_task(),
            A=service("Manual", capacity="Mi"),
            B=service("Managed", capacity="Mi", distinct=False),
        ),
        r"one maps /dev/neuron0 by hand and the other asks for NeuronDevice = ALL",
    ),
    (
        r.CONTAINERS_EXCEED_TASK,
        with_resources(BASE, Task=manual_task(memory=1024, containers=[container(devices=[0], Memory=2048)])),
        r"Task: containers reserve 2048 MiB of memory, the task has 1024 MiB",
    ),
    (
        r.NO_TASK_MEMORY,
        _mi_task(Memory=None, Cpu=None),
        r"Task: no task-level memory, and containers \['model'\] set neither memory nor memoryReservation",
    ),
    (
        r.NEURON_CONTAINER_STRIPPED,
        with_resources(BASE, Task={**managed_task(ContainerDefinitions=[container()]), "Metadata": _intent("managed")}),
        r"Task/model: the Neuron container of a managed task definition no longer asks for NeuronDevice = ALL",
    ),
    (
        r.NEURON_TYPE_WITHOUT_NEURON_AMI,
        _ami(parameter=STANDARD_AMI),
        r"LaunchTemplate: inf2.48xlarge boots the standard ECS AMI",
    ),
    (
        r.DEVICE_TOPOLOGY,
        with_resources(BASE, Task=manual_task(devices=[0, 2, 4])),
        r"Task: devices \[0, 2, 4\] on inf2.48xlarge \(ring topology\)",
    ),
    (
        r.SMALL_ROOT_VOLUME,
        _launch_data(BlockDeviceMappings=[{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 30}}]),
        r"LaunchTemplate: root volume of 30 GiB",
    ),
    (
        r.MEMORY_NEAR_INSTANCE_TOTAL,
        with_resources(BASE, Task=manual_task("inf2.xlarge", [0], memory=16000, cpu=4096)),
        r"Task: memory 16000 MiB is within 10 %",
    ),
    (
        r.NO_NEURON_CONTAINER,
        with_resources(
            BASE,
            Task={**manual_task(containers=[container()]), "Metadata": {"NeuronConstructs": {"neuronContainers": []}}},
        ),
        r"Task: no container has Neuron devices",
    ),
    (r.PINNED_AMI, _ami(literal="ami-0123456789abcdef0"), r"LaunchTemplate: inf2.48xlarge boots ami-0123456789abcdef0"),
    (
        r.WARM_UP_ROOM,
        _warm_up_fetching(image_gib=10, artifacts_gib=45),
        r"LaunchTemplate: the warm-up fills the AMI \(30 GiB\) \+ public.ecr.aws/docker/library/busybox:1.37 "
        r"\(10 GiB, 30 GiB unpacked\) \+ s3://models/llama \(45 GiB\) = 105 GiB on a root volume of 100 GiB.*"
        r"Fix: pass root_volume_gib=105 or more",
    ),
    (
        r.HOST_NETWORK,
        with_resources(BASE, Task=manual_task(NetworkMode="host")),
        r"Task: the host network mode gives the containers the instance's network",
    ),
    (r.PUBLIC_SUBNETS, _public_subnet(), r"Group: it launches into public subnets \['PrivateSubnet'\]"),
    (
        r.SECRET_IN_ENVIRONMENT,
        with_resources(
            BASE,
            Task=manual_task(containers=[container(devices=[0], Environment=[{"Name": "HF_TOKEN", "Value": "hf_x"}])]),
        ),
        r"Task/model: environment variable HF_TOKEN holds its value in plain text.*pass HF_TOKEN through secrets=",
    ),
    (
        r.METADATA_REACHABLE,
        _launch_data(MetadataOptions={"HttpTokens": "required"}),
        r"LaunchTemplate: HttpTokens required, HttpPutResponseHopLimit unset",
    ),
    (
        r.PRIVILEGED_CONTAINER,
        with_resources(BASE, Task=_plain_task(container("agent", Privileged=True))),
        r"Task: container agent: it is privileged, so it can use the instance role \(ecs:Poll: every task's "
        r"credentials on the instance\).*acknowledge this warning id with the reason",
    ),
    (
        r.UNREACHABLE_TARGETS,
        _load_balanced(),
        r"Svc: it is registered with Targets of Balancer, but the instances of Asg \(security groups InstanceGroup\) "
        r"admit no TCP 32768-60999 from BalancerGroup.*Fix: allow TCP 32768-60999 from BalancerGroup into "
        r"InstanceGroup",
    ),
]


def test_every_privileged_container_and_host_network_task_is_reported_neuron_or_not() -> None:
    template = with_resources(
        BASE,
        Plain=_plain_task(container("sidecar"), container("agent", Privileged="true")),
        Host=_plain_task(container("proxy"), container("exporter"), NetworkMode="host"),
        Both=_plain_task(container("root", Privileged=True), NetworkMode="HOST"),
        Daemon={
            "Type": "AWS::ECS::DaemonTaskDefinition",
            "Properties": {"ContainerDefinitions": [container("daemon", Privileged=True)]},
        },
        Unprivileged=_plain_task(container("web", Privileged=False)),
    )
    found = {
        (f.logical_id, f.message.split(": ", 2)[1]): f.location
        for f in check_template(template)
        if f.rule is r.PRIVILEGED_CONTAINER
    }
    assert set(found) == {
        ("Plain", "container agent"),
        ("Host", "container proxy"),
        ("Host", "container exporter"),
        ("Both", "container root"),
        ("Daemon", "container daemon"),
    }
    assert found["Plain", "container agent"] == (
        "Resources",
        "Plain",
        "Properties",
        "ContainerDefinitions",
        1,
        "Privileged",
    )
    assert found["Host", "container proxy"] == ("Resources", "Host", "Properties", "NetworkMode")
    both = next(
        f.message for f in check_template(template) if f.logical_id == "Both" and f.rule is r.PRIVILEGED_CONTAINER
    )
    assert "it is privileged and its task uses the host network" in both
    assert r.PRIVILEGED_CONTAINER.severity == "warning"


_ECS_CONTAINER_0 = ("TaskProperties", 0, "Containers", 0)


def _job(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::Batch::JobDefinition", "Properties": {"Type": "container", **properties}}


def test_every_privileged_batch_container_and_single_node_ec2_job_is_reported() -> None:
    """GIVEN AWS Batch job definitions: single-node on EC2 (the host network, AWS Batch guide "Networking modes for
    AWS Batch jobs"), multi-node parallel (awsvpc), Fargate (awsvpc), privileged or not, in ContainerProperties,
    NodeRangeProperties' Container and EcsProperties WHEN linted THEN NEURON115 names each privileged container
    and each container of a host-network job, and nothing else."""
    image = {"Image": "public.ecr.aws/docker/library/busybox:1.37"}
    template = with_resources(
        BASE,
        Single=_job(ContainerProperties={**image, "Privileged": True}),
        SingleUnprivileged=_job(ContainerProperties=image),
        SingleEcs=_job(EcsProperties={"TaskProperties": [{"Containers": [{**image, "Name": "trainer"}]}]}),
        Fargate=_job(PlatformCapabilities=["FARGATE"], ContainerProperties=image),
        Parallel=_job(
            Type="multinode",
            NodeProperties={
                "NumNodes": 2,
                "MainNode": 0,
                "NodeRangeProperties": [
                    {"TargetNodes": "0:0", "Container": image},
                    {"TargetNodes": "1:", "Container": {**image, "Privileged": "true"}},
                    {
                        "TargetNodes": "2:",
                        "EcsProperties": {
                            "TaskProperties": [{"Containers": [{**image, "Name": "x", "Privileged": True}]}]
                        },
                    },
                ],
            },
        ),
    )
    found = {f.logical_id: f for f in check_template(template) if f.rule is r.PRIVILEGED_CONTAINER}
    got = sorted((f.logical_id, f.location[3:]) for f in check_template(template) if f.rule is r.PRIVILEGED_CONTAINER)
    assert got == [
        ("Parallel", ("NodeProperties", "NodeRangeProperties", 1, "Container", "Privileged")),
        (
            "Parallel",
            ("NodeProperties", "NodeRangeProperties", 2, "EcsProperties", *_ECS_CONTAINER_0, "Privileged"),
        ),
        ("Single", ("ContainerProperties", "Privileged")),
        ("SingleEcs", ("EcsProperties", "TaskProperties", 0, "Containers", 0)),
        ("SingleUnprivileged", ("ContainerProperties",)),
    ]
    assert "Single: the job's container: it is privileged and its job runs in the host" in found["Single"].message
    assert "SingleEcs: container trainer: its job runs in the host network" in found["SingleEcs"].message
    parallel = sorted(f.message.split(": ")[1] for f in check_template(template) if f.logical_id == "Parallel")
    assert parallel == ["container x of node range 2 (nodes 2:)", "the container of node range 1 (nodes 1:)"]


_ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=2), st.just({})
)


@settings(max_examples=examples(200, loop=50), deadline=None)
@given(
    kind=st.sampled_from(["AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition", "AWS::ECS::Service"]),
    mode=st.one_of(_ANY_VALUE, st.sampled_from(["host", "HOST", "Host", "bridge", "awsvpc"])),
    privileged=st.lists(st.one_of(_ANY_VALUE, st.sampled_from([True, "true", "True", False, "false"])), max_size=4),
)
def test_a_container_is_reported_exactly_when_privileged_or_in_a_host_network_task(
    kind: str, mode: Any, privileged: list[Any]
) -> None:
    """Any value where CloudFormation reads Privileged and NetworkMode: a finding per container exactly when the
    container is privileged (true, "true") or its task definition's network mode is host, never a crash."""
    containers = [{"Name": f"c{i}", "Image": "busybox", "Privileged": p} for i, p in enumerate(privileged)]
    template = with_resources(
        BASE, Task={"Type": kind, "Properties": {"NetworkMode": mode, "ContainerDefinitions": containers}}
    )
    found = {f.message.split(": ", 2)[1] for f in check_template(template) if f.rule is r.PRIVILEGED_CONTAINER}
    host = isinstance(mode, str) and mode.lower() == "host"
    expected = {
        f"container c{i}"
        for i, p in enumerate(privileged)
        if kind != "AWS::ECS::Service" and (host or p is True or p in ("true", "True"))
    }
    assert found == expected


def test_a_compliant_template_has_no_findings() -> None:
    template = with_resources(BASE, **slices(), Managed=managed_task(), ManagedSvc=service("Managed", capacity="Mi"))
    assert check_template(template) == []


@pytest.mark.parametrize(("rule", "template", "text"), CASES, ids=[f"{c[0].id}-{i}" for i, c in enumerate(CASES)])
def test_broken_template_names_the_rule(rule: r.Rule, template: dict[str, Any], text: str) -> None:
    findings = check_template(template)
    mine = [f for f in findings if f.rule is rule]
    assert mine, [f.message for f in findings]
    message = next((f.message for f in mine if re.search(text, f.message)), mine[0].message)
    assert re.search(text, message), message
    assert f"[{rule.id}: {rule.aws_rule}] Fix: " in message
    assert "{" not in message.split("Fix: ")[1]


def test_a_warm_up_is_judged_on_the_sizes_stated_and_fits_a_volume_that_holds_them() -> None:
    """105 GiB known: a 105 GiB volume holds it; without a warm-up hook nothing is fetched before the instance stops."""
    assert not [f for f in check_template(_warm_up_fetching(10, 45, root_gib=105)) if f.rule is r.WARM_UP_ROOM]
    unhooked = _warm_up_fetching(10, 45)
    del unhooked["Resources"]["WarmUp"]
    assert not [f for f in check_template(unhooked) if f.rule is r.WARM_UP_ROOM]


def test_every_template_rule_has_a_check_and_a_case() -> None:
    on_template = {rule.id for rule in r.RULES if rule.on_template}
    assert set(TEMPLATE_CHECKS) == on_template
    assert {rule.id for rule, _, _ in CASES} == on_template


def test_each_engine_s_own_cache_variable_on_its_image_is_no_finding() -> None:
    nxdi = _cache_variable(_VLLM_NXDI, "NEURON_COMPILE_CACHE_URL", "s3://cache/p/", "inf2.48xlarge")
    neuron = _cache_variable(_VLLM_NEURON, "NEURON_LIBTORCH_REMOTE_CACHE", "/mnt/neuron-compile-cache")
    for template in (nxdi, neuron):
        assert not [f for f in check_template(template) if f.rule is r.CACHE_ENGINE_MISMATCH]


def test_errors_come_before_warnings() -> None:
    template = with_resources(_launch_data(MetadataOptions={}), Task=manual_task("inf2.2xlarge"))
    severities = [f.severity for f in check_template(template)]
    assert severities == sorted(severities, key=lambda s: s != "error") and "warning" in severities


def test_cfn_lint_ignore_checks_metadata_silences_a_rule_for_one_resource() -> None:
    template = _public_subnet()
    assert [f.logical_id for f in check_template(template)] == ["Group", "Mi"]
    template["Resources"]["Group"]["Metadata"] = {"cfn-lint": {"config": {"ignore_checks": ["W9208"]}}}
    assert [f.logical_id for f in check_template(template)] == ["Mi"]


def test_unknown_values_are_skipped_not_guessed() -> None:
    task = manual_task(cpu=1024)
    task["Properties"]["Cpu"] = {"Ref": "TaskCpu"}
    task["Properties"]["ContainerDefinitions"][0]["LinuxParameters"]["Devices"][0]["HostPath"] = {"Ref": "Device"}
    assert check_template(with_resources(BASE, Task=task, Svc=service("Task"))) == []


def test_yaml_short_forms_are_read_with_their_lines() -> None:
    loaded = parse_template(
        "Resources:\n"
        "  Task:\n"
        "    Type: AWS::ECS::TaskDefinition\n"
        "    Properties:\n"
        "      PlacementConstraints:\n"
        "        - {Type: memberOf, Expression: 'attribute:ecs.instance-type == inf2.xlarge'}\n"
        "      Cpu: !Ref TaskCpu\n"
        "      ContainerDefinitions:\n"
        "        - Name: model\n"
        "          Image: !Sub '${AWS::AccountId}.dkr.ecr.us-east-1.amazonaws.com/x'\n"
        "          LinuxParameters:\n"
        "            Devices:\n"
        "              - HostPath: /dev/neuron3\n"
    )
    assert loaded.template["Resources"]["Task"]["Properties"]["Cpu"] == {"Ref": "TaskCpu"}
    (finding,) = [f for f in check_template(loaded) if f.rule is r.DEVICE_INDEX_RANGE]
    assert loaded.location(finding.location) == (13, 17)  # the /dev/neuron3 entry


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("DB_PASSWORD", True),
        ("API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("OPENAI_APIKEY", True),
        ("HF_TOKEN_PATH", False),
        ("SECRET_ARN", False),
        ("MODEL_ID", False),
        ("NEURON_RT_NUM_CORES", False),
        ("KEYBOARD", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("MAX_NUM_BATCHED_TOKENS", False),
        ("MAX_TOKENS", False),
        ("SSH_PUBLIC_KEY", False),
        ("PUBLIC_KEY", False),
        ("GITHUB_PAT_TOKEN", True),
        ("DB_PASS", True),
        ("PGPASSWORD", True),
        ("hfToken", True),
        ("NEURON_TOKEN_GEN_BUCKETS", False),
        ("MODEL_S3_KEY", False),
        ("CACHE_KEY", False),
        ("GOOGLE_APPLICATION_CREDENTIALS", False),
        ("MYSECRET", False),  # SECRET and PASSWORD are whole words, not substrings
        ("CLIENTSECRET", False),
        ("DB_SECRETS", False),
        ("PASSWORDS", False),
        ("clientSecret", True),
        ("DB_PASSWORD_FILE", False),  # a name that points at a secret
        ("SECRET_NAME", False),
        ("API_KEY_ID", False),
        ("SECRET_URL", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert secret_like(name) is secret


def test_a_subnet_routed_to_an_internet_gateway_is_public() -> None:
    template = with_resources(
        BASE,
        Gateway={"Type": "AWS::EC2::InternetGateway", "Properties": {}},
        Routes={"Type": "AWS::EC2::RouteTable", "Properties": {}},
        Default={
            "Type": "AWS::EC2::Route",
            "Properties": {
                "RouteTableId": {"Ref": "Routes"},
                "DestinationCidrBlock": "0.0.0.0/0",
                "GatewayId": {"Ref": "Gateway"},
            },
        },
        Association={
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": {"SubnetId": {"Ref": "PrivateSubnet"}, "RouteTableId": {"Ref": "Routes"}},
        },
    )
    assert [f.logical_id for f in check_template(template) if f.rule is r.PUBLIC_SUBNETS] == ["Group", "Mi"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def test_malformed_values_anywhere_are_skipped_never_a_crash(templates: dict[str, dict[str, Any]]) -> None:
    """Every value of every example template, replaced in turn by values of the wrong kind."""
    import copy
    import random

    junk: list[Any] = [5, "x", None, True, [], {}, [5], {"Ref": 5}, {"Fn::Join": ["/", 5]}, {"Fn::GetAtt": 5}, -1]
    rng = random.Random(20261130)
    checked = 0
    for name, template in templates.items():
        paths = [p for p in _paths(template) if p[0] in ("Resources", "Parameters", "Outputs")]
        broken = copy.deepcopy(template)
        for path in [("Resources",), *rng.sample(paths, min(len(paths), 100))]:
            parent = broken
            for key in path[:-1]:
                parent = parent[key]
            kept = parent[path[-1]]
            parent[path[-1]] = rng.choice(junk)
            check_template(broken, name=name)
            parent[path[-1]] = kept  # one broken value at a time
            checked += 1
    assert checked >= 500


def test_tasks_on_one_chip_with_disjoint_cores_do_not_conflict() -> None:
    """Two services on one inf2 chip, each naming its own NeuronCore: no NEURON023 (a core belongs to one process;
    the device is shared), and a third service without cores on that chip does conflict with both."""
    template = with_resources(
        BASE, First=_core_task(0, "0"), Second=_core_task(0, "1"), A=service("First"), B=service("Second")
    )
    assert not [f for f in check_template(template) if f.rule is r.SHARED_DEVICE]
    template = with_resources(template, Whole=manual_task(devices=[0]), C=service("Whole"))
    shared = [f.message for f in check_template(template) if f.rule is r.SHARED_DEVICE]
    assert len(shared) == 2 and all("C: it and" in m for m in shared), shared


def test_core_numbers_count_logical_cores_at_the_task_s_lnc() -> None:
    """trn2 at LNC=2 (the default) numbers 4 cores a chip, at LNC=1 eight: 4-7 is chip 1 or chip 0."""
    trn2 = ecs_template("trn2.48xlarge")
    at_two = with_resources(trn2, Task=_core_task(1, "4-7", "trn2.48xlarge"))
    assert not [f for f in check_template(at_two) if f.rule is r.SLICE_RUNTIME_VARIABLE]
    at_one = with_resources(trn2, Task=_core_task(1, "4-7", "trn2.48xlarge", lnc="1"))
    (finding,) = [f for f in check_template(at_one) if f.rule is r.SLICE_RUNTIME_VARIABLE]
    assert "which hold cores 8-15 at LNC=1" in finding.message


@pytest.mark.parametrize(
    ("template", "text"),
    [
        (_load_balanced(), r"instances of Asg .* admit no TCP 32768-60999 from BalancerGroup"),
        (
            _load_balanced({"IpProtocol": "tcp", "FromPort": 32768, "ToPort": 40000}),
            r"admit no TCP 32768-60999",
        ),
        (_load_balanced({"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080}), r"admit no TCP 32768-60999"),
        (
            _load_balanced(awsvpc=True),
            r"Svc: it is registered with Targets of Balancer, but its tasks' security groups TaskGroup admit no TCP "
            r"8080 from BalancerGroup",
        ),
        (
            _load_balanced(DYNAMIC, BalancerGroup={"SecurityGroupEgress": [{"CidrIp": "255.255.255.255/32"}]}),
            r"BalancerGroup let nothing out to the instances of Asg \(security groups InstanceGroup\) on TCP "
            r"32768-60999",
        ),
    ],
    ids=["nothing-admitted", "part-of-the-dynamic-range", "the-container-port-not-the-host-port", "awsvpc", "egress"],
)
def test_load_balanced_tasks_the_load_balancer_cannot_reach_are_found(template: dict[str, Any], text: str) -> None:
    (finding,) = [f for f in check_template(template) if f.rule is r.UNREACHABLE_TARGETS]
    assert finding.logical_id == "Svc" and finding.location == ("Resources", "Svc", "Properties", "LoadBalancers", 0)
    assert re.search(text, finding.message), finding.message


@pytest.mark.parametrize(
    "template",
    [
        _load_balanced(DYNAMIC),
        _load_balanced({"IpProtocol": "tcp", "FromPort": 32768, "ToPort": 50000}, {"IpProtocol": "-1"}),
        _load_balanced({"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080}, awsvpc=True),
        _load_balanced({"IpProtocol": "tcp", "FromPort": 0, "ToPort": 65535, "SourceSecurityGroupId": None}),
        # what the template does not show is not judged: the instances' group made elsewhere, exported, or a load
        # balancer without security groups
        _load_balanced(LaunchTemplate={"LaunchTemplateData": {"SecurityGroupIds": ["sg-0123456789abcdef0"]}}),
        _load_balanced(Balancer={"SecurityGroups": []}),
        {
            **_load_balanced(),
            "Outputs": {"Group": {"Value": {"Fn::GetAtt": ["InstanceGroup", "GroupId"]}, "Export": {"Name": "g"}}},
        },
    ],
    ids=["dynamic-range", "two-rules", "awsvpc", "unknown-source", "imported-group", "no-balancer-groups", "exported"],
)
def test_load_balanced_tasks_the_load_balancer_reaches_or_the_template_does_not_show_are_not_found(
    template: dict[str, Any],
) -> None:
    assert [f.message for f in check_template(template) if f.rule is r.UNREACHABLE_TARGETS] == []
