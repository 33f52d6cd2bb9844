"""The Neuron driver and the image's runtime match, both ways: the sourced release table, the AMI driver it derives,
the refusal of a pinned AMI whose driver an image's runtime does not run on (NEURON088), the opt-in start check in
the Neuron container (run in dash against fake /sys files), and the catalog against the installed botocore."""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import subprocess
import typing
from pathlib import Path

import botocore.session
import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match, Template
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_constructs import ManagedNeuronTaskDefinition, ManualNeuronTaskDefinition, NeuronConfigurationError
from neuron_constructs.compute.driver_check import (
    DRIVER_CHECK_EXIT_CODE,
    DRIVER_CHECK_SCRIPT,
    driver_check_environment,
    image_sdk,
)
from neuron_constructs.knowledge import catalog, container_images, neuron_releases
from neuron_constructs.knowledge.container_images import (
    EMBEDDING,
    IMAGES,
    INF1_INFERENCE,
    NEEDS_AMI_BEFORE,
    PYTORCH_INFERENCE,
    PYTORCH_TRAINING,
    VLLM,
    VLLM_TRN2,
)
from neuron_constructs.knowledge.neuron_releases import (
    NEURON_RELEASES,
    ami_driver,
    ami_driver_conflict,
    driver_range,
    parse_ami_release,
    release,
)

DASH = shutil.which("dash")

# ------------------------------------------------------------------ the table ---


def test_releases_are_in_order_each_with_a_source_and_versions_never_go_back() -> None:
    sdks = [tuple(int(p) for p in r.sdk.split(".")) for r in NEURON_RELEASES]
    assert sdks == sorted(sdks) and len(set(sdks)) == len(sdks)
    dates = [r.date for r in NEURON_RELEASES if r.date is not None]
    assert dates == sorted(dates)
    for field in ("runtime_version", "driver_version"):
        versions = [getattr(r, field) for r in NEURON_RELEASES if getattr(r, field) is not None]
        assert versions == sorted(versions), field
    assert all(r.source for r in NEURON_RELEASES)


def test_every_neuron_image_has_its_sdk_release_in_the_table() -> None:
    for name, image in IMAGES.items():
        if image.neuron_sdk is not None:
            assert release(image.neuron_sdk) is not None, name
            assert image.tag_sdk == image.neuron_sdk, name


def test_the_release_notes_bounds_cut_both_ways() -> None:
    # Runtime 2.32 (SDK 2.30.0) does not run on driver 2.26 or older; driver 2.29 requires runtime 2.33 or later.
    training = driver_range("2.30.0")
    assert training is not None and (training.oldest, training.newest) == ((2, 27), (2, 28))
    assert not training.admits((2, 26)) and training.admits((2, 27)) and not training.admits((2, 29))
    vllm = driver_range("2.31.1")
    assert vllm is not None and (vllm.oldest, vllm.newest) == ((2, 27), None)
    embedding = driver_range("2.20.0")
    assert embedding is not None and (embedding.oldest, embedding.newest) == (None, (2, 28))
    assert driver_range("2.34.0") is None, "2.34.0's runtime is in no source found: unknown, not 'any'"


def test_inf1_left_the_runtime_in_sdk_2_21_0_whose_runtime_is_2_23() -> None:
    removed, last = release(neuron_releases.INF1_REMOVED_SDK), release(neuron_releases.INF1_LAST_SDK)
    assert removed is not None and removed.runtime_version == (2, 23) and removed.date == datetime.date(2024, 12, 20)
    assert last is not None and last.runtime_version == (2, 22)
    assert INF1_INFERENCE.neuron_sdk == neuron_releases.INF1_LAST_SDK
    assert neuron_releases.INF1_AMI_DRIVER == (2, 21)


