"""What ``NeuronCluster``'s ``add_*_capacity`` methods check and resolve in their arguments before they build a
capacity: the bounds of their numbers, the instance type, the machine image and its AMI rollout, and the warnings
about the image."""

from __future__ import annotations

from typing import Literal, NamedTuple

from aws_cdk import Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from neuron_constructs.base.arguments import COUNT, MANAGED_INSTANCES_STORAGE_GIB, ROOT_VOLUME_GIB
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.ami_rollout import AmiRollout
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NEURON_AMI_PARAMETERS as NEURON_ECS_AMI
from neuron_constructs.knowledge.ami import STANDARD_ECS_AMI_PARAMETERS as STANDARD_ECS_AMI
from neuron_constructs.knowledge.ami import NeuronAmi
from neuron_constructs.knowledge.catalog import (
    NeuronInstanceType,
    closest_instance_types,
    ec2_instance_types,
    instance_type_at,
)

__all__ = ["CAPACITY_RANGES", "NeuronImage", "neuron_image", "non_neuron_type", "warn_about_image"]

CAPACITY_RANGES = {
    "min_capacity": COUNT,
    "max_capacity": COUNT,
    "root_volume_gib": ROOT_VOLUME_GIB,
    "task_volume_gib": MANAGED_INSTANCES_STORAGE_GIB,
}
"""The bounds of the numbers the ``add_*_capacity`` methods take."""


def _check_machine_image(capacity: Construct, neuron: NeuronInstanceType, image: ec2.IMachineImage) -> None:
    """NEURON105: a warning unless the image resolves the recommended Neuron AMI's parameter at launch."""
    parameter = getattr(image, "parameter_name", None)
    if isinstance(parameter, str) and NEURON_ECS_AMI.match(parameter):
        return
    what = f"machine_image resolves {parameter}" if isinstance(parameter, str) else "machine_image pins an AMI"
    Validations.of(capacity).add_warning(
        rules.PINNED_AMI.warning_id, rules.PINNED_AMI.message(construct_path(capacity), f"{what} for {neuron.name}")
    )


def _warn_recommended_ami(capacity: AutoScalingCapacity, rollout: AmiRollout | None) -> None:
    """NEURON125: the capacity resolves the recommended Neuron AMI at every deploy."""
    if rollout is None:
        what = (
            "launches the recommended Neuron AMI, resolved at every deploy: after AWS publishes a new one, the next "
            "deploy makes a new launch template version, instances launched after it run the new AMI and its Neuron "
            "driver, and the running ones keep the old"
        )
    else:
        what = (
            f"launches the recommended Neuron AMI, resolved at every deploy, with {rollout.describe()}: the first "
            "deploy after AWS publishes a new AMI replaces every instance of the group"
        )
    Validations.of(capacity).add_warning(
        rules.RECOMMENDED_AMI.warning_id, rules.RECOMMENDED_AMI.message(construct_path(capacity), what)
    )


def _ami_rollout(ami: NeuronAmi | None, rollout: AmiRollout | Literal[False] | None) -> AmiRollout | None:
    """The rollout of a capacity: ``rollout`` as passed, ``AmiRollout()`` by default for a pinned release."""
    if rollout is False:
        return None
    if rollout is None:
        return AmiRollout() if ami is not None and ami.pinned else None
    return rollout


class NeuronImage(NamedTuple):
    """What ``add_ec2_capacity`` launches: the Neuron type, the Neuron AMI (``None`` for another machine image), the
    machine image and the AMI rollout."""

    neuron: NeuronInstanceType
    ami: NeuronAmi | None
    image: ec2.IMachineImage
    rollout: AmiRollout | None


def neuron_image(
    path: str,
    instance_type: str | NeuronInstanceType,
    machine_image: ec2.IMachineImage | NeuronAmi | None,
    ami_rollout: AmiRollout | Literal[False] | None,
) -> NeuronImage:
    """The Neuron type (NEURON001), the machine image (the standard ECS AMI is refused, NEURON030) and the AMI
    rollout of ``add_ec2_capacity``'s arguments."""
    neuron = instance_type_at(path, instance_type)
    parameter = getattr(machine_image, "parameter_name", None)
    if isinstance(parameter, str) and STANDARD_ECS_AMI.match(parameter) and not NEURON_ECS_AMI.match(parameter):
        raise rules.NEURON_TYPE_WITHOUT_NEURON_AMI.error(
            path, f"machine_image resolves {parameter}, the standard ECS AMI", instance_type=neuron.name
        )
    ami: NeuronAmi | None = None
    image: ec2.IMachineImage
    if isinstance(machine_image, NeuronAmi) or machine_image is None:
        ami = machine_image or NeuronAmi.recommended()
        image = (
            ec2.MachineImage.from_ssm_parameter(ami.parameter_name)
            if ami.pinned
            else ecs.EcsOptimizedImage.amazon_linux2023(ecs.AmiHardwareType.NEURON)
        )
    else:
        image = machine_image
    rollout = _ami_rollout(ami, ami_rollout)
    return NeuronImage(neuron, ami, image, rollout)


def warn_about_image(capacity: AutoScalingCapacity, chosen: NeuronImage) -> None:
    """NEURON105 for a machine image that is no Neuron AMI parameter, NEURON125 for the recommended Neuron AMI."""
    if chosen.ami is None:
        _check_machine_image(capacity, chosen.neuron, chosen.image)
    elif not chosen.ami.pinned:
        _warn_recommended_ami(capacity, chosen.rollout)


def non_neuron_type(path: str, instance_type: str | NeuronInstanceType) -> str:
    """``add_non_neuron_capacity``'s instance type: a Neuron type is refused (NEURON030), and so is a type the EC2
    API does not list (NEURON031)."""
    if isinstance(instance_type, NeuronInstanceType):
        instance_type = instance_type.name
    neuron = NeuronInstanceType.find(instance_type)
    if neuron is not None:
        raise rules.NEURON_TYPE_WITHOUT_NEURON_AMI.error(
            path, f"{instance_type!r} is a Neuron type on the standard ECS AMI", instance_type=neuron.name
        )
    known = ec2_instance_types()
    if instance_type not in known:
        raise rules.UNKNOWN_EC2_TYPE.error(
            path,
            f"EC2 has no instance type {instance_type!r}",
            closest=", ".join(closest_instance_types(instance_type, names=sorted(known))),
        )
    return instance_type
