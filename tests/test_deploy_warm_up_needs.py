"""End to end: a platform stack with a prefetching warm pool and a model stack on its capacity, deployed by the real
cdk CLI to a fresh local endpoint (moto on 127.0.0.1): the model stack's needs are in Parameter Store under the
capacity's path, read back as the warm-up reads them, and the instance role holds the model stack's grant.

The team app (``examples/team_app``) cannot show this: its Auto Scaling capacity has no warm pool, and its embedding
image is named by a token (an imported repository), which the warm-up does not fetch (NEURON124)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_constructs.knowledge.warm_up_needs import Need, parse_needs
from neuron_constructs.local_endpoint import deploy_app, local_aws_endpoint

pytestmark = pytest.mark.e2e

CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"
PATH = "/neuron/team/warm-up/Neuron"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team/llama-server:1.4"

TWO_STACKS_APP = f"""
from aws_cdk import Acknowledgment, App, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3

from neuron_constructs import ManualNeuronTaskDefinition, ModelArtifacts, NeuronCluster, NeuronService, WarmPool

app = App(analytics_reporting=False)
platform = Stack(app, "Platform")
cluster = NeuronCluster(platform, "C")
capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
Validations.of(capacity).acknowledge(Acknowledgment(id="neuron-constructs:NEURON116", reason="a test app"))
cluster.publish("/neuron/team")
model = Stack(app, "Model")
task = ManualNeuronTaskDefinition(model, "Task", instance_type="inf2.xlarge", memory_mib=8192)
task.add_neuron_container(
    "model",
    image=ecs.ContainerImage.from_registry("{IMAGE}"),
    model_artifacts=ModelArtifacts(
        s3.Bucket.from_bucket_name(model, "Models", "team-models"), "llama/neuron-tp2", size_gib=20
    ),
    image_size_gib=8,
)
NeuronService(model, "Llama", cluster=cluster, task_definition=task, capacity=capacity)
app.synth()
"""


def test_the_model_stack_s_needs_are_in_parameter_store_after_the_deploy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIVEN the two-stack app WHEN both stacks are deployed THEN GetParametersByPath on the capacity's path returns
    the model stack's parameter, whose value the warm-up reads as the model's image and prefix with their sizes; the
    platform's instance role holds the model stack's policy and the platform's own policy reads that path."""
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(TWO_STACKS_APP)
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py"}))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with local_aws_endpoint() as endpoint:
        deploy_app(endpoint, app_dir=app_dir, cdk=str(CDK_CLI), output=tmp_path / "cdk.out", verbose=False)
        found = endpoint.client("ssm").get_parameters_by_path(Path=PATH, Recursive=False, MaxResults=10)
        (parameter,) = found["Parameters"]
        assert parameter["Name"] == f"{PATH}/Model" and parameter["Type"] == "String"
        needs, skipped = parse_needs(parameter["Value"])
        assert skipped == 0
        assert Need("image", IMAGE, 8) in needs and Need("artifacts", "team-models/llama/neuron-tp2", 20) in needs
        cloudformation = endpoint.client("cloudformation")
        summaries = cloudformation.list_stack_resources(StackName="Platform")["StackResourceSummaries"]
        (role,) = [s["PhysicalResourceId"] for s in summaries if s["ResourceType"] == "AWS::IAM::Role"
                   and "InstanceRole" in s["LogicalResourceId"]]  # fmt: skip
        iam = endpoint.client("iam")
        documents = [
            json.dumps(iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
            for name in iam.list_role_policies(RoleName=role)["PolicyNames"]
        ]
        assert any("ssm:GetParametersByPath" in d and f"parameter{PATH}" in d for d in documents)
        assert any("team/llama-server" in d and "ecr:BatchGetImage" in d for d in documents)
        assert any("team-models/llama/neuron-tp2/*" in d for d in documents)
