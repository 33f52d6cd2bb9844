"""``neuron-ecs plan --diff OLD NEW``: what a change between two versions of an app does to the chips, for how long
and at what cost, read from the two versions' templates (two cloud assemblies, or two templates).

* **Services.** A service whose task definition changed (an image, a variable, a command) or whose own properties
  changed rolls when the change deploys: its strategy as the new template states it (``plan --rollout``'s reading),
  a fleet model's stages with the copies out of service in each (a stage replaces its copies in place), the peak
  chips and instances above the steady state, the images the new revision pulls.
* **Capacities.** An Auto Scaling capacity whose launch template changed (its AMI release, its user data) is
  replaced by an instance refresh when the change deploys (the group's ``UpdatePolicy: AutoScalingInstanceRefresh``):
  its batches at the group's maximum (``MaxHealthyPercentage`` above 100 launches each batch before it terminates,
  which needs that many instances beyond the group's, and room in a reservation it launches into only), each
  waiting the refresh's ``InstanceWarmup``.
* **Removed.** Services and listener rules of the old version that the new one drops, flagged when the rule
  forwards requests (a model removed while its path still routes clients to it).
* **Duration and cost.** Each term shown, none invented: a rolled copy's stated time to serve (``Startup``, or
  "measure it"), a rollout's bake time, intervals and approval wait, a refresh's batches times its warm-up; the extra
  instances' instance-hours over the change, and dollars only at prices given (``--price TYPE=USD_PER_HOUR``),
  never a table that pretends to be current.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.tools.planning import _name, app_model, read_app
from neuron_constructs.tools.rollout_planning import rollout_templates
from neuron_constructs.tools.rollout_result import RolloutResult, ServiceRollout
from neuron_constructs.tools.startup_planning import startup_templates

__all__ = ["CapacityChange", "DiffResult", "Removed", "ServiceChange", "diff_paths", "diff_templates"]


@dataclass(frozen=True)
class ServiceChange:
    """A service the change rolls: how, with what peak, pulling what."""

    name: str
    what: tuple[str, ...]
    """What changed, in words (``image vllm: ...:0.16 -> ...:0.17``)."""
    how: str
    stages: tuple[tuple[str, ...], ...] = ()
    """A fleet model's copies by stage, each replaced in place (out of service while it starts)."""
    extra_instances: int = 0
    """Instances beyond the steady state at the peak."""
    extra_chips: int = 0
    images: tuple[str, ...] = ()
    start_minutes: float | None = None
    """A copy's stated time to serve; ``None``: measure it."""
    wait_minutes: float = 0.0
    """The rollout's bake time, intervals and approval wait (at its timeout)."""
    instance_type: str = ""
    fits: bool | None = None


@dataclass(frozen=True)
class CapacityChange:
    """An Auto Scaling capacity the change refreshes."""

    name: str
    what: tuple[str, ...]
    instance_type: str
    instances: int | None
    batch: int | None
    batches: int | None
    warmup_s: int | None
    launch_first: bool
    reservation_only: bool
    refreshed: bool = True
    above: int = 0
    """Instances the refresh runs beyond the group's at once (``MaxHealthyPercentage`` above 100)."""
    """The group has an instance refresh policy; without one, running instances keep the old launch template until
    they are replaced, and only new launches take the new one."""


@dataclass(frozen=True)
class Removed:
    """A service or listener rule the new version drops."""

    kind: str
    name: str
    serves: str | None
    """What it forwards (a listener rule's conditions), ``None`` when it serves nothing."""


