"""What every reader of a deployed stack shares: the template it reads, what CloudFormation created, and the
comparison of each property the template asks for with what the endpoint reports (a difference is a
:class:`~neuron_constructs.tools.deployment_report.model.Gap`).

The readers of each area (:mod:`~neuron_constructs.tools.deployment_report.ecs`,
:mod:`~neuron_constructs.tools.deployment_report.load_balancing`,
:mod:`~neuron_constructs.tools.deployment_report.training`,
:mod:`~neuron_constructs.tools.deployment_report.cloudwatch`) build on :class:`StackReaderBase`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from neuron_constructs.tools.deployment_report.model import ClientFactory, Gap, ReportItem, ServiceState

__all__ = ["StackReaderBase", "ref"]


def _template(cloudformation: Any, stack_name: str) -> dict[str, Any]:
    body = cloudformation.get_template(StackName=stack_name, TemplateStage="Processed")["TemplateBody"]
    return json.loads(body) if isinstance(body, str) else dict(body)


def _created_resources(cloudformation: Any, stack_name: str) -> dict[str, dict[str, Any]]:
    created: dict[str, dict[str, Any]] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId") and summary.get("PhysicalResourceId"):
                created[summary["LogicalResourceId"]] = summary
    return created


def ref(value: Any) -> str | None:
    """The logical id a ``{"Ref": ...}`` names; ``None`` for anything else."""
    return value.get("Ref") if isinstance(value, dict) else None


class StackReaderBase:
    """What the readers of one stack share: the template says what to look for, the live APIs say what is there."""

    def __init__(self, clients: ClientFactory, stack_name: str, *, functions_run: bool = True) -> None:
        self.clients = clients
        self.functions_run = functions_run
        cloudformation = clients("cloudformation")
        self.stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
        self.template = _template(cloudformation, stack_name)
        self.declared: dict[str, dict[str, Any]] = self.template.get("Resources", {})
        self.created = _created_resources(cloudformation, stack_name)
        self.parameters = {
            p["ParameterKey"]: p.get("ResolvedValue") or p.get("ParameterValue", "")
            for p in self.stack.get("Parameters", [])
        }
        self.items: list[ReportItem] = []
        self.gaps: list[Gap] = []
        self.services: list[ServiceState] = []
        self.clusters: list[str] = []
        self._exports: dict[str, str] | None = None

    def physical_id(self, logical_id: str) -> str | None:
        summary = self.created.get(logical_id)
        return summary["PhysicalResourceId"] if summary else None

    def value_of(self, value: Any) -> str | None:
        """What a literal name, a ``Ref`` to this stack's resource or parameter, or an ``Fn::ImportValue`` of another
        stack's export, names (an imported cluster is often given by its literal name)."""
        if isinstance(value, str):
            return value or None
        if isinstance(value, dict) and isinstance(value.get("Fn::ImportValue"), str):
            if self._exports is None:
                paginator = self.clients("cloudformation").get_paginator("list_exports")
                self._exports = {e["Name"]: e["Value"] for page in paginator.paginate() for e in page["Exports"]}
            return self._exports.get(value["Fn::ImportValue"])
        logical_id = ref(value)
        if logical_id and logical_id not in self.declared and logical_id in self.parameters:
            return self.parameters[logical_id] or None
        return self.physical_id(logical_id) if logical_id else None

    def gap(self, logical_id: str, detail: str = "not created", *, attribute: str = "resource") -> None:
        self.gaps.append(Gap(self.declared[logical_id]["Type"], logical_id, attribute, detail))

    def compare(self, logical_id: str, what: str, asked: Any, live: Any) -> None:
        if isinstance(asked, dict):
            return  # an intrinsic function (Ref, Fn::Join...): resolved by CloudFormation, not comparable here
        if asked not in (None, [], "") and asked != live:
            self.gap(logical_id, f"{what}: template asks {asked!r}, the endpoint reports {live!r}", attribute=what)

    def compare_placement(
        self, logical_id: str, what: str, asked: list[dict[str, str]], live: dict[str, Any], detail: str
    ) -> list[str]:
        """Compare the template's ``Type``/``Expression`` (or ``Field``) entries with the API's ``what`` list.

        Returns the live entries as ``"<type> <detail>"`` text.
        """

        def text(entries: list[dict[str, str]], type_key: str, detail_key: str) -> list[str]:
            return [f"{e[type_key]} {e.get(detail_key, '')}".strip() for e in entries]

        live_text = text(live.get(what, []), "type", detail)
        self.compare(logical_id, what, text(asked, "Type", detail.capitalize()), live_text)
        return live_text

    def count(self, resource_type: str, noun: str) -> str:
        n = sum(1 for k, r in self.declared.items() if r["Type"] == resource_type and k in self.created)
        return f"{n} {noun}{'' if n == 1 else 's'}"

    def outputs(self) -> None:
        live = {o["OutputKey"]: o.get("OutputValue", "") for o in self.stack.get("Outputs", [])}
        for key in self.template.get("Outputs", {}):
            if key in live:
                self.items.append(ReportItem("output", key, (live[key],)))
            else:
                self.gaps.append(Gap("Output", key, "resource", "not reported by DescribeStacks"))

    @staticmethod
    def described(call: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """What a Describe call returns; nothing when the endpoint does not know the resource or the call."""
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        try:
            return call()
        except (ClientError, BotoCoreError, ResponseParserError):  # moto answers calls it lacks with an HTML 500
            return []
