"""What a CloudFormation template says about ECS Neuron workloads, read without the AWS CDK.

:func:`load_template` reads JSON or YAML (CloudFormation's short-form tags such as ``!Ref``
included) and keeps the line and column of every key, so findings point into the file.
:class:`EcsTemplate` turns the ``Resources`` into the facts the Neuron rules need: task
definitions (containers, their ``/dev/neuronN`` mappings and ``NeuronDevice`` requests, the
instance type they are pinned to), capacity providers (the instance types they launch), Auto
Scaling groups, launch templates and services (where their tasks can run).

A value the template computes at deploy time (an intrinsic function other than a reference) is
*unknown* here; checks skip what they cannot know rather than guess.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import itertools
import json
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import (
    VISIBLE_CORES_VARIABLE,
    TaskCores,
    held_cores,
    running_lnc,
    task_cores,
)
from neuron_constructs.knowledge.numbers import parse_whole_number

__all__ = [
    "INTENT_METADATA_KEY",
    "Capacity",
    "Container",
    "EcsTemplate",
    "LaunchTemplate",
    "LoadedTemplate",
    "Service",
    "TaskDefinition",
    "TemplateError",
    "combine_templates",
    "load_template",
    "parse_template",
    "read_json_file",
]

INTENT_METADATA_KEY = "NeuronConstructs"
"""Resource ``Metadata`` key under which the library records what a Neuron task definition declares
(``allocation``, ``neuronContainers``, and for manual mapping ``instanceType`` and ``devices``)."""

NEURON_DEVICE_PATH = re.compile(r"^/dev/neuron(\d+)$")
_INSTANCE_TYPE_PIN = re.compile(r"^\s*attribute:ecs\.instance-type\s*(==|in)\s*(.+?)\s*$")
_CPU_UNITS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*vcpu\s*$", re.IGNORECASE)
_MEMORY_GB = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*gb\s*$", re.IGNORECASE)
_RESOLVE_SSM = re.compile(r"^(?:\{\{)?resolve:ssm:([^:}]+)(?::\d+)?(?:\}\})?$")
"""An ``ImageId`` EC2 resolves from SSM at launch (``resolve:ssm:/path``) or CloudFormation at deploy
(``{{resolve:ssm:/path}}``)."""


class TemplateError(ValueError):
    """The file is not a CloudFormation template this module can read."""


Location = tuple[int, int]
"""1-based line and column."""
Path_ = tuple[str | int, ...]


@dataclass
class LoadedTemplate:
    """A template and where each of its keys sits in the file it came from: ``marks`` (a YAML file's, recorded as it
    is read), else ``locate`` (a JSON file's, found in the text when a finding asks)."""

    template: dict[str, Any]
    marks: dict[Path_, Location] = field(default_factory=dict)
    locate: Callable[[Sequence[str | int]], Location] | None = field(default=None, repr=False, compare=False)

    def location(self, path: Sequence[str | int]) -> Location:
        """The line and column of ``path``, or of its nearest ancestor the file marks (1, 1 when none)."""
        if self.locate is not None and not self.marks:
            return self.locate(path)
        key = tuple(path)
        while key:
            if key in self.marks:
                return self.marks[key]
            key = key[:-1]
        return (1, 1)


# --- loading -------------------------------------------------------------------------------------

_SHORT_FORMS = {"Ref": "Ref", "Condition": "Condition"}


MAX_TEMPLATE_BYTES = 5 * 1024 * 1024
"""The largest file read as a template: five times the 1 MB CloudFormation takes from S3 (CloudFormation quotas:
template body size in an S3 object), room for a cloud assembly's indented JSON; a larger file is refused unread."""
MAX_TEMPLATE_DEPTH = 100
"""The deepest a template's values may nest (a mapping or list in another counts one level); CDK's templates nest
about 10 deep. Deeper input is refused before anything recurses over it."""
MAX_TEMPLATE_RESOURCES = 500
"""The most resources a template may declare: CloudFormation's quota (CloudFormation User Guide, "Understand
CloudFormation quotas": 500 resources per template); checks that compare resources pairwise stay fast below it."""
MAX_JSON_CONTAINERS = 200_000
"""The most mappings and lists a JSON template may hold (every ``{`` and ``[`` in the text counts, in strings too):
three times what a 5 MiB cloud assembly template holds."""
MAX_YAML_NODES = 100_000
"""The most values (scalars, mappings and lists) read from a YAML template: more than a hand-written template of the
1 MB CloudFormation takes holds, and few enough to read in well under a second (a JSON template may hold more)."""
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "binary", "timestamp")
)


def load_template(path: str | Path) -> LoadedTemplate:
    """Read a CloudFormation template file (JSON or YAML); raises :class:`TemplateError` for a file above
    ``MAX_TEMPLATE_BYTES`` (5 MiB): a regular file unread, anything else (a pipe such as ``<(cdk synth)``, a device such
    as ``/dev/zero``) after that many bytes."""
    return parse_template(_read_text(path, regular_only=False))


def read_json_file(path: str | Path) -> Any:
    """A JSON file of a cloud assembly (``manifest.json``, a ``*.metadata.json``): a regular file of at most
    ``MAX_TEMPLATE_BYTES``, nested and sized as a template may be; :class:`TemplateError` with a sentence otherwise."""
    return _decode_json(_read_text(path, regular_only=True))


def _read_text(path: str | Path, *, regular_only: bool) -> str:
    file = Path(path)
    try:
        status = file.stat()
        if stat.S_ISDIR(status.st_mode):
            raise TemplateError(f"{path} is a directory")
        if regular_only and not stat.S_ISREG(status.st_mode):
            raise TemplateError(f"{path} is not a regular file")
        if stat.S_ISREG(status.st_mode) and status.st_size > MAX_TEMPLATE_BYTES:
            raise TemplateError(
                f"{path} is {status.st_size:,} bytes, above the {MAX_TEMPLATE_BYTES:,} a template can be "
                "(CloudFormation takes at most 1 MB)"
            )
        with file.open("rb") as source:
            data = source.read(MAX_TEMPLATE_BYTES + 1)
        if len(data) > MAX_TEMPLATE_BYTES:
            raise TemplateError(f"{path} holds more than the {MAX_TEMPLATE_BYTES:,} bytes a template can be")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TemplateError(f"cannot read {path}: {error}") from error


