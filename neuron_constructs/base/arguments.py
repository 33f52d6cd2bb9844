"""Strict inputs: every public parameter is checked for type and range before anything is built.

:func:`checked` wraps a constructor or method of the library. It reads the parameter
annotations once and, on every call, refuses with the rule-style message
(``<path>: <problem>. [<id>: <rule>] Fix: ...``):

* a value of the wrong type (NEURON026): a bool is not a number, a float is not an int, a string
  is not a list, an object of another class is not the construct asked for, and NaN or an infinity (alone, or in a
  list or dict) is no number at all: JSON has no spelling for it, and one sent to the CDK's JavaScript runtime breaks
  the process's connection to it, so it is refused before the runtime is asked anything about the value;
* a number outside the range AWS accepts (NEURON027), from the ranges the call declares (ints and floats alike);
* a CDK token (a ``CfnParameter`` value, an import, an attribute) where a rule needs the literal
  value (NEURON028); parameters that only name things accept tokens.

``**options`` forwarded to an aws-cdk-lib struct (container options) are checked against that
struct's own annotations; an unknown option is a ``TypeError`` that names the method and the
options it takes.

Every public method takes one spelling for one thing: ``min_count=``/``max_count=`` bound the tasks of each
service a scaling method scales (a :class:`~neuron_constructs.NeuronService`'s, or each copy's of a fleet model).
A keyword :func:`checked` lists in ``renamed`` is the old spelling of another: it still works for one release, with
a :class:`DeprecationWarning` naming the new one (:data:`RENAMED_KEYWORDS_REMOVED_IN` removes it). Any other
unknown keyword is a ``TypeError`` that suggests the closest one the method takes, and lists them all.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import math
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ParamSpec, TypeVar

import jsii
from aws_cdk import Duration, IStableListProducer, Lazy, Token
from constructs import Construct
from typing_extensions import is_typeddict

from neuron_constructs.base.tree import construct_path, kept
from neuron_constructs.knowledge import rules

__all__ = [
    "CONTAINER_CPU",
    "CONTAINER_MEMORY",
    "COUNT",
    "MANAGED_INSTANCES_STORAGE_GIB",
    "MAXIMUM_PERCENT",
    "MINIMUM_HEALTHY_PERCENT",
    "RENAMED_KEYWORDS_REMOVED_IN",
    "ROOT_VOLUME_GIB",
    "TASK_CPU",
    "TASK_MEMORY",
    "LazyPath",
    "Range",
    "check_value",
    "checked",
    "conforms",
    "describe",
    "is_token",
    "list_at_synth",
    "seconds_of",
    "to_seconds",
]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Range:
    """Inclusive bounds of a whole number and the AWS limit they come from."""

    minimum: int
    maximum: int | None = None
    why: str = ""


TASK_CPU = Range(128, 196_608, "ECS task cpu: 128 to 196,608 CPU units, 0.125 to 192 vCPUs")
TASK_MEMORY = Range(6, None, "ECS: a container needs at least 6 MiB of memory")
CONTAINER_CPU = Range(0, 196_608, "ECS task cpu tops out at 196,608 CPU units")
CONTAINER_MEMORY = Range(6, None, "ECS: a container needs at least 6 MiB of memory")
ROOT_VOLUME_GIB = Range(
    30, 65_536, "EC2: a root volume is at least its AMI's snapshot (30 GiB for the ECS AL2023 AMIs), at most 65,536 GiB"
)
MANAGED_INSTANCES_STORAGE_GIB = Range(1, None, "ECS Managed Instances storageSizeGiB is at least 1")
COUNT = Range(0, None, "a count of tasks or instances")
MINIMUM_HEALTHY_PERCENT = Range(0, 100, "ECS deployment minimumHealthyPercent")
MAXIMUM_PERCENT = Range(100, None, "ECS deployment maximumPercent")

RENAMED_KEYWORDS_REMOVED_IN = "0.3.0"
"""The release that drops the old spellings :func:`checked` still accepts (``renamed``): they work, with a
:class:`DeprecationWarning`, in the release that renamed them and are gone in the next one."""

_SAME_MEANING: dict[str, tuple[str, ...]] = {
    "min_instances": ("min_count",),
    "max_instances": ("max_count",),
    "min_tasks": ("min_count",),
    "max_tasks": ("max_count",),
    "min_capacity": ("min_count",),
    "max_capacity": ("max_count",),
    "min_count": ("min_capacity",),
    "max_count": ("max_capacity",),
}
"""Keywords users carry over from a neighbouring API (aws-cdk-lib's ``min_capacity`` of a scalable task count, the
library's own older spelling) and what the library calls the same bound where a method takes it."""


def seconds_of(duration: Duration) -> float | None:
    """``duration`` in seconds; ``None`` for a duration known only at deploy time (a token). Asked of the CDK's
    runtime once per duration (a ``Duration`` never changes; the library's defaults are shared ones)."""
    return kept(duration, "_neuron_constructs_seconds", lambda: _read_seconds(duration))


def to_seconds(duration: Duration) -> float:
    """``duration.to_seconds()`` (a token's own number for a duration known only at deploy time, as the CDK gives it),
    asked of the CDK's runtime once per duration: the library compares its defaults and a monitoring's period again
    and again."""
    return kept(duration, "_neuron_constructs_to_seconds", duration.to_seconds)


def _read_seconds(duration: Duration) -> float | None:
    try:
        seconds = float(duration.to_seconds())
    except RuntimeError:  # a token in another unit: the CDK cannot convert it
        return None
    return None if is_token(seconds) else seconds  # a token in seconds converts to the token's own number


def list_at_synth(value: Callable[[], list[str]]) -> list[str]:
    """A list of strings CloudFormation gets as ``value`` returns it at synth (``Lazy.list``): for what later calls
    add to, such as the deployment alarms of a service or the ``DependsOn`` of a resource."""
    return Lazy.list(_ListAtSynth(value))


@jsii.implements(IStableListProducer)
class _ListAtSynth:
    def __init__(self, value: Callable[[], list[str]]) -> None:
        self._value = value

    def produce(self) -> list[str]:
        return self._value()


def is_token(value: object) -> bool:
    """Whether ``value`` is an unresolved CDK token (a deploy-time value)."""
    if isinstance(value, str):
        return "Token[" in value and bool(Token.is_unresolved(value))
    if isinstance(value, float):
        return bool(Token.is_unresolved(value))
    if isinstance(value, list | tuple):
        return any(is_token(v) for v in value)
    return False


def _implements(value: object, interface: type) -> bool:
    """A jsii interface is implemented by a class that declares it, or by an object jsii hands back for one
    (``Vpc.from_lookup``, ``Role.from_role_arn``: a proxy of the interface, alone or among several)."""
    delegates = getattr(value, "_delegates", None)
    candidates = delegates if isinstance(delegates, list) else [value]
    proxy_class = getattr(interface, "__jsii_proxy_class__", None)
    proxy = proxy_class() if callable(proxy_class) else None
    for candidate in candidates:
        if isinstance(proxy, type) and isinstance(candidate, proxy):
            return True
        for klass in type(candidate).__mro__:
            if klass is interface:
                return True
            for declared in getattr(klass, "__jsii_ifaces__", None) or ():
                if interface in getattr(declared, "__mro__", ()):
                    return True
    return False


def _is_interface(annotation: type) -> bool:
    return bool(getattr(annotation, "_is_protocol", False)) and hasattr(annotation, "__jsii_type__")


def conforms(value: object, annotation: Any) -> bool:
    """Whether ``value`` has the type ``annotation`` names (bool is not int, str is not a sequence)."""
    if annotation is Any or annotation is object:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin in (collections.abc.Sequence, collections.abc.Iterable, list, tuple, collections.abc.Collection):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            return False
        if not isinstance(value, list | tuple | range):
            return True  # a generator is consumed by the call itself; its items are checked there
        item = args[0] if args else Any
        return all(conforms(v, item) for v in value)
    if origin in (collections.abc.Mapping, dict):
        if not isinstance(value, Mapping):
            return False
        key, item = args if len(args) == 2 else (Any, Any)
        return all(conforms(k, key) and conforms(v, item) for k, v in value.items())
    if is_typeddict(annotation):  # e.g. service_options: ServiceOptions - a dict of known keys
        fields = typing.get_type_hints(annotation)
        return isinstance(value, Mapping) and all(k in fields and conforms(v, fields[k]) for k, v in value.items())
    if isinstance(annotation, type):
        if _is_interface(annotation):
            return _implements(value, annotation)
        return isinstance(value, annotation)
    return True


def describe(annotation: Any) -> str:
    """What a value of ``annotation`` is, in words: ``a whole number``, ``a list of strings``..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is None or annotation is type(None):
        return "None"
    if origin in (typing.Union, types.UnionType):
        named = [describe(a) for a in args if a is not type(None)]
        text = " or ".join(dict.fromkeys(named))
        return f"{text} (or None)" if type(None) in args else text
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if annotation is bool:
        return "True or False"
    if annotation is int:
        return "a whole number (an int)"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if origin in (collections.abc.Sequence, collections.abc.Iterable, list, tuple, collections.abc.Collection):
        return f"a list of {_plural(args[0])}" if args else "a list"
    if origin in (collections.abc.Mapping, dict):
        return f"a dict of {_plural(args[0])} to {_plural(args[1])}" if len(args) == 2 else "a dict"
    if isinstance(annotation, type):
        return _class_name(annotation)
    return "any value" if annotation is Any else str(annotation)


def _plural(annotation: Any) -> str:
    """What many values of ``annotation`` are: ``whole numbers``, ``strings``, ``aws_ec2.ISecurityGroup objects``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_plural(a) for a in args if a is not type(None)))
    named = {int: "whole numbers", float: "numbers", str: "strings", bool: "True or False values"}
    if annotation in named:
        return str(named[annotation])
    if annotation is Any or annotation is object:
        return "any values"
    if isinstance(annotation, type):
        return _class_name(annotation).split(" ", 1)[1].removeprefix("member of ") + " objects"
    return describe(annotation)


