"""What ``precompile=`` adds to a :class:`~neuron_constructs.serving.services.NeuronService` or a fleet model: the
checks of the model against CPU compilation, the :class:`~neuron_constructs.serving.precompile_resources.PrecompileJob`,
its place before the new tasks (a ``PRE_SCALE_UP`` hook on native rollouts, a custom resource the services depend on
otherwise) and the cache-hit-only variables of the production copies.

Refused at the call, naming the model and the fix:

* no compile cache on the model's Neuron container: the job would have nowhere to write (NEURON164);
* a target that is not the capacity's instance family's (NEURON160);
* speculative decoding in the container's command (``--speculative-config``, ``--speculative-model``,
  ``--num-speculative-tokens``), or ``VLLM_NEURON_CPU_COMPILE`` / ``VLLM_NEURON_CPU_MODE`` already set on it
  (NEURON161);
* what a Batch job cannot run as the service does (NEURON166): a container with an ``entry_point`` other than the
  image's own as the image table records it (``NeuronImage.entry_point``), alone or inside the driver start check: a
  job definition takes no entry point. With the image's own, the job runs the command under it, without the driver
  start check (a CPU host has no Neuron driver to check); an image whose engine documents no CPU compilation (NxD
  Inference, torch-neuronx, optimum-neuron, torch-neuron: vLLM Neuron's is the one documented); a cache on an instance
  mount (FSx for Lustre), which no Batch job mounts; a task definition with more than one Neuron container;
* on a rolling deployment or a fleet, a job ``timeout`` beyond what the custom resource waits (NEURON165).

Warned (NEURON162): a Neuron container that carries the cache-hit-only variables without ``precompile=``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import AspectPriority, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.l1_overrides import containers_as_synthesized
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute import driver_check as start_check
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.model_sources import CompileCache, compile_cache_of
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import cpu_compile, engines, image_support, rules
from neuron_constructs.serving.precompile import Precompile
from neuron_constructs.serving.precompile_resources import (
    CUSTOM_RESOURCE_QUEUE_ALLOWANCE_SECONDS,
    PrecompileJob,
    time_out_hook,
)

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["check_precompile", "precompile_model", "precompile_service", "warn_cache_hit_only"]


def _environment(rendered: Any) -> dict[str, str]:
    """The literal variables of a container's rendering (``render_container_definition()``)."""
    return {pair.name: pair.value for pair in rendered.environment or [] if not is_token(pair.value)}


def _families(capacity: object, task_family: str | None) -> set[str]:
    """The instance families the model's tasks run on."""
    if task_family is not None:
        return {task_family}
    if isinstance(capacity, ManagedInstancesCapacity):
        return {t.family for t in capacity.instance_types}
    if isinstance(capacity, AutoScalingCapacity):
        return {capacity.instance_type.to_string().split(".", 1)[0]}
    return set()


