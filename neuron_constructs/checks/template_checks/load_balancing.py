"""Load balancers and their targets: every ECS service registered with a target group its load balancer reaches.

A service's ``LoadBalancers`` name a target group; the listeners and listener rules that forward to it name the load
balancer; the load balancer's ``SecurityGroups`` must be let out (egress) and in (ingress) to the groups in front of
the tasks on the port the target is registered on:

* awsvpc: the service's own ``AwsvpcConfiguration.SecurityGroups``, on the container port;
* host: the groups of the capacity's instances (launch template or Managed Instances network configuration), on the
  container port;
* bridge: the same instance groups, on the fixed host port, or on the whole dynamic range ECS picks host ports from
  (:data:`DYNAMIC_HOST_PORTS`).

Only what the template provably shows is judged: a target group no listener of the template forwards to, a load
balancer without security groups (a Network Load Balancer that passes client addresses through), a security group
the template does not create, or one it exports (its rules may live in another template, checked with it at synth)
is skipped. A rule from an address range or prefix list is taken to admit the load balancer (its addresses lie in
the VPC).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from neuron_constructs.checks.cfn_template import EcsTemplate, Service
from neuron_constructs.checks.template_checks.report import Check, TemplateReport, in_properties
from neuron_constructs.checks.template_values import ref_target, whole_number
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.rules import Rule

DYNAMIC_HOST_PORTS = (32768, 60999)
"""The host ports ECS gives a bridge port mapping without a ``hostPort``: "the default ephemeral port range ... listed
on the instance under /proc/sys/net/ipv4/ip_local_port_range" (ECS API reference, PortMapping), 32768-60999 on Amazon
Linux. An agent given another range (``ECS_DYNAMIC_HOST_PORT_RANGE``) and a group that admits it can silence this
rule for the service with its ``cfn-lint`` ``ignore_checks`` metadata."""

_GROUP = "AWS::EC2::SecurityGroup"
_ADDRESSES = "addresses"
"""The peer of a rule that names an address range or prefix list, not a security group."""


@dataclass(frozen=True)
class _Permission:
    """One security group rule: protocol, port range (``None`` ends: every port) and the group or addresses it names."""

    protocol: str
    low: int | None
    high: int | None
    peer: str | None
    """The other side's group key, :data:`_ADDRESSES`, or ``None`` when the template does not say."""

    def allows(self, peers: set[str], low: int, high: int) -> tuple[int, int] | None:
        """The part of ``low``-``high`` this rule lets TCP through from (or to) one of ``peers``, else ``None``."""
        if self.protocol not in ("tcp", "6", "-1"):
            return None
        if self.peer is not None and self.peer != _ADDRESSES and self.peer not in peers:
            return None
        if self.protocol == "-1" or self.low is None or self.high is None:
            return low, high
        start, end = max(low, self.low), min(high, self.high)
        return (start, end) if start <= end else None


def _group_key(value: Any) -> str | None:
    """A security group as a template names it: the logical id it refers to, a literal id, else ``None``."""
    target = ref_target(value)
    if target is not None:
        return target
    return value if isinstance(value, str) and value else None


def _covers(allowed: Iterable[tuple[int, int] | None], low: int, high: int) -> bool:
    """Whether the ranges in ``allowed`` together cover every port from ``low`` to ``high``."""
    reached = low - 1
    for start, end in sorted(a for a in allowed if a is not None):
        if start > reached + 1:
            return False
        reached = max(reached, end)
    return reached >= high


