"""The publishing path of the monitoring daemon: neuron-monitor JSON in, CloudWatch embedded metric format out.

``data/neuron_monitor_sample.json`` is the neuron-monitor user guide's report (aws-neuron/aws-neuron-sdk
``tools/neuron-sys-tools/neuron-monitor-user-guide.rst`` at 81ce03ae261e12925e53437a0f690478e6366155): its top-level
skeleton with each ``[...]`` replaced by the guide's own fragment for that group, values unchanged. Made valid JSON
by: a colon for the comma after ``"neuron_runtime_tag"``, the ``[...]``/``...`` elisions removed, the braces the
``memory_used`` and ``neuron_k8s_info`` fragments leave open closed, and trailing commas dropped.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from neuron_constructs.programs import metric_publisher as emf

SAMPLE = Path(__file__).parent / "data" / "neuron_monitor_sample.json"


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text())  # type: ignore[no-any-return]


def test_the_guide_s_report_gives_every_metric(sample: dict[str, Any]) -> None:
    values = emf.metric_values(sample)
    # trn2: 16 devices x 4 NeuronCores; cores 0 and 1 in use at 42.01 % and 42.02 %.
    assert values["NeuronCoreUtilization"] == round((42.01 + 42.02) / 64, 2)
    assert values["AcceleratorMemoryUsed"] == 12519788544
    assert values["ExecutionErrors"] == 0 and values["ExecutionsCompleted"] == 123
    assert values["ExecutionLatencyP50"] == 0.01100008 and values["ExecutionLatencyP99"] == 0.01100012
    assert values["HardwareEccCorrected"] == 0 and values["HardwareEccUncorrected"] == 0
    assert set(values) == set(emf.METRICS)


def test_errors_and_ecc_events_are_summed_across_applications_and_devices(sample: dict[str, Any]) -> None:
    report = json.loads(json.dumps(sample))
    second = json.loads(json.dumps(report["neuron_runtime_data"][0]))
    second["report"]["execution_stats"]["error_summary"].update(hardware=2, numerical=1, transient=5)
    second["report"]["execution_stats"]["latency_stats"]["total_latency"]["p99"] = 0.5
    report["neuron_runtime_data"].append(second)
    report["system_data"]["neuron_hw_counters"]["neuron_devices"] += [
        {
            "neuron_device_index": 1,
            "mem_ecc_corrected": 3,
            "mem_ecc_uncorrected": 1,
            "sram_ecc_uncorrected": 1,
            "sram_ecc_corrected": 0,
        }
    ]
    values = emf.metric_values(report)
    assert values["ExecutionErrors"] == 3  # transient errors, which the runtime recovered from, are not counted
    assert values["ExecutionHardwareErrors"] == 2
    assert values["ExecutionLatencyP99"] == 0.5
    assert (values["HardwareEccCorrected"], values["HardwareEccUncorrected"]) == (3, 2)
    assert values["NeuronCoreUtilization"] == round(2 * (42.01 + 42.02) / 64, 2)


def test_an_idle_instance_reports_zero_and_no_latency(sample: dict[str, Any]) -> None:
    idle = {k: v for k, v in sample.items() if k != "neuron_runtime_data"}
    values = emf.metric_values(idle)
    assert values["NeuronCoreUtilization"] == 0 and "ExecutionLatencyP50" not in values


def test_each_report_becomes_one_emf_line_with_both_dimension_sets_and_one_per_model(sample: dict[str, Any]) -> None:
    stream = io.StringIO(json.dumps(sample, indent=2) + "\n" + json.dumps(sample) + "\n")
    out = io.StringIO()
    os.environ[emf.CLUSTER_ENVIRONMENT] = "neuron-prod"
    try:
        emf.main(stream, out)
    finally:
        del os.environ[emf.CLUSTER_ENVIRONMENT]
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # per report: the instance's line, then the guide's one tagged application, my_app_1
    record = json.loads(lines[0])
    assert json.loads(lines[1])[emf.MODEL_DIMENSION] == "my_app_1"
    (declaration,) = record["_aws"]["CloudWatchMetrics"]
    assert declaration["Namespace"] == emf.NAMESPACE
    assert declaration["Dimensions"] == [["ClusterName"], ["ClusterName", "InstanceId"]]
    assert {m["Name"]: m["Unit"] for m in declaration["Metrics"]} == dict(emf.METRICS)
    assert (record["ClusterName"], record["InstanceId"]) == ("neuron-prod", "i-0011223344556677a")
    # EMF: every declared metric and dimension is a top-level member of the record.
    for name in [*(m["Name"] for m in declaration["Metrics"]), "ClusterName", "InstanceId"]:
        assert name in record
    assert abs(record["_aws"]["Timestamp"] - time.time() * 1000) < 60_000  # milliseconds, as EMF requires


def test_the_script_runs_as_the_daemon_runs_it(sample: dict[str, Any]) -> None:
    """``python3 -c <source>`` with the report on stdin, as the monitoring container's command does."""
    from neuron_constructs.monitoring.daemons import publisher_source

    result = subprocess.run(
        [sys.executable, "-u", "-c", publisher_source()],
        input=json.dumps(sample) + "\n",
        capture_output=True,
        text=True,
        env={"NEURON_MONITOR_CLUSTER": "c", "PATH": os.environ.get("PATH", "")},
        timeout=60,
        check=True,
    )
    instance, model = (json.loads(line) for line in result.stdout.splitlines())
    assert instance["NeuronCoreUtilization"] == emf.metric_values(sample)["NeuronCoreUtilization"]
    assert model["Model"] == "my_app_1" and model["NeuronCoreUtilization"] == round((42.01 + 42.02) / 2, 2)


