"""neuron-monitor reports to CloudWatch metrics, as embedded metric format (EMF) lines on stdout.

The monitoring daemon runs ``neuron-monitor | python3 -c <this file>``: neuron-monitor writes one
JSON report per period (Neuron user guide: neuron-monitor, "The JSON output format"); this script
turns each into one EMF log line, which the container's ``awslogs`` driver sends to CloudWatch
Logs, and CloudWatch Logs extracts the metrics from it. No CloudWatch API call is made, so the
daemon needs no ``cloudwatch:PutMetricData`` permission, only its log stream.

Every metric goes to :data:`NAMESPACE` with two dimension sets: ``ClusterName`` (the cluster
total, for alarms) and ``ClusterName, InstanceId`` (per instance, for the dashboard). The table
:data:`METRICS` is the one place names and units are defined: the dashboard and alarms of
:mod:`neuron_constructs.monitoring.monitoring` use it.

Per model: neuron-monitor reports each Neuron application under its tag, the value of its
:data:`PROCESS_TAG_VARIABLE` (``NEURON_PROCESS_TAG``; the application's PID when it has none - Neuron user guide:
neuron-monitor, "Neuron applications tagging"). The services, slices and fleet models of the library set it to
their model's name, and each report adds one EMF line per tagged model: :data:`MODEL_METRICS` under
``ClusterName, Model`` (what scaling tracks) and NeuronCore utilization under ``ClusterName, Model, InstanceId``
(what ``neuron-ecs inspect --metrics`` shows per task). Untagged applications count in the instance's figures
only. Standard library only: it runs in the Neuron container.

The report fields read here (``neuron_runtime_data[].report`` groups ``neuroncore_counters``, ``memory_used``,
``execution_stats``; ``neuron_runtime_tag`` and ``pid``; ``system_data.neuron_hw_counters.neuron_devices[]``'s ECC
counters; ``neuron_hardware_info``'s device and NeuronCore counts; ``instance_info``) have one documented format: the
neuron-monitor user guide ("The JSON output format") shows them unchanged from Neuron 2.3.0 (10 October 2022), its
first release in aws-neuron/aws-neuron-sdk, to the 2.32 guide (at 81ce03ae; recorded in
``tests/data/neuron_monitor_sample.json``). The one field Neuron removed from the report, ``neuron-device-version``
(Neuron 2.20, "'neuron-device-version' field in neuron-monitor no longer supported"), is not read, and no
announcement up to Neuron 2.34 changes the others. A field a later release renames reads as 0 (every value goes
through ``_number``): the publisher never stops on a report it does not know. The launcher and the daemon start
``neuron-monitor -c <file>`` (``-c, --config-file``, in the same guide from Neuron 2.3.0 on).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

__all__ = [
    "DIMENSION_SETS",
    "METRICS",
    "MODEL_DIMENSION",
    "MODEL_DIMENSION_SETS",
    "MODEL_INSTANCE_DIMENSION_SETS",
    "MODEL_METRICS",
    "NAMESPACE",
    "PROCESS_TAG_VARIABLE",
    "emf_record",
    "main",
    "metric_values",
    "model_records",
    "model_values",
    "reports",
]

NAMESPACE = "NeuronConstructs/Neuron"
"""The CloudWatch namespace of the metrics."""
CLUSTER_DIMENSION = "ClusterName"
INSTANCE_DIMENSION = "InstanceId"
MODEL_DIMENSION = "Model"
"""The dimension that names a model: the ``NEURON_PROCESS_TAG`` of its Neuron applications."""
DIMENSION_SETS = ((CLUSTER_DIMENSION,), (CLUSTER_DIMENSION, INSTANCE_DIMENSION))
"""Each metric is stored once per dimension set: the cluster's total and each instance's value."""
MODEL_DIMENSION_SETS = ((CLUSTER_DIMENSION, MODEL_DIMENSION),)
"""Each model's :data:`MODEL_METRICS`, over every instance it runs on."""
MODEL_INSTANCE_DIMENSION_SETS = ((CLUSTER_DIMENSION, MODEL_DIMENSION, INSTANCE_DIMENSION),)
"""Each model's NeuronCore utilization on each instance."""
PROCESS_TAG_VARIABLE = "NEURON_PROCESS_TAG"
"""The environment variable that tags a Neuron application for neuron-monitor (up to 255 characters)."""
CLUSTER_ENVIRONMENT = "NEURON_MONITOR_CLUSTER"
"""The environment variable that names the cluster (the daemon's task definition sets it)."""
DMI_ENVIRONMENT = "NEURON_MONITOR_DMI"
"""Where the instance's DMI identity is read when neuron-monitor reports none (default the kernel's sysfs): on
Nitro instances ``board_asset_tag`` holds the instance id and ``product_name`` the instance type, readable without
the instance metadata service, which the hop limit of 1 keeps from containers."""

