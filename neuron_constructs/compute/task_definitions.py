"""Typed task definitions for the two ways ECS hands a container Neuron devices.

* :class:`ManagedNeuronTaskDefinition` - managed allocation: one container gets
  ``resourceRequirements: [{type: NeuronDevice, value: ALL}]``; ECS Managed
  Instances only; one Neuron task per instance.
* :class:`ManualNeuronTaskDefinition` - manual mapping: ``/dev/neuronN``
  through ``linuxParameters.devices``; specific to one instance type, pinned
  there with a ``memberOf`` placement constraint.

Rules a single call breaks raise at that call. Rules about the finished task definition (what
ends up in its containers, however it got there: devices, ``tmpfs`` or labels added later,
containers added through the plain aws-cdk-lib API, escape hatches) are checked on the
synthesized template (:mod:`neuron_constructs.checks.template_checks`) and fail ``cdk synth``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aws_cdk import RemovalPolicy, Size, Stack, Validations
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
from neuron_constructs.base.images import grant_ecr_pull
from neuron_constructs.base.l1_overrides import record_intent, require_all_neuron_devices
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.roles import ExecutionRole
from neuron_constructs.base.synth_checks import enable_template_checks
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.checks.inputs import secret_like
from neuron_constructs.compute import driver_check as start_check
from neuron_constructs.compute.model_sources import (
    AWS_CLI_IMAGE,
    HF_TOKEN_VARIABLE,
    CompileCache,
    ModelArtifacts,
)
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS, ContainerOptions
from neuron_constructs.knowledge import image_support, neuron_releases, rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType, instance_type_at
from neuron_constructs.knowledge.cores import (
    LOGICAL_CORE_VARIABLE,
    VISIBLE_CORES_VARIABLE,
    TaskCores,
    cores_of_devices,
    devices_of_cores,
    format_core_list,
    task_cores,
)
from neuron_constructs.knowledge.devices import format_device_paths
from neuron_constructs.programs.metric_publisher import PROCESS_TAG_VARIABLE

__all__ = [
    "ManagedNeuronTaskDefinition",
    "ManualNeuronTaskDefinition",
    "NeuronTaskDefinition",
    "task_role",
]

_MANAGED_INSTANCES_NETWORK_MODES = (ecs.NetworkMode.AWS_VPC, ecs.NetworkMode.HOST)
_TASK_RANGES = {"cpu": TASK_CPU, "memory_mib": TASK_MEMORY}
_CONTAINER_RANGES = {
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
        }

    def _state_image_size(self, path: str, container: ecs.ContainerDefinition, size_gib: float | None) -> None:
        """Record ``image_size_gib`` for ``container`` (NEURON027 unless a positive number)."""
        if size_gib is None:
            return
        inputs.check_size_gib(path, "image_size_gib", size_gib)
        self.image_sizes_gib[container.container_name] = float(size_gib)
        self._record_intent()

    def _record_intent(self) -> None:
        record_intent(self.task_definition, self._intent())

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=_CONTAINER_RANGES)
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
            name = container.container_name
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
                self.artifact_sizes_gib[sync.container_name] = model_artifacts.size_gib
                self._record_intent()
            model_artifacts.grant(self.task_role)
            self.model_artifacts.append(model_artifacts)
            self.model_volumes[volume] = model_artifacts

    def container_sdk(self, container: ecs.ContainerDefinition) -> str | None:
        """The Neuron SDK release of ``container``'s image: the one its driver check was given, else the one stated
        with ``neuron_sdk=``, else the ``-sdkX.Y.Z-`` of its image name, read from what the name resolves to when it
        is built at deploy time (the URI of an ECR repository in the stack's Region); ``None`` when none names one."""
        name = container.container_name
        if name in self.driver_checked:
            return self.driver_checked[name]
        if name in self.stated_sdks:
            return self.stated_sdks[name]
        return start_check.image_sdk(self._image_name(container))

    def _image_name(self, container: ecs.ContainerDefinition) -> str:
        """``container``'s image name, a token resolved to what it names (an ECR repository's URI, as JSON)."""
        name = container.image_name
        return json.dumps(Stack.of(self).resolve(name)) if is_token(name) else name

    def _state_sdk(self, path: str, container: ecs.ContainerDefinition, neuron_sdk: str | None) -> None:
        """Record the Neuron SDK release of ``container``'s image (NEURON146 for a stated one the table does not know
        or the tag contradicts)."""
        sdk = start_check.stated_sdk(path, self._image_name(container), neuron_sdk)
        if sdk is not None:
            self.stated_sdks[container.container_name] = sdk

    def check_image_support(self, path: str, container: ecs.ContainerDefinition, families: Iterable[str]) -> None:
        """NEURON131: refuse ``container`` when Neuron does not support its image on one of ``families`` (NxD
        Inference on Trn2, a release without Inf1 on Inf1: :mod:`neuron_constructs.knowledge.image_support`)."""
        name = container.image_name
        if is_token(name):
            name = json.dumps(Stack.of(self).resolve(name))
        for family in dict.fromkeys(families):
            refusal = image_support.family_refusal(name, family)
            if refusal is not None:
                raise rules.IMAGE_UNSUPPORTED_ON_FAMILY.error(
                    path,
                    f"container {container.container_name!r} runs {name.split('@', 1)[0]} on {family}: "
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
        known_sdk = self.stated_sdks.get(container.container_name)
        if isinstance(driver_check, str) and known_sdk is not None and driver_check != known_sdk:
            raise rules.IMAGE_SDK.error(
                path,
                f"driver_check={driver_check!r}, but the image's Neuron SDK release is {known_sdk}",
                fix=f"pass driver_check=True (the check then uses {known_sdk})",
            )
        sdk = driver_check if isinstance(driver_check, str) else known_sdk
        environment = start_check.driver_check_environment(sdk, container.container_name) if sdk else None
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
        self.driver_checked[container.container_name] = sdk
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
                f"{self._untagged[0].container_name!r} has none",
            )
        return str(stated)

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


class ManagedNeuronTaskDefinition(NeuronTaskDefinition):
    """A Managed Instances task definition whose Neuron container gets every device.

    ECS discovers the instance's Neuron devices and gives the task exclusive
    access to all of them, so one Neuron task runs per instance.

    Parameters
    ----------
    cpu, memory_mib
        Task size (CPU units 128 to 196,608; MiB, at least 6); required. Refused
        beyond the largest Managed Instances Neuron type (NEURON012).
    network_mode
        ``awsvpc`` (default) or ``host`` (warns, NEURON107); Managed Instances take no other.
    ipc_mode, inference_accelerators
        Refused (Managed Instances reject them);
        present so the refusal names the rule instead of a ``TypeError``.
    task_role, execution_role
        Default one new role each (the task role trusts ECS for this
        account's tasks only; the execution role, ``<id>/ExecutionRole``, is given pull and log rights as used, its
        ECR registry token in a policy of its own: :class:`~neuron_constructs.base.roles.ExecutionRole`).
    log_group
        An existing log group for the containers; default a new one whose events are
        kept ``log_retention`` (one month), encrypted with ``log_encryption_key`` if given, and deleted with the
        stack unless ``log_removal_policy`` says otherwise (default ``RemovalPolicy.DESTROY``: the logs of a task
        definition describe tasks that no longer run once it is gone).
    """

    @checked(ranges=_TASK_RANGES, names=("family",))
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cpu: int,
        memory_mib: int,
        network_mode: ecs.NetworkMode = ecs.NetworkMode.AWS_VPC,
        family: str | None = None,
        task_role: iam.IRole | None = None,
        execution_role: iam.IRole | None = None,
        volumes: Sequence[ecs.Volume] | None = None,
        ipc_mode: ecs.IpcMode | None = None,
        inference_accelerators: Sequence[ecs.InferenceAccelerator] | None = None,
        log_group: logs.ILogGroup | None = None,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
        log_encryption_key: kms.IKey | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        if network_mode not in _MANAGED_INSTANCES_NETWORK_MODES:
            raise rules.MANAGED_INSTANCES_FIELD.error(
                path,
                f"network_mode={network_mode.value} (Managed Instances take AWS_VPC or HOST)",
                field="network_mode",
            )
        if ipc_mode is not None:
            raise rules.MANAGED_INSTANCES_FIELD.error(path, "ipc_mode is set", field="ipc_mode")
        if inference_accelerators:
            raise rules.MANAGED_INSTANCES_FIELD.error(
                path, "inference_accelerators is set", field="inference_accelerators"
            )
        largest = max(
            (t for t in NeuronInstanceType.all() if t.supports_managed_instances), key=lambda t: (t.vcpus, t.memory_gib)
        )
        inputs.check_task_size(path, largest, cpu, memory_mib)
        super().__init__(
            scope,
            id,
            compatibility=ecs.Compatibility.MANAGED_INSTANCES,
            network_mode=network_mode,
            cpu=cpu,
            memory_mib=memory_mib,
            family=family,
            task_role=task_role,
            execution_role=execution_role,
            volumes=volumes,
            placement_constraints=None,
            log_retention=log_retention,
            log_group=log_group,
            log_encryption_key=log_encryption_key,
            log_removal_policy=log_removal_policy,
        )

    @property
    def uses_managed_allocation(self) -> bool:
        """True: the Neuron container gets every device through ``NeuronDevice = ALL``."""
        return True

    @property
    def cpu(self) -> int:
        """Task CPU units."""
        assert self._cpu is not None
        return self._cpu

    @property
    def memory_mib(self) -> int:
        """Task memory, MiB."""
        assert self._memory_mib is not None
        return self._memory_mib

    @property
    def neuron_container(self) -> ecs.ContainerDefinition | None:
        """The container with ``NeuronDevice = ALL``, once added."""
        return self.neuron_containers[0] if self.neuron_containers else None

    def _intent(self) -> dict[str, object]:
        return {"allocation": "managed", **super()._intent()}

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=_CONTAINER_RANGES)
    def add_neuron_container(
        self,
        id: str,
        *,
        image: ecs.ContainerImage,
        compile_cache: CompileCache | None = None,
        model_artifacts: ModelArtifacts | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        driver_check: bool | str = False,
        image_size_gib: float | None = None,
        neuron_sdk: str | None = None,
        **options: Unpack[ContainerOptions],
    ) -> ecs.ContainerDefinition:
        """Add the task's one Neuron container: ``NeuronDevice = ALL``.

        Takes the keyword options of ``ecs.TaskDefinition.add_container``, and ``compile_cache`` /
        ``model_artifacts`` / ``hf_token`` (a Secrets Manager secret, injected as the ECS secret ``HF_TOKEN``)
        for warm starts (:mod:`neuron_constructs.compute.model_sources`). ``neuron_sdk``: the image's Neuron SDK
        release (``"2.31.1"``), for an image whose tag does not name it (``-sdkX.Y.Z-``; default: the tag's, else
        unknown): the driver checks (NEURON088, NEURON127, NEURON147) read it; refused when the release table does
        not know it or the tag names another (NEURON146). ``driver_check`` (``True``, or the image's Neuron SDK
        release): the container first checks the host's Neuron driver against its runtime's range and stops with
        one line outside it (:mod:`neuron_constructs.compute.driver_check`); needs ``entry_point`` (NEURON089).
        ``image_size_gib``: the image's size as its registry reports it (compressed), for the root volume check of a
        warm pool that prefetches it (NEURON091); default unknown.
        Refused: a second Neuron container (NEURON005), ``gpu_count`` or
        inference accelerators (NEURON013), ``docker_labels`` (NEURON007).
        """
        path = f"{construct_path(self)}/{id}"
        if self.neuron_containers:
            raise rules.ONE_NEURON_CONTAINER.error(
                path, f"{self.neuron_containers[0].container_name!r} already has NeuronDevice"
            )
        stated = self._stated_tag(path, options.get("environment"))
        container = self._add(id, image, self._driver_check_options(path, driver_check, dict(options)))
        self._state_sdk(path, container, neuron_sdk)
        self._driver_check_environment(path, driver_check, container)
        require_all_neuron_devices(self.task_definition, container)
        self._tag_neuron_container(container, stated)
        self.neuron_containers.append(container)
        self._neuron_container_names.append(id)
        self._state_image_size(path, container, image_size_gib)
        self._record_intent()
        self._warm_start(container, compile_cache, model_artifacts, hf_token)
        return container


