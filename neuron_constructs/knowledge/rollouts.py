"""How a new model version rolls out on ECS, and the room on the chips that takes, as plain numbers.

A :class:`RolloutPlan` is one of ECS's deployment strategies: ``rolling`` (the rolling update), or one of the native
strategies ``blue_green``, ``canary`` and ``linear`` (``deploymentConfiguration.strategy``). :func:`rollout_problems`
names each value ECS or CloudFormation refuses, :func:`rollout_warnings` what is legal but does nothing useful, and
:func:`peak_room` the chips, NeuronCores, instances, CPU and memory a deployment needs at its peak.

Sources:

* ECS API reference: ``CanaryConfiguration`` (``canaryPercent``: multiples of 0.1 from 0.1 to 100.0;
  ``canaryBakeTimeInMinutes``: 0 to 1440), ``LinearConfiguration`` (``stepPercent``: multiples of 0.1 from 3.0 to
  100.0; ``stepBakeTimeInMinutes``: 0 to 1440, not applied after the last step) and ``DeploymentConfiguration``
  (``bakeTimeInMinutes``: 0 to 1440).
* CloudFormation template reference: ``AWS::ECS::Service CanaryConfiguration`` and ``LinearConfiguration``:
  CloudFormation operations time out after 36 hours, so it rejects a deployment whose calculated time exceeds
  33 hours: ``BakeTimeInMinutes + CanaryBakeTimeInMinutes`` for a canary, ``BakeTimeInMinutes +
  StepBakeTimeInMinutes x steps`` for a linear deployment, where the steps are ``100 / StepPercent - 1`` when it
  divides evenly and ``floor(100 / StepPercent)`` otherwise (both ``ceil(100 / StepPercent) - 1``).
* ECS guide, "Required resources for Amazon ECS blue/green deployments": managed traffic shifting needs Elastic
  Load Balancing or Service Connect; a service without either can use blue/green "but Amazon ECS doesn't manage the
  traffic shift"; and, among the best practices, "Plan for sufficient cluster capacity to handle both service
  revisions during deployment". ECS starts the green revision at the full desired count before any traffic shifts,
  for canary and linear too, so every native strategy holds blue and green together at 100 % each.
* ECS API reference: ``DeploymentConfiguration`` (``maximumPercent`` rounded down, ``minimumHealthyPercent`` rounded
  up) for the rolling update: :func:`most_running` and :func:`fewest_running`, which the NEURON032 and NEURON040
  checks share.

:func:`rollout_timeline` lays a native rollout out in minutes, phase by phase, and :func:`bake_cost` prices the
second set of instances it holds. The phases are ECS's lifecycle stages (ECS API reference
``DeploymentLifecycleHook``, ``lifecycleStages``; ECS guide, "Lifecycle hooks for Amazon ECS service deployments" and
"Amazon ECS blue/green service deployments workflow"): ``SCALE_UP`` (green starts at the full desired count while
blue takes 100 % of production traffic), ``TEST_TRAFFIC_SHIFT`` and ``POST_TEST_TRAFFIC_SHIFT`` (green takes the
test traffic; the smoke test's hook runs at the second), ``PRODUCTION_TRAFFIC_SHIFT`` (green's share of production
traffic grows to 100 %), ``BAKE_TIME`` ("the duration when both blue and green service revisions are running
simultaneously after the production traffic has shifted") and ``CLEAN_UP`` (blue stops). On Neuron the first
phase is long: instances launch, then each green copy downloads, compiles (or loads compiled graphs) and loads its
model onto the chips; :data:`~neuron_constructs.serving.listeners.MODEL_START_GRACE_PERIOD` (30 minutes) is the
allowance the library gives that start, and serving/listeners.py cites the figures behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from neuron_constructs.knowledge.approvals import ApprovalPlan
from neuron_constructs.knowledge.catalog import NeuronInstanceType

__all__ = [
    "CLOUDFORMATION_DEPLOYMENT_MINUTES",
    "MAX_WAIT_MINUTES",
    "NATIVE_STRATEGIES",
    "SCALE_IN_MINUTES",
    "BakeCost",
    "RolloutPhase",
    "RolloutPlan",
    "RolloutRoom",
    "RolloutTimeline",
    "Strategy",
    "bake_cost",
    "deployment_minutes",
    "fewest_running",
    "linear_steps",
    "most_running",
    "peak_room",
    "rollout_problems",
    "rollout_timeline",
    "rollout_warnings",
    "shown",
    "tenths_of",
]

Strategy = Literal["rolling", "blue_green", "canary", "linear"]
NATIVE_STRATEGIES: frozenset[str] = frozenset({"blue_green", "canary", "linear"})
"""The strategies ECS runs itself: green at 100 % next to blue until the bake time ends."""

MAX_WAIT_MINUTES = 1440
"""The most minutes ECS takes for ``bakeTimeInMinutes``, ``canaryBakeTimeInMinutes`` and ``stepBakeTimeInMinutes``."""
CLOUDFORMATION_DEPLOYMENT_MINUTES = 33 * 60
"""CloudFormation rejects a canary or linear deployment whose calculated time exceeds 33 hours."""

DEFAULT_BAKE_MINUTES = 10
DEFAULT_CANARY_PERCENT = 10.0
DEFAULT_LINEAR_STEP_PERCENT = 25.0
DEFAULT_INTERVAL_MINUTES = 5


@dataclass(frozen=True)
class RolloutPlan:
    """One deployment strategy with its numbers (minutes and percents, as ECS takes them).

    Build it with :meth:`rolling`, :meth:`blue_green`, :meth:`canary` or :meth:`linear`; the constructors take any
    number, :func:`rollout_problems` says which ECS refuses.
    """

    strategy: Strategy
    bake_time_minutes: float | None = None
    """``bakeTimeInMinutes``: how long blue stays next to green after all traffic shifted (native strategies)."""
    canary_percent: float | None = None
    """``canaryPercent``: the share of production traffic green takes first (canary)."""
    linear_step_percent: float | None = None
    """``stepPercent``: the share of production traffic each step shifts (linear)."""
    interval_minutes: float | None = None
    """``canaryBakeTimeInMinutes`` (canary) or ``stepBakeTimeInMinutes`` (linear): the wait between shifts."""
    approval: ApprovalPlan | None = None
    """A pause hook: the deployment waits at its stage for a person (native strategies)."""

    @classmethod
    def rolling(cls) -> RolloutPlan:
        """ECS's rolling update: today's behaviour and the default."""
        return cls("rolling")

    @classmethod
    def blue_green(cls, *, bake_time_minutes: float = DEFAULT_BAKE_MINUTES) -> RolloutPlan:
        """All traffic to green at once, blue kept ``bake_time_minutes`` for a rollback."""
        return cls("blue_green", bake_time_minutes=bake_time_minutes)

    @classmethod
    def canary(
        cls,
        *,
        percent: float = DEFAULT_CANARY_PERCENT,
        interval_minutes: float = DEFAULT_INTERVAL_MINUTES,
        bake_time_minutes: float = DEFAULT_BAKE_MINUTES,
    ) -> RolloutPlan:
        """``percent`` of the traffic to green for ``interval_minutes``, then the rest, then the bake time."""
        return cls(
            "canary", bake_time_minutes=bake_time_minutes, canary_percent=percent, interval_minutes=interval_minutes
        )

    @classmethod
    def linear(
        cls,
        *,
        step_percent: float = DEFAULT_LINEAR_STEP_PERCENT,
        interval_minutes: float = DEFAULT_INTERVAL_MINUTES,
        bake_time_minutes: float = DEFAULT_BAKE_MINUTES,
    ) -> RolloutPlan:
        """``step_percent`` more of the traffic to green every ``interval_minutes``, then the bake time."""
        return cls(
            "linear",
            bake_time_minutes=bake_time_minutes,
            linear_step_percent=step_percent,
            interval_minutes=interval_minutes,
        )

    @property
    def native(self) -> bool:
        """Whether ECS runs the strategy itself (blue/green, canary, linear), green next to blue."""
        return self.strategy in NATIVE_STRATEGIES

    @property
    def shifts_gradually(self) -> bool:
        """Canary or linear: ECS moves production traffic in parts, through a load balancer or Service Connect."""
        return self.strategy in ("canary", "linear")


FLOAT_NOISE_TENTHS = 1e-9
"""How far from a whole number of tenths a percent may be and still count as that multiple of 0.1: what binary
floating point leaves of a value computed from tenths (``0.1 + 0.2`` is 0.30000000000000004, ``0.1 * 33`` is
3.3000000000000003), and nothing a person writes."""


def tenths_of(value: float) -> int | None:
    """``value`` in tenths when it is a multiple of 0.1, as written (``0.3``) or computed in floating point
    (``0.1 + 0.2``, within ``FLOAT_NOISE_TENTHS``), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    try:
        tenths = Decimal(str(value)) * 10
    except (InvalidOperation, ValueError):
        return None
    if not tenths.is_finite():
        return None
    nearest = tenths.to_integral_value()
    return int(nearest) if abs(tenths - nearest) <= Decimal(str(FLOAT_NOISE_TENTHS)) else None


