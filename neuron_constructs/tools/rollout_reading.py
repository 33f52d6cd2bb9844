"""A service's rollout as its template states it: ``DeploymentConfiguration`` (``Strategy``, ``BakeTimeInMinutes``,
``CanaryConfiguration``, ``LinearConfiguration``) read as untrusted input, and the rollout in words
(:func:`timeline`). A value of another type, out of ECS's range or worked out at deploy time is a sentence, never an
exception. :mod:`~neuron_constructs.tools.rollout_planning` places what this reads on the chips.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuron_constructs.knowledge.approvals import DEFAULT_TIMEOUT_MINUTES, ApprovalPlan, approval_problems
from neuron_constructs.knowledge.rollouts import (
    RolloutPlan,
    Strategy,
    deployment_minutes,
    linear_steps,
    rollout_problems,
)

__all__ = ["STRATEGIES", "ReadRollout", "read_rollout", "timeline"]

STRATEGIES: Mapping[str, Strategy] = {
    "ROLLING": "rolling",
    "BLUE_GREEN": "blue_green",
    "CANARY": "canary",
    "LINEAR": "linear",
}
"""``DeploymentConfiguration.Strategy`` as CloudFormation takes it, and the strategy it names."""
_SHOWN = 40
"""Characters of a template's string a sentence quotes."""
_NUMBER = re.compile(r"^-?\d{1,12}(\.\d{1,12})?$")


@dataclass(frozen=True)
class ReadRollout:
    """A service's rollout as its template states it: ``plan`` (``None`` when the strategy cannot be known), each
    value ECS or CloudFormation refuses (``problems``) and each worked out at deploy time (``unknown``), as
    sentences."""

    plan: RolloutPlan | None
    problems: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value[:_SHOWN]!r}" + ("..." if len(value) > _SHOWN else "")
    if value is None:
        return "null"
    return "a number"


def _intrinsic(value: Any) -> bool:
    """``{"Ref": ...}`` or ``{"Fn::...": ...}``: a value CloudFormation works out at deploy time."""
    return isinstance(value, dict) and len(value) == 1 and any(k == "Ref" or str(k).startswith("Fn::") for k in value)