def _class_name(kind: type) -> str:
    """``an aws_ecs.TaskDefinition``, ``a neuron_constructs.NeuronCluster``, ``a member of aws_ecs.NetworkMode``."""
    module = kind.__module__.replace("aws_cdk.", "")
    if module.startswith("neuron_constructs"):
        module = "neuron_constructs"
    qualified = kind.__name__ if module == "builtins" else f"{module}.{kind.__name__}"
    if issubclass(kind, Enum):
        return f"a member of {qualified}"
    return f"{'an' if qualified[:1].lower() in 'aeiou' else 'a'} {qualified}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem_type(name: str, value: object) -> str:
    kind = _class_name(type(value))
    if value is None:
        kind = "None"
    elif isinstance(value, bool):
        kind = "a bool"
    elif isinstance(value, str):
        kind = "a string"
    elif isinstance(value, float):
        kind = "a float"
    elif isinstance(value, int):
        kind = "an int"
    elif isinstance(value, list | tuple):
        kind = "a list"
    return f"{name} is None" if value is None else f"{name}={_shown(value)} is {kind}"


def check_value(
    path: str | LazyPath,
    name: str,
    value: object,
    annotation: Any,
    *,
    ranges: Mapping[str, Range] = {},
    literal: bool = True,
) -> None:
    """Refuse ``value`` for parameter ``name`` unless it has the annotated type and range."""
    # Before anything asks the CDK's runtime about the value (is_token): a NaN never reaches it.
    not_finite = _first_non_finite(name, value)
    if not_finite is not None:
        where, number = not_finite
        raise rules.WRONG_TYPE.error(
            str(path),
            f"{where}={number!r} is not a finite number (JSON, and so CloudFormation and the CDK's runtime, has no "
            "NaN or infinity)",
            expected=f"{where} as a finite number",
        )
    if literal and is_token(value):
        raise rules.TOKEN_NOT_LITERAL.error(
            str(path), f"{name} is a CDK token, a value known only at deploy time", name=name
        )
    if not literal and is_token(value):
        return
    if not conforms(value, annotation):
        where, item, wanted = _mismatch(name, value, annotation)
        raise rules.WRONG_TYPE.error(str(path), _problem_type(where, item), expected=f"{where} as {describe(wanted)}")
    bounds = ranges.get(name)
    if bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
        low, high = bounds.minimum, bounds.maximum
        if value < low or (high is not None and value > high):
            limit = f"below the minimum of {low}" if value < low else f"above the maximum of {high}"
            why = f" ({bounds.why})" if bounds.why else ""
            raise rules.OUT_OF_RANGE.error(
                str(path),
                f"{name}={value} is {limit}{why}",
                name=name,
                minimum=low,
                maximum=f"{high:,}" if high is not None else "any larger value",
            )


