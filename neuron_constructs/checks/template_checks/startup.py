"""A copy's start against its service's health check grace period: the compile the user stated (NEURON167)."""

from __future__ import annotations

import math

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.checks.startup_reading import copy_start
from neuron_constructs.checks.template_checks.report import Check, TemplateReport, in_properties
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.rules import Rule
from neuron_constructs.knowledge.startup import duration_text, in_task


def _check_grace_against_compile(t: EcsTemplate, out: TemplateReport) -> None:
    """A health-checked service whose copies compile at start (no precompile recorded) and whose task definition
    states the compile: the stated weights copy, compile and load against ``HealthCheckGracePeriodSeconds``."""
    for service in t.services.values():
        start = copy_start(t, service)
        if start is None or not start.compiles or "compile" not in start.stated or not start.health_checked:
            continue
        if start.grace_seconds is None:
            continue  # worked out at deploy time
        needed, _ = in_task(start.stated, ("weights", "compile", "load"))
        if start.grace_seconds >= needed:
            continue
        parts = " + ".join(
            f"{step} {duration_text(start.stated[step])}"
            for step in ("weights", "compile", "load")
            if step in start.stated
        )
        total = f" = {duration_text(needed)}" if " + " in parts else ""
        cache = (
            "with no compile cache" if start.cache is None else "and the first copy of each revision misses its cache"
        )
        out.add(
            r.GRACE_SHORTER_THAN_COMPILE,
            service.logical_id,
            in_properties("HealthCheckGracePeriodSeconds"),
            f"a copy compiles at start ({cache}, no precompile) for {parts}{total} stated, and the "
            f"health check grace period is {duration_text(start.grace_seconds)}: ECS stops the copy before it serves",
            needed=f"Duration.minutes({math.ceil(needed / 60)})",
        )


CHECKS: dict[Rule, Check] = {
    r.GRACE_SHORTER_THAN_COMPILE: _check_grace_against_compile,
}
"""This area's check of each rule."""
