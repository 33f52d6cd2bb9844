"""``neuron-ecs lint``: the Neuron rules' template checks on CloudFormation files, without the AWS CDK.

Takes JSON or YAML templates (from CDK in any language, SAM, or written by hand) and
directories (every ``*.template.json`` in them, e.g. ``cdk.out``). Findings print the way
cfn-lint prints them - the rule's cfn-lint id and message, then ``file:line:column`` - or one
per line with ``--format parseable``, or as JSON with ``--json``. Errors and warnings both
print; only errors make the exit status 3. The command ends with one line saying what it checked (templates,
resources, rules) and found, unless ``--quiet``.

A resource's ``Metadata: {cfn-lint: {config: {ignore_checks: [...]}}}`` silences rule ids (or
their cfn-lint ids) for that resource, as in cfn-lint; ``--ignore`` silences them everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from neuron_constructs.checks.template_checks import Finding, check_templates
from neuron_constructs.checks.template_loading import LoadedTemplate, TemplateError, load_template
from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.knowledge.rules import BY_ID

__all__ = [
    "LintFinding",
    "LintResult",
    "LintUsageError",
    "Writer",
    "lint_paths",
    "load_templates",
    "template_files",
    "write_findings",
    "write_rules",
]


class Writer(Protocol):
    """Where findings are written: a text stream, or anything with ``write``."""

    def write(self, text: str, /) -> object: ...


class LintUsageError(ValueError):
    """A path that is not a readable CloudFormation template (exit status 2)."""


@dataclass(frozen=True)
class LintFinding:
    """A finding and where it is in which file."""

    file: str
    line: int
    column: int
    finding: Finding

    def to_json(self) -> dict[str, Any]:
        rule = self.finding.rule
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "rule": rule.id,
            "cfn_lint_id": rule.cfn_lint_id,
            "severity": rule.severity,
            "title": rule.title,
            "resource": self.finding.logical_id,
            "location": "/".join(str(p) for p in self.finding.location),
            "message": self.finding.message,
        }


def template_files(paths: Iterable[str]) -> list[Path]:
    """The template files ``paths`` name: files as given, directories' ``*.template.json``, including those of
    the nested cloud assemblies of Stages (``cdk.out/assembly-Prod/``)."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(path.glob("*.template.json")) + sorted(path.glob("assembly-*/**/*.template.json"))
            if not found:
                raise LintUsageError(f"{name}: a directory with no *.template.json in it")
            files += found
        elif path.exists():
            files.append(path)
        else:
            raise LintUsageError(f"{name}: no such file or directory")
    return files


@dataclass(frozen=True)
class LintResult:
    """The findings, and the files that could not be read as templates (each with why)."""

    findings: list[LintFinding]
    unreadable: list[str]
    templates: int = 0
    """Templates read and checked."""
    resources: int = 0
    """Resources in those templates."""
    rules: int = 0
    """Rules checked on them (every template rule less those ignored)."""

    def summary(self) -> str:
        """One line: what was checked and what was found, e.g. ``7 templates, 612 resources, 38 rules checked: no
        findings``."""
        errors = sum(1 for f in self.findings if f.finding.severity == "error")
        warnings = len(self.findings) - errors
        found = [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in ((errors, "error"), (warnings, "warning")) if n]
        unread = f", {len(self.unreadable)} not read" if self.unreadable else ""
        return (
            f"{_count(self.templates, 'template')}{unread}, {_count(self.resources, 'resource')}, "
            f"{_count(self.rules, 'rule')} checked: {', '.join(found) or 'no findings'}"
        )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def load_templates(paths: Sequence[str]) -> tuple[dict[str, LoadedTemplate], list[str]]:
    """Every template ``paths`` name (files, or directories such as ``cdk.out``) by file name, and a sentence for
    each file that is not a template. Raises :class:`LintUsageError` for a path that does not exist."""
    loaded: dict[str, LoadedTemplate] = {}
    unreadable: list[str] = []
    named = {Path(name) for name in paths}
    for path in template_files(paths):
        try:
            if path not in named and not path.is_file():  # found in a directory: a pipe or device there is not read
                raise TemplateError("not a regular file")
            loaded[str(path)] = load_template(path)
        except TemplateError as error:
            unreadable.append(f"{path}: {error}")
    return loaded, unreadable


def lint_paths(paths: Sequence[str], *, ignore: Iterable[str] = ()) -> LintResult:
    """Every finding in the templates ``paths`` name, checked together as one app's stacks (a service in
    one and the capacity it imports from another are checked as one); errors first, file by file.

    A file that is not a template is reported in ``unreadable`` and the others are still checked.
    """
    ignored = {_rule_id(i) for i in ignore}
    loaded, unreadable = load_templates(paths)
    found = [
        LintFinding(finding.template, *loaded[finding.template].location(finding.location), finding)
        for finding in check_templates(loaded, ignore=ignored)
    ]
    resources = sum(
        len(loaded_template.template.get("Resources") or {})
        for loaded_template in loaded.values()
        if isinstance(loaded_template.template, dict) and isinstance(loaded_template.template.get("Resources"), dict)
    )
    rules = sum(1 for rule in BY_ID.values() if rule.on_template and rule.id not in ignored)
    return LintResult(found, unreadable, templates=len(loaded), resources=resources, rules=rules)


def _rule_id(name: str) -> str:
    """A rule id from its id or its cfn-lint id (``NEURON009`` or ``E9109``)."""
    for rule in BY_ID.values():
        if name in (rule.id, rule.cfn_lint_id):
            return rule.id
    raise LintUsageError(f"--ignore {name}: no such rule (neuron-ecs lint --list-rules lists them)")


def write_findings(findings: Sequence[LintFinding], out: Writer, *, form: str) -> None:
    """``form``: ``text`` (cfn-lint's default layout), ``parseable`` or ``json``; control characters of the
    templates' text escaped in each (:func:`~neuron_constructs.checks.terminal.terminal_safe`; JSON escapes its own)."""
    if form == "json":
        out.write(json.dumps([f.to_json() for f in findings], indent=2) + "\n")
        return
    for item in findings:
        # a message quotes the template (logical ids, names, values) and a file name is anyone's: both escaped
        rule, message, file = item.finding.rule, item.finding.message, terminal_safe(item.file)
        if form == "parseable":
            flat = terminal_safe(" ".join(message.split()))
            out.write(f"{file}:{item.line}:{item.column}:{item.line}:{item.column}:{rule.cfn_lint_id}:{flat}\n")
        else:
            out.write(f"{rule.cfn_lint_id} {terminal_safe(message)}\n{file}:{item.line}:{item.column}\n\n")


def write_rules(out: Writer) -> None:
    """``--list-rules``: every rule checked on templates, as cfn-lint lists its rules."""
    for rule in BY_ID.values():
        if rule.on_template:
            out.write(f"{rule.cfn_lint_id} {rule.id} ({rule.severity}): {rule.title}\n")
