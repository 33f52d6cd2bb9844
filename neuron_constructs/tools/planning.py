"""``neuron-ecs plan``: where the templates put every model's copies, before anything is deployed.

For every Neuron capacity of an app's templates, one planned instance as an
:class:`~neuron_constructs.tools.device_map.InstanceLayout`, drawn by the renderer ``neuron-ecs inspect`` uses:

* an Auto Scaling capacity of one catalog type: every service whose tasks land on it (its strategy names the
  capacity, or it may run on the capacity's type - the rule the template checks apply) and whose task holds Neuron
  devices places its task on the instance: one per instance with ``distinctInstance`` or as a daemon, else two when
  two of its tasks can run at once and fit one instance (as NEURON022 counts them: ECS does not track mapped
  devices, so the second maps the same ones). A manually mapped task holds the cores its ``NEURON_RT_VISIBLE_CORES``
  names within its devices, else every core of them; one asking for ``NeuronDevice`` holds every core;
* a Managed Instances capacity: an instance per service whose task asks for ``NeuronDevice`` (ECS hands it every
  device), of the capacity's one type, else of the smallest catalog type it admits that fits the task.

Holders are named by construct path: the template's ``aws:cdk:path`` metadata (``cdk synth`` writes it), else the
cloud assembly's (``manifest.json`` and the ``*.metadata.json`` beside a template in ``cdk.out``), else the logical
id. Several templates are planned as one
app: a service in one stack and the capacity it imports from another are matched, as ``neuron-ecs lint`` matches
them. No AWS CDK import, no AWS call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_constructs.checks.cfn_template import Capacity, EcsTemplate, Service, TaskDefinition, combine_templates
from neuron_constructs.checks.lint import load_templates
from neuron_constructs.checks.template_loading import LoadedTemplate, TemplateError, read_json_file
from neuron_constructs.checks.warm_up import capacity_fetches, capacity_launch_template, warm_up_groups
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import LOGICAL_CORE_VARIABLE, VISIBLE_CORES_VARIABLE, held_cores, relabel_cores
from neuron_constructs.knowledge.devices import format_device_paths, format_index_runs
from neuron_constructs.knowledge.warm_start import RootVolumeRoom, root_volume_room
from neuron_constructs.tools.device_map import Holder, InstanceLayout, label

__all__ = [
    "Fetch",
    "PlanResult",
    "app_model",
    "fetch_lists",
    "plan_paths",
    "plan_template",
    "plan_templates",
    "read_app",
]


@dataclass(frozen=True)
class PlanResult:
    """The planned instances, and the files that could not be read as templates (each with why)."""

    layouts: list[InstanceLayout]
    unreadable: list[str]
    fetches: list[Fetch] = field(default_factory=list)
    """Per capacity, what a new instance fetches before its tasks start."""

    @property
    def holds_a_core_twice(self) -> bool:
        return any(layout.conflicts for layout in self.layouts)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document: ``instances`` (one layout each) and ``unreadable``."""
        return {
            "instances": [layout.to_json() for layout in self.layouts],
            "fetches": [fetch.to_json() for fetch in self.fetches],
            "unreadable": list(self.unreadable),
        }


def plan_paths(paths: Sequence[str]) -> PlanResult:
    """Plan the templates ``paths`` name (files, or directories such as ``cdk.out``) as one app.

    Raises :class:`~neuron_constructs.checks.lint.LintUsageError` for a path that does not exist. A cloud assembly
    manifest that is not one is reported in ``unreadable`` (its templates are still planned, by logical id).
    """
    loaded, paths_of, unreadable = read_app(paths)
    layouts = plan_templates(loaded, construct_paths=paths_of) if loaded else []
    fetches = fetch_lists(app_model(loaded, construct_paths=paths_of)) if loaded else []
    return PlanResult(layouts, unreadable, fetches)


def read_app(
    paths: Sequence[str],
) -> tuple[dict[str, LoadedTemplate], Callable[[str, str], str | None], list[str]]:
    """The templates ``paths`` name, a ``construct_paths(template, logical_id)`` from their cloud assemblies, and
    the files that could not be read (each a sentence), as :func:`plan_paths` reads them."""
    loaded, unreadable = load_templates(paths)
    construct_paths: dict[str, dict[str, str]] = {}
    for name in loaded:
        try:
            construct_paths[name] = read_assembly_paths(Path(name))
        except TemplateError as error:
            construct_paths[name] = {}
            if str(error) not in unreadable:
                unreadable.append(str(error))
    return loaded, lambda name, lid: construct_paths.get(name, {}).get(lid), unreadable


