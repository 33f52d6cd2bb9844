"""Where every Neuron device of an ECS cluster went: container instances, tasks, and what is wrong.

:func:`inspect_cluster` reads a cluster with the fewest calls the ECS API allows and
:func:`find_problems` turns what it read into findings:

* ``ListContainerInstances`` and ``ListTasks`` in pages of 100 (their maximum);
* ``DescribeContainerInstances`` and ``DescribeTasks`` in batches of 100 (their maximum);
* ``DescribeTaskDefinition`` once per distinct task definition, for the ``/dev/neuronN``
  paths that manually mapped containers take (``linuxParameters.devices``); ECS does not
  track those, so neither ``remainingResources`` nor ``neuronDeviceIds`` shows them. The same
  answer gives each container's ``NEURON_RT_VISIBLE_CORES`` and ``NEURON_LOGICAL_NC_CONFIG``
  (``environment``): the NeuronCores it holds of those devices.

Device identity: ECS names a Neuron device by its index (``neuronDeviceIds`` ``"0"`` is
``/dev/neuron0``, per the ``PlatformDevice`` API reference); ``NEURON_DEVICES`` in
``registeredResources`` / ``remainingResources`` lists the same ids. Both are compared by
index, so ``"0"``, ``"neuron0"`` and ``"/dev/neuron0"`` are the same device.

NeuronCores: on an instance type of the catalog, tasks are compared by the cores they hold
(:func:`container_cores`, host numbering): two tasks on one device with disjoint
``NEURON_RT_VISIBLE_CORES`` do not conflict; two that hold one core do. An instance type the
catalog lacks is compared by device.

Uses boto3 only (no AWS CDK import), with botocore's standard retry mode for throttling and short
timeouts (:data:`CONNECT_TIMEOUT_S`, :data:`READ_TIMEOUT_S`, :data:`MAX_ATTEMPTS`): an endpoint that
never answers is given up on within about half a minute. A response without the fields the ECS API
always returns raises :class:`UnexpectedResponseError`.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import (
    LOGICAL_CORE_VARIABLE,
    VISIBLE_CORES_VARIABLE,
    held_cores,
    relabel_cores,
)
from neuron_constructs.knowledge.devices import (
    NEURON_DEVICE_PREFIX,
    device_index,
    format_device_paths,
    format_index_runs,
)
from neuron_constructs.programs.metric_publisher import PROCESS_TAG_VARIABLE

__all__ = [
    "API_PAGE_SIZE",
    "CONNECT_TIMEOUT_S",
    "MAX_ATTEMPTS",
    "READ_TIMEOUT_S",
    "ClusterInspection",
    "ContainerInstance",
    "Finding",
    "FindingKind",
    "InstanceCores",
    "NeuronDevices",
    "Task",
    "TaskContainer",
    "UnexpectedResponseError",
    "client_config",
    "container_cores",
    "count_api_calls",
    "ecs_client",
    "find_problems",
    "inspect_cluster",
    "instance_cores",
    "instance_lnc",
]

API_PAGE_SIZE = 100
"""The maximum of ``maxResults`` for the List calls and of the ARN list for the Describe calls."""

CONNECT_TIMEOUT_S = 5
"""Seconds to wait for a TCP connection to the endpoint."""
READ_TIMEOUT_S = 10
"""Seconds to wait for a response once connected."""
MAX_ATTEMPTS = 3
"""Attempts per call, the first included (botocore's standard retry mode backs off between them):
a hung endpoint is given up on after about ``MAX_ATTEMPTS * READ_TIMEOUT_S`` seconds."""

NEURON_DEVICES = "NEURON_DEVICES"
INSTANCE_TYPE_ATTRIBUTE = "ecs.instance-type"

FindingKind = Literal["conflict", "missing-device", "malformed", "unregistered", "idle"]


class UnexpectedResponseError(RuntimeError):
    """The endpoint answered, but not with what the ECS API returns (a proxy page, a wrong ``--endpoint-url``)."""

    def __init__(self, operation: str, detail: str) -> None:
        super().__init__(f"{operation} returned a response that is not the ECS API's: {detail}")
        self.operation = operation


@dataclass(frozen=True)
class NeuronDevices:
    """The ``NEURON_DEVICES`` ids a container instance registered, and those ECS has not handed out.

    ``problems`` says what was wrong with a registration that is not a string set of device ids.
    """

    registered: tuple[str, ...] = ()
    remaining: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerInstance:
    arn: str
    ec2_instance_id: str | None
    instance_type: str | None
    neuron_devices: NeuronDevices


@dataclass(frozen=True)
class TaskContainer:
    """One container of a task: the devices ECS assigned (managed) or its task definition maps (manual), and the
    Neuron runtime variables its task definition sets: ``NEURON_RT_VISIBLE_CORES`` as written (``"4-5"``),
    ``NEURON_LOGICAL_NC_CONFIG`` (1 or 2; ``None`` when not set or not one of those) and ``NEURON_PROCESS_TAG``, the
    model it reports as (``None`` when not set)."""

    name: str
    neuron_device_ids: tuple[str, ...] = ()
    device_paths: tuple[str, ...] = ()
    visible_cores: str | None = None
    lnc: int | None = None
    model: str | None = None

    def device_indices(self) -> frozenset[int]:
        """The Neuron device indices it holds, managed or mapped."""
        return self._indices

    @functools.cached_property
    def _indices(self) -> frozenset[int]:
        held = {device_index(d) for d in (*self.neuron_device_ids, *self.device_paths)}
        return frozenset(i for i in held if i is not None)


@dataclass(frozen=True)
class Task:
    arn: str
    task_definition: str
    container_instance_arn: str | None
    containers: tuple[TaskContainer, ...]

    def device_indices(self) -> set[int]:
        """Every Neuron device index this task holds, managed or mapped."""
        return {i for c in self.containers for i in c.device_indices()}

    @property
    def model(self) -> str | None:
        """The model its Neuron containers report as (their ``NEURON_PROCESS_TAG``), ``None`` when none is tagged."""
        return next((c.model for c in self.containers if c.model), None)


@dataclass(frozen=True)
class InstanceCores:
    """How the NeuronCores of one container instance are numbered, and which each task holds.

    ``lnc`` is the logical-core setting the instance's tasks state (the most common), else the type's default;
    cores are numbered at it, chip ``d`` holding ``d*per_chip .. d*per_chip+per_chip-1``.
    """

    instance_type: NeuronInstanceType
    lnc: int
    by_task: Mapping[str, frozenset[int]]

    @property
    def per_chip(self) -> int:
        return self.instance_type.cores_per_chip(self.lnc)

    @property
    def count(self) -> int:
        return self.instance_type.cores(self.lnc)


def container_cores(container: TaskContainer, instance_type: NeuronInstanceType, lnc: int) -> frozenset[int]:
    """The NeuronCores ``container`` holds, numbered at ``lnc``: those its ``NEURON_RT_VISIBLE_CORES`` names within
    its devices, else every core of its devices (a container stating another logical-core setting is renumbered)."""
    own = container.lnc if container.lnc in instance_type.lnc_options else lnc
    cores = held_cores(container.device_indices(), container.visible_cores, instance_type.cores_per_chip(own))
    return relabel_cores(cores, own, lnc)


def instance_lnc(instance_type: NeuronInstanceType, tasks: Sequence[Task]) -> int:
    """The logical-core setting an instance's cores are numbered at: the one most of its tasks' containers state,
    else the type's default."""
    if len(instance_type.lnc_options) == 1:
        return instance_type.default_lnc
    stated = Counter(
        c.lnc for t in tasks for c in t.containers if c.lnc in instance_type.lnc_options and c.device_indices()
    ).most_common(1)
    return stated[0][0] if stated else instance_type.default_lnc


def instance_cores(instance: ContainerInstance, tasks: Sequence[Task]) -> InstanceCores | None:
    """The cores of ``instance`` and of each of its ``tasks``; ``None`` for a type the catalog lacks."""
    entry = NeuronInstanceType.find(instance.instance_type or "")
    if entry is None:
        return None
    lnc = instance_lnc(entry, tasks)
    by_task = {t.arn: frozenset().union(*(container_cores(c, entry, lnc) for c in t.containers)) for t in tasks}
    return InstanceCores(entry, lnc, by_task)


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    message: str


@dataclass(frozen=True)
class ClusterInspection:
    """What :func:`inspect_cluster` read, the findings, and the ECS calls it took."""

    cluster: str
    container_instances: tuple[ContainerInstance, ...]
    tasks: tuple[Task, ...]
    findings: tuple[Finding, ...]
    api_calls: Mapping[str, int] = field(default_factory=dict)

    @property
    def has_conflict(self) -> bool:
        return any(f.kind == "conflict" for f in self.findings)

    def tasks_on(self) -> dict[str, list[Task]]:
        """Container instance ARN -> its tasks, in the inspection's order."""
        by_instance: dict[str, list[Task]] = {}
        for task in self.tasks:
            if task.container_instance_arn:
                by_instance.setdefault(task.container_instance_arn, []).append(task)
        return by_instance

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document: ``container_instances``, ``tasks`` and ``findings``; NeuronCores (``neuron_cores``)
        where the instance type is in the catalog, else ``null``."""
        tasks_on = self.tasks_on()
        cores = {i.arn: instance_cores(i, tasks_on.get(i.arn, [])) for i in self.container_instances}
        return {
            "container_instances": [
                {
                    "arn": i.arn,
                    "ec2_instance_id": i.ec2_instance_id,
                    "instance_type": i.instance_type,
                    "neuron_devices": {
                        "registered": list(i.neuron_devices.registered),
                        "remaining": list(i.neuron_devices.remaining),
                    },
                    "neuron_cores": _cores_json(cores[i.arn]),
                }
                for i in self.container_instances
            ],
            "tasks": [
                {
                    "arn": t.arn,
                    "task_definition": t.task_definition,
                    "container_instance_arn": t.container_instance_arn,
                    "containers": [
                        {
                            "name": c.name,
                            "neuron_device_ids": list(c.neuron_device_ids),
                            "device_paths": list(c.device_paths),
                            "visible_cores": c.visible_cores,
                            "logical_nc_config": c.lnc,
                            "model": c.model,
                        }
                        for c in t.containers
                    ],
                    "neuron_cores": _task_cores_json(cores.get(t.container_instance_arn or ""), t.arn),
                }
                for t in self.tasks
            ],
            "findings": [asdict(f) for f in self.findings],
        }


def _cores_json(cores: InstanceCores | None) -> dict[str, Any] | None:
    if cores is None:
        return None
    held = frozenset().union(*cores.by_task.values())
    return {
        "logical_nc_config": cores.lnc,
        "per_device": cores.per_chip,
        "count": cores.count,
        "idle": [c for c in range(cores.count) if c not in held],
    }


def _task_cores_json(cores: InstanceCores | None, task: str) -> list[int] | None:
    return None if cores is None else sorted(cores.by_task.get(task, ()))


def client_config() -> Any:
    """botocore ``Config`` of every ``neuron-ecs`` client: standard retries, short timeouts."""
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        user_agent_extra="neuron-ecs",
    )


def ecs_client(*, region: str | None = None, endpoint_url: str | None = None, session: Any = None) -> Any:
    """An ECS client with :func:`client_config` (standard retry mode, short timeouts)."""
    import boto3

    session = session or boto3.Session(region_name=region)
    return session.client("ecs", region_name=region, endpoint_url=endpoint_url, config=client_config())


@contextlib.contextmanager
def count_api_calls(client: Any) -> Iterator[Counter[str]]:
    """Count the operations ``client`` calls inside the ``with`` block (one per call, not per retry)."""
    calls: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-parameter-build", count)
    try:
        yield calls
    finally:
        client.meta.events.unregister("before-parameter-build", count)


def _batches(items: Sequence[str], size: int = API_PAGE_SIZE) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _field(response: Any, key: str, operation: str) -> list[Any]:
    """``response[key]`` as the list the ECS API returns, or :class:`UnexpectedResponseError`."""
    value = response.get(key) if isinstance(response, Mapping) else None
    if not isinstance(value, list):
        raise UnexpectedResponseError(operation, f"no {key} list in it")
    return value


def _list_all(
    client: Any, operation: str, key: str, progress: Callable[[str], None] | None = None, **params: Any
) -> list[str]:
    paginator = client.get_paginator(operation)
    pages = paginator.paginate(**params, PaginationConfig={"PageSize": API_PAGE_SIZE})
    name = client.meta.method_to_api_mapping.get(operation, operation)
    found: list[str] = []
    for page in pages:
        found += [str(arn) for arn in _field(page, key, name)]
        if progress:
            progress(f"listed {len(found)} {key}")
    return found


def _neuron_resource(resources: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, ...], str | None]:
    """The ``NEURON_DEVICES`` ids, and what is wrong with the entry if it is not a set of device ids."""
    for resource in resources:
        if isinstance(resource, Mapping) and resource.get("name") == NEURON_DEVICES:
            values = resource.get("stringSetValue")
            if resource.get("type") not in (None, "STRINGSET") or not isinstance(values, list):
                return (), f"{NEURON_DEVICES} is a {resource.get('type')} resource, not a string set of device ids"
            ids = tuple(str(v) for v in values)
            bad = [i for i in ids if device_index(i) is None]
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if bad:
                return ids, f"{NEURON_DEVICES} holds ids that name no device: {bad}"
            if repeated:
                return ids, f"{NEURON_DEVICES} lists {repeated} more than once"
            return ids, None
    return (), None


def _container_instance(raw: Mapping[str, Any]) -> ContainerInstance:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("containerInstanceArn"), str):
        raise UnexpectedResponseError("DescribeContainerInstances", "a container instance without containerInstanceArn")
    attributes = {
        a["name"]: a.get("value") for a in raw.get("attributes") or [] if isinstance(a, Mapping) and "name" in a
    }
    registered, registered_problem = _neuron_resource(raw.get("registeredResources") or [])
    remaining, remaining_problem = _neuron_resource(raw.get("remainingResources") or [])
    problems = tuple(
        f"{where}: {problem}"
        for where, problem in (("registered", registered_problem), ("remaining", remaining_problem))
        if problem
    )
    return ContainerInstance(
        arn=raw["containerInstanceArn"],
        ec2_instance_id=raw.get("ec2InstanceId"),
        instance_type=attributes.get(INSTANCE_TYPE_ATTRIBUTE),
        neuron_devices=NeuronDevices(registered=registered, remaining=remaining, problems=problems),
    )


@dataclass(frozen=True)
class _Mapped:
    """What a container definition says about Neuron: the ``/dev/neuronN`` host paths its ``linuxParameters.devices``
    map, and its ``NEURON_RT_VISIBLE_CORES``, ``NEURON_LOGICAL_NC_CONFIG`` and ``NEURON_PROCESS_TAG``."""

    paths: tuple[str, ...] = ()
    visible_cores: str | None = None
    lnc: int | None = None
    model: str | None = None


def _mapped_devices(task_definition: Mapping[str, Any]) -> dict[str, _Mapped]:
    """Container name -> its Neuron devices and runtime variables."""
    mapped: dict[str, _Mapped] = {}
    for container in task_definition.get("containerDefinitions") or []:
        if not isinstance(container, Mapping):
            continue
        devices = (container.get("linuxParameters") or {}).get("devices") or []
        paths = tuple(
            str(d["hostPath"])
            for d in devices
            if isinstance(d, Mapping) and str(d.get("hostPath", "")).startswith(NEURON_DEVICE_PREFIX)
        )
        environment = {
            str(e.get("name")): e.get("value")
            for e in container.get("environment") or []
            if isinstance(e, Mapping) and isinstance(e.get("name"), str)
        }
        visible = environment.get(VISIBLE_CORES_VARIABLE)
        lnc = str(environment.get(LOGICAL_CORE_VARIABLE, "")).strip()
        tag = environment.get(PROCESS_TAG_VARIABLE)
        mapped[str(container.get("name", "?"))] = _Mapped(
            paths,
            str(visible) if visible is not None else None,
            int(lnc) if lnc in ("1", "2") else None,
            str(tag) if isinstance(tag, str) and tag.strip() else None,
        )
    return mapped


def inspect_cluster(
    client: Any, cluster: str, *, desired_status: str = "RUNNING", progress: Callable[[str], None] | None = None
) -> ClusterInspection:
    """Read ``cluster`` through the ECS ``client`` and report where its Neuron devices went.

    ``desired_status`` selects the tasks (``RUNNING`` covers pending and running ones);
    ``progress`` receives a short line after every page and batch. Raises botocore's
    ``ClientError`` (e.g. ``ClusterNotFoundException``) unchanged, and
    :class:`UnexpectedResponseError` for a response the ECS API would not give.
    """
    with count_api_calls(client) as calls:
        instance_arns = _list_all(
            client, "list_container_instances", "containerInstanceArns", progress, cluster=cluster
        )
        instances: list[ContainerInstance] = []
        for batch in _batches(instance_arns):
            response = client.describe_container_instances(cluster=cluster, containerInstances=list(batch))
            instances += [
                _container_instance(raw) for raw in _field(response, "containerInstances", "DescribeContainerInstances")
            ]
            if progress:
                progress(f"described {len(instances)} of {len(instance_arns)} container instances")

        task_arns = _list_all(client, "list_tasks", "taskArns", progress, cluster=cluster, desiredStatus=desired_status)
        raw_tasks: list[Mapping[str, Any]] = []
        for batch in _batches(task_arns):
            raw_tasks += _field(client.describe_tasks(cluster=cluster, tasks=list(batch)), "tasks", "DescribeTasks")
            if progress:
                progress(f"described {len(raw_tasks)} of {len(task_arns)} tasks")
        for raw in raw_tasks:
            if not isinstance(raw, Mapping) or not isinstance(raw.get("taskArn"), str):
                raise UnexpectedResponseError("DescribeTasks", "a task without taskArn")
            if not isinstance(raw.get("taskDefinitionArn"), str):
                raise UnexpectedResponseError("DescribeTasks", f"task {raw['taskArn']} without taskDefinitionArn")

        mapped_by_definition: dict[str, dict[str, _Mapped]] = {}
        for arn in dict.fromkeys(t["taskDefinitionArn"] for t in raw_tasks):
            definition = client.describe_task_definition(taskDefinition=arn).get("taskDefinition")
            if not isinstance(definition, Mapping):
                raise UnexpectedResponseError("DescribeTaskDefinition", "no taskDefinition in it")
            mapped_by_definition[arn] = _mapped_devices(definition)

    tasks = [
        Task(
            arn=raw["taskArn"],
            task_definition=raw["taskDefinitionArn"],
            container_instance_arn=raw.get("containerInstanceArn"),
            containers=tuple(
                _task_container(c, mapped_by_definition[raw["taskDefinitionArn"]].get(c.get("name", ""), _Mapped()))
                for c in raw.get("containers") or []
                if isinstance(c, Mapping)
            ),
        )
        for raw in raw_tasks
    ]
    return ClusterInspection(
        cluster=cluster,
        container_instances=tuple(instances),
        tasks=tuple(tasks),
        findings=tuple(find_problems(instances, tasks)),
        api_calls=dict(calls),
    )


def _task_container(raw: Mapping[str, Any], mapped: _Mapped) -> TaskContainer:
    return TaskContainer(
        name=str(raw.get("name", "?")),
        neuron_device_ids=tuple(raw.get("neuronDeviceIds", [])),
        device_paths=mapped.paths,
        visible_cores=mapped.visible_cores,
        lnc=mapped.lnc,
        model=mapped.model,
    )


def _short(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def _instance_label(instance: ContainerInstance) -> str:
    return f"{instance.ec2_instance_id or _short(instance.arn)} ({instance.instance_type or 'unknown type'})"


def find_problems(instances: Sequence[ContainerInstance], tasks: Sequence[Task]) -> list[Finding]:
    """Findings, most severe first.

    * ``conflict``: two tasks on one instance hold the same NeuronCore (manual mappings are not
      tracked by ECS, so two copies of a manual task, or a manual and a managed task, collide);
      tasks on one device with disjoint ``NEURON_RT_VISIBLE_CORES`` do not. On a type the catalog
      lacks, the same device;
    * ``missing-device``: a task holds a device its instance type does not have;
    * ``malformed``: a ``NEURON_DEVICES`` registration that is not a string set of device ids;
    * ``unregistered``: a Neuron instance type registered no ``NEURON_DEVICES`` (not the Neuron AMI?);
    * ``idle``: registered devices that no task holds, and idle NeuronCores of devices in use.
    """
    tasks_by_instance: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        if task.container_instance_arn:
            tasks_by_instance[task.container_instance_arn].append(task)

    conflicts: list[Finding] = []
    missing: list[Finding] = []
    malformed: list[Finding] = []
    unregistered: list[Finding] = []
    idle: list[Finding] = []
    for instance in instances:
        on_instance = tasks_by_instance.get(instance.arn, [])
        cores = instance_cores(instance, on_instance)
        per_chip = cores.per_chip if cores else 1
        held = cores.by_task if cores else {task.arn: frozenset(task.device_indices()) for task in on_instance}
        holders: dict[int, list[Task]] = defaultdict(list)
        for task in on_instance:
            for core in held[task.arn]:
                holders[core].append(task)
        label = _instance_label(instance)
        malformed += [
            Finding("malformed", f"{label}: {problem}; ECS cannot hand these devices out as registered")
            for problem in instance.neuron_devices.problems
        ]
        conflicts += _conflicts(label, holders, per_chip, by_core=cores is not None)
        catalog_entry = NeuronInstanceType.find(instance.instance_type or "")
        if catalog_entry is not None:
            for task in on_instance:
                beyond = {i for i in task.device_indices() if i >= catalog_entry.chips}
                if beyond:
                    missing.append(
                        Finding(
                            "missing-device",
                            f"{label}: task {_short(task.arn)} ({_short(task.task_definition)}) holds "
                            f"{format_device_paths(beyond)}, but {catalog_entry.name} has "
                            f"{format_device_paths(range(catalog_entry.chips))} only",
                        )
                    )
        registered = {i for i in map(device_index, instance.neuron_devices.registered) if i is not None}
        if not registered:
            if catalog_entry is not None and not instance.neuron_devices.problems:
                unregistered.append(
                    Finding(
                        "unregistered",
                        f"{label}: registered no {NEURON_DEVICES} although {catalog_entry.name} has "
                        f"{catalog_entry.chips}; run the ECS-optimized Amazon Linux 2023 Neuron AMI",
                    )
                )
            continue
        used = {core // per_chip for core in holders}
        unused = registered - used
        parts = []
        if unused:
            parts.append(f"{len(unused)} of {len(registered)} Neuron devices idle: {format_device_paths(unused)}")
        if cores is not None:
            partly = sorted(
                core for chip in registered & used for core in range(chip * per_chip, (chip + 1) * per_chip)
            )
            spare = [core for core in partly if core not in holders]
            if spare:
                partial = ", ".join(
                    f"{format_index_runs(c)} of {NEURON_DEVICE_PREFIX}{d}" for d, c in _by_chip(spare, per_chip)
                )
                cores_text = f"{len(spare)} NeuronCore{'s' if len(spare) > 1 else ''}"
                parts.append(f"{cores_text} idle on devices in use: {partial}")
        if parts:
            idle.append(Finding("idle", f"{label}: {'; '.join(parts)}"))
    return conflicts + missing + malformed + unregistered + idle


def _by_chip(cores: Iterable[int], per_chip: int) -> list[tuple[int, list[int]]]:
    """Cores grouped by the chip holding them, in order."""
    chips: dict[int, list[int]] = {}
    for core in sorted(cores):
        chips.setdefault(core // per_chip, []).append(core)
    return list(chips.items())


def _conflicts(label: str, holders: Mapping[int, list[Task]], per_chip: int, *, by_core: bool) -> list[Finding]:
    """One finding per device and set of tasks holding cores of it together (``by_core``), or per device."""
    shared: dict[tuple[int, tuple[str, ...]], list[int]] = {}
    tasks: dict[str, Task] = {}
    for core, held_by in sorted(holders.items()):
        if len(held_by) > 1:
            tasks.update((t.arn, t) for t in held_by)
            shared.setdefault((core // per_chip, tuple(t.arn for t in held_by)), []).append(core)
    found = []
    for (chip, arns), cores in shared.items():
        names = ", ".join(f"{_short(a)} ({_short(tasks[a].task_definition)})" for a in arns)
        device = f"{NEURON_DEVICE_PREFIX}{chip}"
        if not by_core:
            what = f"{device} is held"
        elif len(cores) == per_chip:
            what = f"{device} (NeuronCore{'s' if per_chip > 1 else ''} {format_index_runs(cores)}) is held"
        else:
            plural = len(cores) > 1
            what = (
                f"NeuronCore{'s' if plural else ''} {format_index_runs(cores)} of {device} "
                f"{'are' if plural else 'is'} held"
            )
        fix = (
            "give each task different devices or disjoint NEURON_RT_VISIBLE_CORES, or keep one task per instance "
            "(distinctInstance)"
            if by_core
            else "give each task definition different devices or keep one task per instance (distinctInstance)"
        )
        found.append(Finding("conflict", f"{label}: {what} by {len(arns)} tasks: {names}; {fix}"))
    return found
