"""What model stacks publish for a warm-pooled capacity of another stack (Parameter Store under the platform's prefix),
the warm-up's reading of it at boot (run in dash and bash against fakes, with hostile values), the grants on both
sides, NEURON124 and ``neuron-ecs plan --fetches``."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from conftest import imported_vpc

from neuron_constructs import ManualNeuronTaskDefinition, ModelArtifacts, NeuronCluster, NeuronService, WarmPool
from neuron_constructs.knowledge.warm_start import MODELS_DIRECTORY, Prefetch, warm_up_script
from neuron_constructs.knowledge.warm_up_needs import (
    MOST_ENTRIES,
    NEEDS_FORMAT,
    Need,
    artifact_needs,
    image_needs,
    needs_value,
    parse_needs,
)

pytestmark = pytest.mark.xdist_group("warm_pools")

PRIVATE_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team/llama-server:1.4"
PUBLIC_IMAGE = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.30.0-ubuntu24.04"
CLI = "public.ecr.aws/aws-cli/aws-cli:2.31.0"
REPOSITORY = "team/llama-server"
PATH = "/neuron/team/warm-up/Inf2"

# ----------------------------------------------------------------- the format ---


def test_a_value_round_trips_through_the_format_the_boot_script_reads() -> None:
    needs = [Need("image", PRIVATE_IMAGE, 8), Need("artifacts", "team-models/llama/tp2", 20.5), Need("image", "a/b")]
    value = needs_value(needs)
    assert value.split()[0] == NEEDS_FORMAT
    assert parse_needs(value) == (needs, 0)


@pytest.mark.parametrize(
    "reference",
    [
        "x; touch /tmp/owned",
        "$(id)",
        "`id`",
        "-v/:/host",
        "registry.example/model:1'",
        "registry.example/model:1\nimage=evil",
        "Registry.Example/model:1",
        "a" * 600,
    ],
)
def test_an_image_reference_outside_the_pattern_is_not_published(reference: str) -> None:
    assert image_needs(reference) is None


@pytest.mark.parametrize(
    ("bucket", "prefix"),
    [("team..models", "llama"), ("team-models", "../etc"), ("team-models", "a/./b"), ("team-models", "a b"),
     ("team-models", "it's"), ("Team", "llama"), ("team-models", "$(id)")],
)  # fmt: skip
def test_a_bucket_or_prefix_outside_the_pattern_is_not_published(bucket: str, prefix: str) -> None:
    assert artifact_needs(bucket, prefix) is None


def test_parse_skips_words_outside_the_format_and_beyond_the_bound() -> None:
    assert parse_needs("neuron-warm-up/2 image=a/b,-") == ([], 1)
    assert parse_needs(f"{NEEDS_FORMAT} image=a/b;id,- s3=b/../x,- image=a/b,-") == ([Need("image", "a/b")], 2)
    many = " ".join(f"image=r/m{i},-" for i in range(MOST_ENTRIES + 3))
    needs, skipped = parse_needs(f"{NEEDS_FORMAT} {many}")
    assert (len(needs), skipped) == (MOST_ENTRIES, 3)


# ----------------------------------------------------------------- the script, against fakes ---

# Forks nothing: the script under test runs it once a command (every pull), so its own cost is the shell's start.
FAKE = """#!/bin/sh
echo "${0##*/} $*" >> "$CALLS"
case "${0##*/} $1" in
  "docker info") exit 0 ;;
  "docker pull") case "$*" in *broken*) exit 1 ;; esac ;;
  "docker run")
    case "$*" in
      *get-login-password*) echo token ;;
      *get-parameters-by-path*) [ -e "$STATE/no-ssm" ] && exit 254; cat "$STATE/needs" ;;
    esac ;;
esac
case "$*" in
  *api/token*) echo metadata-token ;;
  *meta-data/instance-id*) echo i-0123456789abcdef0 ;;
  *autoscaling:groupName*) echo Warm-Group-1 ;;
