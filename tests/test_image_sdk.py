"""An image's Neuron SDK release, stated where the image is given (``neuron_sdk=``) for an image whose tag does not
name it: the driver checks read it (NEURON088), refuse a release the table does not know or the tag contradicts
(NEURON146), and an image of unknown release on a pinned AMI warns that the check could not run (NEURON147)."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    SlicedNeuronService,
)
from neuron_constructs.knowledge.container_images import PYTORCH_TRAINING, VLLM_TRN2

TEAM_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/llm-server:v18"
PINNED = "2023.0.20261113"  # carries driver 2.31: SDK 2.30.0's runtime does not run on it, SDK 2.33.0's does


def _service(neuron_sdk: str | None, image: str = TEAM_IMAGE, ami: NeuronAmi | None = None) -> Stack:
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Trn1", instance_type="trn1.32xlarge", max_capacity=2, machine_image=ami or NeuronAmi.release(PINNED)
    )
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn1.32xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(image), neuron_sdk=neuron_sdk)
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task)
    return stack


def _warnings(stack: Stack, rule_id: str) -> list[object]:
    return Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(rule_id))


def test_a_stated_release_lets_the_pinned_ami_check_refuse_a_team_image() -> None:
    """GIVEN a team image whose tag names no release, stated as SDK 2.30.0 WHEN it runs on an AMI pinned to a driver
    that runtime does not run on THEN NEURON088 refuses it, as it would a DLC tagged -sdk2.30.0-."""
    with pytest.raises(NeuronConfigurationError, match=r"S/Svc: .*team/llm-server:v18.*driver 2\.31.*NEURON088"):
        _service("2.30.0")


def test_a_stated_release_the_driver_runs_passes_without_a_warning() -> None:
    stack = _service("2.33.0")
    assert not _warnings(stack, "NEURON147") and not _warnings(stack, "NEURON088")


def test_an_image_of_unknown_release_on_a_pinned_ami_warns_that_the_check_could_not_run() -> None:
    """GIVEN a team image with no release in its tag and none stated WHEN it runs on a pinned AMI THEN NEURON147 says
    the driver check could not run, with the AMI, and how to state the release."""
    (warning,) = _warnings(_service(None), "NEURON147")
    assert "2023.0.20261113 was not checked" in str(warning) and "neuron_sdk='2.31.1'" in str(warning)


def test_an_image_of_unknown_release_warns_only_where_the_check_would_run() -> None:
    """The recommended AMI (NEURON125/127's matter, not a pinned driver) and a tagged image give no NEURON147."""
    assert not _warnings(_service(None, ami=NeuronAmi.recommended()), "NEURON147")
    assert not _warnings(_service(None, image=VLLM_TRN2.uri), "NEURON147")


def test_a_release_the_table_does_not_know_is_refused() -> None:
    with pytest.raises(
        NeuronConfigurationError, match=r"S/T/model: neuron_sdk='2\.99\.0' is not a Neuron SDK .*NEURON146"
    ):
        _service("2.99.0")


def test_a_stated_release_the_tag_contradicts_is_refused() -> None:
    with pytest.raises(
        NeuronConfigurationError,
        match=r"neuron_sdk='2\.33\.0', but the image's tag names Neuron SDK 2\.30\.0.*NEURON146.*leave neuron_sdk out",
    ):
        _service("2.33.0", image=PYTORCH_TRAINING.uri)


def test_a_stated_release_and_a_driver_check_release_that_differ_are_refused() -> None:
    task = ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="trn1.32xlarge", memory_mib=8192)
    with pytest.raises(NeuronConfigurationError, match=r"driver_check='2\.33\.0', but .* is 2\.31\.1.*NEURON146"):
        task.add_neuron_container(
            "model",
            image=ecs.ContainerImage.from_registry(TEAM_IMAGE),
            entry_point=["/serve"],
            neuron_sdk="2.31.1",
            driver_check="2.33.0",
        )


def test_the_driver_start_check_takes_the_stated_release() -> None:
    stack = Stack(App(), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="trn2.3xlarge", memory_mib=8192)
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(TEAM_IMAGE),
        entry_point=["/serve"],
        neuron_sdk="2.33.0",
        driver_check=True,
    )
    assert task.driver_checked == {"model": "2.33.0"}


def test_a_sliced_service_s_copies_carry_the_stated_release() -> None:
    """SlicedNeuronService (and NeuronFleet.add_model, through the same options) passes neuron_sdk to every copy."""
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Trn1", instance_type="trn1.32xlarge", max_capacity=2, machine_image=NeuronAmi.release(PINNED)
    )
    with pytest.raises(NeuronConfigurationError, match=r"team/llm-server:v18.*NEURON088"):
        SlicedNeuronService(
            stack,
            "Sliced",
            cluster=cluster,
            instance_type="trn1.32xlarge",
            image=ecs.ContainerImage.from_registry(TEAM_IMAGE),
            devices_per_task=8,
            neuron_sdk="2.30.0",
        )


def test_a_training_job_of_unknown_release_on_a_pinned_ami_warns_and_a_stated_one_is_checked() -> None:
    from neuron_constructs import NeuronTrainingQueue

    stack = Stack(App(analytics_reporting=False), "S")
    queue = NeuronTrainingQueue(
        stack, "Queue", instance_type="trn1.32xlarge", max_nodes=2, machine_image=NeuronAmi.release(PINNED)
    )
    image = ecs.ContainerImage.from_registry("team/llm-server:v42")  # a job's ECR image needs a grant (NEURON062)
    queue.add_job("Job", nodes=1, image=image, command=["train"])
    assert _warnings(stack, "NEURON147")
    with pytest.raises(NeuronConfigurationError, match=r"S/Queue/Stated: .*driver 2\.31.*NEURON088"):
        queue.add_job("Stated", nodes=1, image=image, command=["train"], neuron_sdk="2.30.0")


def test_a_stated_release_is_checked_against_the_instance_family_like_a_tagged_one() -> None:
    """GIVEN a team image stated as Neuron SDK 2.21.0 on inf1 (no release from 2.21.0 supports Inf1) THEN it is refused
    like the same release named in the tag (NEURON131)."""
    from neuron_constructs import ManualNeuronTaskDefinition

    for image, stated in (("team/llm:v1", "2.21.0"), ("team/llm:x-sdk2.21.0-u", None)):
        task = ManualNeuronTaskDefinition(Stack(App(), "S"), "T", instance_type="inf1.xlarge", memory_mib=4096)
        with pytest.raises(NeuronConfigurationError, match=r"NEURON131"):
            task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(image), neuron_sdk=stated)


@pytest.mark.parametrize("release", ["2.33.1", "2.34.0"])
def test_a_release_the_table_knows_without_its_runtime_version_can_be_stated(release: str) -> None:
    """GIVEN a release the table dates but whose runtime version no source gives THEN stating it is taken (the driver
    checks say what they cannot check), not refused as unknown."""
    from neuron_constructs import ManagedNeuronTaskDefinition

    task = ManagedNeuronTaskDefinition(Stack(App(), "S"), "T", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry("team/llm:v42"), neuron_sdk=release)
    assert task.stated_sdks["model"] == release
