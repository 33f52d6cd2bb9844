"""What the monitoring runs on each Neuron instance: the images, the daemons' commands, neuron-monitor's
configuration and the source of the metric publisher (:mod:`neuron_constructs.programs.metric_publisher`).

The training launcher runs the same monitor and publisher inside each job (:mod:`neuron_constructs.training.jobs`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from aws_cdk import Duration

from neuron_constructs.base.arguments import to_seconds
from neuron_constructs.knowledge.container_images import AWS_CLI, NEURON_MONITOR, NODE_PROBLEM_DETECTOR
from neuron_constructs.programs.carrying import program_source as program_source

__all__ = [
    "DMI_DIRECTORY",
    "MONITOR_IMAGE",
    "NEURON_HARDWARE_ERRORS",
    "NODE_PROBLEM_DETECTOR_IMAGE",
    "PUBLISHER_VARIABLE",
    "RECOVERY_IMAGE",
    "health_script",
    "monitor_script",
    "neuron_monitor_config",
    "publisher_source",
    "recovery_script",
]

MONITOR_IMAGE = NEURON_MONITOR.reference
"""The Neuron team's neuron-monitor image (:data:`~neuron_constructs.knowledge.container_images.NEURON_MONITOR`):
``/opt/aws/neuron/bin/neuron-monitor`` and Python 3."""
NODE_PROBLEM_DETECTOR_IMAGE = NODE_PROBLEM_DETECTOR.reference
"""The node-problem-detector image of aws-neuron-samples ``neuron-problem-detector/ecs-npd-cdk``
(:data:`~neuron_constructs.knowledge.container_images.NODE_PROBLEM_DETECTOR`)."""
RECOVERY_IMAGE = AWS_CLI.reference
"""The AWS CLI image (:data:`~neuron_constructs.knowledge.container_images.AWS_CLI`, Amazon Linux 2: ``sh``,
``grep``, ``aws``), which runs :func:`recovery_script` and :func:`health_script`."""
DMI_DIRECTORY = "/sys/devices/virtual/dmi/id"
"""The instance's DMI identity in sysfs: on Nitro instances (every Neuron type) ``board_asset_tag`` holds the instance
id (``cat /sys/devices/virtual/dmi/id/board_asset_tag`` on a trn1.32xlarge: gist verdimrc/1ba1387e, "Probe ec2
instances without instance metadata"), readable by any user (Linux ``drivers/firmware/dmi-id.c``: mode 0444, unlike
the serial numbers) and without the instance metadata service, which the hop limit of 1 keeps from bridge-mode
containers. The metric publisher reads the same file (named by ``programs.metric_publisher.DMI_ENVIRONMENT``)."""
NEURON_HARDWARE_ERRORS = (
    "SRAM_UNCORRECTABLE_ERROR",
    "NC_UNCORRECTABLE_ERROR",
    "HBM_UNCORRECTABLE_ERROR",
    "DMA_ERROR",
)
"""The kernel log's unrecoverable ``NEURON_HW_ERR=`` codes the sample's detector rules match (the Neuron runtime
troubleshooting guide: ``NEURON_HW_ERR=<code> instance-id=... action=TERMINATE_INSTANCE``)."""
NEURON_MONITOR_BINARY = "/opt/aws/neuron/bin/neuron-monitor"
_RUNTIME_GROUPS = ("neuroncore_counters", "memory_used", "neuron_runtime_vcpu_usage", "execution_stats")
PUBLISHER_VARIABLE = "NEURON_MONITOR_EMF"
"""The environment variable that holds the publisher's source in the monitor container."""


@functools.cache
def publisher_source() -> str:
    """The code of :mod:`neuron_constructs.programs.metric_publisher`, which the daemon runs with ``python3 -c``:
    without docstrings and comments, so that editing them changes no task definition (on Managed Instances a new
    daemon revision replaces every instance)."""
    return program_source("neuron_constructs.programs", "metric_publisher.py")


def neuron_monitor_config(period: Duration) -> dict[str, Any]:
    """neuron-monitor's configuration: every runtime group of every Neuron application, and the ECC counters, each
    ``period`` (Neuron user guide: neuron-monitor, "Configuration file example")."""
    every = f"{int(to_seconds(period))}s"
    return {
        "period": every,
        "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": g} for g in _RUNTIME_GROUPS]}],
        "system_metrics": [{"type": "neuron_hw_counters"}],
    }


