"""How an Auto Scaling capacity replaces its instances when its AMI changes: the :class:`AmiRollout` it takes, its
check at the call and at synth (NEURON087), and the warning about a refresh into reserved capacity (NEURON128).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Duration, Validations
from aws_cdk import aws_autoscaling as autoscaling
from constructs import IConstruct, IValidation

from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.reservations import CapacityReservation
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.instance_refresh import refresh_room

if TYPE_CHECKING:
    from neuron_constructs.compute.auto_scaling import AutoScalingCapacity

__all__ = ["AmiRollout", "check_ami_rollout", "warn_about_refresh_into_reserved_capacity"]

DEFAULT_AMI_WARMUP = Duration.minutes(10)
"""How long an instance refresh waits after a new instance is in service before it replaces the next batch: a new
Neuron instance pulls images of several GB and loads a compiled model before its tasks serve."""


@dataclass(frozen=True)
class AmiRollout:
    """How an Auto Scaling capacity replaces its instances when its AMI changes: an instance refresh, run by
    CloudFormation (the group's ``UpdatePolicy: AutoScalingInstanceRefresh``) whenever a deploy changes the launch
    template, ``instances_at_a_time`` instances at a time, each drained by ECS before it stops.

    Why an instance refresh and not CloudFormation's ``AutoScalingRollingUpdate``: a rolling update replaces
    in-service instances only, so a warm pool's instances keep the old AMI (CloudFormation reference:
    AWS::AutoScaling::WarmPool), and it takes no account of scale-in protection, which ECS managed termination
    protection turns on for every instance with tasks (``NewInstancesProtectedFromScaleIn``), so the update waits on
    instances it may not terminate. An instance refresh replaces warm pool instances too (EC2 Auto Scaling API:
    InstanceRefreshWarmPoolProgress), and ``ScaleInProtectedInstances: Refresh`` replaces protected instances rather
    than waiting an hour and failing (the default, ``Wait``) or skipping them (``Ignore``) (EC2 Auto Scaling API:
    RefreshPreferences). Each instance it terminates goes through the lifecycle hook of ECS managed draining, which
    the capacity provider turns on: ECS sets the container instance to ``DRAINING`` and its services start
    replacements within their ``minimumHealthyPercent`` / ``maximumPercent`` before the instance stops (ECS guide:
    container instance draining, managed instance draining).

    ``instances_at_a_time``
        How many instances are replaced at once, 1 to the group's ``max_capacity`` (NEURON087). Instance refresh
        counts in whole percent of the group's desired capacity: the library sets the percentage that gives this
        many at ``max_capacity`` (fewer when fewer instances run; Auto Scaling replaces at least one). One percent is
        the least it takes, so a group of more than 100 instances replaces at least one in a hundred at a time.
    ``launch_before_terminate``
        ``True`` (default): ``MinHealthyPercentage`` 100 and ``MaxHealthyPercentage`` above it, so the new instances
        are in service before the old ones drain, and the services keep every task (costs the extra instances for
        the refresh). ``False``: ``MaxHealthyPercentage`` 100 and the minimum below it, which stops instances first;
        refused where the instances left cannot hold the services' minimum healthy tasks (NEURON087, checked at
        synth: a service placed one per instance loses one task per instance stopped, a fleet model or sliced
        service, whose copies are packed several to an instance, up to its copies per instance).
    ``instance_warmup``
        How long after a new instance is in service the refresh waits before the next batch; default 10 minutes.
    """

    instances_at_a_time: int = 1
    launch_before_terminate: bool = True
    instance_warmup: Duration | None = None

    def percentages(self, max_capacity: int) -> tuple[int, int]:
        """``(MinHealthyPercentage, MaxHealthyPercentage)`` for a group of at most ``max_capacity`` instances."""
        batch = max(1, 100 * self.instances_at_a_time // max(1, max_capacity))
        batch = min(batch, 100)
        return (100, 100 + batch) if self.launch_before_terminate else (100 - batch, 100)

    def update_policy(self, max_capacity: int) -> autoscaling.UpdatePolicy:
        """The group's instance refresh policy."""
        minimum, maximum = self.percentages(max_capacity)
        return autoscaling.UpdatePolicy.instance_refresh(
            strategy=autoscaling.InstanceRefreshStrategy.ROLLING,
            min_healthy_percentage=minimum,
            max_healthy_percentage=maximum,
            instance_warmup=self.instance_warmup or DEFAULT_AMI_WARMUP,
            scale_in_protected_instances=autoscaling.ScaleInProtectedInstances.REFRESH,
            skip_matching=True,
        )

    def describe(self) -> str:
        order = "launching before terminating" if self.launch_before_terminate else "terminating first"
        return f"AmiRollout(instances_at_a_time={self.instances_at_a_time}, {order})"