esac
exit 0
"""


def _run(shell: str, tmp_path: Path, listed: str, *, ssm_fails: bool = False) -> tuple[str, list[str]]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for name in ("docker", "systemctl", "curl", "sleep", "mkdir"):
        fake = bin_dir / name
        fake.write_text(FAKE)
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (state / "needs").write_text(listed)
    if ssm_fails:
        (state / "no-ssm").touch()
    script = tmp_path / "warm-up.sh"
    script.write_text(warm_up_script(Prefetch(needs_path=PATH), region="us-east-1", cli_image=CLI))
    calls = tmp_path / "calls"
    calls.touch()
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "STATE": str(state), "HOME": str(tmp_path)}
    done = subprocess.run([shell, str(script)], env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, calls.read_text().splitlines()


SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_warm_up_reads_its_path_paginated_and_bounded_and_fetches_what_is_published(
    shell: str, tmp_path: Path
) -> None:
    """GIVEN two model stacks' parameters under the capacity's path WHEN the warm-up runs THEN it reads the path one
    level deep, at most 50 parameters 10 a call, logs in to the private registry, pulls both images, copies the
    prefix, and completes the lifecycle action."""
    model = needs_value([Need("image", PRIVATE_IMAGE, 8), Need("artifacts", "team-models/llama/tp2", 20)])
    other = needs_value([Need("image", PUBLIC_IMAGE)])
    out, calls = _run(shell, tmp_path, f"{PATH}/Model\t{model}\n{PATH}/Other\t{other}\n")
    (read,) = [c for c in calls if "get-parameters-by-path" in c]
    for part in (f"--path {PATH}", "--no-recursive", "--page-size 10", "--max-items 50", "--region us-east-1"):
        assert part in read
    login = next(c for c in calls if "get-login-password" in c)
    assert "--region us-east-1" in login
    assert "docker login --username AWS --password-stdin 111122223333.dkr.ecr.us-east-1.amazonaws.com" in calls
    assert f"docker pull --quiet {PRIVATE_IMAGE}" in calls
    assert f"docker pull --quiet {PUBLIC_IMAGE}" in calls
    sync = next(c for c in calls if "s3 sync" in c)
    assert f"s3://team-models/llama/tp2 {MODELS_DIRECTORY}/team-models/llama/tp2" in sync
    assert f"neuron-warm-up: pulled {PRIVATE_IMAGE} (from Model)" in out
    assert any("complete-lifecycle-action" in c for c in calls)
    assert out.splitlines()[-1] == "neuron-warm-up: done (0 failed)"


HOSTILE_WORDS = [
    "image=x;touch${IFS}OWNED,-",
    "image=$(touch${IFS}OWNED),-",
    "image=`touch${IFS}OWNED`,-",
    "image=-v/:/host,-",
    "image=*,-",
    "s3=team-models/../../../etc,-",
    "s3=team..models/x,-",
    "s3=team-models/a/./b,-",
    "s3=team-models/x;touch${IFS}OWNED,-",
    "image=registry.example/ok:1,9'",
]


@pytest.mark.parametrize("shell", SHELLS)
def test_hostile_values_are_skipped_with_a_log_line_and_never_run(shell: str, tmp_path: Path) -> None:
    """GIVEN parameters whose words try command substitution, option injection, globbing and climbing out of the
    models directory, a name outside the path, another format and an overlong value WHEN the warm-up reads them
    THEN nothing of them runs or is fetched, each is skipped with a line that does not repeat it, and the good need
    beside them is still fetched."""
    (tmp_path / "work").mkdir()
    hostile = " ".join([NEEDS_FORMAT, *HOSTILE_WORDS, "image=registry.example/good:1,-"])
    listed = "\n".join(
        [
            f"{PATH}/Model\t{hostile}",
            f"/elsewhere/Model\t{NEEDS_FORMAT} image=registry.example/elsewhere:1,-",
            f"{PATH}/deeper/Model\t{NEEDS_FORMAT} image=registry.example/deeper:1,-",
            f"{PATH}/Old\tneuron-warm-up/0 image=registry.example/old:1,-",
            f"{PATH}/Long\t{NEEDS_FORMAT} " + "image=registry.example/long:1,- " * 300,
        ]
    )
    out, calls = _run(shell, tmp_path, listed + "\n")
    assert not list(tmp_path.rglob("OWNED"))
    pulled = [c for c in calls if c.startswith("docker pull") and "aws-cli" not in c]
    assert pulled == ["docker pull --quiet registry.example/good:1"]
    assert not any("s3 sync" in c for c in calls)
    # three of them match the words' pattern and are refused by the copy's own checks
    assert out.count("skipped a need of Model that matches no pattern") == len(HOSTILE_WORDS) - 3
    assert out.count("skipped a prefix of Model with a . or .. segment") == 2
    assert out.count("skipped a bucket of Model with '..'") == 1
    assert "skipped a parameter not named" in out
    assert f"skipped Old: not {NEEDS_FORMAT}" in out and "skipped Long: longer than 4096 characters" in out
    assert "OWNED" not in out and "/etc" not in out
    assert out.splitlines()[-1] == "neuron-warm-up: done (0 failed)"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_warm_up_logs_in_to_each_private_registry_once_and_to_no_other_host(shell: str, tmp_path: Path) -> None:
    """GIVEN images of three private ECR registries (one FIPS, one in China) across two parameters, repeated, between
    words that match no pattern, and an image whose host only starts like a registry WHEN the warm-up reads them THEN
    it logs in to each registry once with its Region, never to the lookalike, and pulls every image."""
    east, fips = "111122223333.dkr.ecr.us-east-1.amazonaws.com", "444455556666.dkr.ecr-fips.us-gov-west-1.amazonaws.com"
    china, lookalike = "777788889999.dkr.ecr.cn-north-1.amazonaws.com.cn", f"{east}.evil.example"
    model = [f"image={east}/a:1,-", "image=$(id),-", f"image={lookalike}/b:1,-", "s3=team-models/x,-",
             f"image={fips}/c,2", "image=*,-", f"image={china}/d:1,-", f"image={east}/e:1,-"]  # fmt: skip
    listed = f"{PATH}/Model\t{NEEDS_FORMAT} {' '.join(model)}\n{PATH}/Other\t{NEEDS_FORMAT} image={fips}/f,-\n"
    out, calls = _run(shell, tmp_path, listed)
    logins = [c.rsplit(" ", 1)[1] for c in calls if c.startswith("docker login")]
    assert logins == [east, fips, china]
    regions = [c.split("--region ")[1] for c in calls if "get-login-password" in c]
    assert regions == ["us-east-1", "us-gov-west-1", "cn-north-1"]
    pulled = [c.removeprefix("docker pull --quiet ") for c in calls if c.startswith("docker pull") and CLI not in c]
    assert pulled == [f"{east}/a:1", f"{lookalike}/b:1", f"{fips}/c", f"{china}/d:1", f"{east}/e:1", f"{fips}/f"]
    assert out.count("matches no pattern") == 2
    assert out.splitlines()[-1] == "neuron-warm-up: done (0 failed)"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_warm_up_stops_at_the_bound_of_needs(shell: str, tmp_path: Path) -> None:
    many = " ".join(f"image=registry.example/m{i}:1,-" for i in range(MOST_ENTRIES + 5))
    out, calls = _run(shell, tmp_path, f"{PATH}/Model\t{NEEDS_FORMAT} {many}\n")
    pulled = [c for c in calls if c.startswith("docker pull") and "aws-cli" not in c]
    assert len(pulled) == MOST_ENTRIES
    assert f"skipped the needs after the first {MOST_ENTRIES}" in out


@pytest.mark.parametrize("shell", SHELLS)
def test_a_path_the_warm_up_cannot_read_counts_as_a_failure_and_the_instance_goes_on(
    shell: str, tmp_path: Path
) -> None:
    out, calls = _run(shell, tmp_path, "", ssm_fails=True)
    assert f"neuron-warm-up: could not read {PATH}" in out
    assert any("complete-lifecycle-action" in c for c in calls)
    assert out.splitlines()[-1] == "neuron-warm-up: done (1 failed)"


# ----------------------------------------------------------------- two stacks at synth ---

PREFIX = "/neuron/team"


def _model_task(
    stack: Stack, image: ecs.ContainerImage, bucket: s3.IBucket, **sizes: Any
) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    models = ModelArtifacts(bucket, "llama/neuron-tp2", size_gib=sizes.get("model_gib"))
    task.add_neuron_container("model", image=image, model_artifacts=models, image_size_gib=sizes.get("image_gib"))
    return task


def _two_stacks(
    *, publish: bool = True, image: str = PRIVATE_IMAGE, bucket: str | None = "team-models"
) -> dict[str, Any]:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform")
    cluster = NeuronCluster(platform, "C", vpc=imported_vpc(platform))
    capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
    if publish:
        cluster.publish(PREFIX)
    model = Stack(app, "Model")
    models = (
        s3.Bucket.from_bucket_name(model, "Models", bucket)
        if bucket is not None
        else s3.Bucket(model, "Models", enforce_ssl=True)
    )
    container_image = (
        ecs.ContainerImage.from_registry(image)
        if image
        else ecs.ContainerImage.from_ecr_repository(ecr.Repository(model, "Repository"), "1")
    )
    task = _model_task(model, container_image, models, image_gib=8, model_gib=20)
    NeuronService(model, "Llama", cluster=cluster, task_definition=task, capacity=capacity)
    assembly = app.synth()
    return {
        "assembly": assembly,
        "capacity": capacity,
        "platform": assembly.get_stack_by_name("Platform"),
        "model": assembly.get_stack_by_name("Model"),
    }


def _of_type(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _statements(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        s["Sid"]: s
        for p in _of_type(template, "AWS::IAM::Policy")
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "Sid" in s
    }


def _warnings(stack: Any, rule: str) -> list[str]:
    return [str(m.entry.data) for m in stack.messages if rule in str(m.entry.data)]


@pytest.fixture(scope="module")
def split() -> dict[str, Any]:
    return _two_stacks()


def test_the_model_stack_publishes_what_its_service_needs_under_the_capacity_s_path(split: dict[str, Any]) -> None:
    """GIVEN a platform stack whose cluster publishes under /neuron/team and a warm-pooled capacity, and a model stack
    with a service on that capacity WHEN synthesized THEN the model stack writes one String parameter under
    <prefix>/warm-up/<capacity>/<stack> holding its image and model prefix with their sizes, in the format the boot
    script reads, and Parameter Store holds the value to that format."""
    (parameter,) = _of_type(split["model"].template, "AWS::SSM::Parameter")
    properties = parameter["Properties"]
    assert properties["Name"] == f"{PREFIX}/warm-up/Neuron/Model"
    assert properties["Type"] == "String" and properties["Tier"] == "Standard"
    needs, skipped = parse_needs(properties["Value"])
    assert skipped == 0
    sync = next(n for n in needs if n.what.startswith("public.ecr.aws/aws-cli/"))  # the model sync container's
    assert needs == [Need("image", PRIVATE_IMAGE, 8), sync, Need("artifacts", "team-models/llama/neuron-tp2", 20)]
    assert re.fullmatch(properties["AllowedPattern"], properties["Value"])
    assert split["capacity"].needs_path == f"{PREFIX}/warm-up/Neuron"


def test_the_platform_reads_the_path_at_boot_without_depending_on_the_model_stack(split: dict[str, Any]) -> None:
    """GIVEN the two stacks WHEN synthesized THEN the platform's user data reads the capacity's path (and names no
    image of the model), its instance role may call GetParametersByPath on exactly that path, the platform has no
    dependency on the model stack, and NEURON124 no longer names the model's service."""
    platform = split["platform"]
    assert "Model" not in [d.id for d in platform.dependencies]
    assert "Platform" in [d.id for d in split["model"].dependencies]
    assert split["capacity"].prefetch.needs_path == f"{PREFIX}/warm-up/Neuron"
    script = warm_up_script(split["capacity"].prefetch, region="r", cli_image=CLI)
    assert f"NEEDS='{PREFIX}/warm-up/Neuron'" in script and PRIVATE_IMAGE not in script
    rendered = json.dumps(platform.template)
    assert f"NEEDS='{PREFIX}/warm-up/Neuron'" in rendered  # in the launch template's user data, as the script runs
    assert PRIVATE_IMAGE not in rendered and "team-models" not in rendered
    read = _statements(platform.template)["ReadWarmUpNeeds"]
    assert read["Action"] == "ssm:GetParametersByPath"
    assert read["Resource"] == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":ssm:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"},
             f":parameter{PREFIX}/warm-up/Neuron"],
        ]
    }  # fmt: skip
    assert not _warnings(platform, "NEURON124")