class ManualNeuronTaskDefinition(NeuronTaskDefinition):
    """A task definition that maps chosen ``/dev/neuronN`` devices of one instance type.

    The task definition carries the placement constraint
    ``memberOf attribute:ecs.instance-type == <type>``, as ECS requires for
    manual mapping on the EC2 launch type. ECS does not track these devices: a
    :class:`~neuron_constructs.serving.services.NeuronService` keeps two copies off one
    instance with ``distinctInstance``.

    Parameters
    ----------
    instance_type
        A catalog Neuron type (name or entry); the task runs only there.
    devices
        Chip indices to map; default every chip of the type (or, with ``cores``, the chips holding them).
        Indices out of range or repeated are refused; sets the Neuron topology would never
        hand out (non-contiguous on inf1/inf2, other than 1/4/8/16 on
        the 16-chip trn1/trn1n/trn2 torus) give warning ``neuron-constructs:NEURON101``.
    cores
        NeuronCores the task holds (host numbering, logical cores at ``lnc``), when it holds fewer than every
        core of its devices: each Neuron container gets ``NEURON_RT_VISIBLE_CORES`` naming those on its
        devices, so tasks on one instance share a chip without sharing a core (a NeuronCore belongs to one
        process). Default ``None``: the runtime takes every core of the mapped devices. Cores beyond the
        devices are refused (NEURON019).
    lnc
        Trainium2 only: physical NeuronCores per logical core, 1 or 2 (NEURON064); set as
        ``NEURON_LOGICAL_NC_CONFIG`` on every Neuron container. Default ``None``: the runtime's default (2 on
        Trainium2), which core numbers then count in.
    cpu, memory_mib
        Task size (CPU units 128 to 196,608; MiB, at least 6); refused beyond
        the instance (NEURON012), warned within 10 % of its memory (NEURON103).
    compatibility
        ``EC2`` (default), ``MANAGED_INSTANCES`` or
        ``EC2_AND_MANAGED_INSTANCES``; Inf1 only on EC2.
    network_mode
        Default ``bridge`` on EC2, ``awsvpc`` when Managed
        Instances compatible (they take only awsvpc or host); ``host`` warns (NEURON107).
    log_group
        An existing log group for the containers; default a new one whose events are
        kept ``log_retention`` (one month), encrypted with ``log_encryption_key`` if given, and deleted with the
        stack unless ``log_removal_policy`` says otherwise (default ``RemovalPolicy.DESTROY``: the logs of a task
        definition describe tasks that no longer run once it is gone).
    """

    @checked(ranges=_TASK_RANGES, names=("family",))
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: str | NeuronInstanceType,
        devices: Iterable[int] | None = None,
        cores: Iterable[int] | None = None,
        lnc: int | None = None,
        cpu: int | None = None,
        memory_mib: int | None = None,
        compatibility: ecs.Compatibility = ecs.Compatibility.EC2,
        network_mode: ecs.NetworkMode | None = None,
        family: str | None = None,
        task_role: iam.IRole | None = None,
        execution_role: iam.IRole | None = None,
        volumes: Sequence[ecs.Volume] | None = None,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
        log_group: logs.ILogGroup | None = None,
        log_encryption_key: kms.IKey | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        self.instance_type: NeuronInstanceType = instance_type_at(path, instance_type)
        instance = self.instance_type
        on_managed_instances = compatibility in (
            ecs.Compatibility.MANAGED_INSTANCES,
            ecs.Compatibility.EC2_AND_MANAGED_INSTANCES,
        )
        if not on_managed_instances and compatibility != ecs.Compatibility.EC2:
            raise rules.NO_MATCHING_CAPACITY.error(
                path,
                f"compatibility={compatibility.value}: Fargate has no Neuron devices",
                wanted="EC2 or Managed Instances capacity of " + instance.name,
            )
        if on_managed_instances and not instance.supports_managed_instances:
            raise rules.INF1_ON_MANAGED_INSTANCES.error(
                path, f"compatibility={compatibility.value} with {instance.name}"
            )
        if network_mode is None:
            network_mode = ecs.NetworkMode.AWS_VPC if on_managed_instances else ecs.NetworkMode.BRIDGE
        if on_managed_instances and network_mode not in _MANAGED_INSTANCES_NETWORK_MODES:
            raise rules.MANAGED_INSTANCES_FIELD.error(
                path,
                f"network_mode={network_mode.value} (Managed Instances take AWS_VPC or HOST)",
                field="network_mode",
            )
        self.lnc: int = inputs.check_lnc(path, instance, lnc)
        """Physical NeuronCores per logical core the task runs with (the type's default unless ``lnc`` was given)."""
        self._lnc_given = lnc is not None
        per_chip = instance.cores_per_chip(self.lnc)
        chosen_cores = inputs.check_core_indices(path, instance, self.lnc, cores) if cores is not None else None
        if devices is None:
            devices = (
                range(instance.chips) if chosen_cores is None else sorted(devices_of_cores(chosen_cores, per_chip))
            )
        self.devices: tuple[int, ...] = inputs.check_device_indices(path, instance, devices)
        """Chip indices this task maps."""
        held = cores_of_devices(self.devices, per_chip)
        if chosen_cores is not None and not set(chosen_cores) <= held:
            raise rules.SLICE_RUNTIME_VARIABLE.error(
                path,
                f"cores={format_core_list(chosen_cores)} but the devices {list(self.devices)} hold cores "
                f"{format_core_list(held)}",
                cores=len(held),
            )
        self.cores: tuple[int, ...] = tuple(sorted(held if chosen_cores is None else chosen_cores))
        """NeuronCores this task holds (host numbering, at :attr:`lnc`)."""
        self._cores_given = chosen_cores is not None
        topology_warning = inputs.device_topology_warning(path, instance, self.devices)
        memory_warning = inputs.check_task_size(path, instance, cpu, memory_mib)
        self._mapped: dict[int, str] = {}
        self.fleet: str | None = None
        super().__init__(
            scope,
            id,
            compatibility=compatibility,
            network_mode=network_mode,
            cpu=cpu,
            memory_mib=memory_mib,
            family=family,
            task_role=task_role,
            execution_role=execution_role,
            volumes=volumes,
            placement_constraints=[self.instance_type_constraint],
            log_retention=log_retention,
            log_group=log_group,
            log_encryption_key=log_encryption_key,
            log_removal_policy=log_removal_policy,
        )
        if topology_warning:
            Validations.of(self).add_warning(rules.DEVICE_TOPOLOGY.warning_id, topology_warning)
        if memory_warning:
            Validations.of(self).add_warning(rules.MEMORY_NEAR_INSTANCE_TOTAL.warning_id, memory_warning)

    @functools.cached_property
    def instance_type_constraint(self) -> ecs.PlacementConstraint:
        """``memberOf attribute:ecs.instance-type == <type>``: the one type this task fits."""
        return ecs.PlacementConstraint.member_of(f"attribute:ecs.instance-type == {self.instance_type.name}")

    @property
    def device_paths(self) -> tuple[str, ...]:
        """``/dev/neuronN`` paths this task maps."""
        return tuple(f"/dev/neuron{i}" for i in self.devices)

    @property
    def names_cores(self) -> bool:
        """Whether the task holds chosen cores (``cores=``) rather than every core of its devices."""
        return self._cores_given

    @property
    def held(self) -> TaskCores:
        """The devices and NeuronCores its Neuron containers hold on an instance, as the template checks read them
        (:func:`~neuron_constructs.knowledge.cores.task_cores`): ``cores=``, or a ``NEURON_RT_VISIBLE_CORES`` set by
        hand in a container's environment. Before any container is added: the declared devices and cores."""
        if not self._mapped:
            return TaskCores(
                self.instance_type.name,
                self.lnc,
                frozenset(self.devices),
                frozenset(self.cores),
                self._cores_given,
            )
        devices: dict[str, list[int]] = {}
        for index, name in self._mapped.items():
            devices.setdefault(name, []).append(index)
        return task_cores(
            self.instance_type,
            self.lnc if self._lnc_given else None,
            [(devices.get(name, []), environment) for name, environment in self._environments.items()],
        )

    @property
    def cpu(self) -> int | None:
        """Task CPU units, if set."""
        return self._cpu

    @property
    def memory_mib(self) -> int | None:
        """Task memory, MiB, if set."""
        return self._memory_mib

    def _instance(self) -> NeuronInstanceType | None:
        return self.instance_type

    def _intent(self) -> dict[str, object]:
        return {
            "allocation": "manual",
            "instanceType": self.instance_type.name,
            "devices": list(self.devices),
            **({"cores": format_core_list(self.cores)} if self._cores_given else {}),
            **({"lnc": self.lnc} if self._lnc_given else {}),
            **({"fleet": self.fleet} if self.fleet else {}),
            **super()._intent(),
        }

    @property
    def model_key(self) -> str:
        """What names this task definition's model in a shared compile cache: the path of its fleet model or sliced
        service (every copy shares the model's prefix), else its own construct path."""
        return self.fleet or construct_path(self)

    def join_fleet(self, owner: str) -> None:
        """Record that this task definition is one copy of the fleet or sliced service at path ``owner``: the
        template checks then treat its capacity as the fleet's alone (NEURON020) and its host ports as shared
        (NEURON018), even when the fleet leaves chips free."""
        self.fleet = owner
        self._record_intent()

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=_CONTAINER_RANGES)
    def add_neuron_container(
        self,
        id: str,
        *,
        image: ecs.ContainerImage,
        devices: Iterable[int] | None = None,
        compile_cache: CompileCache | None = None,
        model_artifacts: ModelArtifacts | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        driver_check: bool | str = False,
        image_size_gib: float | None = None,
        neuron_sdk: str | None = None,
        **options: Unpack[ContainerOptions],
    ) -> ecs.ContainerDefinition:
        """Add a container that maps Neuron devices and holds ``IPC_LOCK``.

        ``compile_cache`` / ``model_artifacts`` / ``hf_token`` (a Secrets Manager secret, injected as the ECS
        secret ``HF_TOKEN``): warm starts (:mod:`neuron_constructs.compute.model_sources`). ``driver_check``: the
        Neuron driver start check, ``neuron_sdk`` (the image's Neuron SDK release) and ``image_size_gib``, as on
        :meth:`ManagedNeuronTaskDefinition.add_neuron_container`.

        Each device is mapped with the same host and container path, read and
        write. ``devices`` (default: every device of the task) must be a subset
        of the task's devices (NEURON036), and no device goes to two containers (NEURON010).
        Takes the keyword options of ``ecs.TaskDefinition.add_container``; a given
        ``linux_parameters`` is copied as it is at the call and the copy gets the devices and
        ``IPC_LOCK``, so one object can serve several containers or slices.
        """
        path = f"{construct_path(self)}/{id}"
        chosen = self.devices if devices is None else inputs.check_device_indices(path, self.instance_type, devices)
        for index in chosen:
            if index not in self.devices:
                raise rules.UNDECLARED_DEVICE.error(
                    path,
                    f"device {index} is not among the devices {list(self.devices)} of {construct_path(self)}",
                    declared=format_device_paths(self.devices),
                )
            if index in self._mapped:
                raise rules.DUPLICATE_DEVICE.error(path, f"device {index} is already mapped by {self._mapped[index]!r}")
        stated = self._stated_tag(path, options.get("environment"))
        linux_parameters = _copy_linux_parameters(self, f"{id}LinuxParameters", options.get("linux_parameters"))
        linux_parameters.add_devices(
            *[
                ecs.Device(
                    host_path=f"/dev/neuron{i}",
                    container_path=f"/dev/neuron{i}",
                    permissions=[ecs.DevicePermission.READ, ecs.DevicePermission.WRITE],
                )
                for i in chosen
            ]
        )
        linux_parameters.add_capabilities(ecs.Capability.IPC_LOCK)
        environment = self._runtime_environment(path, chosen, options.get("environment"))
        container = self._add(
            id,
            image,
            self._driver_check_options(
                path,
                driver_check,
                {
                    **options,
                    "linux_parameters": linux_parameters,
                    **({"environment": environment} if environment else {}),
                },
            ),
        )
        self.check_image_support(path, container, (self.instance_type.family,))
        self._state_sdk(path, container, neuron_sdk)
        self._driver_check_environment(path, driver_check, container)
        self._mapped.update({i: id for i in chosen})
        self._tag_neuron_container(container, stated)
        self.neuron_containers.append(container)
        self._neuron_container_names.append(id)
        self._state_image_size(path, container, image_size_gib)
        self._record_intent()
        self._warm_start(container, compile_cache, model_artifacts, hf_token)
        return container

    def _runtime_environment(
        self, path: str, devices: Sequence[int], environment: Mapping[str, str] | None
    ) -> dict[str, str] | None:
        """The container's environment with ``NEURON_RT_VISIBLE_CORES`` (when the task holds chosen cores) and
        ``NEURON_LOGICAL_NC_CONFIG`` (when ``lnc`` was given); NEURON019/064 where the given environment says
        otherwise."""
        given = dict(environment or {})
        if self._cores_given:
            mine = set(self.cores) & cores_of_devices(devices, self.instance_type.cores_per_chip(self.lnc))
            if VISIBLE_CORES_VARIABLE in given:
                raise rules.SLICE_RUNTIME_VARIABLE.error(
                    path,
                    f"{VISIBLE_CORES_VARIABLE}={given[VISIBLE_CORES_VARIABLE]} is set by hand, but the task holds "
                    f"cores {format_core_list(self.cores)} and names them itself",
                    cores=len(self.cores),
                )
            if not mine:
                raise rules.SLICE_RUNTIME_VARIABLE.error(
                    path,
                    f"devices {list(devices)} hold none of the task's cores {format_core_list(self.cores)}",
                    cores=len(self.cores),
                )
            given[VISIBLE_CORES_VARIABLE] = format_core_list(mine)
        if self._lnc_given:
            stated = given.get(LOGICAL_CORE_VARIABLE)
            if stated is not None and stated != str(self.lnc):
                raise rules.LOGICAL_CORES.error(
                    path, f"{LOGICAL_CORE_VARIABLE}={stated} but the task definition has lnc={self.lnc}"
                )
            given[LOGICAL_CORE_VARIABLE] = str(self.lnc)
        return given or None