class _Groups:
    """The security groups of a template and the rules it gives them, inline or as separate resources."""

    def __init__(self, t: EcsTemplate) -> None:
        self.t = t
        exported: set[str] = set()
        if not t.origin:  # one template on its own: what it exports, other templates may add rules to
            outputs = t.loaded.template.get("Outputs")
            for output in outputs.values() if isinstance(outputs, Mapping) else ():
                if isinstance(output, Mapping) and output.get("Export") is not None:
                    exported.update(k for k in _references(output.get("Value")) if k)
        self.exported = exported
        self.ingress: dict[str, list[_Permission]] = {}
        self.egress: dict[str, list[_Permission]] = {}
        for logical_id, resource in t.resources.items():
            kind, properties = resource.get("Type"), t.properties(resource)
            if kind == _GROUP:
                for rule in _items(properties.get("SecurityGroupIngress")):
                    self.ingress.setdefault(logical_id, []).append(_permission(rule, "Source"))
                for rule in _items(properties.get("SecurityGroupEgress")):
                    self.egress.setdefault(logical_id, []).append(_permission(rule, "Destination"))
            elif kind in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
                group = _group_key(properties.get("GroupId"))
                if group is not None:
                    inbound = kind.endswith("Ingress")
                    table = self.ingress if inbound else self.egress
                    table.setdefault(group, []).append(_permission(properties, "Source" if inbound else "Destination"))

    def known(self, key: str) -> bool:
        """Whether the template shows every rule of group ``key``: it creates the group and does not export it."""
        return self.t.resources.get(key, {}).get("Type") == _GROUP and key not in self.exported

    def admits(self, targets: list[str], sources: set[str], low: int, high: int) -> bool:
        """Whether ``targets`` (one interface's groups) together let TCP ``low``-``high`` in from ``sources``."""
        return _covers((p.allows(sources, low, high) for g in targets for p in self.ingress.get(g, ())), low, high)

    def lets_out(self, group: str, targets: set[str], low: int, high: int) -> bool:
        """Whether ``group`` lets TCP ``low``-``high`` out to ``targets`` (a group without egress rules lets all out;
        one the template does not show is given the benefit of the doubt)."""
        properties = self.t.properties(self.t.resources.get(group, {}))
        if not self.known(group) or "SecurityGroupEgress" not in properties:
            return True
        return _covers((p.allows(targets, low, high) for p in self.egress.get(group, ())), low, high)


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _references(value: Any) -> Iterator[str | None]:
    """Every logical id a value refers to."""
    if isinstance(value, Mapping):
        target = ref_target(value)
        if target is not None:
            yield target
            return
        for inner in value.values():
            yield from _references(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _references(inner)


def _permission(rule: Mapping[str, Any], side: str) -> _Permission:
    protocol = str(rule.get("IpProtocol", "")).lower()
    group = rule.get(f"{side}SecurityGroupId")
    if group is not None:
        peer = _group_key(group)
    elif any(k in rule for k in ("CidrIp", "CidrIpv6", f"{side}PrefixListId")):
        peer = _ADDRESSES
    else:
        peer = None
    return _Permission(protocol, whole_number(rule.get("FromPort")), whole_number(rule.get("ToPort")), peer)


def _group_keys(values: Any) -> list[str] | None:
    """The keys of a list of security groups; ``None`` when the list is missing, empty or one is computed."""
    if not isinstance(values, list) or not values:
        return None
    keys = [_group_key(v) for v in values]
    return None if any(k is None for k in keys) else [str(k) for k in keys]


def _forwarded(action: Mapping[str, Any]) -> Iterator[str | None]:
    """The target groups one listener action forwards to."""
    yield ref_target(action.get("TargetGroupArn"))
    forward = action.get("ForwardConfig")
    for group in _items(forward.get("TargetGroups") if isinstance(forward, Mapping) else None):
        yield ref_target(group.get("TargetGroupArn"))


def _load_balancers_of(t: EcsTemplate) -> dict[str, set[str]]:
    """For each target group a listener (or listener rule) of the template forwards to, the load balancers."""
    listeners: dict[str, str] = {}
    actions: list[tuple[str | None, Mapping[str, Any]]] = []
    for logical_id, resource in t.resources.items():
        kind, properties = resource.get("Type"), t.properties(resource)
        if kind == "AWS::ElasticLoadBalancingV2::Listener":
            balancer = ref_target(properties.get("LoadBalancerArn"))
            if balancer in t.resources:
                listeners[logical_id] = balancer
            actions += [(logical_id, a) for a in _items(properties.get("DefaultActions"))]
        elif kind == "AWS::ElasticLoadBalancingV2::ListenerRule":
            actions += [(ref_target(properties.get("ListenerArn")), a) for a in _items(properties.get("Actions"))]
    found: dict[str, set[str]] = {}
    for listener, action in actions:
        if listener in listeners:
            for group in _forwarded(action):
                if group is not None:
                    found.setdefault(group, set()).add(listeners[listener])
    return found


def _instance_groups(t: EcsTemplate, service: Service) -> list[tuple[str, list[str]]] | None:
    """For each capacity the service lands on, the security groups of its instances; ``None`` when not shown."""
    capacities = t.service_capacities(service)
    if not capacities:
        return None
    found: list[tuple[str, list[str]]] = []
    for capacity in capacities:
        keys: list[str] | None = None
        if capacity.kind == "auto-scaling" and capacity.group in t.groups:
            template = t.group_launch_template(t.groups[capacity.group])
            data = t.properties(t.resources[template.logical_id]).get("LaunchTemplateData") if template else None
            if isinstance(data, Mapping):
                keys = _group_keys(data.get("SecurityGroupIds"))
                interfaces = _items(data.get("NetworkInterfaces"))
                if keys is None and len(interfaces) == 1:
                    keys = _group_keys(interfaces[0].get("Groups"))
        elif capacity.kind == "managed-instances":
            provider = t.properties(t.resources[capacity.logical_id]).get("ManagedInstancesProvider")
            launch = provider.get("InstanceLaunchTemplate") if isinstance(provider, Mapping) else None
            network = launch.get("NetworkConfiguration") if isinstance(launch, Mapping) else None
            keys = _group_keys(network.get("SecurityGroups")) if isinstance(network, Mapping) else None
        if keys is None:
            return None
        found.append((capacity.logical_id, keys))
    return found


def _target(t: EcsTemplate, service: Service, entry: Mapping[str, Any]) -> tuple[list[tuple[str, list[str]]], int, int]:
    """The groups in front of the tasks (each with the resource that holds them) and the ports the load balancer
    sends to, for one ``LoadBalancers`` entry of ``service``; empty when the template does not show them."""
    task = t.task_definitions.get(service.task_definition or "")
    port = whole_number(entry.get("ContainerPort"))
    if task is None or port is None:
        return [], 0, 0
    if task.network_mode == "awsvpc":
        network = t.properties(t.resources[service.logical_id]).get("NetworkConfiguration")
        awsvpc = network.get("AwsvpcConfiguration") if isinstance(network, Mapping) else None
        keys = _group_keys(awsvpc.get("SecurityGroups")) if isinstance(awsvpc, Mapping) else None
        return ([(service.logical_id, keys)] if keys else []), port, port
    if task.network_mode not in ("bridge", "host"):
        return [], 0, 0
    container = next((c for c in task.containers if c.name == entry.get("ContainerName")), None)
    mapping = next((m for m in container.port_mappings if m[0] == port), None) if container else None
    groups = _instance_groups(t, service)
    if mapping is None or groups is None:
        return [], 0, 0
    host = mapping[1]
    if task.network_mode == "host":
        return groups, port, port
    return (groups, host, host) if host else (groups, *DYNAMIC_HOST_PORTS)


def _ports(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _check_reachable_targets(t: EcsTemplate, out: TemplateReport) -> None:
    groups = _Groups(t)
    balancers_of = _load_balancers_of(t)
    for service in t.services.values():
        entries = _items(t.properties(t.resources[service.logical_id]).get("LoadBalancers"))
        for index, entry in enumerate(entries):
            target_group = ref_target(entry.get("TargetGroupArn"))
            balancers = sorted(balancers_of.get(target_group or "", ()))
            if not balancers:
                continue
            fronts, low, high = _target(t, service, entry)
            for holder, keys in fronts:
                if not all(groups.known(k) for k in keys):
                    continue
                for balancer in balancers:
                    sources = _group_keys(t.properties(t.resources[balancer]).get("SecurityGroups"))
                    if sources is None:
                        continue
                    inbound = groups.admits(keys, set(sources), low, high)
                    outbound = any(groups.lets_out(s, set(keys), low, high) for s in sources)
                    if inbound and outbound:
                        continue
                    names = ", ".join(t.path_of(k) for k in keys)
                    senders = ", ".join(t.path_of(s) for s in sources)
                    fronting = (
                        f"its tasks' security groups {names}"
                        if holder == service.logical_id
                        else f"the instances of {t.path_of(holder)} (security groups {names})"
                    )
                    refused = (
                        f"{fronting} admit no TCP {_ports(low, high)} from {senders}"
                        if not inbound
                        else f"{senders} let nothing out to {fronting} on TCP {_ports(low, high)}"
                    )
                    out.add(
                        r.UNREACHABLE_TARGETS,
                        service.logical_id,
                        in_properties("LoadBalancers", index),
                        f"it is registered with {t.path_of(str(target_group))} of {t.path_of(balancer)}, but {refused}",
                        ports=_ports(low, high),
                        load_balancer=senders,
                        targets=names,
                    )


CHECKS: dict[Rule, Check] = {
    r.UNREACHABLE_TARGETS: _check_reachable_targets,
}
"""This area's check of each rule."""
