"""Warm pools on Auto Scaling capacity (the pool, the agent settings, the prefetch warm-up and its script run in
dash and bash against fakes) and the scale-in and repair settings of Managed Instances capacity."""

from __future__ import annotations

import base64
import json
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import imported_vpc
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    ModelArtifacts,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    WarmPool,
)
from neuron_constructs.knowledge.container_images import AWS_CLI
from neuron_constructs.knowledge.warm_start import (
    LIFECYCLE_HOOK_NAME,
    MODELS_DIRECTORY,
    WARM_UP_FILE,
    Prefetch,
    ecr_registry,
    warm_up_script,
)

pytestmark = pytest.mark.xdist_group("warm_pools")

PUBLIC_IMAGE = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.30.0-ubuntu24.04"
PRIVATE_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team/llama-server:1.4"
CLI = "public.ecr.aws/aws-cli/aws-cli:2.31.0"
CLI_IMAGE = AWS_CLI.reference


def _model_task(
    stack: Stack, image: ecs.ContainerImage, *, image_gib: float | None = None, model_gib: float | None = None
) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    models = ModelArtifacts(
        s3.Bucket.from_bucket_name(stack, "Models", "team-models"), "llama/neuron-tp2", size_gib=model_gib
    )
    task.add_neuron_container("model", image=image, model_artifacts=models, image_size_gib=image_gib)
    return task


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    app = App(analytics_reporting=False)
    made: dict[str, Any] = {"app": app}
    stack = Stack(app, "Warm")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    made["capacity"] = capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
    NeuronService(
        stack,
        "Llama",
        cluster=cluster,
        task_definition=_model_task(stack, ecs.ContainerImage.from_registry(PRIVATE_IMAGE), image_gib=8, model_gib=20),
        capacity=capacity,
    )
    cold = Stack(app, "NoPrefetch")
    NeuronCluster(cold, "C", vpc=imported_vpc(cold)).add_ec2_capacity(
        "Neuron",
        instance_type="inf2.xlarge",
        warm_pool=WarmPool(min_size=2, max_prepared=4, state=autoscaling.PoolState.RUNNING, prefetch=False),
    )
    platform = Stack(app, "Platform")
    shared = NeuronCluster(platform, "C", vpc=imported_vpc(platform))
    made["platform_capacity"] = shared_capacity = shared.add_ec2_capacity(
        "Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool()
    )
    model = Stack(app, "Model")
    NeuronService(
        model,
        "Llama",
        cluster=shared,
        # Larger than any root volume: the platform's warm-up does not fetch it, so neither the synth-time check
        # nor the template check (which sees both stacks) counts it against the platform's volume.
        task_definition=_model_task(model, ecs.ContainerImage.from_registry(PUBLIC_IMAGE), image_gib=500),
        capacity=shared_capacity,
    )
    managed = Stack(app, "Managed")
    mi = NeuronCluster(managed, "C", vpc=imported_vpc(managed))
    made["mi"] = {
        "Default": mi.add_managed_instances_capacity("Default"),
        "Never": mi.add_managed_instances_capacity("Never", scale_in_after=-1, auto_repair=False),
        "EcsDefaults": mi.add_managed_instances_capacity("EcsDefaults", scale_in_after=None, auto_repair=None),
    }
    assembly = app.synth()
    made["assembly"] = assembly
    made["templates"] = {s.stack_name: s.template for s in assembly.stacks}
    report = Path(assembly.directory) / "validation-report.json"
    made["validation"] = json.loads(report.read_text()) if report.exists() else {}
    return made


