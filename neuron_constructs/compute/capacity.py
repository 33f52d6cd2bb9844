"""Cluster capacity for Neuron: ECS Managed Instances and EC2 Auto Scaling groups, the index of the modules that hold
each kind and concern.

Both kinds are built by :class:`~neuron_constructs.compute.cluster.NeuronCluster`, and each holds what it created as
public attributes:

* :mod:`neuron_constructs.compute.managed_instances` - :class:`ManagedInstancesCapacity` and its defaults;
* :mod:`neuron_constructs.compute.auto_scaling` - :class:`AutoScalingCapacity`;
* :mod:`neuron_constructs.compute.ami_rollout` - :class:`AmiRollout`, how an Auto Scaling capacity replaces its
  instances when its AMI changes (NEURON087, NEURON128);
* :mod:`neuron_constructs.compute.warm_pool` and :mod:`neuron_constructs.compute.warm_up` - an Auto Scaling
  capacity's warm pool and the warm-up prepared once every service is placed;
* :mod:`neuron_constructs.compute.reservations` - :class:`CapacityReservation` (NEURON140);
* :mod:`neuron_constructs.compute.container_instances` - what every kind shares: the ECS agent's settings and grants,
  the root volume, :data:`NEURON_AMI_PARAMETER`, the public-subnet warning.

The names below stay importable from here as they always were; each is documented in the module that defines it.
"""

from __future__ import annotations

from neuron_constructs.compute.ami_rollout import DEFAULT_AMI_WARMUP as DEFAULT_AMI_WARMUP
from neuron_constructs.compute.ami_rollout import AmiRollout as AmiRollout
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity as AutoScalingCapacity
from neuron_constructs.compute.container_instances import DEFAULT_ROOT_VOLUME_GIB as DEFAULT_ROOT_VOLUME_GIB
from neuron_constructs.compute.container_instances import ECS_AGENT_SETTINGS as ECS_AGENT_SETTINGS
from neuron_constructs.compute.container_instances import NEURON_AMI_PARAMETER as NEURON_AMI_PARAMETER
from neuron_constructs.compute.container_instances import encrypted_root_volume as encrypted_root_volume
from neuron_constructs.compute.container_instances import grant_ecs_agent as grant_ecs_agent
from neuron_constructs.compute.container_instances import warn_about_public_subnets as warn_about_public_subnets
from neuron_constructs.compute.managed_instances import DEFAULT_AUTO_REPAIR as DEFAULT_AUTO_REPAIR
from neuron_constructs.compute.managed_instances import (
    DEFAULT_MANAGED_INSTANCES_ACCELERATORS as DEFAULT_MANAGED_INSTANCES_ACCELERATORS,
)
from neuron_constructs.compute.managed_instances import (
    DEFAULT_MANAGED_INSTANCES_TYPES as DEFAULT_MANAGED_INSTANCES_TYPES,
)
from neuron_constructs.compute.managed_instances import DEFAULT_SCALE_IN_AFTER_S as DEFAULT_SCALE_IN_AFTER_S
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity as ManagedInstancesCapacity
from neuron_constructs.compute.reservations import CapacityReservation as CapacityReservation

# Empty: every name above is re-exported, and documented (in its __all__) by the module that defines it.
__all__: list[str] = []
