"""End to end: a team's own CDK app, outside the repository, on the built wheel.

The wheel is built once from the package sources and installed into a directory of its own;
the apps run with only that directory on ``PYTHONPATH`` (aws-cdk-lib comes from the test
environment). The team app uses what a team reaches for - the returned capacity objects, typed
container and service options, spot capacity, a Capacity Block - in an explicit account and
region; it type-checks with ``mypy --strict`` and deploys with the pinned cdk CLI to the local
endpoint. Two more apps show what the local endpoint and the CLI refuse: context lookups it
cannot answer, and Neuron rule errors inside a Stage under a bare ``cdk synth``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from neuron_constructs.local_endpoint import DeployedStack, LocalAwsEndpoint, LocalEndpointError, deploy_app

pytestmark = pytest.mark.e2e

CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"
ACCOUNT, REGION = "111122223333", "us-west-2"

TEAM_APP = '''
"""Inference and a training queue for one team, in its own account and region."""

from __future__ import annotations

import os
from pathlib import Path

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs

import neuron_constructs
from neuron_constructs import (
    AutoScalingCapacity,
    CapacityReservation,
    ContainerOptions,
    ManagedInstancesCapacity,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronService,
    ServiceOptions,
)

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/neuron/pytorch-inference-neuronx:2.26.1-neuronx-py310")


class TeamInference(Stack):
    def __init__(self, app: App) -> None:
        super().__init__(app, "TeamInference", env=Environment(account="111122223333", region="us-west-2"))
        cluster = NeuronCluster(self, "Neuron")
        serving: AutoScalingCapacity = cluster.add_ec2_capacity(
            "Inf2Spot", instance_type="inf2.xlarge", max_capacity=2, spot=True
        )
        block: AutoScalingCapacity = cluster.add_ec2_capacity(
            "Trn1Block",
            instance_type="trn1.32xlarge",
            max_capacity=1,
            capacity_reservation=CapacityReservation.capacity_block("cr-0123456789abcdef0"),
        )
        managed: ManagedInstancesCapacity = cluster.add_managed_instances_capacity("Managed")

        container: ContainerOptions = {
            "port_mappings": [ecs.PortMapping(container_port=8080, host_port=8080)],
            "environment": {"MODEL_ID": "TinyLlama/TinyLlama-1.1B-Chat-v1.0"},
            "memory_reservation_mib": 4096,
        }
        service: ServiceOptions = {"enable_execute_command": True, "propagate_tags": ecs.PropagatedTagSource.SERVICE}

        model = ManualNeuronTaskDefinition(self, "Model", instance_type="inf2.xlarge", cpu=2048, memory_mib=8192)
        model.add_neuron_container("model", image=IMAGE, **container)
        NeuronService(self, "Serve", cluster=cluster, task_definition=model, capacity=serving, **service)

        trainer = ManualNeuronTaskDefinition(self, "Trainer", instance_type="trn1.32xlarge", cpu=8192, memory_mib=65536)
        trainer.add_neuron_container("trainer", image=IMAGE, command=["torchrun", "train.py"])
        NeuronService(self, "Train", cluster=cluster, task_definition=trainer, capacity=block)

        batch = ManagedNeuronTaskDefinition(self, "Batch", cpu=4096, memory_mib=16384)
        batch.add_neuron_container("batch", image=IMAGE)
        NeuronService(self, "Offline", cluster=cluster, task_definition=batch, capacity=managed, desired_count=0)

        serving.security_group.add_ingress_rule(managed.security_group, ec2.Port.tcp(8080), "batch jobs call the model")
        CfnOutput(self, "ServingGroup", value=serving.auto_scaling_group.auto_scaling_group_name)
        CfnOutput(self, "BlockLaunchTemplate", value=block.launch_template.launch_template_id or "")
        CfnOutput(self, "ManagedSecurityGroup", value=managed.security_group.security_group_id)
        CfnOutput(self, "ServingInstanceType", value=serving.instance_type.to_string())


report = os.environ.get("TEAM_APP_IMPORTED_FROM")
if report:
    Path(report).write_text(neuron_constructs.__file__ or "")
app = App()
TeamInference(app)
app.synth()
'''

LOOKUP_APP = """
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2