def assembly_paths(template: Path) -> dict[str, str]:
    """Logical id -> construct path, from the cloud assembly a template is part of (``manifest.json`` beside it, and
    the metadata file it names); empty for a template outside one, or beside a manifest that is not one."""
    try:
        return read_assembly_paths(template)
    except TemplateError:
        return {}


def read_assembly_paths(template: Path) -> dict[str, str]:
    """:func:`assembly_paths`, raising :class:`~neuron_constructs.checks.template_loading.TemplateError` with a sentence
    for a ``manifest.json`` (or the metadata file it names) of another shape than a cloud assembly's: read as
    templates are (a regular file of at most 5 MiB, bounded nesting), every value it is read for of the type the
    cloud assembly schema gives it, a metadata file inside the assembly's directory."""
    manifest_file = template.parent / "manifest.json"
    if not manifest_file.exists() and not manifest_file.is_symlink():
        return {}

    def problem(what: str) -> TemplateError:
        return TemplateError(f"{manifest_file}: {what}, not a cloud assembly manifest")

    manifest = _read_json(manifest_file)
    if not isinstance(manifest, dict):
        raise problem(f"a JSON {_kind(manifest)}")
    artifacts = manifest.get("artifacts")
    if artifacts is None:
        return {}
    if not isinstance(artifacts, dict):
        raise problem(f"artifacts is a {_kind(artifacts)}")
    for artifact_id, artifact in artifacts.items():
        if not isinstance(artifact, dict):
            raise problem(f"artifact {artifact_id!r} is a {_kind(artifact)}")
        properties = artifact.get("properties")
        if properties is not None and not isinstance(properties, dict):
            raise problem(f"the properties of artifact {artifact_id!r} are a {_kind(properties)}")
        if not properties or properties.get("templateFile") != template.name:
            continue
        metadata = artifact.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise problem(f"the metadata of artifact {artifact_id!r} is a {_kind(metadata)}")
        entries = dict(metadata or {})
        extra = artifact.get("additionalMetadataFile")
        if extra is not None:
            entries.update(_metadata_file(template.parent, extra, artifact_id, problem))
        return _logical_ids(entries, artifact_id, problem)
    return {}


def _read_json(path: Path) -> Any:
    try:
        return read_json_file(path)
    except TemplateError as error:
        raise (error if str(path) in str(error) else TemplateError(f"{path}: {error}")) from None


def _kind(value: Any) -> str:
    """A JSON value's type: object, list, string, number, boolean or null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


def _metadata_file(
    assembly: Path, name: Any, artifact_id: str, problem: Callable[[str], TemplateError]
) -> dict[str, Any]:
    """The ``additionalMetadataFile`` an artifact names: a JSON object in a regular file inside ``assembly``."""
    if not isinstance(name, str) or not name:
        raise problem(f"the additionalMetadataFile of artifact {artifact_id!r} is a {_kind(name)}")
    path = assembly / name
    try:
        inside = path.resolve().is_relative_to(assembly.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise problem(f"artifact {artifact_id!r} names {name!r}, outside the cloud assembly")
    document = _read_json(path)
    if not isinstance(document, dict):
        raise problem(f"{name} (the metadata of artifact {artifact_id!r}) is a JSON {_kind(document)}")
    return document


def _logical_ids(
    entries: Mapping[str, Any], artifact_id: str, problem: Callable[[str], TemplateError]
) -> dict[str, str]:
    """Logical id -> construct path from an artifact's metadata (construct path -> its entries)."""
    found: dict[str, str] = {}
    for path, listed in entries.items():
        if not isinstance(listed, list):
            raise problem(f"the metadata of {path!r} in artifact {artifact_id!r} is a {_kind(listed)}")
        for entry in listed:
            if not isinstance(entry, dict):
                raise problem(f"a metadata entry of {path!r} in artifact {artifact_id!r} is a {_kind(entry)}")
            if entry.get("type") != "aws:cdk:logicalId":
                continue
            data = entry.get("data")
            if not isinstance(data, str):
                raise problem(f"the logical id of {path!r} in artifact {artifact_id!r} is a {_kind(data)}")
            found[data] = path.lstrip("/")
    return found