def warn_about_refresh_into_reserved_capacity(
    capacity: AutoScalingCapacity, rollout: AmiRollout, reservation: CapacityReservation
) -> None:
    """NEURON128: a refresh that launches before it terminates needs a batch of instances beyond those running,
    which a group launching only into its reservation (no On-Demand fallback; a Capacity Block has none) may not
    get."""
    if reservation.fallback_to_on_demand:  # never for a Capacity Block
        return
    Validations.of(capacity).add_warning(
        rules.REFRESH_INTO_RESERVED_CAPACITY.warning_id,
        rules.REFRESH_INTO_RESERVED_CAPACITY.message(
            construct_path(capacity),
            f"{rollout.describe()} launches up to {rollout.instances_at_a_time} instance(s) beyond those running, "
            f"and the group launches only into {reservation.describe()}",
            batch=rollout.instances_at_a_time,
        ),
    )


def check_ami_rollout(path: str, rollout: AmiRollout, max_capacity: int) -> None:
    """NEURON087 at the call: a batch of 1 to ``max_capacity`` instances."""
    batch = rollout.instances_at_a_time
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= max(1, max_capacity):
        raise rules.AMI_ROLLOUT.error(
            path,
            f"{rollout.describe()} on a group of at most {max_capacity} instances",
            fix=f"pass instances_at_a_time from 1 to max_capacity ({max_capacity})",
        )


@jsii.implements(IValidation)
class AmiRolloutRoom:
    """NEURON087 at synth: a terminate-first refresh of ``capacity`` stops one batch of its instances at a time; each
    service placed one task per instance (a manually mapped task definition, ``distinctInstance``), and each fleet
    model or sliced service as a whole (its copies packed ``copies`` to an instance), must keep its minimum healthy
    tasks on the instances left (:func:`~neuron_constructs.knowledge.instance_refresh.refresh_room`)."""

    def __init__(self, capacity: AutoScalingCapacity, rollout: AmiRollout) -> None:
        self.capacity = capacity
        self.rollout = rollout

    def validate(self) -> list[str]:
        from neuron_constructs.compute.task_definitions import ManualNeuronTaskDefinition

        capacity, batch = self.capacity, self.rollout.instances_at_a_time
        judged: dict[str, tuple[IConstruct, int, list[tuple[int, int]]]] = {}
        for service in capacity.services:
            desired = getattr(service, "desired_count", None)
            minimum_percent = getattr(service, "min_healthy_percent", None)
            task = getattr(service, "task_definition", None)
            if not isinstance(task, ManualNeuronTaskDefinition) or not desired or minimum_percent is None:
                continue
            owner = service.node.scope
            copies = getattr(owner, "copy_services", None)
            if isinstance(copies, list) and service in copies and owner is not None:
                per_instance = getattr(owner, "copies", len(copies))
                key, judged_as = construct_path(owner), owner
            else:
                key, judged_as, per_instance = construct_path(service), service, 1
            judged.setdefault(key, (judged_as, per_instance, []))[2].append((desired, minimum_percent))
        problems = []
        for key, (_, per_instance, services) in judged.items():
            room = refresh_room(
                instances=capacity.max_capacity, batch=batch, per_instance=per_instance, services=services
            )
            if room.fits:
                continue
            percents = sorted({percent for _, percent in services})
            shown_percent = ", ".join(map(str, percents))
            if per_instance == 1 and len(services) == 1:
                how = "one per instance"
            else:
                how = (
                    f"{per_instance} on each instance (its packing plan), so a batch of {batch} takes away up to "
                    f"{room.taken} of them and the instances left hold at most {room.room_left}"
                )
            most = room.most_at_a_time
            fewer = f"replace fewer instances at a time (at most {most}), " if most else ""
            problems.append(
                rules.AMI_ROLLOUT.message(
                    construct_path(capacity),
                    f"{self.rollout.describe()} leaves {room.left} of its {capacity.max_capacity} instances, and "
                    f"{key} keeps {room.keep} of its {room.tasks} tasks running "
                    f"(min_healthy_percent={shown_percent}), {how}",
                    fix="launch before terminating (AmiRollout(launch_before_terminate=True), the default), "
                    f"{fewer}or raise max_capacity",
                )
            )
        return problems
