"""The rules of a load balancer listener the library attaches to: one default action, one rule per priority.

:func:`claim_rule` records what each priority of a listener (``None``: its default action) forwards to, refuses a
second claim (NEURON042) and adds a validation that compares the rules made with aws-cdk-lib alone at synth;
:func:`attached_to` answers what a priority forwards to.
"""

from __future__ import annotations

import weakref

import jsii
from aws_cdk import Stack
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct, IConstruct, IValidation

from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules

__all__ = ["attached_to", "check_default_action_stack", "claim_rule"]


def check_default_action_stack(path: str, listener: IConstruct, owner: Construct) -> None:
    """NEURON055: a target group is the default action only of a listener in its own stack."""
    if Stack.of(listener) is not Stack.of(owner):
        raise rules.DEFAULT_ACTION_ACROSS_STACKS.error(
            path,
            f"no conditions make it the default action of {construct_path(listener)}, in stack "
            f"{Stack.of(listener).stack_name}, but {path} is in stack {Stack.of(owner).stack_name}",
            listener=construct_path(listener),
        )


_RULES_OF: weakref.WeakKeyDictionary[object, dict[int | None, str]] = weakref.WeakKeyDictionary()
"""Per listener: what each priority (``None``: the default action) forwards to, as attached here."""


def attached_to(listener: IConstruct, priority: int | None = None) -> str | None:
    """The path of what ``attach`` put on ``listener`` at ``priority`` (``None``: the default action)."""
    return _RULES_OF.get(listener, {}).get(priority)


def claim_rule(path: str, listener: IConstruct, owner: Construct, priority: int | None) -> None:
    """NEURON042: one default action, and one rule per priority, on a listener; rules made with aws-cdk-lib alone
    (``add_targets``, ``add_action``, ``ApplicationListenerRule``) are compared at synth."""
    if listener not in _RULES_OF:
        listener.node.add_validation(_OneRulePerPriority(listener))
    taken = _RULES_OF.setdefault(listener, {})
    if priority in taken:
        place = "the default action" if priority is None else f"priority {priority}"
        raise rules.LISTENER_RULE.error(
            path, f"{place} of {construct_path(listener)} already forwards to {taken[priority]}"
        )
    taken[priority] = construct_path(owner)


@jsii.implements(IValidation)
class _OneRulePerPriority:
    """NEURON042 at synth: no two listener rules of the app hold one priority of ``listener``."""

    def __init__(self, listener: IConstruct) -> None:
        self._listener = listener

    def validate(self) -> list[str]:
        arn = getattr(self._listener, "listener_arn", None)
        held: dict[object, list[str]] = {}
        for node in self._listener.node.root.node.find_all():
            if isinstance(node, elbv2.CfnListenerRule) and node.listener_arn == arn and not is_token(node.priority):
                held.setdefault(node.priority, []).append(construct_path(node.node.scope or node))
        return [
            rules.LISTENER_RULE.message(
                holders[1],
                f"priority {priority:g} of {construct_path(self._listener)} is held by {' and '.join(holders)}",
            )
            for priority, holders in held.items()
            if len(holders) > 1
        ]
