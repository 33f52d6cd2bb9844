"""What both Neuron task definitions share: :class:`NeuronTaskDefinition` and the ECS task role.

The base holds everything managed allocation (:mod:`.managed`) and manual mapping (:mod:`.manual`) have in
common: the wrapped ``ecs.TaskDefinition``, its log group and roles, sidecars, images (ECR pull, stated size,
Neuron SDK release, support on the family), model artifacts, the compile cache and the Hugging Face token, the
driver start check's wiring, the model name, and the checks on the containers' memory, CPU and environment.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aws_cdk import RemovalPolicy, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import (
    CONTAINER_CPU,
    CONTAINER_MEMORY,
    TASK_CPU,
    TASK_MEMORY,
    aws,
    checked,
    is_token,
)
from neuron_constructs.base.images import container_name_of, grant_ecr_pull, image_name_of
from neuron_constructs.base.l1_overrides import record_intent
from neuron_constructs.base.log_groups import OPERATIONAL_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.roles import ExecutionRole
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.checks.inputs import secret_like
from neuron_constructs.compute import driver_check as start_check
from neuron_constructs.compute.health_checks import model_server_health_check
from neuron_constructs.compute.model_sources import AWS_CLI_IMAGE, HF_TOKEN_VARIABLE, CompileCache, ModelArtifacts
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS, ContainerOptions
from neuron_constructs.compute.startup import Startup
from neuron_constructs.knowledge import image_support, neuron_releases, rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.startup import PRECOMPILED_KEY, STARTUP_KEY
from neuron_constructs.knowledge.vllm_server import ServerPlan, VllmServer, check_server_engine, plan_server
from neuron_constructs.programs.metric_publisher import PROCESS_TAG_VARIABLE

__all__ = [
    "NeuronTaskDefinition",
    "task_role",
]


# The network modes and the ranges of sizes both kinds of task definition check.
MANAGED_INSTANCES_NETWORK_MODES = (ecs.NetworkMode.AWS_VPC, ecs.NetworkMode.HOST)
TASK_RANGES = {"cpu": TASK_CPU, "memory_mib": TASK_MEMORY}
CONTAINER_RANGES = {
    "cpu": CONTAINER_CPU,
    "memory_limit_mib": CONTAINER_MEMORY,
    "memory_reservation_mib": CONTAINER_MEMORY,
}
_ECS_TASKS = "ecs-tasks.amazonaws.com"
_OTHER_ACCELERATOR_OPTIONS = ("gpu_count", "inference_accelerator_resources")


def task_role(scope: Construct, id: str) -> iam.Role:
    """A task role ECS can assume only for tasks of this account and region.

    ECS documents ``aws:SourceAccount`` and ``aws:SourceArn`` (``arn:...:ecs:<region>:<account>:*``)
    on the task role's trust policy against the confused-deputy problem.
    """
    return iam.Role(
        scope,
        id,
        assumed_by=iam.ServicePrincipal(
            _ECS_TASKS,
            conditions={
                "StringEquals": {"aws:SourceAccount": aws().account_id},
                "ArnLike": {"aws:SourceArn": f"arn:{aws().partition}:ecs:{aws().region}:{aws().account_id}:*"},
            },
        ),
    )


class NeuronTaskDefinition(Construct):
    """What both Neuron task definitions share: the wrapped ``ecs.TaskDefinition``,
    a log group for their containers, a task role, and the checks.

    Attributes
    ----------
    task_definition
        The ``ecs.TaskDefinition``.
    log_group
        CloudWatch Logs group every container logs to unless given ``logging=``
        (a new one kept ``log_retention`` and removed as ``log_removal_policy`` says, optionally encrypted with
        ``log_encryption_key``,
        or the ``log_group`` passed in).
    task_role
        The role the containers act as; default a new one ECS assumes only for this
        account's tasks (``aws:SourceAccount`` / ``aws:SourceArn``).
    neuron_containers
        Containers that received Neuron devices, in order.
    model_name
        The model its Neuron containers report as to neuron-monitor (their ``NEURON_PROCESS_TAG``): set by the
        first service that runs it (:meth:`name_model`) or by a ``NEURON_PROCESS_TAG`` in the containers'
        environment; ``None`` until then.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        compatibility: ecs.Compatibility,
        network_mode: ecs.NetworkMode,
        cpu: int | None,
        memory_mib: int | None,
        family: str | None,
        task_role: iam.IRole | None,
        execution_role: iam.IRole | None,
        volumes: Sequence[ecs.Volume] | None,
        placement_constraints: Sequence[ecs.PlacementConstraint] | None,
        log_retention: logs.RetentionDays,
        log_group: logs.ILogGroup | None = None,
        log_encryption_key: kms.IKey | None = None,
        log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
    ) -> None:
        super().__init__(scope, id)
        remember_path(self, scope, id)
        enable_template_checks(scope)
        self.task_role: iam.IRole = task_role or _new_task_role(self)
        self.model_artifacts: list[ModelArtifacts] = []
        """The model artifacts its containers copy, in the order they were added (a warm pool's warm-up copies them
        too)."""
        self.model_volumes: dict[str, ModelArtifacts] = {}
        """The task volume each of them is copied into, by volume name."""
        self.image_sizes_gib: dict[str, float] = {}
        """The image size stated for each container (``image_size_gib=``), by container name, in GiB as the registry
        reports it (a warm pool's root volume check counts it, NEURON091)."""
        self.artifact_sizes_gib: dict[str, float] = {}
        """The size of the model artifacts each sync container copies (``ModelArtifacts(size_gib=)``), by the sync
        container's name."""
        self.startup_seconds: dict[str, dict[str, float]] = {}
        """The start durations stated for each Neuron container (``startup=``), by container name and step."""
        self.precompiled: dict[str, object] | None = None
        """What :meth:`record_precompile` recorded: the construct that builds this model's compiled graphs before any
        copy starts; ``None`` when none does."""
        self.task_definition = ecs.TaskDefinition(
            self,
            "TaskDefinition",
            compatibility=compatibility,
            network_mode=network_mode,
            cpu=str(cpu) if cpu is not None else None,
            memory_mib=str(memory_mib) if memory_mib is not None else None,
            family=family,
            task_role=self.task_role,
            execution_role=execution_role or ExecutionRole(self, "ExecutionRole"),
            volumes=list(volumes) if volumes else None,
            placement_constraints=list(placement_constraints) if placement_constraints else None,
        )
        self.log_group: logs.ILogGroup = log_group or new_log_group(
            self, "Logs", retention=log_retention, removal_policy=log_removal_policy, encryption_key=log_encryption_key
        )
        self.neuron_containers: list[ecs.ContainerDefinition] = []
        self.driver_checked: dict[str, str] = {}
        """The Neuron SDK release of each container, by name, that runs the driver start check."""
        self.stated_sdks: dict[str, str] = {}
        self.servers: dict[str, ServerPlan] = {}
        """The model server of each Neuron container given ``server=``, by container name."""
        """The Neuron SDK release of each Neuron container, by name, whose image's release is known: stated with
        ``neuron_sdk=`` or named by its tag (``-sdkX.Y.Z-``)."""
        self._neuron_container_names: list[str] = []
        self.model_name: str | None = None
        self._untagged: list[ecs.ContainerDefinition] = []
        self._environments: dict[str, dict[str, object]] = {}
        """Each container's environment as given (literal values only), by container id."""
        self._compatibility = compatibility
        self._cpu, self._memory_mib = cpu, memory_mib
        self._reserved_memory_mib = 0
        self._reserved_cpu = 0
        if network_mode == ecs.NetworkMode.HOST:
            Validations.of(self).add_warning(
                rules.HOST_NETWORK.warning_id,
                rules.HOST_NETWORK.message(construct_path(self), "network_mode=HOST"),
            )
        self._record_intent()

    @property
    def uses_managed_allocation(self) -> bool:
        """True when containers get devices through ``NeuronDevice = ALL``."""
        return False

    @functools.cached_property
    def is_managed_instances_compatible(self) -> bool:
        """Whether the task definition validates against ECS Managed Instances."""
        return self._compatibility in (ecs.Compatibility.MANAGED_INSTANCES, ecs.Compatibility.EC2_AND_MANAGED_INSTANCES)

    @functools.cached_property
    def is_ec2_compatible(self) -> bool:
        """Whether the task definition validates against the EC2 launch type."""
        return self._compatibility in (ecs.Compatibility.EC2, ecs.Compatibility.EC2_AND_MANAGED_INSTANCES)

    def _intent(self) -> dict[str, object]:
        return {
            "neuronContainers": list(self._neuron_container_names),
            **({"imageSizesGiB": dict(self.image_sizes_gib)} if self.image_sizes_gib else {}),
            **({"artifactSizesGiB": dict(self.artifact_sizes_gib)} if self.artifact_sizes_gib else {}),
            **({STARTUP_KEY: {k: dict(v) for k, v in self.startup_seconds.items()}} if self.startup_seconds else {}),
            **({PRECOMPILED_KEY: dict(self.precompiled)} if self.precompiled is not None else {}),
        }

    def _state_startup(self, container: ecs.ContainerDefinition, startup: Startup | None) -> None:
        """Record the start durations stated for ``container`` (``Startup`` checked them when it was made)."""
        if startup is None or not startup.seconds:
            return
        self.startup_seconds[container.container_name] = dict(startup.seconds)
        self._record_intent()

    def record_precompile(self, by: str, *, cache_hit_only: bool = False) -> None:
        """Record that the construct at path ``by`` builds this model's compiled graphs into its compile cache before
        any copy starts, so a copy fetches them instead of compiling (``cache_hit_only``: a miss fails the start).
        ``neuron-ecs plan --startup`` then shows a cache fetch in place of the compile, and the grace-period check of
        NEURON167 leaves the copy alone (:data:`~neuron_constructs.knowledge.startup.PRECOMPILED_KEY`)."""
        self.precompiled = {"by": by, "cacheHitOnly": bool(cache_hit_only)}
        self._record_intent()

    def _state_image_size(self, path: str, container: ecs.ContainerDefinition, size_gib: float | None) -> None:
        """Record ``image_size_gib`` for ``container`` (NEURON027 unless a positive number)."""
        if size_gib is None:
            return
        inputs.check_size_gib(path, "image_size_gib", size_gib)
        self.image_sizes_gib[container_name_of(container)] = float(size_gib)
        self._record_intent()

    def _record_intent(self) -> None:
        record_intent(self.task_definition, self._intent())

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=CONTAINER_RANGES)
    def add_container(
        self,
        id: str,
        *,
        image: ecs.ContainerImage,
        image_size_gib: float | None = None,
        **options: Unpack[ContainerOptions],
    ) -> ecs.ContainerDefinition:
        """Add a container without Neuron devices (a sidecar).

        Takes the image and the keyword options of ``ecs.TaskDefinition.add_container``
        (:class:`~neuron_constructs.compute.options.ContainerOptions`); ``logging`` defaults to awslogs into
        ``log_group``. Refused: GPU or inference accelerator requests (NEURON013: Neuron
        instances have neither), fields Managed Instances reject (NEURON007), containers that together
        reserve more memory or CPU than the task (NEURON024) or its instance (NEURON012), no memory
        anywhere (NEURON025). ``image_size_gib``: the image's size as its registry reports it (compressed), for the
        root volume check of a warm pool that prefetches it (NEURON091); default unknown.
        """
        container = self._add(id, image, dict(options))
        self._state_image_size(f"{construct_path(self)}/{id}", container, image_size_gib)
        return container

    @property
    def model_key(self) -> str:
        """What names this task definition's model in a shared compile cache: its construct path."""
        return construct_path(self)

    def _warm_start(
        self,
        container: ecs.ContainerDefinition,
        compile_cache: CompileCache | None,
        model_artifacts: ModelArtifacts | None,
        hf_token: secretsmanager.ISecret | None,
    ) -> None:
        """The compile cache, the model artifacts and the Hugging Face token (an ECS secret, ``HF_TOKEN``) for
        ``container`` (:mod:`neuron_constructs.compute.model_sources`)."""
        if hf_token is not None:
            container.add_secret(HF_TOKEN_VARIABLE, ecs.Secret.from_secrets_manager(hf_token))
        if compile_cache is not None or model_artifacts is not None:
            compliance.acknowledge_library_environment(self.task_definition)
        if compile_cache is not None:
            compile_cache.apply(container, self.task_role, self.model_key)
        if model_artifacts is not None:
            name = container_name_of(container)
            volume = f"{name}-model"
            self.task_definition.add_volume(name=volume)
            sync = self._add(
                f"{name}-model-sync",
                ecs.ContainerImage.from_registry(AWS_CLI_IMAGE),
                {"essential": False, "command": model_artifacts.sync_command, "memory_reservation_mib": 256},
            )
            sync.add_mount_points(
                ecs.MountPoint(container_path=model_artifacts.path, source_volume=volume, read_only=False)
            )
            container.add_mount_points(
                ecs.MountPoint(container_path=model_artifacts.path, source_volume=volume, read_only=True)
            )
            container.add_container_dependencies(
                ecs.ContainerDependency(container=sync, condition=ecs.ContainerDependencyCondition.SUCCESS)
            )
            container.add_environment("MODEL_DIR", model_artifacts.path)
            if model_artifacts.size_gib is not None:
                self.artifact_sizes_gib[container_name_of(sync)] = model_artifacts.size_gib
                self._record_intent()
            model_artifacts.grant(self.task_role)
            self.model_artifacts.append(model_artifacts)
            self.model_volumes[volume] = model_artifacts

    def container_sdk(self, container: ecs.ContainerDefinition) -> str | None:
        """The Neuron SDK release of ``container``'s image: the one its driver check was given, else the one stated
        with ``neuron_sdk=``, else the ``-sdkX.Y.Z-`` of its image name, read from what the name resolves to when it
        is built at deploy time (the URI of an ECR repository in the stack's Region); ``None`` when none names one."""
        name = container_name_of(container)
        if name in self.driver_checked:
            return self.driver_checked[name]
        if name in self.stated_sdks:
            return self.stated_sdks[name]
        return start_check.image_sdk(self._image_name(container))

    def _image_name(self, container: ecs.ContainerDefinition) -> str:
        """``container``'s image name, a token resolved to what it names (an ECR repository's URI, as JSON)."""
        name = image_name_of(container)
        return json.dumps(Stack.of(self).resolve(name)) if is_token(name) else name

    def _state_sdk(self, path: str, container: ecs.ContainerDefinition, neuron_sdk: str | None) -> None:
        """Record the Neuron SDK release of ``container``'s image (NEURON146 for a stated one the table does not know
        or the tag contradicts)."""
        sdk = start_check.stated_sdk(path, self._image_name(container), neuron_sdk)
        if sdk is not None:
            self.stated_sdks[container_name_of(container)] = sdk

    def check_image_support(self, path: str, container: ecs.ContainerDefinition, families: Iterable[str]) -> None:
        """NEURON131: refuse ``container`` when Neuron does not support its image on one of ``families`` (NxD
        Inference on Trn2, a release without Inf1 on Inf1: :mod:`neuron_constructs.knowledge.image_support`), its
        release read from the image table, the ``neuron_sdk=`` stated for it, or its tag."""
        name = image_name_of(container)
        if is_token(name):
            name = json.dumps(Stack.of(self).resolve(name))
        for family in dict.fromkeys(families):
            stated = self.stated_sdks.get(container_name_of(container))
            refusal = image_support.family_refusal(name, family, stated_sdk=stated)
            if refusal is not None:
                raise rules.IMAGE_UNSUPPORTED_ON_FAMILY.error(
                    path,
                    f"container {container_name_of(container)!r} runs {name.split('@', 1)[0]} on {family}: "
                    + refusal.problem,
                    fix_constant=refusal.fix_constant,
                    fix_uri=refusal.fix_image.uri,
                    families=", ".join(image_support.supported_families(name)) or "none",
                )

    def _driver_check_options(self, path: str, driver_check: bool | str, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the entry point and command wrapped in the driver start check (NEURON089 when the
        caller did not state the entry point)."""
        if not driver_check:
            return options
        if not options.get("entry_point"):
            raise rules.DRIVER_CHECK_INPUT.error(
                path,
                "driver_check is set without entry_point",
                fix="pass entry_point= (the image's ENTRYPOINT, e.g. ['python', '/usr/local/bin/vllm_entrypoint.py'] "
                "for the Neuron vLLM 0.16 image): the check runs first, then that entry point with the command",
            )
        entry_point, command = start_check.wrapped_start(list(options["entry_point"]), options.get("command"))
        return {**options, "entry_point": entry_point, "command": command}

    def _driver_check_environment(
        self, path: str, driver_check: bool | str, container: ecs.ContainerDefinition
    ) -> None:
        """Give a checked container the driver range of its image's SDK release (NEURON089 when unknown), and warn
        (NEURON126) when that range excludes the newest Neuron driver."""
        if not driver_check:
            return
        known_sdk = self.stated_sdks.get(container_name_of(container))
        if isinstance(driver_check, str) and known_sdk is not None and driver_check != known_sdk:
            raise rules.IMAGE_SDK.error(
                path,
                f"driver_check={driver_check!r}, but the image's Neuron SDK release is {known_sdk}",
                fix=f"pass driver_check=True (the check then uses {known_sdk})",
            )
        sdk = driver_check if isinstance(driver_check, str) else known_sdk
        environment = start_check.driver_check_environment(sdk, container_name_of(container)) if sdk else None
        if sdk is None or environment is None:
            known = ", ".join(r.sdk for r in neuron_releases.NEURON_RELEASES if r.runtime)
            raise rules.DRIVER_CHECK_INPUT.error(
                path,
                "the image's tag names no Neuron SDK release (-sdkX.Y.Z-)"
                if sdk is None
                else f"Neuron SDK {sdk}'s runtime version is in no source the driver table (knowledge.neuron_releases) "
                "cites"
                if neuron_releases.release(sdk) is not None
                else f"Neuron SDK {sdk} is not in the driver table (knowledge.neuron_releases)",
                fix=f"pass neuron_sdk='<the image's Neuron SDK release>' (or driver_check='<the image's Neuron SDK "
                f"release>'), one of {known}",
            )
        for name, value in environment.items():
            container.add_environment(name, value)
        self.driver_checked[container_name_of(container)] = sdk
        allowed = neuron_releases.driver_range(sdk)
        newest = neuron_releases.newest_driver()
        if allowed is not None and newest.driver_version is not None and not allowed.admits(newest.driver_version):
            Validations.of(self).add_warning(
                rules.DRIVER_CHECK_REFUSES_CURRENT.warning_id,
                rules.DRIVER_CHECK_REFUSES_CURRENT.message(
                    path,
                    f"Neuron SDK {sdk}'s runtime runs on {allowed.describe()}, and the newest Neuron driver is "
                    f"{newest.driver} (Neuron {newest.sdk})",
                ),
            )

    def _add(self, id: str, image: ecs.ContainerImage, options: dict[str, Any]) -> ecs.ContainerDefinition:
        path = f"{construct_path(self)}/{id}"
        for option in _OTHER_ACCELERATOR_OPTIONS:
            if options.get(option):
                raise rules.NEURON_CONTAINER_RESOURCES.error(path, f"{option} is set", field=option)
        if self.is_managed_instances_compatible:
            for option, field in inputs.MANAGED_INSTANCES_REJECTED_CONTAINER_FIELDS.items():
                if options.get(option):
                    raise rules.MANAGED_INSTANCES_FIELD.error(path, f"{option} is set", field=field)
        self._reserve(path, options)
        self._warn_about_secrets(path, options.get("environment") or {})
        self._environments[id] = {k: v for k, v in (options.get("environment") or {}).items() if not is_token(v)}
        options.setdefault("logging", ecs.LogDrivers.aws_logs(stream_prefix=id, log_group=self.log_group))
        container = self.task_definition.add_container(id, image=image, **options)
        grant_ecr_pull(container, self.task_definition.obtain_execution_role())
        return container

    def name_model(self, path: str, name: str, *, given: bool) -> str:
        """Tag every Neuron container (now and later) with ``NEURON_PROCESS_TAG=name`` and return the model name.

        A task definition serves one model: a second service running it reports under the first's name, and one
        that passes a different ``model_name`` is refused (NEURON067), as is a name neuron-monitor or CloudWatch
        cannot carry. ``given``: the caller passed ``name`` (rather than defaulting it)."""
        if self.model_name is not None:
            if given and name != self.model_name:
                raise rules.MODEL_NAME.error(
                    path,
                    f"model_name={name!r}, but {construct_path(self)} already reports as model {self.model_name!r}",
                )
            return self.model_name
        self.model_name = inputs.check_model_name(path, name)
        # The library tags every Neuron container from now on.
        compliance.acknowledge_library_environment(self.task_definition)
        for container in self._untagged:
            container.add_environment(PROCESS_TAG_VARIABLE, name)
        self._untagged.clear()
        return name

    def _stated_tag(self, path: str, environment: Any) -> str | None:
        """The ``NEURON_PROCESS_TAG`` a new Neuron container brings, checked before it is added: it must be the
        model's, and the other Neuron containers must carry it too (NEURON067)."""
        stated = (environment or {}).get(PROCESS_TAG_VARIABLE)
        if stated is None:
            return None
        if is_token(stated):
            raise rules.TOKEN_NOT_LITERAL.error(
                path, f"environment {PROCESS_TAG_VARIABLE} is a CDK token", name=PROCESS_TAG_VARIABLE
            )
        inputs.check_model_name(path, stated, given_as=PROCESS_TAG_VARIABLE)
        if self.model_name is not None and stated != self.model_name:
            raise rules.MODEL_NAME.error(
                path, f"{PROCESS_TAG_VARIABLE}={stated!r}, but the task definition's model is {self.model_name!r}"
            )
        if self._untagged:
            raise rules.MODEL_NAME.error(
                path,
                f"{PROCESS_TAG_VARIABLE}={stated!r} here, but Neuron container "
                f"{container_name_of(self._untagged[0])!r} has none",
            )
        return str(stated)

    def _serve(
        self, path: str, server: VllmServer | None, options: dict[str, Any], *, cores: int | None
    ) -> ServerPlan | None:
        """Write ``server``'s command, port mapping and container health check into ``options`` (NEURON173, NEURON174
        at the call); ``None`` without a server."""
        if server is None:
            return None
        if not isinstance(server, VllmServer):
            raise rules.WRONG_TYPE.error(path, f"server={server!r}", expected="server=VllmServer(model=...)")
        if options.get("command") is not None:
            raise rules.VLLM_SERVER_INPUT.error(
                path, "command= is given beside server=", fix="drop command=: the server writes the command"
            )
        stated = (options.get("environment") or {}).get(PROCESS_TAG_VARIABLE)
        default = server.model if inputs.valid_model_name(server.model) else inputs.derived_model_name(server.model)
        served = server.served_model_name or self.model_name or stated or default
        plan = plan_server(server, where=path, cores=cores, served_model_name=served)
        mappings = options.get("port_mappings")
        if mappings is None:
            options["port_mappings"] = [ecs.PortMapping(container_port=plan.port)]
        elif not any(_container_port(m) == plan.port for m in mappings):
            raise rules.VLLM_SERVER_INPUT.error(
                path,
                f"port_mappings map no container port {plan.port}, the port the server listens on",
                fix=f"map container port {plan.port}, or leave port_mappings out: the server maps its port",
            )
        options.setdefault("health_check", model_server_health_check(port=plan.port))
        options["command"] = list(plan.command)
        return plan

    def _served(
        self, path: str, container: ecs.ContainerDefinition, server: VllmServer | None, plan: ServerPlan | None
    ) -> None:
        """After a served container is made: its image's engine against the server (NEURON176, NEURON177), the
        model named as the server serves it, and NEURON175 for the NeuronCores it leaves idle."""
        if server is None or plan is None:
            return
        name = image_name_of(container)
        found = None if is_token(name) else image_support.table_image(name)
        engine = None if found is None else found[1].engine
        sdk = self.stated_sdks.get(container_name_of(container)) or (None if found is None else found[1].neuron_sdk)
        family = self._server_family()
        check_server_engine(server, where=path, engine=engine, sdk=sdk, family=family, degree=plan.tensor_parallel_size)
        self.name_model(path, plan.served_model_name, given=server.served_model_name is not None)
        self.servers[container_name_of(container)] = plan
        if plan.idle_cores:
            Validations.of(self).add_warning(
                rules.TENSOR_PARALLEL_IDLE_CORES.warning_id,
                rules.TENSOR_PARALLEL_IDLE_CORES.message(
                    path,
                    f"tensor_parallel_size={plan.tensor_parallel_size} runs on {plan.tensor_parallel_size} of the "
                    f"{plan.tensor_parallel_size + plan.idle_cores} NeuronCores the container holds",
                ),
            )

    def _server_family(self) -> str | None:
        """The instance family a served container's degree is checked on; ``None`` where the task does not say."""
        return None

    def _tag_neuron_container(self, container: ecs.ContainerDefinition, stated: str | None) -> None:
        """Give a new Neuron container the model's tag, or take the model's name from the one it brought."""
        if stated is not None:
            self.model_name = stated
        elif self.model_name is None:
            self._untagged.append(container)
        else:
            container.add_environment(PROCESS_TAG_VARIABLE, self.model_name)

    def _warn_about_secrets(self, path: str, environment: Mapping[str, str]) -> None:
        """NEURON109 for the environment given here; variables added later are found in the template at synth."""
        for name, value in environment.items():
            if secret_like(name) and value:
                Validations.of(self).add_warning(
                    rules.SECRET_IN_ENVIRONMENT.warning_id,
                    rules.SECRET_IN_ENVIRONMENT.message(
                        path, f"environment variable {name} holds its value in plain text", name=name
                    ),
                )

    def _reserve(self, path: str, options: Mapping[str, Any]) -> None:
        """NEURON024: the containers added here fit the task's memory and CPU."""
        memory = options.get("memory_reservation_mib") or options.get("memory_limit_mib") or 0
        limit = options.get("memory_limit_mib") or 0
        if self._memory_mib is not None and (
            self._reserved_memory_mib + memory > self._memory_mib or limit > self._memory_mib
        ):
            raise rules.CONTAINERS_EXCEED_TASK.error(
                path,
                f"containers would reserve {max(self._reserved_memory_mib + memory, limit)} MiB of memory, the task "
                f"has {self._memory_mib} MiB",
                field="memory",
                limit=f"{self._memory_mib} MiB",
            )
        cpu = options.get("cpu") or 0
        if self._cpu is not None and self._reserved_cpu + cpu > self._cpu:
            raise rules.CONTAINERS_EXCEED_TASK.error(
                path,
                f"containers would reserve {self._reserved_cpu + cpu} CPU units, the task has {self._cpu}",
                field="cpu",
                limit=f"{self._cpu} CPU units",
            )
        if self._memory_mib is None and not memory:
            raise rules.NO_TASK_MEMORY.error(
                path, "neither the task definition nor this container sets any memory (memory_mib, memory_limit_mib)"
            )
        self._reserved_memory_mib += memory
        self._reserved_cpu += cpu
        instance = self._instance()
        if instance is not None:
            inputs.check_task_size(
                path,
                instance,
                self._cpu if self._cpu is not None else self._reserved_cpu,
                self._memory_mib if self._memory_mib is not None else self._reserved_memory_mib,
                cpu_from_containers=self._cpu is None,
                memory_from_containers=self._memory_mib is None,
            )

    def _instance(self) -> NeuronInstanceType | None:
        """The one instance type the task is specific to, if any (manual mapping)."""
        return None


def _new_task_role(owner: Construct) -> iam.Role:
    return task_role(owner, "TaskRole")


def _container_port(mapping: object) -> object:
    """The container port of a port mapping given as ``ecs.PortMapping`` or as a dict (``containerPort``, as the CDK
    takes it)."""
    if isinstance(mapping, dict):
        return mapping.get("containerPort", mapping.get("container_port"))
    return getattr(mapping, "container_port", None)
