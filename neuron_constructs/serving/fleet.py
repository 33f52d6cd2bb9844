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

import math
from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import COUNT, Range, checked, is_token
from neuron_constructs.base.environments import check_same_environment
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.roles import ExecutionRole
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, node_of, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.model_sources import CompileCache, ModelArtifacts
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS, ContainerOptions, ServiceOptions
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at
from neuron_constructs.knowledge.cores import LOGICAL_CORE_VARIABLE
from neuron_constructs.knowledge.packing import InstancePlan, Placement
from neuron_constructs.knowledge.rollouts import DEFAULT_BAKE_MINUTES, DEFAULT_INTERVAL_MINUTES
from neuron_constructs.programs.metric_publisher import PROCESS_TAG_VARIABLE
from neuron_constructs.serving.listeners import (
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    ListenerTarget,
    TargetGroup,
    request_target_group,
)
from neuron_constructs.serving.rollout import Rollout
from neuron_constructs.serving.rollout_alarms import execution_errors_alarm, load_balancer_alarms
from neuron_constructs.serving.services import NeuronService, capacity_for, warn_without_neuron_alarm

__all__ = ["FleetModel", "ModelOptions", "NeuronFleet", "rollout_stages"]

_RUNTIME_VARIABLES = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", PROCESS_TAG_VARIABLE)


class ModelOptions(ContainerOptions, total=False):
    """What every copy of a model shares: the options of ``add_container`` (:class:`ContainerOptions`, the same for
    every copy; ``container_name`` default ``model``), and these.

    Attributes
    ----------
    min_healthy_percent
        Deployment lower bound (copies deploy with a 100 % maximum); default 50, or 0 with one
        instance. ECS rounds it up, so it must let one task stop at every task count the model runs (NEURON040).
    task_role, execution_role
        Shared by every copy; default one new role each (the task role assumable only for
        this account's tasks).
    log_group
        An existing log group every copy logs to; default a new one whose events are kept ``log_retention``
        (default one month), encrypted with ``log_encryption_key`` if given, deleted with the stack unless
        ``log_removal_policy`` says otherwise (default ``RemovalPolicy.DESTROY``).
    vpc_subnets, security_groups
        For the ``AWS_VPC`` network mode.
    service_options
        Passed to every copy's ECS service (:class:`ServiceOptions`).
    compile_cache, model_artifacts, hf_token
        Warm starts for every copy
        (:mod:`~neuron_constructs.compute.model_sources`).
    image_size_gib
        The image's size as its registry reports it (compressed), for the root volume check of a warm pool that
        prefetches it (NEURON091); default unknown.
    neuron_sdk
        The image's Neuron SDK release (``"2.31.1"``), for an image whose tag does not name it (``-sdkX.Y.Z-``), as
        on ``add_neuron_container``: the driver checks read it (NEURON088, NEURON127, NEURON147); refused when the
        release table does not know it or the tag names another (NEURON146). Default: the tag's, else unknown.
    rollout
        How a new version reaches the copies (:class:`~neuron_constructs.serving.rollout.Rollout`); default
        ``Rollout.rolling()``: two waves, one half serving while the other is replaced. ECS shifts traffic per service,
        through the weights of one listener rule between that service's two target groups, and the copies are
        separate services behind one target group and rule (an Application Load Balancer spreads a request only
        over the target groups of the one rule it matches), so a model rolls out copy by copy, as stages of rolling
        deployments that CloudFormation runs one after another: ``Rollout.canary(percent=)`` deploys the first
        ``ceil(percent % of the copies)`` copies (at least one), then the rest; ``Rollout.linear(step_percent=)``
        deploys ``ceil(step_percent % of the copies)`` copies a stage. Every copy's deployment carries the model's
        deployment alarms (with ``alarms``; :class:`~neuron_constructs.serving.rollout.RolloutAlarms`), and ECS keeps
        a stage's deployment open for a bake time it computes from them, rolling the stage back on an alarm, before
        the next stage starts. Refused on a fleet model (NEURON078): blue/green and a smoke test (the copies register
        straight into the production target group, so there is no test traffic and no single switch), an interval or
        bake time other than the defaults (ECS, not a timer, ends a stage), one stage holding every copy, and a model
        of one copy.
    model_name
        What every copy reports as to neuron-monitor (``NEURON_PROCESS_TAG``) and the ``Model`` dimension of the
        per-model metrics; default the container's ``NEURON_PROCESS_TAG``, else the model's construct path made to fit
        the tag (:func:`~neuron_constructs.checks.inputs.derived_model_name`). A name or tag given is refused when
        neuron-monitor or CloudWatch cannot carry it (NEURON067); a derived one never is.
    """

    min_healthy_percent: int | None
    task_role: iam.IRole | None
    execution_role: iam.IRole | None
    log_group: logs.ILogGroup | None
    log_retention: logs.RetentionDays
    log_removal_policy: RemovalPolicy
    log_encryption_key: kms.IKey | None
    vpc_subnets: ec2.SubnetSelection | None
    security_groups: Sequence[ec2.ISecurityGroup] | None
    service_options: ServiceOptions | None
    compile_cache: CompileCache | None
    model_artifacts: ModelArtifacts | None
    hf_token: secretsmanager.ISecret | None
    image_size_gib: float | None
    neuron_sdk: str | None
    model_name: str | None
    rollout: Rollout | None


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
        if named is not None:
            self.model_name: str = inputs.check_model_name(path, named)
        elif tagged is not None:
            self.model_name = inputs.check_model_name(path, tagged, given_as=PROCESS_TAG_VARIABLE)
        else:
            self.model_name = inputs.derived_model_name(path)
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
        _claim(chosen, owner or self)
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
                **(options.get("service_options") or {}),
            )
            assert isinstance(service.service, ecs.Ec2Service)
            service.service.add_placement_strategies(ecs.PlacementStrategy.packed_by_memory())
            self.services.append(service.service)
            self.copy_services.append(service)
        self.rollout: Rollout = _fleet_rollout(path, options.get("rollout"), self.copies)
        self.waves: list[list[int]] = rollout_stages(self.rollout, self.copies)
        for earlier, later in zip(self.waves, self.waves[1:], strict=False):
            for index in later:
                for before in earlier:
                    node_of(self.services[index]).add_dependency(self.services[before])
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

    def _add_alarms(self, *alarms: cloudwatch.Alarm) -> None:
        """Give every copy's deployment ``alarms`` to roll back on."""
        self.deployment_alarms.extend(alarms)
        for copy in self.copy_services:
            copy.add_rollout_alarms(*alarms)

    def _attached(self, target_group: TargetGroup, load_balancer_full_name: str | None) -> None:
        """After :meth:`attach_to_listener`: the target group's alarms on every copy, for a staged rollout."""
        settings = self.rollout.alarms if self.rollout.strategy != "rolling" else None
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
        minimum = self.instances if min_count is None else min_count
        if min_count is None:
            inputs.check_bounds(
                construct_path(self),
                ("min_count", minimum),
                ("max_count", max_count),
                lower_default="the model's instances, as min_count was not given",
            )
        targets = self._scalable_targets("scale_on_neuron_utilization", minimum, max_count)
        for copy, target in zip(self.copy_services, targets, strict=True):
            copy.track_neuron_utilization(target, target_percent, scale_out_cooldown, scale_in_cooldown)
        return targets

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
        counts = range(max(1, min_count), max_count + 1)
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


