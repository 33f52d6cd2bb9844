"""``Precompile``: a model's Neuron graphs compiled on CPU capacity before any Neuron copy of a new revision starts.

``NeuronService(..., precompile=Precompile())`` and ``NeuronFleet.add_model(..., precompile=Precompile())`` run the
model's own container - the same image, command and environment, read from its container definition, so the model
is defined once - as an AWS Batch job on Fargate (or, :meth:`Precompile.on_ec2`, on a CPU EC2 compute environment),
with vLLM Neuron's CPU compile variables added (:mod:`neuron_constructs.knowledge.cpu_compile`:
``VLLM_NEURON_CPU_COMPILE=1``, ``NEURON_PLATFORM_TARGET_OVERRIDE=<target>``,
``NEURON_LIBTORCH_PARALLEL_COMPILE_WORKERS=<parallel_workers>``), writing the NEFFs to the model's own part of its
:class:`~neuron_constructs.compute.model_sources.CompileCache` (its Amazon EFS access point, mounted where the service
mounts it: ``NEURON_LIBTORCH_REMOTE_CACHE``). vLLM Neuron documents this as its production path: "compile once on
CPU, save to remote cache, execute on Neuron with cache hits" (vLLM Neuron, "CPU Compilation", 2026-06-22).

When it runs (:mod:`~neuron_constructs.serving.precompile_resources`):

* native rollouts (``Rollout.blue_green()``, ``canary()``, ``linear()``): an ECS lifecycle hook at ``PRE_SCALE_UP``,
  where "the green service revision has not started" (ECS API reference, ``DeploymentLifecycleHook``). A Lambda
  function submits the job for the new revision and answers ``IN_PROGRESS`` (ECS calls it again after its
  ``callBackDelay``) until the job ends: ``SUCCEEDED`` lets ECS start green, ``FAILED`` rolls the deployment back
  and blue keeps serving ("Lambda hooks for Amazon ECS service deployments"). The hook times out after
  ``hook_timeout`` (``timeoutInMinutes``, ROLLBACK);
* rolling deployments and fleets, which have no lifecycle hooks: a CloudFormation custom resource served by the same
  function, whose properties hold the job definition's ARN (a new revision of it is an update, which runs the job
  again), and that the services depend on, so CloudFormation updates them only once the job succeeded; the function
  answers it when the job's "Batch Job State Change" event arrives (an EventBridge rule on the job queue). A custom
  resource waits at most 3,600 seconds (``ServiceTimeout``), so a job ``timeout`` beyond that is refused (NEURON165);
* from a pipeline: ``neuron-ecs precompile`` submits the same job of a synthesized model and waits.

Production copies then run cache-hit-only by default (``cache_hit_only=True``): the Neuron container gets
``NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1`` and ``VLLM_NEURON_DISABLE_WARMUP_COMPILE=1``, so a graph the job
did not compile fails the task at startup with a ``RuntimeError`` instead of compiling for minutes; the deployment
circuit breaker or the rollout's alarms roll back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field

from aws_cdk import Duration

from neuron_constructs.base.arguments import is_token, seconds_of
from neuron_constructs.knowledge import cpu_compile, rules

__all__ = ["QUEUE_ALLOWANCE", "Precompile"]

QUEUE_ALLOWANCE = Duration.minutes(30)
"""What the default ``hook_timeout`` adds to the job's ``timeout``: AWS Batch counts an attempt's time from its start,
so the wait for capacity and the image pull come on top."""


def _seconds(where: str, name: str, value: object) -> float:
    """``value`` (a ``Duration``) in seconds: NEURON026 for anything else, NEURON027 for a token."""
    if not isinstance(value, Duration):
        raise rules.WRONG_TYPE.error(where, f"{name}={value!r}", expected=f"{name}=Duration.minutes(...)")
    seconds = seconds_of(value)
    if seconds is None:
        raise rules.TOKEN_NOT_LITERAL.error(where, f"{name} is a CDK token", name=name)
    return seconds


@dataclass(frozen=True)
class Precompile:
    """How a model is compiled on CPU before its Neuron copies start (module docstring).

    ``Precompile(*, vcpus=8, memory_mib=32768, parallel_workers=8, target=None, timeout=Duration.minutes(50),
    hook_timeout=None, callback_delay=Duration.seconds(60), cache_hit_only=True, ephemeral_storage_gib=100)``:

    * ``vcpus``, ``memory_mib``: the job's size on Fargate, 0.25 to 16 vCPUs with the memory Fargate pairs with them
      (:data:`~neuron_constructs.knowledge.cpu_compile.FARGATE_MEMORY_MIB`; 16 vCPUs take up to 120 GiB);
      :meth:`on_ec2` for larger jobs. ``parallel_workers``: ``NEURON_LIBTORCH_PARALLEL_COMPILE_WORKERS`` (vLLM
      Neuron's default is 8; more helps only with more graphs than workers, bounded by CPU and memory);
    * ``target``: the ``neuronx-cc --target`` (``trn2``, ``trn1``, ``inf2``); default the capacity's instance family's,
      and one that is not is refused (NEURON160);
    * ``timeout``: the job's ``attemptDurationSeconds`` (AWS Batch terminates it then), 60 s or more; default 50
      minutes. On a rolling deployment or a fleet it must leave the queue time within the custom resource's hour:
      at most 55 minutes (NEURON165);
    * ``hook_timeout``: on a native rollout, how long ECS waits at ``PRE_SCALE_UP`` before it rolls back (the hook's
      ``timeoutInMinutes``, 1 to 20,160 minutes); default ``timeout`` and :data:`QUEUE_ALLOWANCE` (30 minutes); one
      shorter than ``timeout`` is refused (NEURON163);
    * ``callback_delay``: how long ECS waits between two calls of the hook function while the job runs
      (``callBackDelay``; ECS's own default is 30 s), 1 to 900 s;
    * ``cache_hit_only``: give the production copies the two cache-hit-only variables (default); ``False`` lets a
      copy compile a graph the job missed;
    * ``ephemeral_storage_gib``: the job's Fargate ephemeral storage, 21 to 200 GiB (the model's weights and the
      compiler's work files live there); default 100.

    Refused at the call: a value outside its range (NEURON027) or of the wrong type (NEURON026), a size Fargate does
    not run (NEURON166).
    """

    _: KW_ONLY
    vcpus: float = 8
    memory_mib: int = 32768
    parallel_workers: int = cpu_compile.DEFAULT_PARALLEL_WORKERS
    target: str | None = None
    timeout: Duration = field(default_factory=lambda: Duration.minutes(50))
    hook_timeout: Duration | None = None
    callback_delay: Duration = field(default_factory=lambda: Duration.seconds(60))
    cache_hit_only: bool = True
    ephemeral_storage_gib: int = 100
    instance_types: tuple[str, ...] = ()
    """The CPU instance types of an EC2 compute environment (:meth:`on_ec2`); empty for Fargate."""

    def __post_init__(self) -> None:
        where = "Precompile"
        for name, low, high in (("parallel_workers", 1, 1024), ("ephemeral_storage_gib", 21, 200)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise rules.OUT_OF_RANGE.error(where, f"{name}={value!r}", name=name, minimum=low, maximum=high)
        if isinstance(self.memory_mib, bool) or not isinstance(self.memory_mib, int) or self.memory_mib < 512:
            raise rules.OUT_OF_RANGE.error(
                where, f"memory_mib={self.memory_mib!r}", name="memory_mib", minimum=512, maximum="the job's capacity"
            )
        if isinstance(self.vcpus, bool) or not isinstance(self.vcpus, (int, float)) or not self.vcpus > 0:
            raise rules.OUT_OF_RANGE.error(
                where, f"vcpus={self.vcpus!r}", name="vcpus", minimum="above 0", maximum="the job's capacity"
            )
        if not self.instance_types:
            problem = cpu_compile.fargate_memory_problem(float(self.vcpus), self.memory_mib)
            if problem is not None:
                raise rules.PRECOMPILE_INPUT.error(
                    where,
                    problem,
                    fix="pick a size Fargate runs, or Precompile.on_ec2(instance_types=[...]) for a larger one",
                )
        elif self.vcpus != int(self.vcpus):
            raise rules.PRECOMPILE_INPUT.error(
                where, f"vcpus={self.vcpus!r} on EC2", fix="give whole vCPUs on EC2 (fractions are Fargate's)"
            )
        if self.target is not None and self.target not in set(cpu_compile.TARGETS.values()):
            raise rules.PRECOMPILE_TARGET.error(
                where,
                f"target={self.target!r} is not a neuronx-cc --target CPU compilation serves "
                f"({', '.join(sorted(set(cpu_compile.TARGETS.values())))})",
                target="trn2",
            )
        timeout = _seconds(where, "timeout", self.timeout)
        if timeout < 60 or timeout != int(timeout):
            raise rules.OUT_OF_RANGE.error(
                where, f"timeout={self.timeout.to_human_string()}", name="timeout", minimum="60 s", maximum="any"
            )
        hook = _seconds(where, "hook_timeout", self.hook_timeout_or_default)
        low, high = cpu_compile.HOOK_TIMEOUT_MINUTES
        if hook % 60 or not low <= hook / 60 <= high:
            raise rules.OUT_OF_RANGE.error(
                where,
                f"hook_timeout={self.hook_timeout_or_default.to_human_string()}",
                name="hook_timeout",
                minimum=f"{low} minute",
                maximum=f"{high} minutes, in whole minutes",
            )
        if hook < timeout:
            raise rules.PRECOMPILE_HOOK_TIMEOUT.error(
                where,
                f"hook_timeout={self.hook_timeout_or_default.to_human_string()} is shorter than the job's "
                f"timeout={self.timeout.to_human_string()}",
            )
        delay = _seconds(where, "callback_delay", self.callback_delay)
        if not 1 <= delay <= 900 or delay != int(delay):
            raise rules.OUT_OF_RANGE.error(
                where,
                f"callback_delay={self.callback_delay.to_human_string()}",
                name="callback_delay",
                minimum="1 s",
                maximum="900 s",
            )
        for instance_type in self.instance_types:
            if not isinstance(instance_type, str) or is_token(instance_type) or "." not in instance_type:
                raise rules.WRONG_TYPE.error(
                    where, f"instance_types holds {instance_type!r}", expected="instance type names, e.g. 'c7i.8xlarge'"
                )

    @classmethod
    def on_ec2(
        cls,
        *,
        instance_types: Sequence[str],
        vcpus: int = 32,
        memory_mib: int = 120_000,
        **options: object,
    ) -> Precompile:
        """The job on a managed EC2 compute environment of ``instance_types`` (CPU types, e.g. ``c7i.16xlarge``;
        Batch picks among them), minimum 0 vCPUs so nothing runs between jobs, sized ``vcpus`` and ``memory_mib``
        (the job's own; they must fit one instance). ``options``: the other keywords of :class:`Precompile`."""
        if not instance_types:
            raise rules.WRONG_TYPE.error(
                "Precompile.on_ec2", "instance_types=[]", expected="instance_types=['c7i.16xlarge', ...]"
            )
        return cls(
            vcpus=vcpus,
            memory_mib=memory_mib,
            instance_types=tuple(instance_types),
            **options,  # type: ignore[arg-type]
        )

    @property
    def on_fargate(self) -> bool:
        """Whether the job runs on Fargate (no ``instance_types``)."""
        return not self.instance_types

    @property
    def hook_timeout_or_default(self) -> Duration:
        """``hook_timeout``, or the job's ``timeout`` and :data:`QUEUE_ALLOWANCE` in whole minutes."""
        if self.hook_timeout is not None:
            return self.hook_timeout
        seconds = (seconds_of(self.timeout) or 0) + (seconds_of(QUEUE_ALLOWANCE) or 0)
        return Duration.minutes(math.ceil(seconds / 60))

    @property
    def timeout_seconds(self) -> int:
        """The job's ``attemptDurationSeconds``."""
        return int(self.timeout.to_seconds())

    @property
    def hook_timeout_minutes(self) -> int:
        """The hook's ``timeoutInMinutes``."""
        return int(self.hook_timeout_or_default.to_minutes())

    @property
    def callback_delay_seconds(self) -> int:
        """The hook's ``callBackDelay``."""
        return int(self.callback_delay.to_seconds())
