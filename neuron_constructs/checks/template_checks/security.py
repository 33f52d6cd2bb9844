"""What reaches the instance or leaks: the host network, public subnets, secrets in plain text, instance metadata."""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import Iterator
from typing import Any

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.checks.inputs import secret_like
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    in_container,
    in_properties,
    neuron_launch_templates,
)
from neuron_constructs.checks.template_values import ref_target, whole_number
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.rules import Rule


def _check_host_network(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if task.is_neuron and task.network_mode == "host":
            out.add(
                r.HOST_NETWORK,
                task.logical_id,
                in_properties("NetworkMode"),
                "the host network mode gives the containers the instance's network and its instance role",
            )


_TASK_DEFINITION_TYPES = ("AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition")


def _check_privileged(t: EcsTemplate, out: TemplateReport) -> None:
    """NEURON115 over ECS task definitions, AWS Batch job definitions and the containers launch templates' user data
    runs."""
    _check_privileged_tasks(t, out)
    _check_privileged_jobs(t, out)
    _check_user_data_containers(t, out)


def _check_privileged_tasks(t: EcsTemplate, out: TemplateReport) -> None:
    """Every privileged container, and every container of a host-network task definition, of any task definition
    (the library's or not, Neuron or not; Managed Instances daemons' too)."""
    for logical_id, resource in t.resources.items():
        if not isinstance(resource, dict) or resource.get("Type") not in _TASK_DEFINITION_TYPES:
            continue
        properties = t.properties(resource)
        mode = properties.get("NetworkMode")
        host = isinstance(mode, str) and mode.lower() == "host"
        containers = properties.get("ContainerDefinitions")
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, dict):
                continue
            name = container.get("Name")
            name = name if isinstance(name, str) else f"container {index}"
            privileged = _flag(container.get("Privileged"))
            reasons = (["it is privileged"] if privileged else []) + (["its task uses the host network"] * host)
            if reasons:
                out.add(
                    r.PRIVILEGED_CONTAINER,
                    logical_id,
                    in_properties("ContainerDefinitions", index, "Privileged")
                    if privileged
                    else in_properties("NetworkMode"),
                    f"container {name}: {' and '.join(reasons)}, so it can use the instance role (ecs:Poll: every "
                    "task's credentials on the instance)",
                )


def _flag(value: object) -> bool:
    """CloudFormation's true: ``True`` or the string ``true`` (not 1: 1 == True in Python, not in CloudFormation)."""
    return value is True or value in ("true", "True")


def _batch_containers(
    properties: dict[str, Any],
) -> Iterator[tuple[tuple[str | int, ...], str, dict[str, Any], bool]]:
    """Each container of an ``AWS::Batch::JobDefinition``: where it is, what to call it, what it is, and whether its
    job runs in the host network.

    AWS Batch guide, "Networking modes for AWS Batch jobs" (2025): an ECS job on EC2 that is not multi-node
    parallel (``ContainerProperties``, or ``EcsProperties.TaskProperties[].Containers``) runs in the ``host`` network
    mode, the only one Batch offers it; a multi-node parallel job's nodes (``NodeProperties.NodeRangeProperties[]``,
    ``Container`` or ``EcsProperties``) run in ``awsvpc``, and a Fargate job (``PlatformCapabilities`` FARGATE) in
    ``awsvpc`` too."""
    platforms = properties.get("PlatformCapabilities")
    fargate = isinstance(platforms, list) and "FARGATE" in platforms
    single_host = not fargate and not isinstance(properties.get("NodeProperties"), dict)

    def named(container: dict[str, Any], otherwise: str) -> str:
        name = container.get("Name")
        return f"container {name}" if isinstance(name, str) else otherwise

    def of_ecs(ecs: object, *at: str | int) -> Iterator[tuple[tuple[str | int, ...], str, dict[str, Any]]]:
        tasks = ecs.get("TaskProperties") if isinstance(ecs, dict) else None
        for t_index, task in enumerate(tasks if isinstance(tasks, list) else []):
            containers = task.get("Containers") if isinstance(task, dict) else None
            for c_index, container in enumerate(containers if isinstance(containers, list) else []):
                if isinstance(container, dict):
                    place = (*at, "TaskProperties", t_index, "Containers", c_index)
                    yield place, named(container, f"container {c_index} of task {t_index}"), container

    single = properties.get("ContainerProperties")
    if isinstance(single, dict):
        yield ("ContainerProperties",), "the job's container", single, single_host
    for place, name, container in of_ecs(properties.get("EcsProperties"), "EcsProperties"):
        yield place, name, container, single_host
    nodes = properties.get("NodeProperties")
    ranges = nodes.get("NodeRangeProperties") if isinstance(nodes, dict) else None
    for index, node_range in enumerate(ranges if isinstance(ranges, list) else []):
        if not isinstance(node_range, dict):
            continue
        at = ("NodeProperties", "NodeRangeProperties", index)
        targets = node_range.get("TargetNodes")
        of_nodes = f"node range {index}" + (f" (nodes {targets})" if isinstance(targets, str) else "")
        if isinstance(node_range.get("Container"), dict):
            yield (*at, "Container"), f"the container of {of_nodes}", node_range["Container"], False
        for place, name, container in of_ecs(node_range.get("EcsProperties"), *at, "EcsProperties"):
            yield place, f"{name} of {of_nodes}", container, False