def monitor_script(period: Duration, binary: str = NEURON_MONITOR_BINARY) -> str:
    """The monitor container's command (POSIX sh): neuron-monitor piped into the EMF publisher; if either stops, so
    does the other (end of input, or a broken pipe), then the container, and ECS starts it again.

    It first checks that the image holds ``binary`` (``/opt/aws/neuron/bin/neuron-monitor``) and ``python3``, where the
    neuron-monitor image 1.3.0 has them: no source says what a newer tag holds, so an image without them stops the
    container with one line naming what is missing rather than a shell's "not found" in a pipe."""
    config = json.dumps(neuron_monitor_config(period), separators=(",", ":"))
    return (
        "set -eu\n"
        f"[ -x {binary} ] || {{ echo 'neuron-monitor: this image has no {binary}: run a neuron-monitor image that "
        "does (monitor_image=)'; exit 1; }\n"
        "command -v python3 >/dev/null || { echo 'neuron-monitor: this image has no python3 for the metric "
        "publisher: run a neuron-monitor image that does (monitor_image=)'; exit 1; }\n"
        f"printf '%s' '{config}' > /tmp/neuron-monitor.json\n"
        f'{binary} -c /tmp/neuron-monitor.json | python3 -u -c "${PUBLISHER_VARIABLE}"\n'
    )


def health_script(kmsg: str = "/dev/kmsg") -> str:
    """The Managed Instances health daemon's command (POSIX sh): exit 1 at the first unrecoverable Neuron error in
    the kernel log, so the critical daemon stops and ECS replaces the instance. If the log cannot be read (a reader
    that fell behind the kernel's ring buffer, or no permission) it says so and watches again a minute later, from
    the start of the buffer; it never stops for that, so a misconfiguration cannot replace the fleet."""
    codes = "|".join(NEURON_HARDWARE_ERRORS)
    return (
        f"KMSG=${{NEURON_HEALTH_KMSG:-{kmsg}}}\n"
        "while :; do\n"
        f"  if line=$(grep -m1 -E 'NEURON_HW_ERR=({codes})' \"$KMSG\"); then\n"
        '    echo "neuron-health: unrecoverable Neuron hardware error, stopping so ECS replaces this instance: $line"\n'
        "    exit 1\n"
        "  fi\n"
        '  echo "neuron-health: cannot read $KMSG; watching again in 60 s" >&2\n'
        "  sleep 60\n"
        "done\n"
    )


def recovery_script(kmsg: str = "/dev/kmsg", dmi: str = DMI_DIRECTORY) -> str:
    """The Auto Scaling recovery container's command (POSIX sh, in the AWS CLI image): at the first unrecoverable
    Neuron error in the kernel log, log it and, with ``ENABLE_RECOVERY=true``, mark this instance unhealthy in its
    Auto Scaling group (``aws autoscaling set-instance-health``), which replaces it; then wait, so that a restart does
    not mark it again. The instance id is read from the instance's DMI identity (:data:`DMI_DIRECTORY`), never from
    the instance metadata service: the container runs in the bridge network, where the hop limit of 1 keeps the
    metadata service (and the instance role) out of reach. A kernel log it cannot read is retried a minute later,
    from the start of the buffer; a call that fails is retried a minute later."""
    codes = "|".join(NEURON_HARDWARE_ERRORS)
    return (
        f"KMSG=${{NEURON_HEALTH_KMSG:-{kmsg}}}\n"
        f"DMI=${{NEURON_RECOVERY_DMI:-{dmi}}}\n"
        'INSTANCE=$(cat "$DMI/board_asset_tag" 2>/dev/null || true)\n'
        'case "$INSTANCE" in\n'
        "  i-*) ;;\n"
        '  *) echo "neuron-recovery: no instance id in $DMI/board_asset_tag; reporting only" >&2; INSTANCE= ;;\n'
        "esac\n"
        "while :; do\n"
        f"  if line=$(grep -m1 -E 'NEURON_HW_ERR=({codes})' \"$KMSG\"); then\n"
        '    echo "neuron-recovery: unrecoverable Neuron hardware error on ${INSTANCE:-this instance}: $line"\n'
        '    if [ "${ENABLE_RECOVERY:-false}" = true ] && [ -n "$INSTANCE" ]; then\n'
        '      until aws autoscaling set-instance-health --instance-id "$INSTANCE" --health-status Unhealthy '
        "--no-should-respect-grace-period; do\n"
        '        echo "neuron-recovery: could not mark $INSTANCE unhealthy; trying again in 60 s" >&2\n'
        "        sleep 60\n"
        "      done\n"
        '      echo "neuron-recovery: marked $INSTANCE unhealthy; its Auto Scaling group replaces it"\n'
        "    fi\n"
        "    while :; do sleep 3600; done\n"
        "  fi\n"
        '  echo "neuron-recovery: cannot read $KMSG; watching again in 60 s" >&2\n'
        "  sleep 60\n"
        "done\n"
    )
