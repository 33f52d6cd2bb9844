"""A Neuron ECS cluster inside moto, for the inspection tests and the benchmark.

moto (5.2) does not model Neuron devices: container instances register no ``NEURON_DEVICES``
resource and task containers report no ``neuronDeviceIds``. :func:`build_fleet` therefore
writes both into moto's backend objects directly, after creating everything else through the
API (EC2 instances, the cluster, container instances, task definitions, tasks). Call it inside
``moto.mock_aws()`` or in the process that runs a ``ThreadedMotoServer``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.knowledge.catalog import NeuronInstanceType


@dataclass(frozen=True)
class TaskSpec:
    """Tasks of one task definition, started on the given container instances (by position).

    ``managed_device_ids``: the ``neuronDeviceIds`` ECS would report per started task (managed
    allocation); ``mapped_devices``: the ``/dev/neuronN`` indices the task definition maps (manual);
    ``visible_cores``: its container's ``NEURON_RT_VISIBLE_CORES``, if any; ``model``: its ``NEURON_PROCESS_TAG``.
    """

    family: str
    on_instances: Sequence[int]
    managed_device_ids: Sequence[Sequence[int]] = ()
    mapped_devices: Sequence[int] = ()
    visible_cores: str | None = None
    model: str | None = None


@dataclass
class Fleet:
    cluster: str
    container_instance_arns: list[str]
    ec2_instance_ids: list[str]
    task_arns: list[str] = field(default_factory=list)


IMAGE_ID = "ami-0123456789abcdef0"
"""The image the instances run: moto checks no image id unless ``MOTO_ENABLE_AMI_VALIDATION`` is set, so the tests
turn off its default images (``MOTO_EC2_LOAD_DEFAULT_AMIS=false``), which it would otherwise build for every mock."""


def _neuron_resource(devices: Sequence[int]) -> dict[str, Any]:
    return {
        "name": "NEURON_DEVICES",
        "type": "STRINGSET",
        "doubleValue": 0.0,
        "integerValue": 0,
        "longValue": 0,
        "stringSetValue": [str(i) for i in devices],
    }


def build_fleet(
    session: Any,
    *,
    cluster: str,
    instance_types: Sequence[str],
    tasks: Sequence[TaskSpec] = (),
    registered: Sequence[Sequence[int] | None] | None = None,
    region: str = "us-east-1",
    endpoint_url: str | None = None,
) -> Fleet:
    """A cluster with one container instance per ``instance_types`` entry, and ``tasks`` on them.

    Each instance registers all the devices of its catalog type unless ``registered`` gives
    its own list (``None``: no ``NEURON_DEVICES`` at all). Remaining devices are the registered
    ones minus the managed allocations, as ECS computes them.
    """
    ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
    ecs = session.client("ecs", region_name=region, endpoint_url=endpoint_url)
    ecs.create_cluster(clusterName=cluster)
    image_id = IMAGE_ID
    ec2_ids: list[str] = []
    for instance_type in dict.fromkeys(instance_types):
        count = sum(1 for t in instance_types if t == instance_type)
        for start in range(0, count, 1000):
            n = min(1000, count - start)
            reservation = ec2.run_instances(ImageId=image_id, InstanceType=instance_type, MinCount=n, MaxCount=n)
            ec2_ids += [i["InstanceId"] for i in reservation["Instances"]]
    by_type: dict[str, list[str]] = {}
    for instance_id, described in zip(ec2_ids, _instance_types(ec2, ec2_ids), strict=True):
        by_type.setdefault(described, []).append(instance_id)
    ordered_ids = [by_type[t].pop(0) for t in instance_types]

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ecs.models import ecs_backends

    backend = ecs_backends[DEFAULT_ACCOUNT_ID][region]
    arns: list[str] = []
    for position, instance_id in enumerate(ordered_ids):
        document = json.dumps({"instanceId": instance_id})
        arn = ecs.register_container_instance(cluster=cluster, instanceIdentityDocument=document)["containerInstance"][
            "containerInstanceArn"
        ]
        arns.append(arn)
        devices = (
            list(range(NeuronInstanceType.of(instance_types[position]).chips))
            if registered is None
            else registered[position]
        )
        instance = backend.container_instances[cluster][arn.rsplit("/", 1)[-1]]
        if devices is not None:
            instance.registered_resources.append(_neuron_resource(devices))
            instance.remaining_resources.append(_neuron_resource(devices))

    fleet = Fleet(cluster=cluster, container_instance_arns=arns, ec2_instance_ids=ordered_ids)
    for spec in tasks:
        container: dict[str, Any] = {"name": "model", "image": "public.ecr.aws/neuron/serving:1", "memory": 1024}
        if spec.mapped_devices:
            container["linuxParameters"] = {
                "devices": [
                    {
                        "hostPath": f"/dev/neuron{i}",
                        "containerPath": f"/dev/neuron{i}",
                        "permissions": ["read", "write"],
                    }
                    for i in spec.mapped_devices
                ]
            }
        elif spec.managed_device_ids:
            container["resourceRequirements"] = [{"type": "NeuronDevice", "value": "ALL"}]
        environment = {"NEURON_RT_VISIBLE_CORES": spec.visible_cores, "NEURON_PROCESS_TAG": spec.model}
        if any(v is not None for v in environment.values()):
            container["environment"] = [{"name": k, "value": v} for k, v in environment.items() if v is not None]
        definition = ecs.register_task_definition(family=spec.family, containerDefinitions=[container])
        definition_arn = definition["taskDefinition"]["taskDefinitionArn"]
        started = backend.start_task(cluster, definition_arn, [arns[i] for i in spec.on_instances], {}, "")
        for n, task in enumerate(started):
            fleet.task_arns.append(task.task_arn)
            if spec.managed_device_ids:
                ids = spec.managed_device_ids[n % len(spec.managed_device_ids)]
                task.containers[0].neuron_device_ids = [str(i) for i in ids]
                instance = backend.container_instances[cluster][task.container_instance_arn.rsplit("/", 1)[-1]]
                remaining = next(r for r in instance.remaining_resources if r["name"] == "NEURON_DEVICES")
                remaining["stringSetValue"] = [d for d in remaining["stringSetValue"] if int(d) not in ids]
    return fleet


def _instance_types(ec2: Any, instance_ids: list[str]) -> list[str]:
    types: dict[str, str] = {}
    for start in range(0, len(instance_ids), 1000):
        batch = instance_ids[start : start + 1000]
        for reservation in ec2.describe_instances(InstanceIds=batch)["Reservations"]:
            for instance in reservation["Instances"]:
                types[instance["InstanceId"]] = instance["InstanceType"]
    return [types[i] for i in instance_ids]
