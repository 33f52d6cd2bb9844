"""One case per rule checked at the call: the input that breaks it and the error text it gets.

Errors raise ``NeuronConfigurationError`` at the call that broke them. The rules checked on the
template are in ``test_template_checks.py`` (hand-written templates) and ``test_every_path.py``
(the library's own templates, broken through each path).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc, synth_warnings

from neuron_constructs import (
    RULES,
    AmiRollout,
    CapacityReservation,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronMonitoring,
    NeuronService,
    Rollout,
    SlicedNeuronService,
    SmokeTest,
    VllmLora,
    VllmServer,
    WarmPool,
)
from neuron_constructs.checks import inputs
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.container_images import PYTORCH_INFERENCE, VLLM, VLLM_TRN2

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


def new_stack() -> Stack:
    return Stack(App(analytics_reporting=False), "Test")


def managed(stack: Stack, id: str = "Managed") -> ManagedNeuronTaskDefinition:
    return ManagedNeuronTaskDefinition(stack, id, cpu=4096, memory_mib=8192)


def synth(stack: Stack) -> None:
    App.of(stack).synth()  # type: ignore[union-attr]


def _unknown_type(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "Task", instance_type="inf2.2xlarge")


def _inf1_by_pattern(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity("MI", instance_types=["inf1.*"])


def _inf1_by_accelerator(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity("MI", accelerators=["inferentia"])


def _inf1_manual_on_managed_instances(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf1.xlarge", compatibility=ecs.Compatibility.MANAGED_INSTANCES)


def _non_neuron_managed_instances(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity("MI", instance_types=["g5.*"])


def _capacity_bounds(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", min_capacity=3, max_capacity=2
    )


def _second_neuron_container(s: Stack) -> None:
    task = managed(s)
    task.add_neuron_container("first", image=IMAGE)
    task.add_neuron_container("second", image=IMAGE)


def _docker_labels_in_managed_task(s: Stack) -> None:
    managed(s).add_neuron_container("model", image=IMAGE, docker_labels={"team": "ml"})


def _bridge_in_managed_task(s: Stack) -> None:
    ManagedNeuronTaskDefinition(s, "T", cpu=1024, memory_mib=2048, network_mode=ecs.NetworkMode.BRIDGE)


def _ipc_mode_in_managed_task(s: Stack) -> None:
    ManagedNeuronTaskDefinition(s, "T", cpu=1024, memory_mib=2048, ipc_mode=ecs.IpcMode.HOST)


def _managed_task_on_auto_scaling_capacity(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    provider = cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    task = managed(s)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, capacity=provider)


def _device_out_of_range(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.24xlarge", devices=[0, 6])


def _duplicate_device(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.24xlarge", devices=[1, 1])


def _device_in_two_containers(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.24xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("a", image=IMAGE, devices=[0, 1])
    task.add_neuron_container("b", image=IMAGE, devices=[1])


def _no_devices(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", devices=[])


def _cpu_beyond_instance(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", cpu=8192)


def _memory_beyond_instance(s: Stack) -> None:
    ManualNeuronTaskDefinition(s, "T", instance_type="inf1.xlarge", memory_mib=16384)


def _managed_task_beyond_largest_instance(s: Stack) -> None:
    ManagedNeuronTaskDefinition(s, "T", cpu=4096, memory_mib=4 * 1024 * 1024)


def _gpu_on_neuron_container(s: Stack) -> None:
    managed(s).add_neuron_container("model", image=IMAGE, gpu_count=1)


def _no_matching_capacity(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.8xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task)


def _ambiguous_capacity(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_managed_instances_capacity("Inf2", instance_types=["inf2.*"])
    cluster.add_managed_instances_capacity("Trn", instance_types=["trn*"])
    task = managed(s)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task)


def _sliced(s: Stack, instance_type: str = "inf2.48xlarge", max_capacity: int = 2, **options: Any) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Neuron", instance_type=instance_type, max_capacity=max_capacity)
    options.setdefault("devices_per_task", 2)
    SlicedNeuronService(s, "Sliced", cluster=cluster, instance_type=instance_type, image=IMAGE, **options)


def _slice_not_dividing_chips(s: Stack) -> None:
    _sliced(s, devices_per_task=5)


def _slice_off_the_torus(s: Stack) -> None:
    _sliced(s, instance_type="trn1.32xlarge", devices_per_task=2)


def _more_instances_than_capacity(s: Stack) -> None:
    _sliced(s, instances=3)


def _auto_scaling_beyond_capacity(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Neuron", instance_type="inf2.24xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        s, "Sliced", cluster=cluster, instance_type="inf2.24xlarge", devices_per_task=3, image=IMAGE
    )
    sliced.auto_scale(min_count=1, max_count=4)


def _fixed_host_port_in_bridge(s: Stack) -> None:
    _sliced(s, port_mappings=[ecs.PortMapping(container_port=8080, host_port=8080)])


def _port_in_host_mode(s: Stack) -> None:
    _sliced(s, network_mode=ecs.NetworkMode.HOST, port_mappings=[ecs.PortMapping(container_port=8080)])


def _visible_cores_for_every_slice(s: Stack) -> None:
    _sliced(s, environment={"NEURON_RT_VISIBLE_CORES": "0-3"})


def _more_cores_than_a_slice(s: Stack) -> None:
    _sliced(s, environment={"NEURON_RT_NUM_CORES": "8"})


def _service_beside_slices(s: Stack) -> None:
    _sliced(s)
    cluster = s.node.find_child("C")
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Other", cluster=cluster, task_definition=task)  # type: ignore[arg-type]


def _slices_beside_a_service(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Neuron", instance_type="trn1.32xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="trn1.32xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Other", cluster=cluster, task_definition=task)
    SlicedNeuronService(s, "Sliced", cluster=cluster, instance_type="trn1.32xlarge", devices_per_task=4, image=IMAGE)


def _misspelled_type(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity("Inf2", instance_type="INF2.xlarge")


def _upper_case_pattern(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity("MI", instance_types=["INF2.*"])


def _string_for_a_pattern_list(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity("MI", instance_types="inf2.*")  # type: ignore[arg-type]


def _sidecar_with_a_gpu(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    task.add_container("sidecar", image=IMAGE, gpu_count=1)


def _manual_service(s: Stack, *, desired_count: int = 1, max_capacity: int = 2) -> tuple[NeuronCluster, Any]:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=max_capacity)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, desired_count=desired_count)
    return cluster, task


def _more_copies_than_instances(s: Stack) -> None:
    _manual_service(s, desired_count=3)


def _two_services_of_one_manual_task(s: Stack) -> None:
    cluster, task = _manual_service(s)
    NeuronService(s, "Again", cluster=cluster, task_definition=task)


def _overlapping_devices_on_one_capacity(s: Stack) -> None:
    cluster, _ = _manual_service(s)
    other = ManualNeuronTaskDefinition(s, "U", instance_type="inf2.48xlarge", devices=[1, 2], memory_mib=8192)
    other.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Other", cluster=cluster, task_definition=other)


def _container_memory_above_task(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", memory_mib=4096)
    task.add_neuron_container("model", image=IMAGE, memory_limit_mib=8192)


def _managed_task_larger_than_its_capacity(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_managed_instances_capacity("Small", instance_types=["inf2.xlarge"])
    task = ManagedNeuronTaskDefinition(s, "T", cpu=8192, memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task)


def _neuron_type_as_non_neuron_capacity(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_non_neuron_capacity("Cpu", instance_type="inf2.xlarge")


def _instance_type_ec2_does_not_offer(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_non_neuron_capacity("Cpu", instance_type="m7i.huge")


def _bool_for_cpu(s: Stack) -> None:
    ManagedNeuronTaskDefinition(s, "T", cpu=True, memory_mib=8192)  # type: ignore[arg-type]


def _cpu_below_ecs_minimum(s: Stack) -> None:
    ManagedNeuronTaskDefinition(s, "T", cpu=64, memory_mib=8192)


def _manual_task_without_any_memory(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge")
    task.add_neuron_container("model", image=IMAGE)


def _deployment_with_no_spare_instance(s: Stack) -> None:
    _manual_service(s, desired_count=2, max_capacity=2)
    cluster = s.node.find_child("C")
    task = s.node.find_child("T")
    other = NeuronCluster(s, "D", vpc=imported_vpc(s))
    other.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    NeuronService(s, "Full", cluster=other, task_definition=task, desired_count=2, min_healthy_percent=100)
    assert cluster


def _scaling_a_passed_minimum_onto_every_instance(s: Stack) -> None:
    service = _scaled_service(s, min_healthy_percent=100)
    service.scale_on_requests(requests_per_target=60, max_count=2)


def _ami_release_without_its_date(s: Stack) -> None:
    NeuronAmi.release("2023.0.2026111")


def _ami_rollout_stopping_instances_the_service_needs(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity(
        "Inf2",
        instance_type="inf2.48xlarge",
        max_capacity=3,
        machine_image=NeuronAmi.release("2023.0.20261113"),
        ami_rollout=AmiRollout(instances_at_a_time=2, launch_before_terminate=False),
    )
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, desired_count=2, min_healthy_percent=100)
    synth(s)


def _warm_up_larger_than_the_root_volume(s: Stack) -> None:
    from aws_cdk import aws_s3 as s3

    from neuron_constructs import ModelArtifacts, WarmPool

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", warm_pool=WarmPool())
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    models = ModelArtifacts(s3.Bucket.from_bucket_name(s, "Models", "team-models"), "llama", size_gib=60)
    task.add_neuron_container("model", image=IMAGE, image_size_gib=4, model_artifacts=models)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, capacity=capacity)
    synth(s)


def _model_name_with_a_space(s: Stack) -> None:
    _scaled_service(s, model_name="my model")


def _engine_metrics_service(
    s: Stack, image: str, ports: tuple[int, ...], instance_type: str = "trn2.48xlarge", **service: Any
) -> None:
    """A service of ``image`` on one device of ``instance_type`` mapping ``ports``, with ``service`` options."""
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Neuron", instance_type=instance_type, max_capacity=1)
    task = ManualNeuronTaskDefinition(s, "T", instance_type=instance_type, devices=[0], memory_mib=8192)
    task.add_neuron_container(
        "m",
        image=ecs.ContainerImage.from_registry(image),
        port_mappings=[ecs.PortMapping(container_port=p) for p in ports],
    )
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, **service)


def _engine_metrics_for_busybox(s: Stack) -> None:
    _engine_metrics_service(s, "public.ecr.aws/docker/library/busybox:1.37", (8000,), engine_metrics=True)


def _engine_metrics_without_a_port(s: Stack) -> None:
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    _engine_metrics_service(s, VLLM_TRN2.reference, (), engine_metrics=True)


def _compile_alarm_on_vllm_on_nxd_inference(s: Stack) -> None:
    from neuron_constructs import EngineMetrics
    from neuron_constructs.knowledge.container_images import VLLM

    _engine_metrics_service(s, VLLM.reference, (8000,), "inf2.xlarge", engine_metrics=EngineMetrics(expect_warm=True))


def _scaled_service(s: Stack, **service: Any) -> NeuronService:
    """One inf2.48xlarge task of a manual task definition, on a capacity of two instances, behind a load balancer."""
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    from neuron_constructs import NeuronLoadBalancer

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    model = NeuronService(s, "Svc", cluster=cluster, task_definition=task, **service)
    listener = NeuronLoadBalancer(s, "Lb", cluster=cluster).listener
    model.attach_to_listener(listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=1)
    return model


def _scale_to_zero_without_a_zero_minimum(s: Stack) -> None:
    service = _scaled_service(s)
    service.scale_on_requests(requests_per_target=60, min_count=1, max_count=2)
    service.scale_to_zero()


def test_scaling_onto_every_instance_lowers_the_minimum_the_library_chose() -> None:
    """The library gave one task 100 %; scaling to both instances of the capacity needs room to stop one."""
    s = new_stack()
    service = _scaled_service(s)
    assert service.min_healthy_percent == 100
    service.scale_on_requests(requests_per_target=60, max_count=2)
    assert service.min_healthy_percent == 50
    (rendered,) = [
        r["Properties"]["DeploymentConfiguration"]["MinimumHealthyPercent"]
        for r in App.of(s).synth().get_stack_by_name("Test").template["Resources"].values()  # type: ignore[union-attr]
        if r["Type"] == "AWS::ECS::Service"
    ]
    assert rendered == 50


def _one_task_with_no_room_either_side(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", cpu=1024, memory_mib=2048)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Stuck", cluster=cluster, task_definition=task, min_healthy_percent=50, max_healthy_percent=100)


def _public_only_vpc(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc(s, "V", subnet_configuration=[ec2.SubnetConfiguration(name="Pub", subnet_type=ec2.SubnetType.PUBLIC)])
    NeuronCluster(s, "C", vpc=vpc).add_ec2_capacity("Inf2", instance_type="inf2.xlarge")


def _security_groups_in_bridge_mode(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    cluster, task = _manual_service(s)
    group = ec2.SecurityGroup(s, "G", vpc=cluster.vpc)
    other = ManualNeuronTaskDefinition(s, "U", instance_type="inf2.48xlarge", devices=[4], memory_mib=1024)
    other.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Bridge", cluster=cluster, task_definition=other, security_groups=[group])
    assert task


def _auto_scale_twice(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Neuron", instance_type="inf2.24xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        s, "Sliced", cluster=cluster, instance_type="inf2.24xlarge", devices_per_task=3, image=IMAGE
    )
    sliced.auto_scale(min_count=1, max_count=2)
    sliced.auto_scale(min_count=1, max_count=2)


def _device_outside_the_task(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.24xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, devices=[5])


def _spot_with_a_reservation(s: Stack) -> None:
    from neuron_constructs import CapacityReservation

    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
        "Trn1",
        instance_type="trn1.32xlarge",
        spot=True,
        capacity_reservation=CapacityReservation.capacity_block("cr-0123456789abcdef0"),
    )


def _capacity_block_of_inf2(s: Stack) -> None:
    from neuron_constructs import CapacityReservation

    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
        "Inf2", instance_type="inf2.48xlarge", capacity_reservation=CapacityReservation.capacity_block("cr-0abc")
    )


def _reservation_id_on_managed_instances(s: Stack) -> None:
    from neuron_constructs import CapacityReservation

    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_managed_instances_capacity(
        "Mi", capacity_reservation=CapacityReservation.on_demand("cr-0123456789abcdef0")
    )


def _parameter_for_max_capacity(s: Stack) -> None:
    from aws_cdk import CfnParameter

    limit = CfnParameter(s, "Max", type="Number", default=2).value_as_number
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=limit)  # type: ignore[arg-type]


def _published_under_aws(s: Stack) -> None:
    NeuronCluster(s, "C", vpc=imported_vpc(s)).publish("/aws/team")


def _auto_scaling_on_a_published_cluster(s: Stack) -> None:
    NeuronCluster.from_published(s, "C", prefix="/neuron/team").add_ec2_capacity("Inf2", instance_type="inf2.xlarge")


def _served(s: Stack, *, vpc_made: bool = False, **container: Any) -> tuple[NeuronService, Any]:
    """A manual service on inf2.48xlarge capacity with room, and an internal load balancer's listener; the cluster in
    a VPC of its own making with ``vpc_made``, else an imported one."""
    from neuron_constructs import NeuronLoadBalancer

    cluster = NeuronCluster(s, "C") if vpc_made else NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, **container)
    service = NeuronService(s, "Svc", cluster=cluster, task_definition=task)
    return service, NeuronLoadBalancer(s, "Lb", cluster=cluster).listener


def _target_without_a_port(s: Stack) -> None:
    service, listener = _served(s)
    service.attach_to_listener(listener)


def _listener_rule_without_priority(s: Stack) -> None:
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    service, listener = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    service.attach_to_listener(listener, conditions=[elbv2.ListenerCondition.path_patterns(["/model/*"])])


def _default_action_across_stacks(s: Stack) -> None:
    from neuron_constructs import NeuronLoadBalancer

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    listener = NeuronLoadBalancer(s, "Lb", cluster=cluster).listener
    model = Stack(s.node.root, "Model")  # type: ignore[arg-type]
    task = ManualNeuronTaskDefinition(model, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    NeuronService(model, "Svc", cluster=cluster, task_definition=task).attach_to_listener(listener)


def _imported_cluster_without_its_providers(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    cluster = NeuronCluster.from_cluster_attributes(s, "C", cluster_name="ml", vpc=ec2.Vpc(s, "V"))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")


def _imported_strategy_naming_an_unlisted_provider(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    NeuronCluster.from_cluster_attributes(
        s,
        "C",
        cluster_name="ml",
        vpc=ec2.Vpc(s, "V"),
        existing_capacity_providers=["FARGATE"],
        default_capacity_provider_strategy=[ecs.CapacityProviderStrategy(capacity_provider="legacy-cp", weight=1)],
    )


def _cluster_imported_twice_with_capacity(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc(s, "V")
    for id in ("A", "B"):
        cluster = NeuronCluster.from_cluster_attributes(
            s, id, cluster_name="ml", vpc=vpc, existing_capacity_providers=[]
        )
        cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")


def _cluster_arn_for_its_name(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    arn = "arn:aws:ecs:us-east-1:111122223333:cluster/ml"
    NeuronCluster.from_cluster_attributes(s, "C", cluster_name=arn, vpc=ec2.Vpc(s, "V"))


def _in_region(s: Stack, id: str, region: str) -> Stack:
    from aws_cdk import Environment

    return Stack(s.node.root, id, env=Environment(account="111122223333", region=region))  # type: ignore[arg-type]


def _service_in_another_region(s: Stack) -> None:
    platform = _in_region(s, "Platform", "us-east-1")
    cluster = NeuronCluster(platform, "C", cluster_name="ml")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    model = _in_region(s, "Model", "us-west-2")
    task = ManualNeuronTaskDefinition(model, "T", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(model, "Svc", cluster=cluster, task_definition=task)


def _alarm_topic_of_another_region(s: Stack) -> None:
    from aws_cdk import aws_sns as sns

    platform = _in_region(s, "Platform", "us-east-1")
    cluster = NeuronCluster(platform, "C", vpc=imported_vpc(platform))
    topic = sns.Topic.from_topic_arn(platform, "Alarms", "arn:aws:sns:eu-west-1:111122223333:neuron-alarms")
    NeuronMonitoring(platform, "Monitoring", cluster=cluster, alarm_topic=topic)


def _alert_topic_of_another_account(s: Stack) -> None:
    from aws_cdk import aws_sns as sns

    from neuron_constructs import NeuronTrainingQueue

    training = _in_region(s, "Training", "us-east-1")
    topic = sns.Topic.from_topic_arn(training, "Alerts", "arn:aws:sns:us-east-1:444455556666:team-alerts")
    NeuronTrainingQueue(training, "Queue", instance_type="trn1.2xlarge", max_nodes=1, notifications=topic)


def _snapshot_of_a_log_group(s: Stack) -> None:
    from aws_cdk import RemovalPolicy

    ManagedNeuronTaskDefinition(s, "Snapshot", cpu=4096, memory_mib=8192, log_removal_policy=RemovalPolicy.SNAPSHOT)


def _snapshot_of_a_file_system(s: Stack) -> None:
    from aws_cdk import RemovalPolicy

    from neuron_constructs import LustreStorage

    _queue(s, storage=LustreStorage(removal_policy=RemovalPolicy.SNAPSHOT))


def _load_balancer_of_another_vpc(s: Stack) -> None:
    from neuron_constructs import NeuronLoadBalancer

    service, _ = _served(s, vpc_made=True, port_mappings=[ecs.PortMapping(container_port=8080)])
    other = NeuronCluster(s, "Other")
    listener = NeuronLoadBalancer(s, "OtherLb", cluster=other).listener
    service.attach_to_listener(listener)


def _training_subnet_of_another_vpc(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import NeuronTrainingQueue

    subnet = ec2.Vpc(s, "Other").private_subnets[0]
    NeuronTrainingQueue(s, "Queue", instance_type="trn1.32xlarge", max_nodes=2, vpc=ec2.Vpc(s, "V"), subnet=subnet)


def _health_check_path_without_a_slash(s: Stack) -> None:
    service, listener = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    service.attach_to_listener(listener, health_check_path="health")


def _training_queue_in_a_public_subnet(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import NeuronTrainingQueue

    vpc = ec2.Vpc(s, "V")
    NeuronTrainingQueue(s, "Queue", instance_type="trn1.32xlarge", max_nodes=2, vpc=vpc, subnet=vpc.public_subnets[0])


def _training_image_of_ecr_by_uri(s: Stack) -> None:
    from neuron_constructs import NeuronTrainingQueue

    image = ecs.ContainerImage.from_registry("111122223333.dkr.ecr.us-west-2.amazonaws.com/team/trainer:v1")
    queue = NeuronTrainingQueue(s, "Queue", instance_type="trn1.32xlarge", max_nodes=2)
    queue.add_job("Job", nodes=2, image=image, command=["torchrun", "train.py"])


def _network_load_balancer_without_a_group(s: Stack) -> None:
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    service, _ = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    nlb = elbv2.NetworkLoadBalancer(s, "Nlb", vpc=service.cluster.vpc)
    service.attach_to_listener(nlb.add_listener("Tcp", port=8080))


def _request_scaling_before_attaching(s: Stack) -> None:
    service, _ = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    service.scale_on_requests(requests_per_target=20, max_count=1)


def _load_balancer_in_a_vpc_of_unknown_range(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import NeuronLoadBalancer

    vpc = ec2.Vpc.from_vpc_attributes(
        s, "V", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"], private_subnet_ids=["subnet-1"]
    )
    NeuronLoadBalancer(s, "Lb", cluster=NeuronCluster(s, "C", vpc=vpc))


def _model_beyond_the_free_devices(s: Stack) -> None:
    from neuron_constructs import NeuronFleet

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    fleet = NeuronFleet(s, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    fleet.add_model("Llm", devices_per_task=8, image=IMAGE)
    fleet.add_model("Embedding", devices_per_task=1, copies=5, image=IMAGE)


def _compile_cache_on_the_whole_bucket(s: Stack) -> None:
    from aws_cdk import aws_s3 as s3

    from neuron_constructs import CompileCache

    CompileCache(s3.Bucket(s, "Cache"), prefix="/")


def _queue(s: Stack, instance_type: str = "trn1.32xlarge", **options: Any) -> Any:
    from neuron_constructs import NeuronTrainingQueue

    return NeuronTrainingQueue(s, "Queue", instance_type=instance_type, max_nodes=2, **options)


def _multi_node_on_trn1_2xlarge(s: Stack) -> None:
    _queue(s, "trn1.2xlarge").add_job("Job", nodes=2, image=IMAGE, command=["train"])


def _more_nodes_than_the_queue(s: Stack) -> None:
    _queue(s).add_job("Job", nodes=3, image=IMAGE, command=["train"])


def _multi_node_on_spot(s: Stack) -> None:
    _queue(s, spot=True).add_job("Job", nodes=2, image=IMAGE, command=["train"])


def _parallel_degrees_beyond_the_world(s: Stack) -> None:
    # trn2.48xlarge: 128 physical NeuronCores, 64 logical ones under the default LNC=2; 2 nodes hold 128 processes.
    _queue(s, instance_type="trn2.48xlarge").add_job(
        "Job", nodes=2, image=IMAGE, command=["train"], tensor_parallel=32, pipeline_parallel=8
    )


def _monitoring_twice(s: Stack) -> None:
    from neuron_constructs import NeuronCluster, NeuronMonitoring

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster)
    NeuronMonitoring(s, "Again", cluster=cluster, recovery=False)


def _unpinned_privileged_monitor_image(s: Stack) -> None:
    from neuron_constructs import NeuronCluster, NeuronMonitoring
    from neuron_constructs.knowledge.container_images import PYTORCH_INFERENCE

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster, monitor_image=PYTORCH_INFERENCE)


def _training_queue_across_two_subnets(s: Stack) -> None:
    from neuron_constructs.base.vpc import private_vpc

    vpc = private_vpc(s, max_azs=2)
    _queue(s, vpc=vpc, subnet=vpc.private_subnets)


def _training_vpc_without_private_subnets(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc(s, "V", subnet_configuration=[ec2.SubnetConfiguration(name="P", subnet_type=ec2.SubnetType.PUBLIC)])
    _queue(s, vpc=vpc)


def _reservation_fallback_on_a_queue(s: Stack) -> None:
    from neuron_constructs import CapacityReservation

    _queue(s, capacity_reservation=CapacityReservation.on_demand("cr-0123456789abcdef0", fallback_to_on_demand=True))


def _both_sizes_for_a_model(s: Stack) -> None:
    from neuron_constructs import NeuronFleet

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
    fleet = NeuronFleet(s, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    fleet.add_model("Embedding", devices_per_task=1, cores_per_task=1, image=IMAGE)


def _lnc_on_trn1(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Trn1", instance_type="trn1.32xlarge", lnc=2)


def _lnc_1_on_inf2(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", lnc=1)


def _scaling_minimum_above_its_maximum(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=4)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task).scale_on_neuron_utilization(min_count=4, max_count=2)


def _service_in_another_app(s: Stack) -> None:
    platform = Stack(App(analytics_reporting=False), "Platform")
    cluster = NeuronCluster(platform, "C", vpc=imported_vpc(platform))
    NeuronService(s, "Svc", cluster=cluster, task_definition=managed(s))


def _spot_trn2u(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Trn2u", instance_type="trn2u.48xlarge", spot=True)


def _checkpoint_without_storage(s: Stack) -> None:
    _queue(s).add_job("Job", nodes=2, image=IMAGE, command=["torchrun", "train.py"], checkpoint_dir="/checkpoints")


def _canary_percent_ecs_refuses(s: Stack) -> None:
    Rollout.canary(percent=0.05)


def _canary_as_the_default_action(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    service = NeuronService(s, "Svc", cluster=cluster, task_definition=task, rollout=Rollout.canary())
    from neuron_constructs import NeuronLoadBalancer

    service.attach_to_listener(NeuronLoadBalancer(s, "Lb", cluster=cluster).listener)


def _blue_green_without_room(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=3)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, desired_count=2, rollout=Rollout.blue_green())


def _fail_only_alarms_next_to_a_rollout(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(
        s,
        "Svc",
        cluster=cluster,
        task_definition=task,
        rollout=Rollout.blue_green(),
        deployment_alarms=ecs.DeploymentAlarmConfig(alarm_names=["mine"], behavior=ecs.AlarmBehavior.FAIL_ON_ALARM),
    )


def _header_test_rule_on_an_internet_facing_listener(s: Stack) -> None:
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    from neuron_constructs import NeuronLoadBalancer

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    service = NeuronService(
        s, "Svc", cluster=cluster, task_definition=task, rollout=Rollout.blue_green(smoke_test=SmokeTest("/health"))
    )
    balancer = NeuronLoadBalancer(s, "Lb", cluster=cluster, internet_facing=True)
    service.attach_to_listener(
        balancer.listener, conditions=[elbv2.ListenerCondition.path_patterns(["/x/*"])], priority=5
    )


def _blue_green_fleet_model(s: Stack) -> None:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    SlicedNeuronService(
        s,
        "Sliced",
        cluster=cluster,
        instance_type="inf2.48xlarge",
        devices_per_task=2,
        image=IMAGE,
        rollout=Rollout.blue_green(),
    )


def _smoke_test_path_without_slash(s: Stack) -> None:
    SmokeTest("health")


def _approval_during_the_production_shift(s: Stack) -> None:
    from neuron_constructs import Approval

    Approval("PRODUCTION_TRAFFIC_SHIFT")


def _smoke_test_hook(s: Stack, body: str | None, header: tuple[str, str] | None) -> None:
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs.serving.rollout import SmokeTest
    from neuron_constructs.serving.rollout_resources import smoke_test_hook

    vpc = ec2.Vpc(
        s,
        "V",
        max_azs=1,
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="I", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )
    smoke_test_hook(
        s,
        "Smoke",
        smoke_test=SmokeTest("/v1/generate", method="POST", body=body),
        url="http://lb.internal",
        header=header,
        vpc=vpc,
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        load_balancer=ec2.Connections(security_groups=[ec2.SecurityGroup(s, "G", vpc=vpc)]),
        port=80,
    )


def _smoke_test_body_beyond_lambda_environment(s: Stack) -> None:
    _smoke_test_hook(s, "x" * 4000, None)


def _smoke_test_header_the_function_refuses(s: Stack) -> None:
    _smoke_test_hook(s, None, ("x test", "1"))


def _training_image_on_a_current_ami(s: Stack) -> None:
    from neuron_constructs import NeuronAmi
    from neuron_constructs.knowledge.container_images import PYTORCH_TRAINING

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity(
        "Trn1", instance_type="trn1.32xlarge", max_capacity=2, machine_image=NeuronAmi.release("2023.0.20261113")
    )
    task = ManualNeuronTaskDefinition(s, "T", instance_type="trn1.32xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri))
    NeuronService(s, "Svc", cluster=cluster, task_definition=task)


def _legacy_vllm_image_on_trn2(s: Stack) -> None:
    from neuron_constructs.knowledge.container_images import VLLM

    task = ManualNeuronTaskDefinition(s, "T", instance_type="trn2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM.uri))


def _image_sdk_the_table_does_not_know(s: Stack) -> None:
    task = ManagedNeuronTaskDefinition(s, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry("team/llm:v42"), neuron_sdk="2.99.0")


def _two_stacks_publishing_one_prefix(s: Stack) -> None:
    app = s.node.root
    assert isinstance(app, App)
    for name in ("First", "Second"):
        NeuronCluster(Stack(app, name), "C").publish("/neuron/team")


def _write_protection_without_a_writer(s: Stack) -> None:
    from neuron_constructs import PublishedPlatform

    PublishedPlatform.write_protection("/neuron/team", writers=[])


def _driver_check_without_entry_point(s: Stack) -> None:
    task = ManagedNeuronTaskDefinition(s, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry("x-sdk2.33.0-y"), driver_check=True)


def _s3_cache_for_vllm_neuron(s: Stack) -> None:
    from neuron_constructs import CompileCache
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    task = ManualNeuronTaskDefinition(s, "Task", instance_type="trn2.48xlarge", memory_mib=65536)
    image = ecs.ContainerImage.from_registry(VLLM_TRN2.reference)
    task.add_neuron_container("vllm", image=image, compile_cache=CompileCache.in_new_bucket(s, "Cache"))


def _file_system_cache_without_clients(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import CompileCache

    CompileCache.in_new_file_system(s, "Cache", vpc=ec2.Vpc(s, "Vpc", max_azs=2, nat_gateways=0), clients=[])


def _instance_mount_cache_on_managed_instances(s: Stack) -> None:
    from neuron_constructs import CompileCache, ManagedNeuronTaskDefinition
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    task = ManagedNeuronTaskDefinition(s, "Task", cpu=8192, memory_mib=65536)
    image = ecs.ContainerImage.from_registry(VLLM_TRN2.reference)
    task.add_neuron_container("vllm", image=image, compile_cache=CompileCache.on_instance_mount("/fsx"))


def _access_point_prefix_too_deep(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_efs as efs

    from neuron_constructs import CompileCache

    file_system = efs.FileSystem(s, "Fs", vpc=ec2.Vpc(s, "Vpc", max_azs=1, nat_gateways=0))
    CompileCache.on_file_system(file_system, "teams/ml/llm/cache")


def _precompiled_service(s: Stack, *, cache: bool = True, **precompile: Any) -> None:
    from aws_cdk import Duration

    from neuron_constructs import CompileCache, ManualNeuronTaskDefinition, NeuronService, Precompile
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    capacity = cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge")
    compile_cache = (
        CompileCache.in_new_file_system(s, "Cache", vpc=cluster.vpc, clients=[capacity.auto_scaling_group])
        if cache
        else None
    )
    task = ManualNeuronTaskDefinition(s, "Task", instance_type="trn2.48xlarge", memory_mib=65536)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        command=precompile.pop("command", ["vllm", "serve", "m"]),
        compile_cache=compile_cache,
    )
    if "timeout_hours" in precompile:
        precompile["timeout"] = Duration.hours(precompile.pop("timeout_hours"))
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, precompile=Precompile(**precompile))


def _precompile_other_family(s: Stack) -> None:
    _precompiled_service(s, target="inf2")


def _precompile_speculative(s: Stack) -> None:
    _precompiled_service(s, command=["vllm", "serve", "m", "--speculative-config", "{}"])


def _precompile_hook_shorter_than_job(s: Stack) -> None:
    from aws_cdk import Duration

    from neuron_constructs import Precompile

    Precompile(timeout=Duration.minutes(30), hook_timeout=Duration.minutes(20))


def _precompile_without_cache(s: Stack) -> None:
    _precompiled_service(s, cache=False)


def _precompile_beyond_custom_resource(s: Stack) -> None:
    _precompiled_service(s, timeout_hours=2)


def _precompile_size_fargate_does_not_run(s: Stack) -> None:
    from neuron_constructs import Precompile

    Precompile(vcpus=3)


def _file_system_cache_in_another_vpc(s: Stack) -> None:
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_efs as efs

    from neuron_constructs import CompileCache, ManualNeuronTaskDefinition, NeuronCluster, NeuronService
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    cache = CompileCache.on_file_system(efs.FileSystem(s, "Fs", vpc=ec2.Vpc(s, "Vpc", max_azs=1, nat_gateways=0)))
    cluster = NeuronCluster(s, "C")
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    task = ManualNeuronTaskDefinition(s, "Task", instance_type="trn2.48xlarge", memory_mib=65536)
    task.add_neuron_container("vllm", image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference), compile_cache=cache)
    NeuronService(s, "Service", cluster=cluster, task_definition=task)


def _vllm_task(s: Stack) -> ManualNeuronTaskDefinition:
    return ManualNeuronTaskDefinition(s, "Task", instance_type="inf2.48xlarge", devices=[0], memory_mib=16384)


def _server_beside_a_command(s: Stack) -> None:
    _vllm_task(s).add_neuron_container(
        "vllm", image=ecs.ContainerImage.from_registry(VLLM.reference), server=VllmServer(model="m/x"), command=["x"]
    )


def _server_degree_above_the_cores(s: Stack) -> None:
    _vllm_task(s).add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        server=VllmServer(model="m/x", tensor_parallel_size=4),
    )


def _lora_before_vllm_neuron_2_34(s: Stack) -> None:
    task = ManualNeuronTaskDefinition(s, "Task", instance_type="trn2.48xlarge", devices=[0], memory_mib=16384)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        server=VllmServer(model="m/x", lora=VllmLora(adapters={"a": "/models/a"})),
    )


def _waiting_requests_without_the_sidecar(s: Stack) -> None:
    _service(s).scale_on_waiting_requests(per_copy=4, max_count=2)


def _server_for_a_pytorch_image(s: Stack) -> None:
    _vllm_task(s).add_neuron_container(
        "vllm", image=ecs.ContainerImage.from_registry(PYTORCH_INFERENCE.reference), server=VllmServer(model="m/x")
    )


CASES: list[tuple[r.Rule, Callable[[Stack], None], str]] = [
    (r.UNKNOWN_INSTANCE_TYPE, _unknown_type, r"Test/Task: 'inf2.2xlarge' is not a Neuron instance type.*closest: inf2"),
    (r.INF1_ON_MANAGED_INSTANCES, _inf1_by_pattern, r"Test/C/MI: instance type 'inf1.\*' selects Inf1"),
    (r.INF1_ON_MANAGED_INSTANCES, _inf1_by_accelerator, r"accelerator 'inferentia' \(Inf1\) was requested"),
    (r.INF1_ON_MANAGED_INSTANCES, _inf1_manual_on_managed_instances, r"compatibility=MANAGED_INSTANCES with inf1"),
    (r.NON_NEURON_MANAGED_INSTANCES, _non_neuron_managed_instances, r"'g5.\*' matches no catalog type"),
    (r.CAPACITY_SIZE, _capacity_bounds, r"Test/C/Inf2: min_capacity=3, max_capacity=2"),
    (r.ONE_NEURON_CONTAINER, _second_neuron_container, r"Test/Managed/second: 'first' already has NeuronDevice"),
    (r.MANAGED_INSTANCES_FIELD, _docker_labels_in_managed_task, r"Test/Managed/model: docker_labels is set"),
    (
        r.MANAGED_INSTANCES_FIELD,
        _bridge_in_managed_task,
        r"Test/T: network_mode=BRIDGE \(Managed Instances take AWS_VPC or HOST\)",
    ),
    (r.MANAGED_INSTANCES_FIELD, _ipc_mode_in_managed_task, r"Test/T: ipc_mode is set"),
    (r.MANAGED_ALLOCATION_CAPACITY, _managed_task_on_auto_scaling_capacity, r"Test/Svc: capacity= is an Auto Scaling"),
    (r.DEVICE_INDEX_RANGE, _device_out_of_range, r"device 6 does not exist on inf2.24xlarge.*indices 0..5"),
    (r.DUPLICATE_DEVICE, _duplicate_device, r"device 1 is listed twice in \[1, 1\]"),
    (r.DUPLICATE_DEVICE, _device_in_two_containers, r"Test/T/b: device 1 is already mapped by 'a'"),
    (r.NO_DEVICES, _no_devices, r"Test/T: devices is empty"),
    (r.TASK_EXCEEDS_INSTANCE, _cpu_beyond_instance, r"cpu=8192 exceeds the 4096 CPU units of inf2.xlarge"),
    (r.TASK_EXCEEDS_INSTANCE, _memory_beyond_instance, r"memory_mib=16384 exceeds the 8192 MiB of inf1.xlarge"),
    (r.TASK_EXCEEDS_INSTANCE, _managed_task_beyond_largest_instance, r"exceeds the 2097152 MiB of trn2.48xlarge"),
    (r.NEURON_CONTAINER_RESOURCES, _gpu_on_neuron_container, r"Test/Managed/model: gpu_count is set"),
    (
        r.NO_MATCHING_CAPACITY,
        _no_matching_capacity,
        r"the cluster has no inf2.8xlarge capacity \(Auto Scaling, or Managed Instances admitting only "
        r"inf2.8xlarge\) for Test/T",
    ),
    (r.AMBIGUOUS_CAPACITY, _ambiguous_capacity, r"2 capacities fit.*pass capacity= one of: Inf2, Trn"),
    (
        r.SLICE_SIZE,
        _slice_not_dividing_chips,
        r"Test/Sliced: devices_per_task=5 does not cut the 12 chips of inf2.48xlarge.*"
        r"use devices_per_task in \[1, 2, 3, 4, 6, 12\] for inf2.48xlarge",
    ),
    (r.SLICE_SIZE, _slice_off_the_torus, r"devices_per_task in \[1, 4, 8, 16\] for trn1.32xlarge"),
    (
        r.SLICES_EXCEED_CAPACITY,
        _more_instances_than_capacity,
        r"Test/Sliced: instances=3 but Test/C/Neuron launches 0 to 2 instances.*run from 0 to 2 tasks",
    ),
    (r.SLICES_EXCEED_CAPACITY, _auto_scaling_beyond_capacity, r"instances=4 but Test/C/Neuron launches 0 to 2"),
    (r.SLICE_HOST_PORT, _fixed_host_port_in_bridge, r"Test/Sliced: host_port=8080 in the bridge network mode"),
    (r.SLICE_HOST_PORT, _port_in_host_mode, r"container port 8080 is a host port in the host network mode"),
    (
        r.SLICE_RUNTIME_VARIABLE,
        _visible_cores_for_every_slice,
        r"NEURON_RT_VISIBLE_CORES=0-3 is the same in every slice.*takes the 4 cores of the mapped devices",
    ),
    (r.SLICE_RUNTIME_VARIABLE, _more_cores_than_a_slice, r"NEURON_RT_NUM_CORES=8 but a slice holds 4 NeuronCores"),
    (
        r.SLICED_CAPACITY_SHARED,
        _service_beside_slices,
        r"Test/Other: Test/C/Neuron runs the sliced service Test/Sliced.*give Test/Sliced its own",
    ),
    (r.SLICED_CAPACITY_SHARED, _slices_beside_a_service, r"Test/Sliced: Test/C/Neuron already runs Test/Other"),
    (
        r.UNKNOWN_INSTANCE_TYPE,
        _misspelled_type,
        r"Test/C/Inf2: 'INF2.xlarge' is not how EC2 spells.*closest: 'inf2.xlarge'",
    ),
    (
        r.NON_NEURON_MANAGED_INSTANCES,
        _upper_case_pattern,
        r"Test/C/MI: instance type pattern 'INF2.\*' is not lowercase",
    ),
    (r.NEURON_CONTAINER_RESOURCES, _sidecar_with_a_gpu, r"Test/T/sidecar: gpu_count is set"),
    (
        r.SLICES_EXCEED_CAPACITY,
        _more_copies_than_instances,
        r"Test/Svc: desired_count=3 with distinctInstance, but Test/C/Inf2 launches at most 2 instances",
    ),
    (
        r.SHARED_DEVICE,
        _two_services_of_one_manual_task,
        r"Test/Again: Test/Svc on Test/C/Inf2 also holds /dev/neuron0..1.*give Test/Again devices or "
        r"NEURON_RT_VISIBLE_CORES disjoint",
    ),
    (
        r.SHARED_DEVICE,
        _overlapping_devices_on_one_capacity,
        r"Test/Other: Test/Svc on Test/C/Inf2 also holds /dev/neuron1",
    ),
    (
        r.CONTAINERS_EXCEED_TASK,
        _container_memory_above_task,
        r"Test/T/model: containers would reserve 8192 MiB of memory, the task has 4096 MiB",
    ),
    (
        r.TASK_EXCEEDS_INSTANCE,
        _managed_task_larger_than_its_capacity,
        r"Test/Svc: cpu=8192 exceeds the 4096 CPU units of inf2.xlarge",
    ),
    (
        r.NEURON_TYPE_WITHOUT_NEURON_AMI,
        _neuron_type_as_non_neuron_capacity,
        r"Test/C/Cpu: 'inf2.xlarge' is a Neuron type on the standard ECS AMI"
        r".*add_ec2_capacity\(instance_type='inf2.xlarge'\)",
    ),
    (
        r.UNKNOWN_EC2_TYPE,
        _instance_type_ec2_does_not_offer,
        r"Test/C/Cpu: EC2 has no instance type 'm7i.huge'.*m7i.large",
    ),
    (
        r.WRONG_TYPE,
        _string_for_a_pattern_list,
        r"Test/C/MI: instance_types='inf2.\*' is a string.*Fix: pass instance_types as a list of",
    ),
    (r.WRONG_TYPE, _bool_for_cpu, r"Test/T: cpu=True is a bool.*pass cpu as a whole number"),
    (
        r.OUT_OF_RANGE,
        _cpu_below_ecs_minimum,
        r"Test/T: cpu=64 is below the minimum of 128.*pass cpu from 128 to 196,608",
    ),
    (
        r.NO_TASK_MEMORY,
        _manual_task_without_any_memory,
        r"Test/T/model: neither the task definition nor this container sets any memory",
    ),
    (
        r.DEPLOYMENT_WITHOUT_ROOM,
        _deployment_with_no_spare_instance,
        r"Test/Full: desired_count=2 with distinctInstance fills the 2 instances Test/D/Inf2 can launch, and "
        r"min_healthy_percent=100 \(passed to NeuronService\).*pass min_healthy_percent=50 or less",
    ),
    (
        r.DEPLOYMENT_WITHOUT_ROOM,
        _scaling_a_passed_minimum_onto_every_instance,
        r"Test/Svc: max_count=2 with distinctInstance fills the 2 instances Test/C/Inf2 can launch, and "
        r"min_healthy_percent=100 \(passed to NeuronService\) keeps every task running",
    ),
    (
        r.DEPLOYMENT_STALLS,
        _one_task_with_no_room_either_side,
        r"Test/Stuck: with 1 task, max_healthy_percent=100 starts none beyond it and min_healthy_percent=50 stops "
        r"none.*pass min_healthy_percent=0, or max_healthy_percent=200 or more",
    ),
    (r.NO_SUBNETS, _public_only_vpc, r"Test/C/Inf2: capacity_subnets selects nothing in Test/V.*PUBLIC"),
    (
        r.NETWORK_OPTION_IGNORED,
        _security_groups_in_bridge_mode,
        r"Test/Bridge: security_groups is set, but Test/U uses the bridge network mode",
    ),
    (r.SECOND_SCALING_TARGET, _auto_scale_twice, r"Test/Sliced: auto_scale: auto_scale already made the scalable"),
    (r.MODEL_NAME, _model_name_with_a_space, r"Test/Svc: model_name='my model' is not 1 to 255 such characters"),
    (r.ENGINE_WITHOUT_METRICS, _engine_metrics_for_busybox, r"Test/Svc: engine_metrics asked for .*busybox:1.37, an "),
    (r.ENGINE_METRICS_PORT, _engine_metrics_without_a_port, r"Test/Svc: container 'm' maps no port"),
    (
        r.COMPILE_ALARM_WITHOUT_COMPILE_METRIC,
        _compile_alarm_on_vllm_on_nxd_inference,
        r"Test/Svc: EngineMetrics\(expect_warm=True\) for engine vLLM on NxD Inference",
    ),
    (
        r.UNDECLARED_DEVICE,
        _device_outside_the_task,
        r"Test/T/model: device 5 is not among the devices \[0, 1\] of Test/T.*map only /dev/neuron0..1",
    ),
    (
        r.SPOT_WITH_RESERVATION,
        _spot_with_a_reservation,
        r"Test/C/Trn1: spot=True with the Capacity Block cr-0123456789abcdef0",
    ),
    (
        r.CAPACITY_BLOCK_TYPE,
        _capacity_block_of_inf2,
        r"Test/C/Inf2: a Capacity Block of inf2.48xlarge, which Capacity Blocks do not offer",
    ),
    (
        r.MANAGED_INSTANCES_RESERVATION,
        _reservation_id_on_managed_instances,
        r"Test/C/Mi: capacity_reservation is the On-Demand Capacity Reservation cr-0123456789abcdef0.*"
        r"pass CapacityReservation.on_demand_group",
    ),
    (r.NO_TARGET_PORT, _target_without_a_port, r"Test/Svc/TargetGroup: container 'model' has no port mapping"),
    (
        r.LISTENER_RULE,
        _listener_rule_without_priority,
        r"Test/Svc/TargetGroup: conditions without priority.*pass conditions=.* with priority=",
    ),
    (
        r.DEFAULT_ACTION_ACROSS_STACKS,
        _default_action_across_stacks,
        r"Model/Svc/TargetGroup: no conditions make it the default action of Test/Lb/LoadBalancer/Listener, in stack "
        r"Test, but Model/Svc/TargetGroup is in stack Model.*or attach in the stack of Test/Lb/LoadBalancer/Listener",
    ),
    (
        r.IMPORTED_CLUSTER_PROVIDERS,
        _imported_cluster_without_its_providers,
        r"Test/C/Inf2: Test/C imports cluster ml without existing_capacity_providers.*pass "
        r"existing_capacity_providers=\[\.\.\.\].*--clusters ml",
    ),
    (
        r.IMPORTED_CLUSTER_PROVIDERS,
        _imported_strategy_naming_an_unlisted_provider,
        r"Test/C: default_capacity_provider_strategy names 'legacy-cp', which the cluster's providers \['FARGATE'\].*"
        r"name in default_capacity_provider_strategy only those",
    ),
    (
        r.IMPORTED_CLUSTER_PROVIDERS,
        _cluster_imported_twice_with_capacity,
        r"Test/B/Inf2: cluster ml is imported with Auto Scaling capacity at Test/A already",
    ),
    (
        r.CLUSTER_NAME,
        _cluster_arn_for_its_name,
        r"Test/C: cluster_name='arn:aws:ecs:us-east-1:111122223333:cluster/ml'.*Fix: pass cluster_name='ml'",
    ),
    (
        r.ACROSS_ENVIRONMENTS,
        _service_in_another_region,
        r"Model/Svc: the service is in stack Model, Region us-west-2, and Platform/C in stack Platform, Region "
        r"us-east-1.*give stack Model the account and Region of stack Platform",
    ),
    (
        r.ACROSS_ENVIRONMENTS,
        _alarm_topic_of_another_region,
        r"Platform/Monitoring: alarm_topic Platform/Alarms is in Region eu-west-1, and the alarms in stack Platform, "
        r"Region us-east-1",
    ),
    (
        r.ALERT_TOPIC_ACCOUNT,
        _alert_topic_of_another_account,
        r"Training/Queue: notifications Training/Alerts is in account 444455556666, and the queue's job alerts in "
        r"stack Training, account 111122223333.*pass notifications= a topic of account 111122223333",
    ),
    (
        r.SNAPSHOT_REMOVAL,
        _snapshot_of_a_log_group,
        r"Test/Snapshot: log_removal_policy=RemovalPolicy.SNAPSHOT for a log group.*pass "
        r"log_removal_policy=RemovalPolicy.RETAIN",
    ),
    (
        r.SNAPSHOT_REMOVAL,
        _snapshot_of_a_file_system,
        r"Test/Queue: removal_policy=RemovalPolicy.SNAPSHOT for the FSx for Lustre file system.*aws fsx create-backup",
    ),
    (
        r.ACROSS_VPCS,
        _load_balancer_of_another_vpc,
        r"Test/Svc/TargetGroup: the tasks of Test/Svc is in Test/C/Vpc, and the load balancer of "
        r"Test/OtherLb/LoadBalancer/Listener in Test/Other/Vpc.*a load balancer in the VPC of Test/C",
    ),
    (
        r.ACROSS_VPCS,
        _training_subnet_of_another_vpc,
        r"Test/Queue: subnet Test/Other/PrivateSubnet1 is in Test/Other.*the queue's nodes \(vpc=\) in Test/V",
    ),
    (
        r.HEALTH_CHECK_PATH,
        _health_check_path_without_a_slash,
        r"Test/Svc/TargetGroup: health_check_path='health'.*pass health_check_path='/health'",
    ),
    (
        r.TRAINING_PUBLIC_SUBNET,
        _training_queue_in_a_public_subnet,
        r"Test/Queue: subnet Test/V/PublicSubnet1 is public, and a trn1.32xlarge node launches with 8 network "
        r"interfaces",
    ),
    (
        r.UNGRANTED_ECR_IMAGE,
        _training_image_of_ecr_by_uri,
        r"Test/Queue/Job/Container: image is an ECR image named by its URI.*ecs.ContainerImage.from_ecr_repository",
    ),
    (
        r.NETWORK_LOAD_BALANCER_GROUP,
        _network_load_balancer_without_a_group,
        r"Test/Svc/TargetGroup: the load balancer of Test/Nlb/Tcp has no security group.*security_groups=",
    ),
    (
        r.REQUEST_SCALING_TARGET,
        _request_scaling_before_attaching,
        r"Test/Svc: the service is in 0 Application Load Balancer target groups.*call attach_to_listener",
    ),
    (
        r.UNKNOWN_VPC_RANGE,
        _load_balancer_in_a_vpc_of_unknown_range,
        r"Test/C: Test/V has no IPv4 range.*pass clients=",
    ),
    (
        r.FLEET_FULL,
        _model_beyond_the_free_devices,
        r"Test/Fleet/Embedding: 5 copies of 1 contiguous chips do not fit in what is left of inf2.48xlarge.*"
        r"fit the model in what is left \(free chips 8-11 \(4 of 12\)\)",
    ),
    (
        r.CORE_SLICE,
        _both_sizes_for_a_model,
        r"Test/Fleet/Embedding: both of devices_per_task and cores_per_task given.*pass exactly one of "
        r"devices_per_task and cores_per_task, cores_per_task from 1 to 2",
    ),
    (
        r.LOGICAL_CORES,
        _lnc_on_trn1,
        r"Test/C/Trn1: lnc=2: only Trainium2 takes a logical NeuronCore setting, not trn1.32xlarge; leave lnc unset",
    ),
    (
        r.LOGICAL_CORES,
        _lnc_1_on_inf2,
        r"Test/C/Inf2: lnc=1: only Trainium2 takes a logical NeuronCore setting, not inf2.xlarge.*Fix: pass lnc= "
        r"\(1 or 2\) only for trn2 types",
    ),
    (
        r.ACROSS_APPS,
        _service_in_another_app,
        r"Test/Svc: the service is in stack Test of one CDK app, and Platform/C in stack Platform of another.*"
        r"Fix: make both in one app, or import Platform/C into this one: NeuronCluster.from_cluster_attributes",
    ),
    (
        r.ROLLOUT_VALUE,
        _canary_percent_ecs_refuses,
        r"Rollout.canary: a canary percent of 0.05 %: ECS takes canaryPercent as a multiple of 0.1 from 0.1 to 100.0",
    ),
    (
        r.ROLLOUT_TRAFFIC,
        _canary_as_the_default_action,
        r"Test/Svc/TargetGroup: a canary rollout attached as the default action of Test/Lb/LoadBalancer/Listener.*"
        r"Fix: pass conditions=",
    ),
    (
        r.ROLLOUT_ROOM,
        _blue_green_without_room,
        r"Test/Svc: desired_count=2 rolled out blue/green bake 10 min: a blue/green deployment runs blue and green "
        r"together, each at the full desired count: 4 copies holding 8 chips and 16 NeuronCores.*"
        r"which take 4 inf2.48xlarge instances at 1 copy per instance, but Test/C/Inf2 launches at most 3.*"
        r"Fix: raise max_capacity of Test/C/Inf2 to 4 or more",
    ),
    (
        r.ROLLOUT_ON_FLEET,
        _blue_green_fleet_model,
        r"Test/Sliced: a blue/green rollout of a fleet model.*Fix: roll the model out Rollout.canary\(\)",
    ),
    (
        r.SCALE_TO_ZERO,
        _scale_to_zero_without_a_zero_minimum,
        r"Test/Svc: scale_to_zero on a service whose scalable target cannot reach zero copies.*min_count=0",
    ),
    (r.SMOKE_TEST, _smoke_test_path_without_slash, r"SmokeTest: path='health' does not start with /"),
    (
        r.APPROVAL,
        _approval_during_the_production_shift,
        r"Approval: stage='PRODUCTION_TRAFFIC_SHIFT': ECS runs only Lambda hooks.*PRE_PRODUCTION_TRAFFIC_SHIFT instead",
    ),
    (
        r.DEPLOYMENT_ALARM_BEHAVIOR,
        _fail_only_alarms_next_to_a_rollout,
        r"Test/Svc: deployment_alarms= \(mine\) with AlarmBehavior.FAIL_ON_ALARM.*Fix: give your alarms "
        r"AlarmBehavior.ROLLBACK_ON_ALARM",
    ),
    (
        r.OPEN_TEST_RULE,
        _header_test_rule_on_an_internet_facing_listener,
        r"Test/Svc/TargetGroup: a smoke test through the header rule of Test/Lb/LoadBalancer/Listener, on an "
        r"internet-facing load balancer.*Fix: attach the smoke-tested service to an internal NeuronLoadBalancer",
    ),
    (
        r.BOUNDS_REVERSED,
        _scaling_minimum_above_its_maximum,
        r"Test/Svc: min_count=4 is above max_count=2.*Fix: pass min_count=2 or less, or max_count=4 or more",
    ),
    (
        r.CHECKPOINT_DIR,
        _checkpoint_without_storage,
        r"Test/Queue/Job: checkpoint_dir='/checkpoints' is not on shared storage: the queue's nodes share no shared "
        r"storage.*s3://",
    ),
    (r.NO_SPOT, _spot_trn2u, r"Test/C/Trn2u: spot=True with trn2u.48xlarge.*drop spot=True for trn2u.48xlarge"),
    (r.S3_LOCATION, _compile_cache_on_the_whole_bucket, r"Test/Cache: prefix='/'.*pass a non-empty prefix"),
    (
        r.MULTI_NODE_WITHOUT_EFA,
        _multi_node_on_trn1_2xlarge,
        r"Test/Queue/Job: nodes=2 on trn1.2xlarge, which has no EFA.*trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, "
        r"trn2.48xlarge, trn2u.48xlarge",
    ),
    (
        r.TOO_MANY_NODES,
        _more_nodes_than_the_queue,
        r"Test/Queue/Job: nodes=3 but Test/Queue launches at most 2 instances.*pass nodes=2 or fewer",
    ),
    (r.MULTI_NODE_ON_SPOT, _multi_node_on_spot, r"Test/Queue/Job: nodes=2 on Test/Queue, which runs Spot"),
    (
        r.PARALLEL_DEGREES,
        _parallel_degrees_beyond_the_world,
        r"Test/Queue/Job: tensor_parallel=32 x pipeline_parallel=8 = 256 does not divide the world size 128 \(2 "
        r"nodes x 64 NeuronCores\).*divides 128",
    ),
    (
        r.MONITORING_TWICE,
        _monitoring_twice,
        r"Test/Again: Test/C already has its monitoring \(cluster.monitoring\).*make one NeuronMonitoring per cluster",
    ),
    (
        r.UNPINNED_PRIVILEGED_IMAGE,
        _unpinned_privileged_monitor_image,
        r"Test/C/Monitoring: monitor_image public.ecr.aws/neuron/pytorch-inference-neuronx:\S+ has no digest, and "
        r"neuron-monitor runs privileged.*pass monitor_image=PYTORCH_INFERENCE.pinned\(\"sha256:...\"\).*"
        r"neuron-ecs digests",
    ),
    (
        r.TRAINING_SUBNETS,
        _training_queue_across_two_subnets,
        r"Test/Queue: subnet is 2 subnets \(Test/Vpc/PrivateSubnet1, Test/Vpc/PrivateSubnet2\).*same cluster placement "
        r"group, which lies in one Availability Zone.*pass one subnet",
    ),
    (r.TRAINING_SUBNETS, _training_vpc_without_private_subnets, r"Test/Queue: Test/V has no private subnet"),
    (
        r.RESERVATION_FALLBACK,
        _reservation_fallback_on_a_queue,
        r"Test/Queue: fallback_to_on_demand=True with the On-Demand Capacity Reservation cr-0123456789abcdef0",
    ),
    (r.PUBLISHED_NAME, _published_under_aws, r"Test/C: prefix='/aws/team' begins with 'aws'"),
    (
        r.PUBLISHED_CLUSTER_CAPACITY,
        _auto_scaling_on_a_published_cluster,
        r"Test/C/Inf2: Auto Scaling capacity on Test/C, the cluster another app published under /neuron/team.*"
        r"add Managed Instances capacity to Test/C",
    ),
    (
        r.WARM_POOL_REUSE,
        lambda s: NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
            "Inf2", instance_type="inf2.xlarge", warm_pool=WarmPool(reuse_on_scale_in=True)
        ),
        r"Test/C/Inf2: warm_pool=WarmPool\(reuse_on_scale_in=True\).*ReuseOnScaleIn.*drop reuse_on_scale_in",
    ),
    (
        r.WARM_POOL_SPOT,
        lambda s: NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
            "Inf2", instance_type="inf2.xlarge", spot=True, warm_pool=WarmPool()
        ),
        r"Test/C/Inf2: warm_pool with spot=True.*requests Spot Instances.*spot=False",
    ),
    (
        r.WARM_POOL_HIBERNATION,
        lambda s: NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity(
            "Inf2", instance_type="inf2.xlarge", warm_pool=WarmPool(state=autoscaling.PoolState.HIBERNATED)
        ),
        r"Test/C/Inf2: WarmPool\(state=PoolState.HIBERNATED\), but inf2.xlarge is of the inf2 family.*"
        r"PoolState.STOPPED",
    ),
    (
        r.RESERVATION_REFERENCE,
        lambda s: CapacityReservation.on_demand(
            "arn:aws:ec2:us-east-1:111122223333:capacity-reservation/cr-0123456789abcdef0"
        ),
        r"CapacityReservation.on_demand: reservation_id='arn:.*' is the reservation's ARN.*"
        r"pass the id the ARN ends with, 'cr-0123456789abcdef0'",
    ),
    (
        r.SMOKE_TEST,
        _smoke_test_header_the_function_refuses,
        r"Test/Smoke: the function would refuse its configuration: SMOKE_TEST_HEADER must be 'Name: value'",
    ),
    (
        r.SMOKE_TEST_ENVIRONMENT,
        _smoke_test_body_beyond_lambda_environment,
        r"Test/Smoke: the smoke test's environment takes about 4\d{3} bytes, 4000 of them SMOKE_TEST_BODY.*"
        r"shorten the SmokeTest body",
    ),
    (
        r.TOKEN_NOT_LITERAL,
        _parameter_for_max_capacity,
        r"Test/C/Inf2: max_capacity is a CDK token, a value known only at deploy time.*pass a literal max_capacity",
    ),
    (
        r.DRIVER_OUTSIDE_RUNTIME,
        _training_image_on_a_current_ami,
        r"Test/Svc: .*sdk2\.30\.0.*driver 2.31.*driver 2.27 to 2.28",
    ),
    (
        r.IMAGE_UNSUPPORTED_ON_FAMILY,
        _legacy_vllm_image_on_trn2,
        r"Test/T/model: container 'model' runs .*vllm-neuronx:0\.16\.0.* on trn2: NxD Inference of Neuron SDK 2\.31\.1 "
        r"is not supported on trn2 from Neuron 2\.34\.0.*Fix: run VLLM_TRN2 \(.*sdk2\.33\.0",
    ),
    (
        r.DRIVER_CHECK_INPUT,
        _driver_check_without_entry_point,
        r"Test/Task/model: driver_check is set without entry_point",
    ),
    (
        r.AMI_RELEASE,
        _ami_release_without_its_date,
        r"NeuronAmi.release\('2023.0.2026111'\): '2023.0.2026111' is not an ECS AL2023 AMI release.*"
        r"NeuronAmi.release\('2023.0.20261113'\)",
    ),
    (
        r.AMI_ROLLOUT,
        _ami_rollout_stopping_instances_the_service_needs,
        r"Test/C/Inf2: AmiRollout\(instances_at_a_time=2, terminating first\) leaves 1 of its 3 instances, and "
        r"Test/Svc keeps 2 of its 2 tasks running \(min_healthy_percent=100\), one per instance.*"
        r"replace fewer instances at a time \(at most 1\)",
    ),
    (
        r.WARM_UP_ROOM,
        _warm_up_larger_than_the_root_volume,
        r"Test/C/Inf2: the warm-up fills the AMI \(30 GiB\) \+ .* \(4 GiB, 12 GiB unpacked\) \+ "
        r"s3://team-models/llama \(60 GiB\) = 102 GiB on a root volume of 100 GiB, not counting 1 of unknown size "
        r"\(public.ecr.aws/aws-cli/.*Fix: pass root_volume_gib=102 or more",
    ),
    (
        r.IMAGE_SDK,
        _image_sdk_the_table_does_not_know,
        r"Test/Task/model: neuron_sdk='2\.99\.0' is not a Neuron SDK release the release table knows.*"
        r"pass neuron_sdk= as the release the image is built with, one of .*2\.31\.1",
    ),
    (
        r.PUBLISHED_TWICE,
        _two_stacks_publishing_one_prefix,
        r"Second/C/Published: /neuron/team/cluster/name is published by First already, and Second would declare it "
        r"again.*First and Second both publish it",
    ),
    (
        r.PUBLISHED_WRITERS,
        _write_protection_without_a_writer,
        r"write_protection\('/neuron/team'\): writers is empty.*writers=\[<the ARN of the role that deploys",
    ),
    (
        r.CACHE_ENGINE_MISMATCH,
        _s3_cache_for_vllm_neuron,
        r"Test/Task/vllm: a compile cache on S3 is given to an image of vLLM Neuron \(native route\), which does not "
        r"read NEURON_COMPILE_CACHE_URL.*Fix: give it CompileCache.in_new_file_system",
    ),
    (
        r.CACHE_WITHOUT_CLIENTS,
        _file_system_cache_without_clients,
        r"Test/Cache: clients=\[\] admits no task.*Fix: pass clients=\[\.\.\.\]",
    ),
    (
        r.HOST_MOUNTED_REMOTE_TIER,
        _instance_mount_cache_on_managed_instances,
        r"Test/Task/vllm: a compile cache on the instances' /fsx is given to a task definition compatible with "
        r"Managed Instances.*Fix: run the model on EC2 capacity",
    ),
    (
        r.ACCESS_POINT_PREFIX,
        _access_point_prefix_too_deep,
        r"Test/Fs: prefix='teams/ml/llm/cache' has 4 segments and 18 characters.*Fix: pass a prefix of at most 50",
    ),
    (r.PRECOMPILE_TARGET, _precompile_other_family, r"Test/Svc: target='inf2', but the model runs on trn2"),
    (r.PRECOMPILE_MODE, _precompile_speculative, r"Test/Svc: container 'vllm' serves with speculative decoding"),
    (r.PRECOMPILE_HOOK_TIMEOUT, _precompile_hook_shorter_than_job, r"hook_timeout=20 minutes is shorter than"),
    (r.PRECOMPILE_WITHOUT_CACHE, _precompile_without_cache, r"Test/Svc: container 'vllm' has no compile cache"),
    (r.PRECOMPILE_BEYOND_CUSTOM_RESOURCE, _precompile_beyond_custom_resource, r"timeout=2 hours on a deployment"),
    (r.PRECOMPILE_INPUT, _precompile_size_fargate_does_not_run, r"vcpus=3 is not one of Fargate's"),
    (
        r.CACHE_FILE_SYSTEM_VPC,
        _file_system_cache_in_another_vpc,
        r"Test/Service: Test/Task/vllm mounts the compile cache's file system Test/Fs, whose mount targets are in the "
        r"VPC Test/Vpc, and this service's cluster is in the VPC Test/C/Vpc.*Fix: give the service a cache on a file "
        r"system of its cluster's VPC",
    ),
    (r.VLLM_SERVER_INPUT, _server_beside_a_command, r"Test/Task/vllm: command= is given beside server="),
    (
        r.TENSOR_PARALLEL_CORES,
        _server_degree_above_the_cores,
        r"Test/Task/vllm: tensor_parallel_size=4 is more than the 2 NeuronCores the container holds",
    ),
    (r.VLLM_LORA, _lora_before_vllm_neuron_2_34, r"Test/Task/vllm: the image's vLLM Neuron is Neuron 2.33.0's"),
    (r.VLLM_SERVER_ENGINE, _server_for_a_pytorch_image, r"Test/Task/vllm: the image's engine is torch-neuronx/NxD"),
    (
        r.SCALING_WITHOUT_ENGINE_METRIC,
        _waiting_requests_without_the_sidecar,
        r"Test/Svc: the model has no engine-metrics sidecar, so no copy writes WaitingRequests",
    ),
]


@pytest.mark.parametrize(("rule", "build", "text"), CASES, ids=[f"{c[0].id}-{c[1].__name__[1:]}" for c in CASES])
def test_rule_violation_names_path_rule_and_fix(rule: r.Rule, build: Callable[[Stack], None], text: str) -> None:
    with pytest.raises((NeuronConfigurationError, RuntimeError)) as raised:
        build(new_stack())
    message = str(raised.value)
    assert f"[{rule.id}: {rule.aws_rule}]" in message
    assert re.search(r"\. \[" + rule.id + r": .*\] Fix: " + fix_pattern(rule) + "$", message, re.DOTALL), message
    assert re.search(text, message), message
    assert not UNFILLED.search(message), message


def fix_pattern(rule: r.Rule) -> str:
    """A pattern for ``rule``'s fix as a message renders it: its text, each ``{placeholder}`` any value."""
    return ".+?".join(re.escape(part) for part in re.split(r"\{\w+(?:!r)?\}", rule.fix))