def check_precompile(
    where: str,
    container: ecs.ContainerDefinition,
    precompile: Precompile,
    families: set[str],
    *,
    custom_resource: bool,
) -> tuple[CompileCache, str, str, int]:
    """The checks of the module docstring; the cache, the model it keys and the target."""
    if not isinstance(precompile, Precompile):
        raise rules.WRONG_TYPE.error(where, f"precompile={precompile!r}", expected="precompile=Precompile(...)")
    applied = compile_cache_of(container)
    if applied is None:
        raise rules.PRECOMPILE_WITHOUT_CACHE.error(
            where, f"container {container.container_name!r} has no compile cache for the job to write to"
        )
    cache, model = applied
    if cache.mount_path is not None:
        raise rules.PRECOMPILE_INPUT.error(
            where,
            f"the compile cache is the instances' mount {cache.mount_path}, which a Batch job does not mount",
            fix="give the model CompileCache.in_new_file_system(...) (Amazon EFS), which the job mounts too",
        )
    name = container.image_name
    found = None if is_token(name) else image_support.table_image(name)
    engine = None if found is None else found[1].engine
    if engine is not None and engine.cache != engines.FILE_TIERS:
        raise rules.PRECOMPILE_INPUT.error(
            where,
            f"the image's engine is {engine.name}, for which no source documents a CPU compile mode (vLLM Neuron's "
            "VLLM_NEURON_CPU_COMPILE is the one documented)",
            fix="drop precompile= for this model; its compile cache still keeps what its first start compiles",
        )
    rendered: Any = container.render_container_definition()
    skipped = _command_skipped(
        list(rendered.entry_point or []),
        list(rendered.command or []),
        None if found is None else found[1].entry_point,
    )
    if skipped is None:
        raise rules.PRECOMPILE_INPUT.error(
            where,
            f"container {container.container_name!r} sets an entry point (given, or the driver start check's) that "
            "is not the image's own as the image table records it, and an AWS Batch job definition sets none",
            fix="drop entry_point= (and driver_check=) and put the server's arguments in command=, so the job runs "
            "the image's own entry point as the service does",
        )
    environment = _environment(rendered)
    for variable in (cpu_compile.CPU_COMPILE_VARIABLE, cpu_compile.CPU_MODE_VARIABLE):
        if environment.get(variable) not in (None, "", "0"):
            raise rules.PRECOMPILE_MODE.error(
                where, f"{variable}={environment[variable]} is already set on container {container.container_name!r}"
            )
    speculative = cpu_compile.speculative_decoding(
        [part for part in rendered.command or [] if not is_token(part)], environment
    )
    if speculative is not None:
        raise rules.PRECOMPILE_MODE.error(
            where, f"container {container.container_name!r} serves with speculative decoding ({speculative})"
        )
    targets = {cpu_compile.target_of_family(family) for family in families}
    if None in targets or len(targets) != 1:
        raise rules.PRECOMPILE_TARGET.error(
            where,
            f"the capacity's instance families {', '.join(sorted(families)) or '(unknown)'} have no one neuronx-cc "
            "target CPU compilation serves",
            target="trn2",
        )
    target = next(iter(targets))
    assert target is not None
    if precompile.target is not None and precompile.target != target:
        raise rules.PRECOMPILE_TARGET.error(
            where,
            f"target={precompile.target!r}, but the model runs on {', '.join(sorted(families))}",
            target=target,
        )
    if custom_resource:
        longest = cpu_compile.CUSTOM_RESOURCE_LIMIT_SECONDS - CUSTOM_RESOURCE_QUEUE_ALLOWANCE_SECONDS
        if precompile.timeout_seconds > longest:
            raise rules.PRECOMPILE_BEYOND_CUSTOM_RESOURCE.error(
                where,
                f"timeout={precompile.timeout.to_human_string()} on a deployment CloudFormation orders (rolling or a "
                f"fleet), which waits at most {cpu_compile.CUSTOM_RESOURCE_LIMIT_SECONDS} s for the job and its "
                f"queue",
                limit=f"Duration.seconds({longest})",
            )
    return cache, model, target, skipped


def _command_skipped(entry_point: list[str], command: list[str], own: tuple[str, ...] | None) -> int | None:
    """How many leading words of the container's command the job drops so that the image's own entry point runs
    what the service runs: 0 for a container with no entry point, or with the image's own (``own``, from the image
    table); ``len(own)`` for the driver start check's wrapper around the image's own entry point, whose check the job
    leaves out (a CPU host has no Neuron driver to check); ``None`` for any other entry point, which a job
    definition cannot set."""
    if not entry_point:
        return 0
    if own is None:
        return None
    if entry_point == list(own):
        return 0
    if start_check.is_wrapped_start(entry_point) and command[: len(own)] == list(own):
        return len(own)
    return None


def _serve_cache_hit_only(container: ecs.ContainerDefinition, precompile: Precompile) -> None:
    if precompile.cache_hit_only:
        for name, value in cpu_compile.CACHE_HIT_ONLY.items():
            container.add_environment(name, value)