def test_the_model_stack_grants_the_instance_role_only_its_repository_and_prefix(split: dict[str, Any]) -> None:
    """GIVEN the two stacks WHEN synthesized THEN the model stack's policy, attached to the platform's instance role
    by name, pulls the model's repository only and reads its prefix only; the platform's own role policies name
    neither."""
    model = split["model"].template
    statements = _statements(model)
    assert statements["PullImages"]["Resource"] == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":ecr:us-east-1:111122223333:repository/team/llama-server"],
        ]
    }
    policies = [
        p for p in _of_type(model, "AWS::IAM::Policy") if "Fn::ImportValue" in json.dumps(p["Properties"]["Roles"])
    ]
    granted = json.dumps(policies)
    assert "PullImages" in granted and "team-models/llama/neuron-tp2/*" in granted
    assert '"s3:prefix": ["llama/neuron-tp2", "llama/neuron-tp2/*"]' in granted
    assert "ecr:*" not in granted and '"s3:*"' not in granted
    assert "PullImages" not in json.dumps(_of_type(split["platform"].template, "AWS::IAM::Policy"))


def test_the_model_s_task_volume_is_the_warm_up_s_copy(split: dict[str, Any]) -> None:
    (task,) = _of_type(split["model"].template, "AWS::ECS::TaskDefinition")
    (volume,) = task["Properties"]["Volumes"]
    assert volume["Host"] == {"SourcePath": f"{MODELS_DIRECTORY}/team-models/llama/neuron-tp2"}


