"""What a deployment report holds: the resources read back, the gaps, the services' tasks, one stack's result.

Plain data: the readers (:mod:`~neuron_constructs.tools.deployment_report.stacks`) fill it,
:mod:`~neuron_constructs.tools.deployment_report.rendering` prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClientFactory", "Gap", "ReportItem", "ServiceState", "StackReport"]


ClientFactory = Callable[[str], Any]
"""``service name -> boto3 client``, e.g. ``boto3.client``."""


@dataclass(frozen=True)
class Gap:
    """Something the template asks for that the endpoint did not create or did not keep.

    ``attribute`` is ``"resource"`` when the whole resource is missing, else the property.
    """

    resource_type: str
    logical_id: str
    attribute: str
    detail: str


@dataclass(frozen=True)
class ReportItem:
    """One created resource: its kind (cluster, capacity, task definition, service), name and settings."""

    kind: str
    name: str
    details: tuple[str, ...]


@dataclass(frozen=True)
class ServiceState:
    """One ECS service as DescribeServices and ListTasks see it: tasks desired, running, and placed (any task ECS
    started for it, running or not yet)."""

    name: str
    cluster: str
    desired: int
    running: int
    placed: int


@dataclass(frozen=True)
class StackReport:
    name: str
    status: str
    resources_declared: int
    resources_created: int
    items: list[ReportItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    services: list[ServiceState] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    """The ECS clusters the stack's services run in (its own or imported ones), by name."""

    @property
    def created(self) -> bool:
        """Whether CloudFormation finished creating or updating the stack."""
        return self.status in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE")
