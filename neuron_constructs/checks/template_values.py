"""A CloudFormation value as the Neuron rules read it: the resource a ``Ref`` or ``Fn::GetAtt`` names, a whole number,
task CPU units and memory in any form ECS takes, and the instance types a placement expression admits. A value the
template works out at deploy time reads as ``None``: the checks skip what they cannot know.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from neuron_constructs.knowledge.numbers import parse_whole_number

__all__ = ["cpu_units", "memory_mib", "pinned_instance_types", "ref_target", "whole_number"]

_INSTANCE_TYPE_PIN = re.compile(r"^\s*attribute:ecs\.instance-type\s*(==|in)\s*(.+?)\s*$")
_CPU_UNITS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*vcpu\s*$", re.IGNORECASE)
_MEMORY_GB = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*gb\s*$", re.IGNORECASE)


def ref_target(value: Any) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` points at, else ``None``."""
    if isinstance(value, Mapping) and len(value) == 1:
        if "Ref" in value and isinstance(value["Ref"], str):
            return value["Ref"]
        attribute = value.get("Fn::GetAtt")
        if isinstance(attribute, list) and attribute and isinstance(attribute[0], str):
            return attribute[0]
        if isinstance(attribute, str):
            return attribute.split(".", 1)[0]
    return None


def whole_number(value: Any) -> int | None:
    """An integer from a literal int or numeric string; ``None`` for anything computed or malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return parse_whole_number(value)
    return None


def _scaled(value: Any, unit: re.Pattern[str]) -> int | None:
    """A whole number, or ``<n> <unit>`` (vCPU, GB) as 1024 of the base unit each."""
    number = whole_number(value)
    if number is not None:
        return number
    match = unit.match(value) if isinstance(value, str) else None
    return int(float(match.group(1)) * 1024) if match else None


def cpu_units(value: Any) -> int | None:
    """Task cpu as CPU units: ``"4096"``, ``4096`` or ``"4 vCPU"``."""
    return _scaled(value, _CPU_UNITS)


def memory_mib(value: Any) -> int | None:
    """Task memory in MiB: ``"16384"``, ``16384`` or ``"16 GB"``."""
    return _scaled(value, _MEMORY_GB)


def pinned_instance_types(expression: Any) -> frozenset[str] | None:
    """The instance types a ``memberOf`` expression on ``attribute:ecs.instance-type`` admits.

    ``== t`` and ``in [a, b]`` are understood; any other expression gives ``None``.
    """
    if not isinstance(expression, str):
        return None
    match = _INSTANCE_TYPE_PIN.match(expression)
    if not match:
        return None
    operator, operand = match.groups()
    if operator == "==":
        return frozenset({operand.strip("'\" ")})
    if operand.startswith("[") and operand.endswith("]"):
        names = [name.strip("'\" ") for name in operand[1:-1].split(",")]
        return frozenset(name for name in names if name)
    return None