def test_the_model_s_sizes_count_against_the_platform_s_root_volume(split: dict[str, Any]) -> None:
    room = split["capacity"].root_volume_room
    assert {(f.what, f.size_gib) for f in room.fetched} >= {
        (PRIVATE_IMAGE, 8),
        ("s3://team-models/llama/neuron-tp2", 20),
    }


def test_an_image_named_by_a_token_in_the_model_stack_still_warns_and_is_not_published() -> None:
    """GIVEN the model's image from a repository the model stack creates (a token) WHEN synthesized THEN the parameter
    holds the model prefix only, and NEURON124 names the container (its image is pulled when the task is placed)."""
    made = _two_stacks(image="")
    (parameter,) = _of_type(made["model"].template, "AWS::SSM::Parameter")
    needs, _ = parse_needs(parameter["Properties"]["Value"])
    assert [n.kind for n in needs if not n.what.startswith("public.ecr.aws/aws-cli/")] == ["artifacts"]
    (warning,) = _warnings(made["platform"], "NEURON124")
    assert "Model/Task/TaskDefinition/model (image named by a token)" in warning


def test_a_bucket_the_model_stack_creates_is_published_by_its_deploy_time_name() -> None:
    made = _two_stacks(bucket=None)
    (parameter,) = _of_type(made["model"].template, "AWS::SSM::Parameter")
    value = json.dumps(parameter["Properties"]["Value"])
    assert '"Ref": "Models' in value and "s3=" in value
    assert not _warnings(made["platform"], "NEURON124")