def test_the_inf1_driver_is_stated_from_both_sources_and_the_one_the_ami_installs_is_assumed() -> None:
    """GIVEN Neuron's correction (the last driver it supports on Inf1 is 2.24) and the ECS AMI's scripts (it installs
    2.21 on Inf1) WHEN the library derives an Inf1 instance's driver THEN it is 2.21, what the instance loads, and both
    numbers keep their sources."""
    assert neuron_releases.INF1_LAST_SUPPORTED_DRIVER == (2, 24)
    assert neuron_releases.INF1_AMI_DRIVER < neuron_releases.INF1_LAST_SUPPORTED_DRIVER
    correction = neuron_releases.INF1_DRIVER_CORRECTION_SOURCE
    assert "announce-correction-neuron-driver-support-inf1" in correction and "March 12, 2026" in correction
    assert "aws-neuronx-dkms-2.21.*" in neuron_releases.ECS_AMI_BUILD_SOURCE
    assert ami_driver("2023.0.20261113", "inf1").drivers == (neuron_releases.INF1_AMI_DRIVER,)
    assert "2.24" in (neuron_releases.__doc__ or "") and "The library assumes 2.21" in (neuron_releases.__doc__ or "")


def test_support_ends_for_a_family_by_release_or_by_component() -> None:
    """GIVEN the ends of support: Inf1 from SDK 2.21.0, NxD Inference on Trn2 and Trn3 from SDK 2.34.0 for every
    release WHEN a release is asked for a family THEN the ended combinations answer with their source."""
    unsupported, nxdi = neuron_releases.unsupported, (neuron_releases.NXDI,)
    assert unsupported("2.20.2", "inf1") is None
    inf1 = unsupported("2.21.0", "inf1")
    assert inf1 is not None and "not supported on inf1 from Neuron 2.21.0" in inf1
    for family in ("trn2", "trn3"):
        problem = unsupported("2.31.1", family, nxdi)
        assert problem is not None and "NxD Inference of Neuron SDK 2.31.1" in problem
        assert "announce-no-support-nxdi-nxd-core-inference-trn" in problem
        assert unsupported("2.31.1", family) is None, "only the component's support ended"
        assert unsupported("2.31.1", family, nxdi, current="2.33.1") is None, "before 2.34.0 it was supported"
    assert unsupported("2.31.1", "inf2", nxdi) is None and unsupported("2.31.1", "trn1", nxdi) is None


# ------------------------------------------------------------ the AMI's driver ---


def test_an_ami_carries_the_newest_driver_released_before_its_date() -> None:
    assert ami_driver("2023.0.20261104").drivers == ((2, 31),)  # SDK 2.33.0, October 19, 2026
    assert ami_driver("2023.0.20260601").drivers == ((2, 28),)


def test_sdk_2_33_1_is_in_the_table_dated_with_its_driver_in_no_source() -> None:
    """GIVEN SDK 2.33.1 (November 11, 2026, bug fixes of 2.33.0), whose runtime and driver versions no source gives
    WHEN an AMI is dated after it THEN its driver is a floor, the newest known one (2.31), never a guessed number."""
    row = release("2.33.1")
    assert row is not None and row.date is not None and row.date.isoformat() == "2026-11-11"
    assert row.runtime is None and row.driver is None and "releases/tag/v2.33.1" in row.source
    assert driver_range("2.33.1") is None
    derived = ami_driver("2023.0.20261113")
    assert derived.drivers == () and derived.unknown_after == "2.33.1" and derived.describe() == "2.31 or later"
    problem = ami_driver_conflict("2023.0.20261113", "2.30.0")
    assert problem is not None and "Neuron 2.33.1's driver is in no source found" in problem
    assert ami_driver_conflict("2023.0.20261113", "2.33.0") is None


def test_a_patch_release_that_keeps_the_driver_s_minor_adds_no_older_driver() -> None:
    """GIVEN SDK 2.28.1 (March 12, 2026) with driver 2.26, as SDK 2.28.0 (February 26) WHEN an AMI is dated two days
    after it THEN it carries 2.26, not "2.26 or 2.25": the release a week before it already shipped 2.26."""
    assert ami_driver("2023.0.20260314").drivers == ((2, 26),)


