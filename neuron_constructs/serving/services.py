"""``NeuronService``: an ECS service placed on the capacity its task definition fits.

* managed allocation -> the cluster's Managed Instances capacity provider;
* manual mapping -> the Auto Scaling capacity of the task's instance type (or
  a Managed Instances capacity that admits that type, when the task definition
  is Managed Instances compatible).

aws-cdk-lib's ``Ec2Service`` refuses a cluster whose only capacity is Managed
Instances (aws/aws-cdk#35742, #36098), so services on Managed Instances use
``FargateService`` with the Managed Instances capacity provider strategy, as
upstream documents; services on Auto Scaling capacity use ``Ec2Service``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jsii
from aws_cdk import (
    AspectPriority,
    Aspects,
    Duration,
    IAspect,
    IStableNumberProducer,
    Lazy,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct, IConstruct
from typing_extensions import Unpack

from neuron_constructs.base.arguments import (
    COUNT,
    MAXIMUM_PERCENT,
    MINIMUM_HEALTHY_PERCENT,
    Range,
    checked,
    seconds_of,
)
from neuron_constructs.base.environments import check_same_environment
from neuron_constructs.base.l1_overrides import (
    distinct_instances_on_managed_instances,
    host_network_on_managed_instances,
)
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute import driver_check as start_check
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.options import ServiceOptions
from neuron_constructs.compute.task_definitions.managed import ManagedNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.cores import core_overlap, format_core_list
from neuron_constructs.knowledge.devices import format_device_paths
from neuron_constructs.knowledge.neuron_releases import ami_driver_conflict, newest_driver_conflict
from neuron_constructs.knowledge.rollouts import peak_room
from neuron_constructs.programs.metric_publisher import CLUSTER_DIMENSION, MODEL_DIMENSION, NAMESPACE
from neuron_constructs.serving.listeners import (
    MAXIMUM_GRACE_PERIOD_S,
    MODEL_START_GRACE_PERIOD,
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    ListenerTarget,
    TargetGroup,
    request_target_group,
)
from neuron_constructs.serving.rollout import Rollout
from neuron_constructs.serving.rollout_alarms import (
    execution_errors_alarm,
    fail_only_problem,
    load_balancer_alarms,
    watch_with_the_service_s_own,
)
from neuron_constructs.serving.rollout_checks import (
    RolloutTrafficPath,
    RolloutWarnings,
    service_strategy,
    warn_without_neuron_alarm,
)

__all__ = ["Capacity", "CapacityChoice", "NeuronService", "capacity_for", "warn_without_neuron_alarm"]

Capacity = ManagedInstancesCapacity | AutoScalingCapacity
"""A capacity of a :class:`NeuronCluster`, as its ``add_*_capacity`` methods return it."""
CapacityChoice = Capacity | ecs.ManagedInstancesCapacityProvider | ecs.AsgCapacityProvider
"""What ``capacity=`` takes: a capacity, or its ``capacity_provider``."""


class NeuronService(Construct, ListenerTarget):
    """An ECS service for a Neuron task definition, on capacity that fits it.

    A service of a manually mapped task definition carries ``distinctInstance``: ECS does not
    track ``linuxParameters.devices``, so two of its tasks on one instance - copies, or the new
    and the old task of a rolling deployment - would map the same ``/dev/neuronN``. It therefore
    runs at most one task per instance of its capacity (NEURON017), and a second service whose
    devices overlap on the same capacity is refused (NEURON023) unless the two hold disjoint NeuronCores of the
    shared devices (``cores=``, or ``NEURON_RT_VISIBLE_CORES`` set by hand; decided by
    :func:`~neuron_constructs.knowledge.cores.core_overlap`, as on the template). When its tasks fill every instance
    the Auto Scaling capacity can launch, a rolling deployment has no spare instance for a new task,
    so ECS must stop an old one first: the default minimum healthy percent is then
    ``(desired - 1) / desired`` (0 % for one task), and a higher one is refused (NEURON032).

    A service that may stop every task in a deployment (minimum healthy percent 0, e.g. one task on capacity it
    fills) gets warning NEURON112.

    Parameters
    ----------
    cluster
        The :class:`NeuronCluster`.
    task_definition
        A managed or manual Neuron task definition.
    desired_count
        Tasks to run, 0 or more; default 1.
    capacity
        The capacity provider to use; default the one capacity of the
        cluster that fits (an error when none or several fit).
    min_healthy_percent
        Deployment lower bound, 0-100 and below ``max_healthy_percent``; default 100,
        or what lets a deployment proceed on full capacity (above) or under ``max_healthy_percent``: ECS
        rounds the minimum up and the maximum down, and with no room on either side a rolling deployment
        never starts (NEURON040; e.g. one task deploys with 0 % when the maximum is 100 %).
    max_healthy_percent
        Deployment upper bound, at least 100; default 200.
    model_name
        What the model reports as: every Neuron container of the task definition gets
        ``NEURON_PROCESS_TAG=<model_name>``, under which neuron-monitor reports it and the monitoring publishes its
        per-model metrics (:meth:`scale_on_neuron_utilization` tracks them). Default the task definition's own
        ``NEURON_PROCESS_TAG``, else this service's construct path (``Stack/Service``) made to fit the tag
        (:func:`~neuron_constructs.checks.inputs.derived_model_name`: ``Stack/Llama 3`` reports as
        ``Stack/Llama-3-<8 hex digits>``); a name given here must be 1 to 255 letters, digits and
        ``. _ - / : @ + =`` (NEURON067).
    vpc_subnets, security_groups
        Awsvpc networking only (refused otherwise, NEURON034); default the
        cluster's capacity subnets and a new security group with no inbound rules.
    rollout
        How a new revision reaches production (:class:`~neuron_constructs.serving.rollout.Rollout`): default
        ``Rollout.rolling()``. ``blue_green``, ``canary`` and ``linear`` are ECS's native strategies: green runs at the
        full desired count next to blue until the bake time ends, so the capacity must hold both (NEURON074, with the
        chips, cores, instances, CPU and memory of the peak; checked again at every count scaling allows);
        :meth:`attach_to_listener` then makes the alternate target group, the production listener rule ECS shifts
        and, with a smoke test, the test rule and the hook (canary and linear need it or Service Connect, NEURON073;
        blue/green without either warns, NEURON121); with alarms, ECS rolls back on the model's Neuron
        ``ExecutionErrors`` (when a NeuronMonitoring made before the service covers the capacity, warning NEURON122
        otherwise) and the target groups' 5xx count and p99 response time
        (:mod:`~neuron_constructs.serving.rollout_alarms`).
    **service_options
        Passed to the ECS service as given (:class:`~neuron_constructs.compute.options.ServiceOptions`:
        execute command, tags, Service Connect, Cloud Map, deployment alarms, circuit breaker - default on,
        with rollback - ...). ``health_check_grace_period`` defaults to 30 minutes
        (:data:`~neuron_constructs.serving.listeners.MODEL_START_GRACE_PERIOD`: download, Neuron compile and load).

    Attributes
    ----------
    service
        The ``ecs.FargateService`` (Managed Instances) or ``ecs.Ec2Service``.
    capacity
        The capacity construct the service runs on.
    min_healthy_percent, max_healthy_percent
        What it deploys with.
    health_check_grace_period
        How long ECS ignores failing health checks of a new task.
    model_name
        The model's ``NEURON_PROCESS_TAG``: the ``Model`` dimension of its metrics.
    target_groups
        The target groups :meth:`attach_to_listener` made, in order.
    """

    @checked(
        ranges={
            "desired_count": COUNT,
            "min_healthy_percent": MINIMUM_HEALTHY_PERCENT,
            "max_healthy_percent": MAXIMUM_PERCENT,
        },
        names=("service_name",),
        options=ServiceOptions,
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        task_definition: NeuronTaskDefinition,
        desired_count: int = 1,
        capacity: CapacityChoice | None = None,
        service_name: str | None = None,
        min_healthy_percent: int | None = None,
        max_healthy_percent: int = 200,
        model_name: str | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        rollout: Rollout | None = None,
        **service_options: Unpack[ServiceOptions],
    ) -> None:
        if rollout is not None and not isinstance(rollout, Rollout):
            raise rules.WRONG_TYPE.error(
                f"{construct_path(scope)}/{id}",
                f"rollout={rollout!r}",
                expected="rollout=Rollout.blue_green() or another Rollout",
            )
        check_same_environment(
            f"{construct_path(scope)}/{id}", scope, cluster, what="the service", other_name=f"{construct_path(cluster)}"
        )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        enable_template_checks(scope)
        self.cluster = cluster
        self.task_definition = task_definition
        self.capacity: Capacity = capacity_for(construct_path(self), cluster, task_definition, capacity)
        self.model_name: str = task_definition.name_model(
            construct_path(self),
            model_name
            if model_name is not None
            else task_definition.model_name or inputs.derived_model_name(construct_path(self)),
            given=model_name is not None,
        )
        self.desired_count = desired_count
        self.rollout: Rollout = rollout or Rollout.rolling()
        self.alternate_target_groups: list[TargetGroup] = []
        self._check_placement()
        self._check_rollout_room("desired_count", desired_count)
        self._min_healthy_percent_passed = min_healthy_percent is not None
        min_healthy_percent = self._minimum_healthy_percent(min_healthy_percent, max_healthy_percent)
        self.min_healthy_percent, self.max_healthy_percent = min_healthy_percent, max_healthy_percent
        self._in_waves = bool(getattr(scope, "deploys_in_waves", False))
        self._warned_every_replica_stops = False
        self.health_check_grace_period: Duration = service_options.get(
            "health_check_grace_period", MODEL_START_GRACE_PERIOD
        )
        grace = seconds_of(self.health_check_grace_period)
        if grace is not None and grace > MAXIMUM_GRACE_PERIOD_S:
            raise rules.OUT_OF_RANGE.error(
                construct_path(self),
                f"health_check_grace_period={self.health_check_grace_period.to_human_string()}",
                name="health_check_grace_period",
                minimum="0 s",
                maximum="2,147,483,647 s (about 68 years)",
            )
        self.target_groups: list[TargetGroup] = []
        self._scaling: ecs.ScalableTaskCount | None = None
        self._scaling_bounds: tuple[int, int] | None = None
        self._scaling_methods: list[str] = []
        self._warn_if_every_replica_stops()
        awsvpc = task_definition.task_definition.network_mode == ecs.NetworkMode.AWS_VPC
        for option, value in (("vpc_subnets", vpc_subnets), ("security_groups", security_groups)):
            if value is not None and not awsvpc:
                raise rules.NETWORK_OPTION_IGNORED.error(
                    construct_path(self),
                    f"{option} is set, but {construct_path(task_definition)} uses the "
                    f"{str(task_definition.task_definition.network_mode.value).lower()} network mode",
                    option=option,
                )
        self.capacity.services.append(self)
        strategy = [
            ecs.CapacityProviderStrategy(
                capacity_provider=self.capacity.capacity_provider.capacity_provider_name, weight=1
            )
        ]
        common: dict[str, Any] = {
            "circuit_breaker": ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            **service_options,
            "health_check_grace_period": self.health_check_grace_period,
            "cluster": cluster.cluster,
            "task_definition": task_definition.task_definition,
            "desired_count": desired_count,
            "service_name": service_name,
            "capacity_provider_strategies": strategy,
            # the value at synth: a minimum the library chose follows the counts scaling asks for later
            "min_healthy_percent": Lazy.number(_Produce(lambda: self.min_healthy_percent)),
            "max_healthy_percent": max_healthy_percent,
            **service_strategy(self.rollout),
        }
        networking: dict[str, Any] = (
            dict(vpc_subnets=vpc_subnets or cluster.capacity_subnets, security_groups=security_groups) if awsvpc else {}
        )
        self.service: ecs.BaseService
        host = task_definition.task_definition.network_mode == ecs.NetworkMode.HOST
        if isinstance(self.capacity, ManagedInstancesCapacity):
            if host:  # the tasks use the instances' network and security groups
                networking = {"security_groups": self.capacity.security_groups}
            self.service = ecs.FargateService(self, "Service", assign_public_ip=False, **common, **networking)
            if host:
                host_network_on_managed_instances(self.service)
        else:
            # aws-cdk-lib's add_placement_constraints replaces what was there: every constraint goes in at once.
            constraints: list[ecs.PlacementConstraint] = []
            if isinstance(task_definition, ManualNeuronTaskDefinition):
                if task_definition.is_managed_instances_compatible:
                    # The task-level memberOf constraint is dropped for Managed Instances compatible task
                    # definitions; keep the instance-type pin on the service instead.
                    constraints.append(task_definition.instance_type_constraint)
                constraints.append(ecs.PlacementConstraint.distinct_instances())
            self.service = ecs.Ec2Service(
                self, "Service", placement_constraints=constraints or None, **common, **networking
            )
        if isinstance(self.service, ecs.FargateService) and isinstance(task_definition, ManualNeuronTaskDefinition):
            distinct_instances_on_managed_instances(self.service)
        cluster.wait_for_capacity_associations(self.service)
        self.deployment_alarms: list[cloudwatch.Alarm] = []
        if self.rollout.alarms is not None:
            fail_only = fail_only_problem(self.service, "deployment_alarms=")
            if fail_only is not None:
                raise rules.DEPLOYMENT_ALARM_BEHAVIOR.error(construct_path(self), fail_only)
        if self.rollout.native:
            service_connect = bool(service_options.get("service_connect_configuration"))
            self.node.add_validation(RolloutTrafficPath(self, service_connect))
            neuron_alarm = None
            if self.rollout.alarms is not None and self.capacity.monitored:
                neuron_alarm = execution_errors_alarm(
                    self,
                    "RolloutExecutionErrors",
                    cluster_name=cluster.cluster.cluster_name,
                    model_name=self.model_name,
                    settings=self.rollout.alarms,
                )
                self.add_rollout_alarms(neuron_alarm)
            Aspects.of(self.service.node.find_child("Service")).add(
                RolloutWarnings(
                    self, service_connect, without_neuron_alarm=self.rollout.alarms is not None and neuron_alarm is None
                ),
                priority=AspectPriority.READONLY,
            )

    def add_rollout_alarms(self, *alarms: cloudwatch.Alarm | None) -> None:
        """Add ``alarms`` to the deployment alarms ECS rolls this service back on, next to the service's own (the
        ``deployment_alarms`` passed to it, or given to ``service.enable_deployment_alarms``, before or after): the
        names are read at synth, so alarms added later count too
        (:func:`~neuron_constructs.serving.rollout_alarms.watch_with_the_service_s_own`)."""
        given = [a for a in alarms if a is not None]
        if given and not self.deployment_alarms:
            watch_with_the_service_s_own(
                self.service, lambda: [a.alarm_name for a in self.deployment_alarms], path=construct_path(self)
            )
        self.deployment_alarms.extend(given)

    def rollout_attached(self, target_groups: Sequence[TargetGroup], load_balancer_full_name: str | None) -> None:
        """After :meth:`attach_to_listener` made the rollout's target groups behind the load balancer
        ``load_balancer_full_name`` (``None``: a Network Load Balancer): their alarms, when the rollout has alarms."""
        if self.rollout.alarms is not None and load_balancer_full_name is not None:
            self.add_rollout_alarms(
                *load_balancer_alarms(
                    self,
                    "Rollout",
                    target_groups=target_groups,
                    load_balancer_full_name=load_balancer_full_name,
                    settings=self.rollout.alarms,
                )
            )

    def _check_rollout_room(self, name: str, tasks: int) -> None:
        """NEURON074: a native rollout of ``tasks`` tasks holds blue and green at once; the Auto Scaling capacity
        must launch enough instances for both (Managed Instances capacities launch what the tasks need)."""
        capacity, task = self.capacity, self.task_definition
        if not self.rollout.native or not isinstance(capacity, AutoScalingCapacity):
            return
        if not isinstance(task, ManualNeuronTaskDefinition):
            return
        whole_chips = len(task.cores) == len(task.devices) * task.instance_type.cores_per_chip(task.lnc)
        room = peak_room(
            self.rollout.plan,
            task.instance_type,
            desired=tasks,
            copies_per_instance=1,
            cpu=task.cpu or 0,
            memory_mib=task.memory_mib or 0,
            chips=len(task.devices) if whole_chips else None,
            cores=None if whole_chips else len(task.cores),
            lnc=task.lnc,
        )
        shortfall = room.shortfall(capacity.max_capacity, construct_path(capacity))
        if shortfall is None:
            return
        problem, _, _ = shortfall.partition("; raise")
        raise rules.ROLLOUT_ROOM.error(
            construct_path(self),
            f"{name}={tasks} rolled out {self.rollout}: {problem}",
            fix=f"raise max_capacity of {construct_path(capacity)} to {room.instances} or more, run fewer tasks, or "
            "roll it out rolling (Rollout.rolling())",
        )

    def _listener_services(self) -> Sequence[NeuronService]:
        return [self]

    @checked(ranges={"requests_per_target": Range(1), "min_count": COUNT, "max_count": Range(1)})
    def scale_on_requests(
        self,
        *,
        requests_per_target: int,
        max_count: int,
        min_count: int | None = None,
        target_group: elbv2.ApplicationTargetGroup | None = None,
        scale_out_cooldown: Duration = SCALE_OUT_COOLDOWN,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> ecs.ScalableTaskCount:
        """Track ``requests_per_target`` requests per task on the load balancer (ALBRequestCountPerTarget).

        Between ``min_count`` (default the desired count) and ``max_count`` tasks, the first at most the second
        (NEURON075); the capacity provider's managed scaling launches instances for the tasks. Scale-out may follow
        another after
        ``scale_out_cooldown`` (1 minute); scale-in waits ``scale_in_cooldown`` (30 minutes, the default start-up
        allowance): a task that took minutes to start is not stopped on a short lull. ``target_group``: default the
        one Application Load Balancer target group :meth:`attach_to_listener` made (NEURON044). Tasks of a manually
        mapped task definition run one per instance, so ``max_count`` is held to the capacity's ``max_capacity``
        (NEURON017). Every count must leave a deployment room: a minimum healthy percent the library chose is
        lowered to fit, one you passed is refused where it leaves none (NEURON040, NEURON032). Returns the scalable
        target, for more policies; :meth:`scale_on_neuron_utilization` adds its policy to the same target (same
        counts), and each is called at most once (NEURON035).
        """
        path = construct_path(self)
        if target_group is None:
            target_group = request_target_group(path, self.target_groups, "the service is")
        scaling = self._scalable_target("scale_on_requests", min_count, max_count)
        scaling.scale_on_request_count(
            "Requests",
            requests_per_target=requests_per_target,
            target_group=target_group,
            scale_out_cooldown=scale_out_cooldown,
            scale_in_cooldown=scale_in_cooldown,
        )
        return scaling

    @checked(ranges={"target_percent": Range(1, 100), "min_count": COUNT, "max_count": Range(1)})
    def scale_on_neuron_utilization(
        self,
        *,
        max_count: int,
        target_percent: int = 70,
        min_count: int | None = None,
        scale_out_cooldown: Duration = SCALE_OUT_COOLDOWN,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> ecs.ScalableTaskCount:
        """Track ``target_percent`` (default 70) NeuronCore utilization of this model, between ``min_count`` (default
        the desired count) and ``max_count`` tasks.

        The metric is the model's own: ``NeuronCoreUtilization`` with dimensions ``ClusterName`` and ``Model``
        (``model_name``) in the library's namespace, the 1-minute average over the NeuronCores its tasks hold,
        which :class:`~neuron_constructs.monitoring.monitoring.NeuronMonitoring` publishes from neuron-monitor (warning
        NEURON114 when no monitoring of this app covers the capacity). It measures the chips' work, not requests,
        so a model whose cost per request varies with prompt length scales on what it costs. The cooldowns, the
        one-task-per-instance bound and the deployment-room rules are those of :meth:`scale_on_requests`, with which
        it shares the scalable target: with both, Application Auto Scaling scales out when either policy asks and
        in only when both allow it. Returns the scalable target.
        """
        scaling = self._scalable_target("scale_on_neuron_utilization", min_count, max_count)
        self.track_neuron_utilization(scaling, target_percent, scale_out_cooldown, scale_in_cooldown)
        return scaling

    @checked(ranges={"target_percent": Range(1, 100)})
    def track_neuron_utilization(
        self,
        scaling: ecs.ScalableTaskCount,
        target_percent: int,
        scale_out_cooldown: Duration,
        scale_in_cooldown: Duration,
    ) -> None:
        """Add the target-tracking policy on this model's NeuronCore utilization to ``scaling`` (NEURON114 at synth
        when no monitoring of the app covers the capacity)."""
        if not self.capacity.monitored:
            Aspects.of(self).add(_WarnIfUnmonitored(self), priority=AspectPriority.READONLY)
        scaling.scale_to_track_custom_metric(
            "NeuronCoreUtilization",
            metric=model_utilization_metric(self.cluster.cluster.cluster_name, self.model_name),
            target_value=target_percent,
            scale_out_cooldown=scale_out_cooldown,
            scale_in_cooldown=scale_in_cooldown,
        )

    @property
    def scalable_target(self) -> ecs.ScalableTaskCount | None:
        """The service's scalable target, once a scaling method (or its owner's ``auto_scale``) made it."""
        return self._scaling

    @checked(ranges={"min_count": COUNT, "max_count": Range(1)})
    def adopt_scalable_target(self, min_count: int, max_count: int) -> ecs.ScalableTaskCount:
        """Make the scalable target for the owner of this service (a fleet model's ``auto_scale``): the service's own
        scaling methods are then refused (NEURON035)."""
        if self._scaling is not None:
            raise rules.SECOND_SCALING_TARGET.error(construct_path(self), "the service already has its scalable target")
        self._check_rollout_room("max_count", max_count)
        self._scaling = self.service.auto_scale_task_count(min_capacity=min_count, max_capacity=max_count)
        return self._scaling

    def _scalable_target(self, method: str, min_count: int | None, max_count: int) -> ecs.ScalableTaskCount:
        """The service's one scalable target between ``min_count`` (default the desired count) and ``max_count``:
        made by the first scaling method, shared by the other when it asks for the same counts (NEURON035)."""
        path = construct_path(self)
        minimum = self.desired_count if min_count is None else min_count
        inputs.check_bounds(
            path,
            ("min_count", minimum),
            ("max_count", max_count),
            lower_default="" if min_count is not None else "the desired count, as min_count was not given",
        )
        if self._scaling is not None:
            if self._scaling_bounds is None:
                raise rules.SECOND_SCALING_TARGET.error(
                    path, f"{method}: the service's scalable target is its owner's (auto_scale)"
                )
            if method in self._scaling_methods:
                raise rules.SECOND_SCALING_TARGET.error(path, f"{method} was already called")
            if self._scaling_bounds != (minimum, max_count):
                earlier = self._scaling_methods[0]
                raise rules.SECOND_SCALING_TARGET.error(
                    path,
                    f"{method} asks for {minimum} to {max_count} tasks, but {earlier} made the target for "
                    f"{self._scaling_bounds[0]} to {self._scaling_bounds[1]}",
                )
            self._scaling_methods.append(method)
            return self._scaling
        capacity = self.capacity
        self._check_one_per_instance("max_count", max_count)
        self._check_rollout_room("max_count", max_count)
        counts = range(max(1, minimum), max_count + 1)
        if not self._min_healthy_percent_passed and counts:
            fitting = min(self.largest_minimum_healthy_percent(n, self.max_healthy_percent) for n in counts)
            if fitting < self.min_healthy_percent:
                self.lower_min_healthy_percent(fitting)
        passed_by = "NeuronService" if self._min_healthy_percent_passed else None
        inputs.check_deployment_percents(
            path, counts, self.min_healthy_percent, self.max_healthy_percent, minimum_set_by=passed_by
        )
        if (
            isinstance(self.task_definition, ManualNeuronTaskDefinition)
            and isinstance(capacity, AutoScalingCapacity)
            and max_count >= capacity.max_capacity
            and self.min_healthy_percent > inputs.room_to_stop(max_count)
        ):
            raise rules.DEPLOYMENT_WITHOUT_ROOM.error(
                path,
                f"max_count={max_count} with distinctInstance fills the {capacity.max_capacity} instances "
                f"{construct_path(capacity)} can launch, and min_healthy_percent={self.min_healthy_percent}"
                f"{f' (passed to {passed_by})' if passed_by else ''} keeps every task running",
                percent=inputs.room_to_stop(max_count),
                capacity=construct_path(capacity),
                desired=max_count,
            )
        self._scaling = self.service.auto_scale_task_count(min_capacity=minimum, max_capacity=max_count)
        self._scaling_bounds = (minimum, max_count)
        self._scaling_methods = [method]
        return self._scaling

    def largest_minimum_healthy_percent(self, tasks: int, maximum: int) -> int:
        """The largest minimum healthy percent with which a deployment of ``tasks`` tasks can stop one: below 100
        when they fill every instance the capacity launches (NEURON032) or ``maximum`` starts none beyond them
        (NEURON040)."""
        capacity = self.capacity
        instances = capacity.max_capacity if isinstance(capacity, AutoScalingCapacity) else None
        full = isinstance(self.task_definition, ManualNeuronTaskDefinition) and instances and instances <= tasks
        largest = inputs.room_to_stop(tasks) if full else 100
        if tasks and inputs.deployment_stalls(tasks, 100, maximum):
            largest = min(largest, inputs.room_to_stop(tasks))
        return largest

    def _warn_if_every_replica_stops(self) -> None:
        """NEURON112: a deployment of a running service that may stop every replica at once (once per service)."""
        if self.desired_count and self.min_healthy_percent == 0 and not self._in_waves:
            if self._warned_every_replica_stops:
                return
            self._warned_every_replica_stops = True
            Validations.of(self).add_warning(
                rules.EVERY_REPLICA_STOPS.warning_id,
                rules.EVERY_REPLICA_STOPS.message(
                    construct_path(self), f"desired_count={self.desired_count} deploys with min_healthy_percent=0"
                ),
            )

    @checked(ranges={"percent": MINIMUM_HEALTHY_PERCENT})
    def lower_min_healthy_percent(self, percent: int) -> None:
        """Deploy with ``percent`` as the minimum healthy percent from now on: for a minimum the library chose, when
        a later call (scaling, a fleet's ``auto_scale``) asks for counts it leaves no room at."""
        self.min_healthy_percent = percent
        self._warn_if_every_replica_stops()

    def _minimum_healthy_percent(self, requested: int | None, maximum: int) -> int:
        """NEURON032/040 and aws-cdk-lib's min < max: the minimum healthy percent this service deploys with."""
        capacity, path, desired = self.capacity, construct_path(self), self.desired_count
        instances = capacity.max_capacity if isinstance(capacity, AutoScalingCapacity) else None
        largest = self.largest_minimum_healthy_percent(desired, maximum)
        if requested is None:
            return min(largest, maximum - 1)
        inputs.check_bounds(path, ("min_healthy_percent", requested), ("max_healthy_percent", maximum), strictly=True)
        inputs.check_deployment_percents(path, [desired], requested, maximum)
        if requested > largest:
            raise rules.DEPLOYMENT_WITHOUT_ROOM.error(
                path,
                f"desired_count={desired} with distinctInstance fills the {instances} instances "
                f"{construct_path(capacity)} can launch, and min_healthy_percent={requested} (passed to NeuronService) "
                "keeps every task running",
                percent=largest,
                capacity=construct_path(capacity),
                desired=desired,
            )
        return requested

    def _check_one_per_instance(self, name: str, count: int) -> None:
        """NEURON017: ``count`` tasks of a manually mapped task definition, one per instance, fit the capacity."""
        capacity = self.capacity
        if (
            isinstance(self.task_definition, ManualNeuronTaskDefinition)
            and isinstance(capacity, AutoScalingCapacity)
            and count > capacity.max_capacity
        ):
            raise rules.SLICES_EXCEED_CAPACITY.error(
                construct_path(self),
                f"{name}={count} with distinctInstance, but {construct_path(capacity)} launches at most "
                f"{capacity.max_capacity} instances",
                max_capacity=capacity.max_capacity,
                capacity=construct_path(capacity),
                instances=count,
            )

    def _check_driver(self, capacity: AutoScalingCapacity) -> None:
        """NEURON088 when a Neuron container's image (by its stated Neuron SDK release, or the one in its tag) does
        not run on the driver of the capacity's pinned AMI release, NEURON147 when neither names the release there;
        NEURON127 when the capacity follows the recommended AMI and the image does not
        run on the newest driver, unless the container runs the driver start check (NEURON126 warned of that)."""
        task, path = self.task_definition, construct_path(self)
        family = capacity.neuron_instance_type.family if capacity.neuron_instance_type else None
        for container in task.neuron_containers:
            sdk = task.container_sdk(container)
            if capacity.ami is None:  # an AMI of the caller's choosing: its driver is unknown
                continue
            if sdk is None:
                if capacity.ami.version is not None:
                    start_check.warn_unknown_sdk(self, f"container {container.container_name!r}", capacity.ami.version)
                continue
            if capacity.ami.version is not None:
                problem = ami_driver_conflict(capacity.ami.version, sdk, family)
                if problem is not None:
                    raise rules.DRIVER_OUTSIDE_RUNTIME.error(path, f"{container.image_name}: {problem}")
                continue
            # Inf1 instances run driver 2.21 whatever the AMI's build (neuron_releases.INF1_AMI_DRIVER).
            problem = None if family == "inf1" else newest_driver_conflict(sdk)
            if problem is not None and container.container_name not in task.driver_checked:
                Validations.of(self).add_warning(
                    rules.IMAGE_BEHIND_NEWEST_DRIVER.warning_id,
                    rules.IMAGE_BEHIND_NEWEST_DRIVER.message(
                        path, f"container {container.container_name!r} on {construct_path(capacity)}: {problem}"
                    ),
                )

    def _check_placement(self) -> None:
        """NEURON131/020/017/023/012/088/127: Neuron supports this service's images on its capacity's types, it fits
        its capacity beside the services already there, and its images' Neuron runtime runs on the driver of the
        capacity's pinned AMI release (or, on capacity that follows the recommended AMI, on the newest driver)."""
        capacity, task, path = self.capacity, self.task_definition, construct_path(self)
        if isinstance(capacity, AutoScalingCapacity):
            families = [capacity.neuron_instance_type.family] if capacity.neuron_instance_type else []
        else:
            families = [instance.family for instance in capacity.instance_types]
        for container in task.neuron_containers:
            task.check_image_support(path, container, families)
        if isinstance(capacity, AutoScalingCapacity):
            self._check_driver(capacity)
            owner = capacity.sliced_by
            if owner is not None and not path.startswith(f"{construct_path(owner)}/"):
                raise rules.SLICED_CAPACITY_SHARED.error(
                    path,
                    f"{construct_path(capacity)} runs the sliced service {construct_path(owner)}",
                    sliced=construct_path(owner),
                    other=path,
                )
            self._check_one_per_instance("desired_count", self.desired_count)
        if isinstance(task, ManagedNeuronTaskDefinition) and isinstance(capacity, ManagedInstancesCapacity):
            largest = max(capacity.instance_types, key=lambda t: (t.cpu_units, t.memory_mib))
            inputs.check_task_size(path, largest, task.cpu, task.memory_mib)
        for other in capacity.services:
            assert isinstance(other, NeuronService)
            overlap = _shared_devices(task, other.task_definition)
            if overlap:
                raise rules.SHARED_DEVICE.error(
                    path,
                    f"{construct_path(other)} on {construct_path(capacity)} also holds {overlap}",
                    first=construct_path(other),
                    other=path,
                )


def capacity_for(
    path: str, cluster: NeuronCluster, task_definition: NeuronTaskDefinition, requested: CapacityChoice | None
) -> Capacity:
    """NEURON014/015/008: the one capacity of ``cluster`` that fits ``task_definition`` (or ``requested``)."""
    candidates: list[Capacity] = [*cluster.managed_instances_capacities, *cluster.auto_scaling_capacities]
    if requested is not None:
        chosen = [c for c in candidates if requested is c or c.capacity_provider is requested]
        if not chosen:
            raise rules.NO_MATCHING_CAPACITY.error(
                path, "capacity= is not a capacity of this NeuronCluster", wanted="a capacity added to the cluster"
            )
        candidates = chosen
    if task_definition.uses_managed_allocation:
        fitting: list[Capacity] = [c for c in candidates if isinstance(c, ManagedInstancesCapacity)]
        if not fitting and requested is not None:
            raise rules.MANAGED_ALLOCATION_CAPACITY.error(path, "capacity= is an Auto Scaling group")
        wanted = "Managed Instances capacity"
    else:
        assert isinstance(task_definition, ManualNeuronTaskDefinition)
        instance = task_definition.instance_type
        fitting = [
            c
            for c in candidates
            if (
                isinstance(c, AutoScalingCapacity)
                and c.neuron_instance_type == instance
                and task_definition.is_ec2_compatible
            )
            # aws-cdk-lib drops task-level placement constraints from Managed Instances compatible task
            # definitions, so on Managed Instances the capacity itself must launch only this type.
            or (
                isinstance(c, ManagedInstancesCapacity)
                and c.instance_types == (instance,)
                and task_definition.is_managed_instances_compatible
            )
        ]
        wanted = f"{instance.name} capacity (Auto Scaling, or Managed Instances admitting only {instance.name})"
    if not fitting:
        raise rules.NO_MATCHING_CAPACITY.error(
            path, f"the cluster has no {wanted} for {construct_path(task_definition)}", wanted=wanted
        )
    if len(fitting) > 1:
        raise rules.AMBIGUOUS_CAPACITY.error(
            path, f"{len(fitting)} capacities fit", names=", ".join(c.node.id for c in fitting)
        )
    found = fitting[0]
    if (
        isinstance(found, AutoScalingCapacity)
        and isinstance(task_definition, ManualNeuronTaskDefinition)
        and found.lnc is not None
        and found.lnc != task_definition.lnc
    ):
        raise rules.LOGICAL_CORES.error(
            path,
            f"{construct_path(task_definition)} runs at LNC={task_definition.lnc}, but {construct_path(found)} sets "
            f"LNC={found.lnc} on its instances; pass lnc={found.lnc}",
        )
    return found


def _shared_devices(first: NeuronTaskDefinition, second: NeuronTaskDefinition) -> str | None:
    """The devices two task definitions would both hold on one instance, in words; ``None`` if none."""
    if isinstance(first, ManualNeuronTaskDefinition) and isinstance(second, ManualNeuronTaskDefinition):
        # The template checks' decision (knowledge.cores.core_overlap): a shared chip is fine on disjoint NeuronCores.
        overlap = core_overlap(first.held, second.held)
        if overlap is None:
            return None
        if overlap.cores is not None:
            return f"NeuronCores {format_core_list(overlap.cores)} of {format_device_paths(overlap.devices)}"
        return format_device_paths(overlap.devices)
    manual = first if isinstance(first, ManualNeuronTaskDefinition) else second
    if isinstance(manual, ManualNeuronTaskDefinition) and (
        first.uses_managed_allocation or second.uses_managed_allocation
    ):
        return (
            f"{format_device_paths(manual.devices)} (mapped by hand beside NeuronDevice = ALL, which ECS hands every "
            "device)"
        )
    return None


def model_utilization_metric(cluster_name: str, model_name: str) -> cloudwatch.Metric:
    """A model's NeuronCore utilization: the 1-minute average of the ``ClusterName, Model`` series the monitoring
    publishes (:mod:`neuron_constructs.programs.metric_publisher`)."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name="NeuronCoreUtilization",
        dimensions_map={CLUSTER_DIMENSION: cluster_name, MODEL_DIMENSION: model_name},
        statistic="Average",
        period=Duration.minutes(1),
        unit=cloudwatch.Unit.PERCENT,
    )


@jsii.implements(IAspect)
class _WarnIfUnmonitored:
    """NEURON114 at synth, once every construct exists: the service scales on per-model utilization, and no
    NeuronMonitoring of this app covers its capacity."""

    def __init__(self, service: NeuronService) -> None:
        self.service = service
        self.warned = False

    def visit(self, node: IConstruct) -> None:
        if self.warned or node is not self.service or getattr(self.service.capacity, "monitored", False):
            return
        self.warned = True
        Validations.of(self.service).add_warning(
            rules.UNMONITORED_SCALING.warning_id,
            rules.UNMONITORED_SCALING.message(
                construct_path(self.service),
                f"scale_on_neuron_utilization on {construct_path(self.service.capacity)}, which no NeuronMonitoring "
                "of this app covers",
            ),
        )


@jsii.implements(IStableNumberProducer)
class _Produce:
    """A number known at synth: what ``value`` returns then."""

    def __init__(self, value: Callable[[], int]) -> None:
        self._value = value

    def produce(self) -> int:
        return self._value()
