"""The one place the library writes CloudFormation that aws-cdk-lib's L2s cannot.

aws-cdk-lib 2.275 renders only ``GPU`` and ``InferenceAccelerator`` container
resource requirements, so the ``NeuronDevice`` requirement of managed Neuron
device allocation is written here as a property override on the task
definition's ``AWS::ECS::TaskDefinition``.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from aws_cdk import CfnResource
from aws_cdk import aws_ecs as ecs

__all__ = [
    "NEURON_DEVICE_REQUIREMENT",
    "container_index",
    "neuron_device_containers",
    "require_all_neuron_devices",
]

_REQUESTED: WeakKeyDictionary[ecs.TaskDefinition, list[str]] = WeakKeyDictionary()

NEURON_DEVICE_REQUIREMENT = {"Type": "NeuronDevice", "Value": "ALL"}
"""ECS managed Neuron device allocation: the container gets every device of its instance."""


def container_index(task_definition: ecs.TaskDefinition, container: ecs.ContainerDefinition) -> int:
    """Position of ``container`` in the rendered ``ContainerDefinitions``.

    The L2 renders containers in the order they were created, which is their
    order among the task definition's children.
    """
    containers = [c for c in task_definition.node.children if isinstance(c, ecs.ContainerDefinition)]
    paths = [c.node.path for c in containers]
    return paths.index(container.node.path)


def require_all_neuron_devices(task_definition: ecs.TaskDefinition, container: ecs.ContainerDefinition) -> None:
    """Give ``container`` ``resourceRequirements: [{type: NeuronDevice, value: ALL}]``."""
    resource = task_definition.node.default_child
    assert isinstance(resource, CfnResource)
    index = container_index(task_definition, container)
    resource.add_property_override(f"ContainerDefinitions.{index}.ResourceRequirements", [NEURON_DEVICE_REQUIREMENT])
    _REQUESTED.setdefault(task_definition, []).append(container.container_name)


def neuron_device_containers(task_definition: ecs.TaskDefinition) -> tuple[str, ...]:
    """Names of the containers given ``NeuronDevice = ALL`` here, in order."""
    return tuple(_REQUESTED.get(task_definition, ()))
