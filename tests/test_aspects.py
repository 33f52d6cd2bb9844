"""Work the library runs once the tree is complete rides on one CloudFormation resource (``base.aspects``)."""

from __future__ import annotations

import pytest
from aws_cdk import App, AspectPriority, Aspects, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs.base.aspects import once_before_synthesis


def test_the_action_runs_once_after_the_tree_is_complete_and_in_priority_order() -> None:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Stack")
    topic = sns.Topic(stack, "Topic")
    ran: list[str] = []
    once_before_synthesis(topic, lambda: ran.append(f"late, {len(stack.node.children)} children"))
    once_before_synthesis(topic, lambda: ran.append("mutating first"), priority=AspectPriority.MUTATING)
    for index in range(5):  # added after: the actions still see them
        sns.Topic(stack, f"Later{index}")
    assert ran == []
    app.synth()
    assert ran == ["mutating first", "late, 6 children"]


def test_the_aspect_is_on_the_resource_alone_so_nothing_else_is_visited() -> None:
    """What the helper is for: one call from the CDK's runtime into Python, not one per construct of a subtree."""
    app = App(analytics_reporting=False)
    stack = Stack(app, "Stack")
    topic = sns.Topic(stack, "Topic")
    once_before_synthesis(topic, lambda: None)
    resource = topic.node.default_child
    assert resource is not None and resource.node.children == []
    assert [len(Aspects.of(c).all) for c in (app, stack, topic, resource)] == [0, 0, 0, 1]


def test_a_construct_without_one_childless_resource_is_refused() -> None:
    stack = Stack(App(), "Stack")
    with pytest.raises(ValueError, match="Stack/Group has no CloudFormation resource"):
        once_before_synthesis(Construct(stack, "Group"), lambda: None)