def plan_template(template: LoadedTemplate | dict[str, Any], *, name: str = "template") -> list[InstanceLayout]:
    """The planned instances of one template."""
    return plan_templates({name: template})


def plan_templates(
    templates: Mapping[str, LoadedTemplate | dict[str, Any]],
    *,
    construct_paths: Callable[[str, str], str | None] | None = None,
) -> list[InstanceLayout]:
    """The planned instances of the templates of one app (stacks that reference each other's exports), by name;
    ``construct_paths(template, logical_id)`` names resources whose template has no ``aws:cdk:path`` metadata."""
    model = app_model(templates, construct_paths=construct_paths)
    layouts: list[InstanceLayout] = []
    for capacity in model.capacities.values():
        if capacity.kind == "auto-scaling":
            entry = NeuronInstanceType.find(capacity.single_type or "")
            if entry is not None:
                layouts.append(_auto_scaling_layout(model, capacity, entry))
        else:
            layouts += _managed_instances_layouts(model, capacity)
    return layouts


def app_model(
    templates: Mapping[str, LoadedTemplate | dict[str, Any]],
    *,
    construct_paths: Callable[[str, str], str | None] | None = None,
) -> EcsTemplate:
    """The ECS model of the templates of one app, combined when there are several (as :func:`plan_templates`)."""
    plain = {n: (t.template if isinstance(t, LoadedTemplate) else t) for n, t in templates.items()}
    if len(plain) == 1:
        ((name, template),) = plain.items()
        paths = (lambda logical_id: construct_paths(name, logical_id)) if construct_paths else None
        model = EcsTemplate(LoadedTemplate(template), name=name, construct_paths=paths)
    else:
        combined, origin = combine_templates(plain)

        def combined_paths(logical_id: str) -> str | None:
            return construct_paths(*origin[logical_id]) if construct_paths and logical_id in origin else None

        model = EcsTemplate(LoadedTemplate(combined), construct_paths=combined_paths, origin=origin)
    return model


def _name(t: EcsTemplate, logical_id: str) -> str:
    """A resource's construct path, its last segment once where it repeats (``Service/Service``); a logical id
    without one is prefixed with its template's name when several are planned together."""
    path = t.path_of(logical_id)
    where = t.origin.get(logical_id)
    if where is not None and path == where[1]:
        return f"{Path(where[0]).name.removesuffix('.template.json')}/{path}"
    parts = path.split("/")
    while len(parts) > 1 and parts[-1] == parts[-2]:
        parts.pop()
    return "/".join(parts)


# --- Auto Scaling --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Placed:
    service: Service
    task: TaskDefinition
    copies: int
    """Tasks of the service on one instance: 1, or 2 where nothing keeps two apart."""


def _neuron_services(t: EcsTemplate, capacity: Capacity) -> tuple[list[_Placed], list[str]]:
    """The services on ``capacity`` whose tasks hold Neuron devices, and remarks on those that cannot be planned."""
    placed: list[_Placed] = []
    remarks: list[str] = []
    for service in t.services.values():
        if not t.lands_on(service, capacity):
            continue
        task = t.task_definitions.get(service.task_definition or "")
        if task is None:
            remarks.append(f"{_name(t, service.logical_id)}: its task definition is not in these templates")
        elif task.manual_mapping or task.managed_allocation:
            placed.append(_Placed(service, task, _copies(service, task, capacity)))
    return placed, remarks


def _copies(service: Service, task: TaskDefinition, capacity: Capacity) -> int:
    """2 where two of the service's tasks can run at once (more than one task, or a rolling deployment that starts a
    new task before stopping the old) and nothing keeps them off one instance; else 1."""
    if service.daemon or service.distinct_instance or task.managed_allocation:
        return 1
    concurrent = (service.max_tasks or 1) > 1 or (service.rolling and service.maximum_percent > 100)
    entry = NeuronInstanceType.find(capacity.single_type or "")
    cpu = task.cpu or sum(c.cpu or 0 for c in task.containers)
    memory = task.memory or sum(c.memory_reservation or c.memory or 0 for c in task.containers)
    fit = entry is None or (2 * cpu <= entry.cpu_units and 2 * memory <= entry.memory_mib)
    return 2 if concurrent and fit else 1


