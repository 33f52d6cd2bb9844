"""cdk-nag acknowledgements cover only what they name: each sits on the one resource with the finding, and a wildcard a
user grants any role the library makes is reported by AwsSolutions, not hidden under the library's reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnResource, Stack, Validations
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from neuron_constructs import CompileCache, DoctorPolicy, ManagedNeuronTaskDefinition, NeuronCluster, NeuronMonitoring
from neuron_constructs.base import compliance
from neuron_constructs.training.queue import NeuronTrainingQueue

pytestmark = pytest.mark.xdist_group("compliance")  # one worker builds the module's app once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
REPORT_ONLY = "@aws-cdk/core:failSynthOnValidationErrors"
USER_GRANTS = (
    iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]),
    iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=["*"]),
)


def _build(stack: Stack) -> dict[str, iam.IRole]:
    """A cluster with both capacity kinds and monitoring, a Neuron task definition running an ECR image with a compile
    cache, and a training job: the roles a user can reach, by name."""
    cluster = NeuronCluster(stack, "Neuron")
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster)
    auto_scaling = cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    managed = cluster.add_managed_instances_capacity("Managed")
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=4096, memory_mib=8192)
    repository = ecr.Repository.from_repository_name(stack, "Repository", "team/model-server")
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_ecr_repository(repository, "1.0"),
        compile_cache=CompileCache.in_new_bucket(stack, "Cache"),
    )
    queue = NeuronTrainingQueue(stack, "Queue", instance_type="trn1.2xlarge", max_nodes=1, vpc=cluster.vpc)
    job = queue.add_job("Train", nodes=1, image=IMAGE, command=["python", "train.py"])
    DoctorPolicy(stack, "Doctor")
    return {
        "Auto Scaling capacity role": auto_scaling.role,
        "Managed Instances capacity role": managed.role,
        "task role": task.task_role,
        "task execution role": task.task_definition.obtain_execution_role(),
        "training job role": job.job_role,
        "training instance role": queue.instance_role,
    }


@pytest.fixture(scope="module")
def nag(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """AwsSolutions on two copies of the same constructs: ``Library`` as built, ``Granted`` with ``s3:GetObject`` and
    ``secretsmanager:GetSecretValue`` on ``*`` added to each role a user can reach."""
    from cdk_nag import AwsSolutionsChecks

    outdir = tmp_path_factory.mktemp("compliance")
    app = App(analytics_reporting=False, outdir=str(outdir), context={REPORT_ONLY: False})
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    library = Stack(app, "Library")
    _build(library)
    granted = Stack(app, "Granted")
    roles = _build(granted)
    for role in roles.values():
        for statement in USER_GRANTS:
            role.add_to_principal_policy(statement)
    app.synth()
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    return {"plugin": plugin, "library": library, "roles": roles}


def _open(plugin: dict[str, Any], stack: str) -> dict[str, list[str]]:
    """Open findings of ``stack``: rule id to the paths of the resources that carry it."""
    found: dict[str, list[str]] = {}
    for violation in plugin["violations"]:
        paths = [c["constructPath"] for c in violation["violatingConstructs"] if c["constructPath"].startswith(stack)]
        if paths:
            found[violation["ruleName"]] = sorted(paths)
    return found


def test_the_library_s_constructs_leave_no_open_aws_solutions_finding(nag: dict[str, Any]) -> None:
    assert _open(nag["plugin"], "Library/") == {}


@pytest.mark.parametrize(
    "role",
    [
        "Auto Scaling capacity role",
        "Managed Instances capacity role",
        "task role",
        "task execution role",
        "training job role",
        "training instance role",
    ],
)
def test_a_wildcard_a_user_grants_a_role_is_reported_not_acknowledged(nag: dict[str, Any], role: str) -> None:
    """The user's statements land in the role's DefaultPolicy, which no acknowledgement covers for ``*``; the
    library's own wildcard statements are in policies of their own."""
    policy = nag["roles"][role].node.find_child("DefaultPolicy").node.default_child
    open_findings = _open(nag["plugin"], "Granted/")
    assert policy.node.path in open_findings["AwsSolutions-IAM5[Resource::*]"]


def test_only_the_user_s_wildcards_are_reported(nag: dict[str, Any]) -> None:
    """Six roles, six DefaultPolicies with a user's ``*``, and nothing else open."""
    open_findings = _open(nag["plugin"], "Granted/")
    assert list(open_findings) == ["AwsSolutions-IAM5[Resource::*]"]
    assert len(open_findings["AwsSolutions-IAM5[Resource::*]"]) == len(nag["roles"])
    assert all(p.endswith("/DefaultPolicy/Resource") for p in open_findings["AwsSolutions-IAM5[Resource::*]"])


def _acknowledgements(scope: IConstruct) -> list[tuple[IConstruct, str]]:
    return [
        (construct, finding)
        for construct in scope.node.find_all()
        for entry in construct.node.metadata
        if entry.type == compliance._ACKNOWLEDGED_RULES
        for finding in entry.data
        if finding.startswith("AwsSolutions::")
    ]