def test_an_ami_built_days_after_a_driver_release_may_carry_either_driver() -> None:
    assert ami_driver("2023.0.20261022").drivers == ((2, 31), (2, 30))


def test_an_ami_after_a_release_whose_driver_is_unknown_carries_at_least_the_newest_known_driver() -> None:
    derived = ami_driver("2023.0.20261202")
    assert derived.drivers == () and derived.unknown_after == "2.34.0" and derived.floor == (2, 31)
    assert derived.describe() == "2.31 or later"


def test_a_december_2026_ami_is_refused_under_a_runtime_whose_newest_driver_is_below_the_floor() -> None:
    problem = ami_driver_conflict("2023.0.20261202", "2.30.0")
    assert problem is not None and "driver 2.31 or later" in problem and "driver 2.27 to 2.28" in problem
    assert "Neuron 2.34.0's driver is in no source found" in problem
    # A runtime with no newest bound may run on whatever newer driver the AMI carries: not refused.
    assert ami_driver_conflict("2023.0.20261202", "2.33.0") is None
    assert ami_driver_conflict("2023.0.20261202", "2.31.1") is None


def test_an_ami_of_2025_carries_the_driver_of_the_sdk_2_22_to_2_27_releases() -> None:
    # SDK 2.23.0 (May 19, 2025) shipped driver 2.21; SDK 2.24.0 (June 24, 2025) driver 2.22.
    assert ami_driver("2023.0.20250601").drivers == ((2, 21),)
    assert ami_driver("2023.0.20250626").drivers == ((2, 22), (2, 21))
    assert ami_driver("2023.0.20260110").drivers == ((2, 25),)  # SDK 2.27.0, December 19, 2025
    problem = ami_driver_conflict("2023.0.20250601", "2.31.1")
    assert problem is not None and "driver 2.21 (" in problem


def test_an_ami_older_than_the_table_s_full_coverage_states_no_driver_number() -> None:
    # Before SDK 2.21.0 (December 20, 2024) the table does not follow every release: no number, only a bound.
    assert neuron_releases.COVERED_FROM == "2.21.0"
    derived = ami_driver("2023.0.20241201")
    assert derived.drivers == () and derived.older_than == (2, 19) and derived.describe() == "older than 2.19"
    problem = ami_driver_conflict("2023.0.20241201", "2.31.1")
    assert problem is not None and "driver older than 2.19" in problem and "2.18" not in problem
    assert ami_driver_conflict("2023.0.20241201", "2.20.0") is None  # 2.28 or earlier admits it


def test_an_ami_days_after_the_first_covered_release_carries_that_driver_or_an_older_one() -> None:
    derived = ami_driver("2023.0.20241222")
    assert derived.drivers == () and derived.at_most == (2, 19) and derived.describe() == "2.19 or older"
    assert ami_driver_conflict("2023.0.20241222", "2.31.1") is not None
    assert ami_driver_conflict("2023.0.20241222", "2.20.0") is None


def test_on_inf1_the_ami_runs_the_2_21_driver_it_installs_at_boot() -> None:
    assert ami_driver("2023.0.20261113", "inf1").drivers == ((2, 21),)
    assert ami_driver("2023.0.20260108", "inf1").drivers == ((2, 21),)
    assert ami_driver_conflict("2023.0.20261113", INF1_INFERENCE.neuron_sdk or "", "inf1") is None
    # Before the first AMI release with the downgrade service, Inf1 runs the AMI's own driver.
    assert ami_driver("2023.0.20251229", "inf1").drivers == ((2, 25),)
    assert neuron_releases.INF1_DOWNGRADE_FROM.isoformat() == "2026-01-08"


