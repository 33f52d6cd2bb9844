"""End to end: a second CDK app on the team app's platform, both deployed to ONE local endpoint.

``python -m neuron_constructs.local_endpoint --serve --app-dir examples/team_app`` deploys the platform and keeps the
endpoint up, printing its URL; ``--attach URL --app-dir examples/consumer_app`` deploys the consumer against it. The
consumer finds the platform through the names it published in Parameter Store, and its service runs in the
platform's cluster behind the platform's listener. The endpoint is stopped at the end, also on failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from neuron_constructs.local_endpoint import LocalAwsEndpoint

pytestmark = pytest.mark.e2e

ENDPOINT = ("-m", "neuron_constructs.local_endpoint")
VLLM_TAG = "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
"""The vLLM image's tag the team app runs (``container_images.VLLM``), which its next week moves."""
TEAM_STACKS = ("Platform", "LlmService", "DevModel", "EmbeddingFleet", "Training")
"""The whole team app: the platform the consumer stands on, and workloads holding listener priorities of their own."""
_SERVING = re.compile(r"The endpoint stays up at (http://127\.0\.0\.1:\d+) until Ctrl-C")


def _environment() -> dict[str, str]:
    """The environment ``make`` gives: the pinned Node.js and cdk CLI, and this Python as ``python``."""
    path = os.pathsep.join((str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), os.environ["PATH"]))
    return {**os.environ, "PATH": path, "JSII_NODE": str(ROOT / "node_modules" / ".bin" / "node")}


@dataclass
class TwoApps:
    url: str
    serve_output: Path
    consumer: subprocess.CompletedProcess[str]
    environment: dict[str, str]
    tmp: Path

    @property
    def endpoint(self) -> LocalAwsEndpoint:
        return LocalAwsEndpoint(port=int(self.url.rsplit(":", 1)[1]))

    def attach(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *ENDPOINT, "--attach", self.url, *args],
            cwd=ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="module")
def two_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoApps]:
    tmp = tmp_path_factory.mktemp("two-apps")
    environment = _environment()
    serve_output = tmp / "serve.log"
    with open(serve_output, "wb") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                *ENDPOINT,
                "--serve",
                "--app-dir",
                "examples/team_app",
                "--output",
                str(tmp / "team.out"),
                *TEAM_STACKS,
            ],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 900
        url = None
        while url is None:
            found = _SERVING.search(serve_output.read_text(errors="replace"))
            url = found.group(1) if found else None
            assert server.poll() is None or url, serve_output.read_text()[-3000:]
            assert time.monotonic() < deadline, "the team app did not deploy within 900 s"
            time.sleep(1)
        apps = TwoApps(url, serve_output, subprocess.CompletedProcess([], 0), environment, tmp)
        apps.consumer = apps.attach("--app-dir", "examples/consumer_app", "--output", str(tmp / "consumer.out"))
        yield apps
    finally:
        _stop(server)


def test_the_serving_run_prints_its_url_and_how_to_attach(two_apps: TwoApps) -> None:
    printed = two_apps.serve_output.read_text()
    assert printed.startswith(f"local AWS endpoint (moto): {two_apps.url}\n")
    assert f"python -m neuron_constructs.local_endpoint --attach {two_apps.url} --app-dir <app>" in printed


def test_the_consumer_app_deploys_on_the_same_endpoint(two_apps: TwoApps) -> None:
    result = two_apps.consumer
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.startswith(f"local AWS endpoint (moto): {two_apps.url}\n")
    assert "\nChat: created (CREATE_COMPLETE); " in result.stdout
    assert "\nPlatform: " not in result.stdout  # the report is of this app's stacks
    assert f"The endpoint at {two_apps.url} keeps running" in result.stdout
    assert "CDKToolkit |" not in result.stdout + result.stderr  # bootstrapped by the first app already


def test_the_consumer_s_service_is_in_the_platform_s_cluster(two_apps: TwoApps) -> None:
    endpoint = two_apps.endpoint
    cluster = endpoint.client("ssm").get_parameter(Name="/neuron/team/cluster/name")["Parameter"]["Value"]
    cloudformation = endpoint.client("cloudformation")
    platform = cloudformation.list_stack_resources(StackName="Platform")["StackResourceSummaries"]
    assert cluster in [r["PhysicalResourceId"] for r in platform if r["ResourceType"] == "AWS::ECS::Cluster"]
    chat = cloudformation.list_stack_resources(StackName="Chat")["StackResourceSummaries"]
    (service_arn,) = [r["PhysicalResourceId"] for r in chat if r["ResourceType"] == "AWS::ECS::Service"]
    ecs = endpoint.client("ecs")
    assert service_arn in ecs.list_services(cluster=cluster)["serviceArns"]
    (service,) = ecs.describe_services(cluster=cluster, services=[service_arn])["services"]
    assert service["clusterArn"].endswith(f":cluster/{cluster}")


