"""The test traffic of a blue/green, canary or linear rollout behind a load balancer listener.

What :meth:`~neuron_constructs.serving.listeners.ListenerTarget.attach_to_listener` adds for a native rollout: the
checks of what the rollout needs of its listener (NEURON073, NEURON079), and the alternate target group with its test
rule, smoke test and ECS's advanced configuration. A smoke test's request reaches green through the load balancer's
test listener (:func:`register_test_listener`) or, on a plain-HTTP listener, a rule on the header :data:`TEST_HEADER`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs.base.l1_overrides import drop_dependencies_on_referenced_rules
from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules
from neuron_constructs.serving.listener_rules import claim_rule
from neuron_constructs.serving.rollout import SmokeTest
from neuron_constructs.serving.rollout_resources import load_balancer_role, smoke_test_hook
from neuron_constructs.serving.target_access import listener_in

if TYPE_CHECKING:
    from neuron_constructs.serving.listeners import Listener, TargetGroup
    from neuron_constructs.serving.services import NeuronService

__all__ = ["TEST_HEADER", "check_native_rollout", "register_test_listener"]

TEST_HEADER = "X-Neuron-Rollout"
"""The header of the test listener rule (value ``test``): a request carrying it reaches the green tasks while a
rollout tests them, the blue ones otherwise."""


_TEST_LISTENERS: weakref.WeakKeyDictionary[object, elbv2.ApplicationListener] = weakref.WeakKeyDictionary()
"""Production listener -> the plain-HTTP listener of its load balancer that carries rollout test traffic."""


def register_test_listener(listener: elbv2.IApplicationListener, test_listener: elbv2.ApplicationListener) -> None:
    """Send the smoke tests of rollouts attached to ``listener`` through ``test_listener``."""
    _TEST_LISTENERS[listener] = test_listener


def check_native_rollout(
    path: str,
    service: NeuronService,
    listener: Listener,
    conditions: Sequence[elbv2.ListenerCondition] | None,
    priority: int | None,
    test_priority: int | None,
) -> None:
    """NEURON073 and NEURON079: what a blue/green, canary or linear rollout needs of its listener."""
    rollout = service.rollout
    if service.alternate_target_groups:
        raise rules.ROLLOUT_TRAFFIC.error(
            path,
            f"{construct_path(service)} already has the target group pair of its {rollout.strategy} rollout",
            fix="attach the service once: ECS shifts one production listener rule per rollout",
        )
    network = isinstance(listener, elbv2.NetworkListener)
    if not network and not (conditions and priority is not None):
        raise rules.ROLLOUT_TRAFFIC.error(
            path,
            f"a {rollout.strategy} rollout attached as the default action of {construct_path(listener)}",
            fix="pass conditions=[elbv2.ListenerCondition.path_patterns([...])] and priority=: ECS shifts the weights "
            "of a listener rule, never of the listener's default action",
        )
    if not network and rollout.alarms is not None and not isinstance(listener, elbv2.ApplicationListener):
        raise rules.ROLLOUT_TRAFFIC.error(
            path,
            f"a {rollout.strategy} rollout with alarms through the imported listener {construct_path(listener)}",
            fix="use the listener its load balancer was made with in this app (the alarms need the load balancer's "
            "name), or pass alarms=False",
        )
    if test_priority is not None and rollout.smoke_test is None:
        raise rules.ROLLOUT_TRAFFIC.error(
            path,
            f"test_priority={test_priority} without a smoke test",
            fix="drop test_priority, or give the rollout smoke_test=",
        )
    if rollout.smoke_test is None:
        return
    if network:
        raise rules.SMOKE_TEST.error(
            path,
            f"a smoke test through the Network Load Balancer listener {construct_path(listener)}, which has no rules",
        )
    protocol = getattr(listener, "protocol", None)
    if not isinstance(listener, elbv2.ApplicationListener):
        raise rules.SMOKE_TEST.error(
            path,
            f"a smoke test through {construct_path(listener)}, an imported listener whose load balancer is unknown",
        )
    if not isinstance(listener.load_balancer.node.default_child, elbv2.CfnLoadBalancer):
        raise rules.OPEN_TEST_RULE.error(
            path,
            f"a smoke test through {construct_path(listener)}, whose load balancer this app imports: whether it is "
            "internet-facing, where a smoke test cannot run safely, is unknown",
        )
    if _internet_facing(listener):
        through = "its test listener" if listener in _TEST_LISTENERS else "the header rule"
        raise rules.OPEN_TEST_RULE.error(
            path,
            f"a smoke test through {through} of {construct_path(listener)}, on an internet-facing load balancer: the "
            "function would reach it through the NAT gateway, from an address no rule admits"
            + (
                ""
                if listener in _TEST_LISTENERS
                else f", and any client that sends {TEST_HEADER}: test would reach "
                "the green tasks while the rollout tests them"
            ),
        )
    if listener in _TEST_LISTENERS:
        if test_priority is not None and not 1 <= test_priority <= 50_000:
            raise rules.OUT_OF_RANGE.error(
                path, f"test_priority={test_priority}", name="test_priority", minimum=1, maximum=50_000
            )
        return
    if protocol != elbv2.ApplicationProtocol.HTTP:
        raise rules.SMOKE_TEST.error(
            path,
            f"a smoke test through {construct_path(listener)}, an HTTPS listener with no test listener: the function "
            "would send plain HTTP to the load balancer's DNS name, which a certificate for your domain does not name "
            "(give the load balancer NeuronLoadBalancer(test_port=...))",
        )
    if test_priority is None:
        if priority is not None and priority <= 1:
            raise rules.OUT_OF_RANGE.error(
                path,
                f"priority={priority} leaves no room for the smoke test's header rule, which goes right before the "
                "production rule (at priority - 1 unless test_priority= says otherwise)",
                name="priority",
                minimum=2,
                maximum=50_000,
            )
        return
    if not 1 <= test_priority <= 50_000 or (priority is not None and test_priority >= priority):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"test_priority={test_priority}: the test rule must come before the production rule (priority {priority})",
            name="test_priority",
            minimum=1,
            maximum=f"{(priority or 1) - 1} (below priority)",
        )


def _internet_facing(listener: elbv2.ApplicationListener) -> bool:
    """Whether ``listener``'s load balancer, made in this app, is internet-facing (``Scheme``)."""
    declared = listener.load_balancer.node.default_child
    return isinstance(declared, elbv2.CfnLoadBalancer) and declared.scheme == "internet-facing"