def parse_template(text: str) -> LoadedTemplate:
    """Parse template text, JSON or YAML, keeping key locations.

    Bounded for any text: JSON by the C decoder (a document nested deeper than ``MAX_TEMPLATE_DEPTH`` is refused),
    YAML event by event, refusing aliases (CloudFormation does not take them: AWS CloudFormation User Guide, "Template
    format", YAML), more than ``MAX_YAML_NODES`` values or more than ``MAX_TEMPLATE_DEPTH`` levels; every problem is a
    :class:`TemplateError` with a sentence.
    """
    loaded: LoadedTemplate | None = None
    json_error: ValueError | None = None
    if text.lstrip(" \t\r\n").startswith("{"):  # JSON (a cloud assembly's templates): the C decoder, fast
        try:
            loaded = _parse_json(text)
        except TemplateError:
            raise
        except ValueError as error:  # YAML's flow style, or not a template at all
            json_error = error
    if loaded is None:
        try:
            loaded = _parse_yaml(text)
        except TemplateError as error:
            if json_error is not None:
                raise TemplateError(f"not valid JSON: {json_error}") from None
            raise error from None
    if not isinstance(loaded.template, dict) or not isinstance(loaded.template.get("Resources"), dict):
        raise TemplateError("not a CloudFormation template: no Resources section")
    declared = len(loaded.template["Resources"])
    if declared > MAX_TEMPLATE_RESOURCES:
        raise TemplateError(
            f"declares {declared:,} resources, and CloudFormation takes at most {MAX_TEMPLATE_RESOURCES} in a "
            "template: split the stack"
        )
    return loaded


def _parse_json(text: str) -> LoadedTemplate:
    """A JSON template; ``ValueError`` for text that is not JSON, :class:`TemplateError` for JSON too big or deep."""
    document = _decode_json(text, syntax_errors=False)
    return LoadedTemplate(document if isinstance(document, dict) else {}, locate=_JsonLocations(text))


def _decode_json(text: str, *, syntax_errors: bool = True) -> Any:
    """``json.loads`` bounded: at most ``MAX_JSON_CONTAINERS`` mappings and lists, ``MAX_TEMPLATE_DEPTH`` levels.
    A syntax error is a :class:`TemplateError` with ``syntax_errors``, else the decoder's ``ValueError``."""
    containers = text.count("{") + text.count("[")  # at least as many as it holds: bounds the memory it takes
    if containers > MAX_JSON_CONTAINERS:
        raise TemplateError(f"more than {MAX_JSON_CONTAINERS:,} mappings and lists, more than a template holds")
    try:
        with _no_garbage_collection():
            document = json.loads(text)
    except RecursionError:
        raise TemplateError(f"nested more than {MAX_TEMPLATE_DEPTH} levels deep") from None
    except ValueError as error:
        if syntax_errors:
            raise TemplateError(f"not valid JSON: {error}") from None
        raise
    if _deeper_than(document, MAX_TEMPLATE_DEPTH):
        raise TemplateError(f"nested more than {MAX_TEMPLATE_DEPTH} levels deep")
    return document


@contextlib.contextmanager
def _no_garbage_collection() -> Iterator[None]:
    """No cycle collection while a parser allocates its objects (it would run again and again, over all of them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_IS_CONTAINER = frozenset({dict, list}).__contains__


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether ``document`` nests mappings and lists more than ``limit`` levels deep: level by level, without
    recursing; scalars are skipped by the interpreter's iterators, not looked at one by one."""
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for value in level:
            children = list(value.values()) if isinstance(value, dict) else value
            below.extend(filter(None, itertools.compress(children, map(_IS_CONTAINER, map(type, children)))))
        level = below
    return False


class _JsonLocations:
    """Where the keys of a JSON template sit, found in its text when a finding asks: each mapping or list on the way
    is scanned once (the C decoder skips its values) and remembered."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.counted = [0]
        """Places whose line and column are known, in order, and those (``locations``)."""
        self.locations: list[Location] = [(1, 1)]
        self.scanned: dict[int, dict[str | int, tuple[int, int]]] = {}
        """Where a mapping or list starts -> each member: where its key (its value, in a list) and its value start."""

    def _skip(self, index: int) -> int:
        match = _JSON_WHITESPACE.match(self.text, index)
        return match.end() if match else index

    def _members(self, start: int) -> dict[str | int, tuple[int, int]]:
        if start in self.scanned:
            return self.scanned[start]
        text, found = self.text, self.scanned.setdefault(start, {})
        opening = text[start : start + 1]
        if opening not in ("{", "["):
            return found
        closing = "}" if opening == "{" else "]"
        index = self._skip(start + 1)
        try:
            while text[index : index + 1] not in (closing, ""):
                if opening == "{":
                    key, after = _scan_string(text, index + 1)
                    value = self._skip(self._skip(after) + 1)
                    found[key] = (index, value)
                else:
                    value = index
                    found[len(found)] = (index, value)
                _, index = self.decoder.raw_decode(text, value)
                index = self._skip(index)
                if text[index : index + 1] == ",":
                    index = self._skip(index + 1)
        except ValueError:  # the text parsed as a whole, so this does not happen: keep what was found
            pass
        return found

    def _line_column(self, index: int) -> Location:
        """The line and column of a place in the text, counted from the nearest place before it already counted
        (each finding counts a stretch of the text, not all of it before)."""
        at = bisect.bisect_right(self.counted, index) - 1
        start, (line, column) = self.counted[at], self.locations[at]
        if start == index:
            return line, column
        breaks = self.text.count("\n", start, index)
        if breaks:
            where = (line + breaks, index - self.text.rfind("\n", start, index))
        else:
            where = (line, column + index - start)
        self.counted.insert(at + 1, index)
        self.locations.insert(at + 1, where)
        return where

    def __call__(self, path: Sequence[str | int]) -> Location:
        start, where = self._skip(0), (1, 1)
        for part in path:
            member = self._members(start).get(part)
            if member is None:
                break
            where, start = self._line_column(member[0]), member[1]
        return where


def _parse_yaml(text: str) -> LoadedTemplate:
    """A YAML template, read event by event: no alias, at most ``MAX_YAML_NODES`` values and ``MAX_TEMPLATE_DEPTH``
    levels, one document; short-form tags (``!Ref``, ``!GetAtt``...) become their long forms."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        with _no_garbage_collection():
            return _compose(loader)
    except TemplateError:
        raise
    except (yaml.YAMLError, ValueError, OverflowError) as error:
        raise TemplateError(f"neither JSON nor YAML: {' '.join(str(error).split())}") from None
    finally:
        loader.dispose()


