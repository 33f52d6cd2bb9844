"""How a fleet model's copies roll out: the stages of copies each deployment wave holds, and the rollouts a fleet
model can take copy by copy (NEURON078)."""

from __future__ import annotations

import math

from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.rollouts import DEFAULT_BAKE_MINUTES, DEFAULT_INTERVAL_MINUTES
from neuron_constructs.serving.rollout import Rollout

__all__ = ["fleet_rollout", "rollout_stages"]


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


def fleet_rollout(path: str, rollout: Rollout | None, copies: int) -> Rollout:
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
    if rollout.approval is not None:
        raise rules.ROLLOUT_ON_FLEET.error(
            path,
            "an approval on a fleet model, whose copies deploy as services of their own: each would pause apart",
            fix="drop approval=, or serve the model as a NeuronService rolled out with it",
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
