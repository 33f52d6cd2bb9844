"""How a new model version reaches production: ``Rollout``, ``SmokeTest`` and ``RolloutAlarms``, the values of
``rollout=`` on :class:`~neuron_constructs.serving.services.NeuronService`, ``SlicedNeuronService`` and
``NeuronFleet.add_model``.

* ``Rollout.rolling()`` (the default): ECS's rolling update, as before.
* ``Rollout.blue_green()``, ``Rollout.canary()``, ``Rollout.linear()``: ECS's native strategies
  (``deploymentConfiguration.strategy``). ECS starts the new revision (green) at the full desired count next to the
  old one (blue), moves production traffic from blue's target group to green's through the listener rule's weights
  (all at once, a share then the rest, or in equal steps), keeps blue ``bake_time`` for a rollback and rolls back
  when a deployment alarm fires or a lifecycle hook fails.
* ``SmokeTest``: one real request to the green tasks before production traffic (a lifecycle hook at
  ``POST_TEST_TRAFFIC_SHIFT``; :mod:`neuron_constructs.programs.smoke_test`).
* ``RolloutAlarms``: the deployment alarms ECS rolls back on, with their thresholds.
* ``Approval``: a person's go-ahead, ECS's pause hook at one lifecycle stage (default after the test traffic, before
  production traffic): ``neuron-ecs rollout approve`` continues the deployment, ``neuron-ecs rollout rollback`` rolls it
  back, and unanswered it rolls back after ``timeout`` (:mod:`neuron_constructs.knowledge.approvals`).

Values ECS or CloudFormation refuse are refused here, at the call (NEURON072;
:func:`neuron_constructs.knowledge.rollouts.rollout_problems`).
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field, replace

from aws_cdk import Duration

from neuron_constructs.base.arguments import is_token, seconds_of
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.approvals import DEFAULT_TIMEOUT_MINUTES, ApprovalPlan, approval_problems
from neuron_constructs.knowledge.rollouts import (
    DEFAULT_BAKE_MINUTES,
    DEFAULT_CANARY_PERCENT,
    DEFAULT_INTERVAL_MINUTES,
    DEFAULT_LINEAR_STEP_PERCENT,
    RolloutPlan,
    rollout_problems,
    tenths_of,
)
from neuron_constructs.programs.smoke_test import MAX_TIMEOUT, METHODS

__all__ = ["Approval", "Rollout", "RolloutAlarms", "SmokeTest"]

SMOKE_TEST_MARGIN_S = 30
"""How much longer than the request's timeout the smoke test's function may run (start, DNS, the log line)."""
BAKE_TIME = Duration.minutes(DEFAULT_BAKE_MINUTES)
"""How long blue stays after all traffic moved to green, by default: 10 minutes."""
INTERVAL = Duration.minutes(DEFAULT_INTERVAL_MINUTES)
"""The wait between traffic shifts of a canary or linear rollout, by default: 5 minutes."""


def latency_seconds(value: Duration) -> float | None:
    """A latency limit in seconds, fractions of a second included (``Duration.millis(150)`` is 0.15); ``None`` for one
    known only at deploy time."""
    try:
        milliseconds = float(value.to_milliseconds())
    except RuntimeError:
        return None
    return None if is_token(milliseconds) else milliseconds / 1000


def _check_duration(where: str, name: str, value: object, unit: str) -> None:
    """NEURON026 for a ``name`` that is not a ``Duration``: a bare number has no unit, and the library corrects
    nothing silently, so ``bake_time=15`` is refused with the ``Duration`` that says what was meant
    (``Duration.minutes(15)``, ``unit`` the one the parameter is usually given in)."""
    if isinstance(value, Duration):
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise rules.WRONG_TYPE.error(
            where,
            f"{name}={value!r}, a number without a unit",
            expected=f"{name}=Duration.{unit}({value!r}) (or the Duration you meant: seconds, minutes, hours)",
        )
    raise rules.WRONG_TYPE.error(where, f"{name}={value!r}", expected=f"{name}=Duration.{unit}(...)")


def _minutes(where: str, name: str, value: Duration) -> float:
    """``value`` in minutes: refused when it is no ``Duration`` (NEURON026) or a deploy-time token (NEURON027)."""
    _check_duration(where, name, value, "minutes")
    seconds = seconds_of(value)
    if seconds is None:
        raise rules.TOKEN_NOT_LITERAL.error(where, f"{name} is a CDK token", name=name)
    return seconds / 60


def _rounded(percent: float | None) -> float | None:
    """``percent`` as the multiple of 0.1 it is within float noise
    (:func:`~neuron_constructs.knowledge.rollouts.tenths_of`), for a percent that
    :func:`~neuron_constructs.knowledge.rollouts.rollout_problems` accepted."""
    tenths = None if percent is None else tenths_of(percent)
    return percent if tenths is None else tenths / 10


@dataclass(frozen=True)
class SmokeTest:
    """One request the green tasks must answer before any production traffic reaches them.

    A small standard-library Python Lambda function in the model's stack and VPC sends ``method path`` (with
    ``body``, JSON when it parses as JSON) through the load balancer's test listener rule, which ECS points at the
    green tasks, and fails the deployment stage - ECS then rolls back - on a status other than ``expect_status``
    (default 200), on no answer within ``timeout`` (default 60 s, 1 to 870 s: the function runs at most 900 s, 30 s
    of it kept for itself) or on a refused or unreachable connection, logging which.

    ``SmokeTest(path, *, method="GET", body=None, expect_status=200, timeout=Duration.seconds(60))``: the options are
    keyword-only. Refused at the call (NEURON079): a path not starting with ``/`` or holding anything but printable
    ASCII, a method other than GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, a status outside 100-599, a timeout
    outside its range or given as a token, a body with a GET or HEAD request; a timeout that is a bare number, not a
    ``Duration`` (NEURON026).
    """

    path: str
    _: KW_ONLY
    method: str = "GET"
    body: str | None = None
    expect_status: int = 200
    timeout: Duration = field(default_factory=lambda: Duration.seconds(60))

    def __post_init__(self) -> None:
        where = "SmokeTest"
        problem: str | None = None
        if not isinstance(self.path, str) or is_token(self.path):
            problem = f"path={self.path!r} is not a literal string"
        elif not (self.path.startswith("/") and len(self.path) <= 2048):
            problem = f"path={self.path[:200]!r} does not start with /"
        elif not all(0x20 < ord(c) < 0x7F for c in self.path) or "#" in self.path:
            problem = f"path={self.path[:200]!r} holds a space, a fragment (#) or a character outside printable ASCII"
        elif self.method not in METHODS:
            problem = f"method={self.method!r} is not one of {', '.join(METHODS)}"
        elif self.body is not None and self.method in ("GET", "HEAD"):
            problem = f"body= with method={self.method!r}, which sends no body"
        elif self.body is not None and (not isinstance(self.body, str) or is_token(self.body)):
            problem = "body= is not a literal string"
        elif isinstance(self.expect_status, bool) or not isinstance(self.expect_status, int):
            problem = f"expect_status={self.expect_status!r} is not a whole number"
        elif not 100 <= self.expect_status <= 599:
            problem = f"expect_status={self.expect_status} is not an HTTP status (100-599)"
        else:
            _check_duration(where, "timeout", self.timeout, "seconds")
            seconds = seconds_of(self.timeout)
            longest = MAX_TIMEOUT - SMOKE_TEST_MARGIN_S
            if seconds is None:
                problem = "timeout= is a CDK token"
            elif not (1 <= seconds <= longest and seconds == int(seconds)):
                problem = (
                    f"timeout={self.timeout.to_human_string()} is not a whole number of seconds from 1 to {longest}"
                )
        if problem:
            raise rules.SMOKE_TEST.error(where, problem)

    @property
    def timeout_seconds(self) -> int:
        """The request's timeout in whole seconds."""
        return int(self.timeout.to_seconds())

    @property
    def function_timeout(self) -> Duration:
        """How long the function may run: the request's timeout and ``SMOKE_TEST_MARGIN_S`` (30 s)."""
        return Duration.seconds(self.timeout_seconds + SMOKE_TEST_MARGIN_S)