METRICS: Mapping[str, str] = {
    "NeuronCoreUtilization": "Percent",
    "AcceleratorMemoryUsed": "Bytes",
    "ExecutionErrors": "Count",
    "ExecutionHardwareErrors": "Count",
    "ExecutionsCompleted": "Count",
    "ExecutionLatencyP50": "Seconds",
    "ExecutionLatencyP99": "Seconds",
    "HardwareEccCorrected": "Count",
    "HardwareEccUncorrected": "Count",
}
"""Metric name -> CloudWatch unit. NeuronCoreUtilization: the average over every NeuronCore of the instance
(``neuroncore_utilization`` of the cores in use, the others at 0); AcceleratorMemoryUsed: device memory the Neuron
applications hold (``memory_used.neuron_runtime_used_bytes.neuron_device``); ExecutionErrors: the
``execution_stats.error_summary`` counts of the period that failed an execution (generic, numerical, model, runtime,
hardware; not ``transient``, which the runtime recovered from); ExecutionHardwareErrors: its ``hardware`` count
("hardware errors such as uncorrectable ECC issues");
ExecutionsCompleted: ``execution_summary.completed``; ExecutionLatencyP50/P99: the slowest application's
``latency_stats.total_latency`` percentile; HardwareEcc*: ``system_data.neuron_hw_counters`` DRAM and SRAM ECC events
of every device."""

MODEL_METRICS = (
    "NeuronCoreUtilization",
    "AcceleratorMemoryUsed",
    "ExecutionErrors",
    "ExecutionsCompleted",
    "ExecutionLatencyP50",
    "ExecutionLatencyP99",
)
"""The per-application metrics published per model. NeuronCoreUtilization is the average over the NeuronCores the
model's applications on the instance hold (every copy of it there), so a model busy on its cores reads near 100 %
however few of the instance's cores it has; the rest are the sums (latency: the slowest) of its applications."""


MAX_TAG_CHARS = 255
"""The longest ``NEURON_PROCESS_TAG`` the Neuron runtime takes (neuron-monitor user guide: "a 255 character
string")."""
MAX_REPORT_CHARS = 1024 * 1024
"""A report longer than this is dropped: neuron-monitor's reports are a few kilobytes per application."""
_REPORT_KEYS = {"neuron_runtime_data", "system_data", "instance_info", "neuron_hardware_info"}
"""A neuron-monitor report has these members ("instance_info" and "neuron_hardware_info" always); other JSON a line
may hold is not a report."""