def _long_form(name: str, value: Any) -> dict[str, Any]:
    """``!Ref x`` -> ``{"Ref": "x"}``, ``!GetAtt a.b`` -> ``{"Fn::GetAtt": ["a", "b"]}``, ``!Sub ...`` ->
    ``{"Fn::Sub": ...}``."""
    if name == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {_SHORT_FORMS.get(name, f"Fn::{name}"): value}


def _compose(loader: Any) -> LoadedTemplate:
    import yaml
    from yaml import events

    constructor = yaml.constructor.SafeConstructor()
    scalar_node, resolve = yaml.ScalarNode, loader.resolve
    str_tag = "tag:yaml.org,2002:str"
    marks: dict[Path_, Location] = {}
    # The mappings and lists being read: each its value, path, short-form name and (a mapping) the key read last.
    stack: list[tuple[Any, Path_, str | None, list[str | None]]] = []
    root: list[Any] = []
    documents = nodes = 0

    def where(event: Any) -> str:
        return f"line {event.start_mark.line + 1}"

    while loader.check_event():
        event = loader.get_event()
        kind = type(event)
        if kind is events.ScalarEvent or kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise TemplateError(f"more than {MAX_YAML_NODES:,} values, the most read from a YAML template")
            mark = event.start_mark
            if stack:
                parent, parent_path, _, key = stack[-1]
                if key[0] is None and type(parent) is dict:  # a mapping's key
                    if kind is not events.ScalarEvent:
                        raise TemplateError(f"{where(event)}: a key that is a list or mapping, not a name")
                    name = str(event.value)
                    key[0] = name
                    marks[(*parent_path, name)] = (mark.line + 1, mark.column + 1)
                    continue
                if type(parent) is dict:
                    path: Path_ = (*parent_path, str(key[0]))
                else:
                    path = (*parent_path, len(parent))
                    marks[path] = (mark.line + 1, mark.column + 1)
            else:
                path = ()
            tag = event.tag
            if kind is events.ScalarEvent:
                if tag is None or tag == "!":
                    tag = resolve(scalar_node, event.value, event.implicit)
                if tag == str_tag:
                    value: Any = event.value
                elif tag.startswith("!"):
                    value = _long_form(tag[1:], event.value)
                elif tag in _SCALAR_TAGS:
                    node = scalar_node(tag, event.value, mark, event.end_mark, event.style)
                    value = constructor.yaml_constructors[tag](constructor, node)
                else:
                    raise TemplateError(f"{where(event)}: the tag {tag} is not one a CloudFormation template holds")
            else:
                if len(stack) >= MAX_TEMPLATE_DEPTH:
                    raise TemplateError(f"{where(event)}: nested more than {MAX_TEMPLATE_DEPTH} levels deep")
                if tag is not None and tag not in _COLLECTION_TAGS and not tag.startswith("!"):
                    raise TemplateError(f"{where(event)}: the tag {tag} is not one a CloudFormation template holds")
                short = tag[1:] if isinstance(tag, str) and tag.startswith("!") and tag != "!" else None
                stack.append(({} if kind is events.MappingStartEvent else [], path, short, [None]))
                continue
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            container, _, short, _ = stack.pop()
            value = _long_form(short, container) if short else container
        elif kind is events.AliasEvent:
            raise TemplateError(
                f"{where(event)}: *{event.anchor} is a YAML alias, which CloudFormation does not accept in a template: "
                "write the value out"
            )
        elif kind is events.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise TemplateError(f"{where(event)}: a second YAML document; a template is one")
            continue
        else:
            continue
        if not stack:
            root.append(value)
            continue
        parent, _, _, key = stack[-1]
        if type(parent) is dict:
            parent[str(key[0])] = value
            key[0] = None
        else:
            parent.append(value)
    if not root:
        raise TemplateError("the file is empty")
    document = root[0]
    return LoadedTemplate(document if isinstance(document, dict) else {}, marks)


# --- values --------------------------------------------------------------------------------------


