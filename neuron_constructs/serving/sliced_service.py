"""``SlicedNeuronService``: several models per Neuron instance, each on its own contiguous device slice.

With managed allocation a task takes every device, so one task runs per instance. Manual
mapping lets tasks share an instance, but ECS does not track ``linuxParameters.devices``: two
copies of one task definition on one instance both map the same ``/dev/neuronN``. A sliced
service makes collisions impossible by construction:

* slice ``i`` is its own :class:`ManualNeuronTaskDefinition` mapping the contiguous devices
  ``[i*k, (i+1)*k)`` (``k = devices_per_task``), pinned to the instance type (``memberOf``);
* slice ``i`` runs as its own ECS service with ``distinctInstance``: ECS never puts two
  tasks of one service on one instance, so no device is mapped twice, while different slices
  share the instance;
* every slice asks for ``1/slices`` of the instance's CPU units (ECS registers 1,024 per vCPU
  and the agent keeps none) and of its schedulable memory
  (:attr:`NeuronInstanceType.schedulable_memory_mib`, 90 % of nominal: ECS registers less than
  nominal and AWS recommends a buffer for the agent), so one task of each slice fits per
  instance and, with ``instances`` instances, every chip is used;
* tasks are bin-packed by memory, so slices fill instances before new ones start.

NeuronCore numbering (aws-neuron-sdk, "How to Build and Run a Neuron Container", section
Cores): inside a container, NeuronCores keep the host's numbering; on an inf1.24xlarge
(4 cores per chip) a container mapping ``/dev/neuron12`` and ``/dev/neuron13`` uses
``NEURON_RT_VISIBLE_CORES=51,52``. By default the runtime takes every core of the devices the
container maps, which is exactly its slice, so no runtime variable is set here; a shared
``NEURON_RT_VISIBLE_CORES`` would be wrong for every slice but one and is refused (NEURON019),
as is a ``NEURON_RT_NUM_CORES`` above one slice's cores.

Networking: ``bridge`` (default) caps nothing, but ports must be dynamic (``host_port``
unset), since every instance runs one task of each slice; register the slice services with a
load balancer target group or Service Connect. ``awsvpc`` gives each task its own ENI, so
without ENI trunking the instance's ENI limit caps tasks per instance (warning NEURON106 unless
``eni_trunking=True`` says the account setting ``awsvpcTrunking`` is on). ``host`` is refused
with port mappings: every slice would bind the same port.

Deployments replace tasks in place: at most 100 % (an extra copy of a slice fits only on an
extra instance) and by default at least 50 % healthy (0 % when ``instances`` is 1). So that a
deployment never stops every replica, the slices deploy in two waves: the services of the second
half of the slices depend on those of the first, and CloudFormation updates a service only after the
ones it depends on have reached a steady state, so one half serves while the other is replaced.

Serving: :meth:`~.ListenerTarget.attach_to_listener` puts every slice's tasks in one target group,
and :meth:`~.FleetModel.scale_on_requests` scales the slices together on its request count.
"""

from __future__ import annotations

from aws_cdk import aws_ecs as ecs
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base.arguments import COUNT, Range, checked
from neuron_constructs.base.environments import IMPORT_CLUSTER, check_same_app
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at
from neuron_constructs.knowledge.packing import InstancePlan
from neuron_constructs.serving.fleet_model import FleetModel
from neuron_constructs.serving.fleet_options import ModelOptions

__all__ = ["SlicedNeuronService"]


