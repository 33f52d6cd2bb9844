"""Warm starts: the compile cache and model artifacts, read from the synthesized templates."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from conftest import resources, workloads
from hypothesis import given
from hypothesis import strategies as st

from neuron_constructs import (
    CompileCache,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    ModelArtifacts,
    NeuronConfigurationError,
)
from neuron_constructs.compute.model_sources import AWS_CLI_IMAGE

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


@pytest.fixture(scope="module")
def warm() -> dict[str, Any]:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Warm")
    cache = CompileCache.in_new_bucket(stack, "Cache")
    models = s3.Bucket.from_bucket_name(stack, "Models", "team-models")
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container(
        "model",
        image=IMAGE,
        hf_token=secretsmanager.Secret(stack, "HfToken"),
        compile_cache=cache,
        model_artifacts=ModelArtifacts(models, "llama/neuron-tp8/", path="/models/llama"),
    )
    keyed = Stack(app, "Keyed")
    key = kms.Key(keyed, "Key", enable_key_rotation=True)
    manual = ManualNeuronTaskDefinition(keyed, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    manual.add_neuron_container(
        "model", image=IMAGE, compile_cache=CompileCache.in_new_bucket(keyed, "Cache", encryption_key=key)
    )
    assembly = app.synth()
    return {name: assembly.get_stack_by_name(name).template for name in ("Warm", "Keyed")}


def _containers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (task,) = workloads(template, "AWS::ECS::TaskDefinition").values()
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_container_reads_the_cache_url_and_the_task_role_holds_exactly_its_prefix(warm: dict[str, Any]) -> None:
    template = warm["Warm"]
    (bucket_id,) = resources(template, "AWS::S3::Bucket")
    environment = {e["Name"]: e["Value"] for e in _containers(template)["model"]["Environment"]}
    assert environment["NEURON_COMPILE_CACHE_URL"] == {
        "Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/neuron-compile-cache/Warm/Task/"]]
    }

    def actions(statement: dict[str, Any]) -> list[str]:
        return statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]

    s3_statements = [s for s in _statements(template) if any(a.startswith("s3:") for a in actions(s))]
    cache = [s for s in s3_statements if bucket_id in str(s["Resource"])]
    assert len(cache) == 2  # objects under the prefix, and listing the prefix: nothing else in the bucket
    write = next(s for s in cache if s["Action"] != "s3:ListBucket")
    assert sorted(write["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert write["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/neuron-compile-cache/Warm/Task/*"]]
    }
    listing = next(s for s in cache if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {
        "StringLike": {"s3:prefix": ["neuron-compile-cache/Warm/Task", "neuron-compile-cache/Warm/Task/*"]}
    }


def test_the_cache_bucket_is_private_encrypted_tls_only_and_expires_entries(warm: dict[str, Any]) -> None:
    template = warm["Warm"]
    (bucket,) = resources(template, "AWS::S3::Bucket").values()
    properties = bucket["Properties"]
    rule = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert rule["SSEAlgorithm"] == "AES256"
    assert all(properties["PublicAccessBlockConfiguration"].values())
    assert properties["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 90
    (policy,) = resources(template, "AWS::S3::BucketPolicy").values()
    deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
    assert (deny["Effect"], deny["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})
    assert bucket["DeletionPolicy"] == "Retain"


def test_a_cache_under_a_customer_managed_key_lets_the_task_role_use_the_key(warm: dict[str, Any]) -> None:
    template = warm["Keyed"]
    (key_id,) = workloads(template, "AWS::KMS::Key")
    kms_statements = [s for s in _statements(template) if "kms:Decrypt" in s["Action"]]
    assert kms_statements and all(s["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]} for s in kms_statements)
    assert any("kms:GenerateDataKey*" in s["Action"] for s in kms_statements)


def test_model_artifacts_are_copied_in_before_the_model_starts_read_only(warm: dict[str, Any]) -> None:
    template = warm["Warm"]
    containers = _containers(template)
    sync = containers["model-model-sync"]
    assert sync["Image"] == AWS_CLI_IMAGE and sync["Essential"] is False
    assert "Privileged" not in sync and "LinuxParameters" not in sync  # unprivileged, no device, no capability
    assert sync["Command"] == ["s3", "sync", "--only-show-errors", "s3://team-models/llama/neuron-tp8", "/models/llama"]
    model = containers["model"]
    assert model["DependsOn"] == [{"ContainerName": "model-model-sync", "Condition": "SUCCESS"}]
    assert model["MountPoints"] == [{"ContainerPath": "/models/llama", "ReadOnly": True, "SourceVolume": "model-model"}]
    assert {"Name": "MODEL_DIR", "Value": "/models/llama"} in model["Environment"]
    reads = [s for s in _statements(template) if "team-models" in str(s["Resource"])]
    assert {str(s["Action"]) for s in reads} == {"s3:GetObject", "s3:ListBucket"}
    listing = next(s for s in reads if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["llama/neuron-tp8", "llama/neuron-tp8/*"]}}


def test_every_slice_gets_the_cache_of_the_sliced_example(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["NeuronSlicedInf2"]
    task_definitions = workloads(template, "AWS::ECS::TaskDefinition").values()
    urls = {
        str(e["Value"])
        for t in task_definitions
        for c in t["Properties"]["ContainerDefinitions"]
        for e in c.get("Environment", [])
        if e["Name"] == "NEURON_COMPILE_CACHE_URL"
    }
    assert len(task_definitions) == 6 and len(urls) == 1  # the copies of one model share its prefix
    assert "/neuron-compile-cache/NeuronSlicedInf2/" in urls.pop()


def _cache_grants(template: dict[str, Any], bucket: str) -> dict[str, tuple[str, list[str]]]:
    """Per task role: the objects it may write in ``bucket`` and the prefixes it may list."""
    grants: dict[str, tuple[str, list[str]]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        (role,) = policy["Properties"]["Roles"]
        statements = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if bucket in str(s["Resource"])]
        if not statements:
            continue
        write = next(s for s in statements if s["Action"] != "s3:ListBucket")
        listing = next(s for s in statements if s["Action"] == "s3:ListBucket")
        grants[role["Ref"]] = (write["Resource"]["Fn::Join"][1][1], listing["Condition"]["StringLike"]["s3:prefix"])
    return grants


def _models_on_one_cache(shared: bool) -> dict[str, Any]:
    stack = Stack(App(analytics_reporting=False), "Two")
    cache = CompileCache.in_new_bucket(stack, "Cache")
    if shared:
        cache = CompileCache(cache.bucket, shared=True)
    for name in ("Llama", "Mistral"):
        task = ManualNeuronTaskDefinition(stack, name, instance_type="inf2.xlarge", memory_mib=8192)
        task.add_neuron_container("model", image=IMAGE, compile_cache=cache)
    return App.of(stack).synth().get_stack_by_name("Two").template  # type: ignore[union-attr,no-any-return]


def test_two_models_on_one_cache_get_disjoint_prefixes_and_grants() -> None:
    """GIVEN one CompileCache given to two models, THEN each container's URL and each task role's write and list grants
    name that model's own prefix, and neither prefix contains the other."""
    template = _models_on_one_cache(shared=False)
    (bucket_id,) = resources(template, "AWS::S3::Bucket")
    urls = {
        task_id: next(e["Value"] for e in c["Environment"] if e["Name"] == "NEURON_COMPILE_CACHE_URL")["Fn::Join"][1][2]
        for task_id, task in workloads(template, "AWS::ECS::TaskDefinition").items()
        for c in task["Properties"]["ContainerDefinitions"]
    }
    assert sorted(urls.values()) == ["/neuron-compile-cache/Two/Llama/", "/neuron-compile-cache/Two/Mistral/"]
    grants = _cache_grants(template, bucket_id)
    assert sorted(grants.values()) == [
        ("/neuron-compile-cache/Two/Llama/*", ["neuron-compile-cache/Two/Llama", "neuron-compile-cache/Two/Llama/*"]),
        (
            "/neuron-compile-cache/Two/Mistral/*",
            ["neuron-compile-cache/Two/Mistral", "neuron-compile-cache/Two/Mistral/*"],
        ),
    ]


