"""One rule of the table: the :class:`Rule` class, and the sources several areas of the table cite.

A rule's :meth:`Rule.error` is what the checks raise (a
:class:`~neuron_constructs.knowledge.errors.NeuronConfigurationError` naming the construct, the rule and the fix);
its ``warning_id`` is what a CDK warning of it carries. No AWS CDK import here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from neuron_constructs.knowledge.errors import NeuronConfigurationError

__all__ = ["Rule"]

ECS_NEURON_PAGE = "ECS guide: task definitions for AWS Neuron workloads"
ECS_MI_PARAMETERS_PAGE = "ECS guide: task definition parameters for Managed Instances"
NEURON_SCHEDULER = "Neuron scheduler extension (aws-neuron-sdk scheduler.rst)"


@dataclass(frozen=True)
class Rule:
    """One ECS Neuron rule: what AWS says, and what to change when it is broken."""

    id: str
    title: str
    aws_rule: str
    fix: str
    source: str
    severity: Literal["error", "warning"] = "error"
    checked: Literal["call", "template", "both"] = "call"
    """Where the rule runs: at the call that breaks it, on the synthesized template (every path, and
    ``neuron-ecs lint``), or both."""

    @property
    def on_template(self) -> bool:
        """Whether :mod:`neuron_constructs.checks.template_checks` checks this rule on CloudFormation."""
        return self.checked in ("template", "both")

    @property
    def at_call(self) -> bool:
        """Whether the constructs check this rule at the call (or construct) that breaks it."""
        return self.checked in ("call", "both")

    @property
    def cfn_lint_id(self) -> str:
        """The id of this rule in the cfn-lint rule pack: ``E91NN`` for errors, ``W92NN`` for warnings."""
        number = int(self.id.removeprefix("NEURON")) % 100
        return f"E91{number:02d}" if self.severity == "error" else f"W92{number:02d}"

    @property
    def warning_id(self) -> str:
        """The id a CDK warning of this rule carries, for ``acknowledge``."""
        return f"neuron-constructs:{self.id}"

    def message(self, construct_path: str, problem: str, **fix_values: object) -> str:
        """``<path>: <problem> [<id>: <rule>] Fix: <fix>``."""
        fix = self.fix.format(**fix_values) if fix_values else self.fix
        return f"{construct_path}: {problem}. [{self.id}: {self.aws_rule}] Fix: {fix}"

    def error(self, construct_path: str, problem: str, **fix_values: object) -> NeuronConfigurationError:
        """The exception to raise for this rule, message as in :meth:`message`."""
        return NeuronConfigurationError(self.message(construct_path, problem, **fix_values))
