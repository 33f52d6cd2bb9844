"""What a new instance of a capacity fetches, read from a template, with the sizes the task definitions state.

The constructs record a stated image size (``image_size_gib=``) and model artifact size (``ModelArtifacts(size_gib=)``)
in the task definition's metadata (``imageSizesGiB`` and ``artifactSizesGiB`` by container name, under
:data:`~neuron_constructs.checks.cfn_template.INTENT_METADATA_KEY`), so ``neuron-ecs plan --fetches`` and the
template check of NEURON091 see what the synth-time check saw. A service of another template counts as fetched at
warm-up where its template publishes it under the path the capacity's warm-up reads (``NEEDS='<path>'`` in the
launch template's user data; :mod:`neuron_constructs.knowledge.warm_up_needs`), as the boot script does. No AWS CDK
import here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from neuron_constructs.checks.cfn_template import Capacity, EcsTemplate, LaunchTemplate
from neuron_constructs.checks.template_values import ref_target
from neuron_constructs.knowledge.warm_start import LIFECYCLE_HOOK_NAME, Fetched
from neuron_constructs.knowledge.warm_up_needs import MOST_ENTRIES, MOST_VALUE_CHARACTERS, NEEDS_FORMAT

__all__ = [
    "capacity_fetches",
    "capacity_launch_template",
    "needs_path",
    "plain",
    "published_needs",
    "warm_up_groups",
]

_SYNC = ("s3", "sync")
_MOST_CONTAINERS = 64
_NEEDS_PATH = re.compile(r"NEEDS='(/[A-Za-z0-9_./-]{1,1000})'")
_MOST_USER_DATA = 1_000_000


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
    constructs wrote it: the services of the capacity's own template (images named by a literal reference), and what
    other templates publish under the path its warm-up reads (:func:`published_needs`)."""
    fetched: list[Fetched] = []
    home = t.origin.get(capacity.logical_id, ("", ""))[0]
    path = needs_path(t, capacity) if warm_up else None
    for service in t.services.values():
        if service.task_definition is None or not t.lands_on(service, capacity):
            continue
        where = t.origin.get(service.logical_id, ("", ""))[0]
        published: set[str] | None = None
        if warm_up and where != home:
            if path is None:
                continue
            published = published_needs(t, path, where, show)
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
            if not warm_up or (isinstance(image, str) and (published is None or image in published)):
                fetched.append(Fetched(show(image), "image", images.get(name)))
            url = _artifact_url(container, show)
            if url is not None and (published is None or url in published):
                fetched.append(Fetched(url, "artifacts", artifacts.get(name)))
    return fetched


def needs_path(t: EcsTemplate, capacity: Capacity) -> str | None:
    """The Parameter Store path the warm-up of ``capacity`` reads (``NEEDS='<path>'`` in its launch template's user
    data), else ``None``."""
    launch_template = capacity_launch_template(t, capacity)
    if launch_template is None:
        return None
    resource = t.resources.get(launch_template.logical_id, {})
    data = t.properties(resource).get("LaunchTemplateData")
    user_data = data.get("UserData") if isinstance(data, dict) else None
    found = _NEEDS_PATH.search(json.dumps(user_data)[:_MOST_USER_DATA])
    return found[1] if found else None


def _value(value: Any, show: Callable[[Any], str]) -> str:
    """A parameter's value as text: a string as it is, an ``Fn::Join`` of strings and values ``show`` writes."""
    if isinstance(value, str):
        return value
    joined = value.get("Fn::Join") if isinstance(value, dict) and len(value) == 1 else None
    if isinstance(joined, list) and len(joined) == 2 and isinstance(joined[0], str) and isinstance(joined[1], list):
        return joined[0].join(p if isinstance(p, str) else show(p) for p in joined[1][:256])
    return ""


def published_needs(t: EcsTemplate, path: str, template: str, show: Callable[[Any], str] = plain) -> set[str]:
    """What the parameters of ``template`` under ``path`` (one level below it) publish for the warm-up: image
    references and ``s3://`` URLs, as ``show`` writes a template value (the boot script checks each word against its
    patterns too; this reads what was written)."""
    found: set[str] = set()
    for logical_id, resource in t.resources.items():
        if resource.get("Type") != "AWS::SSM::Parameter" or t.origin.get(logical_id, ("", ""))[0] != template:
            continue
        properties = t.properties(resource)
        name = properties.get("Name")
        if not isinstance(name, str) or name.rpartition("/")[0] != path:
            continue
        words = _value(properties.get("Value"), show)[: MOST_VALUE_CHARACTERS * 2].split()
        if not words or words[0] != NEEDS_FORMAT:
            continue
        for word in words[1 : MOST_ENTRIES + 1]:
            kind, _, rest = word.partition("=")
            what = rest.rpartition(",")[0]
            if kind == "image":
                found.add(what)
            elif kind == "s3":
                found.add(f"s3://{what}")
    return found


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
