"""What a new instance of a capacity fetches, read from a template, with the sizes the task definitions state.

The constructs record a stated image size (``image_size_gib=``) and model artifact size (``ModelArtifacts(size_gib=)``)
in the task definition's metadata (``imageSizesGiB`` and ``artifactSizesGiB`` by container name, under
:data:`~neuron_constructs.checks.cfn_template.INTENT_METADATA_KEY`), so ``neuron-ecs plan --fetches`` and the
template check of NEURON091 see what the synth-time check saw. No AWS CDK import here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from neuron_constructs.checks.cfn_template import Capacity, EcsTemplate, LaunchTemplate
from neuron_constructs.checks.template_values import ref_target
from neuron_constructs.knowledge.warm_start import LIFECYCLE_HOOK_NAME, Fetched

__all__ = ["capacity_fetches", "capacity_launch_template", "plain", "warm_up_groups"]

_SYNC = ("s3", "sync")
_MOST_CONTAINERS = 64


def plain(value: Any) -> str:
    """A template value as text: a string as it is, anything else ``<computed>``."""
    return value if isinstance(value, str) else "<computed>"


def _sizes(intent: Mapping[str, Any], key: str) -> dict[str, float]:
    found = intent.get(key)
    if not isinstance(found, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in list(found.items())[:_MOST_CONTAINERS]
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    }


def _artifact_url(container: Mapping[str, Any], show: Callable[[Any], str]) -> str | None:
    """The S3 URL a model-artifact sync container (``command: s3 sync ... s3://... PATH``) copies, else ``None``."""
    command = container.get("Command")
    if not isinstance(command, list) or tuple(command[:2]) != _SYNC:
        return None
    for argument in command[2:16]:
        text = show(argument)
        if text.startswith("s3://"):
            return text
    return None


def capacity_fetches(
    t: EcsTemplate, capacity: Capacity, show: Callable[[Any], str] = plain, *, warm_up: bool = False
) -> list[Fetched]:
    """Every image and model artifact prefix the services that land on ``capacity`` fetch, in template order (repeats
    kept: :func:`~neuron_constructs.knowledge.warm_start.root_volume_room` merges them), each with the size its task
    definition states; ``show`` writes a template value as text. ``warm_up``: only what the warm-up fetches, as the
    constructs wrote it: the services of the capacity's own template, and images named by a literal reference."""
    fetched: list[Fetched] = []
    home = t.origin.get(capacity.logical_id, ("", ""))[0]
    for service in t.services.values():
        if service.task_definition is None or not t.lands_on(service, capacity):
            continue
        if warm_up and t.origin.get(service.logical_id, ("", ""))[0] != home:
            continue
        resource = t.resources.get(service.task_definition, {})
        task = t.task_definitions.get(service.task_definition)
        intent = task.intent if task is not None else {}
        images, artifacts = _sizes(intent, "imageSizesGiB"), _sizes(intent, "artifactSizesGiB")
        containers = t.properties(resource).get("ContainerDefinitions")
        for container in containers[:_MOST_CONTAINERS] if isinstance(containers, list) else []:
            if not isinstance(container, dict):
                continue
            name = container.get("Name")
            name = name if isinstance(name, str) else ""
            image = container.get("Image")
            if not warm_up or isinstance(image, str):
                fetched.append(Fetched(show(image), "image", images.get(name)))
            url = _artifact_url(container, show)
            if url is not None:
                fetched.append(Fetched(url, "artifacts", artifacts.get(name)))
    return fetched


def warm_up_groups(t: EcsTemplate) -> set[str]:
    """Logical ids of the Auto Scaling groups whose instances run the warm-up (its launching lifecycle hook)."""
    groups: set[str] = set()
    for resource in t.resources.values():
        if resource.get("Type") != "AWS::AutoScaling::LifecycleHook":
            continue
        properties = t.properties(resource)
        if properties.get("LifecycleHookName") == LIFECYCLE_HOOK_NAME:
            target = ref_target(properties.get("AutoScalingGroupName"))
            if target is not None:
                groups.add(target)
    return groups


def capacity_launch_template(t: EcsTemplate, capacity: Capacity) -> LaunchTemplate | None:
    """The launch template of an Auto Scaling capacity's group, when the template holds both."""
    group = t.groups.get(capacity.group or "")
    return t.group_launch_template(group) if group is not None else None
