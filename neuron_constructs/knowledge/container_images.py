"""Every container image the library and its examples run, in one place, each with its source.

The current Neuron SDK release is :data:`CURRENT_SDK_RELEASE` (2.34.0, released November 30, 2026). No
Neuron Deep Learning Container (DLC) tag for SDK 2.34 is published in the sources this module cites (the
aws-neuron/deep-learning-containers README, the Neuron documentation's DLC pages): the images below are the
newest published ones that run where the library and the examples run them, and each says its own SDK release.
Why each is the release it is:

* :data:`PYTORCH_INFERENCE` is SDK 2.31.1 because the image stopped there. The Neuron 2.32.0 container
  release notes: "Starting with Neuron SDK 2.32.0, NeuronX Distributed Inference (NxDI) and NeuronX Distributed
  (NxD) are no longer included in Neuron DLCs. As a result, the ``pytorch-inference-neuronx`` DLC and the legacy
  vLLM 0.16 ``pytorch-inference-vllm-neuronx`` DLC are no longer published." The library no longer runs it.
* :data:`PYTORCH_TRAINING` is SDK 2.30.0 because that image stopped earlier. The Neuron 2.31.0 container
  release notes: "Starting with Neuron SDK 2.31.0, the ``pytorch-training-neuronx`` DLC is no longer
  published."
* :data:`VLLM` is the vLLM 0.16 image of SDK 2.31.1, the last vLLM image for Inf2 and Trn1, where the examples
  serve: it stays for Inf2 and Trn1. The newer vLLM images (0.21 and later, SDK 2.31 to 2.33) support Trn2 and Trn3
  only; :data:`VLLM_TRN2` is the newest, SDK 2.33.0's, on Ubuntu 26.04 (on which every Neuron DLC is published from
  2.33.0) and Python 3.14. Serve Trn2 and Trn3 with it. From SDK 2.34.0 Neuron no longer supports NxD Inference, which
  :data:`VLLM` and :data:`PYTORCH_INFERENCE` carry, on Trn2 and Trn3 (announcement of November 17, 2026), and vLLM
  Neuron, which :data:`VLLM_TRN2` runs, is generally available: the table lists both for Inf2 and Trn1 only, and a
  Neuron container of either on a trn2 type is refused (NEURON131, :mod:`neuron_constructs.knowledge.image_support`).
* From SDK 2.33.0 a TorchNeuron (native PyTorch 2.14) training DLC exists for Trn2 and Trn3 (the Neuron
  documentation's "Install PyTorch via Deep Learning Container", v2.33.0, lists "PyTorch Training (TorchNeuron)"),
  but no source found publishes its repository and tag (the page links to the DLC repository's README, whose newest
  stored version is 2.32.0's): it is not in this module until one does.

* :data:`EMBEDDING` is the Hugging Face Neuron inference DLC of SDK 2.20.0 that the examples' embedding model
  runs. It is kept at that release: it is configured through the SageMaker Hugging Face inference toolkit's
  variables (``HF_MODEL_ID``, ``HF_TASK``, ``HF_OPTIMUM_*``), and no source found states that a newer tag keeps
  that interface. A newer tag would not lift its AMI pin either: the newest Hugging Face Neuron inference DLC tag
  found in public sources is SDK 2.26.0's (PyTorch 2.8.0, transformers 4.55.4), older than SDK 2.31.0, whose
  runtime 2.33 is the first that driver 2.29 runs.
* :data:`INF1_INFERENCE` is the last Inf1 image (torch-neuron, SDK 2.20.2): the base for an Inf1 serving image.
* :data:`NEURON_MONITOR` has a version of its own: the neuron-monitor image, privileged as the Neuron SDK's
  Kubernetes manifest (``src/k8/k8s-neuron-monitor-daemonset.yml``, 1.3.0) runs it, which the monitoring daemon runs;
  1.10.0, the newest tag a source names (the Neuron operator for OpenShift's DRA smoke tests).
* :data:`NEURON_NODE_RECOVERY` and :data:`NODE_PROBLEM_DETECTOR` have versions of their own, not an SDK
  release: they are the images of AWS's ECS Neuron problem detector sample (1.3.0 and v0.8.20), which the recovery
  daemon follows, at the tags the Neuron Helm chart runs them with (aws-neuron/neuron-helm-charts, chart README:
  1.9.0 and v1.35.2). Each constant says what its version changes in what the library reads from it.

Engines (:mod:`neuron_constructs.knowledge.engines`). Each image that runs a model names what compiles and runs it
(:attr:`NeuronImage.engine`), which decides the compile cache a container of it gets: :data:`PYTORCH_INFERENCE`
torch-neuronx/NxD, :data:`PYTORCH_TRAINING` training, :data:`VLLM` vLLM on NxD Inference (its DLC's vLLM 0.16 serves
through NxD Inference), :data:`VLLM_TRN2` vLLM Neuron on the native route (the default route of vLLM Neuron from
Neuron 2.33.0: the v2.33.0 vLLM Neuron guide "Compilation route", "Keep the default native route, go back to the XLA
route"), :data:`EMBEDDING` optimum-neuron (the SageMaker Hugging Face inference toolkit's ``HF_OPTIMUM_*``),
:data:`INF1_INFERENCE` torch-neuron. The library's own images run no model and name none.

Driver and runtime (:mod:`neuron_constructs.knowledge.neuron_releases`). The runtime of an image runs on a range of
Neuron drivers, and the ECS Neuron AMI carries the newest driver at its build. :data:`VLLM`,
:data:`VLLM_TRN2` and :data:`PYTORCH_INFERENCE` run on the newest driver; :data:`PYTORCH_TRAINING` (SDK 2.30.0,
runtime 2.32) and :data:`EMBEDDING` (SDK 2.20.0, runtime 2.22) run on driver 2.28 at most, which no ECS Neuron AMI
dated from July 14, 2026 carries (Neuron 2.31.0 shipped driver 2.29 on July 7; one dated July 7 to 13 may carry
either): :data:`NEEDS_AMI_BEFORE` states the AMI each needs,
since neither image has a successor a source publishes. The examples pin AMI release 2023.0.20260701 (driver 2.28) on
the capacity and the training queue that run them; on capacity that follows the recommended AMI they warn
(NEURON127). :data:`INF1_INFERENCE` (SDK 2.20.2) runs on Inf1, where the
AMI installs driver 2.21 at boot.

Pinned by digest. The images the library runs itself (:data:`LIBRARY_IMAGES`: the monitoring and recovery daemons and
the model-artifact sync, root, one of them privileged, on every Neuron host) are referenced as ``tag@digest``
(:attr:`NeuronImage.reference`) wherever a source ties a digest to the tag: a tag can be moved to other bytes, a digest
cannot. The Kubernetes image promoter's manifest maps each digest of ``registry.k8s.io/node-problem-detector`` to its
tags, but the version of it found ends at v0.8.20, so :data:`NODE_PROBLEM_DETECTOR` v1.35.2 has no sourced digest. For
it, the Neuron team's images and the AWS CLI image no published source gives the digest of these tags, and no registry
is reachable where this library is built: they keep ``digest=None`` (the tag alone) until one does; ``neuron-ecs
digests`` asks the registries and prints the digest to pin each with. An image the library runs privileged or in the
host network (:data:`PRIVILEGED_IMAGES`) must be pinned: the monitoring refuses any other one without a digest
(NEURON068) and warns that its own :data:`NEURON_MONITOR` runs by tag until it is pinned (NEURON116). To run your own
pins, pass ``image.pinned("sha256:...")`` (the digest your registry reports for the tag) to
:class:`~neuron_constructs.monitoring.monitoring.NeuronMonitoring`'s ``monitor_image``, ``recovery_image`` and
``problem_detector_image``.

Plain Python, no AWS CDK: ``tests/test_container_images.py`` fails when any file of the repository names a
Neuron image that is not one of these, and when an image the library runs has no digest (the unresolved ones are
listed there, each with why).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from neuron_constructs.knowledge import engines
from neuron_constructs.knowledge.engines import Engine
from neuron_constructs.knowledge.neuron_releases import NXDI, TORCH_XLA_INFERENCE

__all__ = [
    "AWS_CLI",
    "CURRENT_SDK_RELEASE",
    "CURRENT_SDK_RELEASE_SOURCE",
    "EMBEDDING",
    "IMAGES",
    "INF1_INFERENCE",
    "LIBRARY_IMAGES",
    "NEEDS_AMI_BEFORE",
    "NEURON_MONITOR",
    "NEURON_NODE_RECOVERY",
    "NODE_PROBLEM_DETECTOR",
    "PRIVILEGED_IMAGES",
    "PYTORCH_INFERENCE",
    "PYTORCH_TRAINING",
    "VLLM",
    "VLLM_TRN2",
    "NeuronImage",
]

CURRENT_SDK_RELEASE = "2.34.0"
"""The newest Neuron SDK release."""
CURRENT_SDK_RELEASE_SOURCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/_sources/release-notes/2.34.0.rst "
    '("AWS Neuron SDK 2.34.0 release notes", "Date of release: November 30, 2026")'
)
"""Where :data:`CURRENT_SDK_RELEASE` is published."""

_SDK_IN_TAG = re.compile(r"-sdk(\d+\.\d+\.\d+)-")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_DLC_REPOSITORY = "https://github.com/aws-neuron/deep-learning-containers"
_DLC_README = f"{_DLC_REPOSITORY}/blob/2be9ed1d5da9d7c8e15d7abac1eb7f550ed3a723/README.md (tag 2.32.0)"
_NPD_SAMPLE = (
    "https://github.com/aws-neuron/aws-neuron-samples/blob/2015d650cd89e4c671ae5bd1b5f1d4499d94d4dd/"
    "neuron-problem-detector/ecs-npd-cdk/neuron_problem_detector/ecs_task_definition.json"
)
_NPD_GUIDE = (
    "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/deploy/ecs/npd.rst"
)


@dataclass(frozen=True)
class NeuronImage:
    """A container image: where it is, what it holds and where that is published.

    ``registry`` is the host and namespace before the repository (``public.ecr.aws/neuron``), or, for an image in
    an account's private ECR registry, ``<account>.dkr.ecr.{region}.amazonaws.com`` (pulled in the stack's own
    Region). ``neuron_sdk`` is the Neuron SDK release the image is built with, ``None`` for an image with a
    version of its own (not a Neuron DLC). ``instance_families`` are the instance families its source lists.
    ``digest`` is the ``sha256:`` digest the tag pointed to when ``digest_source`` recorded it, ``None`` where no
    source gives one. ``components``: the Neuron components whose support ends per family (NxD Inference).
    """

    registry: str
    repository: str
    tag: str
    neuron_sdk: str | None
    framework: str
    framework_version: str
    python: str | None
    os: str | None
    instance_families: tuple[str, ...]
    source: str
    digest: str | None = None
    digest_source: str | None = None
    components: tuple[str, ...] = ()
    """The image's Neuron components whose support per family ``neuron_releases.SUPPORT_ENDS`` follows
    (``neuron_releases.NXDI``: NxD Inference)."""
    engine: Engine | None = None
    """What compiles and runs the model in the image, and so which compile cache it reads
    (:mod:`~neuron_constructs.knowledge.engines`); ``None`` for an image that runs no model (the library's own)."""
    entry_point: tuple[str, ...] | None = None
    """The image's own ``ENTRYPOINT``, where a source gives it (``entry_point_source``); ``None`` where none does. A
    job that cannot set an entry point (AWS Batch) runs a container given this entry point by its command alone."""
    entry_point_source: str | None = None

    def __post_init__(self) -> None:
        if self.digest is not None and not _DIGEST.fullmatch(self.digest):
            raise ValueError(f"{self.repository}: digest {self.digest!r} is not sha256: and 64 lowercase hex digits")

    @property
    def uri(self) -> str:
        """``registry/repository:tag``; ``{region}`` stays in it for an image in a private ECR registry."""
        return f"{self.registry}/{self.repository}:{self.tag}"

    @property
    def reference(self) -> str:
        """What a task definition names: ``registry/repository:tag@sha256:...`` when the digest is known (the tag is
        kept for people; the container runtime pulls by the digest), else :attr:`uri`."""
        return f"{self.uri}@{self.digest}" if self.digest else self.uri

    def pinned(self, digest: str, source: str = "given by the caller") -> NeuronImage:
        """This image pinned to ``digest`` (``sha256:`` and 64 hex digits): the digest your registry reports for the
        tag (``docker buildx imagetools inspect <uri>``, or ``crane digest <uri>``)."""
        return dataclasses.replace(self, digest=digest, digest_source=source)

    @property
    def ecr_account(self) -> str | None:
        """The account of the private ECR registry that holds the image, ``None`` for a public registry."""
        match = re.fullmatch(r"(\d{12})\.dkr\.ecr\.\{region\}\.amazonaws\.com", self.registry)
        return match.group(1) if match else None

    @property
    def tag_sdk(self) -> str | None:
        """The ``sdkX.Y.Z`` part of the tag (``X.Y.Z``), ``None`` when the tag has none."""
        match = _SDK_IN_TAG.search(self.tag)
        return match.group(1) if match else None


PYTORCH_INFERENCE = NeuronImage(
    engine=engines.TORCH_NEURONX,
    registry="public.ecr.aws/neuron",
    repository="pytorch-inference-neuronx",
    tag="2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04",
    neuron_sdk="2.31.1",
    framework="PyTorch",
    framework_version="2.9.0",
    python="3.12",
    os="Ubuntu 24.04",
    instance_families=("inf2", "trn1"),
    components=(NXDI, TORCH_XLA_INFERENCE),
    source=(
        f"{_DLC_README}, pytorch-inference-neuronx table, first row; Dockerfile: {_DLC_REPOSITORY}/blob/"
        "8d2d83800ee11d811007fefe88f6bfe1c0b81e52/pytorch/inference/2.9.0/Dockerfile.neuronx (tag 2.31.1: "
        "aws-neuronx-tools, Python 3.12 from conda on the PATH); last release: aws-neuron/aws-neuron-sdk "
        "release-notes/components/containers.rst (tag v2.32.0), Neuron 2.32.0"
    ),
)
"""The Neuron PyTorch inference container, newest published (SDK 2.31.1, the last: the image is retired). It carries NxD
Inference and runs PyTorch/XLA (torch-neuronx), neither of which Neuron supports on Trn2 and Trn3 from SDK 2.34.0: Inf2
and Trn1 only (the DLC README lists trn2 and trn3 too, as of its release)."""

PYTORCH_TRAINING = NeuronImage(
    engine=engines.TRAINING,
    registry="public.ecr.aws/neuron",
    repository="pytorch-training-neuronx",
    tag="2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04",
    neuron_sdk="2.30.0",
    framework="PyTorch",
    framework_version="2.9.0",
    python="3.12",
    os="Ubuntu 24.04",
    instance_families=("inf2", "trn1", "trn2", "trn3"),
    source=(
        f"{_DLC_README}, pytorch-training-neuronx table, first row; Dockerfile: {_DLC_REPOSITORY}/blob/"
        "af91ee731d73a03b3132b9375564dd62d6fdca70/pytorch/training/2.9.0/Dockerfile.neuronx (tag 2.30.0); "
        "last release: aws-neuron/aws-neuron-sdk release-notes/components/containers.rst (tag v2.32.0), "
        "Neuron 2.31.0"
    ),
)
"""The Neuron PyTorch training container, newest published (SDK 2.30.0): torch-neuronx, neuronx-distributed,
neuronx-distributed-training and the EFA libraries; the training examples run it."""

VLLM = NeuronImage(
    engine=engines.VLLM_NXDI,
    registry="public.ecr.aws/neuron",
    repository="pytorch-inference-vllm-neuronx",
    tag="0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04",
    neuron_sdk="2.31.1",
    framework="vLLM",
    framework_version="0.16.0",
    python="3.12",
    os="Ubuntu 24.04",
    instance_families=("inf2", "trn1"),
    components=(NXDI,),
    source=(
        f"{_DLC_README}, vllm-inference-neuronx table, row VLLM 0.16.0 / Neuron 2.31.1; Dockerfile: "
        f"{_DLC_REPOSITORY}/blob/8d2d83800ee11d811007fefe88f6bfe1c0b81e52/vllm/inference/0.16.0/Dockerfile.neuronx "
        "(tag 2.31.1: ENTRYPOINT python /usr/local/bin/vllm_entrypoint.py, which runs its arguments as a command; "
        "EXPOSE 8080); server command: aws-neuron/aws-neuron-sdk deploy/environments/quickstart-deploy-dlc.rst "
        '(tag v2.31.1), "If you are using the legacy vLLM 0.16 DLC, use the following server startup command"'
    ),
)
"""vLLM 0.16 for Neuron (NxD Inference), the last vLLM image for Inf2 and Trn1 (SDK 2.31.1); the examples'
LLMs run it with ``vllm serve``. Not for Trn2 or Trn3: Neuron no longer supports NxD Inference there from SDK 2.34.0
(``neuron_releases.NXDI_TRN_END_SOURCE``), and a Neuron container of it on a trn2 type is refused (NEURON131) with
:data:`VLLM_TRN2` as the fix; the DLC README lists trn2 and trn3 as of its release."""

VLLM_TRN2 = NeuronImage(
    engine=engines.VLLM_NEURON_NATIVE,
    registry="public.ecr.aws/neuron",
    repository="pytorch-inference-vllm-neuronx",
    tag="0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04",
    neuron_sdk="2.33.0",
    framework="vLLM",
    framework_version="0.29.0",
    python="3.14",
    os="Ubuntu 26.04",
    instance_families=("trn2", "trn3"),
    entry_point=("python", "/usr/local/bin/vllm_entrypoint.py"),
    entry_point_source=(
        "aws-neuron/deep-learning-containers: vllm/inference/0.21.0.1.0.0/Dockerfile.neuronx (commit bd966547) and "
        "vllm/inference/0.24.0.1.1.0/Dockerfile.neuronx (commit 4536c92a, SDK 2.32.0) both end with ENTRYPOINT "
        '["python", "/usr/local/bin/vllm_entrypoint.py"]; the 0.29 image\'s Dockerfile is in no source found, and '
        "the line is taken as unchanged"
    ),
    source=(
        "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/setup/pytorch/dlc.html (Install PyTorch via Deep "
        "Learning Container, Trn2 and Trn3: 'docker pull public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:"
        "0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04'); v2.33.0 setup/pytorch/update-dlc.rst ('Starting with "
        "Neuron 2.33.0, Neuron DLC images are published on Ubuntu 26.04 only ... Python 3.14'); vLLM Neuron "
        "0.29.0.1.2.0: v2.33.0 release-notes/components/index.html"
    ),
)
"""vLLM 0.29 with the vLLM Neuron plugin 0.29.0.1.2.0 (SDK 2.33.0, Ubuntu 26.04, Python 3.14), for Trn2 and Trn3
only; Inf2 and Trn1 keep :data:`VLLM`."""

EMBEDDING = NeuronImage(
    engine=engines.OPTIMUM_NEURON,
    registry="763104351884.dkr.ecr.{region}.amazonaws.com",
    repository="huggingface-pytorch-inference-neuronx",
    tag="2.1.2-transformers4.43.2-neuronx-py310-sdk2.20.0-ubuntu20.04",
    neuron_sdk="2.20.0",
    framework="PyTorch",
    framework_version="2.1.2",
    python="3.10",
    os="Ubuntu 20.04",
    instance_families=("inf2", "trn1"),
    source=(
        "https://github.com/aws/deep-learning-containers/blob/master/available_images.md, Hugging Face "
        "inference containers, Neuron: row PyTorch 2.1.2 + transformers, Neuron SDK 2.20.0, inf2/trn1"
    ),
)
"""The Hugging Face Neuron inference DLC (AWS Deep Learning Containers account 763104351884, SDK 2.20.0): it
compiles ``HF_MODEL_ID`` for ``HF_TASK`` at start and serves ``/invocations`` and ``/ping`` on port 8080; the
examples' embedding model runs it. Kept at SDK 2.20.0, an older release (see the module's notes)."""

INF1_INFERENCE = NeuronImage(
    engine=engines.TORCH_NEURON,
    registry="public.ecr.aws/neuron",
    repository="pytorch-inference-neuron",
    tag="1.13.1-neuron-py310-sdk2.20.2-ubuntu20.04",
    neuron_sdk="2.20.2",
    framework="PyTorch",
    framework_version="1.13.1",
    python="3.10",
    os="Ubuntu 20.04",
    instance_families=("inf1",),
    source=f"{_DLC_README}, pytorch-inference-neuron table (torch-neuron, Neuron 2.20.2, inf1)",
)
"""The last Neuron PyTorch inference container for Inf1 (torch-neuron, SDK 2.20.2): the base of an Inf1 serving
image."""

_NEURON_MONITOR_MANIFEST = (
    "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/"
    "src/k8/k8s-neuron-monitor-daemonset.yml"
)
_NEURON_MONITOR_TAGS = (
    "https://github.com/yevgeny-shnaidman/operator-for-ai-chips-on-aws-new/blob/"
    "6c5b842e83785ec29d1c1406a98d4f6416f8121d/test_data/dra-smoke-tests.md and https://github.com/ybrodsky-rh/"
    "operator-for-ai-chips-on-aws/blob/597b3c7849610e6a821fc4cc23c88c13f2afdafb/docs/dra-smoke-tests.md (the Neuron "
    "operator for OpenShift's DRA smoke tests, DeviceConfig nodeMetricsImage: "
    "public.ecr.aws/neuron/neuron-monitor:1.10.0; the same fork's config/samples/k8s.aws_deviceconfigs_dra.yaml, "
    "commit ee36ed7, names 1.9.0)"
)
NEURON_MONITOR = NeuronImage(
    registry="public.ecr.aws/neuron",
    repository="neuron-monitor",
    tag="1.10.0",
    neuron_sdk=None,
    framework="neuron-monitor",
    framework_version="1.10.0",
    python=None,
    os=None,
    instance_families=("inf1", "inf2", "trn1", "trn2", "trn3"),
    source=(
        f"{_NEURON_MONITOR_TAGS}; what the image holds: {_NEURON_MONITOR_MANIFEST} (1.3.0: securityContext "
        "privileged: true; its entrypoint runs /opt/aws/neuron/bin/neuron-monitor with "
        "/opt/aws/neuron/bin/neuron-monitor.conf into the Python exporter neuron-monitor-prometheus.py); "
        "aws-neuron-sdk deploy/infrastructure/monitoring.rst (same commit: the exporter answers with Python's "
        "prometheus_client metrics)"
    ),
)
"""The Neuron team's neuron-monitor image, newest tag a source names (1.10.0; the Neuron SDK's Kubernetes manifest runs
1.3.0, privileged): ``aws-neuronx-tools`` (``/opt/aws/neuron/bin/neuron-monitor``) and the Python 3 its Prometheus
exporter runs on; the monitoring daemon pipes neuron-monitor into the library's EMF publisher with that Python.

What 1.10.0 changes in what the library reads: no source found says. None names the ``aws-neuronx-tools`` release it
carries (so the neuron-monitor report format, which belongs to that release), nor whether the binary and ``python3``
stay where 1.3.0 has them; the operator that names the tag runs it as it runs 1.3.0 (its entrypoint, with
``/opt/aws/neuron/bin/neuron-monitor.conf``). The daemon's command therefore checks both before it starts and stops with
one line naming what is missing (:func:`~neuron_constructs.monitoring.daemons.monitor_script`), and the publisher reads
the report fields it has recorded outputs for and skips a line it cannot read. A tag 1.12.0 is named nowhere in the
sources searched."""

_HELM_CHART_README = (
    "https://github.com/aws-neuron/neuron-helm-charts/blob/2f5072d772b562418c5499b0ad8f9469a301c363/"
    "charts/neuron-helm-chart/README.md"
)
NEURON_NODE_RECOVERY = NeuronImage(
    registry="public.ecr.aws/neuron",
    repository="neuron-node-recovery",
    tag="1.9.0",
    neuron_sdk=None,
    framework="neuron-node-recovery",
    framework_version="1.9.0",
    python=None,
    os=None,
    instance_families=("inf1", "inf2", "trn1", "trn2", "trn3"),
    source=(
        f"{_HELM_CHART_README} (Node Recovery Agent: npd.nodeRecovery.image.tag '1.9.0', "
        "npd.nodeRecovery.startupDelaySeconds 60, npd.nodeRecovery.counters); the ECS pattern: "
        f"{_NPD_SAMPLE} (container recovery, 1.3.0); {_NPD_GUIDE}"
    ),
)
"""The Neuron node recovery image (1.9.0, the Neuron Helm chart's): it marks an instance whose Neuron hardware failed
unhealthy. The library does not run it (its recovery container runs the AWS CLI, :data:`AWS_CLI`); it reads nothing
from it. What 1.9.0 changes beside the sample's 1.3.0, as the chart configures it: a startup delay
(``startupDelaySeconds``, 60) and the error counters it acts on (``counters``: ``NeuronHasError_`` and the four
``NEURON_HW_ERR`` codes the library's own detector rules match, ``monitoring.daemons.NEURON_HARDWARE_ERRORS``)."""

NODE_PROBLEM_DETECTOR = NeuronImage(
    registry="registry.k8s.io/node-problem-detector",
    repository="node-problem-detector",
    tag="v1.35.2",
    neuron_sdk=None,
    framework="node-problem-detector",
    framework_version="1.35.2",
    python=None,
    os=None,
    instance_families=("inf1", "inf2", "trn1", "trn2", "trn3"),
    source=(
        f"{_HELM_CHART_README} (Node Problem Detector Container: npd.nodeProblemDetector.image.tag 'v1.35.2'); the "
        f"ECS pattern: {_NPD_SAMPLE} (container npd, v0.8.20); flags and kmsg monitor at the tag: "
        "https://github.com/kubernetes/node-problem-detector/blob/v1.35.2/cmd/options/options.go"
    ),
)
"""Kubernetes' node-problem-detector, which watches the kernel log for Neuron hardware errors (not a Neuron image;
here because the recovery daemon runs it): v1.35.2, the tag the Neuron Helm chart runs (kubernetes/node-problem-detector
tags v1.36.0 since; the library follows the Neuron team's pairing).

What v1.35.2 changes in what the library reads, against v0.8.20 (the repository at both tags): nothing it uses. The
flags the daemon passes stay (``--v``, ``--logtostderr``, hidden but accepted, ``--enable-k8s-exporter=false``,
``--config.system-log-monitor``); the kmsg monitor's configuration keeps its fields (``plugin``, ``logPath``,
``lookback``, ``bufferSize``, ``source``, ``conditions``, ``rules``) and adds an optional rule field,
``patternGeneratedMessageSuffix``, which the library does not set; the log line the kernel alarm's filter excludes,
``Finish parsing log monitor config file``, is unchanged; the image is still Debian (bookworm) with ``sh``. No source
ties a digest to v1.35.2 (the image promoter's manifest found ends at v0.8.20): it runs by its tag until one does
(``neuron-ecs digests`` resolves it; ``problem_detector_image=NODE_PROBLEM_DETECTOR.pinned(...)`` pins it)."""

AWS_CLI = NeuronImage(
    registry="public.ecr.aws/aws-cli",
    repository="aws-cli",
    tag="2.15.0",
    neuron_sdk=None,
    framework="AWS CLI",
    framework_version="2.15.0",
    python=None,
    os=None,
    instance_families=("inf1", "inf2", "trn1", "trn2", "trn3"),
    source="https://gallery.ecr.aws/aws-cli/aws-cli (Amazon ECR Public: the AWS CLI v2 image, tag 2.15.0)",
)
"""The AWS CLI, which the model-artifact sync container runs (``aws s3 sync``) before the model starts."""

IMAGES: dict[str, NeuronImage] = {
    "NEURON_MONITOR": NEURON_MONITOR,
    "PYTORCH_INFERENCE": PYTORCH_INFERENCE,
    "PYTORCH_TRAINING": PYTORCH_TRAINING,
    "VLLM": VLLM,
    "VLLM_TRN2": VLLM_TRN2,
    "EMBEDDING": EMBEDDING,
    "INF1_INFERENCE": INF1_INFERENCE,
    "NEURON_NODE_RECOVERY": NEURON_NODE_RECOVERY,
    "NODE_PROBLEM_DETECTOR": NODE_PROBLEM_DETECTOR,
    "AWS_CLI": AWS_CLI,
}
"""Every image of this module, by the name of its constant."""

LIBRARY_IMAGES: dict[str, NeuronImage] = {
    "NEURON_MONITOR": NEURON_MONITOR,
    "NODE_PROBLEM_DETECTOR": NODE_PROBLEM_DETECTOR,
    "AWS_CLI": AWS_CLI,
}
"""The images the library runs itself, by the name of their constant: neuron-monitor (:data:`NEURON_MONITOR`), the
kernel-log watchers of the recovery daemon and the Managed Instances health daemon (:data:`NODE_PROBLEM_DETECTOR`,
:data:`AWS_CLI`, which also marks an instance unhealthy) and the model-artifact sync (:data:`AWS_CLI`). The examples'
model images are the examples' choice."""

PRIVILEGED_IMAGES: dict[str, NeuronImage] = {"NEURON_MONITOR": NEURON_MONITOR}
"""The images of :data:`LIBRARY_IMAGES` the library runs privileged or in the host network: neuron-monitor, privileged
as the Neuron SDK's own manifest runs it. Each must be pinned by digest (NEURON068, NEURON116)."""

NEEDS_AMI_BEFORE: dict[str, str] = {
    "PYTORCH_TRAINING": "2026-07-07",
    "EMBEDDING": "2026-07-07",
}
"""The images of :data:`IMAGES` whose runtime does not run on the newest Neuron driver, by the name of their constant,
with the date their ECS Neuron AMI must predate: Neuron 2.31.0 (July 7, 2026) shipped driver 2.29, which "requires
Neuron Runtime Library 2.33 or later" (runtime release notes, Neuron 2.31.0). Pin an AMI release built before it
(``2023.0.YYYYMMDD`` with a date from 2026-05-28, a week after driver 2.28, to 2026-07-06) on the capacity that runs
them, or run them with the driver start check (``add_neuron_container(..., driver_check=True)``), which stops them
with one line on a newer driver."""
