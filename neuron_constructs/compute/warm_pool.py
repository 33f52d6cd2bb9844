"""Warm pools of Auto Scaling capacity: the :class:`WarmPool` a capacity takes and the checks of it at the call.

The capacity itself (the pool, the agent settings) is built by
:class:`~neuron_constructs.compute.auto_scaling.AutoScalingCapacity`, the warm-up in its user data by
:mod:`neuron_constructs.compute.warm_up`; what AWS says about warm pools, and the warm-up script, are
:mod:`neuron_constructs.knowledge.warm_start`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Validations
from aws_cdk import aws_autoscaling as autoscaling
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import AWS_CLI, NeuronImage
from neuron_constructs.knowledge.warm_start import hibernation_problem

__all__ = ["WARM_UP_TIMEOUT", "WarmPool", "check_warm_pool", "warn_about_unpinned_cli_image"]


@dataclass(frozen=True)
class WarmPool:
    """An EC2 Auto Scaling warm pool for an Auto Scaling capacity: instances launched ahead, stopped (or running,
    hibernated) until a scale-out takes them, so a new instance skips the boot and, with ``prefetch``, the image
    pulls and model copies.

    ``min_size``: instances the pool keeps (default 1); ``max_prepared``: the group's whole prepared capacity, in
    service and warm (default ``None``: the group's maximum); ``state``: ``STOPPED`` (default: you pay for the
    volumes only), ``RUNNING`` or ``HIBERNATED`` - the last only for an instance type EC2 can hibernate (a family its
    hibernation prerequisites list, not bare metal, under 150 GB of RAM:
    :data:`~neuron_constructs.knowledge.warm_start.HIBERNATION_FAMILIES`), which no Inferentia or Trainium type is
    (NEURON141); for one that can, the launch template enables hibernation at launch. ``prefetch`` (default True):
    the warm-up pulls the images and copies the model artifacts of the services on the capacity before the pool stops
    the instance, and the agent prefers cached images (an image named by a tag that moves, such as ``:latest``, warns:
    NEURON142); the root volume must hold the AMI and what the warm-up fetches where sizes are stated
    (``image_size_gib=`` where a container is added, ``ModelArtifacts(size_gib=)``; NEURON091, checked at synth).
    ``reuse_on_scale_in`` is refused (NEURON084): ECS does not allow it.

    ``cli_image`` (default :data:`~neuron_constructs.knowledge.container_images.AWS_CLI`): the AWS CLI image the
    warm-up runs, as root, on every boot, in the host network (it calls ECR, S3 and Auto Scaling as the instance role,
    whose credentials come from the instance metadata service, which the hop limit of 1 keeps from a container in any
    other network). Such a container can use the instance role, so its image is held to the rules of the privileged
    images: one without a digest is refused (NEURON068), and the library's own, for which no source gives a digest, runs
    by its tag with warning NEURON116 until you pass ``AWS_CLI.pinned("sha256:...")``.

    Every instance of the group runs the ECS agent with ``ECS_WARM_POOLS_CHECK=true``: it does not register with the
    cluster while in the pool (ECS guide: warm pools for Auto Scaling groups registered with ECS).
    """

    min_size: int = 1
    max_prepared: int | None = None
    state: autoscaling.PoolState = autoscaling.PoolState.STOPPED
    prefetch: bool = True
    reuse_on_scale_in: bool = False
    cli_image: NeuronImage = AWS_CLI


WARM_UP_TIMEOUT = Duration.minutes(30)
"""How long a new instance may take to warm up before Auto Scaling goes on without it (the lifecycle hook's heartbeat
timeout; its default result is CONTINUE): a few Neuron images of several GB and a model of tens of GB."""


def check_warm_pool(
    path: str,
    warm_pool: WarmPool,
    *,
    spot: bool,
    max_capacity: int,
    instance_type: str,
    memory_gib: float | None,
) -> None:
    """The pool of an Auto Scaling group of ``max_capacity`` ``instance_type`` instances (``memory_gib`` of RAM,
    ``None`` when unknown): NEURON084, NEURON085, NEURON141 (a ``HIBERNATED`` pool of a type EC2 cannot hibernate),
    the warm-up's image (NEURON068) and the pool's sizes (NEURON027): ``min_size`` 0 to the group's
    ``max_capacity``, the most instances the group itself may hold (CloudFormation writes both as given: ``MinSize`` 6
    over ``MaxSize`` 4 would keep instances warm that the group can never take into service)."""
    if warm_pool.reuse_on_scale_in:
        raise rules.WARM_POOL_REUSE.error(path, "warm_pool=WarmPool(reuse_on_scale_in=True)")
    if spot:
        raise rules.WARM_POOL_SPOT.error(path, "warm_pool with spot=True")
    image = warm_pool.cli_image
    if warm_pool.prefetch and not isinstance(image, NeuronImage):
        raise rules.WRONG_TYPE.error(
            path, f"WarmPool(cli_image={image!r})", expected="cli_image as a NeuronImage (AWS_CLI.pinned(...))"
        )
    if warm_pool.prefetch:
        inputs.check_root_image(
            path,
            image,
            shown="WarmPool(cli_image=)",
            argument="WarmPool(cli_image",
            how="the warm-up runs it as root in the host network",
            library_images=(AWS_CLI,),
        )
    minimum = warm_pool.min_size
    if isinstance(minimum, bool) or not isinstance(minimum, int) or not 0 <= minimum <= max_capacity:
        beyond = f" above the group's max_capacity={max_capacity}" if isinstance(minimum, int) and minimum > 0 else ""
        raise rules.OUT_OF_RANGE.error(
            path,
            f"WarmPool(min_size={minimum!r}){beyond}",
            name="min_size",
            minimum="0",
            maximum=f"max_capacity ({max_capacity}): the pool holds instances the group may take into service",
        )
    prepared = warm_pool.max_prepared
    if prepared is not None and (
        isinstance(prepared, bool) or not isinstance(prepared, int) or prepared < max(warm_pool.min_size, 0)
    ):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"WarmPool(max_prepared={prepared!r}) with min_size={warm_pool.min_size}",
            name="max_prepared",
            minimum=f"min_size ({warm_pool.min_size})",
            maximum="any whole number (None: the group's max_capacity)",
        )
    if warm_pool.state == autoscaling.PoolState.HIBERNATED:
        problem = hibernation_problem(instance_type, memory_gib)
        if problem is not None:
            raise rules.WARM_POOL_HIBERNATION.error(path, f"WarmPool(state=PoolState.HIBERNATED), but {problem}")


def warn_about_unpinned_cli_image(owner: Construct, warm_pool: WarmPool) -> None:
    """NEURON116 on ``owner``, a capacity whose warm-up runs the library's AWS CLI image by its tag (any other image
    without a digest is refused by :func:`check_warm_pool`)."""
    image = warm_pool.cli_image
    if image.digest is not None:
        return
    Validations.of(owner).add_warning(
        rules.UNPINNED_LIBRARY_DAEMON.warning_id,
        rules.UNPINNED_LIBRARY_DAEMON.message(
            construct_path(owner),
            f"the warm-up runs {image.uri} as root in the host network, by its tag",
            argument="WarmPool(cli_image",
            constant="AWS_CLI",
            uri=image.uri,
        ),
    )