def _of_type(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _user_data(template: dict[str, Any]) -> str:
    (launch_template,) = _of_type(template, "AWS::EC2::LaunchTemplate")
    user_data = launch_template["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    if isinstance(user_data, str):
        return user_data
    return "".join(part if isinstance(part, str) else json.dumps(part) for part in user_data["Fn::Join"][1])


def _rendered(value: Any) -> str:
    """A template string value as CloudFormation writes it in us-east-1 (Fn::Join of text and AWS::Region)."""
    if isinstance(value, str):
        return value
    if value == {"Ref": "AWS::Region"}:
        return "us-east-1"
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return f"<{value['Ref']}>"  # a resource's name, known at deploy
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_rendered(p) for p in parts)
    raise AssertionError(f"not rendered here: {value}")


def _warm_up_as_written(template: dict[str, Any]) -> tuple[str, str]:
    """(the user data with the warm-up's base64 in place, as the instance runs it; the warm-up script itself)."""
    (launch_template,) = _of_type(template, "AWS::EC2::LaunchTemplate")
    parts = launch_template["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Join"][1]
    (encoded,) = [p["Fn::Base64"] for p in parts if isinstance(p, dict) and "Fn::Base64" in p]
    script = _rendered(encoded)
    written = "".join(
        base64.b64encode(_rendered(p["Fn::Base64"]).encode()).decode()
        if isinstance(p, dict) and "Fn::Base64" in p
        else _rendered(p)
        for p in parts
    )
    return written, script


def test_warm_pool_is_the_groups_with_the_given_sizes_and_state(built: dict[str, Any]) -> None:
    (pool,) = _of_type(built["templates"]["NoPrefetch"], "AWS::AutoScaling::WarmPool")
    assert pool["Properties"]["MinSize"] == 2
    assert pool["Properties"]["MaxGroupPreparedCapacity"] == 4
    assert pool["Properties"]["PoolState"] == "Running"
    assert "InstanceReusePolicy" not in pool["Properties"]
    (default,) = _of_type(built["templates"]["Warm"], "AWS::AutoScaling::WarmPool")
    assert default["Properties"]["MinSize"] == 1
    assert default["Properties"]["PoolState"] == "Stopped"
    assert "MaxGroupPreparedCapacity" not in default["Properties"]


def test_every_warm_pooled_instance_runs_the_agent_with_the_warm_pools_check(built: dict[str, Any]) -> None:
    for name in ("Warm", "NoPrefetch", "Platform"):
        assert "echo ECS_WARM_POOLS_CHECK=true >> /etc/ecs/ecs.config" in _user_data(built["templates"][name])


def test_prefetch_prefers_cached_images_and_without_it_the_agent_pulls(built: dict[str, Any]) -> None:
    assert "ECS_IMAGE_PULL_BEHAVIOR=prefer-cached" in _user_data(built["templates"]["Warm"])
    cold = _user_data(built["templates"]["NoPrefetch"])
    assert "ECS_IMAGE_PULL_BEHAVIOR" not in cold
    assert WARM_UP_FILE not in cold
    assert not _of_type(built["templates"]["NoPrefetch"], "AWS::AutoScaling::LifecycleHook")


def test_prefetch_warm_up_pulls_the_services_images_and_copies_their_models(built: dict[str, Any]) -> None:
    written, user_data = _warm_up_as_written(built["templates"]["Warm"])
    assert re.search(rf"^echo [A-Za-z0-9+/=]+ \| base64 -d > {WARM_UP_FILE}$", written, re.MULTILINE), written
    assert user_data.startswith("#!/bin/sh\n")
    assert f"docker pull --quiet '{PRIVATE_IMAGE}'" in user_data
    assert "docker login --username AWS --password-stdin '111122223333.dkr.ecr.us-east-1.amazonaws.com'" in user_data
    assert "aws_sync 's3://team-models/llama/neuron-tp2'" in user_data
    assert built["capacity"].prefetch.images[0] == PRIVATE_IMAGE
    assert built["capacity"].prefetch.artifacts == (
        ("s3://team-models/llama/neuron-tp2", "team-models/llama/neuron-tp2"),
    )


def test_no_value_in_the_warm_up_can_end_the_command_that_writes_it(tmp_path: Path) -> None:
    """GIVEN an image reference holding a newline and the line that ended the heredoc the warm-up was once written
    with, WHEN the capacity's user data writes the warm-up, THEN the script travels base64-encoded: the user data
    holds none of the reference outside it, and writing it (run here in sh) writes the script whole and runs nothing."""
    hostile = f"registry.example/model:1\nNEURON_WARM_UP\ntouch {tmp_path}/owned\n"
    app = App(analytics_reporting=False)
    stack = Stack(app, "Hostile")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(hostile))
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task, capacity=capacity)
    written, script = _warm_up_as_written(app.synth().get_stack_by_name("Hostile").template)
    assert "touch" not in written and "NEURON_WARM_UP" not in written
    assert f"touch {tmp_path}/owned" in script  # inside a quoted word of the script, never a command of its own
    (line,) = [x for x in written.splitlines() if "| base64 -d >" in x]
    target = tmp_path / "warm-up.sh"
    subprocess.run(["sh", "-c", line.replace(WARM_UP_FILE, str(target))], check=True, timeout=30)
    assert target.read_text() == script
    assert not (tmp_path / "owned").exists()


def test_a_bucket_named_at_deploy_time_from_elsewhere_is_not_written_into_the_warm_up() -> None:
    """GIVEN model artifacts in a bucket named by a template parameter (any text: a quote, ``..``) WHEN the capacity
    prefetches THEN the warm-up neither copies it nor names it, the task keeps its own volume, and NEURON124 says so;
    a bucket the app creates (a name S3 holds to its rules) is still prefetched."""
    from aws_cdk import CfnParameter
    from aws_cdk import aws_s3 as s3
    from aws_cdk.assertions import Annotations, Match

    from neuron_constructs import ModelArtifacts

    app = App(analytics_reporting=False)
    stack = Stack(app, "Buckets")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.24xlarge", warm_pool=WarmPool())
    given = s3.Bucket.from_bucket_name(stack, "Given", CfnParameter(stack, "BucketName").value_as_string)
    own = s3.Bucket(stack, "Own", enforce_ssl=True)
    for device, (name, bucket) in enumerate((("Given", given), ("Own", own))):
        task = ManualNeuronTaskDefinition(
            stack, f"{name}Task", instance_type="inf2.24xlarge", devices=[device], memory_mib=8192
        )
        task.add_neuron_container(
            "model",
            image=ecs.ContainerImage.from_registry("registry.example/model:1"),
            model_artifacts=ModelArtifacts(bucket, "llama"),
        )
        NeuronService(stack, f"{name}Svc", cluster=cluster, task_definition=task, capacity=capacity)
    template = app.synth().get_stack_by_name("Buckets").template
    assert capacity.prefetch is not None
    assert [source for _, source in capacity.prefetch.artifacts] == [f"{own.bucket_name}/llama"]
    (launch_template,) = _of_type(template, "AWS::EC2::LaunchTemplate")
    user_data = json.dumps(launch_template["Properties"]["LaunchTemplateData"]["UserData"])
    assert '"Ref": "BucketName"' not in user_data and "Own" in user_data
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON124"))
    assert any("a bucket named by a deploy-time value" in str(w.entry.data) for w in warnings)


