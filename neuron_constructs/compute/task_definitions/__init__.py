"""Typed task definitions for the two ways ECS hands a container Neuron devices.

* :class:`ManagedNeuronTaskDefinition` - managed allocation: one container gets
  ``resourceRequirements: [{type: NeuronDevice, value: ALL}]``; ECS Managed
  Instances only; one Neuron task per instance.
* :class:`ManualNeuronTaskDefinition` - manual mapping: ``/dev/neuronN``
  through ``linuxParameters.devices``; specific to one instance type, pinned
  there with a ``memberOf`` placement constraint.

Rules a single call breaks raise at that call. Rules about the finished task definition (what
ends up in its containers, however it got there: devices, ``tmpfs`` or labels added later,
containers added through the plain aws-cdk-lib API, escape hatches) are checked on the
synthesized template (:mod:`neuron_constructs.checks.template_checks`) and fail ``cdk synth``.

One module per concept, each name defined (and documented) in one of them and importable from here too:

* :mod:`.shared`: :class:`NeuronTaskDefinition`, what both share (images, model artifacts, the compile cache,
  stated Neuron SDK releases, the driver start check, image support), and the ECS task role;
* :mod:`.managed`: :class:`ManagedNeuronTaskDefinition`;
* :mod:`.manual`: :class:`ManualNeuronTaskDefinition`.
"""

from __future__ import annotations

from neuron_constructs.compute.task_definitions.managed import (
    ManagedNeuronTaskDefinition as ManagedNeuronTaskDefinition,
)
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition as ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition as NeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import task_role as task_role
