"""NEURON131: an image Neuron does not support on an instance type is refused where it meets the type, with the image
to run instead; and the library's own images are of releases its own release table supports on the families its own
image table lists."""

from __future__ import annotations

import dataclasses

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from conftest import imported_vpc

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
)
from neuron_constructs.knowledge import image_support, neuron_releases
from neuron_constructs.knowledge.container_images import (
    IMAGES,
    INF1_INFERENCE,
    PYTORCH_INFERENCE,
    VLLM,
    VLLM_TRN2,
    NeuronImage,
)


def _manual(instance_type: str, image: str) -> ecs.ContainerDefinition:
    stack = Stack(App(analytics_reporting=False), "S")
    task = ManualNeuronTaskDefinition(stack, "T", instance_type=instance_type, devices=[0], memory_mib=8192)
    return task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(image))


@pytest.mark.parametrize("image", [VLLM, PYTORCH_INFERENCE], ids=lambda i: i.repository)
def test_an_nxd_inference_image_on_trn2_is_refused_with_the_vllm_neuron_image_as_the_fix(image: NeuronImage) -> None:
    """GIVEN Neuron's end of NxD Inference on Trn2 and Trn3 from Neuron 2.34.0 WHEN the legacy vLLM 0.16 image or the
    PyTorch inference image is given to a trn2 task THEN the call is refused, naming the vLLM Neuron image."""
    with pytest.raises(NeuronConfigurationError, match=r"NEURON131") as raised:
        _manual("trn2.48xlarge", image.uri)
    message = str(raised.value)
    assert f"S/T/model: container 'model' runs {image.uri} on trn2: NxD Inference of Neuron SDK 2.31.1" in message
    assert "not supported on trn2 from Neuron 2.34.0" in message
    assert f"run VLLM_TRN2 ({VLLM_TRN2.uri}) on this type" in message and "(inf2, trn1)" in message


def test_an_nxd_inference_image_by_digest_is_refused_too() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"NEURON131"):
        _manual("trn2.48xlarge", f"{VLLM.uri}@sha256:{'ab' * 32}")


@pytest.mark.parametrize(
    ("instance_type", "image"),
    [("trn2.48xlarge", VLLM_TRN2), ("inf2.xlarge", VLLM), ("trn1.32xlarge", VLLM), ("inf1.xlarge", INF1_INFERENCE)],
    ids=["vllm-neuron-on-trn2", "legacy-vllm-on-inf2", "legacy-vllm-on-trn1", "inf1-image-on-inf1"],
)
def test_an_image_on_a_type_neuron_supports_it_on_is_accepted(instance_type: str, image: NeuronImage) -> None:
    assert _manual(instance_type, image.uri).container_name == "model"


def test_an_image_of_a_release_without_inf1_on_inf1_is_refused_with_the_inf1_image_as_the_fix() -> None:
    """GIVEN an image whose tag names Neuron SDK 2.31.1, which the table does not hold WHEN it is given to an inf1 task
    THEN it is refused: runtimes from SDK 2.21.0 removed Inf1."""
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    with pytest.raises(NeuronConfigurationError, match=r"NEURON131") as raised:
        _manual("inf1.xlarge", image)
    assert f"run INF1_INFERENCE ({INF1_INFERENCE.uri})" in str(raised.value)


def test_an_nxd_inference_image_in_a_service_on_managed_instances_that_launch_trn2_is_refused() -> None:
    """GIVEN a task definition that does not name its type WHEN its service is placed on Managed Instances capacity that
    launches trn2 THEN the service is refused."""
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Trn2", instance_types=["trn2.48xlarge"])
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM.uri))
    with pytest.raises(NeuronConfigurationError, match=r"S/Svc: container 'model' runs .* on trn2: .*NEURON131"):
        NeuronService(stack, "Svc", cluster=cluster, task_definition=task)


def test_an_nxd_inference_image_in_a_service_on_managed_instances_of_inf2_is_accepted() -> None:
    stack = Stack(App(analytics_reporting=False), "S")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Inf2", instance_types=["inf2.xlarge"])
    task = ManagedNeuronTaskDefinition(stack, "T", cpu=2048, memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(VLLM.uri))
    assert NeuronService(stack, "Svc", cluster=cluster, task_definition=task).task_definition is task


def test_the_pytorch_inference_image_on_trn2_names_both_ends_it_meets() -> None:
    """PYTORCH_INFERENCE carries NxD Inference and runs PyTorch/XLA, both unsupported on Trn2 from Neuron 2.34.0."""
    assert PYTORCH_INFERENCE.components == (neuron_releases.NXDI, neuron_releases.TORCH_XLA_INFERENCE)
    xla = neuron_releases.unsupported("2.31.1", "trn2", (neuron_releases.TORCH_XLA_INFERENCE,))
    assert xla is not None and "announce-no-support-torch-xla-inference-trn" in xla
    refusal = image_support.family_refusal(PYTORCH_INFERENCE.uri, "trn2")
    assert refusal is not None and refusal.fix_constant == "VLLM_TRN2"


def test_the_release_table_s_newest_release_is_the_current_one() -> None:
    """unsupported() judges as of the release table's newest release: the image table's current release."""
    from neuron_constructs.knowledge.container_images import CURRENT_SDK_RELEASE

    assert neuron_releases.NEURON_RELEASES[-1].sdk == CURRENT_SDK_RELEASE


def test_every_support_end_names_an_image_neuron_supports_there() -> None:
    for end in neuron_releases.SUPPORT_ENDS:
        fix = image_support._FIX[(end.family, end.component)]
        assert end.family in IMAGES[fix].instance_families
        assert image_support.family_refusal(IMAGES[fix].uri, end.family) is None


# ------------------------------------------------------ the library's images against its own tables ---


def unsupported_pairs(images: dict[str, NeuronImage]) -> list[str]:
    """``NAME on family: why`` for every image of ``images`` and family its table lists that the release table marks
    unsupported for the image's SDK release and components."""
    return [
        f"{name} on {family}: {problem}"
        for name, image in images.items()
        if image.neuron_sdk is not None
        for family in image.instance_families
        if (problem := neuron_releases.unsupported(image.neuron_sdk, family, image.components)) is not None
    ]


def test_every_image_of_the_library_is_of_a_release_its_table_supports_on_each_family_it_lists() -> None:
    """Every image the library ships, runs in its daemons or uses in its examples (container_images.IMAGES) and each
    family the image table lists for it: the release table supports the image's release there."""
    assert not unsupported_pairs(IMAGES), "\n".join(unsupported_pairs(IMAGES))


def test_the_check_of_the_library_s_images_fails_when_an_image_lists_a_family_its_release_lost() -> None:
    listed = dataclasses.replace(VLLM, instance_families=("inf2", "trn1", "trn2"))
    inf1 = dataclasses.replace(PYTORCH_INFERENCE, instance_families=("inf1",))
    assert [p.split(":")[0] for p in unsupported_pairs({"VLLM": listed, "PYTORCH_INFERENCE": inf1})] == [
        "VLLM on trn2",
        "PYTORCH_INFERENCE on inf1",
    ]