def test_the_task_s_model_volume_is_the_warm_up_s_copy_on_the_host(built: dict[str, Any]) -> None:
    """So the task's own sync finds the files the warm-up copied (same size and time) instead of copying them again."""
    (task,) = _of_type(built["templates"]["Warm"], "AWS::ECS::TaskDefinition")
    (volume,) = task["Properties"]["Volumes"]
    assert volume["Host"] == {"SourcePath": f"{MODELS_DIRECTORY}/team-models/llama/neuron-tp2"}
    model = next(c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "model")
    (mount,) = model["MountPoints"]
    assert mount["SourceVolume"] == volume["Name"] and mount["ReadOnly"] is True
    # A model stack's task on the platform's capacity keeps its own task volume: nothing in it is the platform's.
    (other,) = _of_type(built["templates"]["Model"], "AWS::ECS::TaskDefinition")
    assert "Host" not in other["Properties"]["Volumes"][0]


def test_warm_up_holds_the_instance_with_a_launching_hook_and_reads_its_group_from_tags(built: dict[str, Any]) -> None:
    template = built["templates"]["Warm"]
    (hook,) = _of_type(template, "AWS::AutoScaling::LifecycleHook")
    assert "Circular" not in json.dumps(built["validation"])
    assert hook["Properties"]["LifecycleHookName"] == LIFECYCLE_HOOK_NAME
    assert hook["Properties"]["LifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"
    assert hook["Properties"]["DefaultResult"] == "CONTINUE"
    (launch_template,) = _of_type(template, "AWS::EC2::LaunchTemplate")
    options = launch_template["Properties"]["LaunchTemplateData"]["MetadataOptions"]
    assert options["InstanceMetadataTags"] == "enabled"
    assert options["HttpTokens"] == "required"
    assert options["HttpPutResponseHopLimit"] == 1


def test_instance_role_pulls_only_the_services_repositories_and_reads_only_their_model_prefix(
    built: dict[str, Any],
) -> None:
    template = built["templates"]["Warm"]
    statements = {
        s["Sid"]: s
        for k, p in template["Resources"].items()
        if p["Type"] == "AWS::IAM::Policy" and "WarmUp" in k
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    }
    pulled = json.dumps(statements["PullImages"]["Resource"])
    assert "ecr:us-east-1:111122223333:repository/team/llama-server" in pulled
    assert "*" not in pulled
    assert statements["RegistryToken"]["Action"] == "ecr:GetAuthorizationToken"
    assert statements["CompleteWarmUp"]["Action"] == "autoscaling:CompleteLifecycleAction"
    role_policies = json.dumps([p for p in _of_type(template, "AWS::IAM::Policy")])
    assert "team-models/llama/neuron-tp2/*" in role_policies


def test_split_stacks_keep_the_platform_independent_of_the_model(built: dict[str, Any]) -> None:
    """The model stack's service is not written into the platform's user data: the platform would then depend on
    the model stack while the model depends on the platform. Its cluster publishes no prefix under which the model
    stack could tell the warm-up what it needs, so it warns instead (NEURON124)."""
    assembly = built["assembly"]
    platform = assembly.get_stack_by_name("Platform")
    assert "Model" not in [d.id for d in platform.dependencies]
    assert "Fn::ImportValue" not in json.dumps(platform.template)
    assert PUBLIC_IMAGE not in _user_data(platform.template)
    assert built["platform_capacity"].prefetch == Prefetch()
    warnings = [str(m.entry.data) for m in platform.messages if "NEURON124" in str(m.entry.data)]
    assert warnings and "Model/Llama (in another stack, and the capacity's cluster publishes no prefix" in warnings[0]


def test_stated_sizes_are_recorded_in_the_task_definition_and_counted_against_the_root_volume(
    built: dict[str, Any],
) -> None:
    (task,) = _of_type(built["templates"]["Warm"], "AWS::ECS::TaskDefinition")
    intent = task["Metadata"]["NeuronConstructs"]
    assert (intent["imageSizesGiB"], intent["artifactSizesGiB"]) == ({"model": 8.0}, {"model-model-sync": 20.0})
    room = built["capacity"].root_volume_room
    assert (room.root_volume_gib, room.known_gib, room.needed_gib, room.fits) == (100, 30 + 8 * 3 + 20, 74, True)
    assert [f.what for f in room.unknown] == [CLI_IMAGE]  # the sync container's image: no size stated
    (model_task,) = _of_type(built["templates"]["Model"], "AWS::ECS::TaskDefinition")
    assert model_task["Metadata"]["NeuronConstructs"]["imageSizesGiB"] == {"model": 500.0}
    assert "artifactSizesGiB" not in model_task["Metadata"]["NeuronConstructs"]  # nothing stated, nothing recorded
    assert built["platform_capacity"].root_volume_room.fetched == ()  # another stack's service: not prefetched


@pytest.mark.parametrize("size", [0, -1, True, "8", 70_000])
def test_a_size_that_is_not_a_positive_number_of_gib_is_refused(size: Any) -> None:
    stack = Stack(App(analytics_reporting=False), "Sizes")
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "team-models")
    with pytest.raises(NeuronConfigurationError, match=r"size_gib=.*NEURON027"):
        ModelArtifacts(bucket, "llama", size_gib=size)
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    with pytest.raises(NeuronConfigurationError, match=r"Sizes/Task/model: image_size_gib=.*NEURON02[67]"):
        task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(PUBLIC_IMAGE), image_size_gib=size)


