"""A model's start measured where it happens: the engine-metrics collector against a local server answering recorded
vLLM Neuron ``/metrics`` outputs (``data/vllm-neuron-2.34-metrics-*.txt``, see ``data/README.md``), its bounds, and the
sidecar, alarm and dashboard rows ``NeuronService(engine_metrics=...)`` adds, in a platform stack and a model stack."""

from __future__ import annotations

import io
import json
import math
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import MEASURED_IN_CI, imported_vpc
from hypothesis import example, given
from hypothesis import strategies as st

from neuron_constructs import (
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronMonitoring,
    NeuronService,
)
from neuron_constructs.knowledge import engine_metrics as table
from neuron_constructs.knowledge import engines, rules
from neuron_constructs.knowledge.container_images import VLLM, VLLM_TRN2
from neuron_constructs.monitoring import dashboard
from neuron_constructs.monitoring import engine_metrics as sidecar
from neuron_constructs.monitoring.engine_metrics import EngineMetrics
from neuron_constructs.programs import engine_metrics as collector
from neuron_constructs.programs.metric_publisher import NAMESPACE

DATA = Path(__file__).parent / "data"
COLD = (DATA / "vllm-neuron-2.34-metrics-cold.txt").read_text()
WARM = (DATA / "vllm-neuron-2.34-metrics-warm.txt").read_text()
TABLE = table.table_json(engines.VLLM_NEURON_NATIVE, NAMESPACE)
START_TABLE = json.dumps(
    {**json.loads(TABLE), "metrics": [m for m in json.loads(TABLE)["metrics"] if m["when"] == "start"]}
)
"""The start rows alone: a collector with them stops once the start is written."""
SERVING = [(DATA / f"vllm-0.29-serving-metrics-{n}.txt").read_text() for n in (1, 2)]
ENV = {"account": "123456789012", "region": "us-east-1"}


