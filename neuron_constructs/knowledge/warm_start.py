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

:func:`warm_up_script` writes the script; it uses only ``sh``, ``docker``, ``curl`` and the AWS CLI image (run with
the host's network, which the instance metadata hop limit of 1 lets through), so the AMI needs no AWS CLI. No AWS
CDK import here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "LIFECYCLE_HOOK_NAME",
    "MODELS_DIRECTORY",
    "PREFETCH_AGENT_SETTINGS",
    "WARM_POOL_AGENT_SETTINGS",
    "WARM_UP_FILE",
    "Prefetch",
    "ecr_registry",
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

_ECR_REGISTRY = re.compile(
    r"(?P<registry>\d{12}\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?)/"
)


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


def _q(text: str) -> str:
    """``text`` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def warm_up_script(prefetch: Prefetch, *, region: str, cli_image: str, hook: str = LIFECYCLE_HOOK_NAME) -> str:
    """The POSIX ``sh`` warm-up: wait for Docker (bounded), log in to each private ECR registry the images name,
    pull every image, copy every model artifact prefix, then complete the lifecycle action ``hook`` (``CONTINUE``
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
        'aws_cli() { docker run --rm --network host -v "$MODELS:$MODELS" "$CLI" "$@"; }',
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
            f"  mkdir -p {_q(target)} && if aws_cli s3 sync --only-show-errors {_q(url)} {_q(target)}; "
            f"then log {_q('copied ' + url)}; else log {_q('could not copy ' + url)}; failed=$((failed + 1)); fi"
        )
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
