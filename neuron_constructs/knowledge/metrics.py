"""neuron-monitor reports to CloudWatch metrics, as embedded metric format (EMF) lines on stdout.

The monitoring daemon runs ``neuron-monitor | python3 -c <this file>``: neuron-monitor writes one
JSON report per period (Neuron user guide: neuron-monitor, "The JSON output format"); this script
turns each into one EMF log line, which the container's ``awslogs`` driver sends to CloudWatch
Logs, and CloudWatch Logs extracts the metrics from it. No CloudWatch API call is made, so the
daemon needs no ``cloudwatch:PutMetricData`` permission, only its log stream.

Every metric goes to :data:`NAMESPACE` with two dimension sets: ``ClusterName`` (the cluster
total, for alarms) and ``ClusterName, InstanceId`` (per instance, for the dashboard). The table
:data:`METRICS` is the one place names and units are defined: the dashboard and alarms of
:mod:`neuron_constructs.monitoring.monitoring` use it. Standard library only: it runs in the Neuron container.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

__all__ = ["DIMENSION_SETS", "METRICS", "NAMESPACE", "emf_record", "main", "metric_values", "reports"]

NAMESPACE = "NeuronConstructs/Neuron"
"""The CloudWatch namespace of the metrics."""
CLUSTER_DIMENSION = "ClusterName"
INSTANCE_DIMENSION = "InstanceId"
DIMENSION_SETS = ((CLUSTER_DIMENSION,), (CLUSTER_DIMENSION, INSTANCE_DIMENSION))
"""Each metric is stored once per dimension set: the cluster's total and each instance's value."""
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


def metric_values(report: Mapping[str, Any]) -> dict[str, float]:
    """The :data:`METRICS` of one neuron-monitor report (latency only when an application ran in the period)."""
    hardware = report.get("neuron_hardware_info") or {}
    total_cores = int(
        _number(hardware.get("neuron_device_count")) * _number(hardware.get("neuroncore_per_device_count"))
    )
    runtimes = [r for r in report.get("neuron_runtime_data") or [] if isinstance(r, dict)]
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
    devices = ((report.get("system_data") or {}).get("neuron_hw_counters") or {}).get("neuron_devices") or []
    corrected = sum(_number(d.get("mem_ecc_corrected")) + _number(d.get("sram_ecc_corrected")) for d in devices)
    uncorrected = sum(_number(d.get("mem_ecc_uncorrected")) + _number(d.get("sram_ecc_uncorrected")) for d in devices)
    values = {
        "NeuronCoreUtilization": round(utilization / max(total_cores, used_cores, 1), 2),
        "AcceleratorMemoryUsed": memory,
        "ExecutionErrors": errors,
        "ExecutionHardwareErrors": hardware_errors,
        "ExecutionsCompleted": completed,
        "HardwareEccCorrected": corrected,
        "HardwareEccUncorrected": uncorrected,
    }
    for percentile, found in latencies.items():
        if found:
            values[f"ExecutionLatency{percentile.upper()}"] = max(found)
    return values


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


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    """Read neuron-monitor's reports from ``stdin`` and write one EMF line per report to ``stdout``."""
    cluster = os.environ.get(CLUSTER_ENVIRONMENT, "unknown")
    for report in reports(stdin):
        record = emf_record(report, cluster=cluster, timestamp_ms=int(time.time() * 1000))
        stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