@pytest.mark.parametrize("text", ["2023.0.2026111", "2023.0.20261332", "al2023-ami-ecs-neuron", "", "2023.1.20261113"])
def test_a_string_that_is_no_ami_release_is_refused_with_a_sentence(text: str) -> None:
    with pytest.raises(ValueError, match=r"AMI release|calendar date"):
        parse_ami_release(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_as_an_ami_release_or_raises_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_ami_release(text)


# ------------------------------------------------------------------ NEURON088 ---


def conflict(ami: str, image: container_images.NeuronImage) -> str | None:
    return ami_driver_conflict(ami, image.neuron_sdk) if image.neuron_sdk else None


def test_a_pinned_ami_whose_driver_the_image_does_not_run_on_is_refused() -> None:
    problem = conflict("2023.0.20261113", PYTORCH_TRAINING)
    assert problem is not None and "driver 2.31 or later (" in problem and "driver 2.27 to 2.28" in problem


def test_a_pinned_ami_whose_driver_the_image_runs_on_passes() -> None:
    for image in (VLLM, VLLM_TRN2, PYTORCH_INFERENCE):
        assert conflict("2023.0.20261113", image) is None
    assert conflict("2023.0.20260601", PYTORCH_TRAINING) is None


def test_an_old_driver_under_a_new_runtime_is_refused_too() -> None:
    # An AMI of March 2026 (driver 2.26) under runtime 2.33 (the vLLM 0.16 image, SDK 2.31.1).
    problem = conflict("2023.0.20260320", VLLM)
    assert problem is not None and "driver 2.26 (" in problem


def test_only_what_every_possible_driver_refuses_is_refused() -> None:
    # Three days after driver 2.29 (July 7, 2026): the AMI may still carry 2.28, which the training image runs on.
    assert ami_driver("2023.0.20260710").drivers == ((2, 29), (2, 28))
    assert conflict("2023.0.20260710", PYTORCH_TRAINING) is None
    # From seven days after July 7 the AMI surely carries 2.29: refused.
    assert conflict("2023.0.20260713", PYTORCH_TRAINING) is None
    assert conflict("2023.0.20260714", PYTORCH_TRAINING) is not None


def test_images_without_an_sdk_release_are_never_refused() -> None:
    assert all(image.neuron_sdk is None for image in container_images.LIBRARY_IMAGES.values())


# ------------------------------------------------- the library's own images ---


def test_every_image_runs_on_the_newest_driver_or_states_the_ami_it_needs() -> None:
    newest = neuron_releases.newest_driver()
    assert newest.driver_version is not None
    for name, image in IMAGES.items():
        allowed = driver_range(image.neuron_sdk) if image.neuron_sdk else None
        if allowed is None or name == "INF1_INFERENCE":
            continue
        if name in NEEDS_AMI_BEFORE:
            before = datetime.date.fromisoformat(NEEDS_AMI_BEFORE[name])
            refused_on = f"2023.0.{before:%Y%m%d}"
            good = f"2023.0.{before - datetime.timedelta(days=neuron_releases.AMBIGUITY_DAYS):%Y%m%d}"
            assert conflict(good, image) is None, name
            later = f"2023.0.{before + datetime.timedelta(days=neuron_releases.AMBIGUITY_DAYS):%Y%m%d}"
            assert conflict(later, image) is not None, (name, refused_on)
        else:
            assert allowed.admits(newest.driver_version), name
    assert set(NEEDS_AMI_BEFORE) == {"PYTORCH_TRAINING", "EMBEDDING"}
    assert EMBEDDING.neuron_sdk == "2.20.0"


def test_the_trn2_vllm_image_is_sdk_2_33_for_trn2_and_trn3_and_the_0_16_image_stays_for_inf2_and_trn1() -> None:
    assert VLLM_TRN2.uri == (
        "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
    )
    assert VLLM_TRN2.instance_families == ("trn2", "trn3")
    assert {"inf2", "trn1"} <= set(VLLM.instance_families) and VLLM.framework_version == "0.16.0"


# ------------------------------------------------------------ the start check ---


def run_check(
    tmp_path: Path, version: bytes | None, oldest: str = "2.27", newest: str = "2.28"
) -> tuple[int, str, str]:
    assert DASH is not None
    if version is not None:
        (tmp_path / "sys/module/neuron").mkdir(parents=True, exist_ok=True)
        (tmp_path / "sys/module/neuron/version").write_bytes(version)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NEURON_DRIVER_CHECK_ROOT": str(tmp_path),
        "NEURON_DRIVER_CHECK_OLDEST": oldest,
        "NEURON_DRIVER_CHECK_NEWEST": newest,
        "NEURON_DRIVER_CHECK_RUNTIME": "Neuron SDK 2.30.0's runtime 2.32.31.0",
        "NEURON_DRIVER_CHECK_CONTAINER": "trainer",
        "NEURON_DRIVER_CHECK_AMI_BEFORE": "2026-07-07",
        "NEURON_DRIVER_CHECK_AMI_FROM": "2026-04-16",
    }
    done = subprocess.run(
        [DASH, "-c", DRIVER_CHECK_SCRIPT, "neuron-driver-check", "echo", "model starts", "--port", "8080"],
        env=environment,
        capture_output=True,
        timeout=10,
        check=False,
    )
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