class SlicedNeuronService(FleetModel):
    """One logical service that fills each instance of a Neuron type with ``chips / devices_per_task`` tasks.

    Parameters
    ----------
    cluster
        The :class:`NeuronCluster`; it needs an Auto Scaling capacity of ``instance_type``.
    instance_type
        A catalog Neuron type (name or entry).
    devices_per_task
        Chips per task; one of ``NeuronInstanceType.slice_sizes()`` (NEURON016).
    cores_per_task
        Instead of ``devices_per_task`` (exactly one, NEURON063): NeuronCores per task, a divisor of a chip's
        (logical) cores (NEURON016); slice ``i`` holds cores ``[i*k, (i+1)*k)``, maps the chip holding them and
        gets ``NEURON_RT_VISIBLE_CORES`` naming them, so an inf2.48xlarge runs 24 one-core slices.
    lnc
        Trainium2 only: physical NeuronCores per logical core, 1 or 2 (NEURON064); default the runtime's, 2.
    image
        The container image every slice runs.
    instances
        Instances' worth of tasks, i.e. tasks per slice service, 0 or more; default 1. At most
        the capacity's ``max_capacity`` (NEURON017).
    network_mode
        ``BRIDGE`` (default), ``AWS_VPC`` (warns without ``eni_trunking``) or ``HOST``.
    eni_trunking
        The account has ``awsvpcTrunking`` on and the type supports it; default False.
    capacity
        The Auto Scaling capacity (or its provider) to use when the cluster has several of the type.
    **options
        The container's options and what every slice shares (:class:`~neuron_constructs.ModelOptions`:
        ``min_healthy_percent`` - here 0 to 99, default 50, or 0 when ``instances`` is 1 -, roles, logs,
        networking, warm starts); ``container_name`` default ``model``.

    Attributes
    ----------
    instance_type, devices_per_task, slices, instances
        The layout.
    cpu, memory_mib
        What each slice's task asks for.
    task_definitions
        One :class:`ManualNeuronTaskDefinition` per slice, slice ``i`` at index ``i``.
    services
        One ``ecs.Ec2Service`` per slice.
    slice_services
        The :class:`NeuronService` of each slice.
    waves
        The slice indices of each deployment wave (``[[0, 1, 2], [3, 4, 5]]`` for six slices).
    target_groups
        The target groups :meth:`attach_to_listener` made, in order.
    copies, device_ranges, copy_services, min_healthy_percent
        As on :class:`~neuron_constructs.serving.fleet_model.FleetModel` (``copies`` = ``slices``).
    capacity
        The Auto Scaling capacity the slices run on.
    log_group, task_role, execution_role
        Shared by every slice.
    """

    @checked(
        ranges={"instances": COUNT, "devices_per_task": COUNT, "cores_per_task": COUNT},
        options=ModelOptions,
        whole_numbers=CONTAINER_WHOLE_NUMBERS,
        option_ranges={"min_healthy_percent": Range(0, 99, "below the 100 % maximum a sliced service deploys with")},
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        instance_type: str | NeuronInstanceType,
        image: ecs.ContainerImage,
        devices_per_task: int | None = None,
        cores_per_task: int | None = None,
        lnc: int | None = None,
        instances: int = 1,
        network_mode: ecs.NetworkMode = ecs.NetworkMode.BRIDGE,
        eni_trunking: bool = False,
        capacity: AutoScalingCapacity | ecs.AsgCapacityProvider | None = None,
        **options: Unpack[ModelOptions],
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        check_same_app(
            path, scope, cluster, what="the sliced service", other_name=construct_path(cluster), how=IMPORT_CLUSTER
        )
        instance = instance_type_at(path, instance_type)
        plan = InstancePlan(instance, inputs.check_lnc(path, instance, lnc))
        plan.require_one_size(path, devices_per_task, cores_per_task)
        slices = (
            inputs.check_slice_size(path, instance, devices_per_task)
            if devices_per_task is not None
            else inputs.check_core_slice_size(path, instance, cores_per_task or 0, plan.lnc)
        )
        placements = plan.place(path, devices_per_task=devices_per_task, cores_per_task=cores_per_task, copies=slices)
        super().__init__(
            scope,
            id,
            cluster=cluster,
            instance_type=instance,
            placements=placements,
            lnc=plan.lnc,
            lnc_given=lnc is not None,
            task_cpu=instance.cpu_units // slices,
            task_memory_mib=instance.schedulable_memory_mib // slices,
            image=image,
            instances=instances,
            network_mode=network_mode,
            eni_trunking=eni_trunking,
            capacity=capacity,
            copy_name="Slice",
            **options,
        )
        self.slices = self.copies
        self.slice_services = self.copy_services