def _lnc(entry: NeuronInstanceType, tasks: Sequence[TaskDefinition]) -> int:
    """The logical-core setting most of the tasks run with, else the type's default."""
    stated = Counter(
        lnc for lnc in (_task_lnc(entry, task) for task in tasks) if lnc is not None and lnc in entry.lnc_options
    )
    return stated.most_common(1)[0][0] if stated else entry.default_lnc


def _task_lnc(entry: NeuronInstanceType, task: TaskDefinition) -> int | None:
    if task.instance_type is not None:
        return task.lnc
    for container in task.containers:
        stated = str(container.environment.get(LOGICAL_CORE_VARIABLE, ""))
        if stated in ("1", "2"):
            return int(stated)
    declared = task.intent.get("lnc")
    return declared if isinstance(declared, int) else None


def _task_cores(entry: NeuronInstanceType, task: TaskDefinition, lnc: int) -> frozenset[int]:
    """The cores a task holds on ``entry`` at ``lnc``: every core for ``NeuronDevice``, else its containers'."""
    if task.managed_allocation:
        return frozenset(range(entry.cores(lnc)))
    own = _task_lnc(entry, task)
    own = own if own in entry.lnc_options else lnc
    held: set[int] = set()
    for container in task.containers:
        devices = [i for i in container.neuron_devices if i is not None]
        visible = container.environment.get(VISIBLE_CORES_VARIABLE)
        cores = held_cores(devices, visible if isinstance(visible, str) else None, entry.cores_per_chip(own))
        held |= relabel_cores(cores, own, lnc)
    return frozenset(held)


def _tasks_text(service: Service, copies: int) -> str:
    if service.daemon:
        return "a daemon: one task on every instance"
    low, high = service.min_tasks, service.max_tasks
    if high is None:
        count = "tasks"
    elif low in (None, high):
        count = f"{high} task{'s' if high != 1 else ''}"
    else:
        count = f"{low}-{high} tasks"
    if copies > 1:
        return f"{count}, two can land on one instance (no distinctInstance)"
    if service.distinct_instance:
        return f"{count} (distinctInstance)" if high == 1 else f"{count}, one per instance (distinctInstance)"
    return count


