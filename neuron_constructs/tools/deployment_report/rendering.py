"""The report as text: the result first (one line per stack, one line of gaps by kind), details on request."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_constructs.tools.deployment_report.model import Gap, StackReport

__all__ = ["endpoint_label", "format_reports", "gap_summary", "result_line"]


_ROLLOUT_ATTRIBUTES = frozenset(
    {
        "strategy",
        "bakeTimeInMinutes",
        "canaryConfiguration",
        "linearConfiguration",
        "lifecycleHooks",
        "advancedConfiguration",
    }
)
"""The parts of a native rollout
:meth:`~neuron_constructs.tools.deployment_report.ecs.EcsReader.compare_rollout` compares."""
_SUMMARY_GROUPS = 4
"""How many kinds of gap the one-line summary names before it counts the rest."""


def endpoint_label(url: str | None, region: str | None = None) -> str:
    """How a report names the endpoint it read: ``AWS (us-east-1)`` for an AWS endpoint, ``the endpoint at URL``
    for any other (a local emulator, a proxy), so a report never says AWS while talking to something else."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "") if url else ""
    if host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws")):
        return f"AWS ({region})" if region else "AWS"
    return f"the endpoint at {url}" if url else "AWS"


def _short_type(resource_type: str) -> str:
    return resource_type.removeprefix("AWS::")


def _gap_groups(gaps: Sequence[Gap]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(resources not created, properties not kept): each kind with its count, most frequent first."""
    missing: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for gap in gaps:
        if gap.attribute == "resource":
            key = _short_type(gap.resource_type)
            missing[key] = missing.get(key, 0) + 1
        else:
            what = "rollout" if gap.attribute in _ROLLOUT_ATTRIBUTES else gap.attribute
            key = f"{_short_type(gap.resource_type)} {what}"
            dropped[key] = dropped.get(key, 0) + 1

    def ordered(counts: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    return ordered(missing), ordered(dropped)


def _counted(groups: list[tuple[str, int]], budget: int) -> str:
    shown = [f"{name} x{n}" if n > 1 else name for name, n in groups[:budget]]
    rest = len(groups) - len(shown)
    return ", ".join(shown) + (f", {_plural(rest, 'more kind')}" if rest > 0 else "")


def gap_summary(report: StackReport, endpoint: str, *, verbose: bool = False) -> str:
    """One line: how many declared resources ``endpoint`` did not create and properties it did not keep, by kind
    (a native rollout's parts counted as ``rollout``)."""
    who = _who(endpoint)
    if not report.gaps:
        return f"nothing declared is missing or dropped on {who}, as far as this report reads"
    missing, dropped = _gap_groups(report.gaps)
    parts = []
    if missing:
        total = sum(n for _, n in missing)
        parts.append(f"{total} not created ({_counted(missing, _SUMMARY_GROUPS)})")
    if dropped:
        total = sum(n for _, n in dropped)
        parts.append(f"{total} properties not kept ({_counted(dropped, max(2, _SUMMARY_GROUPS - len(missing)))})")
    return f"not created or not kept by {who}: " + "; ".join(parts) + ("" if verbose else " (--verbose lists each)")


def _who(endpoint: str) -> str:
    """``AWS``, or ``the endpoint`` (the heading names it) for any other."""
    return "AWS" if endpoint.startswith("AWS") else "the endpoint"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _next_step(report: StackReport, endpoint: str) -> str:
    """What to look at next: the failure's events, the services that do not run, or the cluster."""
    if not report.created:
        return f"next: the stack's events (aws cloudformation describe-stack-events --stack-name {report.name})"
    short = [s for s in report.services if s.running < s.desired]
    cluster = report.clusters[0] if report.clusters else None
    if short and not endpoint.startswith("AWS"):
        return f"next: the endpoint runs no tasks; on AWS, neuron-ecs inspect --cluster {short[0].cluster}"
    if short:
        return f"next: neuron-ecs inspect --cluster {short[0].cluster} ({_plural(len(short), 'service')} short)"
    if cluster:
        return f"next: neuron-ecs inspect --cluster {cluster}"
    queues = [item.name for item in report.items if item.kind == "batch job queue"]
    if queues:
        return f"next: aws batch describe-job-queues --job-queues {queues[0]}"
    return "next: the stack's outputs (aws cloudformation describe-stacks)"


def result_line(report: StackReport, endpoint: str = "AWS") -> str:
    """The stack's result in one line: created or failed, resources created of declared, services with tasks
    running of desired and placed, and what to look at next."""
    outcome = "created" if report.created else "FAILED"
    parts = [
        f"{report.name}: {outcome} ({report.status})",
        f"{report.resources_created} of {report.resources_declared} resources",
    ]
    if report.services:
        desired = sum(s.desired for s in report.services)
        running = sum(s.running for s in report.services)
        placed = sum(s.placed for s in report.services)
        parts.append(
            f"{_plural(len(report.services), 'service')}, {running} of {_plural(desired, 'task')} running, "
            f"{placed} placed"
        )
    parts.append(_next_step(report, endpoint))
    return "; ".join(parts)


def format_reports(reports: Sequence[StackReport], *, endpoint: str = "AWS", verbose: bool = False) -> str:
    """The result first: a heading naming ``endpoint``, then per stack its :func:`result_line` and the
    :func:`gap_summary` line. ``verbose`` adds, per stack, every resource read and every gap."""
    lines = [f"What each stack created, read back from {endpoint}:"]
    for report in reports:
        if verbose:
            lines.append("")
        lines.append(result_line(report, endpoint))
        lines.append("  " + gap_summary(report, endpoint, verbose=verbose))
        if not verbose:
            continue
        for item in report.items:
            lines.append(f"  {item.kind:<16} {item.name}: " + "; ".join(item.details))
        if report.gaps:
            lines.append(f"  declared in the template, but not created or not kept by {endpoint}:")
            lines += [f"    {gap.resource_type} {gap.logical_id}: {gap.detail}" for gap in report.gaps]
    if not verbose and reports:
        lines.append("(--verbose: every resource's settings and every gap)")
    return "\n".join(lines)
