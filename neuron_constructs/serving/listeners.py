"""Serving models behind a load balancer: targets it can reach, start-up allowances as long as Neuron needs.

A Neuron model server answers its health check only after it has downloaded the model, compiled it
for Neuron (or loaded compiled artifacts) and loaded it onto the chips. The defaults here come from
those figures:

* :data:`MODEL_START_GRACE_PERIOD`, 30 minutes: the ECS service ignores load balancer and container
  health checks this long after a task starts. AWS's vLLM Deep Learning Container "typically takes 5-10
  minutes" to start (aws-neuron-sdk, quickstart-deploy-dlc); "a small-ish model of 15GB might take
  around 15min to compile" (NxD Inference vLLM user guide); a 70B model takes 15-20 minutes to compile on
  Trn2 and optimum-neuron's SageMaker notebooks give 70B on inf2.48xlarge an hour
  (``health_check_timeout=3600``, SageMaker's maximum). ECS's own default is 0 and aws-cdk-lib's 60 s.
  Size it as download + compile + load of the first start; with a compile cache the later starts are
  shorter, but the first one must fit.
* target group health checks (:func:`target_group_health_check`): ``/health`` (what vLLM and the
  ecs-blueprints ``vllm-inferentia`` blueprint check), every 30 s, 10 s to answer (a server busy
  generating answers slowly), healthy after 2 answers, unhealthy after 3 misses (90 s).
* :data:`DEREGISTRATION_DELAY`, 5 minutes (the Elastic Load Balancing default, kept): a task being
  replaced finishes the requests it has, e.g. a 4,096-token answer at 20 tokens/s (205 s).
* :data:`IDLE_TIMEOUT`, 5 minutes on the load balancers :class:`NeuronLoadBalancer` makes (default 60 s):
  a non-streaming answer sends nothing until it is complete, and the load balancer would close the
  connection after 60 s of silence.
* :func:`model_server_health_check`: a container health check whose ``startPeriod`` is 300 s, the most
  ECS accepts; the service's grace period covers the rest of the start.

Reaching the tasks (``attach``): exactly the security group rules of
:mod:`~neuron_constructs.serving.target_access`, on listener rules claimed one per priority
(:mod:`~neuron_constructs.serving.listener_rules`); a blue/green, canary or linear rollout adds its alternate target
group and test traffic (:mod:`~neuron_constructs.serving.rollout_traffic`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, Names, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs.base.arguments import is_token, seconds_of, to_seconds
from neuron_constructs.base.environments import IMPORT_LISTENER, check_same_app, check_same_vpc
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.health_checks import CONTAINER_START_PERIOD as CONTAINER_START_PERIOD
from neuron_constructs.compute.health_checks import model_server_health_check as model_server_health_check
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.vllm_server import HEALTH_PATH
from neuron_constructs.serving.ecs_service import network_mode_of
from neuron_constructs.serving.listener_rules import check_default_action_stack, claim_rule
from neuron_constructs.serving.rollout_resources import load_balancer_role
from neuron_constructs.serving.rollout_traffic import TEST_HEADER as TEST_HEADER
from neuron_constructs.serving.rollout_traffic import alternate_target, check_native_rollout
from neuron_constructs.serving.target_access import DYNAMIC_HOST_PORTS as DYNAMIC_HOST_PORTS
from neuron_constructs.serving.target_access import listener_in, open_path_to_tasks

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = [
    "DEREGISTRATION_DELAY",
    "HEALTH_CHECK_PATH",
    "IDLE_TIMEOUT",
    "MAXIMUM_GRACE_PERIOD_S",
    "MODEL_START_GRACE_PERIOD",
    "SCALE_IN_COOLDOWN",
    "SCALE_OUT_COOLDOWN",
    "Listener",
    "ListenerTarget",
    "TargetGroup",
    "model_server_health_check",
    "target_group_health_check",
]

MODEL_START_GRACE_PERIOD = Duration.minutes(30)
"""How long ECS ignores failing health checks of a new task: download, Neuron compile and load."""
MAXIMUM_GRACE_PERIOD_S = 2_147_483_647
"""ECS: healthCheckGracePeriodSeconds is at most 2,147,483,647."""
SHORTEST_GRACE_PERIOD = Duration.minutes(10)
"""Below this a warning (NEURON111): AWS's vLLM container alone takes 5-10 minutes to start."""
HEALTH_CHECK_PATH = HEALTH_PATH
"""What the target groups check: vLLM's health endpoint."""
DEREGISTRATION_DELAY = Duration.minutes(5)
"""How long a task being replaced keeps the requests it has (the Elastic Load Balancing default)."""
IDLE_TIMEOUT = Duration.minutes(5)
"""The idle timeout of the load balancers the library makes (Elastic Load Balancing's default is 60 s)."""
SCALE_OUT_COOLDOWN = Duration.minutes(1)
SCALE_IN_COOLDOWN = Duration.minutes(30)
"""Request scaling: out after a minute, in only after the start-up allowance (a new task takes minutes to serve)."""