UNFILLED = re.compile(r"\{!?\w*(?:![rs])?\}")
"""A placeholder left in a rendered text: ``{per_chip}``, ``{name!r}``, ``{}``."""


def _rule_calls() -> list[tuple[str, r.Rule, set[str] | None]]:
    """Every place the package renders a rule's message: ``RULE.error(...)``, ``RULE.message(...)`` and a template
    check's ``report.add(RULE, ...)``, as (place, rule, the fix values it passes; ``None`` for ``**values``)."""
    import ast
    from pathlib import Path

    import neuron_constructs

    by_name = {name: rule for name, rule in vars(r).items() if isinstance(rule, r.Rule)}
    calls: list[tuple[str, r.Rule, set[str] | None]] = []
    root = Path(neuron_constructs.__file__).parent
    for module in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            target, not_fix = (node.func.value, set()) if node.func.attr in ("error", "message") else (None, set())
            if node.func.attr == "add" and node.args:
                target, not_fix = node.args[0], {"container"}
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name in by_name:
                given = {k.arg for k in node.keywords if k.arg is not None} - not_fix
                splat = any(k.arg is None for k in node.keywords)
                calls.append((f"{module.relative_to(root)}:{node.lineno}", by_name[name], None if splat else given))
    return calls


def test_every_rule_text_has_no_placeholder_and_every_fix_only_named_ones() -> None:
    """Only the fix is filled in (Rule.message); a ``{...}`` in the title, the AWS rule or the source would be
    printed as it stands."""
    import string

    for rule in RULES:
        for text in (rule.id, rule.title, rule.aws_rule, rule.source):
            assert "{" not in text and "}" not in text, f"{rule.id}: {text}"
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(rule.fix) if name]
        assert all(name.isidentifier() and not spec and conversion in (None, "r") for name, spec, conversion in fields)