pytestmark_dash = pytest.mark.skipif(DASH is None, reason="dash is not installed")


@pytestmark_dash
@pytest.mark.parametrize("version", [b"2.27.4.0\n", b"2.28.0.0\n", b"2.28\n", b"2.27.4.0"])
def test_a_driver_inside_the_range_runs_the_command_with_its_arguments(tmp_path: Path, version: bytes) -> None:
    code, out, err = run_check(tmp_path, version)
    assert (code, out, err) == (0, "model starts --port 8080\n", "")


@pytestmark_dash
@pytest.mark.parametrize(
    ("version", "says"),
    [
        (b"2.31.7.0\n", "host Neuron driver 2.31 is newer than 2.28"),
        (b"2.29.0.0\n", "host Neuron driver 2.29 is newer than 2.28"),
        (b"2.26.10.0\n", "host Neuron driver 2.26 is older than 2.27"),
        (b"3.0.0.0\n", "host Neuron driver 3.0 is newer than 2.28"),
    ],
)
def test_a_driver_outside_the_range_stops_the_container_with_one_line(
    tmp_path: Path, version: bytes, says: str
) -> None:
    code, out, err = run_check(tmp_path, version)
    assert code == DRIVER_CHECK_EXIT_CODE and out == ""
    assert err.count("\n") == 1 and err.startswith("neuron-driver-check: container trainer (NEURON088): ")
    assert says in err and "Neuron SDK 2.30.0's runtime 2.32.31.0" in err
    assert "ECS will keep restarting this task, and it stops here on every host with this driver" in err
    if "newer" in says:
        assert (
            "pin NeuronAmi.release('2023.0.YYYYMMDD') dated before 2026-07-07 on its capacity, or move the image" in err
        )
    else:
        assert "pin NeuronAmi.release('2023.0.YYYYMMDD') dated 2026-04-16 or later on its capacity" in err


