"""Where a construct sits in the tree, asked of the CDK's runtime once (``neuron_constructs.base.tree``)."""

from __future__ import annotations

from collections.abc import Iterator

import jsii._runtime
import pytest
from aws_cdk import App, Stack, Stage
from constructs import Construct

from neuron_constructs.base.tree import app_of, construct_path, node_of, remember_path, stack_of


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The requests this test sends to the CDK's runtime, by kind."""
    process = jsii._runtime.kernel.provider._process  # type: ignore[attr-defined]
    sent: list[str] = []
    send = type(process).send

    def counted(self: object, request: object, response_type: object) -> object:
        sent.append(type(request).__name__)
        return send(self, request, response_type)

    monkeypatch.setattr(type(process), "send", counted)
    yield sent


def test_the_answers_are_the_cdk_s_own_in_a_stage_of_an_app() -> None:
    app = App(analytics_reporting=False)
    stack = Stack(Stage(app, "Prod"), "Platform")
    construct = Construct(Construct(stack, "Team"), "Model")
    assert (node_of(construct).id, node_of(construct).scope) == ("Model", construct.node.scope)
    assert construct_path(construct) == construct.node.path == "Prod/Platform/Team/Model"
    assert stack_of(construct) is Stack.of(construct) is stack
    assert stack_of(stack) is stack
    assert app_of(construct) is construct.node.root is app


def test_each_is_asked_of_the_runtime_once_per_construct(calls: list[str]) -> None:
    construct = Construct(Stack(App(analytics_reporting=False), "Platform"), "Model")
    calls.clear()
    first = (node_of(construct), construct_path(construct), stack_of(construct), app_of(construct))
    asked = len(calls)
    assert asked == 4  # node, its path, Stack.of and the root: the path and the root reuse the node
    again = (node_of(construct), construct_path(construct), stack_of(construct), app_of(construct))
    assert len(calls) == asked
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_a_remembered_path_is_the_scope_s_and_the_id(calls: list[str]) -> None:
    stack = Stack(App(analytics_reporting=False), "Platform")
    construct = Construct(stack, "Model")
    remember_path(construct, stack, "Model")
    calls.clear()
    assert construct_path(construct) == "Platform/Model"
    assert calls == []
