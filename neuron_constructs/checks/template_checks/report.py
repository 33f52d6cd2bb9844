"""What a template check reports: findings, collected per template, with their place in it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from neuron_constructs.checks.cfn_template import Container, EcsTemplate
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rules import Rule

__all__ = [
    "Check",
    "Finding",
    "TemplateReport",
    "devices_text",
    "in_container",
    "in_properties",
    "neuron_launch_templates",
]


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place in one template."""

    rule: Rule
    logical_id: str
    location: tuple[str | int, ...]
    """Path into the template, from ``Resources``."""
    message: str
    template: str = "template"
    """Which template, when several are checked together (:func:`check_templates`)."""

    @property
    def severity(self) -> str:
        return self.rule.severity


class TemplateReport:
    """Collects findings for one template."""

    def __init__(self, template: EcsTemplate) -> None:
        self.template = template
        self.findings: list[Finding] = []

    def add(
        self,
        rule: Rule,
        logical_id: str,
        location: Sequence[str | int],
        problem: str,
        *,
        container: Container | None = None,
        **fix: object,
    ) -> None:
        path = self.template.path_of(logical_id)
        if container is not None:
            path = f"{path}/{container.name}"
        self.findings.append(
            Finding(rule, logical_id, ("Resources", logical_id, *location), rule.message(path, problem, **fix))
        )


def in_properties(*tail: str | int) -> tuple[str | int, ...]:
    """A place in a resource's ``Properties``."""
    return ("Properties", *tail)


def in_container(container: Container, *tail: str | int) -> tuple[str | int, ...]:
    """A place in one container definition of a task definition."""
    return ("Properties", "ContainerDefinitions", container.index, *tail)


def devices_text(indices: Iterable[int]) -> str:
    """``/dev/neuron0, /dev/neuron1``: each device path, in order."""
    return ", ".join(f"/dev/neuron{i}" for i in sorted(indices))


def neuron_launch_templates(t: EcsTemplate) -> Iterator[tuple[str, NeuronInstanceType]]:
    """Each launch template of a catalog Neuron type, with its type."""
    for launch_template in t.launch_templates.values():
        instance = NeuronInstanceType.find(launch_template.instance_type or "")
        if instance is not None:
            yield launch_template.logical_id, instance


Check = Callable[[EcsTemplate, TemplateReport], None]
"""A template check: reads the template's ECS model and adds its rule's findings to the report."""