def test_without_a_published_prefix_the_other_stack_s_service_warns_with_the_fix() -> None:
    made = _two_stacks(publish=False)
    assert not _of_type(made["model"].template, "AWS::SSM::Parameter")
    (warning,) = _warnings(made["platform"], "NEURON124")
    assert "Model/Llama (in another stack, and the capacity's cluster publishes no prefix" in warning
    assert "NeuronCluster.publish" in warning
    assert "ReadWarmUpNeeds" not in _statements(made["platform"].template)


# ----------------------------------------------------------------- plan --fetches and the template check ---


def _written(made: dict[str, Any], tmp_path: Path) -> list[str]:
    paths = []
    for name in ("Platform", "Model"):
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(made[name.lower()].template))
        paths.append(str(path))
    return paths


def test_plan_marks_fetched_at_warm_up_exactly_what_the_user_data_and_the_parameters_fetch(
    split: dict[str, Any], tmp_path: Path
) -> None:
    """GIVEN the two stacks' templates WHEN ``neuron-ecs plan --fetches`` reads them THEN the model's image and prefix,
    published under the path the platform's user data reads, are fetched at warm-up; without a published prefix
    the same service's are marked as fetched when its task is placed (NEURON124), as the warm-up does."""
    import io

    from neuron_constructs.tools.cli import EXIT_OK, main
    from neuron_constructs.tools.planning import plan_paths

    (shared,) = plan_paths(_written(split, tmp_path)).fetches
    assert shared.prefetched and PRIVATE_IMAGE in shared.images
    assert shared.not_prefetched == ()
    cold = tmp_path / "cold"
    cold.mkdir()
    (unpublished,) = plan_paths(_written(_two_stacks(publish=False), cold)).fetches
    assert PRIVATE_IMAGE in unpublished.not_prefetched
    assert "s3://team-models/llama/neuron-tp2" in unpublished.not_prefetched
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", "--fetches", *_written(_two_stacks(publish=False), cold)], stdout=out, stderr=err) == EXIT_OK
    assert f"  image     {PRIVATE_IMAGE}  [8 GiB, 24 GiB unpacked]  (not fetched at warm-up: when its task" in (
        out.getvalue()
    )
    out = io.StringIO()
    main(["plan", "--fetches", "--json", *_written(_two_stacks(publish=False), cold)], stdout=out, stderr=err)
    assert PRIVATE_IMAGE in json.loads(out.getvalue())["fetches"][0]["not_prefetched"]