@pytest.mark.parametrize(
    "before",
    ["neuron-monitor: warning, no runtime found\n", '{"neuron_runtime_data": [{"pid": 12\n', "{broken\n"],
    ids=["a warning line", "a truncated report", "a broken line"],
)
def test_a_line_that_is_not_a_report_never_stops_the_reports_after_it(sample: dict[str, Any], before: str) -> None:
    line = json.dumps(sample) + "\n"
    assert len(list(emf.reports([before, line, line]))) == 2
    assert len(list(emf.reports([before, json.dumps(sample, indent=2) + "\n", line]))) == 2


def test_an_endless_unfinished_report_is_dropped_rather_than_kept(sample: dict[str, Any]) -> None:
    flood = ['{"neuron_runtime_data": [' + "1," * 32768 + "\n"] * (emf.MAX_REPORT_CHARS // 65536 + 2)
    assert list(emf.reports([*flood, json.dumps(sample) + "\n"])) == [sample]


def test_without_instance_metadata_the_instance_comes_from_its_dmi_identity(
    sample: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a container the hop limit of 1 keeps neuron-monitor from the instance metadata service: on Nitro instances
    the DMI board asset tag is the instance id and the product name the type."""
    report = json.loads(json.dumps(sample))
    report["instance_info"] = {"instance_id": "", "instance_type": "", "error": "cannot reach the metadata service"}
    (tmp_path / "board_asset_tag").write_text("i-0fedcba9876543210\n")
    (tmp_path / "product_name").write_text("trn1.32xlarge\n")
    monkeypatch.setenv(emf.DMI_ENVIRONMENT, str(tmp_path))
    assert emf.instance_identity(report) == ("i-0fedcba9876543210", "trn1.32xlarge")
    monkeypatch.setenv(emf.DMI_ENVIRONMENT, str(tmp_path / "absent"))
    assert emf.instance_identity(report) == ("unknown", "unknown")
    assert emf.instance_identity(sample) == ("i-0011223344556677a", "trn2n.48xlarge")


def test_json_inside_a_line_that_is_no_report_is_not_published(sample: dict[str, Any]) -> None:
    assert list(emf.reports(['note: {"k": 1}\n', json.dumps(sample) + "\n"])) == [sample]


def _application(sample: dict[str, Any], *, pid: int, tag: str | None, utilization: dict[str, float]) -> Any:
    runtime = json.loads(json.dumps(sample["neuron_runtime_data"][0]))
    runtime["pid"] = pid
    if tag is None:
        runtime.pop("neuron_runtime_tag")
    else:
        runtime["neuron_runtime_tag"] = tag
    runtime["report"]["neuroncore_counters"]["neuroncores_in_use"] = {
        core: {"neuroncore_utilization": value} for core, value in utilization.items()
    }
    return runtime


def test_each_model_gets_the_utilization_of_the_cores_its_copies_hold(sample: dict[str, Any]) -> None:
    """Two copies of one model (one core each) and a second model on two cores of a 64-core instance: each model's
    utilization is over its own cores, and an application with no tag of its own (the PID stands in) is no model."""
    report = json.loads(json.dumps(sample))
    report["neuron_runtime_data"] = [
        _application(sample, pid=101, tag="llama", utilization={"0": 90.0}),
        _application(sample, pid=102, tag="llama", utilization={"1": 70.0}),
        _application(sample, pid=103, tag="embed", utilization={"2": 10.0, "3": 30.0}),
        _application(sample, pid=104, tag="104", utilization={"4": 100.0}),
        _application(sample, pid=105, tag=None, utilization={"5": 100.0}),
    ]
    models = emf.model_values(report)
    assert set(models) == {"llama", "embed"}
    assert models["llama"]["NeuronCoreUtilization"] == 80.0
    assert models["embed"]["NeuronCoreUtilization"] == 20.0
    assert models["llama"]["ExecutionsCompleted"] == 2 * 123  # summed over the copies
    assert set(models["llama"]) == set(emf.MODEL_METRICS)
    instance = emf.metric_values(report)
    assert instance["NeuronCoreUtilization"] == round((90 + 70 + 10 + 30 + 100 + 100) / 64, 2)


def test_a_model_s_emf_line_declares_the_model_and_the_model_per_instance_sets(sample: dict[str, Any]) -> None:
    (record,) = emf.model_records(sample, cluster="prod", timestamp_ms=1)
    per_model, per_instance = record["_aws"]["CloudWatchMetrics"]
    assert per_model["Dimensions"] == [["ClusterName", "Model"]]
    assert {m["Name"] for m in per_model["Metrics"]} == set(emf.MODEL_METRICS)
    assert per_instance["Dimensions"] == [["ClusterName", "Model", "InstanceId"]]
    assert [m["Name"] for m in per_instance["Metrics"]] == ["NeuronCoreUtilization"]
    assert (record["ClusterName"], record["Model"], record["InstanceId"]) == ("prod", "my_app_1", "i-0011223344556677a")
    for declaration in (per_model, per_instance):
        for name in [*(m["Name"] for m in declaration["Metrics"]), *declaration["Dimensions"][0]]:
            assert name in record


@pytest.mark.parametrize("tag", ["", "   ", "x" * 256, 7])
def test_a_tag_the_runtime_would_not_take_is_no_model(sample: dict[str, Any], tag: Any) -> None:
    report = json.loads(json.dumps(sample))
    report["neuron_runtime_data"][0]["neuron_runtime_tag"] = tag
    assert emf.model_values(report) == {}


def test_a_report_whose_fields_a_later_release_renamed_reads_as_zero_not_a_failure(sample: dict[str, Any]) -> None:
    """GIVEN the guide's report (the one documented format, Neuron 2.3.0 to 2.32) with every field the publisher reads
    renamed, as a later release might WHEN it is published THEN each metric reads 0 and one EMF line still goes out:
    the publisher never stops on a report it does not know."""
    renamed = json.loads(
        json.dumps(sample)
        .replace('"neuroncore_utilization"', '"utilization_percent"')
        .replace('"neuron_runtime_used_bytes"', '"used_bytes"')
        .replace('"error_summary"', '"errors"')
        .replace('"completed"', '"done"')
        .replace('"mem_ecc_corrected"', '"hbm_ecc_corrected"')
    )
    values = emf.metric_values(renamed)
    assert values["NeuronCoreUtilization"] == values["AcceleratorMemoryUsed"] == 0
    assert values["ExecutionErrors"] == values["ExecutionsCompleted"] == values["HardwareEccCorrected"] == 0
    out = io.StringIO()
    emf.main(io.StringIO(json.dumps(renamed) + "\n"), out)
    assert out.getvalue().count("\n") >= 1
