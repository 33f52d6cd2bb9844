"""Rolling deployments that can start: room to stop a task on full capacity, and a minimum below the maximum."""

from __future__ import annotations

from neuron_constructs.checks import inputs
from neuron_constructs.checks.cfn_template import (
    EcsTemplate,
)
from neuron_constructs.checks.template_checks.placement import capacity_limit, named
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    in_properties,
)
from neuron_constructs.knowledge import rollouts
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.rules import Rule


def _check_deployment_room(t: EcsTemplate, out: TemplateReport) -> None:
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        limit = capacity_limit(t, service)
        if task is None or not task.manual_mapping or not service.distinct_instance or limit is None:
            continue
        if not service.rolling:
            continue
        maximum, groups = limit
        desired = service.desired_count or 0
        # the fewest tasks that fill every instance: the desired count, or a count auto scaling reaches
        full = desired if desired >= maximum else maximum if maximum in service.task_counts else 0
        healthy = service.minimum_healthy_percent
        if 0 < maximum <= full and rollouts.fewest_running(full, healthy) >= full:
            capacity = named(t, groups)
            scaled = "" if full == desired else " (auto scaling reaches that many)"
            out.add(
                r.DEPLOYMENT_WITHOUT_ROOM,
                service.logical_id,
                in_properties("DeploymentConfiguration"),
                f"{full} tasks{scaled} with distinctInstance on {capacity}, which launches at most {maximum} "
                f"instances, and a minimum healthy percent of {healthy}",
                percent=inputs.room_to_stop(full),
                capacity=capacity,
                desired=full,
            )


def _check_deployment_stalls(t: EcsTemplate, out: TemplateReport) -> None:
    for service in t.services.values():
        if not service.rolling:
            continue
        minimum, maximum = service.minimum_healthy_percent, service.maximum_percent
        stalled = next((n for n in service.task_counts[:10_000] if inputs.deployment_stalls(n, minimum, maximum)), None)
        if stalled is None:
            continue
        scaled = "" if stalled == service.desired_count else " (a count its auto scaling reaches)"
        out.add(
            r.DEPLOYMENT_STALLS,
            service.logical_id,
            in_properties("DeploymentConfiguration"),
            f"with {stalled} task{'s' if stalled != 1 else ''}{scaled}, a maximum percent of {maximum} starts none "
            f"beyond them and a minimum healthy percent of {minimum} stops none",
            percent=inputs.room_to_stop(stalled) if stalled == 1 else f"{inputs.room_to_stop(stalled)} or less",
            more_room=f"max_healthy_percent={inputs.room_to_start(stalled)} or more",
        )


CHECKS: dict[Rule, Check] = {
    r.DEPLOYMENT_WITHOUT_ROOM: _check_deployment_room,
    r.DEPLOYMENT_STALLS: _check_deployment_stalls,
}
"""This area's check of each rule."""