def test_a_cache_shared_on_purpose_gives_every_model_the_one_prefix() -> None:
    template = _models_on_one_cache(shared=True)
    (bucket_id,) = resources(template, "AWS::S3::Bucket")
    grants = _cache_grants(template, bucket_id)
    assert (
        list(grants.values()) == [("/neuron-compile-cache/*", ["neuron-compile-cache", "neuron-compile-cache/*"])] * 2
    )


@given(st.text(max_size=40))
def test_a_model_prefix_is_under_the_cache_s_and_never_holds_a_wildcard(model: str) -> None:
    """Whatever names the model, its prefix stays under the cache's and holds no IAM wildcard."""
    cache = CompileCache(s3.Bucket.from_bucket_name(Stack(), "B", "cache-bucket"), "cache")
    prefix = cache.model_prefix(model)
    assert prefix == "cache" or prefix.startswith("cache/")
    assert not any(c in prefix for c in "*?$") and "//" not in prefix


def test_the_hugging_face_token_is_an_ecs_secret_the_execution_role_alone_reads(warm: dict[str, Any]) -> None:
    template = warm["Warm"]
    (secret_id,) = resources(template, "AWS::SecretsManager::Secret")
    model = _containers(template)["model"]
    assert model["Secrets"] == [{"Name": "HF_TOKEN", "ValueFrom": {"Ref": secret_id}}]
    assert all(e["Name"] != "HF_TOKEN" for e in model["Environment"])
    readers = [
        policy["Properties"]["Roles"]
        for policy in resources(template, "AWS::IAM::Policy").values()
        if any(secret_id in str(s["Resource"]) for s in policy["Properties"]["PolicyDocument"]["Statement"])
    ]
    (task,) = workloads(template, "AWS::ECS::TaskDefinition").values()
    execution_role = task["Properties"]["ExecutionRoleArn"]["Fn::GetAtt"][0]
    assert readers == [[{"Ref": execution_role}]]


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("llama\nNEURON_WARM_UP\ntouch /tmp/owned", r"holds '\\n', which is not one of S3's safe key characters"),
        ("../../var/run", r"has an empty, '.' or '..' segment"),
        ("models/../../etc", r"has an empty, '.' or '..' segment"),
        ("models//llama", r"has an empty, '.' or '..' segment"),
        ("models/./llama", r"has an empty, '.' or '..' segment"),
        ("llama $(id)", r"holds ' '"),
        ("llama;reboot", r"holds ';'"),
        ("llama\x00", r"holds '\\x00'"),
        ("llama/*", r"holds '\*'"),
        ("/", r"is empty"),
    ],
)
def test_a_model_prefix_outside_s3_s_safe_key_characters_or_climbing_is_refused(prefix: str, problem: str) -> None:
    """GIVEN a prefix holding a newline, a control character, a character a shell reads, or a '..', '.' or empty
    segment, WHEN ModelArtifacts is made, THEN NEURON047 refuses it: the prefix also names the warm pool's copy on the
    instance and the task's host volume there, which '..' would move to any host path."""
    bucket = s3.Bucket.from_bucket_name(Stack(App(analytics_reporting=False), "P"), "Models", "team-models")
    with pytest.raises(NeuronConfigurationError, match=rf"{problem}.*NEURON047"):
        ModelArtifacts(bucket, prefix)


@pytest.mark.parametrize("prefix", ["llama/neuron-tp2", "/models/llama-3.1_8b(v2)/", "team!/it's"])
def test_a_prefix_of_safe_key_characters_is_taken_without_its_outer_slashes(prefix: str) -> None:
    bucket = s3.Bucket.from_bucket_name(Stack(App(analytics_reporting=False), "P"), "Models", "team-models")
    assert ModelArtifacts(bucket, prefix).prefix == prefix.strip("/")


def test_a_literal_bucket_name_s3_could_not_have_never_reaches_model_artifacts() -> None:
    """The bucket names the instance's directory as the prefix does: aws-cdk-lib refuses a literal name S3 could not
    have (no newline, no '..') where the bucket is imported, before ModelArtifacts sees it."""
    stack = Stack(App(analytics_reporting=False), "P")
    with pytest.raises(RuntimeError, match="Invalid S3 bucket name"):
        s3.Bucket.from_bucket_name(stack, "Models", "../var\nrun")