@dataclass
class DiffResult:
    """What the change does: the services it rolls, the capacities it refreshes, what it removes, the files that could
    not be read, and the hourly prices given (by instance type)."""

    services: list[ServiceChange] = field(default_factory=list)
    capacities: list[CapacityChange] = field(default_factory=list)
    removed: list[Removed] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    prices: dict[str, float] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return all(s.fits is not False for s in self.services)

    def duration_terms(self) -> list[tuple[str, float, bool]]:
        """Each term of the change's duration: what it is, its minutes (what is stated of it), and whether that is
        all of it (``False``: a start to measure comes on top). In the order they run: the capacities' refreshes (the
        platform deploys first), then each service's rollout (CloudFormation runs those that do not depend on each
        other at once, so the longest of them counts)."""
        terms: list[tuple[str, float, bool]] = []
        for capacity in self.capacities:
            if not capacity.refreshed:
                continue
            if capacity.batches is None or capacity.warmup_s is None:
                terms.append((f"{capacity.name}: instance refresh, batches or warm-up not in the template", 0.0, False))
            else:
                terms.append(
                    (
                        f"{capacity.name}: instance refresh, {capacity.batches} batch"
                        f"{'es' if capacity.batches != 1 else ''} x {capacity.warmup_s / 60:g} min warm-up, + each new "
                        "instance's launch",
                        capacity.batches * capacity.warmup_s / 60,
                        False,
                    )
                )
        for service in self.services:
            start = "measure it" if service.start_minutes is None else f"{service.start_minutes:g} min"
            stages = max(1, len(service.stages))
            terms.append(
                (
                    f"{service.name}: a copy's start ({start})"
                    + (f" x {stages} stages" if stages > 1 else "")
                    + f" + {service.wait_minutes:g} min of bake, intervals and approval",
                    (service.start_minutes or 0.0) * stages + service.wait_minutes,
                    service.start_minutes is not None,
                )
            )
        return terms

    def least_minutes(self) -> float:
        """The stated part of the change's duration: the refreshes one after another, then the longest rollout."""
        terms = self.duration_terms()
        refreshes = sum(1 for c in self.capacities if c.refreshed)
        return sum(m for _, m, _ in terms[:refreshes]) + max((m for _, m, _ in terms[refreshes:]), default=0.0)

    def instance_hours(self) -> list[tuple[str, str, float, bool]]:
        """(what, instance type, instance-hours stated, whether that is all) of the instances the change runs beyond
        the steady state: a refresh's extra batch while it runs, a rollout's green instances while it holds both."""
        hours: list[tuple[str, str, float, bool]] = []
        for capacity in self.capacities:
            if capacity.above and capacity.batches and capacity.warmup_s is not None:
                minutes = capacity.batches * capacity.warmup_s / 60
                hours.append((f"{capacity.name} refresh", capacity.instance_type, capacity.above * minutes / 60, False))
        for service in self.services:
            if service.extra_instances:
                minutes = (service.start_minutes or 0.0) + service.wait_minutes
                hours.append(
                    (
                        f"{service.name} rollout",
                        service.instance_type,
                        service.extra_instances * minutes / 60,
                        service.start_minutes is not None,
                    )
                )
        return hours


def _by_name(model: EcsTemplate, kind: str) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        _name(model, lid): (lid, r)
        for lid, r in model.resources.items()
        if isinstance(r, dict) and r.get("Type") == kind
    }


def _props(resource: object) -> dict[str, Any]:
    properties = resource.get("Properties") if isinstance(resource, dict) else None
    return properties if isinstance(properties, dict) else {}


def _ref(value: object) -> str | None:
    return value.get("Ref") if isinstance(value, dict) and isinstance(value.get("Ref"), str) else None


def _image(value: object) -> str:
    """An image as text: a literal, a join with the deploy-time parts as ``{Ref}``."""
    if isinstance(value, str):
        return value
    join = value.get("Fn::Join") if isinstance(value, dict) else None
    if isinstance(join, list) and len(join) == 2 and isinstance(join[1], list):
        return str(join[0]).join(p if isinstance(p, str) else "{" + str(_ref(p) or "…") + "}" for p in join[1])
    return json.dumps(value, sort_keys=True)[:200]


def _containers(model: EcsTemplate, task: str | None) -> dict[str, dict[str, Any]]:
    definitions = _props(model.resources.get(task or "")).get("ContainerDefinitions") or []
    return {str(c.get("Name")): c for c in definitions if isinstance(c, dict)}


def _changes(old: EcsTemplate, new: EcsTemplate, old_service: dict[str, Any], new_service: dict[str, Any]) -> list[str]:
    """What changed between a service's two versions that starts a deployment, in words."""
    said: list[str] = []
    old_task = _ref(_props(old_service).get("TaskDefinition"))
    new_task = _ref(_props(new_service).get("TaskDefinition"))
    before, after = _containers(old, old_task), _containers(new, new_task)
    for name in sorted(set(before) | set(after)):
        if name not in before:
            said.append(f"container {name} added")
        elif name not in after:
            said.append(f"container {name} removed")
        else:
            old_image, new_image = _image(before[name].get("Image")), _image(after[name].get("Image"))
            if old_image != new_image:
                said.append(f"image {name}: {old_image} -> {new_image}")
            rest = {k: v for k, v in after[name].items() if k != "Image"}
            if rest != {k: v for k, v in before[name].items() if k != "Image"}:
                said.append(f"container {name}'s settings")
    task_rest = {k: v for k, v in _props(new.resources.get(new_task or "")).items() if k != "ContainerDefinitions"}
    old_rest = {k: v for k, v in _props(old.resources.get(old_task or "")).items() if k != "ContainerDefinitions"}
    if task_rest != old_rest:
        said.append("task definition settings")
    ignored = ("TaskDefinition",)
    if {k: v for k, v in _props(new_service).items() if k not in ignored} != {
        k: v for k, v in _props(old_service).items() if k not in ignored
    }:
        said.append("service settings")
    return said


