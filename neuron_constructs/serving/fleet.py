"""Several models on one fleet of a Neuron type: ``NeuronFleet`` and its models, each on its own devices.

ECS does not track ``linuxParameters.devices``, so tasks that share an instance stay apart only by
construction. A fleet owns an Auto Scaling capacity of one Neuron type (no other service may use it,
NEURON020) and hands each model copy a contiguous device range the topology allows, or contiguous NeuronCores
of one chip, never a core another model or copy holds (:meth:`NeuronFleet.add_model`): on an inf2.48xlarge an LLM
of 4 chips as two copies on devices 0-3 and 4-7, and an embedding model of one NeuronCore as eight copies on cores
16-23 of devices 8-11. Each copy
is its own :class:`ManualNeuronTaskDefinition` pinned to the type (``memberOf``) and its own ECS service
with ``distinctInstance``, so one task of every copy runs per instance and no device is mapped twice;
each copy asks for its share of the instance's CPU units and schedulable memory, in proportion to its
devices unless given, so that every copy fits beside the others. A model is one logical service: its
copies deploy in two waves (one half serves while the other is replaced), sit in one target group
(:meth:`~.ListenerTarget.attach_to_listener`) and scale together (:meth:`FleetModel.scale_on_requests`).

:class:`~neuron_constructs.serving.sliced_service.SlicedNeuronService` is the one-model case: one model whose
copies fill every chip.
"""

from __future__ import annotations

from aws_cdk import aws_ecs as ecs
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base.arguments import COUNT, Range, checked
from neuron_constructs.base.environments import check_same_environment
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at
from neuron_constructs.knowledge.packing import InstancePlan
from neuron_constructs.serving.fleet_capacity import capacity_of_type, claim
from neuron_constructs.serving.fleet_model import FleetModel as FleetModel
from neuron_constructs.serving.fleet_options import ModelOptions as ModelOptions
from neuron_constructs.serving.fleet_stages import rollout_stages as rollout_stages

# FleetModel, ModelOptions and rollout_stages are re-exported for importers of this module; each is documented (in
# its __all__) by the module that defines it.
__all__ = ["NeuronFleet"]


