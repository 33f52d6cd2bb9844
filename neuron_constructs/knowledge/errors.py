"""The one exception type the library raises for a broken ECS Neuron rule."""

from __future__ import annotations

__all__ = ["NeuronConfigurationError"]


class NeuronConfigurationError(ValueError):
    """A configuration that Amazon ECS or the Neuron runtime would not accept.

    The message names the construct path, the rule (with its id from
    :mod:`neuron_constructs.knowledge.rules`) and the change that fixes it.
    """