def _first_non_finite(name: str, value: object, depth: int = 0) -> tuple[str, float] | None:
    """The first NaN or infinity in ``value`` (a number, or one in a list, a dict or a jsii struct's fields,
    ``name[2]``, ``name.retries``), with where it is;
    ``None`` when there is none. Python's ``float('nan')`` and ``float('inf')`` are floats like any other, but JSON
    has no spelling for them: one passed on to the CDK's JavaScript runtime breaks the process's connection to it, and
    every later construct of the process with it."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (name, value)
    if depth > 4:
        return None
    struct = getattr(value, "_values", None)  # a jsii struct (ecs.PortMapping, ecs.HealthCheck): its fields
    if isinstance(value, list | tuple):
        items: Iterable[tuple[str, object]] = ((f"{name}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, Mapping):
        items = ((f"{name}[{k!r}]", v) for k, v in value.items())
    elif isinstance(struct, dict) and not isinstance(value, type):
        items = ((f"{name}.{k}", v) for k, v in struct.items())
    else:
        return None
    for where, item in items:
        found = _first_non_finite(where, item, depth + 1)
        if found is not None:
            return found
    return None


def _element_types(annotation: Any) -> tuple[Any, Any] | None:
    """(key type, item type) of a list or dict annotation (key ``None`` for a list), else ``None``."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    for candidate in (annotation, *options):
        origin, args = typing.get_origin(candidate), typing.get_args(candidate)
        if origin in (collections.abc.Mapping, dict) and len(args) == 2:
            return args[0], args[1]
        if origin in (collections.abc.Sequence, collections.abc.Iterable, list, tuple) and args:
            return None, args[0]
    return None


