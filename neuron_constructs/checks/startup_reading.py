"""What a new copy of a service does before it serves, read from a template: whether it compiles at start, the
compile cache it reads, the durations the task definition states, and the service's health check grace period.

Read by the template check of NEURON167 and by ``neuron-ecs plan --startup``; the template is untrusted input, so a
value of another type is "not stated", never an exception. No AWS CDK import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuron_constructs.checks.cfn_template import EcsTemplate, Service, TaskDefinition
from neuron_constructs.knowledge import image_support
from neuron_constructs.knowledge.engines import Engine
from neuron_constructs.knowledge.startup import Precompiled, precompiled, stated_startup

__all__ = [
    "CACHE_HIT_ONLY",
    "LOCAL_TIER_VARIABLE",
    "REMOTE_TIER_VARIABLE",
    "S3_CACHE_VARIABLE",
    "CopyStart",
    "copy_start",
]

S3_CACHE_VARIABLE = "NEURON_COMPILE_CACHE_URL"
"""torch-neuronx's, NxD Inference's and optimum-neuron's compile cache (:mod:`neuron_constructs.knowledge.engines`)."""
REMOTE_TIER_VARIABLE = "NEURON_LIBTORCH_REMOTE_CACHE"
"""vLLM Neuron's remote tier, a shared POSIX mount."""
LOCAL_TIER_VARIABLE = "VLLM_CACHE_ROOT"
"""vLLM Neuron's local tier (``$VLLM_CACHE_ROOT/neuron/compile_cache``)."""
CACHE_HIT_ONLY = {"NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND": "1", "VLLM_NEURON_DISABLE_WARMUP_COMPILE": "1"}
"""vLLM Neuron's production setting after a CPU compile: no compile at start, a cache miss is a ``RuntimeError``
(vLLM Neuron documentation, "CPU Compilation")."""


@dataclass(frozen=True)
class CopyStart:
    """What one service's new copy does before it serves, as its template says."""

    container: str | None
    """The Neuron container (the first one), ``None`` when the task definition has none the template shows."""
    image: str | None
    """Its image when the template names it by a literal."""
    engine: Engine | None
    """The engine of that image in the image table (``None``: an image the table does not hold)."""
    cache: str | None
    """The compile cache it reads: ``NEURON_COMPILE_CACHE_URL=...``, ``NEURON_LIBTORCH_REMOTE_CACHE=...`` (with the
    local tier), ``None`` for none."""
    precompiled: Precompiled | None
    cache_hit_only: bool
    """Its container sets both :data:`CACHE_HIT_ONLY` variables: it never compiles, a miss fails its start."""
    stated: Mapping[str, float]
    """The durations stated for its Neuron container, by step."""
    grace_seconds: int | None
    """``HealthCheckGracePeriodSeconds`` (0 when unset, as ECS takes it), ``None`` when computed at deploy time."""
    health_checked: bool
    """Whether a health check holds the copy to the grace period: a load balancer, or a container health check."""

    @property
    def compiles(self) -> bool:
        """Whether a copy compiles its graphs at start (on a cache miss): every copy without a precompile recorded
        for its task definition or the cache-hit-only variables."""
        return self.precompiled is None and not self.cache_hit_only


def _environment_text(value: Any) -> str:
    return value if isinstance(value, str) else "<computed>"


def copy_start(t: EcsTemplate, service: Service, show: Any = _environment_text) -> CopyStart | None:
    """What ``service``'s new copy does before it serves; ``None`` when its task definition is not a Neuron one in
    these templates. ``show`` writes a template value as text."""
    task = t.task_definitions.get(service.task_definition or "")
    if task is None or not task.is_neuron:
        return None
    resource = t.resources.get(service.logical_id, {})
    properties = t.properties(resource)
    grace: Any = properties.get("HealthCheckGracePeriodSeconds", 0)
    grace_seconds = grace if isinstance(grace, int) and not isinstance(grace, bool) and grace >= 0 else None
    load_balanced = bool(properties.get("LoadBalancers"))
    container = _neuron_container(task)
    stated = stated_startup(task.intent)
    raw = _raw_container(t, task, container)
    image = raw.get("Image") if isinstance(raw.get("Image"), str) else None
    found = image_support.table_image(image) if image is not None else None
    return CopyStart(
        container=container,
        image=image,
        engine=found[1].engine if found is not None else None,
        cache=_cache(task, container, show),
        precompiled=precompiled(task.intent),
        cache_hit_only=_cache_hit_only(task, container),
        stated=stated.get(container or "", {}),
        grace_seconds=grace_seconds,
        health_checked=load_balanced or any(isinstance(c.get("HealthCheck"), dict) for c in _raw_containers(t, task)),
    )


def _neuron_container(task: TaskDefinition) -> str | None:
    declared = task.intent.get("neuronContainers")
    if isinstance(declared, list) and declared and isinstance(declared[0], str):
        return declared[0]
    for container in task.containers:
        if container.maps_neuron_devices or container.wants_all_neuron_devices:
            return container.name
    return None


def _raw_containers(t: EcsTemplate, task: TaskDefinition) -> list[dict[str, Any]]:
    containers = t.properties(t.resources.get(task.logical_id, {})).get("ContainerDefinitions")
    return [c for c in containers[:64] if isinstance(c, dict)] if isinstance(containers, list) else []


def _raw_container(t: EcsTemplate, task: TaskDefinition, name: str | None) -> dict[str, Any]:
    return next((c for c in _raw_containers(t, task) if c.get("Name") == name), {})


def _cache(task: TaskDefinition, name: str | None, show: Any) -> str | None:
    container = next((c for c in task.containers if c.name == name), None)
    if container is None:
        return None
    environment = container.environment
    if S3_CACHE_VARIABLE in environment:
        return f"{S3_CACHE_VARIABLE}={show(environment[S3_CACHE_VARIABLE])}"
    if REMOTE_TIER_VARIABLE in environment:
        local = environment.get(LOCAL_TIER_VARIABLE)
        local_text = f", local tier {LOCAL_TIER_VARIABLE}={show(local)}" if local is not None else ""
        return f"{REMOTE_TIER_VARIABLE}={show(environment[REMOTE_TIER_VARIABLE])}{local_text}"
    return None


def _cache_hit_only(task: TaskDefinition, name: str | None) -> bool:
    container = next((c for c in task.containers if c.name == name), None)
    return container is not None and all(
        str(container.environment.get(variable)) == value for variable, value in CACHE_HIT_ONLY.items()
    )
