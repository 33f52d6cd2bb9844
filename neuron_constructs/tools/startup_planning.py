"""``neuron-ecs plan --startup``: the steps a new copy of every model takes before it serves, and how long each takes
as far as anyone stated it.

Per model (a service, or a fleet model or sliced service with its copies), from the templates alone:

* instance: a new instance of an Auto Scaling capacity (cold), one from its warm pool, or a Managed Instances one;
* image: its Neuron container's image, with the size stated (``image_size_gib=``), on the instance already when the
  warm-up pulled it (a warm pool with prefetch, the service in the capacity's own stack);
* weights: the ``ModelArtifacts`` prefix its sync container copies, with its stated size;
* compile, or cache fetch: the engine of the image (the image table), the compile cache its container reads
  (``NEURON_COMPILE_CACHE_URL``, or vLLM Neuron's ``NEURON_LIBTORCH_REMOTE_CACHE`` and local tier), and whether a
  precompile builds the graphs before copies start (the task definition's ``precompiled`` metadata,
  :data:`~neuron_constructs.knowledge.startup.PRECOMPILED_KEY`): a precompiled copy fetches, one without compiles on a
  miss;
* load, then the health check: ``HealthCheckGracePeriodSeconds`` against the steps a started task runs.

Each duration is the one stated with ``Startup(...)`` (the task definition's
:data:`~neuron_constructs.knowledge.startup.STARTUP_KEY` metadata), else "measure it", with the source that says why no
figure can be given (:mod:`neuron_constructs.knowledge.startup`). No AWS CDK import, no AWS call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from neuron_constructs.checks.cfn_template import ID_SEPARATOR, Capacity, EcsTemplate, Service
from neuron_constructs.checks.startup_reading import CopyStart, copy_start
from neuron_constructs.checks.warm_up import _artifact_url, _sizes, capacity_fetches
from neuron_constructs.knowledge.startup import (
    COMPILE_SOURCE,
    IN_TASK_STEPS,
    PULL_SOURCE,
    WARM_POOL_SOURCE,
    duration_text,
    in_task,
)
from neuron_constructs.tools.planning import _name, app_model, fetch_lists, read_app, shown
from neuron_constructs.tools.rollout_planning import _fleet_of

__all__ = ["ModelStart", "StartupResult", "Step", "startup_paths", "startup_templates"]

MEASURE_IT = "measure it"
STEP_NAMES = {
    "instance": "instance",
    "image": "image pull",
    "weights": "weights",
    "compile": "compile",
    "cacheFetch": "cache fetch",
    "load": "load",
}
"""How the text names each step."""


def _show(value: Any) -> str:
    """A template value as :func:`~neuron_constructs.tools.planning.shown` writes it, a reference to a resource of a
    combined template by its logical id in its own template."""
    return shown(_local(value, 0))


def _local(value: Any, depth: int) -> Any:
    """``value`` with the logical ids its ``Ref`` and ``Fn::GetAtt`` name as in their own template (bounded as
    :func:`~neuron_constructs.tools.planning.shown` reads it: 6 deep, 64 items a list)."""
    if depth > 6:
        return value
    if isinstance(value, list):
        return [_local(item, depth + 1) for item in value[:64]]
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((function, argument),) = value.items()
    if function == "Ref" and isinstance(argument, str):
        return {"Ref": argument.rsplit(ID_SEPARATOR, 1)[-1]}
    if function == "Fn::GetAtt" and isinstance(argument, list) and argument and isinstance(argument[0], str):
        return {"Fn::GetAtt": [argument[0].rsplit(ID_SEPARATOR, 1)[-1], *argument[1:2]]}
    return {function: _local(argument, depth + 1)}


@dataclass(frozen=True)
class Step:
    """One step of a copy's start: what it is, the size stated, its duration and where that comes from."""

    step: str
    """``instance``, ``image``, ``weights``, ``compile``, ``cacheFetch`` or ``load``."""
    what: str
    size_gib: float | None
    seconds: float | None
    """The duration stated; ``None`` when none is (then ``source`` says "measure it"), or when the step is done
    before the copy starts (a warm-up's fetch: ``ahead`` is true)."""
    source: str
    """``stated (Startup)``, ``measure it``, ``fetched ahead`` or ``-`` (a step not taken)."""
    reference: str | None = None
    """The documentation that says what is known of the step's duration, where it matters."""
    ahead: bool = False
    """Fetched before the copy starts (a warm-up's pull or copy)."""
    absent: bool = False
    """A step this copy does not take (no weights the template shows)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "what": self.what,
            "size_gib": self.size_gib,
            "seconds": self.seconds,
            "source": self.source,
            "reference": self.reference,
            "fetched_ahead": self.ahead,
            "absent": self.absent,
        }


@dataclass(frozen=True)
class ModelStart:
    """A model's new copy: its steps, and its service's health check grace period against those a started task
    runs."""

    name: str
    copies: int
    """Its services: 1, or one per copy of a fleet model or slice of a sliced service."""
    capacity: str | None
    steps: tuple[Step, ...]
    grace_seconds: int | None
    health_checked: bool
    in_task: tuple[str, ...]
    """The steps the started task runs (weights, compile or cache fetch, load), the longest way (a cache miss)."""
    in_task_seconds: float
    """Their stated seconds."""
    unknown: tuple[str, ...]
    """Those of them with no stated duration."""
    to_serve_seconds: float = 0.0
    """The stated seconds of every step the copy takes, from the scale-out to its first answer, the longest way (a
    cache miss compiles); what a warm-up fetched ahead takes none."""
    to_serve_unknown: tuple[str, ...] = ()
    """The steps taken with no stated duration."""

    @property
    def to_serve(self) -> str:
        """The time from the scale-out to the first answer, in a sentence."""
        known = duration_text(self.to_serve_seconds) if self.to_serve_seconds else "nothing"
        if not self.to_serve_unknown:
            return f"{known} stated from the scale-out to the first answer"
        unknown = " + ".join(STEP_NAMES[step] for step in self.to_serve_unknown)
        return f"{known} stated from the scale-out to the first answer, + {unknown}: measure it"

    @property
    def grace_short(self) -> bool | None:
        """True when the grace period is shorter than the stated steps inside the task, False when it covers them all,
        None when it cannot be told (a step unknown, or the grace period computed at deploy time)."""
        if not self.health_checked or self.grace_seconds is None:
            return None if self.health_checked else False
        if self.grace_seconds < self.in_task_seconds:
            return True
        return None if self.unknown else False

    @property
    def verdict(self) -> str:
        """The grace period against the steps inside the task, in a sentence."""
        if not self.health_checked:
            return "no load balancer or container health check: the grace period does not apply"
        if self.grace_seconds is None:
            return "health check grace period worked out at deploy time"
        grace = f"health check grace period {duration_text(self.grace_seconds) if self.grace_seconds else '0 s'}"
        stated = " + ".join(STEP_NAMES[step] for step in self.in_task if step not in self.unknown)
        unknown = " + ".join(STEP_NAMES[step] for step in self.unknown)
        if self.grace_short:
            more = f", and {unknown} to measure" if self.unknown else ""
            return f"{grace} is SHORTER than the {duration_text(self.in_task_seconds)} stated for {stated}{more}"
        if not self.in_task:
            return f"{grace}; nothing inside the task to time"
        if not stated:
            return f"{grace} against {unknown}: measure them"
        if self.unknown:
            return f"{grace} against {duration_text(self.in_task_seconds)} stated for {stated}, + {unknown}: measure it"
        return f"{grace} covers the {duration_text(self.in_task_seconds)} stated for {stated}"

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "copies": self.copies,
            "capacity": self.capacity,
            "steps": [step.to_json() for step in self.steps],
            "health_check_grace_period_seconds": self.grace_seconds,
            "health_checked": self.health_checked,
            "in_task_steps": list(self.in_task),
            "in_task_seconds_stated": self.in_task_seconds,
            "in_task_unknown": list(self.unknown),
            "grace_period_short": self.grace_short,
            "verdict": self.verdict,
            "to_serve_seconds_stated": self.to_serve_seconds,
            "to_serve_unknown": list(self.to_serve_unknown),
        }


@dataclass(frozen=True)
class StartupResult:
    """Every model's start, and the files that could not be read as templates (each with why)."""

    models: list[ModelStart]
    unreadable: list[str] = field(default_factory=list)

    @property
    def grace_too_short(self) -> bool:
        """Whether a model's grace period is shorter than the start stated inside its task (exit status 3)."""
        return any(model.grace_short for model in self.models)

    def to_json(self) -> dict[str, Any]:
        return {"models": [model.to_json() for model in self.models], "unreadable": list(self.unreadable)}


