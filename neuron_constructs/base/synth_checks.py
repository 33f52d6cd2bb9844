"""The template checks at ``cdk synth``: an aws-cdk-lib validation plugin.

:class:`NeuronTemplateChecks` runs :func:`~neuron_constructs.checks.template_checks.check_templates` on
every template of an app after synthesis - nested stacks included, and all stacks together, so a
service in one stack and the capacity or task definition it imports from another are checked as
one - and reports each finding with the construct path of its resource:

* errors fail the synth; they cannot be acknowledged (ECS or the Neuron runtime would not accept
  the result). The cdk CLI reports validation failures only for the stacks it selects, and a bare
  ``cdk synth`` selects no stack inside a ``Stage`` (the layout of CDK Pipelines): for errors
  there the app itself exits with status 1 once it has synthesized, after printing them;
* warnings print and let the synth pass, unless the construct already raised the same warning
  or it was acknowledged on the resource or an ancestor up to the App
  (``Validations.of(scope).acknowledge(Acknowledgment(id="neuron-constructs:NEURON1NN", ...))``).

Every construct of this library calls :func:`enable_template_checks`, so an app that uses one
checks all of its stacks, including services and task definitions made with plain aws-cdk-lib
or changed through escape hatches. An app that uses none of them calls it once on its ``App``.
"""

from __future__ import annotations

import atexit
import collections
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any
from weakref import WeakSet

import jsii
from aws_cdk import (
    CfnElement,
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    NestedStack,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Stack,
    Stage,
    Validations,
)
from constructs import IConstruct

from neuron_constructs.base.tree import app_of
from neuron_constructs.checks.template_checks import Finding, check_templates
from neuron_constructs.knowledge.rules import RULES, Rule

__all__ = ["PLUGIN_NAME", "NeuronTemplateChecks", "enable_template_checks"]

PLUGIN_NAME = "NeuronConstructs"
"""How validation reports name these checks."""

_ENABLED: WeakSet[Stage] = WeakSet()
_CLI_REPORTS_FAILURES = "@aws-cdk/core:failSynthOnValidationErrors"
"""Set to false by the cdk CLI, which then reports validation failures itself - for the stacks it selected only."""
_NESTED_SUFFIX = ".nested.template.json"
_LOGICAL_ID = "aws:cdk:logicalId"
_NO_LOGICAL_ID_METADATA = "aws:cdk:disable-logicalId-metadata"
"""The context key that keeps aws-cdk-lib from recording each element's logical id in the assembly."""


@functools.cache
def _version() -> str:
    """The installed package's version (reading package metadata takes milliseconds: once per process)."""
    try:
        return metadata.version("neuron-constructs")
    except metadata.PackageNotFoundError:
        return "0.0.0"


@jsii.implements(IPolicyValidationPlugin)
class NeuronTemplateChecks:
    """The Neuron rules' template checks as a validation plugin (errors ``fatal``, warnings ``warning``)."""

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def version(self) -> str:
        return _version()

    @property
    def rule_ids(self) -> list[str]:
        return [rule.id for rule in RULES if rule.on_template]

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        app = context.app_construct
        files = _stack_templates(Path(app.outdir)) if isinstance(app, Stage) else {}
        if not files:
            files = {stack.stack_construct_path: Path(stack.template_path) for stack in context.stack_templates}
        for directory in {path.parent for path in list(files.values())}:
            for nested in sorted(directory.glob(f"*{_NESTED_SUFFIX}")):
                files[nested.name] = nested
        templates = {name: json.loads(path.read_text()) for name, path in files.items()}
        has_nested = any(name.endswith(_NESTED_SUFFIX) for name in files)
        outdir = Path(app.outdir) if isinstance(app, Stage) and not has_nested else None
        tree = _Tree(lambda: app, assembly=outdir, templates=templates)
        violations: list[PolicyViolation] = []
        unreported: list[str] = []
        for finding in check_templates(templates, construct_paths=tree.construct_path):
            if finding.severity == "warning" and tree.already_told(finding):
                continue
            violations.append(_violation(finding, files[finding.template]))
            if finding.severity == "error" and files[finding.template].parent.name.startswith("assembly-"):
                unreported.append(finding.message)
        if unreported and app.node.try_get_context(_CLI_REPORTS_FAILURES) is False:
            _fail_when_the_app_exits(
                f"{len(unreported)} Neuron rule error{'s' if len(unreported) > 1 else ''} in stacks inside a Stage, "
                "which the cdk CLI reports only for the stacks it is asked for (a bare `cdk synth`, as CDK Pipelines "
                "run it, would pass):\n" + "\n".join(unreported)
            )
        return PolicyValidationPluginReport(
            success=not any(v.severity == "fatal" for v in violations), violations=violations
        )


