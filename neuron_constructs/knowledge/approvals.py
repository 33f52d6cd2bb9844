"""A person's go-ahead in a native rollout: ECS's pause hook, as plain values.

A deployment lifecycle hook whose ``targetType`` is ``PAUSE`` stops the deployment at its lifecycle stage "until you
call ContinueServiceDeployment to continue or roll back"; the hook's ``timeoutConfiguration`` says how long ECS waits
(``timeoutInMinutes``, 1 to 20160, default 1440) and what it does then (``action``: ``ROLLBACK``, the default, or
``CONTINUE``). "PAUSE hooks cannot be configured at TEST_TRAFFIC_SHIFT or PRODUCTION_TRAFFIC_SHIFT stages"; at
``PRE_PRODUCTION_TRAFFIC_SHIFT`` a canary or linear deployment pauses "before every traffic shift step". While paused,
``DescribeServiceDeployments`` shows the hook in ``lifecycleHookDetails`` with status ``AWAITING_ACTION``, its
``hookId`` and ``expiresAt``. Lifecycle hooks belong to the native strategies (blue/green, canary, linear), not to
the rolling update.

Sources: ECS API reference (botocore 1.44.8 service model): ``DeploymentLifecycleHook`` (``targetType``,
``lifecycleStages``, ``timeoutConfiguration``), ``DeploymentLifecycleHookTimeoutConfiguration``,
``ServiceDeploymentLifecycleHookDetail``, ``ContinueServiceDeployment``.

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "DEFAULT_TIMEOUT_MINUTES",
    "LAMBDA_ONLY_STAGES",
    "MAX_TIMEOUT_MINUTES",
    "PAUSE_STAGES",
    "TIMEOUT_ACTIONS",
    "ApprovalPlan",
    "approval_problems",
]

PAUSE_STAGES = (
    "RECONCILE_SERVICE",
    "PRE_SCALE_UP",
    "POST_SCALE_UP",
    "POST_TEST_TRAFFIC_SHIFT",
    "PRE_PRODUCTION_TRAFFIC_SHIFT",
    "POST_PRODUCTION_TRAFFIC_SHIFT",
)
"""The lifecycle stages a pause hook may stop at, in the order a deployment reaches them."""
LAMBDA_ONLY_STAGES = ("TEST_TRAFFIC_SHIFT", "PRODUCTION_TRAFFIC_SHIFT")
"""Stages only a Lambda hook may run at: ECS refuses a pause there."""
MAX_TIMEOUT_MINUTES = 20160
"""The longest a hook may wait (14 days)."""
DEFAULT_TIMEOUT_MINUTES = 1440
"""ECS's default wait (24 hours)."""
TIMEOUT_ACTIONS = ("ROLLBACK", "CONTINUE")
"""What ECS does when nobody answered in time; ``ROLLBACK`` is ECS's default."""


@dataclass(frozen=True)
class ApprovalPlan:
    """A pause hook: the stage it stops at, how long ECS waits (minutes) and what it does then."""

    stage: str
    timeout_minutes: float
    on_timeout: str

    def pauses(self, shifts: int) -> int:
        """How many times a deployment with ``shifts`` production traffic shifts stops: once, or before every shift
        at ``PRE_PRODUCTION_TRAFFIC_SHIFT``."""
        return max(1, shifts) if self.stage == "PRE_PRODUCTION_TRAFFIC_SHIFT" else 1

    def __str__(self) -> str:
        return (
            f"waits for approval at {self.stage} up to {self.timeout_minutes:g} min, then "
            f"{'rolls back' if self.on_timeout == 'ROLLBACK' else 'continues'}"
        )


def approval_problems(plan: ApprovalPlan) -> list[str]:
    """Each value of ``plan`` ECS refuses, as a sentence with the fix."""
    problems: list[str] = []
    if plan.stage in LAMBDA_ONLY_STAGES:
        problems.append(
            f"stage={plan.stage!r}: ECS runs only Lambda hooks at TEST_TRAFFIC_SHIFT and PRODUCTION_TRAFFIC_SHIFT; "
            "pause at POST_TEST_TRAFFIC_SHIFT (after the test traffic) or PRE_PRODUCTION_TRAFFIC_SHIFT instead"
        )
    elif plan.stage not in PAUSE_STAGES:
        problems.append(
            f"stage={plan.stage!r} is none of ECS's lifecycle stages a pause takes: {', '.join(PAUSE_STAGES)}"
        )
    minutes = plan.timeout_minutes
    if not (math.isfinite(minutes) and minutes == int(minutes) and 1 <= minutes <= MAX_TIMEOUT_MINUTES):
        problems.append(
            f"timeout of {minutes:g} minutes: ECS waits 1 to {MAX_TIMEOUT_MINUTES} whole minutes (14 days) for a hook"
        )
    if plan.on_timeout not in TIMEOUT_ACTIONS:
        problems.append(f"on_timeout={plan.on_timeout!r} is neither ROLLBACK nor CONTINUE")
    return problems