def startup_paths(paths: Sequence[str]) -> StartupResult:
    """The starts of the models of the templates ``paths`` name (files, or directories such as ``cdk.out``)."""
    loaded, paths_of, unreadable = read_app(paths)
    models = startup_templates(app_model(loaded, construct_paths=paths_of)) if loaded else []
    return StartupResult(models, unreadable)


def startup_templates(t: EcsTemplate) -> list[ModelStart]:
    """Per model of the app's ECS model, in template order: a fleet model or sliced service once, with its copies."""
    fetches = {fetch.capacity: fetch for fetch in fetch_lists(t)}
    warm_ups: dict[str, set[tuple[str, str]]] = {}
    models: dict[str, ModelStart] = {}
    for service in t.services.values():
        start = copy_start(t, service, _show)
        if start is None:
            continue
        name = _name(t, service.logical_id)
        model = _fleet_of(t, service, name) or name
        if model in models:
            models[model] = _with_copy(models[model])
            continue
        capacity = next((c for c in t.capacities.values() if t.lands_on(service, c)), None)
        steps = (
            _instance(t, capacity, fetches, start),
            *_fetched(t, service, capacity, start, fetches, warm_ups),
            *_compile(start),
            _step(start, "load", "the model load until the server answers", None),
        )
        taken = tuple(step.step for step in steps if not (step.ahead or step.absent))
        if "compile" in taken:  # the longest start: a miss compiles instead of fetching
            taken = tuple(step for step in taken if step != "cacheFetch")
        known, unknown = in_task(start.stated, taken)
        durations = {step.step: step.seconds for step in steps if step.step in taken}
        models[model] = ModelStart(
            name=model,
            copies=1,
            capacity=_name(t, capacity.logical_id) if capacity is not None else None,
            steps=steps,
            grace_seconds=start.grace_seconds,
            health_checked=start.health_checked,
            in_task=tuple(step for step in taken if step in IN_TASK_STEPS),
            in_task_seconds=known,
            unknown=unknown,
            to_serve_seconds=sum(seconds for seconds in durations.values() if seconds is not None),
            to_serve_unknown=tuple(step for step, seconds in durations.items() if seconds is None),
        )
    return list(models.values())


