"""The engine metrics the library reads into CloudWatch: one row per metric, so adding one is one row.

The engine-metrics collector (:mod:`neuron_constructs.programs.engine_metrics`) is the one every engine metric uses:
it reads the rows of :data:`ENGINE_METRICS` whose engine is the model's, from the engine's own Prometheus ``/metrics``
endpoint, and writes them as CloudWatch embedded metric format lines under ``ClusterName, Model`` (a row with
``per`` also under ``ClusterName, Model, Bucket``). A row names the Prometheus metric, its type, the CloudWatch name
and unit, how its label sets are put together, when it is written, the engine release that publishes it and the
source.

vLLM Neuron (the vLLM Neuron plugin; GA in Neuron 2.34.0). Its "Server Startup Metrics" ("vLLM Metrics Integration",
vllm-neuron/docs/design/vllm/metrics.md, date_updated 2026-06-23; the same table in the Neuron 2.34.0 documentation,
date-modified 2026-10-24, and in ``vllm_neuron/metrics.py``, where each is a ``prometheus_client`` ``Gauge`` in
multiprocess mode): ``vllm_neuron:startup_time_seconds`` "Total server startup time from worker spawn to ready",
``vllm_neuron:compilation_time_seconds`` "Time spent compiling Neuron graphs (FX trace + neuronxcc compile). Includes
compile cache hits", by ``model_name`` and ``bucket_name`` (e.g. ``prefill_s1024``), ``vllm_neuron:model_load_time_
seconds`` "host to HBM transfer" and ``vllm_neuron:model_load_size_bytes``; every metric also carries ``model_name``
and may carry ``rank_id``. The library's :data:`~neuron_constructs.knowledge.container_images.VLLM_TRN2` image is
Neuron 2.33.0's plugin (0.29.0.1.2.0): no source says whether that release publishes them already. A metric the answer
does not hold is not written, and the collector says so in one line.

vLLM's own serving metrics (waiting and running requests, KV-cache usage, time to the first token and between tokens,
request latency, generated tokens) come from vLLM's OpenAI-compatible server, whatever platform plugin runs the model:
vLLM Neuron and vLLM on NxD Inference (the :data:`~neuron_constructs.knowledge.container_images.VLLM` image's vLLM
0.16) both publish them; vLLM on NxD Inference publishes none of the ``vllm_neuron:`` start metrics.

Engines without a row (torch-neuronx, optimum-neuron, torch-neuron) have no engine metric the library reads: asking
for them is refused (NEURON170).

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from neuron_constructs.knowledge import engines
from neuron_constructs.knowledge.engines import Engine

__all__ = [
    "DERIVED_METRICS",
    "ENGINE_METRICS",
    "VLLM_NEURON_METRICS_SOURCE",
    "VLLM_SERVING_METRICS_SOURCE",
    "EngineMetric",
    "metrics_of",
    "publishes_metrics",
    "reports_compiles",
    "table_json",
]

VLLM_NEURON_METRICS_SOURCE = (
    'vLLM Neuron, "vLLM Metrics Integration" (vllm-neuron/docs/design/vllm/metrics.md, date_updated 2026-06-23; '
    "Neuron 2.34.0 documentation, date-modified 2026-10-24), Server Startup Metrics; vllm_neuron/metrics.py"
)


@dataclass(frozen=True)
class EngineMetric:
    """One engine metric the collector reads.

    ``prometheus``: its name at ``/metrics``; ``prometheus_type``: gauge, counter or histogram; ``name`` and ``unit``:
    its CloudWatch name and unit; ``per``: the label it is also written per (``bucket_name``: the ``Bucket``
    dimension; each value the largest over the label's other labels, such as the ranks that compile a bucket side by
    side), ``None`` for none; ``aggregate``: how those values (or, without ``per``, its label sets: ranks) make the
    one value under ``ClusterName, Model``, ``max`` or ``sum``; ``when``: ``start`` (a value set once per start,
    written once) or ``every`` (written at every scrape); ``compile``: a per-bucket compile time, which the derived
    ``BucketsCompiled`` and ``CompiledAtStart`` count; ``engines``: the engines that publish it; ``release``: the
    engine release it belongs to; ``source``; ``what``.
    """

    prometheus: str
    prometheus_type: Literal["gauge", "counter", "histogram"]
    name: str
    unit: str
    what: str
    engines: tuple[Engine, ...]
    release: str
    source: str
    per: str | None = None
    aggregate: Literal["max", "sum"] = "max"
    when: Literal["start", "every"] = "start"
    compile: bool = False
    scale: float = 1.0

    @property
    def kind(self) -> Literal["value", "rate", "mean"]:
        """How the collector writes it: a gauge's value, a counter's increase per second, a histogram's mean
        observation since the scrape before."""
        kinds: dict[str, Literal["value", "rate", "mean"]] = {"gauge": "value", "counter": "rate", "histogram": "mean"}
        return kinds[self.prometheus_type]


_VLLM_NEURON = (engines.VLLM_NEURON_NATIVE,)
_VLLM_SERVING = (engines.VLLM_NEURON_NATIVE, engines.VLLM_NXDI)
"""The engines that serve vLLM's own metrics: vLLM's OpenAI-compatible server writes them (vllm/v1/metrics/loggers.py,
``PrometheusStatLogger``) whatever platform plugin runs the model."""
_VLLM_NEURON_RELEASE = "vLLM Neuron plugin, Neuron 2.34.0 documentation"

VLLM_SERVING_METRICS_SOURCE = (
    'vLLM, "Metrics" design (docs/design/metrics.md) and vllm/v1/metrics/loggers.py: vllm:kv_cache_usage_perc '
    "replaces vllm:gpu_cache_usage_perc from 0.9.2, vllm:inter_token_latency_seconds replaces "
    "vllm:time_per_output_token_seconds from 0.11; vLLM Neuron publishes vLLM's own metrics beside its vllm_neuron: "
    'ones ("vLLM Metrics Integration", 2026-06-23)'
)
_VLLM_SERVING_RELEASE = "vLLM 0.11 and later (vLLM Neuron 2.31.0 and later: vLLM 0.21 to 0.29)"


def _serving(
    prometheus: str,
    prometheus_type: Literal["gauge", "counter", "histogram"],
    name: str,
    unit: str,
    what: str,
    *,
    aggregate: Literal["max", "sum"] = "max",
    scale: float = 1.0,
) -> EngineMetric:
    """A serving metric of vLLM's own, which vLLM Neuron and vLLM on NxD Inference publish, written at every scrape."""
    return EngineMetric(
        prometheus,
        prometheus_type,
        name,
        unit,
        what,
        _VLLM_SERVING,
        _VLLM_SERVING_RELEASE,
        VLLM_SERVING_METRICS_SOURCE,
        aggregate=aggregate,
        when="every",
        scale=scale,
    )