def precompile_service(service: NeuronService, precompile: Precompile) -> PrecompileJob:
    """``precompile`` for ``service``: the job, a ``PRE_SCALE_UP`` hook (native rollouts, the hook's timeout set) or
    a custom resource the service depends on (rolling), and the cache-hit-only variables."""
    where = construct_path(service)
    task_definition = service.task_definition
    if len(task_definition.neuron_containers) != 1:
        raise rules.PRECOMPILE_INPUT.error(
            where,
            f"{construct_path(task_definition)} has {len(task_definition.neuron_containers)} Neuron containers",
            fix="precompile a task definition with one Neuron container (the model server)",
        )
    container = task_definition.neuron_containers[0]
    instance_type = getattr(task_definition, "instance_type", None)
    families = _families(service.capacity, getattr(instance_type, "family", None))
    native = service.rollout.native
    cache, model, target, skipped = check_precompile(where, container, precompile, families, custom_resource=not native)
    job = _job(
        service,
        container,
        cache,
        model,
        precompile,
        target,
        service.cluster.vpc,
        service.cluster.capacity_subnets,
        skipped,
    )
    if native:
        service.service.add_lifecycle_hook(job.hook())
        time_out_hook(service.service, job.function, precompile.hook_timeout_minutes)
        # The first revision too, before CloudFormation creates the service: a copy that starts cache-hit-only
        # before its graphs are cached fails, whether or not ECS runs the hook at the service's first deployment.
        longest = cpu_compile.CUSTOM_RESOURCE_LIMIT_SECONDS - CUSTOM_RESOURCE_QUEUE_ALLOWANCE_SECONDS
        if precompile.timeout_seconds <= longest:
            job.order_before(service.service, every_revision=False)
        else:
            Validations.of(service).add_warning(
                rules.PRECOMPILE_FIRST_DEPLOYMENT.warning_id,
                rules.PRECOMPILE_FIRST_DEPLOYMENT.message(
                    where,
                    f"timeout={precompile.timeout.to_human_string()} is beyond the {longest} s a custom resource "
                    "waits, so the job does not run before the service is created",
                ),
            )
    else:
        job.order_before(service.service)
    _serve_cache_hit_only(container, precompile)
    task_definition.record_precompile(construct_path(job), cache_hit_only=precompile.cache_hit_only)
    return job


def precompile_model(
    owner: Construct,
    container: ecs.ContainerDefinition,
    precompile: Precompile,
    *,
    family: str,
    services: list[Any],
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    copies: list[NeuronTaskDefinition],
) -> PrecompileJob:
    """``precompile`` for a fleet model whose copies run the task definitions ``copies`` (``container`` the first's
    Neuron container): one job, ordered by a custom resource before every copy's service, the cache-hit-only
    variables on every copy, and each copy's task definition recording the precompile for ``neuron-ecs plan
    --startup``."""
    where = construct_path(owner)
    cache, model, target, skipped = check_precompile(where, container, precompile, {family}, custom_resource=True)
    job = _job(owner, container, cache, model, precompile, target, vpc, subnets, skipped)
    job.order_before(*services)
    for copy in copies:
        _serve_cache_hit_only(copy.neuron_containers[0], precompile)
        copy.record_precompile(construct_path(job), cache_hit_only=precompile.cache_hit_only)
    return job


def _job(
    owner: Construct,
    container: ecs.ContainerDefinition,
    cache: CompileCache,
    model: str,
    precompile: Precompile,
    target: str,
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    skipped: int,
) -> PrecompileJob:
    return PrecompileJob(
        owner,
        "Precompile",
        container=container,
        cache=cache,
        cache_model=model,
        precompile=precompile,
        target=target,
        vpc=vpc,
        subnets=subnets,
        model=construct_path(owner),
        command_skipped=skipped,
    )


def warn_cache_hit_only(service: NeuronService) -> None:
    """NEURON162: a Neuron container of ``service`` carries both cache-hit-only variables, and nothing precompiles.
    Judged on the containers as they will synthesize, once the app is complete: variables added to a container after
    the service was made count too."""

    def warn() -> None:
        if service.task_definition.precompiled is not None:  # a fleet precompiles its copies after making them
            return
        rendered = {c.get("name"): c for c in containers_as_synthesized(service.task_definition.task_definition)}
        for container in service.task_definition.neuron_containers:
            pairs = rendered.get(container.container_name, {}).get("environment")
            environment = (
                {p.get("name"): p.get("value") for p in pairs if isinstance(p, dict)} if isinstance(pairs, list) else {}
            )
            if all(environment.get(name) == value for name, value in cpu_compile.CACHE_HIT_ONLY.items()):
                Validations.of(service).add_warning(
                    rules.CACHE_HIT_ONLY_WITHOUT_PRECOMPILE.warning_id,
                    rules.CACHE_HIT_ONLY_WITHOUT_PRECOMPILE.message(
                        construct_path(service),
                        f"container {container.container_name!r} runs cache-hit-only "
                        f"({', '.join(cpu_compile.CACHE_HIT_ONLY)}) and no precompile= fills its cache",
                    ),
                )
                return

    once_before_synthesis(service.service, warn, priority=AspectPriority.READONLY)