def _check_privileged_jobs(t: EcsTemplate, out: TemplateReport) -> None:
    """Every privileged container of an AWS Batch job definition, and every container of a job that runs in the
    host network (a single-node job on EC2, :func:`_batch_containers`)."""
    for logical_id, resource in t.resources.items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Batch::JobDefinition":
            continue
        for place, name, container, host in _batch_containers(t.properties(resource)):
            privileged = _flag(container.get("Privileged"))
            reasons = (["it is privileged"] if privileged else []) + (
                ["its job runs in the host network (AWS Batch runs single-node jobs on EC2 in no other)"] * host
            )
            if reasons:
                out.add(
                    r.PRIVILEGED_CONTAINER,
                    logical_id,
                    in_properties(*place, "Privileged") if privileged else in_properties(*place),
                    f"{name}: {' and '.join(reasons)}, so it can use the instance role (ecs:Poll: every task's "
                    "credentials on the instance)",
                )


_DOCKER_RUN = re.compile(r"docker\s+(?:container\s+)?run\b[^\n]*")
_HOST_NETWORK = re.compile(r"""\s["']?--(?:network|net)(?:=|\s+)["']?host\b""")
_PRIVILEGED = re.compile(r"""\s["']?--privileged(?:=["']?true)?(?=["'\s]|$)""")
_MOST_USER_DATA_PARTS = 2_000
_MOST_USER_DATA_CHARACTERS = 1_000_000


def _user_data_text(value: Any) -> str:
    """The text of a launch template's ``UserData`` as an instance would run it, with every deploy-time value a space:
    ``Fn::Base64`` of it, the parts of an ``Fn::Join`` joined by its delimiter, an ``Fn::Sub``'s string, and a plain
    string (``UserData`` takes base64) decoded when it is base64 of text; lines continued with ``\\`` joined. Bounded
    in parts, depth and size."""
    parts = [0]

    def text(item: Any, depth: int) -> str:
        parts[0] += 1
        if parts[0] > _MOST_USER_DATA_PARTS or depth > 12:
            return " "
        if isinstance(item, str):
            return item[:_MOST_USER_DATA_CHARACTERS]
        if isinstance(item, list):
            return "".join(text(v, depth + 1) for v in item[:_MOST_USER_DATA_PARTS])
        if isinstance(item, dict) and len(item) == 1:
            ((key, inner),) = item.items()
            if key == "Fn::Base64":
                return text(inner, depth + 1)
            if key == "Fn::Join" and isinstance(inner, list) and len(inner) == 2 and isinstance(inner[1], list):
                delimiter = inner[0] if isinstance(inner[0], str) else ""
                return delimiter.join(text(v, depth + 1) for v in inner[1][:_MOST_USER_DATA_PARTS])
            if key == "Fn::Sub":
                return text(inner[0] if isinstance(inner, list) and inner else inner, depth + 1)
        return " "

    found = text(value, 0)[:_MOST_USER_DATA_CHARACTERS]
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9+/=\s]{8,}", found):
        with contextlib.suppress(ValueError):
            decoded = base64.b64decode("".join(found.split()), validate=True).decode()
            if decoded.isprintable() or all(c.isprintable() or c in "\n\t\r" for c in decoded):
                found = decoded
    return re.sub(r"\\\r?\n", " ", found)