def test_reuse_on_scale_in_is_refused_with_the_ecs_rule() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    with pytest.raises(NeuronConfigurationError, match=r"NEURON084.*ReuseOnScaleIn"):
        cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=WarmPool(reuse_on_scale_in=True))


@pytest.mark.parametrize("instance_type", ["inf2.xlarge", "inf2.48xlarge", "trn1.32xlarge", "trn2.48xlarge"])
def test_a_hibernated_warm_pool_of_a_neuron_type_is_refused(instance_type: str) -> None:
    """GIVEN a Neuron type, of a family EC2's hibernation prerequisites do not list, WHEN its warm pool is HIBERNATED,
    THEN NEURON141 refuses it with the pool states that work; STOPPED and RUNNING are accepted."""
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    family = instance_type.split(".")[0]
    with pytest.raises(NeuronConfigurationError, match=rf"the {family} family.*NEURON141.*PoolState.STOPPED"):
        cluster.add_ec2_capacity(
            "N", instance_type=instance_type, warm_pool=WarmPool(state=autoscaling.PoolState.HIBERNATED)
        )
    cluster.add_ec2_capacity("S", instance_type=instance_type, warm_pool=WarmPool(state=autoscaling.PoolState.STOPPED))


def _hibernated_group(instance_type: str) -> dict[str, Any]:
    """The launch template data of an Auto Scaling capacity of ``instance_type`` with a HIBERNATED pool."""
    from aws_cdk import aws_ec2 as ec2

    from neuron_constructs import AutoScalingCapacity

    stack = Stack(App(analytics_reporting=False), "Hibernates")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    AutoScalingCapacity(
        stack,
        "Cpu",
        cluster=cluster.cluster,
        instance_type=instance_type,
        machine_image=ecs.EcsOptimizedImage.amazon_linux2023(),
        subnets=cluster.cluster.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnets,
        min_capacity=0,
        max_capacity=2,
        root_volume_gib=30,
        neuron=None,
        warm_pool=WarmPool(state=autoscaling.PoolState.HIBERNATED, prefetch=False),
    )
    (launch_template,) = _of_type(Template.from_stack(stack).to_json(), "AWS::EC2::LaunchTemplate")
    return launch_template["Properties"]["LaunchTemplateData"]  # type: ignore[no-any-return]


def test_a_hibernated_warm_pool_of_a_listed_family_enables_hibernation_at_launch() -> None:
    """GIVEN a type of a family EC2 lists for hibernation (m5), WHEN its warm pool is HIBERNATED, THEN the launch
    template configures hibernation (EC2 hibernates only instances launched with it enabled)."""
    assert _hibernated_group("m5.large")["HibernationOptions"] == {"Configured": True}


@pytest.mark.parametrize(("instance_type", "why"), [("m5.metal", "bare metal"), ("g5.xlarge", "the g5 family")])
def test_a_hibernated_warm_pool_of_a_type_ec2_does_not_hibernate_is_refused(instance_type: str, why: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=rf"{why}.*NEURON141"):
        _hibernated_group(instance_type)


def test_a_pool_that_does_not_hibernate_leaves_hibernation_off(built: dict[str, Any]) -> None:
    for name in ("Warm", "NoPrefetch"):
        (launch_template,) = _of_type(built["templates"][name], "AWS::EC2::LaunchTemplate")
        assert "HibernationOptions" not in launch_template["Properties"]["LaunchTemplateData"]


def _warnings(stack: Stack, rule_id: str) -> list[str]:
    from aws_cdk.assertions import Annotations, Match

    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(f".*{rule_id}.*"))
    return [str(f.entry.data) for f in found]


def test_the_warm_up_s_own_cli_image_runs_by_its_tag_only_with_a_warning() -> None:
    """GIVEN a prefetching warm pool with the library's AWS CLI image, for which no source gives a digest, THEN the
    capacity warns NEURON116 (the warm-up runs it as root in the host network), naming the fix."""
    stack = Stack(App(analytics_reporting=False), "S")
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "N", instance_type="inf2.xlarge", warm_pool=WarmPool()
    )
    (warning,) = _warnings(stack, "NEURON116")
    assert f"the warm-up runs {AWS_CLI.uri} as root in the host network, by its tag" in warning
    assert 'WarmPool(cli_image=AWS_CLI.pinned("sha256:...")' in warning


