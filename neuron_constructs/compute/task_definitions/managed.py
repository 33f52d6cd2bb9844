"""Managed allocation: :class:`ManagedNeuronTaskDefinition`.

One container gets ``resourceRequirements: [{type: NeuronDevice, value: ALL}]``; ECS Managed Instances only; one
Neuron task per instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct
from typing_extensions import Unpack

from neuron_constructs.base.arguments import checked
from neuron_constructs.base.l1_overrides import require_all_neuron_devices
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.model_sources import CompileCache, ModelArtifacts
from neuron_constructs.compute.options import CONTAINER_WHOLE_NUMBERS, ContainerOptions
from neuron_constructs.compute.startup import Startup
from neuron_constructs.compute.task_definitions.shared import (
    CONTAINER_RANGES,
    MANAGED_INSTANCES_NETWORK_MODES,
    TASK_RANGES,
    NeuronTaskDefinition,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.vllm_server import VllmServer

__all__ = ["ManagedNeuronTaskDefinition"]


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

    @checked(ranges=TASK_RANGES, names=("family",))
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
        if network_mode not in MANAGED_INSTANCES_NETWORK_MODES:
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

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=CONTAINER_RANGES)
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
        startup: Startup | None = None,
        server: VllmServer | None = None,
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
        warm pool that prefetches it (NEURON091); default unknown. ``startup``: the start durations you measured
        (:class:`~neuron_constructs.compute.startup.Startup`), for ``neuron-ecs plan --startup`` and the grace-period
        check (NEURON167); default none stated. ``server``: a vLLM server
        (:class:`~neuron_constructs.knowledge.vllm_server.VllmServer`) whose command, port mapping and container health
        check the library writes (``command=`` is refused beside it, NEURON173), checked against the image's engine
        (NEURON176, NEURON177); it serves under the task's model name (default: ``served_model_name``, else the model
        id). The container gets every NeuronCore of the instance it lands on, known only there: the server needs
        ``tensor_parallel_size`` (NEURON174).
        Refused: a second Neuron container (NEURON005), ``gpu_count`` or
        inference accelerators (NEURON013), ``docker_labels`` (NEURON007).
        """
        path = f"{construct_path(self)}/{id}"
        if self.neuron_containers:
            raise rules.ONE_NEURON_CONTAINER.error(
                path, f"{self.neuron_containers[0].container_name!r} already has NeuronDevice"
            )
        stated = self._stated_tag(path, options.get("environment"))
        given: dict[str, Any] = dict(options)
        plan = self._serve(path, server, given, cores=None)
        container = self._add(id, image, self._driver_check_options(path, driver_check, given))
        self._state_sdk(path, container, neuron_sdk)
        self._driver_check_environment(path, driver_check, container)
        require_all_neuron_devices(self.task_definition, container)
        self._tag_neuron_container(container, stated)
        self.neuron_containers.append(container)
        self._neuron_container_names.append(id)
        self._state_image_size(path, container, image_size_gib)
        self._state_startup(container, startup)
        self._record_intent()
        self._warm_start(container, compile_cache, model_artifacts, hf_token)
        self._served(path, container, server, plan)
        return container