def ref_target(value: Any) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` points at, else ``None``."""
    if isinstance(value, Mapping) and len(value) == 1:
        if "Ref" in value and isinstance(value["Ref"], str):
            return value["Ref"]
        attribute = value.get("Fn::GetAtt")
        if isinstance(attribute, list) and attribute and isinstance(attribute[0], str):
            return attribute[0]
        if isinstance(attribute, str):
            return attribute.split(".", 1)[0]
    return None


def whole_number(value: Any) -> int | None:
    """An integer from a literal int or numeric string; ``None`` for anything computed or malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return parse_whole_number(value)
    return None


def _scaled(value: Any, unit: re.Pattern[str]) -> int | None:
    """A whole number, or ``<n> <unit>`` (vCPU, GB) as 1024 of the base unit each."""
    number = whole_number(value)
    if number is not None:
        return number
    match = unit.match(value) if isinstance(value, str) else None
    return int(float(match.group(1)) * 1024) if match else None


def cpu_units(value: Any) -> int | None:
    """Task cpu as CPU units: ``"4096"``, ``4096`` or ``"4 vCPU"``."""
    return _scaled(value, _CPU_UNITS)


def memory_mib(value: Any) -> int | None:
    """Task memory in MiB: ``"16384"``, ``16384`` or ``"16 GB"``."""
    return _scaled(value, _MEMORY_GB)


def pinned_instance_types(expression: Any) -> frozenset[str] | None:
    """The instance types a ``memberOf`` expression on ``attribute:ecs.instance-type`` admits.

    ``== t`` and ``in [a, b]`` are understood; any other expression gives ``None``.
    """
    if not isinstance(expression, str):
        return None
    match = _INSTANCE_TYPE_PIN.match(expression)
    if not match:
        return None
    operator, operand = match.groups()
    if operator == "==":
        return frozenset({operand.strip("'\" ")})
    if operand.startswith("[") and operand.endswith("]"):
        names = [name.strip("'\" ") for name in operand[1:-1].split(",")]
        return frozenset(name for name in names if name)
    return None


# --- the ECS model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Container:
    """One container definition, as far as the Neuron rules are concerned."""

    name: str
    index: int
    neuron_devices: tuple[int | None, ...]
    """Indices of the ``/dev/neuronN`` host paths it maps, in order; ``None`` for a malformed ``/dev/neuron*``."""
    neuron_device_paths: tuple[str, ...]
    neuron_device_positions: tuple[int, ...]
    """Where each of those paths sits in ``LinuxParameters.Devices``."""
    wants_all_neuron_devices: bool
    """``resourceRequirements`` holds ``NeuronDevice``."""
    other_accelerators: tuple[str, ...]
    """Other ``resourceRequirements`` types (``GPU``, ``InferenceAccelerator``)."""
    environment: Mapping[str, Any]
    port_mappings: tuple[tuple[int | None, int | None], ...]
    """``(containerPort, hostPort)``, ``None`` where absent or computed."""
    cpu: int | None
    memory: int | None
    memory_reservation: int | None
    managed_instances_rejected: tuple[str, ...]
    """Fields Managed Instances task definitions reject that this container sets."""

    @property
    def maps_neuron_devices(self) -> bool:
        return bool(self.neuron_device_paths)


@dataclass(frozen=True)
class TaskDefinition:
    logical_id: str
    compatibilities: frozenset[str]
    network_mode: str
    cpu: int | None
    memory: int | None
    containers: tuple[Container, ...]
    pinned_types: frozenset[str] | None
    """Instance types the task-level ``memberOf`` admits; ``None`` when it has no instance-type constraint."""
    pin_expressions: tuple[str, ...]
    ipc_mode: bool
    inference_accelerators: bool
    intent: Mapping[str, Any]
    """What the library declared for it (:data:`INTENT_METADATA_KEY`), empty for other task definitions."""

    @property
    def managed_allocation(self) -> bool:
        return any(c.wants_all_neuron_devices for c in self.containers)

    @property
    def manual_mapping(self) -> bool:
        return any(c.maps_neuron_devices for c in self.containers)

    @property
    def is_neuron(self) -> bool:
        return self.managed_allocation or self.manual_mapping or bool(self.intent)

    @property
    def devices(self) -> frozenset[int]:
        """Every device index its containers map."""
        return frozenset(i for c in self.containers for i in c.neuron_devices if i is not None)

    @functools.cached_property
    def lnc(self) -> int | None:
        """The logical-core setting its containers run with: ``NEURON_LOGICAL_NC_CONFIG`` where one states 1 or 2,
        else the declared one, else its type's default; ``None`` without a catalog type."""
        instance = self.instance_type
        if instance is None:
            return None
        return running_lnc((c.environment for c in self.containers), self.intent.get("lnc"), instance.default_lnc)

    def container_cores(self, container: Container) -> frozenset[int] | None:
        """The NeuronCores ``container`` holds (host numbering): those its ``NEURON_RT_VISIBLE_CORES`` names
        within its devices, else every core of its devices; ``None`` without a catalog type."""
        instance, lnc = self.instance_type, self.lnc
        if instance is None or lnc is None or lnc not in instance.lnc_options:
            return None
        visible = container.environment.get(VISIBLE_CORES_VARIABLE)
        devices = (i for i in container.neuron_devices if i is not None)
        return held_cores(devices, visible if isinstance(visible, str) else None, instance.cores_per_chip(lnc))

    @functools.cached_property
    def held(self) -> TaskCores:
        """What it holds on an instance (:func:`~neuron_constructs.knowledge.cores.task_cores`, as the constructs
        see it at the call)."""
        return task_cores(
            self.instance_type,
            self.intent.get("lnc"),
            [(tuple(i for i in c.neuron_devices if i is not None), c.environment) for c in self.containers],
        )

    @property
    def names_cores(self) -> bool:
        """Whether a container names its cores (``NEURON_RT_VISIBLE_CORES``) rather than taking its devices' all."""
        return self.held.names_cores

    @property
    def cores(self) -> frozenset[int] | None:
        """Every NeuronCore its containers hold (see :meth:`container_cores`); ``None`` without a catalog type."""
        return self.held.cores

    @property
    def on_managed_instances(self) -> bool:
        return "MANAGED_INSTANCES" in self.compatibilities

    @property
    def on_ec2(self) -> bool:
        return "EC2" in self.compatibilities

    @property
    def instance_type(self) -> NeuronInstanceType | None:
        """The catalog type this task is specific to: its one pinned type, else the one it was declared for."""
        names = self.pinned_types if self.pinned_types and len(self.pinned_types) == 1 else None
        name = next(iter(names)) if names else self.intent.get("instanceType")
        return NeuronInstanceType.find(name) if isinstance(name, str) else None


@dataclass(frozen=True)
class LaunchTemplate:
    logical_id: str
    instance_type: str | None
    image_parameter: str | None
    """The SSM parameter path the ``ImageId`` parameter resolves, when it is one."""
    image_literal: str | None
    metadata_options: Mapping[str, Any] | None
    root_volume_gib: int | None


@dataclass(frozen=True)
class Capacity:
    """An ``AWS::ECS::CapacityProvider``: an Auto Scaling group's, or Managed Instances."""

    logical_id: str
    kind: str
    """``auto-scaling`` or ``managed-instances``."""
    name: str | None
    instance_types: frozenset[str] | None
    """Instance types it launches (Auto Scaling: the launch template's or the overrides'); ``None`` if unknown."""
    admitted: tuple[NeuronInstanceType, ...]
    """Catalog types it may launch."""
    max_size: int | None
    min_size: int | None
    group: str | None
    """Logical id of the Auto Scaling group."""
    accelerators: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    subnets: tuple[Any, ...] = ()

    @property
    def single_type(self) -> str | None:
        return next(iter(self.instance_types)) if self.instance_types and len(self.instance_types) == 1 else None


@dataclass(frozen=True)
class Service:
    logical_id: str
    cluster: str
    """The ``Cluster`` value, serialized (two services with equal values share a cluster)."""
    task_definition: str | None
    capacities: tuple[str, ...] | None
    """Capacity provider logical ids its strategy names; ``None`` when its tasks may land on any EC2 instance of
    the cluster (launch type EC2, or a default strategy the template does not show)."""
    fargate: bool
    launch_type: str | None
    desired_count: int | None
    daemon: bool
    distinct_instance: bool
    pinned_types: frozenset[str] | None
    max_tasks: int | None
    """The most tasks it runs: the larger of its desired count and its Application Auto Scaling maximum."""
    minimum_healthy_percent: int = 100
    """``DeploymentConfiguration.MinimumHealthyPercent`` (ECS's default for a replica service: 100)."""
    maximum_percent: int = 200
    """``DeploymentConfiguration.MaximumPercent`` (ECS's default for a replica service: 200)."""
    min_tasks: int | None = None
    """The fewest tasks it runs: the smaller of its desired count and its Application Auto Scaling minimum."""
    rolling: bool = True
    """Whether ECS deploys it with rolling updates (the ECS deployment controller and strategy, a replica service)."""

    @property
    def task_counts(self) -> range:
        """Every task count it may run (none when either end is unknown)."""
        if self.min_tasks is None or self.max_tasks is None:
            return range(0)
        return range(self.min_tasks, self.max_tasks + 1)


class EcsTemplate:
    """The ECS and EC2 resources of one template, parsed once for every check."""

    def __init__(
        self,
        loaded: LoadedTemplate,
        *,
        name: str = "template",
        construct_paths: Any = None,
        origin: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self.loaded = loaded
        self.name = name
        self.origin = dict(origin or {})
        """For a combined template: each logical id's template name and logical id there."""
        self.resources: dict[str, dict[str, Any]] = {
            k: v for k, v in _dict(loaded.template.get("Resources")).items() if isinstance(v, dict)
        }
        self._construct_paths = construct_paths
        self._service_types: dict[str, frozenset[str] | None] = {}
        self.parameters: dict[str, Any] = _dict(loaded.template.get("Parameters"))
        self.launch_templates = {lid: self._launch_template(lid, r) for lid, r in self._of("AWS::EC2::LaunchTemplate")}
        self.groups = dict(self._of("AWS::AutoScaling::AutoScalingGroup"))
        self.capacities = {lid: self._capacity(lid, r) for lid, r in self._of("AWS::ECS::CapacityProvider")}
        self.task_definitions = {lid: self._task_definition(lid, r) for lid, r in self._of("AWS::ECS::TaskDefinition")}
        self._default_strategies = self._cluster_defaults()
        scaling = self._scaling_ranges()
        self.services = {lid: self._service(lid, r, scaling.get(lid)) for lid, r in self._of("AWS::ECS::Service")}

    # -- paths and locations

    def path_of(self, logical_id: str) -> str:
        """The construct path of a resource: its ``aws:cdk:path`` metadata (less ``/Resource``), else the path the
        synth-time check found for it, else its logical id."""
        metadata = self.resources.get(logical_id, {}).get("Metadata")
        path = metadata.get("aws:cdk:path") if isinstance(metadata, dict) else None
        if isinstance(path, str):
            return path.removesuffix("/Resource")
        if self._construct_paths is not None:
            found = self._construct_paths(logical_id)
            if found:
                return str(found).removesuffix("/Resource")
        return self.origin.get(logical_id, ("", logical_id))[1]

    def ignored_checks(self, logical_id: str) -> tuple[str, ...]:
        """Rule ids a resource's ``Metadata.cfn-lint.config.ignore_checks`` lists (cfn-lint's convention)."""
        metadata = self.resources.get(logical_id, {}).get("Metadata")
        config = _dict(_dict(_dict(metadata).get("cfn-lint")).get("config"))
        ignored = config.get("ignore_checks", [])
        return tuple(str(i) for i in ignored) if isinstance(ignored, list) else ()

    # -- parsing

    def _of(self, resource_type: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for logical_id, resource in self.resources.items():
            if resource.get("Type") == resource_type:
                yield logical_id, resource

    @staticmethod
    def properties(resource: Mapping[str, Any]) -> dict[str, Any]:
        """A resource's ``Properties``, empty when absent or malformed."""
        properties = resource.get("Properties")
        return properties if isinstance(properties, dict) else {}

    def _launch_template(self, logical_id: str, resource: dict[str, Any]) -> LaunchTemplate:
        data = self.properties(resource).get("LaunchTemplateData")
        data = data if isinstance(data, dict) else {}
        image = data.get("ImageId")
        parameter = None
        target = ref_target(image)
        if target and isinstance(self.parameters.get(target), dict):
            default = self.parameters[target].get("Default")
            parameter = default if isinstance(default, str) else None
        resolved = _RESOLVE_SSM.match(image) if isinstance(image, str) else None
        if resolved:
            parameter, image = resolved.group(1), None
        root = None
        for mapping in _list(data.get("BlockDeviceMappings")):
            if isinstance(mapping, dict) and mapping.get("DeviceName") in ("/dev/xvda", "/dev/sda1"):
                ebs = mapping.get("Ebs")
                root = whole_number(ebs.get("VolumeSize")) if isinstance(ebs, dict) else None
        instance_type = data.get("InstanceType")
        options = data.get("MetadataOptions")
        return LaunchTemplate(
            logical_id=logical_id,
            instance_type=instance_type if isinstance(instance_type, str) else None,
            image_parameter=parameter,
            image_literal=image if isinstance(image, str) else None,
            metadata_options=options if isinstance(options, dict) else None,
            root_volume_gib=root,
        )

    def group_launch_template(self, group: Mapping[str, Any]) -> LaunchTemplate | None:
        properties = self.properties(group)
        specification = properties.get("LaunchTemplate")
        if not isinstance(specification, dict):
            policy = properties.get("MixedInstancesPolicy")
            launch = policy.get("LaunchTemplate") if isinstance(policy, dict) else None
            specification = launch.get("LaunchTemplateSpecification") if isinstance(launch, dict) else None
        if isinstance(specification, dict):
            target = ref_target(specification.get("LaunchTemplateId")) or ref_target(
                specification.get("LaunchTemplateName")
            )
            if target in self.launch_templates:
                return self.launch_templates[target]
        return None

    def group_instance_types(self, group: Mapping[str, Any]) -> frozenset[str] | None:
        properties = self.properties(group)
        policy = properties.get("MixedInstancesPolicy")
        launch = policy.get("LaunchTemplate") if isinstance(policy, dict) else None
        overrides = launch.get("Overrides") if isinstance(launch, dict) else None
        if isinstance(overrides, list) and overrides:
            names = [o.get("InstanceType") for o in overrides if isinstance(o, dict)]
            return frozenset(str(n) for n in names) if all(isinstance(n, str) for n in names) else None
        template = self.group_launch_template(group)
        return frozenset({template.instance_type}) if template and template.instance_type else None

    def _capacity(self, logical_id: str, resource: dict[str, Any]) -> Capacity:
        properties = self.properties(resource)
        name = properties.get("Name") if isinstance(properties.get("Name"), str) else None
        asg_provider = properties.get("AutoScalingGroupProvider")
        if isinstance(asg_provider, dict):
            group_id = ref_target(asg_provider.get("AutoScalingGroupArn"))
            group = self.groups.get(group_id or "")
            types = self.group_instance_types(group) if group else None
            group_properties = self.properties(group) if group else {}
            subnets = group_properties.get("VPCZoneIdentifier")
            return Capacity(
                logical_id=logical_id,
                kind="auto-scaling",
                name=name,
                instance_types=types,
                admitted=tuple(t for t in (NeuronInstanceType.find(n) for n in types or ()) if t is not None),
                max_size=whole_number(group_properties.get("MaxSize")),
                min_size=whole_number(group_properties.get("MinSize")),
                group=group_id if group else None,
                subnets=tuple(subnets) if isinstance(subnets, list) else (),
            )
        managed = properties.get("ManagedInstancesProvider")
        launch = managed.get("InstanceLaunchTemplate") if isinstance(managed, dict) else None
        launch = launch if isinstance(launch, dict) else {}
        requirements = launch.get("InstanceRequirements")
        requirements = requirements if isinstance(requirements, dict) else {}
        accelerators = tuple(str(a) for a in _list(requirements.get("AcceleratorNames")) if isinstance(a, str))
        patterns = tuple(str(p) for p in _list(requirements.get("AllowedInstanceTypes")) if isinstance(p, str))
        admitted = tuple(
            t
            for t in NeuronInstanceType.all()
            if (not patterns or any(_pattern_matches(p, t.name) for p in patterns))
            and (not accelerators or t.accelerator in accelerators)
            and (accelerators or patterns)
        )
        network = launch.get("NetworkConfiguration")
        subnets = network.get("Subnets") if isinstance(network, dict) else None
        exact = frozenset(patterns) if patterns and all("*" not in p and "?" not in p for p in patterns) else None
        return Capacity(
            logical_id=logical_id,
            kind="managed-instances",
            name=name,
            instance_types=exact,
            admitted=admitted,
            max_size=None,
            min_size=None,
            group=None,
            accelerators=accelerators,
            patterns=patterns,
            subnets=tuple(subnets) if isinstance(subnets, list) else (),
        )

    def _task_definition(self, logical_id: str, resource: dict[str, Any]) -> TaskDefinition:
        properties = self.properties(resource)
        compatibilities = frozenset(
            str(c) for c in (_list(properties.get("RequiresCompatibilities")) or ["EC2"]) if isinstance(c, str)
        )
        network_mode = properties.get("NetworkMode")
        pins: list[frozenset[str] | None] = []
        expressions: list[str] = []
        for constraint in _list(properties.get("PlacementConstraints")):
            if isinstance(constraint, dict) and constraint.get("Type") == "memberOf":
                expression = constraint.get("Expression")
                if isinstance(expression, str) and "ecs.instance-type" in expression:
                    expressions.append(expression)
                    pins.append(pinned_instance_types(expression))
        pinned: frozenset[str] | None = None
        for pin in pins:
            pinned = (pin or frozenset()) if pinned is None else pinned & (pin or frozenset())
        metadata = resource.get("Metadata")
        intent = metadata.get(INTENT_METADATA_KEY) if isinstance(metadata, dict) else None
        containers = properties.get("ContainerDefinitions")
        return TaskDefinition(
            logical_id=logical_id,
            compatibilities=compatibilities,
            network_mode=network_mode.lower() if isinstance(network_mode, str) else "bridge",
            cpu=cpu_units(properties.get("Cpu")),
            memory=memory_mib(properties.get("Memory")),
            containers=tuple(_container(index, c) for index, c in enumerate(_list(containers)) if isinstance(c, dict)),
            pinned_types=pinned,
            pin_expressions=tuple(expressions),
            ipc_mode=properties.get("IpcMode") is not None,
            inference_accelerators=bool(properties.get("InferenceAccelerators")),
            intent=intent if isinstance(intent, dict) else {},
        )

    def _cluster_defaults(self) -> dict[str, tuple[str, ...] | None]:
        defaults: dict[str, tuple[str, ...] | None] = {}
        for _, resource in self._of("AWS::ECS::ClusterCapacityProviderAssociations"):
            properties = self.properties(resource)
            strategy = properties.get("DefaultCapacityProviderStrategy")
            providers = self._strategy_capacities(strategy) if isinstance(strategy, list) else None
            defaults[_key(properties.get("Cluster"))] = providers[0] if providers else None
        return defaults

    def _strategy_capacities(self, strategy: list[Any]) -> tuple[tuple[str, ...], bool] | None:
        """Capacity logical ids a strategy names, and whether it names Fargate; ``None`` if one is unknown."""
        found: list[str] = []
        fargate = False
        for item in strategy:
            provider = item.get("CapacityProvider") if isinstance(item, dict) else None
            target = ref_target(provider)
            if target in self.capacities:
                found.append(target)
            elif provider in ("FARGATE", "FARGATE_SPOT"):
                fargate = True
            elif isinstance(provider, str):
                named = [c.logical_id for c in self.capacities.values() if c.name == provider]
                if not named:
                    return None
                found.extend(named)
            else:
                return None
        return tuple(found), fargate

    def _scaling_ranges(self) -> dict[str, tuple[int | None, int]]:
        """Service logical id -> (lowest MinCapacity, highest MaxCapacity) of its DesiredCount scalable targets;
        ``None`` for a minimum that is not a number."""
        ranges: dict[str, tuple[int | None, int]] = {}
        for _, resource in self._of("AWS::ApplicationAutoScaling::ScalableTarget"):
            properties = self.properties(resource)
            if properties.get("ScalableDimension") != "ecs:service:DesiredCount":
                continue
            resource_id = properties.get("ResourceId")
            parts = resource_id.get("Fn::Join") if isinstance(resource_id, dict) else None
            targets = [ref_target(p) for p in _list(parts[1])] if isinstance(parts, list) and len(parts) == 2 else []
            maximum = whole_number(properties.get("MaxCapacity"))
            minimum = whole_number(properties.get("MinCapacity"))
            for target in targets:
                if not target or maximum is None or self.resources.get(target, {}).get("Type") != "AWS::ECS::Service":
                    continue
                low, high = ranges.get(target, (minimum, maximum))
                ranges[target] = (None if low is None or minimum is None else min(low, minimum), max(high, maximum))
        return ranges

    def _service(self, logical_id: str, resource: dict[str, Any], scaling: tuple[int | None, int] | None) -> Service:
        properties = self.properties(resource)
        cluster = _key(properties.get("Cluster"))
        strategy = properties.get("CapacityProviderStrategy")
        launch_type = properties.get("LaunchType") if isinstance(properties.get("LaunchType"), str) else None
        capacities: tuple[str, ...] | None
        fargate = launch_type == "FARGATE"
        if isinstance(strategy, list) and strategy:
            named = self._strategy_capacities(strategy)
            capacities, fargate = named if named else (None, False)
        elif launch_type is None:
            capacities = self._default_strategies.get(cluster)
        else:
            capacities = None
        constraints = [c for c in _list(properties.get("PlacementConstraints")) if isinstance(c, dict)]
        pinned: frozenset[str] | None = None
        for constraint in constraints:
            if constraint.get("Type") == "memberOf":
                pin = pinned_instance_types(constraint.get("Expression"))
                if pin is not None:
                    pinned = pin if pinned is None else pinned & pin
        desired = whole_number(properties.get("DesiredCount"))
        daemon = properties.get("SchedulingStrategy") == "DAEMON"
        if desired is None and not daemon and "DesiredCount" not in properties:
            desired = 1  # CloudFormation's default for a REPLICA service
        deployment = properties.get("DeploymentConfiguration")
        deployment = deployment if isinstance(deployment, dict) else {}
        healthy = whole_number(deployment.get("MinimumHealthyPercent"))
        maximum = whole_number(deployment.get("MaximumPercent"))
        controller = properties.get("DeploymentController")
        controller_type = controller.get("Type", "ECS") if isinstance(controller, dict) else "ECS"
        scaling_min, scaling_max = scaling if scaling is not None else (desired, None)
        counts = [c for c in (desired, scaling_min, scaling_max) if c is not None]
        return Service(
            minimum_healthy_percent=100 if healthy is None else healthy,
            maximum_percent=200 if maximum is None else maximum,
            min_tasks=None if scaling_min is None or desired is None else max(1, min(counts)),
            rolling=not daemon and controller_type == "ECS" and deployment.get("Strategy", "ROLLING") == "ROLLING",
            logical_id=logical_id,
            cluster=cluster,
            task_definition=ref_target(properties.get("TaskDefinition")),
            capacities=capacities,
            fargate=fargate,
            launch_type=launch_type,
            desired_count=desired,
            daemon=daemon,
            distinct_instance=any(c.get("Type") == "distinctInstance" for c in constraints),
            pinned_types=pinned,
            max_tasks=max(filter(None, (desired, scaling_max)), default=None),
        )

    # -- queries

    def services_of(self, task_definition: str) -> list[Service]:
        return [s for s in self.services.values() if s.task_definition == task_definition]

    def service_capacities(self, service: Service) -> list[Capacity] | None:
        """The capacities a service's tasks land on; ``None`` when the template does not say."""
        if service.capacities is None:
            return None
        return [self.capacities[c] for c in service.capacities]

    def lands_on(self, service: Service, capacity: Capacity) -> bool:
        """Whether the service's tasks can land on ``capacity``: its strategy names it, or (no strategy the template
        shows) it is not Fargate and the capacity's one type is among the types the service may run on."""
        if service.capacities is not None:
            return capacity.logical_id in service.capacities
        if service.fargate:
            return False
        types = self.service_types(service)
        return capacity.single_type is None or types is None or capacity.single_type in types

    def could_share_instances(self, first: Service, second: Service) -> bool:
        """Whether tasks of two services can land on one instance (same cluster and capacity, types agree)."""
        if first.cluster != second.cluster or first.fargate or second.fargate:
            return False
        if (
            first.capacities is not None
            and second.capacities is not None
            and not set(first.capacities) & set(second.capacities)
        ):
            return False
        first_types = self.service_types(first)
        second_types = self.service_types(second)
        return first_types is None or second_types is None or bool(first_types & second_types)

    def service_types(self, service: Service) -> frozenset[str] | None:
        """Instance types a service's tasks may run on: its pins, its task's pins and its capacities agree (worked
        out once per service: pairwise checks ask for it again and again)."""
        if getattr(self, "services", {}).get(service.logical_id) is not service:  # not one of this template's: not kept
            return self._worked_out_service_types(service)
        if service.logical_id not in self._service_types:
            self._service_types[service.logical_id] = self._worked_out_service_types(service)
        return self._service_types[service.logical_id]

    def _worked_out_service_types(self, service: Service) -> frozenset[str] | None:
        types: frozenset[str] | None = service.pinned_types
        task = self.task_definitions.get(service.task_definition or "")
        if task is not None and task.pinned_types is not None:
            types = task.pinned_types if types is None else types & task.pinned_types
        capacities = self.service_capacities(service)
        if capacities and all(c.instance_types is not None for c in capacities):
            launched = frozenset().union(*(c.instance_types or frozenset() for c in capacities))
            types = launched if types is None else types & launched
        return types


def _list(value: Any) -> list[Any]:
    """``value`` if the template holds a list there, else nothing (a malformed value is skipped, not fatal)."""
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    """``value`` if the template holds a mapping there, else an empty one."""
    return value if isinstance(value, dict) else {}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)  # YAML can hold dates and bytes


def _pattern_matches(pattern: str, name: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)


def _container(index: int, raw: Mapping[str, Any]) -> Container:
    linux = raw.get("LinuxParameters")
    linux = linux if isinstance(linux, dict) else {}
    paths: list[str] = []
    positions: list[int] = []
    indices: list[int | None] = []
    for position, device in enumerate(_list(linux.get("Devices"))):
        host = device.get("HostPath") if isinstance(device, dict) else None
        if isinstance(host, str) and host.startswith("/dev/neuron"):
            paths.append(host)
            positions.append(position)
            match = NEURON_DEVICE_PATH.match(host)
            indices.append(int(match.group(1)) if match else None)
    requirements = [r for r in _list(raw.get("ResourceRequirements")) if isinstance(r, dict)]
    environment = {
        str(e.get("Name")): e.get("Value")
        for e in _list(raw.get("Environment"))
        if isinstance(e, dict) and isinstance(e.get("Name"), str)
    }
    ports = tuple(
        (whole_number(p.get("ContainerPort")), whole_number(p.get("HostPort")))
        for p in _list(raw.get("PortMappings"))
        if isinstance(p, dict)
    )
    rejected = [f"linuxParameters.{f}" for f in ("SharedMemorySize", "Tmpfs") if linux.get(f)]
    if raw.get("DockerLabels"):
        rejected.append("dockerLabels")
    name = raw.get("Name")
    return Container(
        name=name if isinstance(name, str) else f"container {index}",
        index=index,
        neuron_devices=tuple(indices),
        neuron_device_paths=tuple(paths),
        neuron_device_positions=tuple(positions),
        wants_all_neuron_devices=any(r.get("Type") == "NeuronDevice" for r in requirements),
        other_accelerators=tuple(
            str(r.get("Type")) for r in requirements if r.get("Type") in ("GPU", "InferenceAccelerator")
        ),
        environment=environment,
        port_mappings=ports,
        cpu=whole_number(raw.get("Cpu")),
        memory=whole_number(raw.get("Memory")),
        memory_reservation=whole_number(raw.get("MemoryReservation")),
        managed_instances_rejected=tuple(rejected),
    )


# --- several templates as one ---------------------------------------------------------------------

ID_SEPARATOR = "|"
"""Joins a template's name and a logical id in a combined template (no logical id contains it)."""


def combine_templates(templates: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """One template holding every resource of ``templates`` (by name), and where each came from.

    Logical ids become ``<name>|<id>`` and every ``Ref``/``Fn::GetAtt`` is renamed with them; an
    ``Fn::ImportValue`` of an export another template declares becomes that output's value, so a
    service in one stack and the capacity or task definition it names in another are checked
    together, as one app deploys them.
    """
    exports: dict[str, Any] = {}
    for name, template in templates.items():
        for output in _dict(template.get("Outputs")).values():
            export = output.get("Export") if isinstance(output, Mapping) else None
            export_name = export.get("Name") if isinstance(export, Mapping) else None
            if isinstance(export_name, str):
                exports[export_name] = _renamed(output.get("Value"), name, _local_ids(template), {})
    combined: dict[str, Any] = {"Resources": {}, "Parameters": {}}
    origin: dict[str, tuple[str, str]] = {}
    for name, template in templates.items():
        local = _local_ids(template)
        for section in ("Resources", "Parameters"):
            for logical_id, body in _dict(template.get(section)).items():
                combined_id = f"{name}{ID_SEPARATOR}{logical_id}"
                combined[section][combined_id] = _renamed(body, name, local, exports)
                origin[combined_id] = (name, logical_id)
    return combined, origin


def _local_ids(template: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(_dict(template.get("Resources"))) | frozenset(_dict(template.get("Parameters")))


def _renamed(value: Any, name: str, local: frozenset[str], exports: Mapping[str, Any]) -> Any:
    if isinstance(value, list):
        return [_renamed(v, name, local, exports) for v in value]
    if not isinstance(value, Mapping):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "Ref" and isinstance(inner, str) and inner in local:
            return {"Ref": f"{name}{ID_SEPARATOR}{inner}"}
        if key == "Fn::GetAtt":
            parts = inner.split(".", 1) if isinstance(inner, str) else inner
            if isinstance(parts, list) and parts and parts[0] in local:
                return {"Fn::GetAtt": [f"{name}{ID_SEPARATOR}{parts[0]}", *parts[1:]]}
        if key == "Fn::ImportValue" and isinstance(inner, str) and inner in exports:
            return exports[inner]
    return {k: _renamed(v, name, local, exports) for k, v in value.items()}