ENGINE_METRICS: tuple[EngineMetric, ...] = (
    EngineMetric(
        "vllm_neuron:startup_time_seconds",
        "gauge",
        "StartupTime",
        "Seconds",
        "the server's start, from worker spawn to ready (compile or cache fetch, and load, included)",
        _VLLM_NEURON,
        _VLLM_NEURON_RELEASE,
        VLLM_NEURON_METRICS_SOURCE,
    ),
    EngineMetric(
        "vllm_neuron:compilation_time_seconds",
        "gauge",
        "CompilationTime",
        "Seconds",
        "graph compilation (FX trace and neuronx-cc, cache hits included): the sum over the buckets, and each "
        "bucket's under Bucket",
        _VLLM_NEURON,
        _VLLM_NEURON_RELEASE,
        VLLM_NEURON_METRICS_SOURCE,
        per="bucket_name",
        aggregate="sum",
        compile=True,
    ),
    EngineMetric(
        "vllm_neuron:model_load_time_seconds",
        "gauge",
        "ModelLoadTime",
        "Seconds",
        "loading the weights to the device (host to HBM)",
        _VLLM_NEURON,
        _VLLM_NEURON_RELEASE,
        VLLM_NEURON_METRICS_SOURCE,
    ),
    EngineMetric(
        "vllm_neuron:model_load_size_bytes",
        "gauge",
        "ModelLoadSize",
        "Bytes",
        "the weights transferred to the device, summed over the ranks",
        _VLLM_NEURON,
        _VLLM_NEURON_RELEASE,
        VLLM_NEURON_METRICS_SOURCE,
        aggregate="sum",
    ),
    _serving(
        "vllm:num_requests_waiting",
        "gauge",
        "WaitingRequests",
        "Count",
        "requests waiting for a slot in the running batch",
        aggregate="sum",
    ),
    _serving(
        "vllm:num_requests_running",
        "gauge",
        "RunningRequests",
        "Count",
        "requests in the running batch",
        aggregate="sum",
    ),
    _serving(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KvCacheUsage",
        "Percent",
        "the KV cache in use (vLLM's fraction, times 100)",
        scale=100.0,
    ),
    _serving(
        "vllm:time_to_first_token_seconds",
        "histogram",
        "TimeToFirstToken",
        "Seconds",
        "the mean time to the first token of the requests since the scrape before",
    ),
    _serving(
        "vllm:inter_token_latency_seconds",
        "histogram",
        "InterTokenLatency",
        "Seconds",
        "the mean time between two tokens of an answer since the scrape before",
    ),
    _serving(
        "vllm:e2e_request_latency_seconds",
        "histogram",
        "RequestLatency",
        "Seconds",
        "the mean time from a request's arrival to its last token since the scrape before",
    ),
    _serving(
        "vllm:generation_tokens_total",
        "counter",
        "GeneratedTokens",
        "Count/Second",
        "tokens generated per second since the scrape before",
    ),
)
"""Every engine metric the collector reads, one row each."""

DERIVED_METRICS: dict[str, tuple[str, str]] = {
    "BucketsCompiled": ("Count", "the buckets whose compile time reached the threshold (a compile, not a hit)"),
    "CompiledAtStart": ("Count", "1 when a copy that should start warm compiled a bucket, else 0"),
    "TimeToHealthy": ("Seconds", "from the task's start (its image pull) to the engine's first 200 on /health"),
}
"""What the collector derives, by CloudWatch name: (unit, what)."""


def metrics_of(engine: Engine | None) -> tuple[EngineMetric, ...]:
    """The rows ``engine`` publishes (none for ``None``, an image the table does not know)."""
    return tuple(m for m in ENGINE_METRICS if engine is not None and engine in m.engines)


def publishes_metrics(engine: Engine | None) -> bool:
    """Whether the collector reads anything from ``engine``."""
    return bool(metrics_of(engine))


def reports_compiles(engine: Engine | None) -> bool:
    """Whether ``engine`` reports its compile time per bucket, which ``CompiledAtStart`` is counted from."""
    return any(m.compile for m in metrics_of(engine))


def table_json(engine: Engine | None, namespace: str) -> str:
    """The collector's table for ``engine`` (its ``ENGINE_METRICS_TABLE``), compact JSON."""
    rows = [
        {
            "prometheus": m.prometheus,
            "name": m.name,
            "unit": m.unit,
            "per": m.per,
            "aggregate": m.aggregate,
            "when": m.when,
            "compile": m.compile,
            "kind": m.kind,
            "scale": m.scale,
        }
        for m in metrics_of(engine)
    ]
    return json.dumps({"namespace": namespace, "metrics": rows}, separators=(",", ":"))