@dataclass(frozen=True)
class Approval:
    """A person's go-ahead: ECS pauses the deployment at ``stage`` until ``neuron-ecs rollout approve`` (ECS's
    ``ContinueServiceDeployment`` CONTINUE) or ``neuron-ecs rollout rollback`` (ROLLBACK), and after ``timeout`` does
    ``on_timeout``.

    ``stage``: default ``POST_TEST_TRAFFIC_SHIFT``: green runs at the full count and answers the test listener, and
    no production traffic has reached it; a smoke test runs at the same stage, and ECS names no order between two
    hooks of one stage, only that both complete before the deployment goes on (an approval given while the smoke test
    still runs waits for it; ``neuron-ecs rollout status`` shows both); ``PRE_PRODUCTION_TRAFFIC_SHIFT``
    pauses before every production shift of a canary or linear rollout; ``POST_SCALE_UP``, ``PRE_SCALE_UP``,
    ``RECONCILE_SERVICE`` and ``POST_PRODUCTION_TRAFFIC_SHIFT`` are ECS's other stages a pause takes. ``timeout``:
    default 24 hours (ECS's), 1 minute to 14 days in whole minutes; blue and green both run while it waits, and
    ``neuron-ecs plan --rollout`` counts the wait. ``on_timeout``: ``"ROLLBACK"`` (default, ECS's) or ``"CONTINUE"``
    (warning NEURON181: a deployment nobody approved reaches production). Refused at the call (NEURON180): a stage
    ECS pauses at none of, ``TEST_TRAFFIC_SHIFT`` and ``PRODUCTION_TRAFFIC_SHIFT`` (Lambda hooks only), a timeout
    outside its range or a token; a bare number for ``timeout`` (NEURON026).
    """

    stage: str = "POST_TEST_TRAFFIC_SHIFT"
    _: KW_ONLY
    timeout: Duration = field(default_factory=lambda: Duration.minutes(DEFAULT_TIMEOUT_MINUTES))
    on_timeout: str = "ROLLBACK"

    def __post_init__(self) -> None:
        where = "Approval"
        if not isinstance(self.stage, str) or is_token(self.stage):
            raise rules.APPROVAL.error(where, f"stage={self.stage!r} is not one of ECS's lifecycle stages by name")
        if not isinstance(self.on_timeout, str):
            raise rules.APPROVAL.error(where, f"on_timeout={self.on_timeout!r} is neither ROLLBACK nor CONTINUE")
        minutes = _minutes(where, "timeout", self.timeout)
        problems = approval_problems(self.plan_of(minutes))
        if problems:
            raise rules.APPROVAL.error(where, "; ".join(problems))

    def plan_of(self, minutes: float) -> ApprovalPlan:
        return ApprovalPlan(self.stage, minutes, self.on_timeout)

    @property
    def plan(self) -> ApprovalPlan:
        """The pause as plain values (:class:`~neuron_constructs.knowledge.approvals.ApprovalPlan`)."""
        return self.plan_of(self.timeout.to_minutes())