@pytestmark_dash
def test_without_a_known_ami_date_the_fix_still_reads_as_a_sentence(tmp_path: Path) -> None:
    (tmp_path / "sys/module/neuron").mkdir(parents=True)
    (tmp_path / "sys/module/neuron/version").write_bytes(b"2.26.0.0\n")
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NEURON_DRIVER_CHECK_ROOT": str(tmp_path)}
    environment["NEURON_DRIVER_CHECK_OLDEST"] = "2.27"
    done = subprocess.run(
        [DASH or "dash", "-c", DRIVER_CHECK_SCRIPT, "neuron-driver-check", "true"],
        env=environment,
        capture_output=True,
        timeout=10,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == DRIVER_CHECK_EXIT_CODE and err.count("\n") == 1
    assert "container ? (NEURON088)" in err and "dated after this host's AMI on its capacity" in err


def test_the_start_check_is_given_its_container_and_the_ami_dates_of_its_fix() -> None:
    environment = driver_check_environment("2.30.0", "trainer")
    assert environment is not None and environment["NEURON_DRIVER_CHECK_CONTAINER"] == "trainer"
    # Driver 2.29, the first newer than 2.28, came with Neuron 2.31.0 (July 7, 2026); driver 2.27 with Neuron 2.29.0
    # (April 9, 2026), surely in an AMI from 7 days later.
    assert environment["NEURON_DRIVER_CHECK_AMI_BEFORE"] == "2026-07-07"
    assert environment["NEURON_DRIVER_CHECK_AMI_FROM"] == "2026-04-16"
    assert ami_driver_conflict("2023.0.20260706", "2.30.0") is None
    assert ami_driver_conflict("2023.0.20260416", "2.30.0") is None
    assert ami_driver_conflict("2023.0.20260415", "2.30.0") is None  # may still carry 2.26 or 2.27
    assert ami_driver("2023.0.20260415").drivers == ((2, 27), (2, 26))
    open_ended = driver_check_environment("2.33.0", "model")
    assert open_ended is not None and open_ended["NEURON_DRIVER_CHECK_AMI_BEFORE"] == ""


@pytestmark_dash
def test_a_host_without_the_driver_is_said_so(tmp_path: Path) -> None:
    code, out, err = run_check(tmp_path, None)
    assert code == DRIVER_CHECK_EXIT_CODE and out == ""
    assert err.count("\n") == 1 and "is missing: the Neuron driver (aws-neuronx-dkms) is not loaded" in err


@pytestmark_dash
def test_open_bounds_admit_any_driver_on_that_side(tmp_path: Path) -> None:
    assert run_check(tmp_path, b"9.99.0.0\n", newest="")[0] == 0
    assert run_check(tmp_path, b"1.0\n", oldest="", newest="2.28")[0] == 0


@pytestmark_dash
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_version_file_answers_with_start_or_one_line(tmp_path: Path, content: bytes) -> None:
    code, out, err = run_check(tmp_path, content)
    if code == 0:
        parsed = neuron_releases.parse_driver_version(content.decode(errors="replace"))
        assert parsed is not None and (2, 27) <= parsed <= (2, 28) and out == "model starts --port 8080\n"
    else:
        assert code == DRIVER_CHECK_EXIT_CODE and out == "" and err.count("\n") == 1
        assert err.startswith("neuron-driver-check: ")


# ---------------------------------------------- driver_check on the container ---


def containers(stack: Stack) -> list[dict[str, typing.Any]]:
    template = Template.from_stack(stack).to_json()
    (task,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    return task["Properties"]["ContainerDefinitions"]  # type: ignore[no-any-return]


def test_driver_check_runs_the_script_then_the_stated_entry_point_and_command() -> None:
    stack = Stack(App(), "S")
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=4096, memory_mib=8192)
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(VLLM.uri),
        entry_point=["python", "/usr/local/bin/vllm_entrypoint.py"],
        command=["vllm", "serve"],
        driver_check=True,
    )
    (container,) = containers(stack)
    assert container["EntryPoint"] == ["/bin/sh", "-c", DRIVER_CHECK_SCRIPT, "neuron-driver-check"]
    assert container["Command"] == ["python", "/usr/local/bin/vllm_entrypoint.py", "vllm", "serve"]
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert environment["NEURON_DRIVER_CHECK_OLDEST"] == "2.27"
    assert environment["NEURON_DRIVER_CHECK_NEWEST"] == ""
    assert environment["NEURON_DRIVER_CHECK_RUNTIME"] == "Neuron SDK 2.31.1's runtime 2.33.10.0"
    assert environment["NEURON_DRIVER_CHECK_CONTAINER"] == "model"


