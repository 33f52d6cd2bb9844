"""What the monitoring runs on each Neuron instance: the images, the daemons' commands, neuron-monitor's
configuration and the source of the metric publisher (:mod:`neuron_constructs.knowledge.metrics`).

The training launcher runs the same monitor and publisher inside each job (:mod:`neuron_constructs.training.jobs`).
"""

from __future__ import annotations

import ast
import functools
import json
from importlib import resources
from typing import Any

from aws_cdk import Duration

from neuron_constructs.knowledge.container_images import NEURON_NODE_RECOVERY, NODE_PROBLEM_DETECTOR, PYTORCH_INFERENCE

__all__ = [
    "HEALTH_NAMESPACE",
    "MONITOR_IMAGE",
    "NEURON_HARDWARE_ERRORS",
    "NODE_PROBLEM_DETECTOR_IMAGE",
    "PUBLISHER_VARIABLE",
    "RECOVERY_IMAGE",
    "health_script",
    "monitor_script",
    "neuron_monitor_config",
    "program_source",
    "publisher_source",
]

MONITOR_IMAGE = PYTORCH_INFERENCE.reference
"""The Neuron PyTorch inference container (:data:`~neuron_constructs.knowledge.container_images.PYTORCH_INFERENCE`):
it installs ``aws-neuronx-tools`` (``/opt/aws/neuron/bin/neuron-monitor``) and Python 3."""
NODE_PROBLEM_DETECTOR_IMAGE = NODE_PROBLEM_DETECTOR.reference
"""The node-problem-detector image of aws-neuron-samples ``neuron-problem-detector/ecs-npd-cdk``
(:data:`~neuron_constructs.knowledge.container_images.NODE_PROBLEM_DETECTOR`)."""
RECOVERY_IMAGE = NEURON_NODE_RECOVERY.reference
"""The Neuron node recovery image of the same sample
(:data:`~neuron_constructs.knowledge.container_images.NEURON_NODE_RECOVERY`): it marks the instance unhealthy in its
Auto Scaling group."""
HEALTH_NAMESPACE = "NeuronHealthCheck"
"""Where the recovery container publishes, as AWS's sample documents it."""
NEURON_HARDWARE_ERRORS = (
    "SRAM_UNCORRECTABLE_ERROR",
    "NC_UNCORRECTABLE_ERROR",
    "HBM_UNCORRECTABLE_ERROR",
    "DMA_ERROR",
)
"""The kernel log's unrecoverable ``NEURON_HW_ERR=`` codes the sample's detector rules match (the Neuron runtime
troubleshooting guide: ``NEURON_HW_ERR=<code> instance-id=... action=TERMINATE_INSTANCE``)."""
NEURON_MONITOR = "/opt/aws/neuron/bin/neuron-monitor"
_RUNTIME_GROUPS = ("neuroncore_counters", "memory_used", "neuron_runtime_vcpu_usage", "execution_stats")
PUBLISHER_VARIABLE = "NEURON_MONITOR_EMF"
"""The environment variable that holds the publisher's source in the monitor container."""


@functools.cache
def publisher_source() -> str:
    """The code of :mod:`neuron_constructs.knowledge.metrics`, which the daemon runs with ``python3 -c``: without
    docstrings and comments, so that editing them changes no task definition (on Managed Instances a new daemon
    revision replaces every instance)."""
    return program_source("neuron_constructs.knowledge", "metrics.py")


@functools.cache
def program_source(package: str, filename: str) -> str:
    """The code of ``filename`` in ``package``, for ``python3 -c`` in a container: docstrings and comments dropped, so
    that editing them changes no task or job definition."""
    tree = ast.parse(resources.files(package).joinpath(filename).read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                n
                for n in body
                if not (
                    isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                )
            ]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.unparse(tree) + "\n"


def neuron_monitor_config(period: Duration) -> dict[str, Any]:
    """neuron-monitor's configuration: every runtime group of every Neuron application, and the ECC counters, each
    ``period`` (Neuron user guide: neuron-monitor, "Configuration file example")."""
    every = f"{int(period.to_seconds())}s"
    return {
        "period": every,
        "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": g} for g in _RUNTIME_GROUPS]}],
        "system_metrics": [{"type": "neuron_hw_counters"}],
    }


def monitor_script(period: Duration) -> str:
    """The monitor container's command: neuron-monitor piped into the EMF publisher; if either stops, so does the
    container, and ECS starts it again."""
    config = json.dumps(neuron_monitor_config(period), separators=(",", ":"))
    return (
        "set -euo pipefail\n"
        f"printf '%s' '{config}' > /tmp/neuron-monitor.json\n"
        f'{NEURON_MONITOR} -c /tmp/neuron-monitor.json | python3 -u -c "${PUBLISHER_VARIABLE}"\n'
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