def reports(stream: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON documents of a neuron-monitor stream, one per report, whether printed on one line or several. A line
    that starts no JSON document (a warning, a truncated report) is skipped, and so is an unfinished document longer
    than ``MAX_REPORT_CHARS`` (1 MiB): one bad line never stops the reports after it."""
    decoder = json.JSONDecoder()
    buffer = ""
    for chunk in stream:
        buffer += chunk
        while True:
            start = buffer.find("{")
            if start < 0:
                buffer = ""
                break
            buffer = buffer[start:]
            try:
                document, end = decoder.raw_decode(buffer)
            except (json.JSONDecodeError, RecursionError):
                # Reports start at the beginning of a line, and neuron-monitor writes one at a time: text before the
                # last line that starts a document can never complete one.
                later = buffer.rfind("\n{")
                if later >= 0:
                    buffer = buffer[later + 1 :]
                    continue
                if len(buffer) > MAX_REPORT_CHARS:
                    buffer = ""
                break
            buffer = buffer[end:]
            if isinstance(document, dict) and _REPORT_KEYS & set(document):
                yield document


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _group(runtime: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    group = (runtime.get("report") or {}).get(name)
    return group if isinstance(group, dict) else {}


def _runtimes(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in report.get("neuron_runtime_data") or [] if isinstance(r, dict)]


def _application_values(runtimes: Iterable[Mapping[str, Any]], total_cores: int) -> dict[str, float]:
    """The per-application metrics of ``runtimes`` together; utilization averaged over ``total_cores`` (or the cores
    they use, when more)."""
    utilization = 0.0
    used_cores = 0
    memory = errors = hardware_errors = completed = 0.0
    latencies: dict[str, list[float]] = {"p50": [], "p99": []}
    for runtime in runtimes:
        cores = _group(runtime, "neuroncore_counters").get("neuroncores_in_use") or {}
        for core in cores.values():
            utilization += _number((core or {}).get("neuroncore_utilization"))
            used_cores += 1
        used = _group(runtime, "memory_used").get("neuron_runtime_used_bytes") or {}
        memory += _number(used.get("neuron_device"))
        execution = _group(runtime, "execution_stats")
        summary = execution.get("error_summary") or {}
        errors += sum(_number(v) for k, v in summary.items() if k != "transient")
        hardware_errors += _number(summary.get("hardware"))
        completed += _number((execution.get("execution_summary") or {}).get("completed"))
        total_latency = (execution.get("latency_stats") or {}).get("total_latency")
        if isinstance(total_latency, dict):
            for percentile, seen in latencies.items():
                if percentile in total_latency:
                    seen.append(_number(total_latency[percentile]))
    values = {
        "NeuronCoreUtilization": round(utilization / max(total_cores, used_cores, 1), 2),
        "AcceleratorMemoryUsed": memory,
        "ExecutionErrors": errors,
        "ExecutionHardwareErrors": hardware_errors,
        "ExecutionsCompleted": completed,
    }
    for percentile, found in latencies.items():
        if found:
            values[f"ExecutionLatency{percentile.upper()}"] = max(found)
    return values


def metric_values(report: Mapping[str, Any]) -> dict[str, float]:
    """The :data:`METRICS` of one neuron-monitor report (latency only when an application ran in the period)."""
    hardware = report.get("neuron_hardware_info") or {}
    total_cores = int(
        _number(hardware.get("neuron_device_count")) * _number(hardware.get("neuroncore_per_device_count"))
    )
    values = _application_values(_runtimes(report), total_cores)
    devices = ((report.get("system_data") or {}).get("neuron_hw_counters") or {}).get("neuron_devices") or []
    corrected = sum(_number(d.get("mem_ecc_corrected")) + _number(d.get("sram_ecc_corrected")) for d in devices)
    uncorrected = sum(_number(d.get("mem_ecc_uncorrected")) + _number(d.get("sram_ecc_uncorrected")) for d in devices)
    values["HardwareEccCorrected"] = corrected
    values["HardwareEccUncorrected"] = uncorrected
    return values


def model_tag(runtime: Mapping[str, Any]) -> str | None:
    """The model an application reports for: its ``neuron_runtime_tag``, ``None`` when it has none of its own (no
    tag, or the PID neuron-monitor uses in place of one)."""
    tag = runtime.get("neuron_runtime_tag")
    if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS:
        return None
    return None if tag == str(runtime.get("pid")) else tag


def model_values(report: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Model (tag) -> its :data:`MODEL_METRICS` in one report: every application with that tag together, its
    utilization averaged over the NeuronCores they hold."""
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for runtime in _runtimes(report):
        tag = model_tag(runtime)
        if tag is not None:
            by_model.setdefault(tag, []).append(runtime)
    found: dict[str, dict[str, float]] = {}
    for tag, runtimes in sorted(by_model.items()):
        values = _application_values(runtimes, 0)
        found[tag] = {name: values[name] for name in MODEL_METRICS if name in values}
    return found


def _dmi(name: str) -> str:
    try:
        with open(os.path.join(os.environ.get(DMI_ENVIRONMENT, "/sys/devices/virtual/dmi/id"), name)) as source:
            return source.read().strip()
    except OSError:
        return ""


def instance_identity(report: Mapping[str, Any]) -> tuple[str, str]:
    """(instance id, instance type): neuron-monitor's ``instance_info`` (from the instance metadata service), else the
    instance's DMI identity, else ``unknown``."""
    instance = report.get("instance_info") or {}
    instance_id = str(instance.get("instance_id") or "")
    if not instance_id.startswith("i-"):
        tag = _dmi("board_asset_tag")
        instance_id = tag if tag.startswith("i-") else "unknown"
    instance_type = str(instance.get("instance_type") or "") or _dmi("product_name") or "unknown"
    return instance_id, instance_type


def emf_record(report: Mapping[str, Any], *, cluster: str, timestamp_ms: int) -> dict[str, Any]:
    """One EMF document for a report: the values, their dimensions, and the metric declarations."""
    values = metric_values(report)
    instance_id, instance_type = instance_identity(report)
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [list(d) for d in DIMENSION_SETS],
                    "Metrics": [{"Name": name, "Unit": METRICS[name]} for name in values],
                }
            ],
        },
        CLUSTER_DIMENSION: cluster,
        INSTANCE_DIMENSION: instance_id,
        "InstanceType": instance_type,
        **values,
    }