def test_an_image_named_by_a_token_is_marked_not_fetched_at_warm_up(tmp_path: Path) -> None:
    from neuron_constructs.tools.planning import plan_paths

    (shared,) = plan_paths(_written(_two_stacks(image=""), tmp_path)).fetches
    assert len(shared.not_prefetched) == 1 and ".dkr.ecr." in shared.not_prefetched[0]
    assert "s3://team-models/llama/neuron-tp2" not in shared.not_prefetched


def test_the_template_check_counts_what_another_stack_publishes_against_the_root_volume(
    split: dict[str, Any],
) -> None:
    """GIVEN the platform's capacity and the model's published needs WHEN the template check reads both THEN the
    warm-up's room counts the model's image (8 GiB, 24 unpacked) and prefix (20 GiB), as the synth-time check did."""
    from neuron_constructs.checks.warm_up import capacity_fetches
    from neuron_constructs.tools.planning import app_model

    t = app_model({n: split[n.lower()].template for n in ("Platform", "Model")})
    (capacity,) = [c for c in t.capacities.values() if c.kind == "auto-scaling"]
    fetched = {(f.what, f.size_gib) for f in capacity_fetches(t, capacity, warm_up=True)}
    assert {(PRIVATE_IMAGE, 8.0), ("s3://team-models/llama/neuron-tp2", 20.0)} <= fetched


# ----------------------------------------------------------------- who may write under the path ---

PLATFORM_ROLE = "arn:aws:iam::111122223333:role/platform-deploy"
MODEL_ROLE = "arn:aws:iam::111122223333:role/model-deploy"