from neuron_constructs import NeuronCluster

app = App()
stack = Stack(app, "Existing", env=Environment(account="111122223333", region="us-west-2"))
NeuronCluster(stack, "Neuron", vpc=ec2.Vpc.from_lookup(stack, "Vpc", vpc_id="vpc-0123456789abcdef0"))
app.synth()
"""

STAGE_APP = """
from aws_cdk import App, Stack, Stage
from aws_cdk import aws_ecs as ecs

from neuron_constructs import ManualNeuronTaskDefinition, NeuronCluster

app = App()
stack = Stack(Stage(app, "Prod"), "Serving")
cluster = NeuronCluster(stack, "Neuron")
capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
task = ManualNeuronTaskDefinition(stack, "Model", instance_type="inf2.xlarge", cpu=1024, memory_mib=2048)
task.add_neuron_container("model", image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1"))
ecs.Ec2Service(  # plain aws-cdk-lib: two copies, nothing keeps them apart
    stack,
    "Copies",
    cluster=cluster.cluster,
    task_definition=task.task_definition,
    desired_count=2,
    min_healthy_percent=50,
    capacity_provider_strategies=[
        ecs.CapacityProviderStrategy(capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1)
    ],
)
app.synth()
"""


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel from its sources and installed, alone, into a directory of its own."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "neuron_constructs", source / "neuron_constructs", ignore=shutil.ignore_patterns("__pycache__")
    )
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", base / "dist", source], check=True)
    (wheel,) = (base / "dist").glob("neuron_constructs-*.whl")
    site = base / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", site, wheel], check=True)
    assert (site / "neuron_constructs" / "py.typed").exists()
    return site


def _app(directory: Path, source: str, site: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "app.py").write_text(textwrap.dedent(source).lstrip())
    command = f"{sys.executable} app.py"
    (directory / "cdk.json").write_text(json.dumps({"app": command, "context": {}}))
    return directory


@pytest.fixture(scope="module")
def apps(installed_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory outside the repository; the apps in it import the wheel (PYTHONPATH) and nothing else of it."""
    base = tmp_path_factory.mktemp("team")
    assert ROOT not in base.parents
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(installed_wheel)
    try:
        yield base
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous


@pytest.fixture(scope="module")
def team_deploy(apps: Path, installed_wheel: Path) -> Iterator[tuple[LocalAwsEndpoint, list[DeployedStack], Path]]:
    from neuron_constructs.local_endpoint import local_aws_endpoint

    app_dir = _app(apps / "team", TEAM_APP, installed_wheel)
    imported_from = apps / "imported-from.txt"
    os.environ["TEAM_APP_IMPORTED_FROM"] = str(imported_from)
    try:
        with local_aws_endpoint(log=apps / "moto.log") as endpoint:
            deployed = deploy_app(endpoint, app_dir=app_dir, cdk=str(CDK_CLI))
            yield endpoint, deployed, imported_from
    finally:
        os.environ.pop("TEAM_APP_IMPORTED_FROM", None)


def test_the_team_app_imports_the_installed_wheel(
    team_deploy: tuple[LocalAwsEndpoint, list[DeployedStack], Path], installed_wheel: Path
) -> None:
    _, _, imported_from = team_deploy
    assert Path(imported_from.read_text()).is_relative_to(installed_wheel)


def test_the_team_app_type_checks_strictly(apps: Path, installed_wheel: Path, tmp_path: Path) -> None:
    """``mypy --strict`` finds the wheel the way it finds any installed package (on the interpreter's path, with
    ``py.typed``), and checks the options: a misspelt container option is a type error."""
    app_dir = _app(apps / "typed", TEAM_APP, installed_wheel)
    cache = tmp_path / "mypy-cache"
    if (ROOT / ".mypy_cache").is_dir():  # aws-cdk-lib analysed once already by `make lint`
        shutil.copytree(ROOT / ".mypy_cache", cache)

    def mypy(*options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), *options, "app.py"]
        return subprocess.run(command, cwd=app_dir, capture_output=True, text=True, check=False)

    result = mypy("--verbose")
    assert result.returncode == 0, result.stdout
    assert f"{installed_wheel}/neuron_constructs/__init__.py" in result.stderr  # the wheel's, not the repository's
    app = app_dir / "app.py"
    app.write_text(app.read_text().replace('"memory_reservation_mib": 4096', '"memory_reservation": 4096'))
    result = mypy()
    assert result.returncode == 1
    assert 'Extra key "memory_reservation" for TypedDict "ContainerOptions"' in result.stdout


