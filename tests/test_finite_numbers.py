"""Non-finite numbers: ``float('nan')`` and the infinities are refused wherever the library takes a number.

JSON has no spelling for NaN or an infinity; a value passed on to the CDK's JavaScript runtime as one breaks the
process's connection to it (a ``JSONDecodeError``, then a broken pipe for every later construct). Each row of the
table is a public constructor or method and one numeric parameter of it; each is called with NaN, +inf and -inf and
must answer with a ``NeuronConfigurationError`` naming the parameter - and the process keeps building constructs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from conftest import imported_vpc

from neuron_constructs import (
    AmiRollout,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    ModelArtifacts,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    NeuronTrainingQueue,
    SlicedNeuronService,
    WarmPool,
)

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
NOT_FINITE = [float("nan"), float("inf"), float("-inf")]


def _stack() -> Stack:
    return Stack(App(analytics_reporting=False), "Numbers")


def _cluster() -> NeuronCluster:
    stack = _stack()
    return NeuronCluster(stack, "C", vpc=imported_vpc(stack))


def _service(**kwargs: Any) -> NeuronService:
    cluster = _cluster()
    stack = Stack.of(cluster)
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", max_capacity=4)
    return NeuronService(stack, "S", cluster=cluster, task_definition=task, **kwargs)


def _fleet() -> NeuronFleet:
    cluster = _cluster()
    cluster.add_ec2_capacity("N", instance_type="inf2.48xlarge")
    return NeuronFleet(Stack.of(cluster), "F", cluster=cluster, instance_type="inf2.48xlarge")


def _models(stack: Stack, value: float) -> ModelArtifacts:
    return ModelArtifacts(s3.Bucket.from_bucket_name(stack, "Models", "team-models"), "llama", size_gib=value)


CALLS: list[tuple[str, str, Callable[[float], object]]] = [
    (
        "NeuronCluster.add_ec2_capacity",
        "min_capacity",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="inf2.xlarge", min_capacity=v),
    ),  # type: ignore[arg-type]
    (
        "NeuronCluster.add_ec2_capacity",
        "max_capacity",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="inf2.xlarge", max_capacity=v),
    ),  # type: ignore[arg-type]
    (
        "NeuronCluster.add_ec2_capacity",
        "root_volume_gib",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="inf2.xlarge", root_volume_gib=v),  # type: ignore[arg-type]
    ),
    (
        "NeuronCluster.add_ec2_capacity",
        "lnc",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="trn2.48xlarge", lnc=v),
    ),  # type: ignore[arg-type]
    (
        "NeuronCluster.add_non_neuron_capacity",
        "max_capacity",
        lambda v: _cluster().add_non_neuron_capacity("N", instance_type="m7i.large", max_capacity=v),  # type: ignore[arg-type]
    ),
    (
        "NeuronCluster.add_managed_instances_capacity",
        "task_volume_gib",
        lambda v: _cluster().add_managed_instances_capacity("M", task_volume_gib=v),  # type: ignore[arg-type]
    ),
    (
        "NeuronCluster.add_managed_instances_capacity",
        "scale_in_after",
        lambda v: _cluster().add_managed_instances_capacity("M", scale_in_after=v),  # type: ignore[arg-type]
    ),
    (
        "WarmPool",
        "min_size",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=WarmPool(min_size=v)),
    ),  # type: ignore[arg-type]
    (
        "WarmPool",
        "max_prepared",
        lambda v: _cluster().add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=WarmPool(max_prepared=v)),  # type: ignore[arg-type]
    ),
    (
        "AmiRollout",
        "instances_at_a_time",
        lambda v: _cluster().add_ec2_capacity(
            "N", instance_type="inf2.xlarge", ami_rollout=AmiRollout(instances_at_a_time=v)
        ),  # type: ignore[arg-type]
    ),
    (
        "NeuronCluster.from_published",
        "zones",
        lambda v: NeuronCluster.from_published(_stack(), "P", prefix="/n/t", zones=v),
    ),  # type: ignore[arg-type]
    ("ModelArtifacts", "size_gib", lambda v: _models(_stack(), v)),
    (
        "ManualNeuronTaskDefinition",
        "memory_mib",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge", memory_mib=v),  # type: ignore[arg-type]
    ),
    (
        "ManualNeuronTaskDefinition",
        "cpu",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge", cpu=v),  # type: ignore[arg-type]
    ),
    (
        "ManualNeuronTaskDefinition",
        "devices",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge", devices=[0, v]),  # type: ignore[list-item]
    ),
    (
        "ManualNeuronTaskDefinition.add_neuron_container",
        "image_size_gib",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge").add_neuron_container(
            "model", image=IMAGE, image_size_gib=v
        ),
    ),
    (
        "ManualNeuronTaskDefinition.add_neuron_container",
        "memory_limit_mib",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge").add_neuron_container(
            "model",
            image=IMAGE,
            memory_limit_mib=v,  # type: ignore[call-arg]
        ),
    ),
    (
        "ManagedNeuronTaskDefinition",
        "memory_mib",
        lambda v: ManagedNeuronTaskDefinition(_stack(), "T", cpu=1024, memory_mib=v),  # type: ignore[arg-type]
    ),
    (
        "ManualNeuronTaskDefinition.add_container",
        "image_size_gib",
        lambda v: ManualNeuronTaskDefinition(_stack(), "T", instance_type="inf2.xlarge").add_container(
            "side", image=IMAGE, image_size_gib=v
        ),
    ),
    ("NeuronService", "desired_count", lambda v: _service(desired_count=v)),
    ("NeuronService", "min_healthy_percent", lambda v: _service(min_healthy_percent=v)),
    ("NeuronService", "max_healthy_percent", lambda v: _service(max_healthy_percent=v)),
    (
        "NeuronService.scale_on_requests",
        "requests_per_target",
        lambda v: _service().scale_on_requests(requests_per_target=v, max_count=2),
    ),  # type: ignore[arg-type]
    (
        "NeuronService.scale_on_neuron_utilization",
        "max_count",
        lambda v: _service().scale_on_neuron_utilization(max_count=v),
    ),  # type: ignore[arg-type]
    (
        "NeuronService.track_neuron_utilization",
        "target_percent",
        lambda v: (service := _service()).track_neuron_utilization(
            service.service.auto_scale_task_count(max_capacity=2), v, Duration.minutes(1), Duration.minutes(1)
        ),
    ),  # type: ignore[arg-type]
    ("NeuronService.adopt_scalable_target", "min_count", lambda v: _service().adopt_scalable_target(v, 2)),  # type: ignore[arg-type]
    ("NeuronService.adopt_scalable_target", "max_count", lambda v: _service().adopt_scalable_target(1, v)),  # type: ignore[arg-type]
    ("NeuronService.lower_min_healthy_percent", "percent", lambda v: _service().lower_min_healthy_percent(v)),  # type: ignore[arg-type]
    (
        "ManualNeuronTaskDefinition.add_neuron_container",
        "port_mappings",
        lambda v: ManualNeuronTaskDefinition(
            _stack(), "T", instance_type="inf2.xlarge", memory_mib=8192
        ).add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=v)]),  # type: ignore[arg-type]
    ),
    (
        "ManualNeuronTaskDefinition.add_neuron_container",
        "health_check",
        lambda v: ManualNeuronTaskDefinition(
            _stack(), "T", instance_type="inf2.xlarge", memory_mib=8192
        ).add_neuron_container("model", image=IMAGE, health_check=ecs.HealthCheck(command=["true"], retries=v)),  # type: ignore[arg-type]
    ),
    (
        "NeuronFleet",
        "instances",
        lambda v: NeuronFleet(_stack(), "F", cluster=_cluster(), instance_type="inf2.xlarge", instances=v),
    ),  # type: ignore[arg-type]
    ("NeuronFleet.add_model", "copies", lambda v: _fleet().add_model("m", image=IMAGE, devices_per_task=1, copies=v)),  # type: ignore[arg-type]
    (
        "SlicedNeuronService",
        "devices_per_task",
        lambda v: SlicedNeuronService(
            _stack(),
            "S",
            cluster=_cluster(),
            instance_type="inf2.48xlarge",
            image=IMAGE,
            devices_per_task=v,  # type: ignore[arg-type]
        ),
    ),
    ("NeuronLoadBalancer", "port", lambda v: NeuronLoadBalancer(_stack(), "L", cluster=_cluster(), port=v)),  # type: ignore[arg-type]
    (
        "NeuronMonitoring",
        "drain_percent",
        lambda v: NeuronMonitoring(_stack(), "M", cluster=_cluster(), drain_percent=v),
    ),
    (
        "NeuronTrainingQueue",
        "max_nodes",
        lambda v: NeuronTrainingQueue(_stack(), "Q", instance_type="trn1.32xlarge", max_nodes=v),
    ),  # type: ignore[arg-type]
]


CASES = [(*row, float("nan")) for row in CALLS] + [(*row, value) for row in CALLS[:3] for value in NOT_FINITE[1:]]
"""Every call with NaN; the infinities, which the same check refuses (``math.isfinite``,
:func:`test_the_check_finds_every_non_finite_number_wherever_it_sits`), on the first rows."""


@pytest.mark.parametrize(("call", "name", "build", "value"), CASES, ids=[f"{c}-{n}-{v}" for c, n, _, v in CASES])
def test_a_non_finite_number_is_refused_naming_the_parameter_and_the_runtime_keeps_working(
    call: str, name: str, build: Callable[[float], object], value: float
) -> None:
    """GIVEN a public call that takes a number, WHEN it is given NaN or an infinity, THEN it is refused with the
    parameter named, before the CDK's runtime sees it, AND the next construct of the process still builds."""
    with pytest.raises(NeuronConfigurationError, match=rf"{name}\b.*(NEURON02[67]|NEURON087|NEURON004)"):
        build(value)
    after = _stack()
    s3.Bucket(after, "Still", enforce_ssl=True)
    assert after.resolve(Duration.seconds(90).to_seconds()) == 90


def test_a_float_parameter_s_declared_range_holds_for_floats_too() -> None:
    """GIVEN drain_percent, a float from 1 to 100, WHEN it is 150.0, THEN it is refused like 150 (NEURON027)."""
    with pytest.raises(NeuronConfigurationError, match=r"drain_percent=150.0 is above the maximum of 100.*NEURON027"):
        NeuronMonitoring(_stack(), "M", cluster=_cluster(), drain_percent=150.0)


@pytest.mark.parametrize("value", NOT_FINITE, ids=["nan", "inf", "-inf"])
def test_the_check_finds_every_non_finite_number_wherever_it_sits(value: float) -> None:
    """GIVEN NaN or an infinity alone, in a list or in a dict WHEN checked THEN each is refused naming where it is;
    finite numbers, and containers of them, pass."""
    from neuron_constructs.base.arguments import check_value

    for given, where in ((value, "size"), ([1.0, value], r"size\[1\]"), ({"a": value}, r"size\['a'\]")):
        with pytest.raises(NeuronConfigurationError, match=rf"{where}=.*NEURON026"):
            check_value("Numbers/S", "size", given, Any)
    for finite in (1.5, [1.0, 2.0], {"a": 0.5}):
        check_value("Numbers/S", "size", finite, Any)
