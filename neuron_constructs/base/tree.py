"""Where a construct sits in the construct tree (its node, path, stack and app), asked of the CDK's runtime once.

Reading ``construct.node``, its path or root, or calling ``Stack.of(construct)`` is a round trip to jsii's JavaScript
runtime every time, and the library asks them of the same constructs again and again (each acknowledgement, each
check that two parts share an app and an environment). None of them changes once a construct exists, so the answer
is kept. jsii hands Python the same object every time only for an object Python made; for one the JavaScript side made
(a construct's default child, a construct found in the tree) it makes a new proxy at each hand-over, all of one
reference (``__jsii_ref__``, unique in the runtime's life). So the answer is kept on the object, and under that
reference for the next proxy of it. :func:`kept` does that for any value of a jsii object that never changes (a
duration's seconds, a task definition's resource).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from aws_cdk import Stack
from constructs import IConstruct, Node

__all__ = ["app_of", "construct_path", "kept", "node_of", "remember_path", "stack_of"]

T = TypeVar("T")
_UNREAD = object()


_KEPT: dict[tuple[str, str], object] = {}
"""What :func:`kept` read, by the object's jsii reference and the attribute's name."""


def kept(owner: object, attribute: str, read: Callable[[], T]) -> T:
    """``owner``'s ``attribute`` (a ``_neuron_constructs_...`` name): ``read()`` the first time, kept on ``owner`` and
    under its jsii reference for every later call, through any proxy of it (``read()`` every time for an object that
    is neither a jsii object nor takes attributes)."""
    value = getattr(owner, attribute, _UNREAD)
    if value is not _UNREAD:
        return value  # type: ignore[return-value]
    reference = getattr(getattr(owner, "__jsii_ref__", None), "ref", None)
    key = (reference, attribute) if isinstance(reference, str) else None
    value = _KEPT.get(key, _UNREAD) if key is not None else _UNREAD
    if value is _UNREAD:
        value = read()
        if key is not None:
            _KEPT[key] = value
    with contextlib.suppress(AttributeError):
        setattr(owner, attribute, value)
    return value  # type: ignore[return-value]


def node_of(construct: IConstruct) -> Node:
    """``construct.node``."""
    return kept(construct, "_neuron_constructs_node", lambda: construct.node)


def construct_path(construct: IConstruct) -> str:
    """``construct.node.path``."""
    return kept(construct, "_neuron_constructs_path", lambda: str(node_of(construct).path))


def remember_path(construct: IConstruct, scope: IConstruct, id: str) -> None:
    """Record the path of ``construct``, just made as ``id`` in ``scope``, from its scope's."""
    parent = construct_path(scope)
    with contextlib.suppress(AttributeError):
        construct._neuron_constructs_path = f"{parent}/{id}" if parent else id  # type: ignore[attr-defined]


def stack_of(construct: IConstruct) -> Stack:
    """``Stack.of(construct)``: the stack ``construct`` is in (itself, for a stack)."""
    return kept(construct, "_neuron_constructs_stack", lambda: Stack.of(construct))


def app_of(construct: IConstruct) -> IConstruct:
    """``construct.node.root``: the app (or the root construct) of ``construct``'s tree."""
    return kept(construct, "_neuron_constructs_root", lambda: node_of(construct).root)