Listener = elbv2.IApplicationListener | elbv2.NetworkListener
"""What :meth:`~.ListenerTarget.attach_to_listener` takes: an Application Load Balancer listener (made here or
imported), or a Network Load Balancer listener made in this app (its load balancer's security groups are
needed)."""
TargetGroup = elbv2.ApplicationTargetGroup | elbv2.NetworkTargetGroup


class ListenerTarget:
    """What serves behind a load balancer listener: a :class:`NeuronService`, or every copy of a fleet model as one.

    Gives its owner :meth:`attach_to_listener` and a ``target_groups`` list; the owner names the services whose
    tasks are registered (``_listener_services``).
    """

    target_groups: list[TargetGroup]
    """The target groups :meth:`attach_to_listener` made, in order."""

    def _listener_services(self) -> Sequence[NeuronService]:
        """The services whose tasks one target group holds."""
        raise NotImplementedError

    def attach_to_listener(
        self,
        listener: Listener,
        *,
        health_check_path: str = HEALTH_CHECK_PATH,
        conditions: Sequence[elbv2.ListenerCondition] | None = None,
        priority: int | None = None,
        container_name: str | None = None,
        container_port: int | None = None,
        health_check: elbv2.HealthCheck | None = None,
        deregistration_delay: Duration = DEREGISTRATION_DELAY,
        slow_start: Duration | None = None,
        test_priority: int | None = None,
    ) -> TargetGroup:
        """Register the tasks in one target group on ``listener`` and open exactly the path to them; the group.

        ``listener``: an Application Load Balancer listener, or a Network Load Balancer listener whose load
        balancer was made here with security groups (NEURON043). The target is the Neuron container's one port
        mapping (or ``container_name`` / ``container_port``; NEURON041). ``conditions`` with ``priority`` make a
        listener rule; neither makes the target group the listener's default action (NEURON042). A fleet model
        or sliced service registers every copy's tasks in the one group.

        Security groups: bridge tasks are reached on the capacity's group through the ECS dynamic host port range
        (32768-65535) or their fixed host port, host tasks on the container port, awsvpc tasks on their own group
        on the container port; the load balancer's egress is opened to the same and nothing else. The health
        check is :func:`target_group_health_check` on ``health_check_path`` unless ``health_check`` is given;
        ``deregistration_delay`` defaults to 5 minutes so answers in flight finish. A grace period under 10
        minutes gets warning NEURON111.

        A service rolled out blue/green, canary or linear (``rollout=``) gets a second, alternate target group of
        the same settings and ECS's ``advancedConfiguration``: the production listener rule (``conditions`` and
        ``priority``: ECS moves the weights of a rule, never of the listener's default action, NEURON073; on a
        Network Load Balancer the listener itself), and the least-privilege role ECS moves them with. With a
        smoke test, a test rule that ECS points at green and the smoke test's function sends its request through:
        on the load balancer's test listener (``NeuronLoadBalancer(test_port=)``) with the same conditions at
        ``test_priority`` (default ``priority``), else on this HTTP listener with the same conditions and the header
        :data:`TEST_HEADER` at ``test_priority`` (default ``priority - 1``, before the production rule); an HTTPS
        listener without a test listener is refused (NEURON079). One target group pair per rollout (NEURON073).
        """
        assert isinstance(self, Construct)
        services = self._listener_services()
        target_group = attach(
            self,
            f"TargetGroup{len(self.target_groups) + 1}" if self.target_groups else "TargetGroup",
            services,
            listener,
            container_name=container_name,
            container_port=container_port,
            health_check_path=health_check_path,
            health_check=health_check,
            conditions=conditions,
            priority=priority,
            deregistration_delay=deregistration_delay,
            slow_start=slow_start,
            test_priority=test_priority,
        )
        self.target_groups.append(target_group)
        for service in services:
            if service.target_groups is not self.target_groups:  # each copy of a fleet model lists it too
                service.target_groups.append(target_group)
        self._attached(target_group, listener)
        return target_group

    def _attached(self, target_group: TargetGroup, listener: Listener) -> None:
        """After :meth:`attach_to_listener` made ``target_group`` on ``listener``; nothing by default."""