class Engine(BaseHTTPRequestHandler):
    """A stand-in engine: ``/health`` and ``/metrics`` answer what the server holds; ``/task`` is the task metadata."""

    def do_GET(self) -> None:
        server: Any = self.server
        if self.path == "/slow/metrics":
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(200):  # a byte every 0.2 s: never done within the timeout
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            return
        if self.path == "/many/metrics":
            line = b"vllm_neuron:startup_time_seconds 1\n"
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(96):  # 3 MiB of short samples, beyond the byte bound
                    self.wfile.write(line * (32768 // len(line)))
            except OSError:
                pass
            return
        if self.path == "/endless/metrics":
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(1024):  # 16 MiB of one line, beyond every bound
                    self.wfile.write(b"x" * 16384)
            except OSError:
                pass
            return
        body = {"/health": server.health, "/metrics": server.metrics, "/task": server.task}.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def engine() -> Iterator[Any]:
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    httpd.daemon_threads = True
    httpd.health, httpd.metrics, httpd.task = "", COLD, "{}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _run(
    url: str, *, rounds: int = 1, settings: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The collector's EMF documents and its sentences for ``rounds`` rounds against ``url``."""
    environment = {
        collector.URL_VARIABLE: url,
        collector.MODEL_VARIABLE: "Model/Llm",
        collector.CLUSTER_VARIABLE: "neuron",
        collector.TABLE_VARIABLE: TABLE,
        collector.PERIOD_VARIABLE: "0.01",
        **(settings or {}),
    }
    out = io.StringIO()
    assert collector.main(environment, out, rounds=rounds) == 0
    lines = out.getvalue().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")], [x for x in lines if not x.startswith("{")]


def _value(documents: list[dict[str, Any]], name: str, **dimensions: str) -> float:
    (value,) = [d[name] for d in documents if name in d and all(d.get(k) == v for k, v in dimensions.items())]
    return float(value)


def test_a_cold_start_that_should_be_warm_writes_its_start_each_bucket_and_compiled_at_start(engine: Any) -> None:
    # GIVEN an engine that answers healthy and the recorded metrics of a start that compiled every bucket
    # WHEN the collector of a copy that should start warm reads it once
    documents, _ = _run(engine.url, settings={collector.EXPECT_WARM_VARIABLE: "1"})
    # THEN the start, the load, the compile (the buckets' sum) and each bucket are written, and the copy compiled
    assert _value(documents, "StartupTime") == 688.4
    assert _value(documents, "ModelLoadTime") == 41.2
    assert _value(documents, "ModelLoadSize") == 16060522496
    assert _value(documents, "CompilationTime", Bucket="prefill_s1024") == 312.5
    assert _value(documents, "CompilationTime", Bucket="decode_b8") == 96.75
    assert round(sum(d["CompilationTime"] for d in documents if "CompilationTime" in d and "Bucket" not in d), 2) == (
        round(184.21 + 312.5 + 96.75, 2)
    )
    assert _value(documents, "BucketsCompiled") == 3 and _value(documents, "CompiledAtStart") == 1
    assert _value(documents, "TimeToHealthy") >= 0
    # AND every document is EMF in the library's namespace, per cluster and model (and bucket)
    for document in documents:
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        assert directive["Dimensions"][0][:2] == ["ClusterName", "Model"]
        assert (document["ClusterName"], document["Model"]) == ("neuron", "Model/Llm")
        assert all(m["Name"] in document for m in directive["Metrics"])


def test_a_warm_start_compiled_nothing(engine: Any) -> None:
    engine.metrics = WARM
    documents, _ = _run(engine.url, settings={collector.EXPECT_WARM_VARIABLE: "1"})
    assert _value(documents, "BucketsCompiled") == 0 and _value(documents, "CompiledAtStart") == 0
    assert _value(documents, "StartupTime") == 71.9


def test_a_copy_not_expected_warm_counts_its_compiled_buckets_without_compiled_at_start(engine: Any) -> None:
    documents, _ = _run(engine.url, settings={collector.EXPECT_WARM_VARIABLE: "0"})
    assert _value(documents, "BucketsCompiled") == 3 and _value(documents, "CompiledAtStart") == 0


def test_the_threshold_tells_a_compile_from_a_cache_hit(engine: Any) -> None:
    # GIVEN a threshold above the shortest cold bucket (96.75 s) and below the others
    documents, _ = _run(engine.url, settings={collector.COMPILED_ABOVE_VARIABLE: "100"})
    assert _value(documents, "BucketsCompiled") == 2


def test_the_start_is_written_once_and_time_to_healthy_once(engine: Any) -> None:
    documents, _ = _run(engine.url, rounds=3)
    assert sum("StartupTime" in d for d in documents) == 1
    assert sum("TimeToHealthy" in d for d in documents) == 1


def test_time_to_healthy_counts_from_the_task_s_image_pull(engine: Any) -> None:
    # GIVEN task metadata whose PullStartedAt is 90 s before now
    started = time.time() - 90
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)) + f".{int(started % 1 * 1e9):09d}Z"
    engine.task = json.dumps({"PullStartedAt": stamp})
    documents, _ = _run(engine.url, settings={collector.METADATA_VARIABLE: engine.url})
    assert 89 <= _value(documents, "TimeToHealthy") <= 100


def test_before_the_engine_is_healthy_nothing_of_the_start_is_written(engine: Any) -> None:
    # GIVEN an engine that does not answer /health yet and reports no start metric yet
    engine.health = None
    engine.metrics = "# HELP vllm:num_requests_running x\n"
    documents, sentences = _run(engine.url)
    assert documents == []
    assert sentences == [f"engine-metrics: {engine.url}/health answered 404: not healthy yet"]


def test_the_carried_collector_runs_alone_and_stops_once_the_start_is_written(engine: Any) -> None:
    source = sidecar.collector_source()
    environment = {
        collector.URL_VARIABLE: engine.url,
        collector.MODEL_VARIABLE: "Model/Llm",
        collector.TABLE_VARIABLE: START_TABLE,
        collector.PERIOD_VARIABLE: "0.05",
    }
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-u", "-c", source],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert '"StartupTime":688.4' in result.stdout
    assert result.stdout.rstrip().endswith("stopping")


def test_lines_that_are_not_samples_are_skipped_and_counted() -> None:
    bad = 'vllm_neuron:startup_time_seconds{model_name="x" 5\nnot a sample\nvllm_neuron:startup_time_seconds NaN\n'
    text = COLD + bad
    scrape = collector.parse(text, ["vllm_neuron:startup_time_seconds"])
    assert scrape.skipped == {"lines that are not a Prometheus sample": 2, "values that are not finite numbers": 1}
    assert list(scrape.series["vllm_neuron:startup_time_seconds"].values()) == [688.4]


def test_label_values_with_escapes_are_read() -> None:
    line = 'vllm_neuron:compilation_time_seconds{bucket_name="a\\"b\\\\c",model_name="m, n"} 2 1700000000\n'
    scrape = collector.parse(line, ["vllm_neuron:compilation_time_seconds"])
    (labels,) = scrape.series["vllm_neuron:compilation_time_seconds"]
    assert dict(labels) == {"bucket_name": 'a"b\\c', "model_name": "m, n"}


def test_buckets_beyond_the_bound_are_skipped() -> None:
    lines = "".join(
        f'vllm_neuron:compilation_time_seconds{{bucket_name="b{i}"}} 1\n' for i in range(collector.MAX_SERIES + 5)
    )
    scrape = collector.parse(lines, ["vllm_neuron:compilation_time_seconds"])
    assert len(scrape.series["vllm_neuron:compilation_time_seconds"]) == collector.MAX_SERIES
    assert scrape.skipped == {f"label sets beyond {collector.MAX_SERIES} per metric": 5}


def test_a_line_longer_than_the_bound_is_skipped() -> None:
    scrape = collector.parse("x" * (collector.MAX_LINE_CHARS + 1) + "\n" + COLD, ["vllm_neuron:startup_time_seconds"])
    assert scrape.skipped == {f"lines longer than {collector.MAX_LINE_CHARS} characters": 1}


def test_an_endless_answer_is_cut_at_the_byte_bound(engine: Any) -> None:
    status, text, cut = collector.read_answer(engine.url + "/endless/metrics")
    assert (status, cut) == (200, True)
    assert len(text) <= collector.MAX_ANSWER_BYTES
    # AND the collector says so in one sentence, with no traceback
    out = io.StringIO()
    state = collector.Collector(table=json.loads(TABLE), model="m", cluster="c", started=time.time())
    state.healthy_at = time.time()
    collector.collect_once(state, engine.url + "/endless", out, time.time())
    assert "skipped in" in out.getvalue() and "Traceback" not in out.getvalue()


@MEASURED_IN_CI
@pytest.mark.parametrize("answer", ["endless", "many"])
def test_the_carried_collector_reads_an_endless_answer_within_the_sidecar_s_memory(engine: Any, answer: str) -> None:
    # GIVEN the collector as carried, in an interpreter of its own
    driver = (
        "import sys, time, tracemalloc\n"
        "namespace = {'__name__': 'carried'}\n"
        "exec(compile(sys.stdin.read(), '<carried>', 'exec'), namespace)\n"
        "state = namespace['Collector'](table={'metrics': []}, model='m', cluster='c', started=time.time())\n"
        "state.healthy_at = time.time()\n"
        "tracemalloc.start()\n"
        f"namespace['collect_once'](state, '{engine.url}/{answer}', sys.stderr, time.time())\n"
        "print(tracemalloc.get_traced_memory()[1])\n"
    )
    # WHEN it reads an answer of one endless line, or of more short lines than it reads
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", driver],
        input=sidecar.collector_source(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # THEN it says what it skipped, and what it allocated at its peak (a few times the 2 MiB it reads) leaves room
    # within the sidecar's 64 MiB limit for the interpreter (about 20 MiB)
    assert result.returncode == 0, result.stderr
    assert "skipped in" in result.stderr
    assert int(result.stdout) < 16 * 1024 * 1024


@MEASURED_IN_CI
def test_a_slow_answer_stops_at_the_timeout_with_a_sentence(engine: Any) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        collector.read_answer(engine.url + "/slow/metrics", timeout=0.4)
    assert time.monotonic() - started < 1.5
    out = io.StringIO()
    state = collector.Collector(table=json.loads(TABLE), model="m", cluster="c", started=time.time())
    state.healthy_at = time.time()
    collector.collect_once(state, engine.url + "/slow", out, time.time(), timeout=0.4)
    assert "could not be read" in out.getvalue()


def test_a_closed_port_is_a_sentence_not_a_traceback() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    documents, sentences = _run(f"http://127.0.0.1:{port}")
    assert documents == []
    assert any("does not answer yet" in s for s in sentences)
    assert any("could not be read" in s for s in sentences)


def test_a_table_that_is_not_json_is_one_sentence_and_exit_code_2() -> None:
    out = io.StringIO()
    assert collector.main({collector.TABLE_VARIABLE: "{"}, out, rounds=1) == 2
    assert out.getvalue().count("\n") == 1


@given(st.text(max_size=2000))
def test_no_text_makes_the_parser_raise(text: str) -> None:
    scrape = collector.parse(text, [m.prometheus for m in table.ENGINE_METRICS])
    assert all(len(series) <= collector.MAX_SERIES for series in scrape.series.values())


@given(st.lists(st.sampled_from(["{", "}", '"', "\\", "=", ",", "a", "1", " ", "\n", "e", "+Inf", "NaN"]), max_size=80))
def test_no_line_of_prometheus_punctuation_makes_the_parser_or_the_collector_raise(parts: list[str]) -> None:
    text = "vllm_neuron:compilation_time_seconds" + "".join(parts)
    scrape = collector.parse(text, ["vllm_neuron:compilation_time_seconds"])
    state = collector.Collector(table=json.loads(TABLE), model="m", cluster="c", started=0.0)
    state.healthy_at, state.scrapes_since_healthy = 1.0, collector.STARTS_WITHOUT_METRICS
    for line in state.records(scrape, 0):
        assert line.startswith("{") or line.startswith("engine-metrics:")


def test_the_table_names_the_release_and_source_of_each_metric_and_which_engines_publish_it() -> None:
    for metric in table.ENGINE_METRICS:
        if metric.prometheus.startswith("vllm_neuron:"):
            assert "2.34.0" in metric.release and "vLLM Metrics Integration" in metric.source
            assert metric.when == "start"
        else:
            assert metric.prometheus.startswith("vllm:") and "vLLM 0.11" in metric.release
            assert "loggers.py" in metric.source and metric.when == "every"
    publishing = [e for e in engines.ENGINES.values() if table.publishes_metrics(e)]
    assert publishing == [engines.VLLM_NXDI, engines.VLLM_NEURON_NATIVE]
    # vLLM on NxD Inference serves vLLM's own metrics only: none of the start metrics, no compile time per bucket
    assert {m.prometheus.split(":")[0] for m in table.metrics_of(engines.VLLM_NXDI)} == {"vllm"}
    assert [e for e in publishing if table.reports_compiles(e)] == [engines.VLLM_NEURON_NATIVE]


# --- the sidecar, the alarm and the dashboard ---------------------------------------------------------------------


def _platform(app: App) -> tuple[Stack, NeuronCluster, NeuronMonitoring]:
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=2)
    return platform, cluster, NeuronMonitoring(platform, "Monitoring", cluster=cluster, recovery=False)


def _task(
    scope: Stack,
    *,
    image: str = VLLM_TRN2.reference,
    cache: bool = True,
    ports: tuple[int, ...] = (8000,),
    network_mode: ecs.NetworkMode | None = None,
    device: int = 0,
) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(
        scope, "Task", instance_type="trn2.48xlarge", devices=[device], memory_mib=8192, network_mode=network_mode
    )
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(image),
        port_mappings=[ecs.PortMapping(container_port=p) for p in ports],
        environment={"VLLM_CACHE_ROOT": "/var/cache/vllm"} if cache else {},
    )
    return task