def test_every_acknowledgement_sits_on_a_resource_and_names_the_exact_iam_finding(nag: dict[str, Any]) -> None:
    acknowledgements = _acknowledgements(nag["library"])
    assert len(acknowledgements) >= 8
    assert [c.node.path for c, _ in acknowledgements if not CfnResource.is_cfn_resource(c)] == []
    iam_findings = [f for _, f in acknowledgements if f.split("-", 1)[1].startswith(("IAM4", "IAM5"))]
    assert iam_findings
    # Policy::<arn> for IAM4, Resource::<resource> or Action::<action> for IAM5: cdk-nag's appliesTo.
    assert [f for f in iam_findings if not f.endswith("]") or "[" not in f] == []


def test_every_acknowledgement_is_used_on_the_resource_it_sits_on(nag: dict[str, Any]) -> None:
    """aws-cdk-lib matches an acknowledgement on the resource with the finding or on any construct above it: each one
    here is on the very resource it suppresses."""
    suppressed = [v for v in nag["plugin"]["suppressedViolations"] if v["acknowledgedAt"].startswith("Library/")]
    assert suppressed
    for violation in suppressed:
        assert [c["constructPath"] for c in violation["violatingConstructs"]] == [violation["acknowledgedAt"]]


def test_the_ecs_agent_and_registry_token_wildcards_are_in_policies_of_their_own(nag: dict[str, Any]) -> None:
    roles = nag["roles"]
    for name in ("Auto Scaling capacity role", "Managed Instances capacity role", "training instance role"):
        assert isinstance(roles[name].node.try_find_child("EcsAgent"), iam.Policy), name
    assert isinstance(roles["task execution role"].node.try_find_child("RegistryToken"), iam.Policy)
    token = Stack.of(roles["task execution role"]).resolve(
        roles["task execution role"].node.find_child("RegistryToken").node.default_child.policy_document  # type: ignore[union-attr]
    )
    assert token["Statement"] == [{"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"}]


def test_ecs2_is_acknowledged_only_where_the_environment_is_the_library_s_alone(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """GIVEN two Neuron task definitions with a compile cache, one of them with a variable of the user's own
    (``environment=``), WHEN cdk-nag's AwsSolutions checks them, THEN ECS2 is reported on the user's and acknowledged
    on the library's: the library vouches for the variables it sets, never for the user's."""
    from cdk_nag import AwsSolutionsChecks

    outdir = tmp_path_factory.mktemp("environment")
    app = App(analytics_reporting=False, outdir=str(outdir), context={REPORT_ONLY: False})
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = Stack(app, "Environment")
    cache = CompileCache.in_new_bucket(stack, "Cache")
    for name, environment in (("Library", None), ("Own", {"MODEL_ID": "meta-llama/Llama-3.1-8B"})):
        task = ManagedNeuronTaskDefinition(stack, name, cpu=4096, memory_mib=8192)
        task.add_neuron_container("model", image=IMAGE, compile_cache=cache, environment=environment)
    app.synth()
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    assert _open(plugin, "Environment/").get("AwsSolutions-ECS2") == ["Environment/Own/TaskDefinition/Resource"]
    suppressed = [
        c["constructPath"]
        for v in plugin["suppressedViolations"]
        if v["ruleName"] == "AwsSolutions-ECS2"
        for c in v["violatingConstructs"]
    ]
    assert suppressed == ["Environment/Library/TaskDefinition/Resource"]


def test_the_library_environment_names_are_those_the_compute_package_writes() -> None:
    from neuron_constructs.compute import compile_cache_tiers
    from neuron_constructs.compute.driver_check import driver_check_environment
    from neuron_constructs.compute.model_sources import COMPILE_CACHE_VARIABLE
    from neuron_constructs.knowledge import cpu_compile, neuron_releases

    sdk = next(r.sdk for r in neuron_releases.NEURON_RELEASES if r.runtime)
    written = {COMPILE_CACHE_VARIABLE, "NEURON_PROCESS_TAG", "NEURON_RT_VISIBLE_CORES", "NEURON_LOGICAL_NC_CONFIG"}
    written |= {"MODEL_DIR", *(driver_check_environment(sdk) or {})}
    written |= {
        compile_cache_tiers.REMOTE_CACHE_VARIABLE,
        compile_cache_tiers.LOCAL_CACHE_VARIABLE,
        compile_cache_tiers.PRECOMPILE_BACKEND_VARIABLE,
        *cpu_compile.CACHE_HIT_ONLY,
    }
    from neuron_constructs.monitoring import engine_metrics as sidecar
    from neuron_constructs.programs import engine_metrics as collector

    collected = {sidecar.PROGRAM_VARIABLE, *(v for k, v in vars(collector).items() if k.endswith("_VARIABLE"))}
    collected -= {collector.METADATA_VARIABLE}  # ECS sets it, not the library
    assert collected == compliance.ENGINE_METRICS_ENVIRONMENT
    assert all(compliance.library_s_own(name) for name in written | collected)
    assert not compliance.library_s_own("ENGINE_METRICS_TOKEN")  # a user's own variable is left to the user