def test_model_deploying_roles_may_write_the_warm_up_path_and_never_the_platform_s_values() -> None:
    """GIVEN a platform deployed by one role and model stacks by another WHEN the write protection is made THEN every
    other principal is denied every write under the prefix, and the model role is denied the levels consumers read
    (cluster, vpc, load-balancer) but not the warm-up path."""
    from neuron_constructs.compute.published import WRITE_ACTIONS, warm_up_write_protection

    everyone, platform_values = (
        s.to_statement_json()
        for s in warm_up_write_protection(PREFIX, writers=[PLATFORM_ROLE], model_writers=[MODEL_ROLE])
    )
    assert everyone["Effect"] == "Deny" and everyone["Resource"] == f"arn:aws:ssm:*:*:parameter{PREFIX}/*"
    assert everyone["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [PLATFORM_ROLE, MODEL_ROLE]}}
    assert platform_values["Effect"] == "Deny" and sorted(platform_values["Action"]) == sorted(WRITE_ACTIONS)
    assert platform_values["Condition"] == {"ArnLike": {"aws:PrincipalArn": [MODEL_ROLE]}}
    assert sorted(platform_values["Resource"]) == [
        f"arn:aws:ssm:*:*:parameter{PREFIX}/{level}/*" for level in ("cluster", "load-balancer", "vpc")
    ]
    assert not any("warm-up" in r for r in platform_values["Resource"])


@pytest.mark.parametrize("model_writers", [[], ["arn:aws:iam::111122223333:role/*"], ["model-deploy"]])
def test_model_writers_that_are_not_role_arns_are_refused(model_writers: list[str]) -> None:
    from neuron_constructs import NeuronConfigurationError
    from neuron_constructs.compute.published import warm_up_write_protection

    with pytest.raises(NeuronConfigurationError, match=r"warm_up_write_protection.*model_writers.*NEURON149"):
        warm_up_write_protection(PREFIX, writers=[PLATFORM_ROLE], model_writers=model_writers)


def test_a_stack_publishes_each_need_once_and_what_one_parameter_cannot_hold_warns() -> None:
    """GIVEN a model stack whose containers name one image twice (two sizes) and more images than one value holds
    WHEN its needs are gathered THEN the image is published once, at most 64 needs are, and each one left out is
    named for NEURON124 with the bound."""
    from neuron_constructs.compute.warm_up_needs import StackNeeds

    needs = StackNeeds(Stack(App(analytics_reporting=False), "Model"))
    needs.add_image("Model/A/model", PRIVATE_IMAGE, 8)
    needs.add_image("Model/B/model", PRIVATE_IMAGE, 9)
    assert needs.needs == [Need("image", PRIVATE_IMAGE, 8)]
    assert len(needs.repositories) == 1
    for index in range(MOST_ENTRIES + 2):
        needs.add_image(f"Model/T{index}/model", f"registry.example/m{index}:1", None)
    assert len(needs.needs) == MOST_ENTRIES
    assert len(needs.skipped) == 3
    assert needs.skipped[0].endswith("(beyond what one parameter holds: 64 needs, 4 KB)")
    assert len(needs_value(needs.needs)) <= 4096


def test_the_model_stack_s_grants_leave_no_open_aws_solutions_finding(tmp_path: Path) -> None:
    """The model stack's registry token ``*`` is acknowledged with its reason; its pulls and prefix are scoped."""
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    app = App(
        analytics_reporting=False, outdir=str(tmp_path), context={"@aws-cdk/core:failSynthOnValidationErrors": False}
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    platform = Stack(app, "Platform")
    cluster = NeuronCluster(platform, "C", vpc=imported_vpc(platform))
    capacity = cluster.add_ec2_capacity("Neuron", instance_type="inf2.xlarge", warm_pool=WarmPool())
    cluster.publish(PREFIX)
    model = Stack(app, "Model")
    task = _model_task(
        model, ecs.ContainerImage.from_registry(PRIVATE_IMAGE), s3.Bucket.from_bucket_name(model, "M", "team-models")
    )
    NeuronService(model, "Llama", cluster=cluster, task_definition=task, capacity=capacity)
    assert any("WarmUpNeeds" in k for k in app.synth().get_stack_by_name("Model").template["Resources"])
    report = json.loads((tmp_path / "validation-report.json").read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    open_paths = [
        (v["ruleName"], c["constructPath"])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
        if "WarmUpNeeds" in c["constructPath"] or "Platform/C/Neuron" in c["constructPath"]
    ]
    assert open_paths == []
