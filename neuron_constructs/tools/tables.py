"""The docs' catalog, rule, density, fleet and rollout tables, generated from the code.

``python -m neuron_constructs.tools.tables docs/*.md`` (``make docs-tables``) rewrites each table between its
``<!-- name:start -->`` / ``<!-- name:end -->`` markers, in whichever page holds it; a test keeps the pages equal
to this output, and every table in exactly one page.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.engine_metrics import DERIVED_METRICS, ENGINE_METRICS
from neuron_constructs.knowledge.rollouts import (
    RolloutPlan,
    RolloutRoom,
    bake_cost,
    peak_room,
    rollout_timeline,
)
from neuron_constructs.knowledge.rules import RULES

__all__ = [
    "CATALOG_HEADERS",
    "EXAMPLE_HOURLY_PRICE",
    "ROLLOUT_EXAMPLE",
    "TABLES",
    "RolloutExample",
    "catalog_rows",
    "catalog_table",
    "density_table",
    "engine_metrics_table",
    "fleet_table",
    "limit_table",
    "mixed_fleet",
    "rewrite",
    "rollout_cost_table",
    "rollout_room",
    "rollout_timeline_table",
    "rules_table",
    "tables_in",
]


def _unknown(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _efa(entry: NeuronInstanceType) -> str:
    """EFA interfaces and bandwidth: ``8 (800 Gbps)``, ``0`` or ``unknown``."""
    if not entry.efa_interfaces:
        return _unknown(entry.efa_interfaces)
    return f"{entry.efa_interfaces} ({entry.efa_gbps} Gbps)" if entry.efa_gbps else str(entry.efa_interfaces)


CATALOG_HEADERS = (
    "type",
    "vCPUs",
    "memory GiB",
    "chips",
    "devices",
    "accelerator",
    "NeuronCores",
    "HBM GiB/chip",
    "EFA",
    "topology",
    "Managed Instances",
    "Spot",
    "current Neuron SDK",
)
"""The columns of the catalog table (the docs and ``neuron-ecs catalog``)."""


def catalog_rows() -> list[tuple[str, ...]]:
    """One row of :data:`CATALOG_HEADERS` cells per catalog entry (the docs' table, ``neuron-ecs catalog``)."""
    rows: list[tuple[str, ...]] = []
    for e in NeuronInstanceType.all():
        devices = e.device_paths[0] if e.chips == 1 else f"{e.device_paths[0]} … {e.device_paths[-1]}"
        rows.append(
            (
                e.name,
                str(e.vcpus),
                str(e.memory_gib),
                str(e.chips),
                devices,
                e.accelerator,
                _cores(e),
                str(e.accelerator_memory_gib_per_chip),
                _efa(e),
                e.topology.value,
                "yes" if e.supports_managed_instances else "no (EC2 only)",
                "yes" if e.spot else "no",
                "yes" if e.supported_by_current_neuron_sdk else "no (SDK 2.20.2 images, NEURON113)",
            )
        )
    return rows


def _cores(entry: NeuronInstanceType) -> str:
    """Physical NeuronCores, and the logical ones at the default setting where that differs: ``128 (64 at LNC=2)``."""
    if entry.default_lnc == 1:
        return str(entry.neuron_cores)
    return f"{entry.neuron_cores} ({entry.cores()} at LNC={entry.default_lnc})"


def catalog_table() -> str:
    """Markdown table of every catalog entry."""
    rows = ["| " + " | ".join(CATALOG_HEADERS) + " |", "|" + "---|" * len(CATALOG_HEADERS)]
    rows += ["| " + " | ".join(row) + " |" for row in catalog_rows()]
    return "\n".join(rows)


def density_table() -> str:
    """Markdown table: tasks per instance, managed allocation against sliced services by chips and by NeuronCores."""
    rows = [
        "| type | chips | managed allocation (NeuronDevice ALL) | SlicedNeuronService: devices_per_task → tasks "
        "per instance | cores_per_task → tasks per instance |",
        "|---|---|---|---|---|",
    ]
    for e in NeuronInstanceType.all():
        managed = (
            (f"1 task holding all {e.chips} chips" if e.chips > 1 else "1 task holding the 1 chip")
            if e.supports_managed_instances
            else "not available (Inf1 runs on EC2 only)"
        )
        sliced = ", ".join(f"{k} → {e.chips // k}" for k in e.slice_sizes())
        per_core = "; ".join(
            (f"LNC={lnc}: " if len(e.lnc_options) > 1 else "")
            + ", ".join(f"{k} → {e.cores(lnc) // k}" for k in _divisors(e.cores_per_chip(lnc)))
            for lnc in sorted(e.lnc_options, reverse=True)
        )
        rows.append(f"| {e.name} | {e.chips} | {managed} | {sliced} | {per_core} |")
    return "\n".join(rows)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def limit_table() -> str:
    """Markdown table: the most models one instance serves - one per NeuronCore, the physical limit - against
    whole-chip slices."""
    rows = [
        "| type | chips | NeuronCores: the limit, one model each (`cores_per_task=1`) | whole chips "
        "(`devices_per_task=1`) | models per instance, cores over chips |",
        "|---|---|---|---|---|",
    ]
    for e in NeuronInstanceType.all():
        limit = e.cores()
        settings = f"{limit} at LNC={e.default_lnc} ({e.cores(1)} at LNC=1)" if len(e.lnc_options) > 1 else str(limit)
        rows.append(f"| {e.name} | {e.chips} | {settings} | {e.chips} | {limit // e.chips} x |")
    return "\n".join(rows)


def mixed_fleet(instance: NeuronInstanceType) -> list[tuple[int, int]]:
    """A mixed fleet that fills ``instance``: (devices_per_task, copies) of a large model (the largest copy size up to
    half the chips, once) and of a one-chip model on every chip left."""
    large = max(k for k in instance.copy_sizes() if k <= max(1, instance.chips // 2))
    return [(large, 1), *([(1, instance.chips - large)] if instance.chips > large else [])]


def fleet_table() -> str:
    """Markdown table: what a NeuronFleet can place per type, a mixed fleet that fills it, and each chip's share."""
    rows = [
        "| type | chips | copy sizes (devices_per_task) | a mixed fleet filling it | per chip: CPU units, MiB |",
        "|---|---|---|---|---|",
    ]
    for e in NeuronInstanceType.all():
        allowed = e.copy_sizes()
        contiguous = len(allowed) > 2 and list(allowed) == list(range(1, len(allowed) + 1))
        sizes = f"1-{allowed[-1]} (any)" if contiguous else ", ".join(str(k) for k in allowed)
        mix = " + ".join(f"{copies} x {k} chip{'s' if k > 1 else ''}" for k, copies in mixed_fleet(e))
        share = f"{e.cpu_units // e.chips}, {e.schedulable_memory_mib // e.chips}"
        rows.append(f"| {e.name} | {e.chips} | {sizes} | {mix} | {share} |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    """Escape what Markdown would read as table or emphasis syntax."""
    return text.replace("|", "\\|").replace("*", "\\*")


_CHECKED = {"call": "at the call", "template": "on the template", "both": "both"}


def rules_table() -> str:
    """Markdown table of every rule: id, kind, where it is checked, what it catches, the AWS rule, the fix."""
    rows = ["| id | kind | checked | input | AWS rule | fix |", "|---|---|---|---|---|---|"]
    for rule in RULES:
        kind = "error" if rule.severity == "error" else f"warning `{rule.warning_id}`"
        checked = _CHECKED[rule.checked] + (f" ({rule.cfn_lint_id})" if rule.on_template else "")
        fix = re.sub(r"\{\{?(\w+)(!r)?\}\}?", r"`<\1>`", _cell(rule.fix))
        rows.append(f"| {rule.id} | {kind} | {checked} | {rule.title} | {_cell(rule.aws_rule)} | {fix} |")
    return "\n".join(rows)


def engine_metrics_table() -> str:
    """Markdown table of the engine metrics the collector reads (one row each) and the ones it derives."""
    rows = [
        "| CloudWatch metric | unit | dimensions | from | engine and release | what |",
        "|---|---|---|---|---|---|",
    ]
    for metric in ENGINE_METRICS:
        dimensions = "`ClusterName, Model`" + (", and `ClusterName, Model, Bucket`" if metric.per else "")
        engines = ", ".join(e.name for e in metric.engines)
        rows.append(
            f"| `{metric.name}` | {metric.unit} | {dimensions} | `{metric.prometheus}` ({metric.prometheus_type}) "
            f"| {engines}: {metric.release} | {_cell(metric.what)} |"
        )
    for name, (unit, what) in DERIVED_METRICS.items():
        source = "the collector | every engine of the table"
        rows.append(f"| `{name}` | {unit} | `ClusterName, Model` | {source} | {what} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class RolloutExample:
    """A model to roll out: ``copies`` copies of ``chips`` chips on ``instance_type``, whose copies start (instances
    launched, model downloaded, compiled or loaded, health check passed) in ``warm_start_minutes`` with compiled
    graphs at hand and ``cold_start_minutes`` without, smoke-tested in ``smoke_test_minutes``."""

    instance_type: str = "inf2.48xlarge"
    copies: int = 6
    chips: int = 2
    warm_start_minutes: float = 10
    cold_start_minutes: float = 30
    smoke_test_minutes: float = 1.5


ROLLOUT_EXAMPLE = RolloutExample()
"""The rollout page's example: six two-chip copies of a model on inf2.48xlarge, starting in 10 minutes (the upper
end of AWS's "5-10 minutes" for its vLLM container) or 30 (the start-up allowance, ``MODEL_START_GRACE_PERIOD``),
with a smoke test of the default 60 s request and the function's 30 s (``SmokeTest().function_timeout``)."""
EXAMPLE_HOURLY_PRICE = 12.98
"""An example On-Demand price of inf2.48xlarge in dollars an hour, for the rollout page's arithmetic only."""


def rollout_room(plan: RolloutPlan, copies_per_instance: int) -> RolloutRoom:
    """The peak of the rollout example under ``plan``, ``copies_per_instance`` copies an instance."""
    instance = NeuronInstanceType.of(ROLLOUT_EXAMPLE.instance_type)
    chips = ROLLOUT_EXAMPLE.chips
    return peak_room(
        plan,
        instance,
        desired=ROLLOUT_EXAMPLE.copies,
        copies_per_instance=copies_per_instance,
        chips=chips,
        cpu=instance.cpu_units * chips // instance.chips,
        memory_mib=instance.schedulable_memory_mib * chips // instance.chips,
    )


def _minutes(value: float) -> str:
    return f"{value:g}"


def rollout_timeline_table() -> str:
    """Markdown table: a blue/green rollout of the example with a smoke test, from a cold start, phase by phase, with
    the chips and instances held on six copies an instance."""
    plan = RolloutPlan.blue_green()
    copies, chips = ROLLOUT_EXAMPLE.copies, ROLLOUT_EXAMPLE.chips
    timeline = rollout_timeline(
        plan,
        start_minutes=ROLLOUT_EXAMPLE.cold_start_minutes,
        desired=copies,
        smoke_test_minutes=ROLLOUT_EXAMPLE.smoke_test_minutes,
    )
    room = rollout_room(plan, copies_per_instance=copies)
    rows = [
        "| minutes | ECS stage | blue copies | green copies | green's share of production traffic | chips held "
        "| instances | what happens |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for phase in timeline.phases:
        held = (phase.blue_copies + phase.green_copies) * chips
        stage = ", ".join(f"`{s}`" for s in phase.stage.split(", "))
        rows.append(
            f"| {_minutes(phase.start_minutes)}-{_minutes(phase.end_minutes)} | {stage} | {phase.blue_copies} "
            f"| {phase.green_copies} | {phase.green_percent:g} % | {held} | {room.instances} | {phase.what} |"
        )
    steady = -(-copies // copies)
    rows.append(
        f"| {_minutes(timeline.end_minutes)}- | (done) | 0 | {copies} | 100 % | {copies * chips} | {steady} "
        "| green is the service; blue's instance is gone |"
    )
    return "\n".join(rows)


def _example_plans() -> list[tuple[str, RolloutPlan, float | None]]:
    smoke = ROLLOUT_EXAMPLE.smoke_test_minutes
    return [
        ("blue/green, smoke test, bake 10 min", RolloutPlan.blue_green(), smoke),
        ("canary 10 % for 5 min, bake 10 min", RolloutPlan.canary(), None),
        ("linear 25 % every 5 min, bake 10 min", RolloutPlan.linear(), None),
    ]


def rollout_cost_table() -> str:
    """Markdown table: what each rollout of the example holds beyond the steady state, warm and cold, on six copies
    an instance and on one (a ``NeuronService``), in instance-hours and at :data:`EXAMPLE_HOURLY_PRICE`."""
    price = EXAMPLE_HOURLY_PRICE
    rows = [
        "| rollout | green's start | deployment | extra instances held | six copies an instance: extra "
        "instances, instance-hours (the bake time's) | dollars | one copy an instance: extra instances, "
        "instance-hours (the bake time's) | dollars |",
        "|---|---|---|---|---|---|---|---|",
    ]
    copies = ROLLOUT_EXAMPLE.copies
    for name, plan, smoke in _example_plans():
        for start in (ROLLOUT_EXAMPLE.warm_start_minutes, ROLLOUT_EXAMPLE.cold_start_minutes):
            timeline = rollout_timeline(plan, start_minutes=start, desired=copies, smoke_test_minutes=smoke)
            cells = []
            for per in (copies, 1):
                cost = bake_cost(
                    plan,
                    rollout_room(plan, per),
                    start_minutes=start,
                    instance_hourly_price=price,
                    smoke_test_minutes=smoke,
                )
                cells.append(
                    f"{cost.extra_instances}, {cost.instance_hours:.2f} ({cost.bake_instance_hours:.2f}) "
                    f"| ${cost.dollars or 0:.2f} (${cost.bake_dollars or 0:.2f})"
                )
            rows.append(
                f"| {name} | {_minutes(start)} min | {_minutes(timeline.deployment_minutes)} min "
                f"| {_minutes(timeline.end_minutes)} min | {cells[0]} | {cells[1]} |"
            )
    return "\n".join(rows)


TABLES = {
    "catalog": catalog_table,
    "rules": rules_table,
    "density": density_table,
    "engine-metrics": engine_metrics_table,
    "fleet": fleet_table,
    "limit": limit_table,
    "rollout-timeline": rollout_timeline_table,
    "rollout-cost": rollout_cost_table,
}
"""Each generated table by the name its markers use."""


def tables_in(text: str) -> list[str]:
    """The names of the generated tables ``text`` marks, in :data:`TABLES` order."""
    return [name for name in TABLES if f"<!-- {name}:start -->" in text]


def rewrite(text: str) -> str:
    """``text`` with every marked table it holds replaced by its generated content; a table whose end marker is
    missing is an error."""
    for name in tables_in(text):
        start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
        head, _, rest = text.partition(start)
        _, found_end, tail = rest.partition(end)
        if not found_end:
            raise ValueError(f"{start.strip()} without {end.strip()}")
        text = head + start + TABLES[name]() + end + tail
    return text


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        page = Path(argument)
        page.write_text(rewrite(page.read_text()))