def _holder_name(path: str, cores: frozenset[int], per_chip: int, tasks: str) -> str:
    devices = sorted({core // per_chip for core in cores})
    cores_text = f"core{'s' if len(cores) != 1 else ''} {format_index_runs(cores)}"
    return f"{path}: {cores_text} of {format_device_paths(devices)}; {tasks}"


def _auto_scaling_layout(t: EcsTemplate, capacity: Capacity, entry: NeuronInstanceType) -> InstanceLayout:
    placed, remarks = _neuron_services(t, capacity)
    lnc = _lnc(entry, [p.task for p in placed])
    per_chip = entry.cores_per_chip(lnc)
    holders: list[Holder] = []
    for item in placed:
        cores = _task_cores(entry, item.task, lnc)
        path = _name(t, item.service.logical_id)
        beyond = sorted({core // per_chip for core in cores if core >= entry.cores(lnc)})
        if beyond:
            # Said, not drawn: the map holds the chips the type has, however high a device a template names.
            remarks.append(f"{path} maps {format_device_paths(beyond)}, which {entry.name} does not have")
            cores = frozenset(core for core in cores if core < entry.cores(lnc))
        for copy in range(item.copies):
            name = _holder_name(path, cores, per_chip, _tasks_text(item.service, item.copies))
            holders.append(Holder(label(len(holders)), name, f"{item.service.logical_id}#{copy}", cores))
    notes = (f"each of up to {capacity.max_size} instances",) if capacity.max_size is not None else ()
    return InstanceLayout(
        title=f"{_name(t, capacity.logical_id)} ({entry.name})",
        instance_type=entry,
        chips=entry.chips,
        cores_per_chip=per_chip,
        registered=frozenset(range(entry.chips)),
        holders=tuple(holders),
        lnc=lnc,
        notes=notes,
        remarks=tuple(remarks),
    )


# --- Managed Instances ---------------------------------------------------------------------------


def _managed_type(capacity: Capacity, task: TaskDefinition) -> NeuronInstanceType | None:
    """The capacity's one catalog type, else the smallest admitted type with the task's CPU and memory."""
    single = NeuronInstanceType.find(capacity.single_type or "")
    if single is not None:
        return single
    cpu = task.cpu or 0
    memory = task.memory or 0
    fitting = [e for e in capacity.admitted if cpu <= e.cpu_units and memory <= e.schedulable_memory_mib]
    return min(fitting, key=lambda e: (e.chips, e.vcpus, e.memory_gib), default=None)


def _managed_instances_layouts(t: EcsTemplate, capacity: Capacity) -> list[InstanceLayout]:
    layouts: list[InstanceLayout] = []
    for service in t.services.values():
        task = t.task_definitions.get(service.task_definition or "")
        if task is None or not task.managed_allocation or not t.lands_on(service, capacity):
            continue
        entry = _managed_type(capacity, task)
        if entry is None:
            continue
        lnc = _lnc(entry, [task])
        path = _name(t, service.logical_id)
        cores = frozenset(range(entry.cores(lnc)))
        remarks: tuple[str, ...] = ()
        if capacity.single_type is None:
            remarks = (f"{entry.name}: the smallest type the capacity admits with the task's CPU and memory",)
        tasks = f"{_tasks_text(service, 1)}; NeuronDevice: every device"
        name = _holder_name(path, cores, entry.cores_per_chip(lnc), tasks)
        layouts.append(
            InstanceLayout(
                title=f"{_name(t, capacity.logical_id)} ({entry.name}) for {path}",
                instance_type=entry,
                chips=entry.chips,
                cores_per_chip=entry.cores_per_chip(lnc),
                registered=frozenset(range(entry.chips)),
                holders=(Holder(label(0), name, service.logical_id, cores),),
                lnc=lnc,
                remarks=remarks,
            )
        )
    return layouts


# --- what a new instance fetches -----------------------------------------------------------------

_SHOWN_DEPTH = 6
_SHOWN_LENGTH = 240


@dataclass(frozen=True)
class Fetch:
    """What a new instance of one capacity fetches before the tasks placed on it start: the container images of the
    services that land on it, and the S3 prefixes their model-artifact sync containers copy (``aws s3 sync``), each
    as the template writes it (a computed part shown as ``<Ref>`` or ``<Logical.Attribute>``). ``warm_pool``: the
    warm pool's minimum size when the group has one (a warm instance fetched them before it was stopped)."""

    capacity: str
    images: tuple[str, ...]
    artifacts: tuple[str, ...]
    warm_pool: int | None = None
    kind: str = "auto-scaling"
    """``auto-scaling`` or ``managed-instances``."""
    scale_in_after: int | None = None
    """Managed Instances: seconds ECS keeps an idle instance (``InfrastructureOptimization.ScaleInAfter``), if set."""
    room: RootVolumeRoom | None = None
    """Auto Scaling: the root volume against the AMI and what is fetched, with the sizes the task definitions state
    (``None`` when the template does not show the root volume)."""
    prefetched: bool = False
    """Whether the group's warm-up fetches it before a warm instance stops (its volume must hold it: NEURON091)."""
    not_prefetched: tuple[str, ...] = ()
    """With ``prefetched``: what the warm-up does not fetch (an image named by a token, a service of another template
    that publishes nothing under the path the warm-up reads; NEURON124), pulled or copied when its task is placed."""

    def to_json(self) -> dict[str, Any]:
        room = self.room
        return {
            "capacity": self.capacity,
            "kind": self.kind,
            "scale_in_after": self.scale_in_after,
            "images": list(self.images),
            "artifacts": list(self.artifacts),
            "warm_pool_min_size": self.warm_pool,
            "prefetched": self.prefetched,
            "not_prefetched": list(self.not_prefetched),
            "root_volume": None
            if room is None
            else {
                "size_gib": room.root_volume_gib,
                "ami_gib": room.ami_gib,
                "known_gib": round(room.known_gib, 2),
                "needed_gib": room.needed_gib,
                "fits": room.fits,
                "sizes_gib": [
                    {"what": f.what, "kind": f.kind, "size_gib": f.size_gib, "on_disk_gib": f.on_disk_gib}
                    for f in room.fetched
                ],
                "unknown": [f.what for f in room.unknown],
            },
        }


def shown(value: Any, depth: int = 0) -> str:
    """A template value as text: strings as they are, ``Ref`` and ``Fn::GetAtt`` as ``<name>``, ``Fn::Join`` joined,
    ``Fn::Sub`` as its template, anything else ``<computed>``; nested at most 6 deep and cut at 240 characters."""
    text = _shown(value, depth)
    return text if len(text) <= _SHOWN_LENGTH else text[: _SHOWN_LENGTH - 1] + "…"


def _shown(value: Any, depth: int) -> str:
    if isinstance(value, str):
        return value[: _SHOWN_LENGTH + 1]
    if depth >= _SHOWN_DEPTH or not isinstance(value, dict) or len(value) != 1:
        return "<computed>"
    ((function, argument),) = value.items()
    if function == "Ref" and isinstance(argument, str):
        return f"<{argument[:80]}>"
    if function == "Fn::GetAtt" and isinstance(argument, list) and all(isinstance(a, str) for a in argument[:2]):
        return "<" + ".".join(argument[:2])[:80] + ">"
    if function == "Fn::GetAtt" and isinstance(argument, str):
        return f"<{argument[:80]}>"
    if function == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
        separator, parts = argument
        if isinstance(separator, str) and isinstance(parts, list):
            joined = ""
            for part in parts[:64]:
                joined += (separator if joined else "") + _shown(part, depth + 1)
                if len(joined) > _SHOWN_LENGTH:
                    break
            return joined
    if function == "Fn::Sub":
        template = argument[0] if isinstance(argument, list) and argument else argument
        if isinstance(template, str):
            return template[: _SHOWN_LENGTH + 1]
    return "<computed>"


def fetch_lists(t: EcsTemplate) -> list[Fetch]:
    """Per Neuron capacity of the app (a catalog type, or Managed Instances), what a new instance fetches: the images
    of every service whose tasks land on it, and the model prefixes their sync containers copy; in template order,
    each once."""
    pools: dict[str, int | None] = {}
    for resource in t.resources.values():
        if resource.get("Type") != "AWS::AutoScaling::WarmPool":
            continue
        properties = resource.get("Properties")
        properties = properties if isinstance(properties, dict) else {}
        group = properties.get("AutoScalingGroupName")
        if isinstance(group, dict) and isinstance(group.get("Ref"), str):
            size = properties.get("MinSize", 0)
            pools[group["Ref"]] = size if isinstance(size, int) and not isinstance(size, bool) else None
    fetches: list[Fetch] = []
    warm_ups = warm_up_groups(t)
    for capacity in t.capacities.values():
        if capacity.kind == "auto-scaling" and NeuronInstanceType.find(capacity.single_type or "") is None:
            continue
        fetched = capacity_fetches(t, capacity, shown)
        images = list(dict.fromkeys(f.what for f in fetched if f.kind == "image"))
        artifacts = list(dict.fromkeys(f.what for f in fetched if f.kind == "artifacts"))
        warm = pools.get(capacity.group) if capacity.group is not None else None
        launch_template = capacity_launch_template(t, capacity) if capacity.kind == "auto-scaling" else None
        root = launch_template.root_volume_gib if launch_template is not None else None
        room = root_volume_room(root, fetched) if root is not None else None
        prefetched = capacity.group in warm_ups
        at_warm_up = {f.what for f in capacity_fetches(t, capacity, shown, warm_up=True)} if prefetched else set()
        fetches.append(
            Fetch(
                _name(t, capacity.logical_id),
                tuple(images),
                tuple(artifacts),
                warm,
                capacity.kind,
                _scale_in_after(t.resources.get(capacity.logical_id, {})),
                room,
                prefetched,
                tuple(i for i in (*images, *artifacts) if prefetched and i not in at_warm_up),
            )
        )
    return fetches


def _scale_in_after(resource: Mapping[str, Any]) -> int | None:
    """``ManagedInstancesProvider.InfrastructureOptimization.ScaleInAfter`` when the template states a whole number."""
    value: Any = resource
    for key in ("Properties", "ManagedInstancesProvider", "InfrastructureOptimization", "ScaleInAfter"):
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
