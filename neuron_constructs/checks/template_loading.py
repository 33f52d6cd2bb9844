"""Reading a CloudFormation template from a file or text, bounded: JSON or YAML (CloudFormation's short-form tags such
as ``!Ref`` included), with the line and column of every key kept so findings point into the file. Any file, however
large, deep or malformed, is a :class:`TemplateError` saying why, never an exception of the parsers.
:mod:`~neuron_constructs.checks.cfn_template` reads what the loaded template says about ECS.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import json
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_TEMPLATE_BYTES",
    "LoadedTemplate",
    "TemplateError",
    "load_template",
    "parse_template",
    "read_json_file",
]


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