def alternate_target(
    owner: Construct,
    id: str,
    service: NeuronService,
    smoke_test: SmokeTest | None,
    listener: Listener,
    via: elbv2.IApplicationListener,
    production: elbv2.ApplicationListenerRule,
    target_group: TargetGroup,
    *,
    conditions: Sequence[elbv2.ListenerCondition],
    priority: int,
    test_priority: int | None,
    settings: dict[str, Any],
) -> ecs.IAlternateTarget:
    """The alternate target group of a native rollout, its test rule and smoke test, and ECS's advanced configuration
    (:meth:`~neuron_constructs.serving.listeners.ListenerTarget.attach_to_listener`)."""
    path = f"{construct_path(owner)}/{id}"
    green = elbv2.ApplicationTargetGroup(owner, f"{id}Alternate", **settings)
    service.alternate_target_groups.append(green)
    assert isinstance(target_group, elbv2.ApplicationTargetGroup)
    rules_shifted: list[elbv2.ApplicationListenerRule] = [production]
    test_listener = None
    if smoke_test is not None:
        assert isinstance(listener, elbv2.ApplicationListener)
        separate = _TEST_LISTENERS.get(listener)
        if separate is not None:  # the load balancer's test listener: same conditions, its own priorities
            tested: elbv2.ApplicationListener = separate
            test_via = listener_in(owner, separate) if Stack.of(separate) is not Stack.of(owner) else separate
            test_conditions = list(conditions)
            header = None
            chosen = priority if test_priority is None else test_priority
        else:
            tested, test_via = listener, via
            test_conditions = [*conditions, elbv2.ListenerCondition.http_header(TEST_HEADER, ["test"])]
            header = (TEST_HEADER, "test")
            chosen = priority - 1 if test_priority is None else test_priority
        claim_rule(path, tested, owner, chosen)
        test = elbv2.ApplicationListenerRule(
            owner,
            f"{id}TestRule",
            listener=test_via,
            priority=chosen,
            conditions=test_conditions,
            target_groups=[target_group],
        )
        rules_shifted.append(test)
        test_listener = ecs.ListenerRuleConfiguration.application_listener_rule(test)
        service.service.add_lifecycle_hook(
            smoke_test_hook(
                owner,
                f"{id}SmokeTest",
                smoke_test=smoke_test,
                url=f"http://{listener.load_balancer.load_balancer_dns_name}:{tested.port}",
                header=header,
                vpc=service.cluster.vpc,
                subnets=service.cluster.capacity_subnets,
                load_balancer=test_via,
                port=int(tested.port),
            )
        )
    drop_dependencies_on_referenced_rules(service.service, rules_shifted)
    return ecs.AlternateTarget(
        f"{id}AlternateTarget",
        alternate_target_group=green,
        production_listener=ecs.ListenerRuleConfiguration.application_listener_rule(production),
        test_listener=test_listener,
        role=load_balancer_role(
            owner, f"{id}LoadBalancerRole", listener_rules=rules_shifted, target_groups=[target_group, green]
        ),
    )