def shown(value: float) -> str:
    """``value`` as a person reads it (``%g``), or all its digits where ``%g`` would round it to another number."""
    short = f"{value:g}"
    try:
        return short if float(short) == value else repr(value)
    except (TypeError, ValueError):
        return repr(value)


def linear_steps(step_percent: float) -> int:
    """The steps CloudFormation counts the step bake time for: ``ceil(100 / step_percent) - 1`` (no bake time
    after the last shift reaches 100 %); ``step_percent`` a multiple of 0.1 above 0."""
    tenths = tenths_of(step_percent)
    if tenths is None or tenths <= 0:
        raise ValueError(f"step_percent must be a positive multiple of 0.1, not {step_percent!r}")
    return -(-1000 // tenths) - 1


def deployment_minutes(plan: RolloutPlan) -> float | None:
    """CloudFormation's calculated time of a canary (bake + canary bake) or linear deployment (bake + step bake x
    :func:`linear_steps`); ``None`` for the other strategies, which it does not limit."""
    bake = plan.bake_time_minutes or 0
    interval = plan.interval_minutes or 0
    if plan.strategy == "canary":
        return bake + interval
    if plan.strategy == "linear" and plan.linear_step_percent is not None:
        return bake + interval * linear_steps(plan.linear_step_percent)
    return None


def _minutes_problem(value: float | None, field: str, what: str, fix: str) -> str | None:
    if value is None:
        return None
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_WAIT_MINUTES:
        return (
            f"{what} of {shown(value)} minutes: ECS takes {field} as whole minutes from 0 to {MAX_WAIT_MINUTES} "
            f"(24 hours); pass {fix} between 0 and {MAX_WAIT_MINUTES} whole minutes"
        )
    return None


def _percent_problem(value: float, field: str, what: str, lowest_tenths: int, fix: str) -> str | None:
    tenths = tenths_of(value)
    if tenths is None or not lowest_tenths <= tenths <= 1000:
        lowest = f"{lowest_tenths / 10:.1f}"
        return (
            f"{what} of {shown(value)} %: ECS takes {field} as a multiple of 0.1 from {lowest} to 100.0; pass {fix} "
            f"between {lowest} and 100.0 in steps of 0.1"
        )
    return None


def rollout_problems(plan: RolloutPlan, *, has_load_balancer: bool, has_service_connect: bool) -> list[str]:
    """Each value of ``plan`` ECS or CloudFormation refuses, as a sentence naming the value, the rule and the fix.

    ECS API reference ``CanaryConfiguration``, ``LinearConfiguration`` and ``DeploymentConfiguration``;
    CloudFormation's 33-hour limit from ``AWS::ECS::Service CanaryConfiguration``/``LinearConfiguration``; a canary
    or linear deployment shifts traffic through Elastic Load Balancing or Service Connect (ECS guide, "Required
    resources for Amazon ECS blue/green deployments").
    """
    problems: list[str] = []
    if not plan.native:
        return problems
    for value, field, what, fix in (
        (plan.bake_time_minutes, "bakeTimeInMinutes", "a bake time", "bake_time"),
        (
            plan.interval_minutes,
            "canaryBakeTimeInMinutes" if plan.strategy == "canary" else "stepBakeTimeInMinutes",
            "an interval",
            "interval",
        ),
    ):
        problem = _minutes_problem(value, field, what, fix)
        if problem:
            problems.append(problem)
    if plan.strategy == "canary" and plan.canary_percent is not None:
        problem = _percent_problem(plan.canary_percent, "canaryPercent", "a canary percent", 1, "percent")
        if problem:
            problems.append(problem)
    if plan.strategy == "linear" and plan.linear_step_percent is not None:
        problem = _percent_problem(plan.linear_step_percent, "stepPercent", "a linear step", 30, "step_percent")
        if problem:
            problems.append(problem)
    if not problems:
        total = deployment_minutes(plan)
        if total is not None and total > CLOUDFORMATION_DEPLOYMENT_MINUTES:
            name = "canary" if plan.strategy == "canary" else "linear"
            formula = (
                f"bake time {plan.bake_time_minutes or 0:g} + interval {plan.interval_minutes or 0:g}"
                if plan.strategy == "canary"
                else f"bake time {plan.bake_time_minutes or 0:g} + interval {plan.interval_minutes or 0:g} x "
                f"{linear_steps(plan.linear_step_percent or 100)} steps"
            )
            problems.append(
                f"a {name} deployment of {total:g} minutes ({formula}): CloudFormation rejects a {name} deployment "
                f"whose calculated time exceeds 33 hours ({CLOUDFORMATION_DEPLOYMENT_MINUTES} minutes), since its "
                f"operations time out after 36; shorten the bake time or the interval"
                + (", or take larger steps" if plan.strategy == "linear" else "")
                + f" to {CLOUDFORMATION_DEPLOYMENT_MINUTES} minutes or less"
            )
    if plan.shifts_gradually and not (has_load_balancer or has_service_connect):
        problems.append(
            f"a {plan.strategy} rollout of a service with neither a load balancer nor Service Connect: ECS shifts "
            "production traffic in parts only through Elastic Load Balancing or Service Connect; put the service "
            "behind a load balancer or Service Connect, or roll it out blue/green or rolling"
        )
    return problems


def rollout_warnings(plan: RolloutPlan, *, has_load_balancer: bool, has_service_connect: bool) -> list[str]:
    """What ``plan`` does that is legal but shifts nothing: a blue/green deployment of a service with neither a load
    balancer nor Service Connect starts green and stops blue, but no traffic moves from one to the other (ECS guide,
    "Required resources for Amazon ECS blue/green deployments")."""
    if plan.strategy == "blue_green" and not (has_load_balancer or has_service_connect):
        return [
            "a blue/green rollout of a service with neither a load balancer nor Service Connect: ECS starts the green "
            "revision next to the blue one but manages no traffic shift between them, so clients keep whatever "
            "address they found; put the service behind a load balancer or Service Connect, or roll it out rolling"
        ]
    return []


def most_running(tasks: int, maximum_percent: int) -> int:
    """The most tasks a rolling update runs: ``maximumPercent`` of ``tasks``, rounded down."""
    return tasks * maximum_percent // 100


def fewest_running(tasks: int, minimum_healthy_percent: int) -> int:
    """The fewest tasks a rolling update keeps running: ``minimumHealthyPercent`` of ``tasks``, rounded up."""
    return -(-tasks * minimum_healthy_percent // 100)


@dataclass(frozen=True)
class RolloutRoom:
    """What one deployment of a service needs at its peak, on one instance type."""

    strategy: Strategy
    instance_type: str
    copies_per_instance: int
    tasks: int
    """Copies running at the peak: blue and green for a native strategy, the desired count (plus one when the
    minimum healthy percent stops none) for a rolling update."""
    chips: int
    """Neuron chips those copies hold (for NeuronCore-sized copies: the chips their cores fill, rounded up per
    instance)."""
    cores: int
    """NeuronCores those copies hold."""
    instances: int
    """Instances those copies need, ``copies_per_instance`` on each."""
    cpu: int
    """CPU units, 1024 a vCPU."""
    memory_mib: int

    def fits(self, max_instances: int) -> bool:
        """Whether a capacity that launches at most ``max_instances`` instances holds the peak."""
        return self.instances <= max_instances

    def shortfall(self, max_instances: int, capacity: str = "the capacity") -> str | None:
        """The sentence with the numbers when ``capacity`` cannot hold the peak, else ``None``."""
        if self.fits(max_instances):
            return None
        when = (
            "blue and green together, each at the full desired count:"
            if self.strategy in NATIVE_STRATEGIES
            else "at its peak"
        )
        return (
            f"a {self.strategy.replace('_', '/')} deployment runs {when} {self.tasks} copies holding {self.chips} "
            f"chips and {self.cores} NeuronCores, {self.cpu} CPU units and {self.memory_mib} MiB, which take "
            f"{self.instances} {self.instance_type} instances at {self.copies_per_instance} "
            f"{'copy' if self.copies_per_instance == 1 else 'copies'} per instance, but "
            f"{capacity} launches at most {max_instances}; raise its max_capacity to {self.instances} or more"
        )


def peak_room(
    plan: RolloutPlan,
    instance: NeuronInstanceType,
    *,
    desired: int,
    copies_per_instance: int,
    cpu: int,
    memory_mib: int,
    chips: int | None = None,
    cores: int | None = None,
    lnc: int | None = None,
    minimum_healthy_percent: int = 100,
    maximum_percent: int = 200,
) -> RolloutRoom:
    """The room a deployment of ``desired`` copies (each ``chips`` chips or ``cores`` NeuronCores, ``cpu`` units and
    ``memory_mib``) needs on ``instance``, ``copies_per_instance`` to an instance as the service places them.

    Native strategies (blue/green, canary, linear): green at the full desired count next to blue, so twice the
    steady state (ECS guide: "Plan for sufficient cluster capacity to handle both service revisions during
    deployment"). Rolling: the desired count when ``minimum_healthy_percent`` lets ECS stop a task
    (:func:`fewest_running` below ``desired``), else one copy more, which ECS can start only if ``maximum_percent``
    leaves room (NEURON040 refuses it otherwise); the same room NEURON032 checks.

    Raises ``ValueError`` when ``copies_per_instance`` copies would hold a chip or core twice.
    """
    if (chips is None) == (cores is None):
        raise ValueError("pass exactly one of chips= and cores= per copy")
    if desired < 0 or copies_per_instance < 1 or cpu < 0 or memory_mib < 0:
        raise ValueError("desired, cpu and memory_mib must be 0 or more and copies_per_instance 1 or more")
    per_chip = instance.cores_per_chip(lnc)
    if chips is not None:
        if chips < 1 or copies_per_instance * chips > instance.chips:
            raise ValueError(
                f"{copies_per_instance} copies of {chips} chips do not fit the {instance.chips} chips of "
                f"{instance.name}"
            )
        copy_cores = chips * per_chip
    else:
        cores = cores or 0
        if cores < 1 or copies_per_instance * cores > instance.cores(lnc):
            raise ValueError(
                f"{copies_per_instance} copies of {cores} NeuronCores do not fit the {instance.cores(lnc)} "
                f"NeuronCores of {instance.name}"
            )
        copy_cores = cores
    if plan.native:
        tasks = 2 * desired
    elif desired == 0 or fewest_running(desired, minimum_healthy_percent) < desired:
        tasks = desired
    else:
        tasks = desired + 1
    instances = -(-tasks // copies_per_instance)
    if chips is not None:
        held_chips = tasks * chips
    else:
        full, rest = divmod(tasks, copies_per_instance)
        held_chips = full * math.ceil(copies_per_instance * copy_cores / per_chip) + math.ceil(
            rest * copy_cores / per_chip
        )
    return RolloutRoom(
        strategy=plan.strategy,
        instance_type=instance.name,
        copies_per_instance=copies_per_instance,
        tasks=tasks,
        chips=held_chips,
        cores=tasks * copy_cores,
        instances=instances,
        cpu=tasks * cpu,
        memory_mib=tasks * memory_mib,
    )


# ----------------------------------------------------------------- timeline ---

SCALE_IN_MINUTES = 15.0
"""Minutes the instances blue leaves empty keep running after ``CLEAN_UP``, by default: the capacity provider's
managed scaling removes them through a target tracking policy on ``CapacityProviderReservation`` (ECS guide,
"Automatically manage Amazon ECS capacity with cluster auto scaling"), whose scale-in waits about 15 minutes below
the target (the scale-in delay of ECS cluster auto scaling that AWS re:Post answers describe). An estimate, not an
AWS figure: pass your own to :func:`rollout_timeline` and :func:`bake_cost`."""


@dataclass(frozen=True)
class RolloutPhase:
    """One stretch of a native rollout: what runs from ``start_minutes`` to ``end_minutes`` after it starts."""

    stage: str
    """The ECS lifecycle stage(s) of the stretch, e.g. ``SCALE_UP`` or ``PRODUCTION_TRAFFIC_SHIFT``."""
    what: str
    """What happens, as a sentence."""
    start_minutes: float
    end_minutes: float
    blue_copies: int
    """Copies of the old revision running."""
    green_copies: int
    """Copies of the new revision running (starting, during ``SCALE_UP``)."""
    green_percent: float
    """The share of production traffic green takes, 0 to 100."""

    @property
    def minutes(self) -> float:
        """How long the stretch lasts."""
        return self.end_minutes - self.start_minutes


@dataclass(frozen=True)
class RolloutTimeline:
    """A native rollout in order, from the start of the deployment to the end of blue's scale-in."""

    plan: RolloutPlan
    desired: int
    phases: tuple[RolloutPhase, ...]

    @property
    def deployment_minutes(self) -> float:
        """From the start to the end of the bake time, when ECS stops blue: green's start, the smoke test, the
        traffic shifts and the bake time."""
        return next(p.end_minutes for p in self.phases if p.stage == "BAKE_TIME")

    @property
    def end_minutes(self) -> float:
        """From the start until blue's empty instances are gone."""
        return self.phases[-1].end_minutes

    def at(self, minute: float) -> RolloutPhase:
        """The phase running at ``minute`` (the later one at a boundary, the last one at the end)."""
        for phase in self.phases:
            if phase.start_minutes <= minute < phase.end_minutes:
                return phase
        if minute == self.end_minutes:
            return self.phases[-1]
        raise ValueError(f"minute {minute:g} is outside the rollout's 0 to {self.end_minutes:g} minutes")


def _percent_steps(plan: RolloutPlan) -> list[float]:
    """Green's share of production traffic after each shift that is followed by an interval (canary, linear)."""
    if plan.strategy == "canary":
        return [plan.canary_percent if plan.canary_percent is not None else DEFAULT_CANARY_PERCENT]
    if plan.strategy == "linear":
        step = plan.linear_step_percent if plan.linear_step_percent is not None else DEFAULT_LINEAR_STEP_PERCENT
        tenths = tenths_of(step)
        if tenths is None or tenths <= 0:
            raise ValueError(f"step_percent must be a positive multiple of 0.1, not {step!r}")
        return [k * tenths / 10 for k in range(1, linear_steps(step) + 1)]
    return []


def _minutes(value: float | None, name: str) -> float:
    minutes = 0.0 if value is None else float(value)
    if not (math.isfinite(minutes) and minutes >= 0):
        raise ValueError(f"{name} must be 0 or more minutes, not {value!r}")
    return minutes


def rollout_timeline(
    plan: RolloutPlan,
    *,
    start_minutes: float,
    desired: int = 1,
    smoke_test_minutes: float | None = None,
    scale_in_minutes: float = SCALE_IN_MINUTES,
) -> RolloutTimeline:
    """The phases of a native rollout of ``desired`` copies, contiguous from minute 0.

    * ``SCALE_UP`` for ``start_minutes``: the capacity launches instances for green and every green copy starts -
      image, model download, Neuron compile or compiled graphs, load onto the chips - until its target group's
      health check passes; blue serves all production traffic.
    * ``TEST_TRAFFIC_SHIFT`` / ``POST_TEST_TRAFFIC_SHIFT`` for ``smoke_test_minutes`` (only when given): the test
      rule points at green and the smoke test's hook sends its request.
    * ``PRODUCTION_TRAFFIC_SHIFT``, once per shift that is followed by an interval: a canary's share for the
      interval; each linear step short of 100 % for the interval. A blue/green shift is immediate.
    * ``BAKE_TIME``: green takes 100 %, blue stays for the bake time.
    * ``CLEAN_UP`` for ``scale_in_minutes``: ECS stops blue; its instances run empty until the capacity removes
      them (:data:`SCALE_IN_MINUTES`).
    * With the plan's ``approval``, a wait at its stage for its whole timeout (the longest it can take: nobody
      answered), before every production shift at ``PRE_PRODUCTION_TRAFFIC_SHIFT``.

    Raises ``ValueError`` for a rolling plan (it replaces tasks in place, with no second revision held) or a
    negative count or duration.
    """
    if not plan.native:
        raise ValueError(f"a timeline is of a native rollout (blue_green, canary, linear), not {plan.strategy!r}")
    if isinstance(desired, bool) or not isinstance(desired, int) or desired < 0:
        raise ValueError(f"desired must be a whole number 0 or more, not {desired!r}")
    start = _minutes(start_minutes, "start_minutes")
    scale_in = _minutes(scale_in_minutes, "scale_in_minutes")
    interval = _minutes(plan.interval_minutes, "the interval")
    bake = _minutes(plan.bake_time_minutes, "the bake time")
    phases: list[RolloutPhase] = []

    approval = plan.approval

    def add(stage: str, what: str, minutes: float, blue: int, percent: float) -> None:
        begin = phases[-1].end_minutes if phases else 0.0
        phases.append(RolloutPhase(stage, what, begin, begin + minutes, blue, desired, percent))

    def wait_at(stage: str, blue: int, percent: float) -> None:
        if approval is not None and approval.stage == stage:
            action = "rolls back" if approval.on_timeout == "ROLLBACK" else "goes on"
            add(
                f"{stage} (approval)",
                f"the deployment waits for neuron-ecs rollout approve (or rollback); unanswered, it {action} after "
                f"{approval.timeout_minutes:g} min",
                _minutes(approval.timeout_minutes, "the approval's timeout"),
                blue,
                percent,
            )

    wait_at("RECONCILE_SERVICE", desired, 0.0)
    wait_at("PRE_SCALE_UP", desired, 0.0)
    add(
        "SCALE_UP",
        "instances launch for green; every green copy downloads, compiles or loads its model onto the chips until "
        "its health check passes; blue serves all production traffic",
        start,
        desired,
        0.0,
    )
    wait_at("POST_SCALE_UP", desired, 0.0)
    if smoke_test_minutes is not None:
        add(
            "TEST_TRAFFIC_SHIFT, POST_TEST_TRAFFIC_SHIFT",
            "the test listener rule points at green and the smoke test sends its request; no production traffic "
            "on green yet",
            _minutes(smoke_test_minutes, "smoke_test_minutes"),
            desired,
            0.0,
        )
    wait_at("POST_TEST_TRAFFIC_SHIFT", desired, 0.0)
    before = 0.0
    for percent in _percent_steps(plan):
        wait_at("PRE_PRODUCTION_TRAFFIC_SHIFT", desired, before)
        add(
            "PRODUCTION_TRAFFIC_SHIFT",
            f"green takes {percent:g} % of production traffic for the interval; the deployment alarms watch it",
            interval,
            desired,
            percent,
        )
        before = percent
    wait_at("PRE_PRODUCTION_TRAFFIC_SHIFT", desired, before)
    wait_at("POST_PRODUCTION_TRAFFIC_SHIFT", desired, 100.0)
    add(
        "BAKE_TIME",
        "green takes all production traffic; blue stays at the full count for an immediate rollback",
        bake,
        desired,
        100.0,
    )
    add(
        "CLEAN_UP",
        "ECS stops blue; the instances it leaves empty run until the capacity scales them in",
        scale_in,
        0,
        100.0,
    )
    return RolloutTimeline(plan, desired, tuple(phases))


@dataclass(frozen=True)
class BakeCost:
    """The second set of instances a native rollout holds, in instance-hours (and dollars at a given price)."""

    extra_instances: int
    """Instances green needs beyond those blue runs on."""
    overlap_minutes: float
    """How long they run: from green's launch until blue's empty instances are gone."""
    bake_minutes: float
    """The part of the overlap that is the bake time."""
    hourly_price: float | None = None

    @property
    def instance_hours(self) -> float:
        """``extra_instances`` x ``overlap_minutes``, in hours."""
        return self.extra_instances * self.overlap_minutes / 60

    @property
    def bake_instance_hours(self) -> float:
        """The share of :attr:`instance_hours` the bake time adds."""
        return self.extra_instances * self.bake_minutes / 60

    @property
    def dollars(self) -> float | None:
        """:attr:`instance_hours` at ``hourly_price``, or ``None`` without a price."""
        return None if self.hourly_price is None else self.instance_hours * self.hourly_price

    @property
    def bake_dollars(self) -> float | None:
        """:attr:`bake_instance_hours` at ``hourly_price``, or ``None`` without a price."""
        return None if self.hourly_price is None else self.bake_instance_hours * self.hourly_price


def bake_cost(
    plan: RolloutPlan,
    room: RolloutRoom,
    *,
    start_minutes: float,
    instance_hourly_price: float | None = None,
    smoke_test_minutes: float | None = None,
    scale_in_minutes: float = SCALE_IN_MINUTES,
) -> BakeCost:
    """What a native rollout of ``plan`` with the peak ``room`` (:func:`peak_room`) holds beyond the steady state:
    the instances green needs beyond blue's, for the whole of :func:`rollout_timeline`, and the bake time's part.

    Blue runs ``room.tasks / 2`` copies on ``ceil(copies / copies_per_instance)`` instances; the peak needs
    ``room.instances``; the difference runs from minute 0 (green's instances launch) to the end of ``CLEAN_UP``
    (blue's empty instances are removed). Raises ``ValueError`` for a rolling plan or a room of another strategy.
    """
    if room.strategy != plan.strategy:
        raise ValueError(f"the room is of a {room.strategy} deployment, the plan {plan.strategy}")
    if instance_hourly_price is not None and not (math.isfinite(instance_hourly_price) and instance_hourly_price >= 0):
        raise ValueError(f"instance_hourly_price must be 0 or more, not {instance_hourly_price!r}")
    desired = room.tasks // 2
    timeline = rollout_timeline(
        plan,
        start_minutes=start_minutes,
        desired=desired,
        smoke_test_minutes=smoke_test_minutes,
        scale_in_minutes=scale_in_minutes,
    )
    steady = -(-desired // room.copies_per_instance)
    return BakeCost(
        extra_instances=room.instances - steady,
        overlap_minutes=timeline.end_minutes,
        bake_minutes=_minutes(plan.bake_time_minutes, "the bake time"),
        hourly_price=instance_hourly_price,
    )