def model_records(report: Mapping[str, Any], *, cluster: str, timestamp_ms: int) -> list[dict[str, Any]]:
    """One EMF document per tagged model of a report: its :data:`MODEL_METRICS` per cluster and model, and its
    NeuronCore utilization per cluster, model and instance."""
    instance_id, instance_type = instance_identity(report)
    records = []
    for model, values in model_values(report).items():
        records.append(
            {
                "_aws": {
                    "Timestamp": timestamp_ms,
                    "CloudWatchMetrics": [
                        {
                            "Namespace": NAMESPACE,
                            "Dimensions": [list(d) for d in MODEL_DIMENSION_SETS],
                            "Metrics": [{"Name": name, "Unit": METRICS[name]} for name in values],
                        },
                        {
                            "Namespace": NAMESPACE,
                            "Dimensions": [list(d) for d in MODEL_INSTANCE_DIMENSION_SETS],
                            "Metrics": [{"Name": "NeuronCoreUtilization", "Unit": METRICS["NeuronCoreUtilization"]}],
                        },
                    ],
                },
                CLUSTER_DIMENSION: cluster,
                MODEL_DIMENSION: model,
                INSTANCE_DIMENSION: instance_id,
                "InstanceType": instance_type,
                **values,
            }
        )
    return records


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    """Read neuron-monitor's reports from ``stdin`` and write one EMF line per report, and one per tagged model, to
    ``stdout``."""
    cluster = os.environ.get(CLUSTER_ENVIRONMENT, "unknown")
    for report in reports(stdin):
        timestamp_ms = int(time.time() * 1000)
        records = [emf_record(report, cluster=cluster, timestamp_ms=timestamp_ms)]
        records += model_records(report, cluster=cluster, timestamp_ms=timestamp_ms)
        for record in records:
            stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
