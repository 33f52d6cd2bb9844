"""Shared fixtures: the example app is synthesized once per session, with cdk-nag on."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
_PINNED_NODE = ROOT / "node_modules" / ".bin" / "node"
if _PINNED_NODE.exists():
    # The pinned Node.js 22 runs jsii: no end-of-life banner, same runtime as the cdk CLI.
    os.environ.setdefault("JSII_NODE", str(_PINNED_NODE))
# aws-cdk-lib's built-in CloudFormation validation (a WebAssembly engine, ~3 s to load in each process) runs on
# the example stacks, registered explicitly below, rather than in each of the suite's many small synths.
os.environ.setdefault("CDK_VALIDATION", "false")
sys.path.insert(0, str(ROOT / "examples"))

from aws_cdk import App, CloudFormationValidatePlugin, Stack, Validations, cx_api  # noqa: E402

EXAMPLE_STACKS = (
    "NeuronInferenceManaged",
    "NeuronInferenceEc2",
    "NeuronMixedCluster",
    "NeuronSlicedInf2",
    "NeuronSlicedTrn1",
    "NeuronRagFleet",
    "NeuronTrainingTrn1",
)
ECS_STACKS = EXAMPLE_STACKS[:-1]
"""The examples with an ECS cluster of their own (AWS Batch makes and manages the training stack's)."""


@pytest.fixture(scope="session")
def cloudformation_validation() -> CloudFormationValidatePlugin:
    """aws-cdk-lib's built-in CloudFormation validation (what ``cdk synth`` runs by default), loaded once."""
    return CloudFormationValidatePlugin()


@pytest.fixture(scope="session")
def example_app(cloudformation_validation: CloudFormationValidatePlugin) -> App:
    """The example app with cdk-nag's AwsSolutions and NIST 800-53 rev 5 packs (report only) and aws-cdk-lib's
    built-in CloudFormation validation."""
    from compliance_report import nag_app

    app = nag_app()
    Validations.of(app).add_plugins(cloudformation_validation)
    return app


@pytest.fixture(scope="session")
def example_assembly(example_app: App) -> cx_api.CloudAssembly:
    """One synthesis of every example stack, with the validation report of every plugin."""
    return example_app.synth()


@pytest.fixture(scope="session")
def validation_report(example_assembly: cx_api.CloudAssembly) -> dict[str, Any]:
    """``validation-report.json`` of that synthesis: cdk-nag's packs and the Neuron template checks."""
    import json

    return json.loads((Path(example_assembly.directory) / "validation-report.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def templates(example_assembly: cx_api.CloudAssembly) -> dict[str, dict[str, Any]]:
    """Synthesized CloudFormation templates by stack name."""
    return {name: example_assembly.get_stack_by_name(name).template for name in EXAMPLE_STACKS}


@pytest.fixture(scope="session")
def example_stacks(example_app: App, example_assembly: cx_api.CloudAssembly) -> dict[str, Stack]:
    """The example ``Stack`` objects (after synthesis), by name."""
    return {name: example_app.node.find_child(name) for name in EXAMPLE_STACKS}  # type: ignore[misc]


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """The template's resources of one CloudFormation type, by logical id."""
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


MONITORING_PREFIX = "NeuronMonitoring"
"""Logical ids of what ``NeuronMonitoring`` adds to the examples (``Neuron/Monitoring``)."""


def workloads(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """The example's own resources of one type: without the monitoring daemons' task definitions and services."""
    return {k: v for k, v in resources(template, resource_type).items() if not k.startswith(MONITORING_PREFIX)}


def synth_warnings(app: App) -> list[str]:
    """The Neuron template checks' warnings in the app's validation report (what the CLI prints at synth)."""
    import json

    report = json.loads((Path(app.synth().directory) / "validation-report.json").read_text())
    plugin = next((p for p in report["pluginReports"] if p["pluginName"] == "NeuronConstructs"), None)
    assert plugin is None or plugin["conclusion"] == "success"
    return [v["description"] for v in (plugin["violations"] if plugin else []) if v["severity"] == "warning"]