def test_a_pinned_warm_up_image_runs_by_its_digest_without_a_warning() -> None:
    digest = "sha256:" + "ab" * 32
    app = App(analytics_reporting=False)
    stack = Stack(app, "S")
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "N", instance_type="inf2.xlarge", warm_pool=WarmPool(cli_image=AWS_CLI.pinned(digest))
    )
    assert _warnings(stack, "NEURON116") == []
    _, script = _warm_up_as_written(app.synth().get_stack_by_name("S").template)
    assert f"CLI='{AWS_CLI.uri}@{digest}'" in script


def test_another_warm_up_image_without_a_digest_is_refused() -> None:
    from neuron_constructs.knowledge.container_images import NeuronImage

    other = NeuronImage(
        registry="public.ecr.aws/team",
        repository="aws-cli",
        tag="latest",
        neuron_sdk=None,
        framework="AWS CLI",
        framework_version="2",
        python=None,
        os=None,
        instance_families=("inf2",),
        source="the team's",
    )
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    with pytest.raises(NeuronConfigurationError, match=r"runs it as root in the host network.*NEURON068"):
        cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=WarmPool(cli_image=other))
    # without prefetch there is no warm-up, so nothing runs it
    cluster.add_ec2_capacity("M", instance_type="inf2.xlarge", warm_pool=WarmPool(cli_image=other, prefetch=False))


def test_the_warm_up_container_is_found_by_the_template_check_and_acknowledged_with_its_reason(
    built: dict[str, Any],
) -> None:
    """NEURON115 reads launch templates' user data too: the warm-up's host-network container is a finding, which the
    library acknowledges on its launch template (cfn-lint's ignore_checks, the reason in the construct tree); the
    same user data on a template without the acknowledgement is reported."""
    from neuron_constructs.checks.template_checks import check_template
    from neuron_constructs.knowledge import rules

    template = built["templates"]["Warm"]
    assert not [f for f in check_template(template) if f.rule is rules.PRIVILEGED_CONTAINER]
    bare = json.loads(json.dumps(template))
    for resource in bare["Resources"].values():
        if resource["Type"] == "AWS::EC2::LaunchTemplate":
            resource.pop("Metadata", None)
    (finding,) = [f for f in check_template(bare) if f.rule is rules.PRIVILEGED_CONTAINER]
    assert "its user data runs a container in the host network as root at boot" in finding.message
    cold = built["templates"]["NoPrefetch"]  # no warm-up, no container
    assert not [f for f in check_template(cold) if f.rule is rules.PRIVILEGED_CONTAINER]


def test_a_privileged_container_in_any_launch_template_s_user_data_is_reported() -> None:
    from neuron_constructs.checks.template_checks import check_template
    from neuron_constructs.knowledge import rules

    template = {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {
                        "UserData": {"Fn::Base64": {"Fn::Join": ["", ["#!/bin/sh\ndocker run --privileged x\n"]]}}
                    }
                },
            }
        }
    }
    (finding,) = [f for f in check_template(template) if f.rule is rules.PRIVILEGED_CONTAINER]
    assert "runs a container privileged as root at boot" in finding.message


@pytest.mark.parametrize(
    ("user_data", "reported"),
    [
        ({"Fn::Base64": {"Fn::Join": [" ", ["docker", "run", "--privileged", "img"]]}}, True),
        ("#!/bin/sh\ndocker run \\\n  --privileged \\\n  img\n", True),
        (base64.b64encode(b"#!/bin/sh\ndocker run --privileged img\n").decode(), True),
        ('docker run "--privileged" img', True),
        ("docker run --network=host img", True),
        ("docker run --privileged=false img", False),
        ("docker run --rm img --privileged-mode-of-the-app", False),
    ],
    ids=["join-delimiter", "continued-lines", "plain-base64", "quoted", "host-network", "false", "app-argument"],
)
def test_neuron115_reads_user_data_as_the_instance_runs_it(user_data: object, reported: bool) -> None:
    """GIVEN user data whose docker run is split by an Fn::Join delimiter, continued over lines, base64 as
    ``UserData`` takes it, or quoted THEN NEURON115 reports it; ``--privileged=false`` and an argument of the app are
    no privileged container."""
    from neuron_constructs.checks.template_checks import check_template
    from neuron_constructs.knowledge import rules

    template = {
        "Resources": {
            "Lt": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"UserData": user_data}}}
        }
    }
    found = [f for f in check_template(template) if f.rule is rules.PRIVILEGED_CONTAINER]
    assert bool(found) is reported


def _capacity_running(images: list[str], *, prefetch: bool = True) -> Stack:
    stack = Stack(App(analytics_reporting=False), "Tags")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=WarmPool(prefetch=prefetch))
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(images[0]))
    for index, image in enumerate(images[1:]):
        task.add_container(f"side{index}", image=ecs.ContainerImage.from_registry(image))
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task, capacity=capacity)
    return stack


def test_an_image_by_a_moving_tag_on_prefer_cached_capacity_warns() -> None:
    """GIVEN a prefetching warm pool (the agent prefers cached images), WHEN services on it name images by :latest or
    by no tag, THEN NEURON142 warns naming them; a version tag or a digest does not warn."""
    pinned = "registry.example/model:latest@sha256:" + "cd" * 32
    stack = _capacity_running(
        ["registry.example/model:latest", "registry.example/other", "registry.example/v:1.4", pinned]
    )
    (warning,) = _warnings(stack, "NEURON142")
    assert "registry.example/model:latest, registry.example/other are named by a tag that moves" in warning
    assert "v:1.4" not in warning and pinned not in warning
    assert "prefer-cached" in warning


