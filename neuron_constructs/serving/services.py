"""``NeuronService``: an ECS service placed on the capacity its task definition fits.

The constructor reads as its steps, each concern in a module of its own:

* :mod:`~neuron_constructs.serving.capacity_choice`: the capacity it runs on (managed allocation -> the cluster's
  Managed Instances capacity provider; manual mapping -> the Auto Scaling capacity of the task's instance type, or a
  Managed Instances capacity that admits only that type);
* :mod:`~neuron_constructs.serving.placement`: the checks of its placement on that capacity;
* :mod:`~neuron_constructs.serving.deployment`: the minimum healthy percent and health check grace period it
  deploys with;
* :mod:`~neuron_constructs.serving.ecs_service`: the ECS service itself, its networking and placement constraints;
* :mod:`~neuron_constructs.serving.service_rollout`: what its rollout adds;
* :mod:`~neuron_constructs.serving.service_scaling`: the checks and the utilization policy of its scaling methods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from aws_cdk import Duration, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base.arguments import (
    COUNT,
    MAXIMUM_PERCENT,
    MINIMUM_HEALTHY_PERCENT,
    Range,
    checked,
    to_seconds,
)
from neuron_constructs.base.environments import check_same_environment
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.options import ServiceOptions
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.monitoring.engine_metrics import EngineMetrics, measure_start
from neuron_constructs.serving.capacity_choice import Capacity as Capacity
from neuron_constructs.serving.capacity_choice import CapacityChoice as CapacityChoice
from neuron_constructs.serving.capacity_choice import capacity_for as capacity_for
from neuron_constructs.serving.deployment import (
    health_check_grace_period,
    largest_minimum_healthy_percent,
    minimum_healthy_percent,
)
from neuron_constructs.serving.ecs_service import check_network_options, make_ecs_service
from neuron_constructs.serving.listeners import (
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    Listener,
    ListenerTarget,
    TargetGroup,
    request_target_group,
)
from neuron_constructs.serving.placement import check_placement
from neuron_constructs.serving.precompile import Precompile
from neuron_constructs.serving.precompile_resources import PrecompileJob
from neuron_constructs.serving.rollout import Rollout
from neuron_constructs.serving.rollout_alarms import load_balancer_alarms, watch_with_the_service_s_own
from neuron_constructs.serving.rollout_checks import warn_without_neuron_alarm as warn_without_neuron_alarm
from neuron_constructs.serving.scale_to_zero import IDLE, ScaleToZero
from neuron_constructs.serving.service_precompile import precompile_service, warn_cache_hit_only
from neuron_constructs.serving.service_rollout import check_rollout_room, set_up_rollout
from neuron_constructs.serving.service_scale_to_zero import ZeroNeedsAWake, add_scale_to_zero
from neuron_constructs.serving.service_scaling import (
    TIME_TO_FIRST_TOKEN,
    WAITING_REQUESTS,
    check_scaling_counts,
    time_to_first_token_target,
    track_engine_metric,
    track_neuron_utilization,
)

__all__ = ["NeuronService", "warn_without_neuron_alarm"]


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
    precompile
        Compile the model's graphs on CPU before a new revision's tasks start
        (:class:`~neuron_constructs.serving.precompile.Precompile`): an AWS Batch job running the Neuron container's
        own image, command and environment with vLLM Neuron's CPU compile variables, writing to its compile cache; a
        ``PRE_SCALE_UP`` lifecycle hook on a native rollout, a custom resource the service depends on on a rolling
        one (:mod:`~neuron_constructs.serving.service_precompile`); the copies then serve cache-hit-only. Default
        none. A Neuron container that runs cache-hit-only without it warns (NEURON162).
    engine_metrics
        Measure each copy's start where it happens (:mod:`~neuron_constructs.monitoring.engine_metrics`): a sidecar
        in the model's task definition reads the engine's own Prometheus ``/metrics`` (start, per-bucket compile and
        load times) and the time from the task's start to its first healthy answer into CloudWatch under the model's
        name, and, when the model should start warm (it has a compile cache), the alarm ``compile_alarm`` fires when
        a copy compiled. Default on where the image's engine publishes those metrics (vLLM Neuron,
        :mod:`~neuron_constructs.knowledge.engine_metrics`) and the model's container maps the port it serves them
        on; ``True`` or an
        :class:`~neuron_constructs.monitoring.engine_metrics.EngineMetrics` (port, period, threshold) asks for it
        (refused for an engine that publishes none, NEURON170, or a port the model does not map, NEURON171);
        ``False`` turns it off.
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
    precompile_job
        The :class:`~neuron_constructs.serving.precompile_resources.PrecompileJob` of ``precompile=``, or ``None``.
    engine_metrics_container, compile_alarm
        The engine-metrics sidecar and the compile-at-start alarm (``None`` where there is none).
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
        precompile: Precompile | None = None,
        engine_metrics: bool | EngineMetrics | None = None,
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
        self.engine_metrics_container, self.compile_alarm = measure_start(
            self, engine_metrics, task_definition=task_definition, model_name=self.model_name, cluster=cluster
        )
        self.desired_count = desired_count
        self.rollout: Rollout = rollout or Rollout.rolling()
        self.alternate_target_groups: list[TargetGroup] = []
        check_placement(self)
        check_rollout_room(self, "desired_count", desired_count)
        self._min_healthy_percent_passed = min_healthy_percent is not None
        min_healthy_percent = minimum_healthy_percent(self, min_healthy_percent, max_healthy_percent)
        self.min_healthy_percent, self.max_healthy_percent = min_healthy_percent, max_healthy_percent
        self._in_waves = bool(getattr(scope, "deploys_in_waves", False))
        self._warned_every_replica_stops = False
        self.health_check_grace_period: Duration = health_check_grace_period(self, service_options)
        self.target_groups: list[TargetGroup] = []
        self._scaling: ecs.ScalableTaskCount | None = None
        self._scaling_bounds: tuple[int, int] | None = None
        self._scaling_methods: list[str] = []
        self.listeners: list[Listener] = []
        """The listeners :meth:`attach_to_listener` attached the service to, in order."""
        self.scaled_to_zero: ScaleToZero | None = None
        """The idle and wake alarms :meth:`scale_to_zero` made, once it was called."""
        self._warn_if_every_replica_stops()
        awsvpc = check_network_options(self, vpc_subnets, security_groups)
        self.capacity.services.append(self)
        self.service: ecs.BaseService = make_ecs_service(
            self,
            awsvpc=awsvpc,
            service_name=service_name,
            vpc_subnets=vpc_subnets,
            security_groups=security_groups,
            service_options=service_options,
        )
        self.deployment_alarms: list[cloudwatch.Alarm] = []
        set_up_rollout(self, service_options)
        self.precompile_job: PrecompileJob | None = None
        if precompile is not None:
            self.precompile_job = precompile_service(self, precompile)
        else:
            warn_cache_hit_only(self)

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

    def _attached(self, target_group: TargetGroup, listener: Listener) -> None:
        self.listeners.append(listener)

    @property
    def scales_out_only(self) -> bool:
        """The service's scalable target may reach zero copies (``min_count=0``): its target-tracking policies then
        scale out only, and :meth:`scale_to_zero`'s idle rule alone scales it in (a model's waiting requests are 0
        whenever its batch has room, and target tracking would take a busy copy away on them)."""
        return self._scaling_bounds is not None and self._scaling_bounds[0] == 0

    def scale_to_zero(
        self, *, idle: Duration = IDLE, wake_on_request: bool = True, on_production_listener: bool = False
    ) -> ScaleToZero:
        """Scale the model in to zero copies after ``idle`` (default 30 minutes, 1 to 1,440 whole minutes) in which its
        target groups held a healthy copy and counted no request (a copy still starting is not idle), and back to one
        copy on the first request that finds none
        (``wake_on_request``, default true; ``False`` warns, NEURON183): :mod:`~neuron_constructs.serving.scale_to_zero`
        says how, with its sources. That request, and every one until a copy is healthy, gets the load balancer's
        503: the alarm's minute, an instance, the copy's start.

        Call it after a scaling method made the service's scalable target with ``min_count=0`` (with which its
        target-tracking policies scale out only) and after :meth:`attach_to_listener`. Refused at the call
        (NEURON182): no such target; no Application Load Balancer target group; a rollout with a smoke test (the test
        needs a running copy); a load balancer this app did not make (its 503s are not known here); a cluster without
        Container Insights; a production listener - an internet-facing load balancer's, or one on HTTPS - unless
        ``on_production_listener=True`` says its users may wait. A scalable target with ``min_count=0`` and no call
        is refused at synth: nothing would wake the model. Returns the alarms and policies it made."""
        return add_scale_to_zero(self, idle, wake_on_request, on_production_listener)

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
            disable_scale_in=self.scales_out_only or None,
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

    @checked(ranges={"per_copy": Range(1, 10_000), "min_count": COUNT, "max_count": Range(1)})
    def scale_on_waiting_requests(
        self,
        *,
        per_copy: int,
        max_count: int,
        min_count: int | None = None,
        scale_out_cooldown: Duration | None = None,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> ecs.ScalableTaskCount:
        """Track ``per_copy`` requests waiting for a slot per copy of this model (vLLM's ``vllm:num_requests_waiting``
        as the model's engine-metrics sidecar writes it, ``WaitingRequests``), between ``min_count`` (default the
        desired count) and ``max_count`` tasks: what an LLM's users wait on, where requests per target say little
        of requests that take seconds to minutes each.

        ``scale_out_cooldown``: default the model's stated time to serve (``Startup`` on its Neuron container: every
        step a new copy takes, the cache fetch in place of the compile when the model is precompiled), at least a
        minute: a copy added is not serving before then, and the queue it is meant to drain is still there, so a
        shorter cooldown adds copies for the same queue. ``scale_in_cooldown``: default 30 minutes, as for requests.
        Refused without the sidecar (NEURON178); the bounds and deployment-room rules are those of
        :meth:`scale_on_requests`, with which it shares the scalable target. Returns the scalable target."""
        return self._scale_on_engine_metric(
            "scale_on_waiting_requests", WAITING_REQUESTS, per_copy, min_count, max_count, scale_out_cooldown,
            scale_in_cooldown,
        )  # fmt: skip

    @checked(ranges={"min_count": COUNT, "max_count": Range(1)})
    def scale_on_time_to_first_token(
        self,
        *,
        target: Duration,
        max_count: int,
        min_count: int | None = None,
        scale_out_cooldown: Duration | None = None,
        scale_in_cooldown: Duration = SCALE_IN_COOLDOWN,
    ) -> ecs.ScalableTaskCount:
        """Track ``target`` mean time to the first token of this model (vLLM's ``vllm:time_to_first_token_seconds``,
        each copy's mean between two scrapes as its engine-metrics sidecar writes it, ``TimeToFirstToken``; a
        fraction of a second taken, up to an hour), between ``min_count`` and ``max_count`` tasks, with the cooldowns,
        refusal (NEURON178) and shared scalable target of :meth:`scale_on_waiting_requests`. Returns the target."""
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
    ) -> ecs.ScalableTaskCount:
        """The service's scalable target tracking the model's engine ``metric`` at ``target`` (NEURON178 first)."""
        self.check_engine_metric_written(metric)
        scaling = self._scalable_target(method, min_count, max_count)
        self.track_engine_metric(scaling, metric, target, scale_out_cooldown, scale_in_cooldown)
        return scaling

    def check_engine_metric_written(self, metric: str) -> None:
        """NEURON178: refused when no engine-metrics sidecar of this model writes ``metric``."""
        if self.engine_metrics_container is None:
            raise rules.SCALING_WITHOUT_ENGINE_METRIC.error(
                construct_path(self), f"the model has no engine-metrics sidecar, so no copy writes {metric}"
            )

    def track_engine_metric(
        self,
        scaling: ecs.ScalableTaskCount,
        metric: str,
        target: float,
        scale_out_cooldown: Duration | None,
        scale_in_cooldown: Duration,
    ) -> None:
        """Add the target-tracking policy on the model's engine ``metric`` (an average over its copies) to
        ``scaling``, the scale-out cooldown by default the model's stated time to serve."""
        out = scale_out_cooldown if scale_out_cooldown is not None else self._time_to_serve_cooldown()
        track_engine_metric(self, scaling, metric, target, out, scale_in_cooldown)

    def _time_to_serve_cooldown(self) -> Duration:
        """The model's stated time to serve, at least :data:`SCALE_OUT_COOLDOWN`."""
        task = self.task_definition
        skipped = "compile" if task.precompiled else "cacheFetch"
        stated = [sum(s for step, s in steps.items() if step != skipped) for steps in task.startup_seconds.values()]
        seconds = max([to_seconds(SCALE_OUT_COOLDOWN), *stated])
        return Duration.seconds(math.ceil(seconds))

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
        track_neuron_utilization(self, scaling, target_percent, scale_out_cooldown, scale_in_cooldown)

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
        check_rollout_room(self, "max_count", max_count)
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
        check_scaling_counts(self, minimum, max_count, minimum_passed=self._min_healthy_percent_passed)
        self._scaling = self.service.auto_scale_task_count(min_capacity=minimum, max_capacity=max_count)
        if minimum == 0:
            self.node.add_validation(ZeroNeedsAWake(self, method))
        self._scaling_bounds = (minimum, max_count)
        self._scaling_methods = [method]
        return self._scaling

    def largest_minimum_healthy_percent(self, tasks: int, maximum: int) -> int:
        """The largest minimum healthy percent with which a deployment of ``tasks`` tasks can stop one: below 100
        when they fill every instance the capacity launches (NEURON032) or ``maximum`` starts none beyond them
        (NEURON040)."""
        return largest_minimum_healthy_percent(self, tasks, maximum)

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
