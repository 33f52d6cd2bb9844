"""The Neuron rules, checked on a finished CloudFormation template.

Every rule of :mod:`neuron_constructs.knowledge.rules` whose ``checked`` is ``template`` or ``both`` has one
check here: a function from an :class:`~neuron_constructs.checks.cfn_template.EcsTemplate` to the
findings, each with the rule's id and the same ``<path>: <problem>. [<id>: <rule>] Fix: ...``
message the constructs raise. The checks see the template however it was made - the
library's API before or after construction, plain aws-cdk-lib constructs, escape hatches,
another CDK language, SAM or a hand-written file - so they are the net under the early checks.

Used three ways: at ``cdk synth`` by :mod:`neuron_constructs.base.synth_checks` (errors fail the
synth), by ``neuron-ecs lint`` on any template file, and as a cfn-lint rule pack
(:mod:`neuron_constructs.checks.cfn_lint_rules`). No AWS CDK import here.

One module per area, each with the checks of its rules and a ``CHECKS`` table of them, like cfn-lint's rule
folders:

* :mod:`.task_definitions`: Neuron devices, sizes and runtime variables of a task definition on its own;
* :mod:`.managed_instances`: what ECS Managed Instances accept (no Inf1, the fields it takes, NeuronDevice);
* :mod:`.placement`: services on capacity that launches their type, one task per instance, pins, no shared device;
* :mod:`.deployments`: rolling deployments that can start and finish;
* :mod:`.slices`: capacity sliced between the copies of one service or fleet;
* :mod:`.capacity`: Auto Scaling groups of a Neuron type (bounds, the ECS Neuron AMI, the root volume);
* :mod:`.security`: the host network, public subnets, secrets in plain text, instance metadata;
* :mod:`.load_balancing`: services a load balancer they are registered with can reach;
* :mod:`.startup`: a copy's stated start against its service's health check grace period.

:data:`TEMPLATE_CHECKS` runs them in the order of the rule table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from neuron_constructs.checks.cfn_template import EcsTemplate, combine_templates
from neuron_constructs.checks.template_checks import (
    capacity,
    deployments,
    load_balancing,
    managed_instances,
    placement,
    security,
    slices,
    startup,
    task_definitions,
)
from neuron_constructs.checks.template_checks.report import Check, Finding, TemplateReport
from neuron_constructs.checks.template_loading import LoadedTemplate
from neuron_constructs.knowledge import rules as r

__all__ = ["TEMPLATE_CHECKS", "Finding", "check_template", "check_templates"]

_AREAS = (
    task_definitions,
    managed_instances,
    placement,
    deployments,
    slices,
    capacity,
    security,
    load_balancing,
    startup,
)


def _registry() -> dict[str, Check]:
    """Every area's checks by rule id, in rule table order; each rule checked on templates has exactly one."""
    by_rule: dict[str, Check] = {}
    for area in _AREAS:
        for rule, check in area.CHECKS.items():
            if rule.id in by_rule or not rule.on_template:
                raise RuntimeError(f"{area.__name__}: {rule.id} is checked twice or is not a template rule")
            by_rule[rule.id] = check
    missing = [rule.id for rule in r.RULES if rule.on_template and rule.id not in by_rule]
    if missing:
        raise RuntimeError(f"no template check for {missing}")
    return {rule.id: by_rule[rule.id] for rule in r.RULES if rule.id in by_rule}


TEMPLATE_CHECKS: dict[str, Check] = _registry()
"""One check per rule checked on the template, by rule id, in the order of the rule table."""


def check_template(
    template: LoadedTemplate | dict[str, Any],
    *,
    name: str = "template",
    severities: Sequence[str] = ("error", "warning"),
    only: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    construct_paths: Callable[[str], str | None] | None = None,
) -> list[Finding]:
    """Every finding of the template checks on one template, errors first, in template order.

    ``severities`` selects errors and/or warnings; ``only`` and ``ignore`` select rule ids;
    ``construct_paths`` maps a logical id to its construct path where the template has no
    ``aws:cdk:path`` metadata. A resource's ``Metadata.cfn-lint.config.ignore_checks`` silences
    rule ids (or their cfn-lint ids) for that resource.
    """
    loaded = template if isinstance(template, LoadedTemplate) else LoadedTemplate(template)
    model = EcsTemplate(loaded, name=name, construct_paths=construct_paths)
    return [replace(f, template=name) for f in _run(model, severities, only, ignore)]


def check_templates(
    templates: Mapping[str, LoadedTemplate | dict[str, Any]],
    *,
    severities: Sequence[str] = ("error", "warning"),
    only: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    construct_paths: Callable[[str, str], str | None] | None = None,
) -> list[Finding]:
    """The template checks on the templates of one app at once (stacks that reference each other's
    exports), each finding naming its template and its logical id there.

    ``construct_paths(template, logical_id)`` maps to construct paths as in :func:`check_template`.
    """
    if len(templates) == 1:
        ((name, template),) = templates.items()
        paths = (lambda logical_id: construct_paths(name, logical_id)) if construct_paths else None
        return check_template(
            template, name=name, severities=severities, only=only, ignore=ignore, construct_paths=paths
        )
    plain = {n: (t.template if isinstance(t, LoadedTemplate) else t) for n, t in templates.items()}
    combined, origin = combine_templates(plain)

    def combined_paths(logical_id: str) -> str | None:
        return construct_paths(*origin[logical_id]) if construct_paths and logical_id in origin else None

    model = EcsTemplate(LoadedTemplate(combined), construct_paths=combined_paths, origin=origin)
    found: list[Finding] = []
    for finding in _run(model, severities, only, ignore):
        name, logical_id = origin.get(finding.logical_id, ("template", finding.logical_id))
        location = ("Resources", logical_id, *finding.location[2:])
        found.append(replace(finding, logical_id=logical_id, location=location, template=name))
    order = {name: i for i, name in enumerate(templates)}
    return sorted(found, key=lambda f: (f.severity != "error", order.get(f.template, 0)))


def _run(
    model: EcsTemplate, severities: Sequence[str], only: Iterable[str] | None, ignore: Iterable[str]
) -> list[Finding]:
    report = TemplateReport(model)
    wanted = set(only) if only is not None else None
    skipped = set(ignore)
    for rule_id, check in TEMPLATE_CHECKS.items():
        rule = r.BY_ID[rule_id]
        if rule.severity in severities and (wanted is None or rule_id in wanted) and rule_id not in skipped:
            check(model, report)
    order = {lid: i for i, lid in enumerate(model.resources)}
    findings = [
        f for f in report.findings if not ({f.rule.id, f.rule.cfn_lint_id} & set(model.ignored_checks(f.logical_id)))
    ]
    return sorted(findings, key=lambda f: (f.severity != "error", order.get(f.logical_id, 0)))