def _mismatch(name: str, value: object, annotation: Any) -> tuple[str, object, Any]:
    """The first item of a list or dict that does not fit (``devices[0]``), else the value itself."""
    elements = _element_types(annotation)
    if elements is not None:
        key_type, item_type = elements
        if isinstance(value, Mapping) and key_type is not None:
            for key, item in value.items():
                if not conforms(key, key_type):
                    return f"{name} key", key, key_type
                if not conforms(item, item_type):
                    return f"{name}[{key!r}]", item, item_type
        elif isinstance(value, list | tuple) and key_type is None:
            for index, item in enumerate(value):
                if not conforms(item, item_type):
                    return f"{name}[{index}]", item, item_type
    return name, value, annotation


@functools.cache
def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    return typing.get_type_hints(function)


@functools.cache
def _option_fields(options: type) -> dict[str, Any]:
    """The annotated fields of a ``TypedDict`` of options."""
    return dict(typing.get_type_hints(options))


class LazyPath:
    """The construct path a call's messages name, worked out only when a message is written (reading a
    construct path is a call into the CDK's JavaScript runtime)."""

    def __init__(self, bound: inspect.BoundArguments) -> None:
        self._bound = bound
        self._path: str | None = None

    def __str__(self) -> str:
        if self._path is None:
            self._path = _path(self._bound)
        return self._path


def _path(bound: inspect.BoundArguments) -> str:
    arguments = bound.arguments
    scope, id_ = arguments.get("scope"), arguments.get("id")
    owner = arguments.get("self")
    if isinstance(scope, Construct) and owner is not None and not _constructed(owner):
        return f"{construct_path(scope)}/{id_}"
    if isinstance(owner, Construct) and _constructed(owner):
        return f"{construct_path(owner)}/{id_}" if isinstance(id_, str) and "id" in arguments else construct_path(owner)
    return str(id_ or "")


class PseudoParameters(typing.NamedTuple):
    partition: str
    region: str
    account_id: str


@functools.cache
def aws() -> PseudoParameters:
    """``Aws.PARTITION``, ``Aws.REGION`` and ``Aws.ACCOUNT_ID``: the same tokens in every app, read once."""
    from aws_cdk import Aws

    return PseudoParameters(str(Aws.PARTITION), str(Aws.REGION), str(Aws.ACCOUNT_ID))


def _constructed(owner: object) -> bool:
    try:
        return isinstance(owner, Construct) and bool(owner.node)
    except Exception:  # a jsii object whose constructor has not run yet
        return False