def _definition(container: ecs.ContainerDefinition | None) -> dict[str, Any]:
    assert container is not None
    return Stack.of(container).resolve(container.render_container_definition())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def split() -> dict[str, Any]:
    """A platform stack (cluster, capacity, monitoring) and a model stack with a vLLM Neuron service, synthesized."""
    app = App(analytics_reporting=False)
    _, cluster, monitoring = _platform(app)
    model = Stack(app, "Model", env=ENV)
    service = NeuronService(model, "Llm", cluster=cluster, task_definition=_task(model))
    assembly = app.synth()
    return {
        "service": service,
        "monitoring": monitoring,
        "platform": assembly.get_stack_by_name("Platform"),
        "model": assembly.get_stack_by_name("Model"),
        "cluster": cluster,
        "app": app,
    }


def test_a_vllm_neuron_service_gets_the_pinned_unprivileged_sidecar_by_default(split: dict[str, Any]) -> None:
    service = split["service"]
    container = _definition(service.engine_metrics_container)
    model = _definition(service.task_definition.neuron_containers[0])
    # THEN it runs the model's own image (as pinned as the model's), as nobody, read only, without capabilities
    assert container["image"] == model["image"] == VLLM_TRN2.reference
    assert container["user"] == sidecar.USER == "65534"
    assert container["readonlyRootFilesystem"] is True and container["privileged"] is False
    assert container["linuxParameters"]["capabilities"] == {"drop": ["ALL"]}
    assert "devices" not in container["linuxParameters"]
    assert container["essential"] is False
    assert (container["memory"], container["memoryReservation"]) == (64, 32)
    assert (
        container["logConfiguration"]["options"]["awslogs-group"]
        == model["logConfiguration"]["options"]["awslogs-group"]
    )
    environment = {e["name"]: e["value"] for e in container["environment"]}
    assert environment[collector.MODEL_VARIABLE] == service.model_name
    assert environment[collector.EXPECT_WARM_VARIABLE] == "1"
    assert json.loads(environment[collector.TABLE_VARIABLE]) == json.loads(TABLE)
    # AND it needs no permission: the model stack grants nothing to put metrics or read the cluster
    template = json.dumps(split["model"].template)
    assert "cloudwatch:PutMetricData" not in template and "ecs:DescribeTasks" not in template