def test_a_stack_with_its_own_account_and_region_deploys(
    team_deploy: tuple[LocalAwsEndpoint, list[DeployedStack], Path],
) -> None:
    endpoint, deployed, imported_from = team_deploy
    assert deployed == [DeployedStack("TeamInference", ACCOUNT, REGION)]
    # its availability zones came from the endpoint for that synth only: the app's context is untouched
    assert not (imported_from.parent / "team" / "cdk.context.json").exists()
    cloudformation = endpoint.client("cloudformation", account=ACCOUNT, region=REGION)
    (stack,) = cloudformation.describe_stacks(StackName="TeamInference")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert stack["StackId"].startswith(f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/TeamInference/")
    groups = endpoint.client("autoscaling", account=ACCOUNT, region=REGION).describe_auto_scaling_groups()
    assert len(groups["AutoScalingGroups"]) == 2  # the spot inf2 group and the Capacity Block's trn1 group
    # the bootstrap went to that environment, not the endpoint's default one
    ssm = endpoint.client("ssm", account=ACCOUNT, region=REGION)
    assert ssm.get_parameter(Name="/cdk-bootstrap/hnb659fds/version")["Parameter"]["Value"]


def test_spot_and_the_capacity_block_reach_the_launch_templates(
    team_deploy: tuple[LocalAwsEndpoint, list[DeployedStack], Path],
) -> None:
    endpoint, _, _ = team_deploy
    ec2 = endpoint.client("ec2", account=ACCOUNT, region=REGION)
    markets: dict[str, Any] = {}
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        (version,) = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])[
            "LaunchTemplateVersions"
        ]
        data = version["LaunchTemplateData"]
        markets[data["InstanceType"]] = data
    assert markets["inf2.xlarge"]["InstanceMarketOptions"]["MarketType"] == "spot"
    block = markets["trn1.32xlarge"]
    assert block["InstanceMarketOptions"]["MarketType"] == "capacity-block"
    assert block["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef0"
    }


def test_an_app_that_needs_lookups_is_refused_before_anything_deploys(
    apps: Path, installed_wheel: Path, team_deploy: tuple[LocalAwsEndpoint, list[DeployedStack], Path]
) -> None:
    endpoint, _, _ = team_deploy
    app_dir = _app(apps / "lookup", LOOKUP_APP, installed_wheel)
    with pytest.raises(LocalEndpointError) as refused:
        deploy_app(endpoint, app_dir=app_dir, cdk=str(CDK_CLI))
    message = str(refused.value)
    assert "needs context lookups a local endpoint cannot answer: vpc-provider" in message
    assert "cdk.context.json" in message and "from_vpc_attributes" in message
    assert not (app_dir / "cdk.context.json").exists()
    cloudformation = endpoint.client("cloudformation", account=ACCOUNT, region=REGION)
    assert [s["StackName"] for s in cloudformation.describe_stacks()["Stacks"] if s["StackName"] == "Existing"] == []


def test_a_bare_cdk_synth_fails_on_errors_inside_a_stage(apps: Path, installed_wheel: Path) -> None:
    app_dir = _app(apps / "stage", STAGE_APP, installed_wheel)
    result = subprocess.run(
        [str(CDK_CLI), "synth", "--quiet", "--no-notices"],
        cwd=app_dir,
        env={**LocalAwsEndpoint(port=9).environment(), "PYTHONPATH": str(installed_wheel)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "1 Neuron rule error in stacks inside a Stage" in result.stderr
    assert "Prod/Serving/Copies" in result.stderr and "[NEURON022: " in result.stderr
