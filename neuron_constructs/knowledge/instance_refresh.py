"""What a terminate-first instance refresh leaves a service: the arithmetic of NEURON087, as plain Python.

An instance refresh with ``MaxHealthyPercentage`` 100 stops a batch of instances before it launches their
replacements (EC2 Auto Scaling guide: instance refresh, minimum and maximum healthy percentage). Each instance it
stops goes through ECS managed draining: ECS stops the instance's tasks as the service's deployment settings allow and
starts replacements on the other instances of the capacity, so the service keeps at least its minimum healthy tasks,
``ceil(desired * minimumHealthyPercent / 100)`` (ECS guide: managed instance draining; the service's deployment
configuration rounds the minimum up) - as long as the instances left have room for them.

A service whose tasks run one per instance (``distinctInstance``) loses one task per stopped instance; a model whose
copies are packed several to an instance (a :class:`~neuron_constructs.serving.fleet.NeuronFleet` model or a
:class:`~neuron_constructs.serving.sliced_service.SlicedNeuronService`: one ECS service per copy, each one task per
instance, so every instance holds ``copies`` tasks of the model, as its packing plan placed them) loses up to
``copies`` per stopped instance. A batch of ``batch`` instances therefore takes away up to ``batch * per_instance``
tasks, and the ``instances - batch`` instances left hold at most ``(instances - batch) * per_instance``: the refresh
keeps the minimum only when that is at least the minimum healthy tasks. No AWS CDK import here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["RefreshRoom", "minimum_healthy_tasks", "refresh_room"]


def minimum_healthy_tasks(desired: int, minimum_healthy_percent: int) -> int:
    """The tasks ECS keeps running of a service of ``desired`` tasks: the percentage of them, rounded up."""
    return -(-desired * minimum_healthy_percent // 100)


@dataclass(frozen=True)
class RefreshRoom:
    """A terminate-first refresh of ``batch`` of ``instances`` instances against one service or model whose instances
    each hold up to ``per_instance`` of its ``tasks`` tasks, ``keep`` of which must keep running."""

    instances: int
    batch: int
    per_instance: int
    tasks: int
    keep: int

    @property
    def left(self) -> int:
        """Instances that run while the batch is replaced."""
        return max(0, self.instances - self.batch)

    @property
    def taken(self) -> int:
        """The most tasks one batch takes away."""
        return min(self.tasks, self.batch * self.per_instance)

    @property
    def room_left(self) -> int:
        """The most tasks the instances left hold."""
        return self.left * self.per_instance

    @property
    def fits(self) -> bool:
        """Whether the instances left hold the minimum healthy tasks."""
        return self.keep <= self.room_left

    @property
    def most_at_a_time(self) -> int:
        """The largest batch that keeps the minimum (0: none does; launch before terminating)."""
        if self.per_instance < 1:
            return 0 if self.keep else self.instances
        return max(0, self.instances - math.ceil(self.keep / self.per_instance))


def refresh_room(*, instances: int, batch: int, per_instance: int, services: Iterable[tuple[int, int]]) -> RefreshRoom:
    """The room of a refresh for one service, or one model of several services (its copies): ``services`` gives each
    ECS service's ``(desired tasks, minimumHealthyPercent)``; ECS keeps each service's minimum, so the model keeps
    their sum."""
    counted = list(services)
    return RefreshRoom(
        instances=instances,
        batch=batch,
        per_instance=per_instance,
        tasks=sum(desired for desired, _ in counted),
        keep=sum(minimum_healthy_tasks(desired, percent) for desired, percent in counted),
    )