def test_in_the_bridge_network_the_sidecar_reads_the_engine_through_a_link_and_in_awsvpc_on_localhost() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    bridge = Stack(app, "Bridge", env=ENV)
    service = NeuronService(bridge, "Llm", cluster=cluster, task_definition=_task(bridge))
    container = _definition(service.engine_metrics_container)
    assert container["links"] == ["model:engine"]
    environment = {e["name"]: e["value"] for e in container["environment"]}
    assert environment[collector.URL_VARIABLE] == "http://engine:8000"
    awsvpc = Stack(app, "Awsvpc", env=ENV)
    task = _task(awsvpc, network_mode=ecs.NetworkMode.AWS_VPC, ports=(8080,), device=1)
    service = NeuronService(awsvpc, "Llm", cluster=cluster, task_definition=task)
    container = _definition(service.engine_metrics_container)
    assert "links" not in container
    assert {e["name"]: e["value"] for e in container["environment"]}[collector.URL_VARIABLE] == "http://127.0.0.1:8080"


def test_the_compile_alarm_is_named_and_notifies_the_monitoring_topic(split: dict[str, Any]) -> None:
    alarms = {k: r for k, r in split["model"].template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    (name,) = [k for k in alarms if k.startswith("LlmCompiledAtStartAlarm")]
    properties = alarms[name]["Properties"]
    assert properties["MetricName"] == "CompiledAtStart" and properties["Namespace"] == NAMESPACE
    assert properties["Threshold"] == 1 and properties["TreatMissingData"] == "notBreaching"
    assert {d["Name"] for d in properties["Dimensions"]} == {"ClusterName", "Model"}
    assert "Fn::ImportValue" in json.dumps(properties["AlarmActions"])
    # AND it is a plain alarm, not one the deployment rolls back on
    assert split["service"].deployment_alarms == []


def test_the_platform_dashboard_shows_start_compile_queue_and_latency_per_model(split: dict[str, Any]) -> None:
    resources = split["platform"].template["Resources"].values()
    (board,) = [r for r in resources if r["Type"] == "AWS::CloudWatch::Dashboard"]
    body = json.dumps(board["Properties"]["DashboardBody"])
    titles = (dashboard.START_TITLE, dashboard.COMPILE_TITLE, dashboard.QUEUE_TITLE, dashboard.LATENCY_TITLE)
    assert all(title in body for title in titles)
    metrics = (
        *dashboard.START_METRICS,
        *dashboard.COMPILE_METRICS,
        *dashboard.QUEUE_METRICS,
        *dashboard.LATENCY_METRICS,
    )
    for name in metrics:
        assert f'MetricName=\\\\\\"{name}\\\\\\" ClusterName' in body, name
    assert set(metrics) <= {m.name for m in table.ENGINE_METRICS} | set(table.DERIVED_METRICS)


def test_the_model_stack_depends_on_the_platform_and_never_the_reverse(split: dict[str, Any]) -> None:
    stacks = {"Platform", "Model"}
    assert [d.id for d in split["model"].dependencies if d.id in stacks] == ["Platform"]
    assert [d.id for d in split["platform"].dependencies if d.id in stacks] == []


def test_a_model_without_a_compile_cache_is_measured_without_the_alarm() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    service = NeuronService(model, "Llm", cluster=cluster, task_definition=_task(model, cache=False))
    assert service.engine_metrics_container is not None and service.compile_alarm is None


def test_an_image_whose_engine_publishes_nothing_is_not_measured_by_default_and_refused_when_asked() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    busybox = "public.ecr.aws/docker/library/busybox:1.37"
    quiet = NeuronService(model, "Quiet", cluster=cluster, task_definition=_task(model, image=busybox))
    assert quiet.engine_metrics_container is None
    other = Stack(app, "Other", env=ENV)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON170.*EngineMetrics\(engine=VLLM_NEURON_NATIVE\)"):
        NeuronService(
            other, "Llm", cluster=cluster, task_definition=_task(other, image=busybox, device=1), engine_metrics=True
        )
    stated = Stack(app, "Stated", env=ENV)
    service = NeuronService(
        stated,
        "Llm",
        cluster=cluster,
        task_definition=_task(stated, image=busybox, device=2),
        engine_metrics=EngineMetrics(engine=engines.VLLM_NEURON_NATIVE),
    )
    assert service.engine_metrics_container is not None


def test_a_vllm_on_nxd_inference_service_gets_the_serving_metrics_and_no_compile_alarm_even_with_a_cache() -> None:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(platform, "Task", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container(
        "model",
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        port_mappings=[ecs.PortMapping(container_port=8080)],
        environment={"NEURON_COMPILE_CACHE_URL": "s3://bucket/cache"},
    )
    service = NeuronService(platform, "Llm", cluster=cluster, task_definition=task)
    environment = {e["name"]: e["value"] for e in _definition(service.engine_metrics_container)["environment"]}
    rows = json.loads(environment[collector.TABLE_VARIABLE])["metrics"]
    assert [r["name"] for r in rows] == [m.name for m in table.metrics_of(engines.VLLM_NXDI)]
    assert "WaitingRequests" in {r["name"] for r in rows} and not any(r["when"] == "start" for r in rows)
    # THEN the copy is not expected warm: this engine reports no compile time, so no alarm could count a compile
    assert environment[collector.EXPECT_WARM_VARIABLE] == "0" and service.compile_alarm is None


def test_a_model_without_a_port_is_not_measured_by_default_and_a_port_it_does_not_map_is_refused() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    # GIVEN a vLLM Neuron model that maps no port: by default it is not measured, and asking for it is refused
    quiet = NeuronService(model, "Quiet", cluster=cluster, task_definition=_task(model, ports=(), device=2))
    assert quiet.engine_metrics_container is None
    asked = Stack(app, "Asked", env=ENV)
    with pytest.raises(NeuronConfigurationError, match=r"maps no port.*NEURON171"):
        NeuronService(
            asked, "Llm", cluster=cluster, task_definition=_task(asked, ports=(), device=3), engine_metrics=True
        )
    other = Stack(app, "Other", env=ENV)
    with pytest.raises(NeuronConfigurationError, match=r"port=9000.*NEURON171.*\(8000\)"):
        NeuronService(
            other,
            "Llm",
            cluster=cluster,
            task_definition=_task(other, device=1),
            engine_metrics=EngineMetrics(port=9000),
        )


def test_a_period_out_of_range_is_refused() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    with pytest.raises(NeuronConfigurationError, match=rules.OUT_OF_RANGE.id):
        NeuronService(
            model,
            "Llm",
            cluster=cluster,
            task_definition=_task(model),
            engine_metrics=EngineMetrics(period=Duration.minutes(10)),
        )


def test_expecting_warm_starts_without_a_compile_cache_warns() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    service = NeuronService(
        model,
        "Llm",
        cluster=cluster,
        task_definition=_task(model, cache=False),
        engine_metrics=EngineMetrics(expect_warm=True),
    )
    assert service.compile_alarm is not None
    Annotations.from_stack(model).has_warning(
        "/Model/Llm", Match.string_like_regexp(r"container 'model' has no compile cache.*NEURON172")
    )


def test_the_sidecar_runs_the_digest_the_model_is_pinned_to_and_engine_metrics_false_turns_it_off() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    pinned = VLLM_TRN2.pinned("sha256:" + "a" * 64).reference
    service = NeuronService(model, "Llm", cluster=cluster, task_definition=_task(model, image=pinned))
    container = _definition(service.engine_metrics_container)
    assert container["image"] == pinned and container["image"].endswith("@sha256:" + "a" * 64)
    off = Stack(app, "Off", env=ENV)
    quiet = NeuronService(off, "Llm", cluster=cluster, task_definition=_task(off, device=1), engine_metrics=False)
    assert (quiet.engine_metrics_container, quiet.compile_alarm) == (None, None)
    assert quiet.task_definition.task_definition.find_container(sidecar.CONTAINER_NAME) is None


def test_the_lines_after_the_bound_are_skipped_once_counted() -> None:
    text = "# comment\n" * collector.MAX_LINES + "vllm_neuron:startup_time_seconds 1\n"
    scrape = collector.parse(text, ["vllm_neuron:startup_time_seconds"])
    assert scrape.series == {}
    assert scrape.skipped == {f"lines after the first {collector.MAX_LINES}": 1}


@given(st.one_of(st.text(max_size=80), st.integers(), st.none(), st.floats()))
def test_no_task_metadata_time_makes_the_collector_raise(value: object) -> None:
    found = collector._timestamp(value)
    assert found is None or isinstance(found, float)


def test_the_docs_cost_counts_every_metric_a_model_adds() -> None:
    # docs/monitoring.md: "14 custom metrics per model"
    assert len(table.ENGINE_METRICS) + len(table.DERIVED_METRICS) == 14


def test_every_slice_of_a_vllm_neuron_model_is_measured_unless_turned_off() -> None:
    from neuron_constructs import SlicedNeuronService

    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    image = ecs.ContainerImage.from_registry(VLLM_TRN2.reference)
    ports = [ecs.PortMapping(container_port=8000)]
    sliced = SlicedNeuronService(
        model,
        "Llm",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        devices_per_task=8,
        image=image,
        instances=1,
        port_mappings=ports,
        memory_reservation_mib=4096,
    )
    assert [s.engine_metrics_container is not None for s in sliced.copy_services] == [True, True]
    off = Stack(app, "Off", env=ENV)
    other = Stack(app, "OtherCluster", env=ENV)
    second = NeuronCluster(other, "Cluster", vpc=imported_vpc(other))
    second.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    quiet = SlicedNeuronService(
        off,
        "Llm",
        cluster=second,
        instance_type="trn2.48xlarge",
        devices_per_task=8,
        image=image,
        instances=1,
        port_mappings=ports,
        memory_reservation_mib=4096,
        engine_metrics=False,
    )
    assert [s.engine_metrics_container for s in quiet.copy_services] == [None, None]


def test_the_ranks_of_a_bucket_count_once_as_the_slowest_and_the_buckets_add_up() -> None:
    # GIVEN two ranks that compiled the same two buckets side by side (rank_id, a label of every vLLM Neuron metric)
    name = "vllm_neuron:compilation_time_seconds"
    text = "".join(
        f'{name}{{bucket_name="{bucket}",model_name="m",rank_id="{rank}"}} {seconds}\n'
        for bucket, rank, seconds in [("prefill_s128", 0, 100), ("prefill_s128", 1, 120), ("decode_b8", 0, 70)]
    )
    state = collector.Collector(table=json.loads(TABLE), model="m", cluster="c", started=0.0)
    state.healthy_at, state.scrapes_since_healthy = 1.0, collector.STARTS_WITHOUT_METRICS
    documents = [json.loads(line) for line in state.records(collector.parse(text, [name]), 0)]
    # THEN each bucket took as long as its slowest rank, and the model's compile is the buckets' sum
    assert _value(documents, "CompilationTime", Bucket="prefill_s128") == 120
    assert [d["CompilationTime"] for d in documents if "CompilationTime" in d and "Bucket" not in d] == [190]
    assert _value(documents, "BucketsCompiled") == 2


def test_the_engine_is_read_directly_whatever_proxy_the_task_names(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's HTTP_PROXY (for the model hub) never carries the collector's requests to its own engine: with a proxy
    that answers nothing, and urllib's process-wide opener built while it was set, the start is still read."""
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{dead}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(urllib.request, "_opener", urllib.request.build_opener())
    documents, sentences = _run(engine.url)
    assert _value(documents, "StartupTime") == 688.4, sentences


# --- the serving metrics, at every scrape -------------------------------------------------------------------------


def _serving_collector() -> collector.Collector:
    return collector.Collector(table=json.loads(TABLE), model="m", cluster="c", started=0.0)


def _written(lines: list[str]) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in lines:
        document = json.loads(line)
        if "Bucket" not in document:
            values.update({m["Name"]: document[m["Name"]] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]})
    return values


def test_the_serving_gauges_are_written_at_each_scrape_and_the_rates_and_means_from_the_second() -> None:
    """GIVEN two recorded scrapes 15 s apart WHEN the collector reads them THEN the waiting and running requests and the
    KV cache (in percent) are written at both; the means of time to first token, between tokens and of a request's
    latency, and the tokens per second, are what happened between the two."""
    state = _serving_collector()
    first = _written(state.records(collector.parse(SERVING[0], state.wanted), 1_000_000))
    assert first == {"WaitingRequests": 3.0, "RunningRequests": 8.0, "KvCacheUsage": 42.0}
    second = _written(state.records(collector.parse(SERVING[1], state.wanted), 1_015_000))
    assert second["WaitingRequests"] == 5.0 and second["KvCacheUsage"] == pytest.approx(57.0)
    assert second["TimeToFirstToken"] == pytest.approx(3.5 / 10)
    assert second["InterTokenLatency"] == pytest.approx(12.0 / 600)
    assert second["RequestLatency"] == pytest.approx(54.0 / 9)
    assert second["GeneratedTokens"] == pytest.approx(1500 / 15)
    assert not state.done  # the sidecar keeps reading while there are rows for every scrape


def test_a_counter_that_went_down_or_a_histogram_without_observations_writes_no_rate_or_mean() -> None:
    state = _serving_collector()
    state.records(collector.parse(SERVING[1], state.wanted), 1_000_000)
    restarted = _written(state.records(collector.parse(SERVING[0], state.wanted), 1_015_000))  # the engine restarted
    assert {"TimeToFirstToken", "GeneratedTokens", "RequestLatency"}.isdisjoint(restarted)
    quiet = _written(state.records(collector.parse(SERVING[0], state.wanted), 1_030_000))  # nothing since
    assert quiet["GeneratedTokens"] == 0.0 and "TimeToFirstToken" not in quiet


@given(st.lists(st.tuples(st.floats(-1e12, 1e12), st.floats(-1e12, 1e12)), min_size=1, max_size=6))
@example([(-2.0, -1.1125369292536007e-308), (0.0, 0.0)])  # a count that grew by a subnormal: the mean overflows
def test_no_sequence_of_counter_values_makes_a_rate_or_mean_negative_or_not_finite(values: list[Any]) -> None:
    state = _serving_collector()
    for index, (total, count) in enumerate(values):
        text = (
            f"vllm:generation_tokens_total {total}\n"
            f"vllm:time_to_first_token_seconds_sum {total}\nvllm:time_to_first_token_seconds_count {count}\n"
        )
        written = _written(state.records(collector.parse(text, state.wanted), 1_000_000 + 15_000 * index))
        for name in ("GeneratedTokens", "TimeToFirstToken"):
            assert name not in written or (math.isfinite(written[name]) and written[name] >= 0)
