"""Where a construct sits in the tree, asked of the CDK's runtime once (``neuron_constructs.base.tree``)."""

from __future__ import annotations

from aws_cdk import App, Stack, Stage
from constructs import Construct

from neuron_constructs.base.tree import app_of, construct_path, node_of, remember_path, stack_of


def test_the_answers_are_the_cdk_s_own_in_a_stage_of_an_app() -> None:
    app = App(analytics_reporting=False)
    stack = Stack(Stage(app, "Prod"), "Platform")
    construct = Construct(Construct(stack, "Team"), "Model")
    assert (node_of(construct).id, node_of(construct).scope) == ("Model", construct.node.scope)
    assert construct_path(construct) == construct.node.path == "Prod/Platform/Team/Model"
    assert stack_of(construct) is Stack.of(construct) is stack
    assert stack_of(stack) is stack
    assert app_of(construct) is construct.node.root is app


def test_each_is_asked_of_the_runtime_once_per_construct(jsii_requests: list[str]) -> None:
    construct = Construct(Stack(App(analytics_reporting=False), "Platform"), "Model")
    jsii_requests.clear()
    first = (node_of(construct), construct_path(construct), stack_of(construct), app_of(construct))
    asked = len(jsii_requests)
    assert asked == 4  # node, its path, Stack.of and the root: the path and the root reuse the node
    again = (node_of(construct), construct_path(construct), stack_of(construct), app_of(construct))
    assert len(jsii_requests) == asked
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_a_remembered_path_is_the_scope_s_and_the_id(jsii_requests: list[str]) -> None:
    stack = Stack(App(analytics_reporting=False), "Platform")
    construct = Construct(stack, "Model")
    remember_path(construct, stack, "Model")
    jsii_requests.clear()
    assert construct_path(construct) == "Platform/Model"
    assert jsii_requests == []


def test_a_construct_the_runtime_made_is_asked_once_whichever_proxy_of_it_asks(jsii_requests: list[str]) -> None:
    """jsii makes a new Python proxy each time it hands over an object the JavaScript side made (here a task
    definition's ``AWS::ECS::TaskDefinition``): what is kept is kept under the object's reference."""
    from aws_cdk import aws_ecs as ecs

    task_definition = ecs.Ec2TaskDefinition(Stack(App(analytics_reporting=False), "Platform"), "Task")
    first, second = task_definition.node.default_child, task_definition.node.default_child
    assert first is not second and first.__jsii_ref__.ref == second.__jsii_ref__.ref  # type: ignore[union-attr]
    assert first is not None and second is not None
    jsii_requests.clear()
    assert construct_path(first) == "Platform/Task/Resource"
    asked = len(jsii_requests)
    assert construct_path(second) == "Platform/Task/Resource" and node_of(second) is node_of(first)
    assert len(jsii_requests) == asked
