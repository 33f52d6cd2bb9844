"""Auto Scaling capacity of a Neuron type: group bounds, the ECS Neuron AMI and the root volume (its size, and its
room for what a warm pool's warm-up fetches)."""

from __future__ import annotations

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    in_properties,
    neuron_launch_templates,
)
from neuron_constructs.checks.template_values import whole_number
from neuron_constructs.checks.warm_up import capacity_fetches, capacity_launch_template, warm_up_groups
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.ami import NEURON_AMI_PARAMETERS, STANDARD_ECS_AMI_PARAMETERS
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rules import Rule
from neuron_constructs.knowledge.warm_start import root_volume_room


def _check_group_bounds(t: EcsTemplate, out: TemplateReport) -> None:
    for logical_id, group in t.groups.items():
        types = t.group_instance_types(group)
        if not types or not all(NeuronInstanceType.find(n) for n in types):
            continue
        bounds = t.properties(group)
        low, high = whole_number(bounds.get("MinSize")), whole_number(bounds.get("MaxSize"))
        if low is not None and high is not None and (low < 0 or high < 1 or low > high):
            out.add(r.CAPACITY_SIZE, logical_id, in_properties("MaxSize"), f"MinSize {low}, MaxSize {high}")


def _check_neuron_ami(t: EcsTemplate, out: TemplateReport) -> None:
    for logical_id, instance in neuron_launch_templates(t):
        parameter = t.launch_templates[logical_id].image_parameter
        if parameter and STANDARD_ECS_AMI_PARAMETERS.match(parameter) and not NEURON_AMI_PARAMETERS.match(parameter):
            out.add(
                r.NEURON_TYPE_WITHOUT_NEURON_AMI,
                logical_id,
                in_properties("LaunchTemplateData", "ImageId"),
                f"{instance.name} boots the standard ECS AMI from {parameter}",
                instance_type=instance.name,
            )


def _check_root_volume(t: EcsTemplate, out: TemplateReport) -> None:
    for logical_id, _instance in neuron_launch_templates(t):
        size = t.launch_templates[logical_id].root_volume_gib
        if size is not None and size < 100:
            out.add(
                r.SMALL_ROOT_VOLUME,
                logical_id,
                in_properties("LaunchTemplateData", "BlockDeviceMappings"),
                f"root volume of {size} GiB",
            )


def _check_pinned_ami(t: EcsTemplate, out: TemplateReport) -> None:
    for logical_id, instance in neuron_launch_templates(t):
        template = t.launch_templates[logical_id]
        parameter = template.image_parameter
        if parameter and NEURON_AMI_PARAMETERS.match(parameter):
            continue
        if parameter and STANDARD_ECS_AMI_PARAMETERS.match(parameter):
            continue  # NEURON030
        if template.image_literal or parameter:
            out.add(
                r.PINNED_AMI,
                logical_id,
                in_properties("LaunchTemplateData", "ImageId"),
                f"{instance.name} boots {template.image_literal or parameter}",
            )


def _check_warm_up_room(t: EcsTemplate, out: TemplateReport) -> None:
    groups = warm_up_groups(t)
    for capacity in t.capacities.values():
        if capacity.group not in groups:
            continue
        launch_template = capacity_launch_template(t, capacity)
        if launch_template is None or launch_template.root_volume_gib is None:
            continue
        room = root_volume_room(launch_template.root_volume_gib, capacity_fetches(t, capacity, warm_up=True))
        if not room.fits:
            out.add(
                r.WARM_UP_ROOM,
                launch_template.logical_id,
                in_properties("LaunchTemplateData", "BlockDeviceMappings"),
                f"the warm-up fills {room.describe()}",
                needed=room.needed_gib,
            )


CHECKS: dict[Rule, Check] = {
    r.CAPACITY_SIZE: _check_group_bounds,
    r.NEURON_TYPE_WITHOUT_NEURON_AMI: _check_neuron_ami,
    r.SMALL_ROOT_VOLUME: _check_root_volume,
    r.PINNED_AMI: _check_pinned_ami,
    r.WARM_UP_ROOM: _check_warm_up_room,
}
"""This area's check of each rule."""