def _check_user_data_containers(t: EcsTemplate, out: TemplateReport) -> None:
    """A container the user data of a launch template runs privileged or in the host network (``docker run
    --privileged``, ``--network host``): it runs at boot, as root, outside ECS, and can use the instance role as a
    task definition's privileged container can."""
    for logical_id, resource in t.resources.items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::EC2::LaunchTemplate":
            continue
        data = t.properties(resource).get("LaunchTemplateData")
        user_data = data.get("UserData") if isinstance(data, dict) else None
        if user_data is None:
            continue
        text = _user_data_text(user_data)
        for run in _DOCKER_RUN.finditer(text):
            reasons = (["privileged"] if _PRIVILEGED.search(run.group()) else []) + (
                ["in the host network"] if _HOST_NETWORK.search(run.group()) else []
            )
            if reasons:
                out.add(
                    r.PRIVILEGED_CONTAINER,
                    logical_id,
                    in_properties("LaunchTemplateData", "UserData"),
                    f"its user data runs a container {' and '.join(reasons)} as root at boot "
                    f"({run.group()[:80].strip()}), so it can use the instance role (ecs:Poll: every task's "
                    "credentials on the instance)",
                )
                break


def _public_subnets(t: EcsTemplate) -> set[str]:
    """Subnets that give instances public addresses or route 0.0.0.0/0 to an internet gateway."""

    def of(kind: str) -> dict[str, dict[str, Any]]:
        return {k: t.properties(v) for k, v in t.resources.items() if v.get("Type") == kind}

    gateways = set(of("AWS::EC2::InternetGateway"))
    to_internet = {
        ref_target(route.get("RouteTableId"))
        for route in of("AWS::EC2::Route").values()
        if route.get("DestinationCidrBlock") == "0.0.0.0/0"
        and (ref_target(route.get("GatewayId")) in gateways or str(route.get("GatewayId", "")).startswith("igw-"))
    }
    public = {k for k, v in of("AWS::EC2::Subnet").items() if v.get("MapPublicIpOnLaunch") in (True, "true")}
    public |= {
        str(ref_target(a.get("SubnetId")))
        for a in of("AWS::EC2::SubnetRouteTableAssociation").values()
        if ref_target(a.get("RouteTableId")) in to_internet
    }
    return public


def _check_public_subnets(t: EcsTemplate, out: TemplateReport) -> None:
    public = _public_subnets(t)
    for capacity in t.capacities.values():
        chosen = [t.path_of(str(ref_target(s))) for s in capacity.subnets if ref_target(s) in public]
        if chosen:
            out.add(
                r.PUBLIC_SUBNETS,
                capacity.group or capacity.logical_id,
                in_properties(),
                f"it launches into public subnets {chosen}",
            )


def _check_secrets(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        for container in task.containers:
            for name, value in container.environment.items():
                if secret_like(name) and value not in (None, ""):
                    out.add(
                        r.SECRET_IN_ENVIRONMENT,
                        task.logical_id,
                        in_container(container, "Environment"),
                        f"environment variable {name} holds its value in plain text",
                        container=container,
                        name=name,
                    )


def _check_metadata_options(t: EcsTemplate, out: TemplateReport) -> None:
    ecs_groups = {c.group for c in t.capacities.values() if c.group}
    chosen = [t.group_launch_template(t.groups[g]) for g in ecs_groups if g in t.groups]
    chosen += [t.launch_templates[lid] for lid, _ in neuron_launch_templates(t)]
    templates = {x.logical_id: x for x in chosen if x is not None}
    for template in templates.values():
        options = template.metadata_options or {}
        tokens, hops = options.get("HttpTokens"), whole_number(options.get("HttpPutResponseHopLimit"))
        if tokens != "required" or hops != 1:
            out.add(
                r.METADATA_REACHABLE,
                template.logical_id,
                in_properties("LaunchTemplateData", "MetadataOptions"),
                f"HttpTokens {tokens or 'unset'}, HttpPutResponseHopLimit {hops or 'unset'}",
            )


CHECKS: dict[Rule, Check] = {
    r.HOST_NETWORK: _check_host_network,
    r.PUBLIC_SUBNETS: _check_public_subnets,
    r.SECRET_IN_ENVIRONMENT: _check_secrets,
    r.METADATA_REACHABLE: _check_metadata_options,
    r.PRIVILEGED_CONTAINER: _check_privileged,
}
"""This area's check of each rule."""