def test_every_message_the_package_renders_fills_every_placeholder_of_its_fix() -> None:
    """Read from the source: each ``RULE.error``/``RULE.message``/``report.add(RULE, ...)`` passes exactly the values
    its rule's fix names (a missing one would print ``{name}``, an extra one is meant for another rule)."""
    import string

    calls = _rule_calls()
    assert len(calls) > 150, "the calls were not found"
    assert {rule.id for _, rule, _ in calls} >= {rule.id for rule in RULES if rule.severity == "error"}
    for place, rule, given in calls:
        wanted = {name for _, name, _, _ in string.Formatter().parse(rule.fix) if name}
        assert given is None or given == wanted, f"{place}: {rule.id} takes {sorted(wanted)}, given {sorted(given)}"
        rendered = rule.message("P", "p", **dict.fromkeys(wanted, "v"))
        assert not UNFILLED.search(rendered), f"{place}: {rendered}"


def test_the_rules_page_prints_no_placeholder() -> None:
    """docs/rules.md, as generated: placeholders of fixes as ``<name>``, nothing in braces."""
    from pathlib import Path

    from neuron_constructs.tools.tables import rules_table

    table = rules_table()
    assert not re.search(r"[{}]", table)
    assert table in (Path(__file__).parent.parent / "docs" / "rules.md").read_text()