class NeuronFleet(Construct):
    """A fleet of one Neuron instance type that serves several models, each copy on its own devices.

    The capacity is found (NEURON014/015), checked against ``instances`` (NEURON017) and claimed (NEURON020) when the
    fleet is made, so a model added later fails before it builds anything.

    Parameters
    ----------
    cluster
        The :class:`NeuronCluster`; it needs an Auto Scaling capacity of ``instance_type``, which the
        fleet then owns (NEURON020).
    instance_type
        A catalog Neuron type (name or entry).
    instances
        Instances' worth of copies: tasks per copy of every model, 0 or more; default 1. At most the
        capacity's ``max_capacity`` (NEURON017).
    capacity
        The Auto Scaling capacity (or its provider) when the cluster has several of the type.
    network_mode
        ``BRIDGE`` (default), ``AWS_VPC`` (warns without ``eni_trunking``) or ``HOST``.
    eni_trunking
        The account has ``awsvpcTrunking`` on; default False.
    lnc
        Trainium2 only: physical NeuronCores per logical core, 1 or 2 (NEURON064), set on every copy as
        ``NEURON_LOGICAL_NC_CONFIG``; default ``None``, the runtime's default (2). Core numbers count logical cores at
        this setting, and a capacity with ``lnc`` needs the same.

    Attributes
    ----------
    instance_type, instances, capacity
        The layout, and the Auto Scaling capacity the fleet owns.
    models
        The :class:`FleetModel` s, in the order they were added.
    plan
        The :class:`~neuron_constructs.knowledge.packing.InstancePlan`: who holds each NeuronCore.
    free_devices, free_cores
        The chips none of whose cores a model holds yet, and the NeuronCores no model holds.
    """

    @checked(ranges={"instances": COUNT})
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        instance_type: str | NeuronInstanceType,
        instances: int = 1,
        capacity: AutoScalingCapacity | ecs.AsgCapacityProvider | None = None,
        network_mode: ecs.NetworkMode = ecs.NetworkMode.BRIDGE,
        eni_trunking: bool = False,
        lnc: int | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        check_same_environment(path, scope, cluster, what="the fleet", other_name=construct_path(cluster))
        self.instance_type: NeuronInstanceType = instance_type_at(path, instance_type)
        self.plan = InstancePlan(self.instance_type, inputs.check_lnc(path, self.instance_type, lnc))
        self._lnc_given = lnc is not None
        self.capacity: AutoScalingCapacity = capacity_of_type(path, cluster, self.instance_type, capacity)
        inputs.check_slice_capacity(path, instances, self.capacity.max_capacity, construct_path(self.capacity))
        super().__init__(scope, id)
        remember_path(self, scope, id)
        enable_template_checks(scope)
        claim(self.capacity, self)
        self.cluster = cluster
        self.instances = instances
        self.network_mode = network_mode
        self.eni_trunking = eni_trunking
        self.models: list[FleetModel] = []
        self._cpu_left = self.instance_type.cpu_units
        self._memory_left = self.instance_type.schedulable_memory_mib

    @property
    def free_devices(self) -> list[int]:
        """The chips none of whose NeuronCores a model holds yet."""
        return self.plan.free_chips

    @property
    def free_cores(self) -> list[int]:
        """The NeuronCores no model holds yet (host numbering, at the fleet's LNC)."""
        return self.plan.free_cores

    @checked(
        ranges={
            "devices_per_task": COUNT,
            "cores_per_task": COUNT,
            "copies": Range(1),
            "task_cpu": Range(1),
            "task_memory_mib": Range(6),
        },
        options=ModelOptions,
        whole_numbers=CONTAINER_WHOLE_NUMBERS,
    )
    def add_model(
        self,
        id: str,
        *,
        image: ecs.ContainerImage,
        devices_per_task: int | None = None,
        cores_per_task: int | None = None,
        copies: int = 1,
        task_cpu: int | None = None,
        task_memory_mib: int | None = None,
        **options: Unpack[ModelOptions],
    ) -> FleetModel:
        """Serve a model as ``copies`` copies, each on whole chips or on NeuronCores no other copy holds.

        Pass exactly one size (NEURON063):

        * ``devices_per_task``: whole chips; each copy takes the lowest contiguous free range the topology allows
          (aligned ranges first: 1, 4, 8 or 16 chips on the trn1/trn1n/trn2 torus, any run on the inf1/inf2 ring);
        * ``cores_per_task``: 1 to a chip's NeuronCores (logical ones at the fleet's ``lnc`` on trn2); each copy
          takes contiguous free cores of one chip, filling chips other copies already share first, maps that chip
          and gets ``NEURON_RT_VISIBLE_CORES`` naming its cores in the host's numbering. A NeuronCore belongs to one
          process (aws-neuron-sdk #441) and a process takes the cores that variable names (Neuron runtime
          configuration), as the Kubernetes device plugin hands ``aws.amazon.com/neuroncore`` to containers that
          share a device; so one model per core is the instance's limit (24 on inf2.48xlarge, 32 on trn1.32xlarge,
          64 on inf1.24xlarge and on trn2.48xlarge at LNC=2).

        Refused, with what is free named, when the copies do not fit in what is left (NEURON046). ``task_cpu`` and
        ``task_memory_mib`` default to the copy's share of the instance (its cores / all cores, of the CPU units and
        the schedulable memory); given ones must fit in what the models before left (NEURON046). ``options``: the
        container's options and what every copy shares (:class:`ModelOptions`: roles, logs, networking, warm
        starts); the copies deploy in two waves and serve as one logical service (attach it with
        ``attach_to_listener``).
        """
        path = f"{construct_path(self)}/{id}"
        instance = self.instance_type
        placements = self.plan.place(
            path, devices_per_task=devices_per_task, cores_per_task=cores_per_task, copies=copies, commit=False
        )
        held = len(placements[0].cores)
        share_cpu = instance.cpu_units * held // self.plan.cores
        share_memory = instance.schedulable_memory_mib * held // self.plan.cores
        task_cpu = task_cpu if task_cpu is not None else share_cpu
        task_memory = task_memory_mib if task_memory_mib is not None else share_memory
        if task_cpu * copies > self._cpu_left or task_memory * copies > self._memory_left:
            raise rules.FLEET_FULL.error(
                path,
                f"{copies} copies of task_cpu={task_cpu}, task_memory_mib={task_memory} need "
                f"{task_cpu * copies} CPU units and {task_memory * copies} MiB; the models before left "
                f"{self._cpu_left} and {self._memory_left} on {instance.name}",
                free=self.plan.describe_free(),
            )
        model = FleetModel(
            self,
            id,
            cluster=self.cluster,
            instance_type=instance,
            placements=placements,
            lnc=self.plan.lnc,
            lnc_given=self._lnc_given,
            task_cpu=task_cpu,
            task_memory_mib=task_memory,
            image=image,
            instances=self.instances,
            network_mode=self.network_mode,
            eni_trunking=self.eni_trunking,
            capacity=self.capacity,
            copy_name="Copy",
            owner=self,
            **options,
        )
        self.plan.commit(placements)
        self._cpu_left -= task_cpu * copies
        self._memory_left -= task_memory * copies
        self.models.append(model)
        return model
