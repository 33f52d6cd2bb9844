"""End to end: the team app (``examples/team_app``) deployed stack by stack to a fresh local endpoint.

The app deploys with the command its page gives, ``python -m neuron_constructs.local_endpoint --app-dir
examples/team_app``, with cdk-nag's AwsSolutions pack on: the platform first, then each workload importing what it
needs from the platform's exports. A workload stack then deletes on its own while the platform keeps running.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_constructs.local_endpoint import deploy_app, local_aws_endpoint
from neuron_constructs.local_endpoint.cdk_cli import run_cdk

pytestmark = pytest.mark.e2e

TEAM_APP = ROOT / "examples" / "team_app"
CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"
COMMAND = ("-m", "neuron_constructs.local_endpoint", "--app-dir", "examples/team_app", "--context", "cdkNag=true")
STACKS = ("Platform", "LlmService", "DevModel", "EmbeddingFleet", "Training")


def _environment() -> dict[str, str]:
    """The environment ``make`` gives: the pinned Node.js and cdk CLI, and this Python as ``python``."""
    path = os.pathsep.join((str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), os.environ["PATH"]))
    return {**os.environ, "PATH": path, "JSII_NODE": str(ROOT / "node_modules" / ".bin" / "node")}


DEFAULT_OUTPUT_LINES = 40
"""The command's default output for the four stacks: the cdk CLI's outcome lines, the synth warnings a line each,
and two lines a stack (well within the two screens, 100 lines, make deploy-local's eight example stacks keep to)."""


def _deploy(assembly: Path, *options: str) -> str:
    """What the command prints (it must succeed)."""
    result = subprocess.run(
        [sys.executable, *COMMAND, "--output", str(assembly), *options],
        cwd=ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The report the command prints with --verbose, and the cloud assembly it deployed."""
    assembly = tmp_path_factory.mktemp("team-app") / "cdk.out"
    return _deploy(assembly, "--verbose"), assembly


def test_every_stack_of_the_team_app_deploys(deployed: tuple[str, Path]) -> None:
    report, _ = deployed
    for stack in STACKS:
        assert f"\n{stack}: created (CREATE_COMPLETE); " in report, stack
    assert report.index("\nPlatform: created") < report.index("\nLlmService: created")


def test_the_default_output_leads_with_one_line_a_stack_and_fits_two_screens(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """GIVEN the team app, WHEN the command runs without --verbose, THEN it prints the cdk CLI's outcome lines, then
    per stack its result and one line of what the endpoint does not model, names the endpoint honestly, and stays
    within its bound; the workloads' services, in the platform's imported cluster, are reported as created."""
    printed = _deploy(tmp_path_factory.mktemp("team-app-default") / "cdk.out").splitlines()
    assert len(printed) <= DEFAULT_OUTPUT_LINES, "\n".join(printed)
    (heading,) = [line for line in printed if line.startswith("What each stack created, read back from ")]
    assert "the local endpoint http://127.0.0.1:" in heading and "AWS" not in heading
    results = {line.split(":", 1)[0]: line for line in printed if line.split(":", 1)[0] in STACKS and "created" in line}
    assert set(results) == set(STACKS)
    assert all("AWS" not in line.split("; next:")[0] for line in results.values())
    for stack in ("LlmService", "EmbeddingFleet"):
        assert " services, " in results[stack] or " service, " in results[stack], results[stack]
    gap_lines = [line for line in printed if line.startswith("  not created or not kept by the endpoint: ")]
    assert len(gap_lines) <= len(STACKS)
    for line in gap_lines:
        missing = line.split(" not created (", 1)[1].split(")", 1)[0] if " not created (" in line else ""
        assert not re.search(r"\bECS::Service( x\d+)?(,|$)", missing), line  # every service is found and created


def _sections(report: str) -> dict[str, str]:
    """Each stack's part of the deployment report, by stack name."""
    sections: dict[str, str] = {}
    for part in report.split("\n\n"):
        name, _, rest = part.strip().partition(": ")  # with --verbose, a blank line before each stack
        if name in STACKS:
            sections[name] = rest
    return sections


def test_each_workload_adds_its_own_rule_to_the_platform_s_listener(deployed: tuple[str, Path]) -> None:
    sections = _sections(deployed[0])
    assert "listener rule    priority 10: path-pattern /v1/*; forward to LlmService-" in sections["LlmService"]
    embedding = sections["EmbeddingFleet"]
    assert "listener rule    priority 20: path-pattern /embed/*; forward to EmbeddingFleet-" in embedding
    assert embedding.count("\n  service   ") == 8  # eight one-core copies
    assert "listener rule" not in sections["Platform"]


def test_the_report_names_the_approval_and_the_scale_to_zero_the_endpoint_does_not_run(
    deployed: tuple[str, Path],
) -> None:
    """The LLM's approval (a pause hook) and the dev model's idle and wake policies deploy; moto keeps neither the
    service's lifecycle hooks nor the alarms' metric math nor the scaling policies, and the report says so."""
    sections = _sections(deployed[0])
    assert "deploymentConfiguration.lifecycleHooks not kept" in sections["LlmService"]
    dev = sections["DevModel"]
    assert "listener rule    priority 40: path-pattern /dev/v1/*; forward to DevModel-" in dev
    assert "alarm            DevModel-DevModelServiceIdleAlarm" in dev and "DevModelServiceWakeAlarm" in dev
    for gap in ("IdleAlarm", "WakeAlarm"):
        assert re.search(rf"AWS::CloudWatch::Alarm DevModelService{gap}\w+: Metrics: the metric math is not kept", dev)
    for policy in ("ScaleToZero", "Wake"):
        assert re.search(rf"AWS::ApplicationAutoScaling::ScalingPolicy DevModelService{policy}\w+: not created", dev)


def test_the_deployed_templates_pass_cfn_lint_with_the_neuron_rules(deployed: tuple[str, Path]) -> None:
    from cfnlint.api import ManualArgs, lint
    from cfnlint.core import get_rules

    _, assembly = deployed
    rules = get_rules(["neuron_constructs.checks.cfn_lint_rules"], [], [])
    for stack in STACKS:
        template = (assembly / f"{stack}.template.json").read_text()
        matches = lint(template, rules=rules, config=ManualArgs(regions=["us-east-1"]))
        assert [f"{m.rule.id} {m.message}" for m in matches] == [], stack


def test_the_embedding_fleet_and_the_training_queue_launch_the_ami_their_images_run_on(
    deployed: tuple[str, Path],
) -> None:
    """The SDK 2.20 embedding and SDK 2.30 training images do not run on the newest Neuron driver: the platform's
    inf2.48xlarge group and the training queue resolve the pinned release, deployed (the endpoint publishes it), and
    nothing of the app warns NEURON127; the LLM's Managed Instances capacity has an AMI of ECS's choosing."""
    import importlib.util

    from neuron_constructs import NeuronAmi

    spec = importlib.util.spec_from_file_location("team_app", TEAM_APP / "app.py")
    assert spec is not None and spec.loader is not None
    team_app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(team_app)
    pinned = NeuronAmi.release(team_app.OLDER_DRIVER_AMI).parameter_name
    report, assembly = deployed
    for stack in ("Platform", "Training"):
        template = json.loads((assembly / f"{stack}.template.json").read_text())
        parameters = {p["Default"] for p in template.get("Parameters", {}).values() if "Default" in p}
        assert pinned in parameters and "/neuron/recommended/image_id" not in str(parameters), stack
    assert "NEURON127" not in report


def test_the_platform_imports_nothing_and_every_workload_imports_from_it(deployed: tuple[str, Path]) -> None:
    _, assembly = deployed
    templates = {stack: (assembly / f"{stack}.template.json").read_text() for stack in STACKS}
    assert "Fn::ImportValue" not in templates["Platform"]
    for stack in STACKS[1:]:
        imported = {json.dumps(value) for value in _import_values(json.loads(templates[stack]))}
        assert imported and all(name.startswith('"Platform:') for name in imported), stack


def _import_values(value: object) -> Iterator[object]:
    if isinstance(value, dict):
        if "Fn::ImportValue" in value:
            yield value["Fn::ImportValue"]
        for item in value.values():
            yield from _import_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _import_values(item)


def test_a_workload_stack_deletes_alone_and_the_platform_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assembly = tmp_path / "cdk.out"
    env = _environment()
    monkeypatch.setenv("PATH", env["PATH"])  # the cdk CLI runs the app with `python app.py`
    with local_aws_endpoint() as endpoint:
        deploy_app(endpoint, app_dir=TEAM_APP, cdk=str(CDK_CLI), output=assembly, stacks=["LlmService"])
        cloudformation = endpoint.client("cloudformation")
        listener = next(
            e["Value"] for e in cloudformation.list_exports()["Exports"] if "LoadBalancerListener" in e["Name"]
        )
        elbv2 = endpoint.client("elbv2")
        priorities = {r["Priority"] for r in elbv2.describe_rules(ListenerArn=listener)["Rules"]}
        assert priorities == {"default", "10"}

        destroy = ["destroy", "--no-notices", "--app", str(assembly), "LlmService", "--force"]
        run_cdk(str(CDK_CLI), destroy, env=endpoint.environment(env), cwd=TEAM_APP)

        live = {s["StackName"]: s["StackStatus"] for s in cloudformation.describe_stacks()["Stacks"]}
        assert "LlmService" not in live
        assert live["Platform"] == "CREATE_COMPLETE"
