"""AWS CDK constructs for AWS Neuron (Inferentia, Trainium) workloads on Amazon ECS.

The catalog, the rules and the error type load without the AWS CDK; the
constructs load on first use, so tooling that needs only the catalog never
starts the CDK's JavaScript runtime.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from neuron_constructs.catalog import NeuronInstanceType
from neuron_constructs.errors import NeuronConfigurationError
from neuron_constructs.rules import RULES, Rule

if TYPE_CHECKING:
    from neuron_constructs.cluster import NeuronCluster
    from neuron_constructs.services import NeuronService
    from neuron_constructs.sliced_service import SlicedNeuronService
    from neuron_constructs.task_definitions import (
        ManagedNeuronTaskDefinition,
        ManualNeuronTaskDefinition,
        NeuronTaskDefinition,
    )

__all__ = [
    "RULES",
    "ManagedNeuronTaskDefinition",
    "ManualNeuronTaskDefinition",
    "NeuronCluster",
    "NeuronConfigurationError",
    "NeuronInstanceType",
    "NeuronService",
    "NeuronTaskDefinition",
    "Rule",
    "SlicedNeuronService",
]

_LAZY = {
    "NeuronCluster": "neuron_constructs.cluster",
    "NeuronService": "neuron_constructs.services",
    "SlicedNeuronService": "neuron_constructs.sliced_service",
    "ManagedNeuronTaskDefinition": "neuron_constructs.task_definitions",
    "ManualNeuronTaskDefinition": "neuron_constructs.task_definitions",
    "NeuronTaskDefinition": "neuron_constructs.task_definitions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'neuron_constructs' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