@dataclass(frozen=True)
class RolloutAlarms:
    """The deployment alarms ECS rolls a deployment back on, each over one-minute periods, in alarm when
    ``datapoints`` of the last ``periods`` minutes breach (default 2 of 3), missing data not breaching.

    * ``execution_errors`` (default 1): the model's Neuron ``ExecutionErrors`` (the per-model sum
      :class:`~neuron_constructs.monitoring.monitoring.NeuronMonitoring` publishes) at or above this in a minute:
      the chips failed to run the new graph. Only when a ``NeuronMonitoring`` of the app covers the capacity
      (warning NEURON122 otherwise).
    * ``target_5xx`` (default 5): 5xx answers of the model's tasks a minute (``HTTPCode_Target_5XX_Count``, both
      target groups of the rollout summed) at or above this.
    * ``p99_response_time`` (default 60 s): the 99th percentile of ``TargetResponseTime`` (time to the first byte of
      the answer) of either target group at or above this; a model that answers without streaming takes the whole
      generation, so set it to what a long answer of yours takes.
    * ``time_to_first_token``, ``inter_token_latency`` (default none): what an LLM's users feel, from the model's
      engine-metrics sidecar (vLLM's ``vllm:time_to_first_token_seconds`` and ``vllm:inter_token_latency_seconds``,
      the mean of each copy between two scrapes): in alarm when the worst copy's reaches this. Refused on a model
      without the sidecar (NEURON178).
    """

    execution_errors: int = 1
    target_5xx: int = 5
    p99_response_time: Duration = field(default_factory=lambda: Duration.seconds(60))
    periods: int = 3
    datapoints: int = 2
    time_to_first_token: Duration | None = None
    inter_token_latency: Duration | None = None

    def __post_init__(self) -> None:
        where = "RolloutAlarms"
        for name, highest in (("execution_errors", None), ("target_5xx", None), ("periods", 1440)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= (highest or value):
                raise rules.OUT_OF_RANGE.error(
                    where, f"{name}={value!r}", name=name, minimum=1, maximum=highest or "any whole number"
                )
        if (
            isinstance(self.datapoints, bool)
            or not isinstance(self.datapoints, int)
            or not 1 <= self.datapoints <= self.periods
        ):
            raise rules.OUT_OF_RANGE.error(
                where,
                f"datapoints={self.datapoints!r}",
                name="datapoints",
                minimum=1,
                maximum=f"periods ({self.periods})",
            )
        for name in ("time_to_first_token", "inter_token_latency"):
            value = getattr(self, name)
            if value is None:
                continue
            _check_duration(where, name, value, "seconds")
            seconds_given = latency_seconds(value)
            if seconds_given is None:
                raise rules.TOKEN_NOT_LITERAL.error(
                    where, f"{name} is a CDK token, read only at deploy time", name=name
                )
            if not 0 < seconds_given <= 3600:
                raise rules.OUT_OF_RANGE.error(
                    where, f"{name}={value.to_human_string()}", name=name, minimum="above 0 s", maximum="an hour"
                )
        _check_duration(where, "p99_response_time", self.p99_response_time, "seconds")
        seconds = seconds_of(self.p99_response_time)
        if seconds is None:
            raise rules.TOKEN_NOT_LITERAL.error(
                where, "p99_response_time is a CDK token, read only at deploy time", name="p99_response_time"
            )
        if not 0 < seconds <= 4000:
            raise rules.OUT_OF_RANGE.error(
                where,
                f"p99_response_time={self.p99_response_time.to_human_string()}, outside what a load balancer can wait",
                name="p99_response_time",
                minimum="above 0 s",
                maximum="4,000 s (the longest idle timeout of an Application Load Balancer)",
            )


@dataclass(frozen=True)
class Rollout:
    """How a new revision of a service reaches production; build it with :meth:`rolling`, :meth:`blue_green`,
    :meth:`canary` or :meth:`linear`.

    Attributes
    ----------
    plan
        The strategy with its numbers in minutes and percents
        (:class:`~neuron_constructs.knowledge.rollouts.RolloutPlan`).
    smoke_test
        The request green must answer before production traffic, or ``None``.
    alarms
        The deployment alarms' thresholds, or ``None`` for no alarms (``alarms=False``).
    approval
        The pause for a person's go-ahead, or ``None`` (also in ``plan.approval``).
    """

    plan: RolloutPlan
    smoke_test: SmokeTest | None = None
    alarms: RolloutAlarms | None = None
    approval: Approval | None = None

    @classmethod
    def rolling(cls) -> Rollout:
        """ECS's rolling update, with the deployment circuit breaker: today's behaviour and the default."""
        return cls(RolloutPlan.rolling())

    @classmethod
    def blue_green(
        cls,
        *,
        bake_time: Duration = BAKE_TIME,
        smoke_test: SmokeTest | None = None,
        alarms: bool | RolloutAlarms = True,
        approval: Approval | None = None,
    ) -> Rollout:
        """All production traffic to green at once, once green runs at the full count (and passed ``smoke_test``);
        blue stays ``bake_time`` (default 10 minutes, 0 to 1,440) for an immediate rollback.

        ``bake_time`` and the ``interval`` of :meth:`canary` and :meth:`linear` are ``Duration``s: a bare number
        (``bake_time=15``) carries no unit and is refused with the ``Duration`` to pass (NEURON026), never read as
        minutes."""
        where = "Rollout.blue_green"
        plan = RolloutPlan.blue_green(bake_time_minutes=_minutes(where, "bake_time", bake_time))
        return cls._checked(where, plan, smoke_test, alarms, approval)

    @classmethod
    def canary(
        cls,
        *,
        percent: float = DEFAULT_CANARY_PERCENT,
        interval: Duration = INTERVAL,
        bake_time: Duration = BAKE_TIME,
        smoke_test: SmokeTest | None = None,
        alarms: bool | RolloutAlarms = True,
        approval: Approval | None = None,
    ) -> Rollout:
        """``percent`` (default 10, 0.1 to 100 in steps of 0.1; one computed in floating point, such as ``0.1 + 0.2``,
        counts as the multiple of 0.1 it is within float noise, and ECS gets that multiple) of production traffic to
        green for ``interval``
        (default 5 minutes), then the rest; blue stays ``bake_time`` (default 10 minutes). Needs a load balancer or
        Service Connect (NEURON073)."""
        where = "Rollout.canary"
        plan = RolloutPlan.canary(
            percent=percent,
            interval_minutes=_minutes(where, "interval", interval),
            bake_time_minutes=_minutes(where, "bake_time", bake_time),
        )
        return cls._checked(where, plan, smoke_test, alarms, approval)

    @classmethod
    def linear(
        cls,
        *,
        step_percent: float = DEFAULT_LINEAR_STEP_PERCENT,
        interval: Duration = INTERVAL,
        bake_time: Duration = BAKE_TIME,
        smoke_test: SmokeTest | None = None,
        alarms: bool | RolloutAlarms = True,
        approval: Approval | None = None,
    ) -> Rollout:
        """``step_percent`` (default 25, 3 to 100 in steps of 0.1) more of production traffic to green every
        ``interval`` (default 5 minutes); blue stays ``bake_time`` (default 10 minutes) after the last step. Needs a
        load balancer or Service Connect (NEURON073)."""
        where = "Rollout.linear"
        plan = RolloutPlan.linear(
            step_percent=step_percent,
            interval_minutes=_minutes(where, "interval", interval),
            bake_time_minutes=_minutes(where, "bake_time", bake_time),
        )
        return cls._checked(where, plan, smoke_test, alarms, approval)

    @classmethod
    def _checked(
        cls,
        where: str,
        plan: RolloutPlan,
        smoke_test: SmokeTest | None,
        alarms: bool | RolloutAlarms,
        approval: Approval | None = None,
    ) -> Rollout:
        # The load balancer is not known yet: only the values are checked here, the traffic path at synth.
        problems = rollout_problems(plan, has_load_balancer=True, has_service_connect=True)
        if problems:
            raise rules.ROLLOUT_VALUE.error(where, "; ".join(problems))
        for name, value in (
            ("percent", plan.canary_percent),
            ("step_percent", plan.linear_step_percent),
        ):
            if value is not None and not math.isfinite(value):
                raise rules.ROLLOUT_VALUE.error(where, f"{name}={value!r}")
        # A percent computed in floating point (0.1 + 0.2) is the multiple of 0.1 it stands for: ECS gets that.
        plan = replace(
            plan,
            canary_percent=_rounded(plan.canary_percent),
            linear_step_percent=_rounded(plan.linear_step_percent),
        )
        if smoke_test is not None and not isinstance(smoke_test, SmokeTest):
            raise rules.WRONG_TYPE.error(
                where, f"smoke_test={smoke_test!r}", expected="smoke_test=SmokeTest(...) or None"
            )
        if alarms is True:
            chosen: RolloutAlarms | None = RolloutAlarms()
        elif alarms is False:
            chosen = None
        elif isinstance(alarms, RolloutAlarms):
            chosen = alarms
        else:
            raise rules.WRONG_TYPE.error(
                where, f"alarms={alarms!r}", expected="alarms=True, False or RolloutAlarms(...)"
            )
        if approval is not None and not isinstance(approval, Approval):
            raise rules.WRONG_TYPE.error(where, f"approval={approval!r}", expected="approval=Approval(...) or None")
        if approval is not None:
            plan = replace(plan, approval=approval.plan)
        return cls(plan, smoke_test, chosen, approval)

    @property
    def native(self) -> bool:
        """Blue/green, canary or linear: ECS runs green next to blue and shifts the traffic itself."""
        return self.plan.native

    @property
    def strategy(self) -> str:
        """``rolling``, ``blue_green``, ``canary`` or ``linear``."""
        return self.plan.strategy

    def __str__(self) -> str:
        plan = self.plan
        if plan.strategy == "rolling":
            return "rolling"
        shift = ""
        if plan.strategy == "canary":
            shift = f" {plan.canary_percent:g} % for {plan.interval_minutes:g} min,"
        elif plan.strategy == "linear":
            shift = f" {plan.linear_step_percent:g} % every {plan.interval_minutes:g} min,"
        waits = f"; {plan.approval}" if plan.approval is not None else ""
        return f"{plan.strategy.replace('_', '/')}{shift} bake {plan.bake_time_minutes:g} min{waits}"
