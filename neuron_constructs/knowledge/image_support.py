"""Whether Neuron supports an image on an instance family: the image table (:mod:`.container_images`) says what an
image is (its SDK release, its components), the release table (:mod:`.neuron_releases`, ``SUPPORT_ENDS``) says where
Neuron's support of a release or a component ends.

Two ends apply today:

* NxD Inference on Trn2 and Trn3, from Neuron 2.34.0 and for every release: "Neuron provides no further releases, bug
  fixes, or security patches for these libraries on Trn2 and Trn3" (Neuron announcement, November 17, 2026). The
  legacy vLLM 0.16 image (:data:`~.container_images.VLLM`) and the PyTorch inference image
  (:data:`~.container_images.PYTORCH_INFERENCE`) carry it; the fix is vLLM Neuron
  (:data:`~.container_images.VLLM_TRN2`), generally available from Neuron 2.34.0, which does not depend on it.
  PyTorch/XLA inference, which the PyTorch inference image runs, ends there from Neuron 2.34.0 too, with vLLM Neuron
  (on TorchNeuron) as the path for serving LLMs.
* Inf1 from Neuron SDK 2.21.0, whose runtime "Removed INF1 Support": read from the table, or from the ``-sdkX.Y.Z-``
  of an image the table does not hold; the fix is :data:`~.container_images.INF1_INFERENCE`.

Plain Python, no AWS CDK: the task definitions and services call :func:`family_refusal` where an image meets a type
(NEURON131).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from neuron_constructs.knowledge.container_images import IMAGES, NeuronImage
from neuron_constructs.knowledge.neuron_releases import NXDI, TORCH_XLA_INFERENCE, unsupported

__all__ = ["FamilyRefusal", "family_refusal", "supported_families", "table_image"]

_CATALOG_FAMILIES = ("inf1", "inf2", "trn1", "trn1n", "trn2")
_SDK_IN_NAME = re.compile(r"-sdk(\d{1,3}\.\d{1,3}\.\d{1,3})-")
_FIX: dict[tuple[str, str | None], str] = {
    ("trn2", NXDI): "VLLM_TRN2",
    ("trn3", NXDI): "VLLM_TRN2",
    ("trn2", TORCH_XLA_INFERENCE): "VLLM_TRN2",
    ("trn3", TORCH_XLA_INFERENCE): "VLLM_TRN2",
    ("inf1", None): "INF1_INFERENCE",
}
"""The image of the table to run instead, by family and by the component whose support ended (``None``: the release)."""


@dataclass(frozen=True)
class FamilyRefusal:
    """Why an image is not supported on a family, and the constant of the image to run instead."""

    problem: str
    fix_constant: str

    @property
    def fix_image(self) -> NeuronImage:
        """The image ``fix_constant`` names."""
        return IMAGES[self.fix_constant]


def table_image(image_name: str) -> tuple[str, NeuronImage] | None:
    """The constant and image of the table that ``image_name`` (``registry/repository:tag``, with or without
    ``@sha256:...``) names; ``None`` for any other image."""
    name = image_name[:1000].split("@", 1)[0]
    return next(((constant, image) for constant, image in IMAGES.items() if image.uri == name), None)


def family_refusal(image_name: str, family: str, *, stated_sdk: str | None = None) -> FamilyRefusal | None:
    """Why Neuron does not support the image ``image_name`` on instance ``family``, with the image to run instead;
    ``None`` when it does, or when neither the table, nor ``stated_sdk`` (the release stated where the image was
    given), nor the image's tag tells its release."""
    found = table_image(image_name)
    if found is not None:
        sdk, components = found[1].neuron_sdk, found[1].components
    else:
        match = _SDK_IN_NAME.search(image_name[-300:])
        sdk, components = stated_sdk or (match.group(1) if match else None), ()
    if sdk is None:
        return None
    problem = unsupported(sdk, family, components)
    if problem is None:
        return None
    ended = next((c for c in components if unsupported(sdk, family, (c,)) and not unsupported(sdk, family)), None)
    return FamilyRefusal(problem, _FIX[(family, ended)])


def supported_families(image_name: str) -> tuple[str, ...]:
    """The families of the catalog's Neuron types on which Neuron supports ``image_name``: the table's families for
    an image of the table, else every family none of whose ends applies."""
    found = table_image(image_name)
    candidates = found[1].instance_families if found is not None else _CATALOG_FAMILIES
    return tuple(family for family in candidates if family_refusal(image_name, family) is None)