def rollout_stages(rollout: Rollout, copies: int) -> list[list[int]]:
    """The copy indices each stage deploys, in order: two halves for a rolling update (one wave for one copy), the
    canary's ``ceil(percent % of copies)`` copies (at least one) and then the rest, or linear stages of
    ``ceil(step_percent % of copies)`` copies."""
    plan = rollout.plan
    if plan.strategy == "canary" and copies > 1:
        first = min(copies - 1, max(1, math.ceil((plan.canary_percent or 0) * copies / 100 - 1e-9)))
        return [list(range(first)), list(range(first, copies))]
    if plan.strategy == "linear" and copies > 1:
        size = max(1, math.ceil((plan.linear_step_percent or 100) * copies / 100 - 1e-9))
        return [list(range(start, min(copies, start + size))) for start in range(0, copies, size)]
    half = (copies + 1) // 2
    return [list(range(half)), list(range(half, copies))] if copies > 1 else [[0]]


def _fleet_rollout(path: str, rollout: Rollout | None, copies: int) -> Rollout:
    """NEURON078: the rollout a fleet model's copies can take, copy by copy (:class:`ModelOptions` ``rollout``)."""
    if rollout is None:
        return Rollout.rolling()
    if not isinstance(rollout, Rollout):
        raise rules.WRONG_TYPE.error(
            path, f"rollout={rollout!r}", expected="rollout=Rollout.canary() or another Rollout"
        )
    plan = rollout.plan
    fix = "roll the model out Rollout.canary() or Rollout.linear() copy by copy, or serve it as a NeuronService"
    if plan.strategy == "rolling":
        return rollout
    if plan.strategy == "blue_green":
        raise rules.ROLLOUT_ON_FLEET.error(
            path, "a blue/green rollout of a fleet model, whose copies no one listener rule can switch at once", fix=fix
        )
    if rollout.smoke_test is not None:
        raise rules.ROLLOUT_ON_FLEET.error(
            path,
            "a smoke test on a fleet model, whose copies register straight into the production target group",
            fix="drop smoke_test=, or serve the model as a NeuronService rolled out with it",
        )
    if copies < 2:
        raise rules.ROLLOUT_ON_FLEET.error(
            path,
            f"a {plan.strategy} rollout of a model of one copy, which has no stage smaller than the model",
            fix=fix,
        )
    if plan.interval_minutes != DEFAULT_INTERVAL_MINUTES or plan.bake_time_minutes != DEFAULT_BAKE_MINUTES:
        raise rules.ROLLOUT_ON_FLEET.error(
            path,
            f"interval={plan.interval_minutes:g} min and bake_time={plan.bake_time_minutes:g} min on a fleet model, "
            "whose stages end when ECS's alarm bake ends",
            fix=f"leave interval ({DEFAULT_INTERVAL_MINUTES} min) and bake_time ({DEFAULT_BAKE_MINUTES} min) at their "
            "defaults, and tune the alarms (RolloutAlarms(periods=...)) instead",
        )
    if len(rollout_stages(rollout, copies)) < 2:
        raise rules.ROLLOUT_ON_FLEET.error(
            path,
            f"a linear step of {plan.linear_step_percent:g} % of {copies} copies: one stage that stops every copy",
            fix=f"pass step_percent below {100 * (copies - 1) / copies:g} so that two stages or more deploy",
        )
    return rollout


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
        self.capacity: AutoScalingCapacity = _capacity_of_type(path, cluster, self.instance_type, capacity)
        inputs.check_slice_capacity(path, instances, self.capacity.max_capacity, construct_path(self.capacity))
        super().__init__(scope, id)
        remember_path(self, scope, id)
        enable_template_checks(scope)
        _claim(self.capacity, self)
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