def _with_copy(model: ModelStart) -> ModelStart:
    return replace(model, copies=model.copies + 1)


def _step(start: CopyStart, step: str, what: str, size: float | None, reference: str | None = None) -> Step:
    """A step with its stated duration (source: stated with ``Startup``), else "measure it"."""
    seconds = start.stated.get(step)
    if seconds is not None:
        return Step(step, what, size, seconds, "stated (Startup)", reference)
    return Step(step, what, size, None, MEASURE_IT, reference)


def _instance(t: EcsTemplate, capacity: Capacity | None, fetches: dict[str, Any], start: CopyStart) -> Step:
    """The instance the copy lands on, with the ``instance`` duration stated for the model's capacity (its kind's:
    a cold start, a warm pool's, a Managed Instances launch), else "measure it"."""
    if capacity is None:
        return Step("instance", "no Neuron capacity of these templates runs it", None, None, MEASURE_IT)
    fetch = fetches.get(_name(t, capacity.logical_id))
    reference = None
    if capacity.kind == "managed-instances":
        what = "Managed Instances: ECS launches an instance for the task (an idle one it kept may take it)"
    elif fetch is not None and fetch.warm_pool is not None:
        what = f"from the warm pool (at least {fetch.warm_pool}): initialized ahead, started on scale-out"
        reference = WARM_POOL_SOURCE
    else:
        what = "cold start of a new instance (no warm pool)"
    return _step(start, "instance", what, None, reference)


