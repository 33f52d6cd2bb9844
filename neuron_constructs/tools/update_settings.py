"""What a report can say of a deployed stack's update settings: the ones that matter only on a deploy that changes
something, which a local endpoint never runs, and which an API may not read back.

* A service's deployment settings (``DeploymentConfiguration``: the percentages, the circuit breaker and the
  deployment alarms, which every copy of a fleet carries): :func:`dropped_deployment_settings` names each one that
  DescribeServices does not report as asked (moto keeps none of them).
* An Auto Scaling group's ``UpdatePolicy`` that replaces instances (the instance refresh of an AMI rollout, a rolling
  or a replacing update): :func:`update_policy_gaps`. CloudFormation acts on it only in a stack update that changes
  the group, and no API reads it back (CloudFormation User Guide: UpdatePolicy attribute).

No AWS SDK call here: the report (:mod:`neuron_constructs.tools.deployment_report`) passes what it read.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["REPLACING_POLICIES", "dropped_deployment_settings", "short_text", "update_policy_gaps"]

REPLACING_POLICIES = frozenset({"AutoScalingInstanceRefresh", "AutoScalingRollingUpdate", "AutoScalingReplacingUpdate"})
"""The ``UpdatePolicy`` attributes of an Auto Scaling group that replace its instances on an update;
``AutoScalingScheduledAction`` (aws-cdk-lib's default, which keeps the group's sizes) replaces nothing."""


def short_text(value: Any) -> str:
    """``value`` as one short line of text."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _flag(value: Any) -> bool:
    """A template's or an API's boolean (CloudFormation templates may write ``"true"``)."""
    return value is True or str(value).lower() == "true"


def dropped_deployment_settings(asked: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """The service deployment settings the template asks for (``asked``, its ``DeploymentConfiguration``) that
    ``live`` (DescribeServices' ``deploymentConfiguration``) does not report as asked: the percentages, the circuit
    breaker and the deployment alarms, each as text."""
    dropped: list[str] = []
    for key in ("MaximumPercent", "MinimumHealthyPercent"):
        live_key = key[0].lower() + key[1:]
        if key in asked and str(live.get(live_key)) != str(asked[key]):
            dropped.append(f"{live_key} {short_text(asked[key])}")
    for key, live_key, noun in (
        ("DeploymentCircuitBreaker", "deploymentCircuitBreaker", "circuit breaker"),
        ("Alarms", "alarms", "alarms"),
    ):
        wanted = asked.get(key) or {}
        reported = live.get(live_key) or {}
        if not isinstance(wanted, dict) or not _flag(wanted.get("Enable")):
            continue
        if not _flag(reported.get("enable")) or _flag(wanted.get("Rollback")) != _flag(reported.get("rollback")):
            names = wanted.get("AlarmNames")
            count = f"{len(names)} alarm{'' if len(names) == 1 else 's'}, " if isinstance(names, list) else ""
            rollback = "rollback" if _flag(wanted.get("Rollback")) else "no rollback"
            dropped.append(f"{live_key} ({noun}: {count}{rollback})")
    return dropped


def update_policy_gaps(policy: Any) -> list[str]:
    """A sentence for each attribute of an Auto Scaling group's ``UpdatePolicy`` (``policy``) that replaces instances
    (:data:`REPLACING_POLICIES`), with its settings: nothing on a deploy that creates the stack exercises it."""
    if not isinstance(policy, dict):
        return []
    gaps = []
    for kind in sorted(k for k in policy if k in REPLACING_POLICIES):
        settings = policy[kind] if isinstance(policy[kind], dict) else {}
        nested = settings.get("Preferences")
        preferences: dict[str, Any] = nested if isinstance(nested, dict) else settings
        shown = ", ".join(f"{k} {short_text(v)}" for k, v in sorted(preferences.items()) if not isinstance(v, dict))
        gaps.append(
            f"UpdatePolicy.{kind} ({shown or 'defaults'}) not exercised: CloudFormation applies it when a stack update "
            "changes the group, no API reads it back, and the local endpoint updates no stack"
        )
    return gaps