def _copy_linux_parameters(scope: Construct, id: str, given: ecs.LinuxParameters | None) -> ecs.LinuxParameters:
    """A new ``LinuxParameters`` with everything ``given`` holds now (or an empty one)."""
    if given is None:
        return ecs.LinuxParameters(scope, id)
    held = Stack.of(given).resolve(given.render_linux_parameters()) or {}
    swap = held.get("maxSwap")
    copy = ecs.LinuxParameters(
        scope,
        id,
        init_process_enabled=held.get("initProcessEnabled"),
        shared_memory_size=held.get("sharedMemorySize"),
        max_swap=Size.mebibytes(swap) if swap is not None else None,
        swappiness=held.get("swappiness"),
    )
    capabilities = held.get("capabilities") or {}
    copy.add_capabilities(*(ecs.Capability(c) for c in capabilities.get("add") or []))
    copy.drop_capabilities(*(ecs.Capability(c) for c in capabilities.get("drop") or []))
    copy.add_devices(
        *(
            ecs.Device(
                host_path=d["hostPath"],
                container_path=d.get("containerPath"),
                permissions=[ecs.DevicePermission(p) for p in d.get("permissions") or []] or None,
            )
            for d in held.get("devices") or []
        )
    )
    copy.add_tmpfs(
        *(
            ecs.Tmpfs(
                container_path=t["containerPath"],
                size=t["size"],
                mount_options=[ecs.TmpfsMountOption(m) for m in t.get("mountOptions") or []] or None,
            )
            for t in held.get("tmpfs") or []
        )
    )
    return copy


def _new_task_role(owner: Construct) -> iam.Role:
    return task_role(owner, "TaskRole")
