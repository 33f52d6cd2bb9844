"""The template checks at ``cdk synth``: an aws-cdk-lib validation plugin.

:class:`NeuronTemplateChecks` runs :func:`~neuron_constructs.template_checks.check_template`
on every template of a stage after synthesis. Every error of a Neuron rule fails the synth, with
the rule's message and the construct path of the resource; a template-check error cannot be
acknowledged (ECS or the Neuron runtime would not accept the result). Warnings stay where the
constructs raise them, as acknowledgeable CDK warnings.

Every construct of this library calls :func:`enable_template_checks`, so an app that uses one
checks all of its stacks, including services and task definitions made with plain aws-cdk-lib
or changed through escape hatches. An app that uses none of them can call it once on its
``App``.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from weakref import WeakSet

import jsii
from aws_cdk import (
    CfnElement,
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Stack,
    Stage,
    Validations,
)
from constructs import IConstruct

from neuron_constructs.rules import RULES
from neuron_constructs.template_checks import check_template

__all__ = ["PLUGIN_NAME", "NeuronTemplateChecks", "enable_template_checks"]

PLUGIN_NAME = "NeuronConstructs"
"""How validation reports name these checks."""

_ENABLED: WeakSet[Stage] = WeakSet()


def _version() -> str:
    try:
        return metadata.version("neuron-constructs")
    except metadata.PackageNotFoundError:
        return "0.0.0"


@jsii.implements(IPolicyValidationPlugin)
class NeuronTemplateChecks:
    """The Neuron rules' template checks as a validation plugin (errors only; severity ``fatal``)."""

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def version(self) -> str:
        return _version()

    @property
    def rule_ids(self) -> list[str]:
        return [rule.id for rule in RULES if rule.on_template and rule.severity == "error"]

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        violations: list[PolicyViolation] = []
        for stack in context.stack_templates:
            template = json.loads(Path(stack.template_path).read_text())
            paths = _ConstructPaths(context.app_construct, stack.stack_construct_path)
            for finding in check_template(template, severities=("error",), construct_paths=paths):
                violations.append(
                    PolicyViolation(
                        rule_name=finding.rule.id,
                        description=finding.message,
                        severity="fatal",
                        fix=finding.message.rsplit("Fix: ", 1)[-1],
                        violating_resources=[
                            PolicyViolatingResource(
                                resource_logical_id=finding.logical_id,
                                template_path=stack.template_path,
                                locations=["/".join(str(p) for p in finding.location[2:])],
                            )
                        ],
                    )
                )
        return PolicyValidationPluginReport(success=not violations, violations=violations)


class _ConstructPaths:
    """Logical id -> construct path for one stack, read from the construct tree on first use."""

    def __init__(self, app: IConstruct, stack_path: str) -> None:
        self._app = app
        self._stack_path = stack_path
        self._paths: dict[str, str] | None = None

    def __call__(self, logical_id: str) -> str | None:
        if self._paths is None:
            self._paths = self._read()
        return self._paths.get(logical_id)

    def _read(self) -> dict[str, str]:
        stack = next((c for c in self._app.node.find_all() if c.node.path == self._stack_path), None)
        if not isinstance(stack, Stack):
            return {}
        paths: dict[str, str] = {}
        for construct in stack.node.find_all():
            if isinstance(construct, CfnElement) and Stack.of(construct) is stack:
                paths[str(stack.resolve(construct.logical_id))] = _owner_path(construct)
        return paths


def _owner_path(element: CfnElement) -> str:
    """The path of the L2 that owns an L1 (``.../Service``, not ``.../Service/Service``), else the L1's."""
    parent = element.node.scope
    if parent is not None and not isinstance(parent, Stack):
        own = [c for c in parent.node.children if isinstance(c, CfnElement)]
        if len(own) == 1:
            return parent.node.path
    return element.node.path


def enable_template_checks(scope: IConstruct) -> None:
    """Check every template of the outermost stage around ``scope`` at synth (once per stage)."""
    stage = Stage.of(scope)
    if stage is None:
        return
    while (outer := Stage.of(stage)) is not None:
        stage = outer
    if stage in _ENABLED:
        return
    Validations.of(stage).add_plugins(NeuronTemplateChecks())
    _ENABLED.add(stage)