def _fleet_model(s: Stack) -> Any:
    from neuron_constructs import NeuronFleet

    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=3)
    return NeuronFleet(s, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", instances=3).add_model(
        "Embedding", devices_per_task=1, image=IMAGE
    )


def _service(s: Stack, **options: Any) -> NeuronService:
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=4)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    return NeuronService(s, "Svc", cluster=cluster, task_definition=task, **options)


@pytest.mark.parametrize(
    ("build", "text"),
    [
        (
            lambda s: _service(s, desired_count=3).scale_on_neuron_utilization(max_count=2),
            r"Test/Svc: min_count=3 \(the desired count, as min_count was not given\) is above max_count=2.*"
            r"Fix: pass min_count=2 or less, or max_count=3 or more",
        ),
        (
            lambda s: _service(s, min_healthy_percent=100, max_healthy_percent=100),
            r"Test/Svc: min_healthy_percent=100 is not below max_healthy_percent=100.*"
            r"Fix: pass min_healthy_percent=99 or less, or max_healthy_percent=101 or more",
        ),
        (
            lambda s: _fleet_model(s).auto_scale(min_count=3, max_count=1),
            r"Test/Fleet/Embedding: min_count=3 is above max_count=1",
        ),
        (
            lambda s: _fleet_model(s).scale_on_neuron_utilization(max_count=2),
            r"Test/Fleet/Embedding: min_count=3 \(the model's instances, as min_count was not given\) is above "
            r"max_count=2",
        ),
    ],
    ids=["service-default-minimum", "deployment-percents", "fleet-auto-scale", "fleet-default-minimum"],
)
def test_a_lower_bound_above_its_upper_bound_cites_its_own_rule(build: Callable[[Stack], None], text: str) -> None:
    """Not NEURON027, whose ranges are about single values: the bounds rule and a fix in the parameters' names."""
    with pytest.raises(NeuronConfigurationError) as raised:
        build(new_stack())
    message = str(raised.value)
    assert f"[{r.BOUNDS_REVERSED.id}: {r.BOUNDS_REVERSED.aws_rule}]" in message
    assert r.OUT_OF_RANGE.id not in message
    assert re.search(text, message), message


