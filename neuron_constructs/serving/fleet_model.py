"""``FleetModel``: one model on a fleet of one Neuron type, its copies (a task definition and an ECS service each, on
its own devices) deployed in stages and scaled together as one logical service."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import COUNT, Range, checked, is_token
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.roles import ExecutionRole
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, node_of, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.options import ContainerOptions
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import LOGICAL_CORE_VARIABLE
from neuron_constructs.knowledge.packing import Placement
from neuron_constructs.knowledge.vllm_server import VllmServer
from neuron_constructs.programs.metric_publisher import PROCESS_TAG_VARIABLE
from neuron_constructs.serving.fleet_capacity import claim
from neuron_constructs.serving.fleet_options import ModelOptions
from neuron_constructs.serving.fleet_stages import fleet_rollout, rollout_stages
from neuron_constructs.serving.listeners import (
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    Listener,
    ListenerTarget,
    TargetGroup,
    request_target_group,
)
from neuron_constructs.serving.listeners import load_balancer_full_name as full_name_of
from neuron_constructs.serving.precompile_resources import PrecompileJob
from neuron_constructs.serving.rollout import Rollout, RolloutAlarms
from neuron_constructs.serving.rollout_alarms import (
    ENGINE_LATENCIES,
    engine_latency_alarms,
    execution_errors_alarm,
    load_balancer_alarms,
)
from neuron_constructs.serving.service_precompile import precompile_model
from neuron_constructs.serving.service_scaling import TIME_TO_FIRST_TOKEN, WAITING_REQUESTS, time_to_first_token_target
from neuron_constructs.serving.services import NeuronService, capacity_for, warn_without_neuron_alarm

__all__ = ["FleetModel"]

_RUNTIME_VARIABLES = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", PROCESS_TAG_VARIABLE)

_MODEL_ONLY_OPTIONS = frozenset(ModelOptions.__annotations__) - frozenset(ContainerOptions.__annotations__)

_OLD_BOUNDS = {"min_instances": "min_count", "max_instances": "max_count"}
"""The scaling methods' old keywords: the bounds are tasks of each copy's service, ``min_count``/``max_count`` as on
:class:`NeuronService`; the old spelling works with a DeprecationWarning until
:data:`~neuron_constructs.base.arguments.RENAMED_KEYWORDS_REMOVED_IN`."""


class FleetModel(Construct, ListenerTarget):
    """One model on a fleet of one Neuron type: its copies, each on its own contiguous devices, as one service.

    Built by :meth:`NeuronFleet.add_model` (and, as the one-model case, by ``SlicedNeuronService``).

    Attributes
    ----------
    instance_type, devices_per_task, cores_per_task, copies, instances
        The layout (``devices_per_task`` is ``None`` for NeuronCore copies; ``cores_per_task`` is what every copy
        holds, its chips' cores for whole-chip copies); ``device_ranges`` and ``core_ranges``: the chips and the
        NeuronCores (host numbering) of each copy; ``placements`` both; ``lnc`` the logical-core setting they count in.
    cpu, memory_mib
        What each copy's task asks for.
    task_definitions
        One :class:`ManualNeuronTaskDefinition` per copy, copy ``i`` at index ``i``.
    services
        One ``ecs.Ec2Service`` per copy; ``copy_services``: the :class:`NeuronService` of each copy.
    capacity
        The Auto Scaling capacity the copies run on.
    waves
        The copy indices of each deployment wave (``[[0, 1, 2], [3, 4, 5]]`` for six copies).
    min_healthy_percent
        What every copy deploys with (the maximum is 100 %).
    target_groups
        The target groups :meth:`attach_to_listener` made, in order.
    log_group, task_role, execution_role
        Shared by every copy.
    model_name
        The ``NEURON_PROCESS_TAG`` of every copy: the ``Model`` dimension of its metrics.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        instance_type: NeuronInstanceType,
        placements: Sequence[Placement],
        lnc: int,
        lnc_given: bool,
        task_cpu: int,
        task_memory_mib: int,
        image: ecs.ContainerImage,
        instances: int,
        network_mode: ecs.NetworkMode,
        eni_trunking: bool,
        capacity: AutoScalingCapacity | ecs.AsgCapacityProvider | None,
        copy_name: str,
        owner: Construct | None = None,
        **options: Unpack[ModelOptions],
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        self.instance_type = instance = instance_type
        self.placements = list(placements)
        self.device_ranges = [p.devices for p in self.placements]
        self.core_ranges = [p.cores for p in self.placements]
        self.lnc = lnc
        whole_chips = self.placements[0].whole_chips
        self.devices_per_task: int | None = len(self.device_ranges[0]) if whole_chips else None
        self.cores_per_task: int = len(self.core_ranges[0])
        container_options: dict[str, Any] = {k: v for k, v in options.items() if k not in _MODEL_ONLY_OPTIONS}
        self.copies = len(self.placements)
        self.instances = instances
        self.cpu, self.memory_mib = task_cpu, task_memory_mib
        environment = container_options.get("environment") or {}
        for variable in _RUNTIME_VARIABLES:
            if is_token(environment.get(variable)):
                raise rules.TOKEN_NOT_LITERAL.error(path, f"environment {variable} is a CDK token", name=variable)
        inputs.check_slice_environment(path, environment, self.cores_per_task)
        tagged = environment.get(PROCESS_TAG_VARIABLE)
        named = options.get("model_name")
        if named is not None and tagged is not None and named != tagged:
            raise rules.MODEL_NAME.error(
                path, f"model_name={named!r}, but the container's {PROCESS_TAG_VARIABLE} is {tagged!r}"
            )
        server = options.get("server")
        if named is not None:
            self.model_name: str = inputs.check_model_name(path, named)
        elif tagged is not None:
            self.model_name = inputs.check_model_name(path, tagged, given_as=PROCESS_TAG_VARIABLE)
        elif isinstance(server, VllmServer):
            served = server.served_model_name or server.model
            self.model_name = served if inputs.valid_model_name(served) else inputs.derived_model_name(path)
        else:
            self.model_name = inputs.derived_model_name(path)
        if isinstance(server, VllmServer) and server.served_model_name is None:
            server = dataclasses.replace(server, served_model_name=self.model_name)  # every copy serves the model's
        stated = environment.get(LOGICAL_CORE_VARIABLE)
        if stated is not None and stated != str(lnc):
            raise rules.LOGICAL_CORES.error(
                path, f"environment {LOGICAL_CORE_VARIABLE}={stated} but the copies are planned at LNC={lnc}; pass lnc="
            )
        inputs.check_slice_host_ports(
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
                    path, f"{self.copies} awsvpc tasks per {instance.name} without eni_trunking"
                ),
            )
        self.log_group: logs.ILogGroup = options.get("log_group") or new_log_group(
            self,
            "Logs",
            retention=options.get("log_retention", DEFAULT_LOG_RETENTION),
            removal_policy=options.get("log_removal_policy", OPERATIONAL_REMOVAL),
            encryption_key=options.get("log_encryption_key"),
        )
        self.task_role = options.get("task_role") or _copy_task_role(self)
        self.execution_role = options.get("execution_role") or ExecutionRole(self, "ExecutionRole")

        self.task_definitions: list[ManualNeuronTaskDefinition] = []
        for index, placement in enumerate(self.placements):
            task_definition = ManualNeuronTaskDefinition(
                self,
                f"{copy_name}{index}",
                instance_type=instance,
                devices=placement.devices,
                cores=None if placement.whole_chips else placement.cores,
                lnc=lnc if lnc_given else None,
                cpu=task_cpu,
                memory_mib=task_memory_mib,
                network_mode=network_mode,
                task_role=self.task_role,
                execution_role=self.execution_role,
                log_group=self.log_group,
            )
            task_definition.join_fleet(construct_path(owner or self))
            container: dict[str, Any] = dict(container_options)
            container.setdefault(
                "logging",
                ecs.LogDrivers.aws_logs(stream_prefix=f"{copy_name.lower()}{index}", log_group=self.log_group),
            )
            name = str(container.pop("container_name", "model"))
            neuron_container = task_definition.add_neuron_container(
                name,
                image=image,
                model_artifacts=options.get("model_artifacts"),
                hf_token=options.get("hf_token"),
                image_size_gib=options.get("image_size_gib"),
                neuron_sdk=options.get("neuron_sdk"),
                startup=options.get("startup"),
                server=server,
                **container,
            )
            compile_cache = options.get("compile_cache")
            if compile_cache is not None:
                # This model's part of the cache, shared by its copies: the task definition's own key is the fleet's
                # path (join_fleet), which every model of one NeuronFleet shares.
                compliance.acknowledge_library_environment(task_definition.task_definition)
                compile_cache.apply(neuron_container, task_definition.task_role, construct_path(self))
            self.task_definitions.append(task_definition)

        chosen = capacity_for(path, cluster, self.task_definitions[0], capacity)
        assert isinstance(chosen, AutoScalingCapacity)
        self.capacity: AutoScalingCapacity = chosen
        self._check_instances(instances)
        claim(chosen, owner or self)
        min_healthy_percent = options.get("min_healthy_percent")
        self._min_healthy_percent_passed = min_healthy_percent is not None
        if min_healthy_percent is None:
            min_healthy_percent = 0 if instances <= 1 else 50
        inputs.check_deployment_percents(
            path, [instances], min_healthy_percent, 100, maximum_fixed=True, minimum_set_by=self._passed_to()
        )
        self.min_healthy_percent = min_healthy_percent
        self.services: list[ecs.Ec2Service] = []
        self.copy_services: list[NeuronService] = []
        self.target_groups: list[TargetGroup] = []
        self.deploys_in_waves = self.copies > 1
        self._scaling_bounds: tuple[int, int] = (0, 0)
        self._scaling_methods: list[str] = []
        self._targets: list[ecs.ScalableTaskCount] = []
        rollout = fleet_rollout(path, options.get("rollout"), self.copies)
        own_alarms = (options.get("service_options") or {}).get("deployment_alarms")
        if (
            rollout.strategy != "rolling"
            and rollout.alarms is not None
            and getattr(own_alarms, "behavior", None) == ecs.AlarmBehavior.FAIL_ON_ALARM
        ):
            raise rules.DEPLOYMENT_ALARM_BEHAVIOR.error(
                path,
                "service_options={'deployment_alarms': ...} with AlarmBehavior.FAIL_ON_ALARM next to the rollout's "
                "alarms, which roll every copy's deployment back",
            )
        for index, task_definition in enumerate(self.task_definitions):
            service = NeuronService(
                self,
                f"{copy_name}{index}Service",
                cluster=cluster,
                task_definition=task_definition,
                desired_count=instances,
                capacity=chosen.capacity_provider,
                min_healthy_percent=min_healthy_percent,
                max_healthy_percent=100,
                vpc_subnets=options.get("vpc_subnets"),
                security_groups=options.get("security_groups"),
                model_name=self.model_name,
                engine_metrics=options.get("engine_metrics"),
                **(options.get("service_options") or {}),
            )
            assert isinstance(service.service, ecs.Ec2Service)
            service.service.add_placement_strategies(ecs.PlacementStrategy.packed_by_memory())
            self.services.append(service.service)
            self.copy_services.append(service)
        self.rollout: Rollout = rollout
        self.waves: list[list[int]] = rollout_stages(self.rollout, self.copies)
        for earlier, later in zip(self.waves, self.waves[1:], strict=False):
            for index in later:
                for before in earlier:
                    node_of(self.services[index]).add_dependency(self.services[before])
        self.precompile_job: PrecompileJob | None = None
        precompile = options.get("precompile")
        if precompile is not None:
            self.precompile_job = precompile_model(
                self,
                self.task_definitions[0].neuron_containers[0],
                precompile,
                family=instance.family,
                services=list(self.services),
                vpc=cluster.vpc,
                subnets=cluster.capacity_subnets,
                copies=list(self.task_definitions),
            )
        self.deployment_alarms: list[cloudwatch.Alarm] = []
        settings = self.rollout.alarms if self.rollout.strategy != "rolling" else None
        if settings is not None:
            if chosen.monitored:
                self._add_alarms(
                    execution_errors_alarm(
                        self,
                        "RolloutExecutionErrors",
                        cluster_name=cluster.cluster.cluster_name,
                        model_name=self.model_name,
                        settings=settings,
                    )
                )
            else:
                warn_without_neuron_alarm(self, chosen)
            self._add_engine_latency_alarms(settings, cluster.cluster.cluster_name)

    def _add_engine_latency_alarms(self, settings: RolloutAlarms, cluster_name: str) -> None:
        """The alarms on what the model's users feel that ``settings`` states, on every copy (NEURON178 when a copy
        has no engine-metrics sidecar)."""
        stated = [name for name in ENGINE_LATENCIES if getattr(settings, name) is not None]
        if not stated:
            return
        if any(copy.engine_metrics_container is None for copy in self.copy_services):
            raise rules.SCALING_WITHOUT_ENGINE_METRIC.error(
                construct_path(self),
                f"RolloutAlarms({stated[0]}=...) watches a metric only the model's engine-metrics sidecar writes, and "
                "the model's copies have none",
            )
        self._add_alarms(
            *engine_latency_alarms(
                self, "Rollout", cluster_name=cluster_name, model_name=self.model_name, settings=settings
            )
        )

    def _add_alarms(self, *alarms: cloudwatch.Alarm) -> None:
        """Give every copy's deployment ``alarms`` to roll back on."""
        self.deployment_alarms.extend(alarms)
        for copy in self.copy_services:
            copy.add_rollout_alarms(*alarms)

    def _attached(self, target_group: TargetGroup, listener: Listener) -> None:
        """After :meth:`attach_to_listener`: the target group's alarms on every copy, for a staged rollout."""
        settings = self.rollout.alarms if self.rollout.strategy != "rolling" else None
        load_balancer_full_name = full_name_of(listener)
        if settings is None or load_balancer_full_name is None:
            return
        index = len(self.target_groups)
        self._add_alarms(
            *load_balancer_alarms(
                self,
                f"Rollout{index}" if index > 1 else "Rollout",
                target_groups=[target_group],
                load_balancer_full_name=load_balancer_full_name,
                settings=settings,
            )
        )

    def _listener_services(self) -> Sequence[NeuronService]:
        return self.copy_services

    @checked(ranges={"requests_per_target": Range(1), "min_count": COUNT, "max_count": COUNT}, renamed=_OLD_BOUNDS)
    def scale_on_requests(
        self,
        *,
        requests_per_target: int,
        min_count: int,
        max_count: int,
        target_group: elbv2.ApplicationTargetGroup | None = None,
        scale_out_cooldown: Duration = SCALE_OUT_COOLDOWN,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> list[ecs.ScalableTaskCount]:
        """Scale the copies together on ``requests_per_target`` requests per task of the load balancer.

        Every copy tracks the same metric, ALBRequestCountPerTarget of the one target group
        :meth:`attach_to_listener` made (or ``target_group``; NEURON044), so the copies grow and shrink together
        between ``min_count`` and ``max_count`` tasks each, as :meth:`auto_scale` bounds them; the
        capacity provider launches the instances. Scale-in waits ``scale_in_cooldown`` (30 minutes), scale-out
        ``scale_out_cooldown`` (1 minute). Returns the scalable targets, in copy order.
        """
        if target_group is None:
            target_group = request_target_group(construct_path(self), self.target_groups, "the copies are")
        targets = self._scalable_targets("scale_on_requests", min_count, max_count)
        for target in targets:
            target.scale_on_request_count(
                "Requests",
                requests_per_target=requests_per_target,
                target_group=target_group,
                scale_out_cooldown=scale_out_cooldown,
                scale_in_cooldown=scale_in_cooldown,
            )
        return targets

    @checked(ranges={"target_percent": Range(1, 100), "min_count": COUNT, "max_count": COUNT}, renamed=_OLD_BOUNDS)
    def scale_on_neuron_utilization(
        self,
        *,
        max_count: int,
        target_percent: int = 70,
        min_count: int | None = None,
        scale_out_cooldown: Duration = SCALE_OUT_COOLDOWN,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> list[ecs.ScalableTaskCount]:
        """Scale the copies together on the model's NeuronCore utilization, tracking ``target_percent`` (default 70).

        Every copy tracks the model's ``NeuronCoreUtilization`` (dimensions ``ClusterName`` and ``Model`` =
        ``model_name``, the average over every copy's cores; see :meth:`NeuronService.scale_on_neuron_utilization`),
        between ``min_count`` (default the model's ``instances``) and ``max_count`` tasks each, with the
        cooldowns and bounds of :meth:`scale_on_requests`, whose scalable targets it shares (same counts; each called
        at most once, NEURON035). Returns the scalable targets, in copy order.
        """
        minimum = self._minimum(min_count, max_count)
        targets = self._scalable_targets("scale_on_neuron_utilization", minimum, max_count)
        for copy, target in zip(self.copy_services, targets, strict=True):
            copy.track_neuron_utilization(target, target_percent, scale_out_cooldown, scale_in_cooldown)
        return targets

    @checked(ranges={"per_copy": Range(1, 10_000), "min_count": COUNT, "max_count": COUNT})
    def scale_on_waiting_requests(
        self,
        *,
        per_copy: int,
        max_count: int,
        min_count: int | None = None,
        scale_out_cooldown: Duration | None = None,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> list[ecs.ScalableTaskCount]:
        """Scale the copies together on the requests waiting per copy of the model, tracking ``per_copy``.

        Every copy tracks the model's ``WaitingRequests`` (the average over every copy's engine-metrics sidecar: per
        copy; see :meth:`NeuronService.scale_on_waiting_requests`, whose cooldown defaults and refusal, NEURON178,
        hold here), between ``min_count`` (default the model's ``instances``) and ``max_count`` tasks each, sharing
        the scalable targets of the other scaling methods (same counts; each called at most once, NEURON035).
        Returns the scalable targets, in copy order.
        """
        return self._scale_on_engine_metric(
            "scale_on_waiting_requests", WAITING_REQUESTS, per_copy, min_count, max_count, scale_out_cooldown,
            scale_in_cooldown,
        )  # fmt: skip

    @checked(ranges={"min_count": COUNT, "max_count": COUNT})
    def scale_on_time_to_first_token(
        self,
        *,
        target: Duration,
        max_count: int,
        min_count: int | None = None,
        scale_out_cooldown: Duration | None = None,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> list[ecs.ScalableTaskCount]:
        """Scale the copies together on the model's mean time to the first token, tracking ``target``; as
        :meth:`scale_on_waiting_requests` (see :meth:`NeuronService.scale_on_time_to_first_token`)."""
        seconds = time_to_first_token_target(construct_path(self), target)
        return self._scale_on_engine_metric(
            "scale_on_time_to_first_token", TIME_TO_FIRST_TOKEN, seconds, min_count, max_count, scale_out_cooldown,
            scale_in_cooldown,
        )  # fmt: skip

    def _scale_on_engine_metric(
        self,
        method: str,
        metric: str,
        target: float,
        min_count: int | None,
        max_count: int,
        scale_out_cooldown: Duration | None,
        scale_in_cooldown: Duration,
    ) -> list[ecs.ScalableTaskCount]:
        """Every copy's scalable target tracking the model's engine ``metric`` at ``target`` (NEURON178 first)."""
        minimum = self._minimum(min_count, max_count)
        for copy in self.copy_services:
            copy.check_engine_metric_written(metric)
        targets = self._scalable_targets(method, minimum, max_count)
        for copy, scaling in zip(self.copy_services, targets, strict=True):
            copy.track_engine_metric(scaling, metric, target, scale_out_cooldown, scale_in_cooldown)
        return targets

    def _minimum(self, min_count: int | None, max_count: int) -> int:
        """``min_count``, default the model's ``instances`` (NEURON075 when that is above ``max_count``)."""
        if min_count is not None:
            return min_count
        inputs.check_bounds(
            construct_path(self),
            ("min_count", self.instances),
            ("max_count", max_count),
            lower_default="the model's instances, as min_count was not given",
        )
        return self.instances

    def _scalable_targets(self, method: str, min_count: int, max_count: int) -> list[ecs.ScalableTaskCount]:
        """Every copy's scalable target: made by the first scaling method, shared by the other when it asks for the
        same counts (NEURON035)."""
        path = construct_path(self)
        if not self._targets:
            targets = self.auto_scale(min_count=min_count, max_count=max_count)
            self._scaling_methods = [method]
            return targets
        if self._scaling_methods == ["auto_scale"]:
            raise rules.SECOND_SCALING_TARGET.error(path, f"{method}: auto_scale already made the scalable targets")
        if method in self._scaling_methods:
            raise rules.SECOND_SCALING_TARGET.error(path, f"{method} was already called")
        if self._scaling_bounds != (min_count, max_count):
            bounds = self._scaling_bounds
            raise rules.SECOND_SCALING_TARGET.error(
                path,
                f"{method} asks for {min_count} to {max_count} tasks per copy, but {self._scaling_methods[0]} "
                f"made the targets for {bounds[0]} to {bounds[1]}",
            )
        self._scaling_methods.append(method)
        return list(self._targets)

    def _check_instances(self, instances: int) -> None:
        inputs.check_slice_capacity(
            construct_path(self), instances, self.capacity.max_capacity, construct_path(self.capacity)
        )

    def _passed_to(self) -> str | None:
        """The call ``min_healthy_percent`` was passed to; ``None`` when the library chose it."""
        if not self._min_healthy_percent_passed:
            return None
        return "NeuronFleet.add_model" if type(self) is FleetModel else type(self).__name__

    @checked(ranges={"min_count": COUNT, "max_count": COUNT}, renamed=_OLD_BOUNDS)
    def auto_scale(self, *, min_count: int, max_count: int) -> list[ecs.ScalableTaskCount]:
        """Scale every copy's service together between ``min_count`` and ``max_count`` tasks.

        Returns one scalable target per copy, in copy order; give each the same policy, e.g.
        ``for target in sliced.auto_scale(...): target.scale_on_cpu_utilization("Cpu", target_utilization_percent=60)``.
        ``max_count`` is held to the capacity's ``max_capacity`` (NEURON017), and must be at least
        ``min_count`` (NEURON075). Copies deploy with a 100 % maximum, so every count needs a minimum healthy
        percent that lets ECS stop one task: one the library chose is lowered to fit (scaling to one instance deploys
        with 0 %), one you passed is refused where it leaves no room (NEURON040).
        """
        if self._targets:
            raise rules.SECOND_SCALING_TARGET.error(
                construct_path(self), f"auto_scale: {self._scaling_methods[0]} already made the scalable targets"
            )
        self._check_instances(max_count)
        self._check_instances(min_count)
        inputs.check_bounds(construct_path(self), ("min_count", min_count), ("max_count", max_count))
        if min_count == 0:
            raise rules.SCALE_TO_ZERO.error(
                construct_path(self),
                "min_count=0 on a fleet model, whose copies hold their cores on a fleet that stays up: nothing would "
                "wake a copy scaled to zero, and target tracking on waiting requests would take a busy one away",
                fix="keep min_count at 1 or more, or serve the model as a NeuronService and call scale_to_zero",
            )
        counts = range(min_count, max_count + 1)
        if not self._min_healthy_percent_passed and counts:
            fitting = min(self.copy_services[0].largest_minimum_healthy_percent(n, 100) for n in counts)
            if fitting < self.min_healthy_percent:
                self.min_healthy_percent = fitting
                for copy in self.copy_services:
                    copy.lower_min_healthy_percent(fitting)
        inputs.check_deployment_percents(
            construct_path(self),
            counts,
            self.min_healthy_percent,
            100,
            maximum_fixed=True,
            minimum_set_by=self._passed_to(),
        )
        self._scaling_bounds = (min_count, max_count)
        self._scaling_methods = ["auto_scale"]
        targets = []
        for copy in self.copy_services:
            targets.append(copy.adopt_scalable_target(min_count, max_count))
        self._targets = targets
        return list(targets)


def _ports(mapping: ecs.PortMapping | dict[str, Any]) -> tuple[int, int | None]:
    """(container port, host port) of a port mapping given as the struct or as its dict."""
    if isinstance(mapping, dict):
        return int(mapping.get("container_port", 0)), mapping.get("host_port")
    return int(mapping.container_port), int(mapping.host_port) if mapping.host_port is not None else None


def _copy_task_role(owner: Construct) -> iam.Role:
    return task_role(owner, "TaskRole")