def target_group_health_check(
    path: str = HEALTH_CHECK_PATH, *, protocol: elbv2.Protocol = elbv2.Protocol.HTTP
) -> elbv2.HealthCheck:
    """Health checks tuned for a model server: ``path`` every 30 s, 10 s to answer, healthy after 2
    answers (HTTP 200), unhealthy after 3 misses. Elastic Load Balancing accepts intervals of 5-300 s,
    timeouts of 2-120 s and thresholds of 2-10."""
    return elbv2.HealthCheck(
        path=path,
        protocol=protocol,
        port="traffic-port",  # the port each task was registered on: with dynamic host ports, that task's own
        interval=Duration.seconds(30),
        timeout=Duration.seconds(10),
        healthy_threshold_count=2,
        unhealthy_threshold_count=3,
        healthy_http_codes="200",
    )


def attach(
    owner: Construct,
    id: str,
    services: Sequence[NeuronService],
    listener: Listener,
    *,
    container_name: str | None,
    container_port: int | None,
    health_check_path: str,
    health_check: elbv2.HealthCheck | None,
    conditions: Sequence[elbv2.ListenerCondition] | None,
    priority: int | None,
    deregistration_delay: Duration,
    slow_start: Duration | None,
    test_priority: int | None = None,
) -> TargetGroup:
    """One target group under ``owner`` holding every task of ``services``, registered with ``listener``,
    and the security group rules that let the load balancer reach them
    (:mod:`~neuron_constructs.serving.target_access`); for a native rollout, the alternate target group and ECS's
    advanced configuration too."""
    path = f"{construct_path(owner)}/{id}"
    check_same_app(
        path,
        owner,
        listener,
        what=f"the tasks of {construct_path(owner)}",
        other_name=construct_path(listener),
        how=IMPORT_LISTENER,
    )
    first = services[0]
    rollout = first.rollout if owner is first else None
    native = rollout is not None and rollout.native
    if native:
        check_native_rollout(path, first, listener, conditions, priority, test_priority)
    container, port, host_port = _target_port(path, first, container_name, container_port)
    network_mode = network_mode_of(first.task_definition.task_definition)
    awsvpc = network_mode == ecs.NetworkMode.AWS_VPC
    target_type = elbv2.TargetType.IP if awsvpc else elbv2.TargetType.INSTANCE
    vpc = first.cluster.vpc
    _check_target_group_settings(path, health_check_path, health_check, deregistration_delay)
    balancer_vpc = _load_balancer_vpc(listener)
    if balancer_vpc is not None:
        check_same_vpc(
            path,
            vpc,
            balancer_vpc,
            what=f"the tasks of {construct_path(owner)}",
            other_name=f"the load balancer of {construct_path(listener)}",
            fix=f"a load balancer in the VPC of {construct_path(first.cluster)} (NeuronLoadBalancer(cluster=...))",
        )
    for service in services:
        _warn_about_grace_period(service)
    target_group: TargetGroup
    if priority is not None and not 1 <= priority <= 50_000:
        raise rules.OUT_OF_RANGE.error(path, f"priority={priority}", name="priority", minimum=1, maximum=50_000)
    if isinstance(listener, elbv2.NetworkListener):
        if conditions or priority is not None or slow_start is not None:
            raise rules.LISTENER_RULE.error(
                path,
                "conditions, priority or slow_start with a Network Load Balancer listener, which has no rules and "
                "no slow start",
            )
        load_balancer = listener.load_balancer
        if not isinstance(load_balancer, elbv2.NetworkLoadBalancer) or not load_balancer.connections.security_groups:
            raise rules.NETWORK_LOAD_BALANCER_GROUP.error(
                path, f"the load balancer of {construct_path(listener)} has no security group this app made"
            )
        check_default_action_stack(path, listener, owner)
        load_balancer_connections = load_balancer.connections
        claim_rule(path, listener, owner, None)
        network_settings: dict[str, Any] = dict(
            vpc=vpc,
            port=port,
            protocol=elbv2.Protocol.TCP,
            target_type=target_type,
            health_check=health_check or target_group_health_check(health_check_path),
            deregistration_delay=deregistration_delay,
        )
        target_group = elbv2.NetworkTargetGroup(owner, id, **network_settings)
        listener.add_target_groups(f"{Names.unique_id(owner)}{id}", target_group)
        alternate: ecs.IAlternateTarget | None = None
        if native:
            green = elbv2.NetworkTargetGroup(owner, f"{id}Alternate", **network_settings)
            alternate = ecs.AlternateTarget(
                f"{id}AlternateTarget",
                alternate_target_group=green,
                production_listener=ecs.ListenerRuleConfiguration.network_listener(listener),
                role=load_balancer_role(
                    owner,
                    f"{id}LoadBalancerRole",
                    listener_rules=[],
                    target_groups=[target_group, green],
                    network_listener=listener,
                ),
            )
            first.alternate_target_groups.append(green)
    else:
        if not hasattr(listener, "connections"):  # a Network Load Balancer listener imported by ARN
            raise rules.NETWORK_LOAD_BALANCER_GROUP.error(
                path, f"{construct_path(listener)} is imported: its load balancer has no security group this app made"
            )
        if bool(conditions) != (priority is not None):
            given = "conditions without priority" if conditions else "priority without conditions"
            raise rules.LISTENER_RULE.error(path, given)
        if not conditions and not isinstance(listener, elbv2.ApplicationListener):
            raise rules.LISTENER_RULE.error(
                path, f"{construct_path(listener)} is imported, and an imported listener keeps its default action"
            )
        if not conditions:
            check_default_action_stack(path, listener, owner)
        claim_rule(path, listener, owner, priority)
        # awsvpc tasks have security groups of the model's own: the rules to them are the model's, in its stack.
        via = listener_in(owner, listener) if awsvpc and Stack.of(listener) is not Stack.of(owner) else listener
        load_balancer_connections = via.connections
        settings: dict[str, Any] = dict(
            vpc=vpc,
            port=port,
            protocol=elbv2.ApplicationProtocol.HTTP,
            target_type=target_type,
            health_check=health_check or target_group_health_check(health_check_path),
            deregistration_delay=deregistration_delay,
            slow_start=slow_start,
        )
        target_group = elbv2.ApplicationTargetGroup(owner, id, **settings)
        # The listener rule is the model's resource, in the model's stack, whichever stack holds the listener. A
        # security group rule between two groups of the platform (its load balancer's and a capacity's, for bridge
        # and host networking) is made once, in the platform's stack: EC2 refuses the same rule twice, so two model
        # stacks on one capacity could not each own it, and it refers to nothing of a model.
        alternate = None
        if conditions and priority is not None:
            production = elbv2.ApplicationListenerRule(
                owner,
                f"{id}Rule",
                listener=via,
                priority=priority,
                conditions=list(conditions),
                target_groups=[target_group],
            )
            if native:
                assert rollout is not None
                alternate = alternate_target(
                    owner,
                    id,
                    first,
                    rollout.smoke_test,
                    listener,
                    via,
                    production,
                    target_group,
                    conditions=conditions,
                    priority=priority,
                    test_priority=test_priority,
                    settings=settings,
                )
        else:
            listener.add_target_groups(f"{Names.unique_id(owner)}{id}", target_groups=[target_group])
    for service in services:
        target_group.add_target(
            service.service.load_balancer_target(
                container_name=container, container_port=port, alternate_target=alternate
            )
        )
        open_path_to_tasks(load_balancer_connections, service, port, host_port, network_mode)
    if native:
        first.rollout_attached([target_group, *first.alternate_target_groups], load_balancer_full_name(listener))
    return target_group