def _fetched(
    t: EcsTemplate,
    service: Service,
    capacity: Capacity | None,
    start: CopyStart,
    fetches: dict[str, Any],
    warm_ups: dict[str, set[tuple[str, str]]],
) -> list[Step]:
    """The image and the weights, each fetched ahead when the capacity's warm-up fetches it."""
    task = t.task_definitions[service.task_definition or ""]
    ahead: set[tuple[str, str]] = set()
    if capacity is not None and capacity.kind == "auto-scaling":
        fetch = fetches.get(_name(t, capacity.logical_id))
        if fetch is not None and fetch.warm_pool is not None and fetch.prefetched:
            ahead = warm_ups.get(capacity.logical_id) or set()
            if capacity.logical_id not in warm_ups:  # once per capacity: it reads every service on it
                ahead = warm_ups[capacity.logical_id] = {
                    (f.kind, f.what) for f in capacity_fetches(t, capacity, _show, warm_up=True)
                }
    steps: list[Step] = []
    image = _show(start.image) if start.image is not None else "<computed at deploy time>"
    size = _sizes(task.intent, "imageSizesGiB").get(start.container or "")
    if ("image", image) in ahead:
        what = f"{image}: pulled at warm-up, on the instance"
        steps.append(Step("image", what, size, None, "fetched ahead", PULL_SOURCE, ahead=True))
    else:
        steps.append(_step(start, "image", image, size, PULL_SOURCE))
    containers = t.properties(t.resources.get(task.logical_id, {})).get("ContainerDefinitions")
    artifact_sizes = _sizes(task.intent, "artifactSizesGiB")
    for container in containers[:64] if isinstance(containers, list) else []:
        url = _artifact_url(container, _show) if isinstance(container, dict) else None
        if url is None:
            continue
        size = artifact_sizes.get(str(container.get("Name")))
        if ("artifacts", url) in ahead:
            what = f"{url}: copied at warm-up; the task's sync copies only what changed"
            steps.append(_step(start, "weights", what, size))
        else:
            steps.append(_step(start, "weights", f"{url} (ModelArtifacts)", size))
    if not any(step.step == "weights" for step in steps):
        what = "none the template shows (a server that downloads its own weights does it inside the load)"
        steps.append(Step("weights", what, None, None, "-", absent=True))
    return steps


def _compile(start: CopyStart) -> list[Step]:
    engine = (
        start.engine.name if start.engine is not None else "engine unknown (an image the image table does not hold)"
    )
    cache = start.cache or "no compile cache"
    if not start.compiles:
        by = f" by {start.precompiled.by}" if start.precompiled is not None and start.precompiled.by else ""
        hit_only = start.cache_hit_only or (start.precompiled is not None and start.precompiled.cache_hit_only)
        only = ", cache-hit-only: a miss fails the start" if hit_only else ""
        how = f"precompiled{by}{only}" if start.precompiled is not None else only.removeprefix(", ")
        what = f"{engine}: compiled graphs fetched from {cache} ({how})"
        return [_step(start, "cacheFetch", what, None)]
    steps = []
    if start.cache is not None:
        what = f"{engine}: a hit fetches compiled graphs from {cache}"
        steps.append(_step(start, "cacheFetch", what, None))
        what = f"{engine}: a miss (the first copy of each revision, no precompile) compiles every graph"
    else:
        what = f"{engine}: every copy compiles every graph (no compile cache, no precompile)"
    steps.append(_step(start, "compile", what, None, COMPILE_SOURCE))
    return steps
