"""What a local deploy reports: the warnings the cloud assembly records, one line per distinct warning, and what
each deployed stack created (:mod:`neuron_constructs.tools.deployment_report`)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuron_constructs.local_endpoint.deploy import DeployedStack
    from neuron_constructs.local_endpoint.endpoint import LocalAwsEndpoint
    from neuron_constructs.tools.deployment_report.model import StackReport

__all__ = ["describe_deployed", "format_synth_warnings", "synth_warnings"]


def synth_warnings(assembly: Path, stacks: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The warnings a cloud assembly records (``aws:cdk:warning`` metadata, in the manifest or each stack's
    ``additionalMetadataFile``) on ``stacks`` (default every stack): each warning's first line without the
    construct path it starts with, by the construct paths it is on."""
    manifest_path = assembly / "manifest.json"
    if not manifest_path.exists():
        return {}
    manifest = json.loads(manifest_path.read_text())
    found: dict[str, list[str]] = {}
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        name = (artifact.get("properties") or {}).get("stackName") or artifact_id
        if stacks is not None and name not in stacks:
            continue
        metadata = dict(artifact.get("metadata") or {})
        extra = artifact.get("additionalMetadataFile")
        if isinstance(extra, str) and (assembly / extra).is_file():
            metadata.update(json.loads((assembly / extra).read_text()))
        for path, entries in metadata.items():
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and entry.get("type") == "aws:cdk:warning":
                    lines = str(entry.get("data") or "").strip().splitlines()
                    where = str(path).strip("/")
                    text = lines[0].removeprefix(f"{where}: ") if lines else ""
                    found.setdefault(text, []).append(where)
    return found


def format_synth_warnings(warnings: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per distinct warning: its rule id, its first sentence, and the constructs it is on."""
    lines = []
    for text, paths in warnings.items():
        rule = re.search(r"\[(NEURON\d+)", text)
        sentence = text.split(" [", 1)[0]
        where = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
        lines.append(f"  {rule.group(1) + ': ' if rule else ''}{sentence} ({where})")
    return lines


def describe_deployed(endpoint: LocalAwsEndpoint, deployed: Sequence[DeployedStack]) -> list[StackReport]:
    """What each deployed stack created, read in its own account and region; others are named with theirs."""
    from neuron_constructs.tools.deployment_report.stacks import describe_stack

    reports = []
    for stack in deployed:
        report = describe_stack(
            functools.partial(endpoint.client, account=stack.account, region=stack.region),
            stack.name,
            functions_run=False,
        )
        if (stack.account, stack.region) != (endpoint.account, endpoint.region):
            report = dataclasses.replace(report, name=f"{stack.name} (aws://{stack.account}/{stack.region})")
        reports.append(report)
    return reports
