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

Serving: :meth:`SlicedNeuronService.attach_to_listener` puts every slice's tasks in one target group,
and :meth:`SlicedNeuronService.scale_on_requests` scales the slices together on its request count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs import compliance, rules
from neuron_constructs.capacity import AutoScalingCapacity
from neuron_constructs.catalog import NeuronInstanceType
from neuron_constructs.cluster import NeuronCluster
from neuron_constructs.inputs import COUNT, Range, checked, construct_path, is_token, remember_path
from neuron_constructs.log_groups import log_group as new_log_group
from neuron_constructs.options import CONTAINER_WHOLE_NUMBERS, ContainerOptions, ServiceOptions
from neuron_constructs.services import NeuronService, capacity_for
from neuron_constructs.serving import (
    DEREGISTRATION_DELAY,
    HEALTH_CHECK_PATH,
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    Listener,
    TargetGroup,
    attach,
)
from neuron_constructs.synth_checks import enable_template_checks
from neuron_constructs.task_definitions import ManualNeuronTaskDefinition, task_role

__all__ = ["SlicedNeuronService"]

_ECS_TASKS = "ecs-tasks.amazonaws.com"
_RUNTIME_VARIABLES = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES")


class SlicedNeuronService(Construct):
    """One logical service that fills each instance of a Neuron type with ``chips / devices_per_task`` tasks.

    Parameters
    ----------
    cluster: the :class:`NeuronCluster`; it needs an Auto Scaling capacity of ``instance_type``.
    instance_type: a catalog Neuron type (name or entry).
    devices_per_task: chips per task; one of ``NeuronInstanceType.slice_sizes()`` (NEURON016).
    image: the container image every slice runs.
    instances: instances' worth of tasks, i.e. tasks per slice service, 0 or more; default 1. At most
        the capacity's ``max_capacity`` (NEURON017).
    network_mode: ``BRIDGE`` (default), ``AWS_VPC`` (warns without ``eni_trunking``) or ``HOST``.
    eni_trunking: the account has ``awsvpcTrunking`` on and the type supports it; default False.
    capacity: the Auto Scaling capacity (or its provider) to use when the cluster has several of the type.
    min_healthy_percent: deployment lower bound (0-99: slices deploy with a 100 % maximum); default 50, or 0
        when ``instances`` is 1. ECS rounds it up, so it must let one task stop at every task count the
        service runs (NEURON040): 0 for one task, at most 50 for two.
    container_name (in ``container_options``): the container's name in every slice; default ``model``.
    task_role, execution_role: shared by every slice; default one new role each (the task role
        assumable only for this account's tasks).
    log_group: an existing log group every slice logs to; default a new one kept ``log_retention``
        (one month), encrypted with ``log_encryption_key`` if given.
    vpc_subnets, security_groups: for ``AWS_VPC``.
    service_options: passed to every slice's ECS service (:class:`~neuron_constructs.options.ServiceOptions`).
    **container_options: the keyword options of ``ecs.TaskDefinition.add_container`` (command,
        environment, port_mappings, health_check, ... :class:`~neuron_constructs.options.ContainerOptions`),
        the same for every slice.

    Attributes
    ----------
    instance_type, devices_per_task, slices, instances: the layout.
    cpu, memory_mib: what each slice's task asks for.
    task_definitions: one :class:`ManualNeuronTaskDefinition` per slice, slice ``i`` at index ``i``.
    services: one ``ecs.Ec2Service`` per slice.
    slice_services: the :class:`NeuronService` of each slice.
    waves: the slice indices of each deployment wave (``[[0, 1, 2], [3, 4, 5]]`` for six slices).
    target_groups: the target groups :meth:`attach_to_listener` made, in order.
    capacity: the Auto Scaling capacity the slices run on.
    log_group, task_role, execution_role: shared by every slice.
    """

    @checked(
        ranges={
            "instances": COUNT,
            "devices_per_task": Range(1),
            "min_healthy_percent": Range(0, 99, "below the 100 % maximum a sliced service deploys with"),
        },
        options=ContainerOptions,
        whole_numbers=CONTAINER_WHOLE_NUMBERS,
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        instance_type: str | NeuronInstanceType,
        devices_per_task: int,
        image: ecs.ContainerImage,
        instances: int = 1,
        network_mode: ecs.NetworkMode = ecs.NetworkMode.BRIDGE,
        eni_trunking: bool = False,
        capacity: AutoScalingCapacity | ecs.AsgCapacityProvider | None = None,
        min_healthy_percent: int | None = None,
        task_role: iam.IRole | None = None,
        execution_role: iam.IRole | None = None,
        log_group: logs.ILogGroup | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        log_encryption_key: kms.IKey | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        service_options: ServiceOptions | None = None,
        **container_options: Unpack[ContainerOptions],
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        self.instance_type: NeuronInstanceType = rules.instance_type_at(path, instance_type)
        instance = self.instance_type
        self.devices_per_task = devices_per_task
        self.slices = rules.check_slice_size(path, instance, devices_per_task)
        self.instances = instances
        self.cpu = instance.cpu_units // self.slices
        self.memory_mib = instance.schedulable_memory_mib // self.slices
        cores = devices_per_task * instance.neuron_cores_per_chip
        environment = container_options.get("environment") or {}
        for variable in _RUNTIME_VARIABLES:
            if is_token(environment.get(variable)):
                raise rules.TOKEN_NOT_LITERAL.error(path, f"environment {variable} is a CDK token", name=variable)
        rules.check_slice_environment(path, environment, cores)
        rules.check_slice_host_ports(
            path,
            str(network_mode.value).lower(),
            [_ports(m) for m in container_options.get("port_mappings") or ()],
        )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        enable_template_checks(scope)
        if network_mode == ecs.NetworkMode.AWS_VPC and not eni_trunking:
            Validations.of(self).add_warning(
                rules.AWSVPC_WITHOUT_TRUNKING.warning_id,
                rules.AWSVPC_WITHOUT_TRUNKING.message(
                    path, f"{self.slices} awsvpc tasks per {instance.name} without eni_trunking"
                ),
            )
        self.log_group: logs.ILogGroup = log_group or new_log_group(
            self, "Logs", retention=log_retention, encryption_key=log_encryption_key
        )
        self.task_role = task_role or _slice_task_role(self)
        self.execution_role = execution_role or iam.Role(
            self, "ExecutionRole", assumed_by=iam.ServicePrincipal(_ECS_TASKS)
        )
        compliance.acknowledge_execution_role(self)

        self.task_definitions: list[ManualNeuronTaskDefinition] = []
        for index in range(self.slices):
            task_definition = ManualNeuronTaskDefinition(
                self,
                f"Slice{index}",
                instance_type=instance,
                devices=range(index * devices_per_task, (index + 1) * devices_per_task),
                cpu=self.cpu,
                memory_mib=self.memory_mib,
                network_mode=network_mode,
                task_role=self.task_role,
                execution_role=self.execution_role,
                log_group=self.log_group,
            )
            options: dict[str, Any] = dict(container_options)
            options.setdefault(
                "logging", ecs.LogDrivers.aws_logs(stream_prefix=f"slice{index}", log_group=self.log_group)
            )
            name = str(options.pop("container_name", "model"))
            task_definition.add_neuron_container(name, image=image, **options)
            self.task_definitions.append(task_definition)

        chosen = capacity_for(path, cluster, self.task_definitions[0], capacity)
        assert isinstance(chosen, AutoScalingCapacity)
        self.capacity: AutoScalingCapacity = chosen
        self._check_instances(instances)
        self._claim(chosen)
        if min_healthy_percent is None:
            min_healthy_percent = 0 if instances <= 1 else 50
        rules.check_deployment_percents(path, [instances], min_healthy_percent, 100, maximum_fixed=True)
        self.min_healthy_percent = min_healthy_percent
        self.services: list[ecs.Ec2Service] = []
        self.slice_services: list[NeuronService] = []
        self.target_groups: list[TargetGroup] = []
        self.deploys_in_waves = self.slices > 1
        self._scaled = False
        for index, task_definition in enumerate(self.task_definitions):
            service = NeuronService(
                self,
                f"Slice{index}Service",
                cluster=cluster,
                task_definition=task_definition,
                desired_count=instances,
                capacity=chosen.capacity_provider,
                min_healthy_percent=min_healthy_percent,
                max_healthy_percent=100,
                vpc_subnets=vpc_subnets,
                security_groups=security_groups,
                **(service_options or {}),
            )
            assert isinstance(service.service, ecs.Ec2Service)
            service.service.add_placement_strategies(ecs.PlacementStrategy.packed_by_memory())
            self.services.append(service.service)
            self.slice_services.append(service)
        half = (self.slices + 1) // 2
        self.waves: list[list[int]] = [list(range(half)), list(range(half, self.slices))] if self.slices > 1 else [[0]]
        for later in self.waves[1:]:
            for index in later:
                for earlier in self.waves[0]:
                    self.services[index].node.add_dependency(self.services[earlier])

    def attach_to_listener(
        self,
        listener: Listener,
        *,
        health_check_path: str = HEALTH_CHECK_PATH,
        conditions: Sequence[elbv2.ListenerCondition] | None = None,
        priority: int | None = None,
        container_port: int | None = None,
        health_check: elbv2.HealthCheck | None = None,
        deregistration_delay: Duration = DEREGISTRATION_DELAY,
        slow_start: Duration | None = None,
    ) -> TargetGroup:
        """Register every slice's tasks in one target group on ``listener``; the target group.

        As :meth:`NeuronService.attach_to_listener`: bridge slices (the default) are reached on the capacity's
        security group through the ECS dynamic host port range, awsvpc slices on their own group.
        """
        target_group = attach(
            self,
            f"TargetGroup{len(self.target_groups) + 1}" if self.target_groups else "TargetGroup",
            self.slice_services,
            listener,
            container_name=None,
            container_port=container_port,
            health_check_path=health_check_path,
            health_check=health_check,
            conditions=conditions,
            priority=priority,
            deregistration_delay=deregistration_delay,
            slow_start=slow_start,
        )
        self.target_groups.append(target_group)
        for service in self.slice_services:
            service.target_groups.append(target_group)
        return target_group

    @checked(ranges={"requests_per_target": Range(1), "min_instances": COUNT, "max_instances": COUNT})
    def scale_on_requests(
        self,
        *,
        requests_per_target: int,
        min_instances: int,
        max_instances: int,
        target_group: elbv2.ApplicationTargetGroup | None = None,
        scale_out_cooldown: Duration = SCALE_OUT_COOLDOWN,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> list[ecs.ScalableTaskCount]:
        """Scale the slices together on ``requests_per_target`` requests per task of the load balancer.

        Every slice tracks the same metric, ALBRequestCountPerTarget of the one target group
        :meth:`attach_to_listener` made (or ``target_group``; NEURON044), so the slices grow and shrink together
        between ``min_instances`` and ``max_instances`` tasks each, as :meth:`auto_scale` bounds them; the
        capacity provider launches the instances. Scale-in waits ``scale_in_cooldown`` (30 minutes), scale-out
        ``scale_out_cooldown`` (1 minute). Returns the scalable targets, in slice order.
        """
        if target_group is None:
            candidates = [t for t in self.target_groups if isinstance(t, elbv2.ApplicationTargetGroup)]
            if len(candidates) != 1:
                raise rules.REQUEST_SCALING_TARGET.error(
                    construct_path(self),
                    f"the slices are in {len(candidates)} Application Load Balancer target groups",
                )
            target_group = candidates[0]
        targets = self.auto_scale(min_instances=min_instances, max_instances=max_instances)
        for target in targets:
            target.scale_on_request_count(
                "Requests",
                requests_per_target=requests_per_target,
                target_group=target_group,
                scale_out_cooldown=scale_out_cooldown,
                scale_in_cooldown=scale_in_cooldown,
            )
        return targets

    def _claim(self, capacity: AutoScalingCapacity) -> None:
        """NEURON020: the slices are the only tasks on their capacity."""
        others = [s for s in capacity.services if not construct_path(s).startswith(f"{construct_path(self)}/")]
        if others:
            raise rules.SLICED_CAPACITY_SHARED.error(
                construct_path(self),
                f"{construct_path(capacity)} already runs {others[0].node.path}",
                sliced=construct_path(self),
                other=others[0].node.path,
            )
        capacity.sliced_by = self

    def _check_instances(self, instances: int) -> None:
        rules.check_slice_capacity(
            construct_path(self), instances, self.capacity.max_capacity, construct_path(self.capacity)
        )

    @checked(ranges={"min_instances": COUNT, "max_instances": COUNT})
    def auto_scale(self, *, min_instances: int, max_instances: int) -> list[ecs.ScalableTaskCount]:
        """Scale every slice service together between ``min_instances`` and ``max_instances`` tasks.

        Returns one scalable target per slice, in slice order; give each the same policy, e.g.
        ``for target in sliced.auto_scale(...): target.scale_on_cpu_utilization("Cpu", target_utilization_percent=60)``.
        ``max_instances`` is held to the capacity's ``max_capacity`` (NEURON017), and must be at least
        ``min_instances``. Slices deploy with a 100 % maximum, so a count ECS cannot stop one task of under
        the service's ``min_healthy_percent`` is refused (NEURON040): scaling to one instance needs
        ``min_healthy_percent=0``.
        """
        if self._scaled:
            raise rules.SECOND_SCALING_TARGET.error(construct_path(self), "auto_scale was already called")
        self._check_instances(max_instances)
        self._check_instances(min_instances)
        if min_instances > max_instances:
            raise rules.OUT_OF_RANGE.error(
                construct_path(self),
                f"min_instances={min_instances} is above max_instances={max_instances}",
                name="min_instances",
                minimum=0,
                maximum=max_instances,
            )
        rules.check_deployment_percents(
            construct_path(self),
            range(max(1, min_instances), max_instances + 1),
            self.min_healthy_percent,
            100,
            maximum_fixed=True,
        )
        self._scaled = True
        return [s.auto_scale_task_count(min_capacity=min_instances, max_capacity=max_instances) for s in self.services]


def _ports(mapping: ecs.PortMapping | dict[str, Any]) -> tuple[int, int | None]:
    """(container port, host port) of a port mapping given as the struct or as its dict."""
    if isinstance(mapping, dict):
        return int(mapping.get("container_port", 0)), mapping.get("host_port")
    return int(mapping.container_port), int(mapping.host_port) if mapping.host_port is not None else None


def _slice_task_role(owner: Construct) -> iam.Role:
    return task_role(owner, "TaskRole")