def test_every_rule_checked_at_the_call_has_a_case() -> None:
    covered = {rule.id for rule, _, _ in CASES}
    assert covered == {rule.id for rule in RULES if rule.severity == "error" and rule.at_call}


def test_a_priority_a_plain_aws_cdk_lib_rule_holds_is_refused_at_synth() -> None:
    """aws-cdk-lib accepts a second rule with a priority its listener has; ELB refuses it at deploy."""
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    s = new_stack()
    service, listener = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    service.attach_to_listener(listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=10)
    listener.add_action(
        "Maintenance",
        priority=10,
        conditions=[elbv2.ListenerCondition.path_patterns(["/maintenance"])],
        action=elbv2.ListenerAction.fixed_response(503),
    )
    with pytest.raises(RuntimeError) as raised:
        synth(s)
    message = str(raised.value)
    assert "priority 10 of Test/Lb/LoadBalancer/Listener is held by " in message
    assert "Test/Lb/LoadBalancer/Listener/MaintenanceRule" in message and "Test/Svc/TargetGroupRule" in message
    assert "[NEURON042: " in message


def test_call_time_rules_raise_the_library_error() -> None:
    with pytest.raises(NeuronConfigurationError):
        _device_out_of_range(new_stack())


# ---------------------------------------------------------------- warnings ---


