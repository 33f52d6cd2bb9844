"""Manual mapping: :class:`ManualNeuronTaskDefinition`.

``/dev/neuronN`` through ``linuxParameters.devices``; specific to one instance type, pinned there with a
``memberOf`` placement constraint.
"""

from __future__ import annotations

import functools
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

from neuron_constructs.base.arguments import checked
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
from neuron_constructs.knowledge.vllm_server import VllmServer

__all__ = ["ManualNeuronTaskDefinition"]


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

    @checked(ranges=TASK_RANGES, names=("family",))
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
        if on_managed_instances and network_mode not in MANAGED_INSTANCES_NETWORK_MODES:
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

    @checked(options=ContainerOptions, whole_numbers=CONTAINER_WHOLE_NUMBERS, option_ranges=CONTAINER_RANGES)
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
        startup: Startup | None = None,
        server: VllmServer | None = None,
        **options: Unpack[ContainerOptions],
    ) -> ecs.ContainerDefinition:
        """Add a container that maps Neuron devices and holds ``IPC_LOCK``.

        ``compile_cache`` / ``model_artifacts`` / ``hf_token`` (a Secrets Manager secret, injected as the ECS
        secret ``HF_TOKEN``): warm starts (:mod:`neuron_constructs.compute.model_sources`). ``driver_check``: the
        Neuron driver start check, ``neuron_sdk`` (the image's Neuron SDK release), ``image_size_gib`` and
        ``startup`` and ``server``, as on :meth:`ManagedNeuronTaskDefinition.add_neuron_container`; a server's
        tensor-parallel degree defaults to the NeuronCores the container holds (its devices' cores the task holds,
        logical at ``lnc``) and is refused above them (NEURON174) or warned below them (NEURON175).

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
        given: dict[str, Any] = {
            **options,
            "linux_parameters": linux_parameters,
            **({"environment": environment} if environment else {}),
        }
        held = set(self.cores) & cores_of_devices(chosen, self.instance_type.cores_per_chip(self.lnc))
        plan = self._serve(path, server, given, cores=len(held))
        container = self._add(id, image, self._driver_check_options(path, driver_check, given))
        self._state_sdk(path, container, neuron_sdk)
        self.check_image_support(path, container, (self.instance_type.family,))
        self._driver_check_environment(path, driver_check, container)
        self._mapped.update({i: id for i in chosen})
        self._tag_neuron_container(container, stated)
        self.neuron_containers.append(container)
        self._neuron_container_names.append(id)
        self._state_image_size(path, container, image_size_gib)
        self._state_startup(container, startup)
        self._record_intent()
        self._warm_start(container, compile_cache, model_artifacts, hf_token)
        self._served(path, container, server, plan)
        return container

    def _server_family(self) -> str | None:
        return self.instance_type.family

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