class _Reading:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.unknown: list[str] = []

    def number(self, container: Mapping[str, Any], key: str, where: str) -> float | None:
        """``container[key]`` as a number: a literal number or numeric string; ``None`` when absent, computed (said
        in ``unknown``) or malformed (said in ``problems``)."""
        value = container.get(key)
        if value is None:
            return None
        if _intrinsic(value):
            self.unknown.append(f"its {where} is worked out at deploy time")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.problems.append(f"its {where} is {_kind(value)}, not a number: CloudFormation refuses it")
            return None
        if isinstance(value, str):
            if not _NUMBER.match(value.strip()):
                self.problems.append(f"its {where} is {_kind(value)}, not a number: CloudFormation refuses it")
                return None
            return float(value)
        if isinstance(value, int) and abs(value) > 10**12:
            self.problems.append(f"its {where} is {value:.3g}, far outside what ECS takes")
            return None
        return float(value)

    def section(self, container: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
        value = container.get(key)
        if value is None:
            return {}
        if _intrinsic(value):
            self.unknown.append(f"its {where} is worked out at deploy time")
            return {}
        if not isinstance(value, dict):
            self.problems.append(f"its {where} is {_kind(value)}, not an object: CloudFormation refuses it")
            return {}
        return value


def read_rollout(properties: Mapping[str, Any]) -> ReadRollout:
    """The rollout of an ``AWS::ECS::Service`` from its ``Properties``, whatever they hold.

    ``DeploymentConfiguration.Strategy`` absent or ``ROLLING`` is the rolling update; ``BLUE_GREEN``, ``CANARY``
    and ``LINEAR`` ECS's native strategies with ``BakeTimeInMinutes``, ``CanaryConfiguration`` (``CanaryPercent``,
    ``CanaryBakeTimeInMinutes``) and ``LinearConfiguration`` (``StepPercent``, ``StepBakeTimeInMinutes``). A
    ``DeploymentController`` other than ``ECS`` deploys the service from outside the template. Values ECS refuses
    are named by :func:`~neuron_constructs.knowledge.rollouts.rollout_problems`; ECS API reference,
    ``DeploymentConfiguration``: ``bakeTimeInMinutes`` "You must provide this parameter when you use the BLUE_GREEN
    deployment strategy".
    """
    reading = _Reading()
    controller = properties.get("DeploymentController")
    if controller is not None:
        if _intrinsic(controller):
            return ReadRollout(None, unknown=("its DeploymentController is worked out at deploy time",))
        if not isinstance(controller, dict):
            return ReadRollout(None, (f"its DeploymentController is {_kind(controller)}, not an object",))
        kind = controller.get("Type", "ECS")
        if kind != "ECS":
            if isinstance(kind, str) and kind in ("CODE_DEPLOY", "EXTERNAL"):
                return ReadRollout(
                    None, unknown=(f"its {kind} deployment controller deploys it, outside the template",)
                )
            return ReadRollout(None, (f"its DeploymentController Type is {_kind(kind)}, none ECS takes",))
    config = reading.section(properties, "DeploymentConfiguration", "DeploymentConfiguration")
    if reading.problems or reading.unknown:
        return ReadRollout(None, tuple(reading.problems), tuple(reading.unknown))
    raw = config.get("Strategy", "ROLLING")
    if _intrinsic(raw):
        return ReadRollout(None, unknown=("its Strategy is worked out at deploy time",))
    strategy = STRATEGIES.get(raw) if isinstance(raw, str) else None
    if strategy is None:
        return ReadRollout(
            None,
            (f"its Strategy is {_kind(raw)}, none ECS takes ({', '.join(STRATEGIES)}): CloudFormation refuses it",),
        )
    if strategy == "rolling":
        return ReadRollout(RolloutPlan.rolling())
    bake = reading.number(config, "BakeTimeInMinutes", "BakeTimeInMinutes")
    percent = interval = None
    if strategy == "canary":
        canary = reading.section(config, "CanaryConfiguration", "CanaryConfiguration")
        percent = reading.number(canary, "CanaryPercent", "CanaryPercent")
        interval = reading.number(canary, "CanaryBakeTimeInMinutes", "CanaryBakeTimeInMinutes")
    elif strategy == "linear":
        linear = reading.section(config, "LinearConfiguration", "LinearConfiguration")
        percent = reading.number(linear, "StepPercent", "StepPercent")
        interval = reading.number(linear, "StepBakeTimeInMinutes", "StepBakeTimeInMinutes")
    approval = _approval(config, reading)
    plan = RolloutPlan(
        strategy,
        bake_time_minutes=bake,
        canary_percent=percent if strategy == "canary" else None,
        linear_step_percent=percent if strategy == "linear" else None,
        interval_minutes=interval,
        approval=approval,
    )
    problems = list(reading.problems)
    if approval is not None:
        problems += approval_problems(approval)
    if not reading.problems:
        problems += rollout_problems(
            plan, has_load_balancer=_has_load_balancer(properties), has_service_connect=_has_service_connect(properties)
        )
    if strategy == "blue_green" and "BakeTimeInMinutes" not in config:
        problems.append("it has no BakeTimeInMinutes, which ECS requires with the BLUE_GREEN strategy")
    return ReadRollout(plan, tuple(problems), tuple(reading.unknown))


def _approval(config: Mapping[str, Any], reading: _Reading) -> ApprovalPlan | None:
    """The first pause hook (``TargetType: PAUSE``) of ``LifecycleHooks``, with ECS's defaults for what it leaves
    out (a 1,440-minute wait, then ``ROLLBACK``)."""
    hooks = config.get("LifecycleHooks")
    for hook in hooks if isinstance(hooks, list) else []:
        if not isinstance(hook, dict) or hook.get("TargetType") != "PAUSE":
            continue
        stages = hook.get("LifecycleStages")
        stage = stages[0] if isinstance(stages, list) and stages and isinstance(stages[0], str) else "?"
        timeout = reading.section(hook, "TimeoutConfiguration", "pause hook's TimeoutConfiguration")
        minutes = reading.number(timeout, "TimeoutInMinutes", "pause hook's TimeoutInMinutes")
        action = timeout.get("Action", "ROLLBACK")
        return ApprovalPlan(
            stage,
            DEFAULT_TIMEOUT_MINUTES if minutes is None else minutes,
            action if isinstance(action, str) else "?",
        )
    return None


def _has_load_balancer(properties: Mapping[str, Any]) -> bool:
    balancers = properties.get("LoadBalancers")
    return bool(balancers) and (isinstance(balancers, list) or _intrinsic(balancers))


def _has_service_connect(properties: Mapping[str, Any]) -> bool:
    connect = properties.get("ServiceConnectConfiguration")
    return isinstance(connect, dict) and connect.get("Enabled") in (True, "true", "True")


def _minutes(value: float | None) -> str:
    return "not set" if value is None else f"{value:g} min"


def timeline(plan: RolloutPlan, *, minimum_healthy_percent: int = 100, maximum_percent: int = 200) -> str:
    """The rollout in words and numbers: ``canary: 10 % of the traffic to green for 5 min, then the rest; blue kept
    10 min after; 15 min in all``."""
    bake = f"blue kept {_minutes(plan.bake_time_minutes)} after"
    total = _total(plan) + (f"; {plan.approval}" if plan.approval is not None else "")
    if plan.strategy == "rolling":
        return f"rolling: at least {minimum_healthy_percent} % healthy, at most {maximum_percent} % running"
    if plan.strategy == "blue_green":
        return f"blue/green: all traffic to green at once; {bake}{total}"
    if plan.strategy == "canary":
        share = "ECS's canary share" if plan.canary_percent is None else f"{plan.canary_percent:g} %"
        wait = _minutes(plan.interval_minutes)
        return f"canary: {share} of the traffic to green for {wait}, then the rest; {bake}{total}"
    step = "ECS's step" if plan.linear_step_percent is None else f"{plan.linear_step_percent:g} %"
    return f"linear: {step} more of the traffic every {_minutes(plan.interval_minutes)}; {bake}{total}"


def _total(plan: RolloutPlan) -> str:
    try:
        minutes = deployment_minutes(plan)
        steps = linear_steps(plan.linear_step_percent) if plan.linear_step_percent is not None else None
    except (ValueError, ArithmeticError):
        return ""
    if minutes is None or not math.isfinite(minutes):
        return ""
    waits = f", {steps} step wait{'s' if steps != 1 else ''}" if plan.strategy == "linear" and steps is not None else ""
    return f"; {minutes:g} min in all{waits}"
