"""What a deployed stack's Elastic Load Balancing resources are, read back: load balancers, listeners, listener
rules and target groups.
"""

from __future__ import annotations

from typing import Any

from neuron_constructs.tools.deployment_report.model import ReportItem
from neuron_constructs.tools.deployment_report.reader import StackReaderBase

__all__ = ["LoadBalancingReader"]


def _action_text(action: dict[str, Any]) -> str:
    """``forward to <target group name>`` or ``fixed-response 404``."""
    if action.get("TargetGroupArn"):
        return f"forward to {str(action['TargetGroupArn']).rsplit('/', 2)[-2]}"
    if action.get("FixedResponseConfig"):
        return f"fixed-response {action['FixedResponseConfig'].get('StatusCode')}"
    return str(action.get("Type"))


class LoadBalancingReader(StackReaderBase):
    """Reads a stack's load balancers, listeners, listener rules and target groups."""

    def load_balancer(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (balancer,) = self.clients("elbv2").describe_load_balancers(LoadBalancerArns=[physical_id])["LoadBalancers"]
        self.compare(logical_id, "Scheme", properties.get("Scheme"), balancer.get("Scheme"))
        details = (str(balancer.get("Scheme")), str(balancer.get("DNSName")))
        self.items.append(ReportItem("load balancer", balancer["LoadBalancerName"], details))

    def listener(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (listener,) = self.clients("elbv2").describe_listeners(ListenerArns=[physical_id])["Listeners"]
        self.compare(logical_id, "Port", properties.get("Port"), listener.get("Port"))
        actions = ", ".join(_action_text(a) for a in listener.get("DefaultActions", []))
        self.items.append(ReportItem("listener", f"{listener['Protocol']}:{listener['Port']}", (f"default {actions}",)))

    def listener_rule(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (rule,) = self.clients("elbv2").describe_rules(RuleArns=[physical_id])["Rules"]
        conditions = [
            f"{c['Field']} {','.join(c.get('Values') or c.get('PathPatternConfig', {}).get('Values', []))}"
            for c in rule.get("Conditions", [])
        ]
        actions = ", ".join(_action_text(a) for a in rule.get("Actions", []))
        self.items.append(ReportItem("listener rule", f"priority {rule['Priority']}", (*conditions, actions)))

    def target_group(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (group,) = self.clients("elbv2").describe_target_groups(TargetGroupArns=[physical_id])["TargetGroups"]
        for key in ("TargetType", "HealthCheckPath", "Port"):
            self.compare(logical_id, key, properties.get(key), group.get(key))
        details = (
            f"{group.get('TargetType')} targets, {group['Protocol']}:{group['Port']}",
            f"health check {group.get('HealthCheckPath', group.get('HealthCheckProtocol'))} every "
            f"{group.get('HealthCheckIntervalSeconds')} s",
        )
        self.items.append(ReportItem("target group", group["TargetGroupName"], details))