def test_without_driver_check_the_container_is_unchanged() -> None:
    stack = Stack(App(), "S")
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM.uri), command=["vllm", "serve"])
    (container,) = containers(stack)
    assert "EntryPoint" not in container and container["Command"] == ["vllm", "serve"]


def test_driver_check_without_an_entry_point_is_refused() -> None:
    task = ManagedNeuronTaskDefinition(Stack(App(), "S"), "T", cpu=4096, memory_mib=8192)
    with pytest.raises(
        NeuronConfigurationError, match=r"S/T/model: driver_check is set without entry_point.*NEURON089"
    ):
        task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM.uri), driver_check=True)


def test_driver_check_on_an_image_whose_tag_names_no_sdk_asks_for_the_release() -> None:
    task = ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="inf2.xlarge", memory_mib=8192)
    image = ecs.ContainerImage.from_registry("123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:v3")
    with pytest.raises(NeuronConfigurationError, match=r"NEURON089.*driver_check='<the image's Neuron SDK release>'"):
        task.add_neuron_container("model", image=image, entry_point=["/serve"], driver_check=True)


def test_driver_check_of_sdk_2_33_1_whose_runtime_no_source_gives_is_refused() -> None:
    """GIVEN SDK 2.33.1, in the table without a runtime WHEN a driver check is asked for it THEN it is refused, naming
    the releases whose runtime the table knows."""
    task = ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="trn2.3xlarge", memory_mib=8192)
    image = ecs.ContainerImage.from_registry("123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:v3")
    refused = r"Neuron SDK 2\.33\.1's runtime version is in no source.*NEURON089.*one of .*2\.33\.0$"
    with pytest.raises(NeuronConfigurationError, match=refused):
        task.add_neuron_container("model", image=image, entry_point=["/serve"], driver_check="2.33.1")


def test_driver_check_takes_the_sdk_release_when_the_tag_has_none() -> None:
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn2.3xlarge", memory_mib=8192)
    image = ecs.ContainerImage.from_registry("123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:v3")
    task.add_neuron_container("model", image=image, entry_point=["/serve"], driver_check="2.33.0")
    environment = {e["Name"]: e["Value"] for e in containers(stack)[0]["Environment"]}
    assert environment["NEURON_DRIVER_CHECK_RUNTIME"] == "Neuron SDK 2.33.0's runtime 2.35.30.0"


def test_driver_check_on_an_image_the_newest_driver_refuses_warns() -> None:
    stack = Stack(App(), "S")
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=4096, memory_mib=8192)
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri),
        entry_point=["torchrun"],
        driver_check=True,
    )
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp(r"driver 2.27 to 2.28.*NEURON126"))


def test_the_sdk_release_is_read_from_a_dlc_tag() -> None:
    assert image_sdk(VLLM_TRN2.uri) == "2.33.0" and image_sdk(EMBEDDING.uri) == "2.20.0"
    assert image_sdk("public.ecr.aws/docker/library/busybox:1.37") is None


# ----------------------------------------------------- the catalog vs botocore ---


def test_the_catalog_knows_every_neuron_instance_type_and_accelerator_botocore_names() -> None:
    """Fails the day the installed botocore names a Neuron type or accelerator the catalog lacks (Trn3 included)."""
    model = botocore.session.get_session().get_service_model("ec2")
    types = {t for t in model.shape_for("InstanceType").enum if t.startswith(("inf", "trn"))}
    known = {entry.name for entry in catalog.NeuronInstanceType.all()}
    assert types, "botocore's InstanceType enum lists Neuron types"
    assert types <= known, (
        f"botocore {botocore.__version__} names Neuron types the catalog lacks: {sorted(types - known)}"
    )
    accelerators = {a for a in model.shape_for("AcceleratorName").enum if a.startswith(("inferentia", "trainium"))}
    assert accelerators <= set(typing.get_args(catalog.Accelerator)), sorted(accelerators)