def checked(
    *,
    ranges: Mapping[str, Range] | None = None,
    names: Iterable[str] = (),
    whole_numbers: Iterable[str] = (),
    options: type | None = None,
    option_ranges: Mapping[str, Range] | None = None,
    renamed: Mapping[str, str] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Check a function's arguments against its annotations before it runs.

    ``ranges``: inclusive bounds per parameter; ``names``: parameters that only name things and
    may be tokens; ``options``: the ``TypedDict`` (:mod:`neuron_constructs.compute.options`) whose fields
    ``**kwargs`` must be (with ``whole_numbers`` among them literals, and ``option_ranges`` their bounds);
    ``renamed``: old keyword -> the parameter that replaced it, still accepted with a :class:`DeprecationWarning`
    until :data:`RENAMED_KEYWORDS_REMOVED_IN` (both spellings at once are a ``TypeError``).
    """
    declared_ranges = dict(ranges or {})
    token_ok = frozenset(names)
    integral = frozenset(whole_numbers)
    declared_option_ranges = dict(option_ranges or {})
    old_spellings = dict(renamed or {})

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(function)
        variadic = next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)
        label = function.__qualname__.replace(".__init__", "")

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            owner = args[0] if args else None
            called = label
            if owner is not None and function.__name__ != "__init__" and type(owner).__name__ != label.split(".")[0]:
                called = f"{type(owner).__name__}.{function.__name__}"
            if old_spellings and not old_spellings.keys().isdisjoint(kwargs):
                kwargs = _respelled(called, kwargs, old_spellings)  # type: ignore[assignment]
            if variadic is None:
                unknown = [k for k in kwargs if k not in signature.parameters]
                if unknown:
                    takes = [p for p in signature.parameters if p not in ("self", "scope", "id")]
                    raise TypeError(
                        f"{called}() got an unexpected keyword argument {unknown[0]!r}"
                        + _did_you_mean(unknown[0], takes)
                        + f"; it takes: {', '.join(takes)}"
                    )
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as error:
                raise TypeError(f"{called}() {error}") from None
            hints = _hints(function)
            scope = bound.arguments.get("scope", Construct)
            if scope is not Construct and not isinstance(scope, Construct):
                where = str(bound.arguments.get("id", called))
                check_value(where, "scope", scope, Construct)
            path = LazyPath(bound)
            for name, value in bound.arguments.items():
                if name in ("self", "scope") or name == variadic or name not in hints:
                    continue
                parameter = signature.parameters[name]
                if value is parameter.default and value is None:
                    continue
                check_value(path, name, value, hints[name], ranges=declared_ranges, literal=name not in token_ok)
            if variadic and options is not None:
                _check_options(
                    called,
                    path,
                    bound.arguments.get(variadic, {}),
                    options,
                    integral,
                    declared_option_ranges,
                    explicit=frozenset(signature.parameters),
                )
            return function(*args, **kwargs)

        return wrapper

    return decorate


def _respelled(called: str, kwargs: Mapping[str, Any], renamed: Mapping[str, str]) -> dict[str, Any]:
    """``kwargs`` with each old spelling in ``renamed`` replaced by its new name, warning once per old keyword."""
    respelled = dict(kwargs)
    for old, new in renamed.items():
        if old not in respelled:
            continue
        if new in respelled:
            raise TypeError(
                f"{called}() got both {old}= and {new}=: {old}= is the old spelling of {new}=, pass only {new}="
            )
        warnings.warn(
            f"{called}({old}=...) is deprecated: pass {new}= (the same number); {old}= is removed in "
            f"neuron-constructs {RENAMED_KEYWORDS_REMOVED_IN}",
            DeprecationWarning,
            stacklevel=3,
        )
        respelled[new] = respelled.pop(old)
    return respelled


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'min_count'?)``: the keyword of the same meaning the method takes, else the closest
    spelling, else nothing."""
    import difflib

    candidates = list(choices)
    same = [c for c in _SAME_MEANING.get(name, ()) if c in candidates]
    close = same or difflib.get_close_matches(name, candidates, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_options(
    label: str,
    path: str | LazyPath,
    given: Mapping[str, Any],
    struct: type,
    integral: frozenset[str],
    ranges: Mapping[str, Range],
    *,
    explicit: frozenset[str] = frozenset(),
) -> None:
    fields = _option_fields(struct)
    required = sorted(getattr(struct, "__required_keys__", frozenset()))
    missing = [n for n in required if n not in given and n not in explicit]
    if missing:
        raise TypeError(f"{label}() missing the required option {missing[0]!r} ({describe(fields[missing[0]])})")
    unknown = sorted(set(given) - set(fields))
    if unknown:
        valid = sorted({*fields, *(e for e in explicit if e not in ("self", "scope", "id"))})
        raise TypeError(
            f"{label}() got an unexpected keyword argument {unknown[0]!r}"
            f"{_did_you_mean(unknown[0], valid)}; it takes: {', '.join(valid)}"
        )
    for name, value in given.items():
        if value is None:
            continue
        annotation: Any = fields[name]
        if name in integral:
            annotation = int | None
        literal = name in integral
        check_value(path, name, value, annotation, ranges=ranges, literal=literal)