def test_the_consumer_s_rule_is_on_the_platform_s_listener(two_apps: TwoApps) -> None:
    endpoint = two_apps.endpoint
    listener = endpoint.client("ssm").get_parameter(Name="/neuron/team/load-balancer/listener-arn")["Parameter"]
    rules: list[dict[str, Any]] = endpoint.client("elbv2").describe_rules(ListenerArn=listener["Value"])["Rules"]
    paths = {
        r["Priority"]: [v for c in r["Conditions"] for v in c.get("PathPatternConfig", {}).get("Values", [])]
        for r in rules
    }
    assert paths["30"] == ["/chat/*"]
    assert paths["20"] == ["/embed/*"]  # the team app's workload, on the same listener


def test_attaching_an_app_whose_stack_the_endpoint_holds_is_refused_before_deploying(two_apps: TwoApps) -> None:
    again = two_apps.attach("--app-dir", "examples/consumer_app", "--output", str(two_apps.tmp / "again.out"))
    assert again.returncode == 1
    assert "deploy-local failed: the endpoint holds stack Chat in aws://123456789012/us-east-1 already" in again.stderr
    assert "Chat: creating CloudFormation changeset" not in again.stdout + again.stderr


def _neuron_ecs(two_apps: TwoApps, *argv: str) -> tuple[int, str, str]:
    import io

    from neuron_constructs.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}
    os.environ.update(two_apps.endpoint.credentials())
    try:
        status = main(
            [*argv, "--region", two_apps.endpoint.region, "--endpoint-url", two_apps.url], stdout=out, stderr=err
        )
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return status, out.getvalue(), err.getvalue()


def test_plan_diff_against_the_deployed_stacks_sees_no_change_then_the_week_s_change(two_apps: TwoApps) -> None:
    from neuron_constructs.knowledge.container_images import VLLM

    assert VLLM.tag == VLLM_TAG
    deployed = two_apps.tmp / "team.out"
    status, out, err = _neuron_ecs(two_apps, "plan", "--diff", "--deployed", str(deployed))
    assert (status, err) == (0, ""), out
    assert out.startswith("The change rolls no Neuron service, refreshes no capacity and removes nothing.")
    week = _next_week(deployed, two_apps.tmp / "week2")
    status, out, err = _neuron_ecs(two_apps, "plan", "--diff", "--deployed", str(week))
    assert status == 0, err
    assert "instance refresh of up to 2 instances, 1 at a time (2 batches)" in out
    assert "blue/green: all traffic to green at once" in out and "-> public.ecr.aws/neuron/" in out
    # THEN the page shows what the command prints for this change, cloud assembly to cloud assembly
    status, printed, _ = _neuron_ecs(two_apps, "plan", "--diff", str(deployed), str(week), "--price", PRICE)
    page = (ROOT / "docs" / "before-each-deploy.md").read_text()
    shown = page.split("```text\n$ .venv/bin/neuron-ecs plan --diff cdk.out week2.out", 1)[1].split("\n", 1)[1]
    assert printed == shown.split("```", 1)[0]
    from neuron_constructs.tools.diff_picture import picture
    from neuron_constructs.tools.diff_planning import diff_paths

    drawn = picture(diff_paths([str(deployed)], [str(week)]), title=WEEK_PICTURE_TITLE)
    assert (ROOT / "docs" / "_static" / "week-diff.svg").read_text() == drawn


WEEK_PICTURE_TITLE = "The team app's week: the AMI release and two images moved"
PRICE = "inf2.48xlarge=12.98"
"""The price the page's example gives the refresh (an example, not a current price)."""


def _next_week(cloud_assembly: Path, into: Path) -> Path:
    """The team app's next week: the AMI release and the vLLM and embedding images' tags moved, manifest kept."""
    import shutil

    from neuron_constructs.knowledge.container_images import EMBEDDING

    shutil.copytree(cloud_assembly, into, dirs_exist_ok=True)
    for template in into.glob("*.template.json"):
        text = template.read_text().replace("2023.0.20260701", "2023.0.20260722")
        text = text.replace("2023020260701", "2023020260722").replace(VLLM_TAG, "0.16.1-neuronx")
        text = text.replace(EMBEDDING.tag, EMBEDDING.tag.replace("transformers4.43.2", "transformers4.46.0"))
        template.write_text(text)
    return into


def test_doctor_answers_every_check_against_the_deployed_team_app(two_apps: TwoApps) -> None:
    from neuron_constructs.tools.doctor import CHECKS

    status, out, err = _neuron_ecs(two_apps, "doctor", str(two_apps.tmp / "team.out"), "--json")
    assert status in (0, 3) and "Traceback" not in err
    findings = json.loads(out)["findings"]
    assert {f["check"] for f in findings} == set(CHECKS)
    # moto models no EC2 quota: the quota is unknown with AWS's sentence; the zones of the deployed subnets are known
    assert any(f["check"] == "quota" and f["status"] == "unknown" for f in findings)
    assert any(f["check"] == "ami" and f["status"] == "ok" for f in findings)