def _check_target_group_settings(
    path: str, health_check_path: str, health_check: elbv2.HealthCheck | None, deregistration_delay: Duration
) -> None:
    """NEURON060 for a health check path without its leading ``/``; NEURON027 for a deregistration delay outside the
    0 to 3,600 s Elastic Load Balancing accepts."""
    given = health_check.path if health_check is not None and health_check.path is not None else health_check_path
    if not is_token(given) and not given.startswith("/"):
        name = "health_check_path" if health_check is None or health_check.path is None else "health_check.path"
        raise rules.HEALTH_CHECK_PATH.error(path, f"{name}={given!r}", path=repr("/" + given))
    delay = seconds_of(deregistration_delay)
    if delay is not None and not 0 <= delay <= 3_600:
        raise rules.OUT_OF_RANGE.error(
            path,
            f"deregistration_delay={deregistration_delay.to_human_string()}",
            name="deregistration_delay",
            minimum="0 s",
            maximum="3,600 s (1 hour)",
        )


def load_balancer_full_name(listener: Listener) -> str | None:
    """The full name of an Application Load Balancer ``listener``'s load balancer (its metrics' ``LoadBalancer``
    dimension) when this app made it; ``None`` otherwise and for Network Load Balancers."""
    if not isinstance(listener, elbv2.ApplicationListener):
        return None
    return getattr(listener.load_balancer, "load_balancer_full_name", None)