def warnings_of(stack: Stack, rule: r.Rule) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(rule.id))
    return [str(message.entry.data) for message in found]


def test_non_contiguous_inf2_devices_warn_with_an_acknowledgeable_id() -> None:
    s = new_stack()
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.48xlarge", devices=[0, 2, 4], memory_mib=8192)
    found = warnings_of(s, r.DEVICE_TOPOLOGY)
    assert len(found) == 1
    assert found[0].startswith("Test/T: devices [0, 2, 4] on inf2.48xlarge (ring topology)")
    assert "devices=[0, 1, 2]" in found[0]
    assert found[0].endswith(f"[ack: Annotation::{r.DEVICE_TOPOLOGY.warning_id}]")


def test_trn1_device_count_outside_1_4_8_16_warns() -> None:
    s = new_stack()
    ManualNeuronTaskDefinition(s, "T", instance_type="trn1.32xlarge", devices=[0, 1, 2], memory_mib=8192)
    assert "devices=[0, 1, 2, 3]" in str(warnings_of(s, r.DEVICE_TOPOLOGY))


def test_acknowledged_topology_warning_is_silent() -> None:
    from aws_cdk import Acknowledgment, Validations

    s = new_stack()
    task = ManualNeuronTaskDefinition(s, "T", instance_type="trn1.32xlarge", devices=[0, 1, 2], memory_mib=8192)
    Validations.of(task).acknowledge(Acknowledgment(id=r.DEVICE_TOPOLOGY.warning_id, reason="3-way tensor parallel"))
    assert warnings_of(s, r.DEVICE_TOPOLOGY) == []


