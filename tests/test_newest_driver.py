"""NEURON127: an image whose runtime the newest Neuron driver does not run, on capacity that follows the recommended
ECS Neuron AMI (services on Auto Scaling capacity and jobs of a training queue), and NEURON088 where the capacity pins a
release, also for an image named by an ECR repository's URI (built at deploy time). One stack for the warnings."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Acknowledgment, App, Aws, Stack, Validations
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
    NeuronTrainingQueue,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import EMBEDDING, PYTORCH_TRAINING, VLLM, VLLM_TRN2
from neuron_constructs.knowledge.neuron_releases import newest_driver, newest_driver_conflict

OLDER_AMI = "2023.0.20260701"
"""An ECS Neuron AMI release built with driver 2.28 (Neuron 2.30.0), before driver 2.29."""
NEWER_AMI = "2023.0.20261113"
"""One built with driver 2.31 or later (Neuron 2.33.0 shipped 2.31; Neuron 2.33.1's, two days before it, is in no
source)."""
WARNING = rules.IMAGE_BEHIND_NEWEST_DRIVER.id


def embedding_image(scope: Stack) -> ecs.ContainerImage:
    """The SDK 2.20 embedding image as the examples name it: from its ECR repository, a URI built at deploy time."""
    repository = ecr.Repository.from_repository_attributes(
        scope,
        "EmbeddingRepository",
        repository_name=EMBEDDING.repository,
        repository_arn=f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{EMBEDDING.ecr_account}:repository/{EMBEDDING.repository}",
    )
    return ecs.ContainerImage.from_ecr_repository(repository, EMBEDDING.tag)


def serve(
    stack: Stack,
    cluster: NeuronCluster,
    id: str,
    instance_type: str,
    image: ecs.ContainerImage,
    device: int = 0,
    **options: Any,
) -> NeuronService:
    task = ManualNeuronTaskDefinition(
        stack, f"{id}Task", instance_type=instance_type, devices=[device], memory_mib=8192
    )
    task.add_neuron_container("model", image=image, **options)
    return NeuronService(stack, id, cluster=cluster, task_definition=task)


WARNINGS = pytest.mark.xdist_group("newest_driver")  # one worker builds the module's stack once


@pytest.fixture(scope="module")
def warnings() -> dict[str, list[str]]:
    """GIVEN one stack: old images on capacity that follows the recommended AMI (one with the start check), the same
    on pinned capacity whose driver they run on, a current image on the recommended AMI, and two training queues;
    its warnings, by construct path."""
    stack = Stack(App(analytics_reporting=False), "Drivers")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Trn1", instance_type="trn1.32xlarge", max_capacity=2)
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
    cluster.add_ec2_capacity(
        "Inf2Pinned", instance_type="inf2.8xlarge", max_capacity=2, machine_image=NeuronAmi.release(OLDER_AMI)
    )
    cluster.add_ec2_capacity("Inf2Current", instance_type="inf2.48xlarge", max_capacity=2)
    serve(stack, cluster, "Training", "trn1.32xlarge", ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri))
    kept = serve(
        stack, cluster, "Kept", "trn1.32xlarge", ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri), device=1
    )
    Validations.of(kept).acknowledge(
        Acknowledgment(id=rules.IMAGE_BEHIND_NEWEST_DRIVER.warning_id, reason="these instances keep an older AMI")
    )
    serve(
        stack,
        cluster,
        "Checked",
        "inf2.xlarge",
        embedding_image(stack),
        entry_point=["/usr/local/bin/dockerd-entrypoint.py"],
        driver_check=True,
    )
    serve(stack, cluster, "Pinned", "inf2.8xlarge", ecs.ContainerImage.from_registry(EMBEDDING.uri))
    serve(stack, cluster, "Current", "inf2.48xlarge", ecs.ContainerImage.from_registry(VLLM.uri))
    for id, ami in (("Queue", None), ("PinnedQueue", NeuronAmi.release(OLDER_AMI))):
        queue = NeuronTrainingQueue(stack, id, instance_type="trn1.32xlarge", max_nodes=1, machine_image=ami)
        queue.add_job("Job", nodes=1, image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri), command=["x"])
    found: dict[str, list[str]] = {}
    for message in Annotations.from_stack(stack).find_warning("*", Match.any_value()):
        text = str(message.entry.data)
        found.setdefault(message.id.lstrip("/"), []).append(text)
    return found


def ids(warnings: dict[str, list[str]], path: str) -> list[str]:
    return [rule for texts in warnings.get(f"Drivers/{path}", []) for rule in rules.BY_ID if f"[{rule}" in texts]


def test_the_newest_driver_runs_the_current_images_and_not_the_sdk_2_20_and_2_30_ones() -> None:
    newest = newest_driver()
    assert newest_driver_conflict(VLLM_TRN2.neuron_sdk or "") is None
    assert newest_driver_conflict(VLLM.neuron_sdk or "") is None
    for image in (EMBEDDING, PYTORCH_TRAINING):
        problem = newest_driver_conflict(image.neuron_sdk or "")
        assert problem is not None and f"driver {newest.driver}" in problem and "2.28" in problem
    assert newest_driver_conflict("9.9.9") is None  # a release the table does not know is not judged


@WARNINGS
def test_an_old_image_on_capacity_that_follows_the_recommended_ami_warns_once(warnings: dict[str, list[str]]) -> None:
    assert ids(warnings, "Training") == [WARNING]
    (text,) = warnings["Drivers/Training"]
    assert "Drivers/C/Trn1" in text and "Neuron SDK 2.30.0's runtime" in text and "NeuronAmi.release" in text


@WARNINGS
def test_the_warning_can_be_acknowledged_on_the_service(warnings: dict[str, list[str]]) -> None:
    assert ids(warnings, "Kept") == []


@WARNINGS
def test_with_the_start_check_only_neuron126_warns(warnings: dict[str, list[str]]) -> None:
    assert WARNING not in ids(warnings, "Checked")
    assert ids(warnings, "CheckedTask") == [rules.DRIVER_CHECK_REFUSES_CURRENT.id]


@WARNINGS
def test_pinned_capacity_whose_driver_the_image_runs_on_and_a_current_image_warn_of_nothing(
    warnings: dict[str, list[str]],
) -> None:
    assert ids(warnings, "Pinned") == [] and ids(warnings, "Current") == []


@WARNINGS
def test_a_training_queue_on_the_recommended_ami_warns_and_a_pinned_one_does_not(
    warnings: dict[str, list[str]],
) -> None:
    assert ids(warnings, "Queue") == [WARNING]
    assert "Drivers/Queue/Job" in warnings["Drivers/Queue"][0]
    assert WARNING not in ids(warnings, "PinnedQueue")


def test_an_image_named_by_its_ecr_repository_on_a_pinned_ami_it_does_not_run_on_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Refused")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", max_capacity=2, machine_image=NeuronAmi.release(NEWER_AMI)
    )
    with pytest.raises(NeuronConfigurationError, match=r"Refused/Embedding: .*driver 2.31.*NEURON088"):
        serve(stack, cluster, "Embedding", "inf2.xlarge", embedding_image(stack))


def test_a_training_job_on_a_pinned_ami_it_does_not_run_on_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Refused")
    queue = NeuronTrainingQueue(
        stack, "Queue", instance_type="trn1.32xlarge", max_nodes=1, machine_image=NeuronAmi.release(NEWER_AMI)
    )
    with pytest.raises(NeuronConfigurationError, match=r"Refused/Queue/Job: .*SDK 2.30.0.*NEURON088"):
        queue.add_job("Job", nodes=1, image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri), command=["x"])
    assert queue.ami.parameter_name.endswith(f"hvm-{NEWER_AMI}-kernel-6.1-x86_64/image_id")