def test_an_image_by_a_moving_tag_without_prefetch_does_not_warn() -> None:
    """Without prefetch the agent pulls as usual (no prefer-cached): a moved tag is pulled again."""
    assert _warnings(_capacity_running(["registry.example/model:latest"], prefetch=False), "NEURON142") == []


def test_warm_pool_on_spot_is_refused() -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    with pytest.raises(NeuronConfigurationError, match=r"NEURON085.*Spot"):
        cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", spot=True, warm_pool=WarmPool())


def test_a_warm_pool_larger_than_the_group_s_maximum_is_refused() -> None:
    """GIVEN a group of at most 4 instances, WHEN its warm pool keeps 6, THEN NEURON027 refuses it (CloudFormation
    would write MinSize 6 over MaxSize 4); a pool as large as the group is fine."""
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    with pytest.raises(NeuronConfigurationError, match=r"min_size=6\) above the group's max_capacity=4.*NEURON027"):
        cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", max_capacity=4, warm_pool=WarmPool(min_size=6))
    cluster.add_ec2_capacity("M", instance_type="inf2.xlarge", max_capacity=4, warm_pool=WarmPool(min_size=4))


@pytest.mark.parametrize("pool", [WarmPool(min_size=-1), WarmPool(min_size=3, max_prepared=2)])
def test_warm_pool_sizes_out_of_range_are_refused(pool: WarmPool) -> None:
    stack = Stack(App(), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    with pytest.raises(NeuronConfigurationError, match="NEURON027"):
        cluster.add_ec2_capacity("N", instance_type="inf2.xlarge", warm_pool=pool)


def test_managed_instances_keep_idle_instances_half_an_hour_and_repair_by_default(built: dict[str, Any]) -> None:
    resources = built["templates"]["Managed"]["Resources"]
    by_id = {}
    for name, capacity in built["mi"].items():
        provider = capacity.capacity_provider.node.default_child
        logical_id = Stack.of(provider).resolve(Stack.of(provider).get_logical_id(provider))
        by_id[name] = resources[logical_id]["Properties"]["ManagedInstancesProvider"]
    assert by_id["Default"]["InfrastructureOptimization"] == {"ScaleInAfter": 1800}
    assert by_id["Default"]["AutoRepairConfiguration"] == {"ActionsStatus": "ENABLED"}
    assert by_id["Never"]["InfrastructureOptimization"] == {"ScaleInAfter": -1}
    assert by_id["Never"]["AutoRepairConfiguration"] == {"ActionsStatus": "DISABLED"}
    assert "InfrastructureOptimization" not in by_id["EcsDefaults"]
    assert "AutoRepairConfiguration" not in by_id["EcsDefaults"]


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=-10_000, max_value=10_000))
def test_scale_in_after_takes_minus_one_to_3600(seconds: int) -> None:
    accepted = -1 <= seconds <= 3600
    try:
        _scale_in_cluster().add_managed_instances_capacity(f"Mi{seconds + 20_000}", scale_in_after=seconds)
    except NeuronConfigurationError as error:
        assert not accepted
        assert "NEURON027" in str(error) and "scale_in_after" in str(error)
    else:
        assert accepted


_CLUSTER: list[NeuronCluster] = []


def _scale_in_cluster() -> NeuronCluster:
    if not _CLUSTER:
        _CLUSTER.append(NeuronCluster(Stack(App(), "ScaleIn"), "C"))
    return _CLUSTER[0]


# ----------------------------------------------------------------- the warm-up script itself ---

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
case "$(basename "$0") $1" in
  "docker info") [ -e "$STATE/docker-up" ]; exit $? ;;
  "systemctl start") touch "$STATE/docker-up" ;;
  "docker pull") case "$*" in *broken*) exit 1 ;; esac ;;
  "docker run") case "$*" in *get-login-password*) echo token ;; esac ;;
  "curl "*) ;;
esac
case "$*" in
  *api/token*) echo metadata-token ;;
  *meta-data/instance-id*) echo i-0123456789abcdef0 ;;
  *autoscaling:groupName*) echo Warm-Group-1 ;;
