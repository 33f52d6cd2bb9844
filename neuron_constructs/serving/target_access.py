"""The security group rules that let a load balancer reach a model's tasks, and nothing else.

aws-cdk-lib opens the load balancer's security group to a bridge or host task through the cluster's connections,
which do not include the security group of an Auto Scaling capacity provider (aws/aws-cdk#22764), so the tasks are
unreachable. Here the rules are added explicitly, and only these: from the load balancer's groups to the capacity's
group on the ECS dynamic host port range (bridge, :data:`DYNAMIC_HOST_PORTS`) or the host port (fixed bridge ports,
host mode), or to the tasks' own group on the container port (awsvpc); the load balancer's egress to the same.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from aws_cdk import Names
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["DYNAMIC_HOST_PORTS", "listener_in", "open_path_to_tasks"]

DYNAMIC_HOST_PORTS = (32768, 65535)
"""Host ports ECS gives bridge-mode port mappings without a ``host_port``: the ECS agent takes the kernel's
ephemeral range (``ip_local_port_range``, 32768-60999 on Amazon Linux) or 49153-65535 when it cannot read it
(ECS agent: ``ECS_DYNAMIC_HOST_PORT_RANGE``); aws-cdk-lib opens 32768-65535 for the same reason."""


def open_path_to_tasks(
    load_balancer: ec2.Connections,
    service: NeuronService,
    container_port: int,
    host_port: int | None,
    network_mode: ecs.NetworkMode,
) -> None:
    """The one path from the load balancer to ``service``'s tasks (module docstring)."""
    if network_mode == ecs.NetworkMode.AWS_VPC:
        load_balancer.allow_to(service.service, ec2.Port.tcp(container_port), "Load balancer to the model's tasks")
        return
    capacity = service.capacity
    groups = capacity.security_groups if isinstance(capacity, ManagedInstancesCapacity) else [capacity.security_group]
    if network_mode == ecs.NetworkMode.HOST:
        port = ec2.Port.tcp(container_port)
    elif host_port:
        port = ec2.Port.tcp(host_port)
    else:
        port = ec2.Port.tcp_range(*DYNAMIC_HOST_PORTS)
    load_balancer.allow_to(
        ec2.Connections(security_groups=groups), port, "Load balancer to the model's tasks (ECS host ports)"
    )


_LOAD_BALANCER_GROUPS: weakref.WeakKeyDictionary[object, dict[str, ec2.ISecurityGroup]] = weakref.WeakKeyDictionary()
"""Per owner: the load balancer security groups it imported, by the group's unique id."""


def listener_in(owner: Construct, listener: elbv2.IApplicationListener) -> elbv2.IApplicationListener:
    """``listener`` as ``owner``'s stack refers to it, with its load balancer's security group: the security group
    rules aws-cdk-lib and :func:`open_path_to_tasks` add through its connections are resources of ``owner`` (an
    imported security group's rules belong to the scope that imported it). Listeners of one load balancer (production
    and test) share one import of its group, so a rule both would open is made once (EC2 refuses a duplicate)."""
    id = f"Listener{Names.unique_id(listener)}"
    existing = owner.node.try_find_child(id)
    if existing is not None:
        return existing  # type: ignore[return-value]
    (group, *_) = listener.connections.security_groups
    imported = _LOAD_BALANCER_GROUPS.setdefault(owner, {})
    key = Names.unique_id(group)
    if key not in imported:
        imported[key] = ec2.SecurityGroup.from_security_group_id(
            owner, f"{id}SecurityGroup", group.security_group_id, mutable=True, allow_all_outbound=False
        )
    return elbv2.ApplicationListener.from_application_listener_attributes(
        owner, id, listener_arn=listener.listener_arn, security_group=imported[key]
    )
