"""Warm pools for ECS on EC2 Auto Scaling: the agent settings and the warm-up script, as plain Python.

What AWS says, and what the library does with it:

* ECS supports EC2 Auto Scaling warm pools; the ECS agent of an instance in a warm pool must run with
  ``ECS_WARM_POOLS_CHECK=true`` (set in the launch template's user data) and the pool may not return instances on
  scale in (``ReuseOnScaleIn``). With that setting the agent does not register the instance with the cluster while
  it is in the warm pool (ECS guide: configuring pre-initialized instances for your Amazon ECS Auto Scaling group).
* An instance launched into the warm pool runs its user data before Auto Scaling stops it, and Auto Scaling "does not
  wait for user data to finish running, so the stop or hibernate action can interrupt a script that is still
  running"; an ``EC2_INSTANCE_LAUNCHING`` lifecycle hook holds it in ``Warmed:Pending:Wait`` until the script
  completes the action, and holds it again in ``Pending:Wait`` when it leaves the pool (EC2 Auto Scaling guide: use
  lifecycle hooks with a warm pool). cloud-init runs user data on the first boot only; the warm-up therefore also
  installs itself in ``/var/lib/cloud/scripts/per-boot/`` so that it completes the second wait too.
* ``ECS_IMAGE_PULL_BEHAVIOR=prefer-cached``: the agent pulls an image only when it is not on the instance (ECS agent
  configuration, ``ECS_IMAGE_PULL_BEHAVIOR``), so a task placed on a warmed instance starts from the images the
  warm-up pulled.

:func:`warm_up_script` writes the script; it uses only ``sh``, ``docker``, ``curl`` and the AWS CLI image, so the AMI
needs no AWS CLI. The script runs as root on every boot, and the AWS CLI container with the host's network: it calls
ECR, S3 and Auto Scaling as the instance role, whose credentials only the instance metadata service gives, and the
metadata hop limit of 1 keeps them from a container in any other network. The container drops every capability, may
gain no privilege, and mounts the models directory only to copy the models; its image is pinned by digest or warned
about like neuron-monitor's (``WarmPool(cli_image=)``, NEURON068, NEURON116). No AWS CDK import here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from neuron_constructs.knowledge.warm_up_needs import needs_script

__all__ = [
    "AMI_ROOT_VOLUME_GIB",
    "HIBERNATION_FAMILIES",
    "HIBERNATION_MAX_RAM_GIB",
    "IMAGE_ON_DISK_FACTOR",
    "LIFECYCLE_HOOK_NAME",
    "MODELS_DIRECTORY",
    "MOVING_TAGS",
    "PREFETCH_AGENT_SETTINGS",
    "WARM_POOL_AGENT_SETTINGS",
    "WARM_UP_FILE",
    "Fetched",
    "Prefetch",
    "RootVolumeRoom",
    "ecr_registry",
    "hibernation_problem",
    "moving_tag",
    "root_volume_room",
    "warm_up_script",
]

WARM_POOL_AGENT_SETTINGS = {"ECS_WARM_POOLS_CHECK": "true"}
"""Every instance of a warm-pooled group: the agent does not register while the instance is in the warm pool."""
PREFETCH_AGENT_SETTINGS = {"ECS_IMAGE_PULL_BEHAVIOR": "prefer-cached"}
"""With prefetch: the agent starts tasks from the images the warm-up pulled, pulling only what is missing."""
LIFECYCLE_HOOK_NAME = "neuron-warm-up"
"""The ``EC2_INSTANCE_LAUNCHING`` hook the warm-up completes."""
WARM_UP_FILE = "/var/lib/cloud/scripts/per-boot/neuron-warm-up.sh"
"""Where the warm-up is written: cloud-init runs the scripts of this folder on every boot."""
MODELS_DIRECTORY = "/var/lib/neuron-warm-start/models"
"""Where the warm-up copies model artifacts: ``<MODELS_DIRECTORY>/<bucket>/<prefix>``."""
DOCKER_WAIT_TRIES = 60
"""How many times (5 s apart) the warm-up waits for Docker before it gives up and lets the instance go on."""

HIBERNATION_FAMILIES = frozenset(
    {
        # General purpose
        "m3", "m4", "m5", "m5a", "m5ad", "m5d", "m6i", "m6id", "m7i", "m7i-flex", "t2", "t3", "t3a",
        # Compute optimized
        "c3", "c4", "c5", "c5d", "c6i", "c6id",
        # Memory optimized
        "r3", "r4", "r5", "r5a", "r5ad", "r5d",
        # Storage optimized
        "i3", "i3en",
    }
)  # fmt: skip
"""The instance families EC2 can hibernate, as its hibernation prerequisites list them (EC2 user guide, "Hibernation
prerequisites", supported instance families: general purpose M3, M4, M5, M5a, M5ad, M5d, M6i, M6id, M7i, M7i-flex,
T2, T3 and T3a; compute optimized C3, C4, C5, C5d, C6i and C6id; memory optimized R3, R4, R5, R5a, R5ad and R5d;
storage optimized I3 and I3en; docs.amazonaws.cn, Windows guide edition). No Inferentia or Trainium family (inf1,
inf2, trn1, trn1n, trn2) is listed in any edition of the page."""
HIBERNATION_MAX_RAM_GIB = 150
"""EC2 hibernates an instance of less than 150 GB of RAM only (hibernation prerequisites: instance RAM size)."""


def hibernation_problem(instance_type: str, memory_gib: float | None) -> str | None:
    """Why an instance of ``instance_type`` (``memory_gib`` of RAM, ``None`` when unknown) cannot hibernate, or
    ``None`` when EC2's hibernation prerequisites admit it: a family they list (:data:`HIBERNATION_FAMILIES`), not bare
    metal, less than :data:`HIBERNATION_MAX_RAM_GIB` of RAM where the RAM is known."""
    family, _, size = instance_type.partition(".")
    if family not in HIBERNATION_FAMILIES:
        return f"{instance_type} is of the {family} family, which EC2's hibernation prerequisites do not list"
    if size.startswith("metal"):
        return f"{instance_type} is bare metal, which EC2 does not hibernate"
    if memory_gib is not None and memory_gib >= HIBERNATION_MAX_RAM_GIB:
        return f"{instance_type} has {memory_gib:g} GiB of RAM, and EC2 hibernates less than 150 GB only"
    return None


_ECR_REGISTRY = re.compile(
    r"(?P<registry>\d{12}\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?)/"
)


MOVING_TAGS = frozenset({"latest", "stable", "main", "master", "edge", "nightly", "dev", "develop"})
"""Tags that by convention move to each new build: Docker's default ``latest`` (the tag a reference without one
pulls; Docker docs: docker image pull) and the branch and channel names registries publish builds under. A version
tag can be pushed again too; these are the ones meant to be."""


def moving_tag(image: str) -> str | None:
    """The tag of ``image`` when it is one that moves (``latest``, or none, which pulls ``latest``; see
    :data:`MOVING_TAGS`) and no digest pins it; else ``None``."""
    if "@" in image:
        return None
    name = image.rsplit("/", 1)[-1]
    tag = name.rsplit(":", 1)[1] if ":" in name else None
    if tag is None:
        return "latest (no tag)"
    return tag if tag.lower() in MOVING_TAGS else None


def ecr_registry(image: str) -> tuple[str, str] | None:
    """``(registry, region)`` of a private ECR image reference, else ``None``."""
    match = _ECR_REGISTRY.match(image)
    return (match["registry"], match["region"]) if match else None


@dataclass(frozen=True)
class Prefetch:
    """What the warm-up fetches: image references, and model artifacts as ``(s3 URL, directory under
    MODELS_DIRECTORY)``."""

    images: tuple[str, ...] = ()
    artifacts: tuple[tuple[str, str], ...] = ()
    needs_path: str | None = None
    """The Parameter Store path under which other stacks publish what their services on the capacity need
    (:mod:`neuron_constructs.knowledge.warm_up_needs`), read at boot; ``None``: nothing is read."""


AMI_ROOT_VOLUME_GIB = 30
"""What the ECS Neuron AMI takes of the root volume, counted whole: the AMI is built on a 30 GB gp3 root volume
(aws/amazon-ecs-ami ``al2023neu.pkr.hcl``: ``launch_block_device_mappings`` ``volume_size =
var.block_device_size_gb``; ``variables.pkr.hcl``: ``block_device_size_gb`` default 30, which the release variables
do not change), so its snapshot is 30 GiB, the smallest root volume it launches with. The operating system, Docker
and the Neuron packages fill less than that; counting the snapshot whole keeps the sum on the safe side."""

IMAGE_ON_DISK_FACTOR = 3.0
"""How much root volume an image takes per GiB of its size in the registry: the library's assumption, not a
published figure. Registries report the compressed size (ECR ``ImageDetail.imageSizeInBytes``: the Docker client
compresses layers before it pushes them, and ``docker images`` shows the larger uncompressed size); Docker on the ECS
AMI keeps the unpacked layers, and gzip packs the Python and native libraries of a Neuron image about two to three
times, so three GiB on disk per GiB stated. State an image's size as the registry shows it (ECR console,
``aws ecr describe-images``, ``docker manifest inspect``)."""


@dataclass(frozen=True)
class Fetched:
    """One thing the warm-up fetches: an image (``size_gib`` as its registry reports it, compressed) or a model
    artifact prefix (``size_gib`` of its files); ``None`` where nobody stated the size."""

    what: str
    kind: str
    """``image`` or ``artifacts``."""
    size_gib: float | None = None

    @property
    def on_disk_gib(self) -> float | None:
        """What it takes of the root volume: an image :data:`IMAGE_ON_DISK_FACTOR` times its stated size, artifacts
        their size; ``None`` when unknown."""
        if self.size_gib is None:
            return None
        return self.size_gib * IMAGE_ON_DISK_FACTOR if self.kind == "image" else self.size_gib

    def describe(self) -> str:
        """``<what> (<n> GiB[, <m> GiB unpacked])`` or ``<what> (size unknown)``."""
        if self.size_gib is None:
            return f"{self.what} (size unknown)"
        if self.kind == "image":
            return f"{self.what} ({_gib(self.size_gib)} GiB, {_gib(self.on_disk_gib or 0)} GiB unpacked)"
        return f"{self.what} ({_gib(self.size_gib)} GiB)"


def _gib(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


@dataclass(frozen=True)
class RootVolumeRoom:
    """Whether a warm-pooled instance's root volume holds what its warm-up fetches, as far as the sizes are known."""

    root_volume_gib: int
    fetched: tuple[Fetched, ...]
    ami_gib: int = AMI_ROOT_VOLUME_GIB

    @property
    def known_gib(self) -> float:
        """The AMI and every fetch of known size, on disk."""
        return self.ami_gib + sum(f.on_disk_gib or 0 for f in self.fetched)

    @property
    def unknown(self) -> tuple[Fetched, ...]:
        """The fetches whose size nobody stated."""
        return tuple(f for f in self.fetched if f.size_gib is None)

    @property
    def needed_gib(self) -> int:
        """The smallest whole root volume that holds the known total."""
        return math.ceil(self.known_gib - 1e-9)

    @property
    def fits(self) -> bool:
        """The known total fits (unknown sizes count as nothing: the check refuses only what is known too large)."""
        return self.needed_gib <= self.root_volume_gib

    def describe(self) -> str:
        """One sentence: the AMI, each known size, the total against the volume, and what is unknown."""
        known = [f.describe() for f in self.fetched if f.size_gib is not None]
        text = (
            f"the AMI ({self.ami_gib} GiB)"
            + "".join(f" + {k}" for k in known)
            + f" = {_gib(self.known_gib)} GiB on a root volume of {self.root_volume_gib} GiB"
        )
        if self.unknown:
            text += f", not counting {len(self.unknown)} of unknown size ({', '.join(f.what for f in self.unknown)})"
        return text