def _stack_templates(assembly: Path) -> dict[str, Path]:
    """Stack construct path -> template file of every stack in a cloud assembly and its Stages' assemblies, read
    from the manifests (what ``IPolicyValidationContext.stack_templates`` lists, without a call per field)."""
    try:
        manifest = json.loads((assembly / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, Path] = {}
    for artifact in (manifest.get("artifacts") or {}).values():
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack" and properties.get("templateFile"):
            found[str(artifact.get("displayName"))] = assembly / properties["templateFile"]
        elif artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
            found.update(_stack_templates(assembly / properties["directoryName"]))
    return found


def _stack_metadata(assembly: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Stack construct path -> the metadata of the constructs in that stack (absolute construct path -> entries), of
    every stack in a cloud assembly and its Stages' assemblies: what aws-cdk-lib writes to the manifest (or the file
    it names), read without a call to the construct tree. A stack whose metadata cannot be read is left out."""
    try:
        manifest = json.loads((assembly / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for artifact in (manifest.get("artifacts") or {}).values():
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack":
            metadata = artifact.get("metadata")
            if metadata is None and artifact.get("additionalMetadataFile"):
                try:
                    metadata = json.loads((assembly / artifact["additionalMetadataFile"]).read_text())
                except (OSError, ValueError):
                    continue
            if isinstance(metadata, dict):
                found[str(artifact.get("displayName"))] = metadata
        elif artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
            found.update(_stack_metadata(assembly / properties["directoryName"]))
    return found


def _fail_when_the_app_exits(message: str) -> None:
    """Exit the app with status 1 once it has finished, after printing ``message``.

    A validation plugin cannot fail the synth itself under the cdk CLI (aws-cdk-lib records an exception
    from a plugin as that plugin's failure, which the CLI again shows only for selected stacks).
    """

    def fail() -> None:
        sys.stdout.flush()
        sys.stderr.write(f"neuron_constructs: {message}\n")
        sys.stderr.flush()
        os._exit(1)

    atexit.register(fail)


def _violation(finding: Finding, template_path: Path) -> PolicyViolation:
    error = finding.severity == "error"
    return PolicyViolation(
        rule_name=finding.rule.id,
        description=finding.message,
        severity="fatal" if error else "warning",
        fix=finding.message.rsplit("Fix: ", 1)[-1],
        violating_resources=[
            PolicyViolatingResource(
                resource_logical_id=finding.logical_id,
                template_path=str(template_path),
                locations=["/".join(str(p) for p in finding.location[2:])],
            )
        ],
    )


class _Tree:
    """What the construct tree says about a template's resources, read on first use.

    The paths and the metadata come from the cloud assembly aws-cdk-lib has just written (each ``CfnElement``
    records its logical id there; a stack's metadata holds every construct of it that has any), which costs no call
    to the JavaScript runtime; the tree itself is walked only for what the assembly does not say: an app with nested
    stacks (their constructs are in the parent stack's metadata), logical ids the metadata does not name, and the
    constructs outside any stack (the App, Stages) whose acknowledgements apply to the stacks in them.
    """

    def __init__(
        self,
        app: Callable[[], IConstruct],
        *,
        assembly: Path | None = None,
        templates: dict[str, Any] | None = None,
    ) -> None:
        self._app = app  # asked for only when a finding needs the tree
        self._assembly = assembly
        self._templates = templates or {}
        self._paths: dict[str, dict[str, str]] | None = None
        self._tree_paths: dict[str, dict[str, str]] | None = None
        self._constructs: dict[str, IConstruct] | None = None
        self._metadata: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self._stacks: list[str] = []

    def construct_path(self, template: str, logical_id: str) -> str | None:
        """The path of the L2 that owns ``logical_id`` in ``template`` (a stack path or a nested template file)."""
        if self._paths is None:
            self._paths = self._from_assembly()
        path = self._paths.get(template, {}).get(logical_id)
        if path is None:
            if self._tree_paths is None:
                self._tree_paths = self._read()
            path = self._tree_paths.get(template, {}).get(logical_id)
        return path

    def already_told(self, finding: Finding) -> bool:
        """Whether the construct raised this warning itself, or it was acknowledged on it or an ancestor."""
        path = self.construct_path(finding.template, finding.logical_id)
        if path is None:
            return False
        rule: Rule = finding.rule
        names = {rule.warning_id, f"Annotation::{rule.warning_id}", f"{PLUGIN_NAME}::{rule.id}"}
        # a warning about one item (a variable) was raised for that item only
        item = re.search(r"environment variable \S+ ", finding.message) if rule.id == "NEURON109" else None
        parts = path.split("/")
        for end in range(len(parts), -1, -1):  # ... down to the App itself (path "")
            for kind, data in self._entries("/".join(parts[:end])):
                if kind == "aws:cdk:warning":
                    text = json.dumps(data) if not isinstance(data, str) else data
                    if rule.warning_id in text and (not item or item[0] in text):
                        return True
                acknowledged = kind == Validations.ACKNOWLEDGED_RULES_METADATA_KEY
                if acknowledged and isinstance(data, dict) and names & set(data):
                    return True
        return False

    def _entries(self, path: str) -> list[tuple[str, Any]]:
        """The metadata (type, data) of the construct at ``path``: from its stack's metadata in the assembly when
        it is in a stack the assembly describes, else from the construct itself."""
        if self._paths is None:
            self._paths = self._from_assembly()
        stack = max((s for s in self._stacks if path == s or path.startswith(f"{s}/")), key=len, default=None)
        if stack is not None:
            return [(str(e.get("type")), e.get("data")) for e in self._metadata[stack].get(f"/{path}", [])]
        construct = self._constructs.get(path) if self._constructs is not None else self._find(path)
        return [(entry.type, entry.data) for entry in construct.node.metadata] if construct is not None else []

    def _find(self, path: str) -> IConstruct | None:
        """The construct at ``path`` (``""``: the App), looked up child by child."""
        construct: IConstruct | None = self._app()
        for part in path.split("/") if path else []:
            construct = construct.node.try_find_child(part) if construct is not None else None
        return construct

    def _from_assembly(self) -> dict[str, dict[str, str]]:
        """Template -> logical id -> owner path, from the assembly's metadata; empty when it cannot say for sure."""
        if self._assembly is None:
            return {}
        if self._app().node.try_get_context(_NO_LOGICAL_ID_METADATA):
            return {}
        metadata = _stack_metadata(self._assembly)
        stacks = set(metadata)
        paths: dict[str, dict[str, str]] = {}
        for stack, constructs in metadata.items():
            elements = {
                key[1:]: str(entry.get("data"))
                for key, entries in constructs.items()
                for entry in entries
                if entry.get("type") == _LOGICAL_ID and isinstance(entry.get("data"), str)
            }
            own = collections.Counter(element.rpartition("/")[0] for element in elements)
            owners: dict[str, str] = {}
            for element, logical_id in elements.items():
                parent = element.rpartition("/")[0]
                one = parent and parent not in stacks and own[parent] == 1
                owners[logical_id] = parent if one else element
            template = self._templates.get(stack)
            if isinstance(template, dict) and not set(template.get("Resources") or {}) <= set(owners):
                return {}  # an element without its logical id in the metadata: ask the tree
            paths[stack] = owners
        self._metadata = metadata
        self._stacks = sorted(stacks)
        return paths

    def _read(self) -> dict[str, dict[str, str]]:
        paths: dict[str, dict[str, str]] = {}
        self._constructs = {}
        for construct in self._app().node.find_all():
            self._constructs[construct.node.path] = construct
            if not isinstance(construct, CfnElement):
                continue
            stack = Stack.of(construct)
            template = stack.template_file if isinstance(stack, NestedStack) else stack.node.path
            paths.setdefault(template, {})[str(stack.resolve(construct.logical_id))] = _owner_path(construct)
        return paths


def _owner_path(element: CfnElement) -> str:
    """The path of the construct that owns an L1 (``.../Service``, not ``.../Service/Service``), else the L1's."""
    parent = element.node.scope
    if parent is not None and not isinstance(parent, Stack):
        own = [c for c in parent.node.children if isinstance(c, CfnElement)]
        if len(own) == 1:
            return parent.node.path
    return element.node.path


def enable_template_checks(scope: IConstruct) -> None:
    """Check every template of the app around ``scope`` (an ``App``, a ``Stage`` or any construct) at synth.

    Registers :class:`NeuronTemplateChecks` once on the outermost stage (the ``App``).
    """
    root: Any = app_of(scope)
    if root in _ENABLED:  # the common case, on every construct of the library
        return
    stage: Any = root if Stage.is_stage(root) else scope if Stage.is_stage(scope) else Stage.of(scope)
    if stage is None:
        return
    while (outer := Stage.of(stage)) is not None:
        stage = outer
    if stage in _ENABLED:
        return
    Validations.of(stage).add_plugins(NeuronTemplateChecks())
    _ENABLED.add(stage)