def _capacity_of_type(
    path: str,
    cluster: NeuronCluster,
    instance: NeuronInstanceType,
    requested: AutoScalingCapacity | ecs.AsgCapacityProvider | None,
) -> AutoScalingCapacity:
    """NEURON014/015: the one Auto Scaling capacity of ``cluster`` of type ``instance`` (or ``requested``)."""
    fitting = [
        c
        for c in cluster.auto_scaling_capacities
        if c.neuron_instance_type == instance
        and (requested is None or requested is c or c.capacity_provider is requested)
    ]
    if not fitting:
        wanted = f"{instance.name} Auto Scaling capacity"
        raise rules.NO_MATCHING_CAPACITY.error(path, f"the cluster has no {wanted} for the fleet", wanted=wanted)
    if len(fitting) > 1:
        raise rules.AMBIGUOUS_CAPACITY.error(
            path, f"{len(fitting)} capacities fit", names=", ".join(c.node.id for c in fitting)
        )
    return fitting[0]


def _claim(capacity: AutoScalingCapacity, owner: Construct) -> None:
    """NEURON020: the owner's copies are the only tasks on their capacity."""
    if capacity.sliced_by is owner:
        return
    others = [s for s in capacity.services if not construct_path(s).startswith(f"{construct_path(owner)}/")]
    if others or capacity.sliced_by is not None:
        other = others[0].node.path if others else construct_path(capacity.sliced_by)  # type: ignore[arg-type]
        raise rules.SLICED_CAPACITY_SHARED.error(
            construct_path(owner),
            f"{construct_path(capacity)} already runs {other}",
            sliced=construct_path(owner),
            other=other,
        )
    capacity.sliced_by = owner


def _ports(mapping: ecs.PortMapping | dict[str, Any]) -> tuple[int, int | None]:
    """(container port, host port) of a port mapping given as the struct or as its dict."""
    if isinstance(mapping, dict):
        return int(mapping.get("container_port", 0)), mapping.get("host_port")
    return int(mapping.container_port), int(mapping.host_port) if mapping.host_port is not None else None


def _copy_task_role(owner: Construct) -> iam.Role:
    return task_role(owner, "TaskRole")