def test_the_docs_table_of_images_and_drivers_is_the_tables() -> None:
    text = (Path(__file__).parent.parent / "docs" / "catalog.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `") and "SDK" not in line.split("|")[1]]
    stated = {line.split("|")[1].strip().split("`")[1]: line.split("|")[3].strip() for line in rows}
    for name in ("VLLM_TRN2", "VLLM", "PYTORCH_INFERENCE", "PYTORCH_TRAINING", "EMBEDDING", "INF1_INFERENCE"):
        image = IMAGES[name]
        allowed = driver_range(image.neuron_sdk or "")
        assert allowed is not None and f"driver {stated[name]}" == allowed.describe(), name
    for name, before in NEEDS_AMI_BEFORE.items():
        assert f"needs an AMI built before {before}" in text.split(f"| `{name}`", 1)[1].split("\n", 1)[0]


@settings(max_examples=examples(300, loop=60))
@given(st.dates(min_value=datetime.date(2024, 1, 1), max_value=datetime.date(2027, 12, 31)))
def test_a_derived_driver_is_a_released_one_or_a_bound_and_refusals_follow_every_driver_it_allows(
    day: datetime.date,
) -> None:
    derived = ami_driver(f"2023.0.{day:%Y%m%d}")
    covered = NEURON_RELEASES[[r.sdk for r in NEURON_RELEASES].index(neuron_releases.COVERED_FROM) :]
    released = [r for r in covered if r.date is not None and r.date <= day]
    known = [r.driver_version for r in released if r.driver_version is not None]
    # The drivers this AMI may carry, as far as the table tells: any version from 2.0 to 5.99 that fits.
    if not released:
        assert derived.drivers == () and derived.older_than == covered[0].driver_version
        possible = [(2, minor) for minor in range(covered[0].driver_version[1])]  # type: ignore[index]
    elif released[-1].driver_version is None:
        assert derived.drivers == () and derived.unknown_after == released[-1].sdk and derived.floor in known
        assert derived.floor is not None and derived.describe() == "{}.{} or later".format(*derived.floor)
        possible = [(2, minor) for minor in range(derived.floor[1], 100)] + [(3, 0), (5, 99)]
    elif derived.at_most is not None:
        assert derived.drivers == () and derived.at_most == known[0] and len(set(known)) == 1
        possible = [(2, minor) for minor in range(derived.at_most[1] + 1)]
    else:
        assert derived.drivers[0] == released[-1].driver_version and set(derived.drivers) <= set(known)
        assert len(derived.drivers) == 1 or (day - released[-1].date).days < neuron_releases.AMBIGUITY_DAYS  # type: ignore[operator]
        possible = list(derived.drivers)
    for sdk in ("2.20.0", "2.30.0", "2.31.1", "2.33.0"):
        allowed = driver_range(sdk)
        assert allowed is not None
        refused = ami_driver_conflict(derived.ami_release, sdk) is not None
        assert refused == (not any(allowed.admits(d) for d in possible)), (sdk, derived)


def test_a_service_on_a_pinned_ami_runs_an_image_whose_runtime_runs_on_its_driver() -> None:
    """NEURON088 where the pinned release and the service's image meet: the SDK 2.33 vLLM image runs on the
    2023.0.20261113 AMI's driver; the SDK 2.30 training image on the same capacity is refused (test_rules)."""
    from neuron_constructs import NeuronAmi, NeuronCluster, NeuronService

    stack = Stack(App(analytics_reporting=False), "Pinned")
    cluster = NeuronCluster(stack, "C")
    cluster.add_ec2_capacity(
        "Trn2", instance_type="trn2.48xlarge", max_capacity=2, machine_image=NeuronAmi.release("2023.0.20261113")
    )
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM_TRN2.uri))
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task)  # no NEURON088
    assert image_sdk(VLLM_TRN2.uri) == "2.33.0"