esac
exit 0
"""


def _run(shell: str, tmp_path: Path, prefetch: Prefetch) -> tuple[str, list[str]]:
    bin_dir = tmp_path / "bin"
    state = tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for name in ("docker", "systemctl", "curl", "sleep", "mkdir"):
        fake = bin_dir / name
        fake.write_text(FAKE)
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "warm-up.sh"
    script.write_text(warm_up_script(prefetch, region="us-east-1", cli_image=CLI))
    calls = tmp_path / "calls"
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "STATE": str(state)}
    done = subprocess.run(
        [shell, str(script)], env=environment, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, calls.read_text().splitlines()


SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]


@pytest.mark.parametrize("shell", SHELLS)
def test_warm_up_pulls_logs_in_copies_and_completes_the_lifecycle_action(shell: str, tmp_path: Path) -> None:
    prefetch = Prefetch(
        images=(PRIVATE_IMAGE, PUBLIC_IMAGE), artifacts=(("s3://team-models/llama", "team-models/llama"),)
    )
    out, calls = _run(shell, tmp_path, prefetch)
    assert "systemctl start docker" in calls  # Docker was not up: the script started it and waited
    login = next(c for c in calls if "get-login-password" in c)
    assert "--region us-east-1" in login and CLI in login
    assert f"docker pull --quiet {PRIVATE_IMAGE}" in calls
    assert f"docker pull --quiet {PUBLIC_IMAGE}" in calls
    sync = next(c for c in calls if "s3 sync" in c)
    assert f"s3://team-models/llama {MODELS_DIRECTORY}/team-models/llama" in sync
    assert "--network host" in sync
    runs = [c for c in calls if c.startswith("docker run")]
    assert runs and all("--cap-drop ALL --security-opt no-new-privileges" in c for c in runs)
    assert all("--privileged" not in c for c in runs)
    assert [c for c in runs if "-v " in c] == [sync]  # the models directory is mounted for the copy only
    complete = next(c for c in calls if "complete-lifecycle-action" in c)
    for part in (
        f"--lifecycle-hook-name {LIFECYCLE_HOOK_NAME}",
        "--auto-scaling-group-name Warm-Group-1",
        "--instance-id i-0123456789abcdef0",
        "--lifecycle-action-result CONTINUE",
    ):
        assert part in complete
    assert out.splitlines()[-1] == "neuron-warm-up: done (0 failed)"


@pytest.mark.parametrize("shell", SHELLS)
def test_warm_up_that_fails_a_pull_still_lets_the_instance_go_on(shell: str, tmp_path: Path) -> None:
    out, calls = _run(shell, tmp_path, Prefetch(images=("registry.example/broken:1", PUBLIC_IMAGE)))
    assert "neuron-warm-up: could not pull registry.example/broken:1" in out
    assert f"docker pull --quiet {PUBLIC_IMAGE}" in calls  # the next image is still pulled
    assert any("complete-lifecycle-action" in c for c in calls)
    assert out.splitlines()[-1] == "neuron-warm-up: done (1 failed)"
    assert not any("get-login-password" in c for c in calls)  # no private ECR image, no login


@pytest.mark.parametrize("shell", SHELLS)
def test_warm_up_quotes_what_it_fetches(shell: str, tmp_path: Path) -> None:
    hostile = "s3://bucket/a'b; touch /tmp/owned"
    out, calls = _run(shell, tmp_path, Prefetch(artifacts=((hostile, "bucket/x"),)))
    sync = next(c for c in calls if "s3 sync" in c)
    assert hostile in sync
    assert not any(c.startswith("touch") for c in calls)
    assert out.splitlines()[-1] == "neuron-warm-up: done (0 failed)"


def test_ecr_registry_names_private_registries_only() -> None:
    assert ecr_registry(PRIVATE_IMAGE) == ("111122223333.dkr.ecr.us-east-1.amazonaws.com", "us-east-1")
    assert ecr_registry(PUBLIC_IMAGE) is None


# ----------------------------------------------------------------- neuron-ecs plan --fetches ---


def _write_app(built: dict[str, Any], tmp_path: Path, *names: str) -> list[str]:
    paths = []
    for name in names:
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(built["templates"][name]))
        paths.append(str(path))
    return paths


def test_plan_lists_what_a_new_instance_of_each_capacity_fetches(built: dict[str, Any], tmp_path: Path) -> None:
    from neuron_constructs.tools.planning import plan_paths

    (warm,) = plan_paths(_write_app(built, tmp_path, "Warm")).fetches
    assert warm.capacity.startswith("CNeuronProvider")  # a bare template: named by logical id
    assert PRIVATE_IMAGE in warm.images
    assert any(i.startswith("public.ecr.aws/aws-cli/aws-cli:") for i in warm.images)  # the model sync container
    assert warm.artifacts == ("s3://team-models/llama/neuron-tp2",)
    assert warm.warm_pool == 1
    assert warm.prefetched and warm.room is not None
    assert (warm.room.root_volume_gib, warm.room.known_gib, warm.room.fits) == (100, 74, True)
    assert [f.what for f in warm.room.unknown] == [CLI_IMAGE]
    managed = plan_paths(_write_app(built, tmp_path, "Managed")).fetches
    assert [(f.kind, f.scale_in_after) for f in managed] == [
        ("managed-instances", 1800),
        ("managed-instances", -1),
        ("managed-instances", None),
    ]


def test_plan_matches_a_model_stack_s_service_to_the_platform_s_capacity(built: dict[str, Any], tmp_path: Path) -> None:
    from neuron_constructs.tools.planning import plan_paths

    (shared,) = plan_paths(_write_app(built, tmp_path, "Platform", "Model")).fetches
    assert PUBLIC_IMAGE in shared.images
    assert shared.artifacts == ("s3://team-models/llama/neuron-tp2",)
    # What the instance holds once the model's task runs there, warm-up or not: 30 + 500 x 3.
    assert shared.room is not None and (shared.room.needed_gib, shared.room.fits) == (1530, False)


def test_plan_fetches_on_the_command_line(built: dict[str, Any], tmp_path: Path) -> None:
    import io

    from neuron_constructs.tools.cli import EXIT_OK, main

    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", "--fetches", *_write_app(built, tmp_path, "Warm")], stdout=out, stderr=err)
    assert (status, err.getvalue()) == (EXIT_OK, "")
    text = out.getvalue()
    assert "warm pool of at least 1: fetched at warm-up" in text
    assert f"  image     {PRIVATE_IMAGE}  [8 GiB, 24 GiB unpacked]" in text
    assert "  artifacts s3://team-models/llama/neuron-tp2  [20 GiB]" in text
    assert f"  image     {CLI_IMAGE}  [size unknown]" in text
    assert "  root volume: 100 GiB; the AMI (30 GiB) and the known sizes take 74.0 GiB on disk: fits" in text
    assert "  sizes unknown for 1 of 3: state image_size_gib=" in text
    out = io.StringIO()
    main(["plan", "--fetches", "--json", *_write_app(built, tmp_path, "Warm")], stdout=out, stderr=err)
    document = json.loads(out.getvalue())
    assert document["fetches"][0]["warm_pool_min_size"] == 1 and document["unreadable"] == []
    assert document["fetches"][0]["root_volume"]["needed_gib"] == 74
    assert document["fetches"][0]["root_volume"]["unknown"] == [CLI_IMAGE]


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"Fn::Join": ["", [value, {"Ref": "AWS::Region"}]]}
    return value


@settings(max_examples=40, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=3),
        max_leaves=30,
    )
)
def test_any_image_or_command_value_is_shown_as_a_bounded_sentence(value: Any) -> None:
    from neuron_constructs.checks.warm_up import _artifact_url
    from neuron_constructs.tools.planning import shown

    assert len(shown(value)) <= 240
    assert _artifact_url({"Command": ["s3", "sync", value, value]}, shown) in (None, *([shown(value)] * 1))


def test_a_deeply_nested_image_is_cut_not_recursed_without_end() -> None:
    from neuron_constructs.tools.planning import shown

    text = shown(_deep(5_000))
    assert "<computed>" in text and len(text) <= 240
    assert shown({"Fn::Join": ["", ["a", {"Ref": "Repo"}, ":1"]]}) == "a<Repo>:1"
    assert shown({"Fn::GetAtt": ["Bucket", "Arn"]}) == "<Bucket.Arn>"


def test_the_warm_up_leaves_no_open_aws_solutions_finding(tmp_path: Path) -> None:
    """The registry token's ``*`` is acknowledged in a policy of its own; the pulls, the model prefix and the hook
    are scoped."""
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    app = App(
        analytics_reporting=False, outdir=str(tmp_path), context={"@aws-cdk/core:failSynthOnValidationErrors": False}
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = Stack(app, "Nag")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
    NeuronService(
        stack,
        "Llama",
        cluster=cluster,
        task_definition=_model_task(stack, ecs.ContainerImage.from_registry(PRIVATE_IMAGE)),
        capacity=capacity,
    )
    template = app.synth().get_stack_by_name("Nag").template
    assert any("CompleteWarmUp" in logical_id for logical_id in template["Resources"])
    report = json.loads((tmp_path / "validation-report.json").read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    open_paths = [
        (v["ruleName"], c["constructPath"])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
        if "Nag/C/Neuron" in c["constructPath"]
    ]
    assert open_paths == []


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("registry.example:5000/team/model", "latest (no tag)"),
        ("registry.example:5000/team/model:latest", "latest"),
        ("public.ecr.aws/team/model:nightly", "nightly"),
        ("public.ecr.aws/team/model:1.4.2", None),
        ("public.ecr.aws/team/model@sha256:" + "ef" * 32, None),
        ("registry.example:5000/team/model", "latest (no tag)"),
    ],
)
def test_moving_tag_reads_the_tag_after_the_last_slash(image: str, tag: str | None) -> None:
    from neuron_constructs.knowledge.warm_start import moving_tag

    assert moving_tag(image) == tag


def test_plan_prints_a_template_s_values_escaped_on_a_terminal_too(
    built: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIVEN an image name that holds a newline (a forged line) and escape sequences (concealed text) WHEN ``plan
    --fetches`` and ``plan --rollout`` print it on a terminal THEN the value is escaped: no forged line, and no
    escape sequence but the command's own colours."""
    import io
    import re

    from neuron_constructs.tools.cli import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    hostile = "repo/img:1\n  image     evil:ok\x1b[8mHIDDEN\x1b[0m\x1b]0;owned\x07"
    text = json.dumps(built["templates"]["Warm"]).replace(json.dumps(PRIVATE_IMAGE)[1:-1], json.dumps(hostile)[1:-1])
    path = tmp_path / "Warm.template.json"
    path.write_text(text)
    shown = {}
    for mode in ("--fetches", "--rollout"):
        out = Terminal()
        main(["plan", mode, str(path)], stdout=out, stderr=io.StringIO())
        shown[mode] = out.getvalue()
        assert "\n  image     evil:ok" not in shown[mode] and "\x1b[8m" not in shown[mode], mode
        assert "\x1b" not in re.sub(r"\x1b\[(?:[0-9]{1,2};)*[0-9]{1,2}m", "", shown[mode]), mode
    assert "repo/img:1\\n  image     evil:ok\\x1b[8mHIDDEN" in shown["--fetches"]