def _load_balancer_vpc(listener: Listener) -> ec2.IVpc | None:
    """The VPC of ``listener``'s load balancer, when the app knows it (not for listeners imported by ARN)."""
    try:
        return listener.load_balancer.vpc  # type: ignore[union-attr]
    except (AttributeError, RuntimeError):
        return None


def request_target_group(path: str, target_groups: Sequence[TargetGroup], what: str) -> elbv2.ApplicationTargetGroup:
    """NEURON044: the one Application Load Balancer target group request scaling tracks."""
    candidates = [t for t in target_groups if isinstance(t, elbv2.ApplicationTargetGroup)]
    if len(candidates) != 1:
        raise rules.REQUEST_SCALING_TARGET.error(
            path, f"{what} in {len(candidates)} Application Load Balancer target groups"
        )
    return candidates[0]


def _target_port(
    path: str, service: NeuronService, container_name: str | None, container_port: int | None
) -> tuple[str, int, int | None]:
    """NEURON041: the container, container port and host port the load balancer sends to."""
    task = service.task_definition
    if container_name is None:
        if not task.neuron_containers:
            raise rules.NO_TARGET_PORT.error(
                path, f"{construct_path(task)} has no Neuron container yet", container="the Neuron container"
            )
        container = task.neuron_containers[0]
    else:
        found = task.task_definition.find_container(container_name)
        if found is None:
            raise rules.NO_TARGET_PORT.error(
                path, f"{construct_path(task)} has no container {container_name!r}", container=container_name
            )
        container = found
    # A load balancer sends TCP to one port: UDP mappings and port ranges cannot be targets.
    mappings = [
        (int(m.container_port), m.host_port)
        for m in container.port_mappings
        if m.container_port is not None and m.protocol in (None, ecs.Protocol.TCP)
    ]
    ports = [p for p, _ in mappings]
    if container_port is None:
        if len(mappings) != 1:
            problem = "no port mapping" if not mappings else f"{len(mappings)} port mappings ({ports})"
            raise rules.NO_TARGET_PORT.error(
                path, f"container {container.container_name!r} has {problem}", container=container.container_name
            )
        return container.container_name, mappings[0][0], _host(mappings[0][1])
    for port, host in mappings:
        if port == container_port:
            return container.container_name, port, _host(host)
    raise rules.NO_TARGET_PORT.error(
        path,
        f"container {container.container_name!r} maps no container_port={container_port} (it maps {ports or 'none'})",
        container=container.container_name,
    )


def _host(host_port: float | None) -> int | None:
    return int(host_port) if host_port else None


def _warn_about_grace_period(service: NeuronService) -> None:
    """NEURON111: a load-balanced Neuron service that gives a new task less than 10 minutes."""
    grace = service.health_check_grace_period
    if to_seconds(grace) < to_seconds(SHORTEST_GRACE_PERIOD):
        Validations.of(service).add_warning(
            rules.SHORT_GRACE_PERIOD.warning_id,
            rules.SHORT_GRACE_PERIOD.message(
                construct_path(service), f"health_check_grace_period is {grace.to_human_string()}"
            ),
        )