def root_volume_room(root_volume_gib: int, fetched: Iterable[Fetched]) -> RootVolumeRoom:
    """The room of a root volume of ``root_volume_gib`` for ``fetched``: each thing once (the largest size stated for
    it when stated more than once), in order."""
    merged: dict[tuple[str, str], Fetched] = {}
    for item in fetched:
        key = (item.kind, item.what)
        before = merged.get(key)
        if before is None or (item.size_gib or 0) > (before.size_gib or 0):
            merged[key] = item
    return RootVolumeRoom(root_volume_gib, tuple(merged.values()))


def _q(text: str) -> str:
    """``text`` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def warm_up_script(prefetch: Prefetch, *, region: str, cli_image: str, hook: str = LIFECYCLE_HOOK_NAME) -> str:
    """The POSIX ``sh`` warm-up: wait for Docker (bounded), log in to each private ECR registry the images name,
    pull every image, copy every model artifact prefix, fetch what other stacks published under
    ``prefetch.needs_path`` (when set), then complete the lifecycle action ``hook`` (``CONTINUE``
    whatever failed: the ECS agent pulls what is missing when a task is placed). Prints one line per step and ends
    with ``neuron-warm-up: done (<n> failed)``."""
    lines = [
        "#!/bin/sh",
        "# Pull the images and copy the model artifacts of the services on this capacity, then let the warm pool stop",
        "# the instance (or let it enter service). Runs on every boot.",
        "set -u",
        f"CLI={_q(cli_image)}",
        f"REGION={_q(region)}",
        f"HOOK={_q(hook)}",
        f"MODELS={_q(MODELS_DIRECTORY)}",
        "failed=0",
        'log() { echo "neuron-warm-up: $*"; }',
        # The host network: the AWS CLI calls AWS as the instance role, whose credentials only the instance metadata
        # service gives, and the hop limit of 1 keeps it from any other network. No capability, no new privileges;
        # the models directory is mounted for the copies only.
        'run_cli() { docker run --rm --network host --cap-drop ALL --security-opt no-new-privileges "$@"; }',
        'aws_cli() { run_cli "$CLI" "$@"; }',
        'aws_sync() { run_cli -v "$MODELS:$MODELS" "$CLI" s3 sync --only-show-errors "$@"; }',
        "tries=0",
        "until docker info >/dev/null 2>&1; do",
        "  tries=$((tries + 1))",
        f'  if [ "$tries" -gt {DOCKER_WAIT_TRIES} ]; then log "docker did not start"; failed=1; break; fi',
        "  systemctl start docker >/dev/null 2>&1",
        "  sleep 5",
        "done",
        'if [ "$failed" -eq 0 ]; then',
        '  docker pull --quiet "$CLI" >/dev/null || { log "could not pull $CLI"; failed=$((failed + 1)); }',
    ]
    registries = sorted({r for r in map(ecr_registry, prefetch.images) if r is not None})
    for registry, registry_region in registries:
        lines.append(
            f"  aws_cli ecr get-login-password --region {_q(registry_region)} | docker login --username AWS "
            f"--password-stdin {_q(registry)} >/dev/null || {{ log {_q('could not log in to ' + registry)}; "
            "failed=$((failed + 1)); }"
        )
    for image in prefetch.images:
        lines.append(
            f"  if docker pull --quiet {_q(image)} >/dev/null; then log {_q('pulled ' + image)}; "
            f"else log {_q('could not pull ' + image)}; failed=$((failed + 1)); fi"
        )
    for url, directory in prefetch.artifacts:
        target = f"{MODELS_DIRECTORY}/{directory}"
        lines.append(
            f"  mkdir -p {_q(target)} && if aws_sync {_q(url)} {_q(target)}; "
            f"then log {_q('copied ' + url)}; else log {_q('could not copy ' + url)}; failed=$((failed + 1)); fi"
        )
    if prefetch.needs_path is not None:
        lines += needs_script(prefetch.needs_path)
    lines += [
        "fi",
        'token=$(curl -sf -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" '
        "http://169.254.169.254/latest/api/token || true)",
        'meta() { curl -sf -H "X-aws-ec2-metadata-token: $token" '
        '"http://169.254.169.254/latest/meta-data/$1" || true; }',
        "instance=$(meta instance-id)",
        "group=$(meta tags/instance/aws:autoscaling:groupName)",
        'if [ -n "$instance" ] && [ -n "$group" ]; then',
        '  aws_cli autoscaling complete-lifecycle-action --region "$REGION" --lifecycle-hook-name "$HOOK" '
        '--auto-scaling-group-name "$group" --instance-id "$instance" --lifecycle-action-result CONTINUE '
        '>/dev/null 2>&1 || log "no lifecycle action to complete"',
        "fi",
        'log "done ($failed failed)"',
        "exit 0",
    ]
    return "\n".join(lines) + "\n"