def test_topology_friendly_sets_do_not_warn() -> None:
    s = new_stack()
    ManualNeuronTaskDefinition(s, "T", instance_type="trn1.32xlarge", devices=[4, 5, 6, 7], memory_mib=8192)
    ManualNeuronTaskDefinition(s, "U", instance_type="inf2.48xlarge", devices=[3, 4, 5], memory_mib=8192)
    assert warnings_of(s, r.DEVICE_TOPOLOGY) == []


def test_small_root_volume_and_pinned_ami_warn() -> None:
    from aws_cdk import aws_ec2 as ec2

    s = new_stack()
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity(
        "Inf2",
        instance_type="inf2.xlarge",
        root_volume_gib=40,
        machine_image=ec2.MachineImage.generic_linux({"us-east-1": "ami-0123456789abcdef0"}),
    )
    assert "root_volume_gib=40" in str(warnings_of(s, r.SMALL_ROOT_VOLUME))
    assert "machine_image pins an AMI" in str(warnings_of(s, r.PINNED_AMI))


def test_a_single_interface_training_queue_in_a_public_subnet_warns() -> None:
    """One network interface gets the subnet's public address, if it maps one: a warning, not a refusal."""
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import NeuronTrainingQueue

    s = new_stack()
    vpc = ec2.Vpc(s, "V")
    NeuronTrainingQueue(s, "Queue", instance_type="trn1.2xlarge", max_nodes=1, vpc=vpc, subnet=vpc.public_subnets[0])
    assert "Test/V/PublicSubnet1" in str(warnings_of(s, r.PUBLIC_SUBNETS))