def _launch_data(model: EcsTemplate, group: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """A group's launch template data, its ``ImageId`` resolved to the SSM parameter it reads; and its instance type."""
    reference = _props(group).get("LaunchTemplate")
    if not isinstance(reference, dict):  # a mixed-instances policy names it under its own LaunchTemplate
        mixed = _props(group).get("MixedInstancesPolicy") or {}
        reference = (mixed.get("LaunchTemplate") or {}).get("LaunchTemplateSpecification") or {}
    template = _props(model.resources.get(_ref(reference.get("LaunchTemplateId")) or ""))
    data = dict(template.get("LaunchTemplateData") or {})
    image = data.get("ImageId")
    parameter = model.parameters.get(_ref(image) or "")
    if isinstance(parameter, dict) and "Default" in parameter:
        data["ImageId"] = parameter["Default"]
    kind = data.get("InstanceType")
    return (kind if isinstance(kind, str) else None), data


def _refresh(name: str, group: dict[str, Any], what: list[str], instance_type: str | None) -> CapacityChange:
    policy = (group.get("UpdatePolicy") or {}).get("AutoScalingInstanceRefresh")
    if not isinstance(policy, dict):
        return CapacityChange(name, tuple(what), instance_type or "?", None, None, None, None, False, False, False)
    preferences = policy.get("Preferences") or {}
    maximum = _props(group).get("MaxSize")
    instances = int(maximum) if isinstance(maximum, (int, str)) and str(maximum).isdigit() else None
    maintenance = _props(group).get("InstanceMaintenancePolicy") or {}  # what the refresh leaves out, it takes here
    high = preferences.get("MaxHealthyPercentage", maintenance.get("MaxHealthyPercentage", 100))
    low = preferences.get("MinHealthyPercentage", maintenance.get("MinHealthyPercentage", 90))
    warmup = preferences.get("InstanceWarmup")
    launch_first = isinstance(high, int) and high > 100
    batch = None
    if instances is not None and isinstance(high, int) and isinstance(low, int):
        # EC2 Auto Scaling replaces as many instances at once as the range between the two percentages allows
        batch = max(1, math.floor(instances * (high - low) / 100))
    batches = None if batch is None or instances is None else math.ceil(instances / batch)
    specification = _props(group).get("CapacityReservationSpecification") or {}
    above = max(1, math.floor(instances * (high - 100) / 100)) if launch_first and instances is not None else 0
    return CapacityChange(
        name,
        tuple(what),
        instance_type or "?",
        instances,
        batch,
        batches,
        warmup if isinstance(warmup, int) else None,
        launch_first,
        specification.get("CapacityReservationPreference") == "capacity-reservations-only",
        above=above,
    )


def _forwards(rule: dict[str, Any]) -> str | None:
    actions = _props(rule).get("Actions") or []
    if not any(isinstance(a, dict) and a.get("Type") == "forward" for a in actions):
        return None
    conditions = []
    for condition in _props(rule).get("Conditions") or []:
        if isinstance(condition, dict):
            values = (condition.get("PathPatternConfig") or {}).get("Values") or condition.get("Values") or []
            conditions.append(f"{condition.get('Field')} {', '.join(map(str, values))}")
    return "; ".join(conditions) or "every request"


def diff_paths(old: Sequence[str], new: Sequence[str], prices: Mapping[str, float] | None = None) -> DiffResult:
    """:func:`diff_templates` of the templates the paths name, read as ``neuron-ecs plan`` reads them."""
    old_loaded, old_paths, old_unreadable = read_app(old)
    new_loaded, new_paths, new_unreadable = read_app(new)
    result = diff_templates(old_loaded, new_loaded, old_paths=old_paths, new_paths=new_paths)
    result.unreadable = [*old_unreadable, *new_unreadable]
    result.prices = dict(prices or {})
    return result


def _keyed(templates: Mapping[str, Any]) -> dict[str, Any]:
    """Templates by file name, so that two assemblies' ``Llm.template.json`` meet wherever each lives."""
    return {name.rsplit("/", 1)[-1]: template for name, template in templates.items()}


def _or_the_new_side_s(old: Any, new: Any) -> Any:
    """The old version's construct path of a resource, else the new version's of the same logical id in the
    template of the same name: a template read without its cloud assembly (the deployed one, from CloudFormation)
    is then named as the assembly names it. A logical id in one stack is one construct path: the CDK derives it
    from the path."""
    if new is None:
        return old

    def construct_path(name: str, logical_id: str) -> str | None:
        found = (old(name, logical_id) if old is not None else None) or new(name, logical_id)
        return found if isinstance(found, str) else None

    return construct_path


def diff_templates(
    old_templates: Mapping[str, Any], new_templates: Mapping[str, Any], *, old_paths: Any = None, new_paths: Any = None
) -> DiffResult:
    """The change from the old version's templates to the new one's (each by name, one app each)."""
    renamed = {**{n: n.rsplit("/", 1)[-1] for n in old_templates}}

    def paths_of(mapping: Any, names: Mapping[str, str]) -> Any:
        if mapping is None:
            return None
        back = {short: full for full, short in names.items()}
        return lambda name, logical_id: mapping(back.get(name, name), logical_id)

    old_keyed, new_keyed = _keyed(old_templates), _keyed(new_templates)
    new_construct_paths = paths_of(new_paths, {n: n.rsplit("/", 1)[-1] for n in new_templates})
    old_construct_paths = _or_the_new_side_s(paths_of(old_paths, renamed), new_construct_paths)
    old = app_model(old_keyed, construct_paths=old_construct_paths)
    new = app_model(new_keyed, construct_paths=new_construct_paths)
    rollouts: RolloutResult = rollout_templates(new_keyed, construct_paths=new_construct_paths)
    by_service: dict[str, ServiceRollout] = {r.logical_id: r for r in rollouts.services}
    fleets = {f.name: f for f in rollouts.fleets}
    starts = {m.name: m for m in startup_templates(new)}
    result = DiffResult()
    old_services, new_services = _by_name(old, "AWS::ECS::Service"), _by_name(new, "AWS::ECS::Service")
    seen_fleets: set[str] = set()
    for name, (logical_id, service) in new_services.items():
        if name not in old_services:
            continue
        what = _changes(old, new, old_services[name][1], service)
        if not what:
            continue
        rollout = by_service.get(logical_id)
        fleet = fleets.get(rollout.fleet) if rollout is not None and rollout.fleet else None
        if fleet is not None:
            if fleet.name in seen_fleets:
                continue
            seen_fleets.add(fleet.name)
        start = starts.get(fleet.name if fleet is not None else name)
        start_minutes = None
        if start is not None and not start.to_serve_unknown and start.to_serve_seconds:
            start_minutes = start.to_serve_seconds / 60
        plan = rollout.plan if rollout is not None else None
        wait = 0.0
        if plan is not None and plan.native:
            wait = (plan.bake_time_minutes or 0) + (plan.interval_minutes or 0)
            if plan.approval is not None:
                wait += plan.approval.timeout_minutes
        room = rollout.room if rollout is not None else None
        blue = rollout.blue_tasks if rollout is not None else None
        extra_instances = extra_chips = 0
        if room is not None and blue is not None and room.copies_per_instance:
            extra_instances = max(0, room.instances - math.ceil(blue / room.copies_per_instance))
            extra_chips = max(0, room.chips - room.chips * blue // max(1, room.tasks))
        images = tuple(w.split(" -> ", 1)[1] for w in what if w.startswith("image ") and " -> " in w)
        result.services.append(
            ServiceChange(
                fleet.name if fleet is not None else name,
                tuple(what),
                (
                    f"copy by copy in {len(fleet.stages)} stages, each stage's copies replaced in place"
                    if fleet is not None
                    else (rollout.timeline or "rolling")
                    if rollout is not None
                    else "rolling"
                ),
                tuple(fleet.stages) if fleet is not None else (),
                extra_instances,
                extra_chips,
                images,
                start_minutes,
                wait,
                rollout.instance_type if rollout is not None else "",
                (fleet.fits if fleet is not None else rollout.fits) if rollout is not None else None,
            )
        )
    for name in sorted(set(old_services) - set(new_services)):
        result.removed.append(Removed("service", name, None))
    old_rules, new_rules = (
        _by_name(old, "AWS::ElasticLoadBalancingV2::ListenerRule"),
        _by_name(new, "AWS::ElasticLoadBalancingV2::ListenerRule"),
    )
    for name in sorted(set(old_rules) - set(new_rules)):
        result.removed.append(Removed("listener rule", name, _forwards(old_rules[name][1])))
    old_groups = _by_name(old, "AWS::AutoScaling::AutoScalingGroup")
    for name, (_, group) in _by_name(new, "AWS::AutoScaling::AutoScalingGroup").items():
        if name not in old_groups:
            continue
        kind, after = _launch_data(new, group)
        _, before = _launch_data(old, old_groups[name][1])
        what = []
        if after.get("ImageId") != before.get("ImageId"):
            what.append(f"AMI {before.get('ImageId')} -> {after.get('ImageId')}")
        if {k: v for k, v in after.items() if k != "ImageId"} != {k: v for k, v in before.items() if k != "ImageId"}:
            what.append("launch template settings")
        if what:
            result.capacities.append(_refresh(name, group, what, kind))
    return result
