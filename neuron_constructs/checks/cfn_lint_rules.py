"""The Neuron rules' template checks as a cfn-lint rule pack.

Enable it with one option: ``cfn-lint --append-rules neuron_constructs.checks.cfn_lint_rules TEMPLATE``,
or in ``.cfnlintrc``: ``append_rules: [neuron_constructs.checks.cfn_lint_rules]``. cfn-lint imports this
module and runs every rule class in it; each rule is one rule of
:mod:`neuron_constructs.knowledge.rules` under its cfn-lint id (``E91NN`` for errors, ``W92NN`` for warnings:
NEURON009 is E9109, NEURON109 is W9209), with the same message as ``neuron-ecs lint``.

Importing this module needs cfn-lint (``pip install cfn-lint``); the rest of the library does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cfnlint.rules import CloudFormationLintRule, RuleMatch

from neuron_constructs.checks.template_checks import check_template
from neuron_constructs.knowledge.rules import RULES, Rule

__all__ = ["NEURON_RULE_CLASSES", "NeuronRule"]


class NeuronRule(CloudFormationLintRule):  # type: ignore[misc]
    """One Neuron rule; subclasses set ``rule``."""

    rule: Rule

    def match(self, cfn: Any) -> list[RuleMatch]:
        return list(self._matches(cfn))

    def _matches(self, cfn: Any) -> Iterator[RuleMatch]:
        for finding in check_template(dict(cfn.template), only=[self.rule.id]):
            yield RuleMatch(list(finding.location), finding.message)


def _rule_class(rule: Rule) -> type[NeuronRule]:
    attributes = {
        "id": rule.cfn_lint_id,
        "shortdesc": f"{rule.id}: {rule.title}",
        "description": f"{rule.aws_rule} ({rule.source})",
        "source_url": "https://pypi.org/project/neuron-constructs/",
        "tags": ["neuron", "ecs"],
        "rule": rule,
    }
    return type(f"Neuron{rule.id.removeprefix('NEURON')}", (NeuronRule,), attributes)


NEURON_RULE_CLASSES: tuple[type[NeuronRule], ...] = tuple(_rule_class(rule) for rule in RULES if rule.on_template)
"""One cfn-lint rule class per rule checked on templates."""

globals().update({cls.__name__: cls for cls in NEURON_RULE_CLASSES})