def test_a_file_system_kept_in_the_queue_s_own_vpc_warns_and_one_that_goes_or_lives_elsewhere_does_not() -> None:
    """GIVEN shared storage kept after the stack (the default) in the VPC the queue makes, THEN NEURON120 warns that
    cdk destroy cannot delete that VPC; a file system deleted with the stack, or in a VPC given with vpc=, does not."""
    from aws_cdk import RemovalPolicy

    from neuron_constructs import LustreStorage, NeuronTrainingQueue
    from neuron_constructs.base.vpc import private_vpc

    s = new_stack()
    NeuronTrainingQueue(s, "Kept", instance_type="trn1.32xlarge", max_nodes=2, storage=LustreStorage())
    (found,) = warnings_of(s, r.KEPT_FILE_SYSTEM_IN_OWN_VPC)
    assert found.startswith(
        "Test/Kept: the FSx for Lustre file system is kept after the stack (removal_policy=RemovalPolicy.RETAIN), in "
        "Test/Kept/Vpc, which the stack deletes"
    )
    assert "Fix: pass vpc= a VPC that outlives this stack" in found
    quiet = new_stack()
    gone = LustreStorage(removal_policy=RemovalPolicy.DESTROY)
    NeuronTrainingQueue(quiet, "Gone", instance_type="trn1.32xlarge", max_nodes=2, storage=gone)
    vpc = private_vpc(quiet, max_azs=1)
    kept = LustreStorage()
    NeuronTrainingQueue(quiet, "Elsewhere", instance_type="trn1.32xlarge", max_nodes=2, vpc=vpc, storage=kept)
    assert warnings_of(quiet, r.KEPT_FILE_SYSTEM_IN_OWN_VPC) == []


def test_memory_near_instance_total_warns() -> None:
    s = new_stack()
    ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", memory_mib=16000)
    assert "within 10 %" in str(warnings_of(s, r.MEMORY_NEAR_INSTANCE_TOTAL))


def test_task_definition_without_neuron_container_warns_at_synth() -> None:
    s = new_stack()
    managed(s).add_container("only-a-sidecar", image=IMAGE)
    (found,) = synth_warnings(App.of(s))  # type: ignore[arg-type]
    assert found.startswith("Test/Managed/TaskDefinition: no container has Neuron devices. [NEURON104: ")


def test_awsvpc_slices_without_eni_trunking_warn() -> None:
    s = new_stack()
    _sliced(s, network_mode=ecs.NetworkMode.AWS_VPC)
    (found,) = warnings_of(s, r.AWSVPC_WITHOUT_TRUNKING)
    assert found.startswith("Test/Sliced: 6 awsvpc tasks per inf2.48xlarge without eni_trunking")
    assert "pass eni_trunking=True" in found


def test_awsvpc_slices_with_eni_trunking_do_not_warn() -> None:
    s = new_stack()
    _sliced(s, network_mode=ecs.NetworkMode.AWS_VPC, eni_trunking=True)
    assert warnings_of(s, r.AWSVPC_WITHOUT_TRUNKING) == []


def test_host_network_warns_that_containers_reach_the_instance_role() -> None:
    s = new_stack()
    ManualNeuronTaskDefinition(
        s, "T", instance_type="inf2.xlarge", memory_mib=8192, network_mode=ecs.NetworkMode.HOST
    ).add_neuron_container("model", image=IMAGE)
    (found,) = warnings_of(s, r.HOST_NETWORK)
    assert found.startswith("Test/T: network_mode=HOST.")
    assert "neither the IMDS hop limit nor ECS_AWSVPC_BLOCK_IMDS keeps it from the instance role" in found


def test_public_capacity_subnets_warn() -> None:
    from aws_cdk import aws_ec2 as ec2

    s = new_stack()
    cluster = NeuronCluster(s, "C", capacity_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    cluster.add_managed_instances_capacity("Mi")
    found = warnings_of(s, r.PUBLIC_SUBNETS)
    assert len(found) == 2
    assert found[0].startswith("Test/C/Inf2: instances launch into public subnets ['Test/C/Vpc/PublicSubnet1'")


def test_private_capacity_subnets_do_not_warn() -> None:
    s = new_stack()
    NeuronCluster(s, "C", vpc=imported_vpc(s)).add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    assert warnings_of(s, r.PUBLIC_SUBNETS) == []


def test_secret_looking_environment_warns_at_the_call_and_after_construction() -> None:
    s = new_stack()
    task = managed(s)
    container = task.add_neuron_container("model", image=IMAGE, environment={"HF_TOKEN": "hf_abc", "MODEL": "x"})
    container.add_environment("DB_PASSWORD", "hunter2")
    (at_the_call,) = warnings_of(s, r.SECRET_IN_ENVIRONMENT)  # an acknowledgeable CDK warning
    assert at_the_call.startswith("Test/Managed/model: environment variable HF_TOKEN holds its value in plain text")
    assert "Fix: pass HF_TOKEN through secrets= (ecs.Secret.from_secrets_manager" in at_the_call
    (at_synth,) = synth_warnings(App.of(s))  # type: ignore[arg-type]  # what the template says; HF_TOKEN not twice
    assert "environment variable DB_PASSWORD holds its value in plain text. [NEURON109: " in at_synth


def test_secrets_through_secrets_do_not_warn() -> None:
    from aws_cdk import aws_secretsmanager as secretsmanager

    s = new_stack()
    token = secretsmanager.Secret(s, "Token")
    managed(s).add_neuron_container("model", image=IMAGE, secrets={"HF_TOKEN": ecs.Secret.from_secrets_manager(token)})
    assert warnings_of(s, r.SECRET_IN_ENVIRONMENT) == []
    assert synth_warnings(App.of(s)) == []  # type: ignore[arg-type]


def test_log_groups_can_use_a_customer_managed_key() -> None:
    import json

    from aws_cdk import aws_kms as kms
    from aws_cdk.assertions import Template

    s = new_stack()
    key = kms.Key(s, "Key", enable_key_rotation=True)
    NeuronCluster(s, "C", log_encryption_key=key)
    task = ManagedNeuronTaskDefinition(s, "T", cpu=1024, memory_mib=2048, log_encryption_key=key)
    task.add_neuron_container("model", image=IMAGE)
    template = Template.from_stack(s).to_json()
    groups = [r for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
    assert len(groups) == 2
    assert all(g["Properties"]["KmsKeyId"] == {"Fn::GetAtt": ["Key961B73FD", "Arn"]} for g in groups)
    (policy,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::KMS::Key"]
    statements = policy["Properties"]["KeyPolicy"]["Statement"]
    logs = [st for st in statements if st.get("Sid") == "AllowCloudWatchLogsOfThisAccount"]
    assert len(logs) == 1  # once per key, however many log groups use it
    assert "kms:EncryptionContext:aws:logs:arn" in json.dumps(logs[0]["Condition"])


@pytest.mark.parametrize(("desired", "maximum", "minimum"), [(1, 100, 0), (3, 100, 66), (1, 150, 0), (4, 150, 100)])
def test_default_minimum_leaves_a_deployment_room_under_any_maximum(desired: int, maximum: int, minimum: int) -> None:
    """ECS rounds the minimum up and the maximum down: the default minimum lets one task stop whenever the maximum
    lets none start (NEURON040), and stays 100 % (ECS's default) otherwise."""
    from aws_cdk.assertions import Template

    s = new_stack()
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=desired + 1)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", cpu=1024, memory_mib=2048)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(s, "Svc", cluster=cluster, task_definition=task, desired_count=desired, max_healthy_percent=maximum)
    (service,) = Template.from_stack(s).find_resources("AWS::ECS::Service").values()
    configuration = service["Properties"]["DeploymentConfiguration"]
    assert (configuration["MinimumHealthyPercent"], configuration["MaximumPercent"]) == (minimum, maximum)
    assert not inputs.deployment_stalls(desired, minimum, maximum)


@pytest.mark.parametrize("value", ["0", "abc", "-1", "5"])
def test_a_slice_takes_from_one_core_to_all_of_its_cores(value: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=rf"NEURON_RT_NUM_CORES={value} but a slice holds 4 NeuronCores"):
        inputs.check_slice_environment("S/Sliced", {"NEURON_RT_NUM_CORES": value}, 4)
    inputs.check_slice_environment("S/Sliced", {"NEURON_RT_NUM_CORES": "4"}, 4)


def test_a_short_grace_period_on_a_load_balanced_service_warns() -> None:
    from aws_cdk import Duration

    s = new_stack()
    cluster = NeuronCluster(s, "C", vpc=imported_vpc(s))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(s, "T", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    quick = NeuronService(
        s, "Quick", cluster=cluster, task_definition=task, health_check_grace_period=Duration.minutes(2)
    )
    from neuron_constructs import NeuronLoadBalancer

    quick.attach_to_listener(NeuronLoadBalancer(s, "Lb", cluster=cluster).listener)
    (found,) = warnings_of(s, r.SHORT_GRACE_PERIOD)
    assert found.startswith("Test/Quick: health_check_grace_period is 2 minutes. [NEURON111:")
    assert found.endswith(f"[ack: Annotation::{r.SHORT_GRACE_PERIOD.warning_id}]")


def test_the_default_grace_period_does_not_warn() -> None:
    s = new_stack()
    service, listener = _served(s, port_mappings=[ecs.PortMapping(container_port=8080)])
    service.attach_to_listener(listener)
    assert service.health_check_grace_period.to_seconds() == 1800
    assert warnings_of(s, r.SHORT_GRACE_PERIOD) == []


def test_a_deployment_that_stops_every_replica_warns() -> None:
    s = new_stack()
    _manual_service(s, desired_count=1, max_capacity=1)
    (found,) = warnings_of(s, r.EVERY_REPLICA_STOPS)
    assert found.startswith("Test/Svc: desired_count=1 deploys with min_healthy_percent=0. [NEURON112:")
    assert "max_capacity above the tasks it runs" in found


def test_a_service_with_a_spare_instance_or_slices_in_waves_does_not_warn() -> None:
    s = new_stack()
    _manual_service(s, desired_count=1, max_capacity=2)
    assert warnings_of(s, r.EVERY_REPLICA_STOPS) == []
    s = new_stack()
    _sliced(s, max_capacity=1)  # one instance, min 0 %: the slices deploy in two waves
    assert warnings_of(s, r.EVERY_REPLICA_STOPS) == []
