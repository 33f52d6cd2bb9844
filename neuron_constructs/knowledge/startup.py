"""What a new copy of a model goes through before it serves, and what is known of how long each step takes.

The steps, in order: an instance (a new one, one from a warm pool, or a Managed Instances one), the image pull, the
model's weights (a ``ModelArtifacts`` copy), the compile (or, on a cache hit, the fetch of the compiled graphs from
the compile cache), the model load, and the health check. No source gives a duration for any of them that holds for a
user's model: Neuron compiles are "expensive - sometimes exceeding several minutes for large graphs"
(:data:`COMPILE_SOURCE`), image pulls depend on the image and ``ECS_IMAGE_PULL_BEHAVIOR`` (:data:`PULL_SOURCE`), and a
warm pool's instances are "pre-initialized" with no stated time (:data:`WARM_POOL_SOURCE`). A duration is therefore
one the user measured and stated (``Startup(...)`` on ``add_neuron_container``), else "measure it".

What the constructs record for the tools, under the task definition's
:data:`~neuron_constructs.checks.cfn_template.INTENT_METADATA_KEY` metadata (read by ``neuron-ecs plan --startup``
and the template check of NEURON167):

* :data:`STARTUP_KEY` (``startupSeconds``): ``{container name: {step: seconds}}``, the durations stated, each step one
  of :data:`STEPS`;
* :data:`PRECOMPILED_KEY` (``precompiled``): written by a construct that builds a model's compiled graphs before any
  copy of it starts (``NeuronTaskDefinition.record_precompile``): ``{"by": <its construct path>, "cacheHitOnly":
  <bool>}``. A copy of such a task definition fetches its graphs from the compile cache and does not compile.

A copy whose Neuron container sets vLLM Neuron's two cache-hit-only variables
(``NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1``, ``VLLM_NEURON_DISABLE_WARMUP_COMPILE=1``: a miss is a
``RuntimeError`` at startup, vLLM Neuron documentation, "CPU Compilation") does not compile either, recorded or not.

The ECS side: ``healthCheckGracePeriodSeconds`` is "the period of time ... that the Amazon ECS service scheduler
ignores unhealthy Elastic Load Balancing, VPC Lattice, and container health checks after a task has first started";
unset, it is 0 (:data:`GRACE_SOURCE`). The steps a started task runs - the weights copy (a container of the task), the
compile or cache fetch, the load - are inside it; the instance and the image pull come before the task starts.

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMPILE_SOURCE",
    "GRACE_SOURCE",
    "IN_TASK_STEPS",
    "PRECOMPILED_KEY",
    "PULL_SOURCE",
    "STARTUP_KEY",
    "STEPS",
    "WARM_POOL_SOURCE",
    "Precompiled",
    "duration_text",
    "in_task",
    "precompiled",
    "stated_startup",
]

STARTUP_KEY = "startupSeconds"
"""Intent key of the stated durations: ``{container name: {step: seconds}}``."""
PRECOMPILED_KEY = "precompiled"
"""Intent key a precompiling construct writes: ``{"by": <construct path>, "cacheHitOnly": <bool>}``."""

STEPS = ("instance", "image", "weights", "compile", "cacheFetch", "load")
"""The steps a duration can be stated for, in the order a new copy takes them (``compile`` on a cache miss,
``cacheFetch`` on a hit)."""
IN_TASK_STEPS = ("weights", "compile", "cacheFetch", "load")
"""The steps a started task runs, inside the health check grace period."""

COMPILE_SOURCE = (
    'vLLM Neuron documentation, "Compilation Cache" (date-modified 2026-06-22): a Neuron compile is "expensive - '
    'sometimes exceeding several minutes for large graphs", on every node that misses the cache'
)
"""Why a compile's duration is "measure it": the engine's documentation gives none for a given model."""
PULL_SOURCE = (
    'ECS developer guide, "Container image pull behavior for the EC2 and external launch types" '
    "(ECS_IMAGE_PULL_BEHAVIOR): the agent pulls the image when it starts a task, unless a cached copy may be used"
)
"""What decides whether a copy pulls its image; no duration is documented."""
WARM_POOL_SOURCE = (
    'EC2 Auto Scaling user guide, "Decrease latency for applications with long boot times using warm pools": '
    "pre-initialized instances, no stated time"
)
"""What a warm pool's instance saves; no duration is documented."""
GRACE_SOURCE = "ECS API reference, CreateService healthCheckGracePeriodSeconds (default 0; at most 2,147,483,647 s)"
"""What the health check grace period is, and its default."""

_MOST_CONTAINERS = 64


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def stated_startup(intent: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The durations a task definition's intent states, by container name and step; a value that is not a positive
    number, or a step not in :data:`STEPS`, is left out (the template is untrusted input: at most 64 containers)."""
    found = intent.get(STARTUP_KEY)
    if not isinstance(found, dict):
        return {}
    stated: dict[str, dict[str, float]] = {}
    for name, steps in list(found.items())[:_MOST_CONTAINERS]:
        if not isinstance(steps, dict):
            continue
        known = {step: seconds for step in STEPS if (seconds := _seconds(steps.get(step))) is not None}
        if known:
            stated[str(name)] = known
    return stated


@dataclass(frozen=True)
class Precompiled:
    """What a precompiling construct recorded: its construct path (``None`` when it did not name one) and whether
    the copies run cache-hit-only (a miss fails the start instead of compiling)."""

    by: str | None
    cache_hit_only: bool


def precompiled(intent: Mapping[str, Any]) -> Precompiled | None:
    """The :data:`PRECOMPILED_KEY` entry of a task definition's intent; ``None`` when absent or false."""
    found = intent.get(PRECOMPILED_KEY)
    if found is True:
        return Precompiled(None, False)
    if not isinstance(found, dict):
        return None
    by = found.get("by")
    return Precompiled(by[:240] if isinstance(by, str) and by else None, found.get("cacheHitOnly") is True)


def duration_text(seconds: float) -> str:
    """``40 min``, ``1 h 5 min``, ``90 s``: whole minutes from 2 minutes on, else seconds."""
    if seconds < 120:
        return f"{seconds:g} s"
    minutes = round(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def in_task(stated: Mapping[str, float], taken: tuple[str, ...]) -> tuple[float, tuple[str, ...]]:
    """The stated seconds of the steps ``taken`` that run inside a started task (:data:`IN_TASK_STEPS`), and those of
    them with no stated duration."""
    inside = [step for step in taken if step in IN_TASK_STEPS]
    return sum(stated[step] for step in inside if step in stated), tuple(s for s in inside if s not in stated)
