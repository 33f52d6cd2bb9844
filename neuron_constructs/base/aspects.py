"""Work the library does once the tree is complete, before synthesis, as an aspect on one leaf.

An aspect visits every construct under the one it is added to, and each visit of an aspect written in Python is a
call from the CDK's JavaScript runtime back into Python. Work that only needs "after every construct is added"
rides on a construct with no children (a CloudFormation resource): one visit per synthesis, whatever the size of
the tree around it.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import AspectPriority, Aspects, IAspect
from constructs import IConstruct
from jsii import implements

from neuron_constructs.base.tree import construct_path, node_of

__all__ = ["once_before_synthesis"]


def once_before_synthesis(
    owner: IConstruct, action: Callable[[], None], *, priority: int | float = AspectPriority.DEFAULT
) -> None:
    """Run ``action`` once, in the aspect phase of the next synthesis, at ``priority`` (aws-cdk-lib's default, 500,
    unless given), from an aspect on ``owner``'s CloudFormation resource (its default child, which must have no
    children: a ``ValueError`` otherwise)."""
    leaf = node_of(owner).default_child
    if leaf is None or node_of(leaf).children:
        raise ValueError(f"{construct_path(owner)} has no CloudFormation resource without children to run an aspect on")
    Aspects.of(leaf).add(_Once(action), priority=priority)


@implements(IAspect)
class _Once:
    def __init__(self, action: Callable[[], None]) -> None:
        self._action: Callable[[], None] | None = action

    def visit(self, node: IConstruct) -> None:
        action, self._action = self._action, None
        if action is not None:
            action()
