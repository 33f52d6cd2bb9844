"""Rules on Neuron monitoring: one per cluster, the model name it publishes metrics under, and scaling on those
metrics.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "COMPILE_ALARM_WITHOUT_CACHE",
    "COMPILE_ALARM_WITHOUT_COMPILE_METRIC",
    "ENGINE_METRICS_PORT",
    "ENGINE_WITHOUT_METRICS",
    "MODEL_NAME",
    "MONITORING_TWICE",
    "SCALING_WITHOUT_ENGINE_METRIC",
    "UNMONITORED_SCALING",
]

# ---------------------------------------------------------------- errors ---

MONITORING_TWICE = Rule(
    "NEURON054",
    "Neuron monitoring enabled twice on one cluster",
    "one neuron-monitor daemon runs per instance, and one recovery process acts on each hardware error; a second "
    "set of daemons would double every metric and race the first to replace instances",
    "make one NeuronMonitoring per cluster and build on it (cluster.monitoring)",
    "ECS guide: daemon scheduling strategy and Managed Daemons (one daemon task per instance)",
)
MODEL_NAME = Rule(
    "NEURON067",
    "Model name neuron-monitor or CloudWatch cannot carry",
    "a model is named by the NEURON_PROCESS_TAG of its Neuron containers (up to 255 characters, neuron-monitor) and "
    "published as a CloudWatch dimension value (ASCII, not blank); a task definition serves one model, so all its "
    "Neuron containers carry one tag",
    "pass model_name= 1 to 255 letters, digits and . _ - / : @ + =, starting with a letter or digit, and give the "
    "task definition's Neuron containers no NEURON_PROCESS_TAG of their own or one the same for all, matching it",
    "Neuron user guide: neuron-monitor, Neuron applications tagging; CloudWatch API reference: Dimension",
)

ENGINE_WITHOUT_METRICS = Rule(
    "NEURON170",
    "Engine metrics for an image whose engine publishes none the library reads",
    "the engine-metrics collector reads the model engine's own Prometheus /metrics endpoint; only the engines of the "
    "engine metric table publish metrics it reads (vLLM Neuron: vllm_neuron:startup_time_seconds, "
    "compilation_time_seconds, model_load_time_seconds and vLLM's serving metrics; vLLM on NxD Inference: vLLM's "
    "serving metrics), and an image the image table does not hold has no known engine",
    "pass engine_metrics=False, or run an image of the table whose engine publishes them ({engines}), or state the "
    "engine of your own image built on one: engine_metrics=EngineMetrics(engine=VLLM_NEURON_NATIVE)",
    'vLLM Neuron, "vLLM Metrics Integration" (2026-06-23); neuron_constructs.knowledge.engine_metrics',
)
COMPILE_ALARM_WITHOUT_COMPILE_METRIC = Rule(
    "NEURON179",
    "Compile-at-start alarm on an engine that reports no compile time",
    "the compile-at-start alarm counts the buckets whose compile time per bucket "
    "(vllm_neuron:compilation_time_seconds) reached compiled_above; an engine that does not report it (vLLM on NxD "
    "Inference) would leave the alarm at 0 through every compile",
    "drop expect_warm=True (the sidecar still writes the serving metrics and TimeToHealthy), or serve on an engine "
    "that reports its compile time per bucket (vLLM Neuron)",
    'vLLM Neuron, "vLLM Metrics Integration" (2026-06-23); neuron_constructs.knowledge.engine_metrics',
)
SCALING_WITHOUT_ENGINE_METRIC = Rule(
    "NEURON178",
    "Scaling or rolling back on an engine metric no collector of the model writes",
    "WaitingRequests, TimeToFirstToken and InterTokenLatency are what the model's engine-metrics sidecar writes from "
    "vLLM's own metrics under the model's name; a model without the sidecar (engine_metrics=False, or an engine that "
    "publishes no such metric) writes none, and a policy or alarm on a metric with no data never acts",
    "give the model the sidecar (engine_metrics=True, or EngineMetrics(engine=VLLM_NEURON_NATIVE) for your own image "
    "built on vLLM Neuron), or scale on requests or NeuronCore utilization and roll back on 5xx answers and response "
    "time instead",
    'vLLM, vllm/v1/metrics/loggers.py (vllm:num_requests_waiting); Application Auto Scaling user guide, "Target '
    'tracking scaling policies" (customized metric)',
)
ENGINE_METRICS_PORT = Rule(
    "NEURON171",
    "Engine metrics port the model does not serve on",
    "vLLM serves /metrics and /health on its API port, the container port the model's container maps; the collector "
    "reads them there (127.0.0.1 in awsvpc and host networks, the model container's link in the bridge network), so "
    "the port must be one of the model container's port mappings",
    "give the model's container its port mapping (port_mappings=[ecs.PortMapping(container_port=8000)]), or pass "
    "EngineMetrics(port=) one of its container ports ({ports})",
    'vLLM, "Production Metrics" (the /metrics endpoint of the OpenAI-compatible server); ECS guide: task definition '
    "network modes (awsvpc containers share localhost; bridge containers reach each other through links)",
)

# -------------------------------------------------------------- warnings ---

COMPILE_ALARM_WITHOUT_CACHE = Rule(
    "NEURON172",
    "Compile-at-start alarm on a model without a compile cache",
    "the compile-at-start alarm fires when a copy that should start warm compiled; a model whose Neuron container has "
    "no compile cache (no NEURON_LIBTORCH_REMOTE_CACHE, VLLM_CACHE_ROOT or NEURON_COMPILE_CACHE_URL) compiles at every "
    "start, so the alarm would fire at every start",
    "give the model a CompileCache (add_neuron_container(compile_cache=...)), or pass "
    "EngineMetrics(expect_warm=False) to publish the start metrics without the alarm",
    'vLLM Neuron, "Compilation Cache" (2026-06-22): without a cache every node recompiles from scratch on cold start',
    severity="warning",
)

UNMONITORED_SCALING = Rule(
    "NEURON114",
    "Scaling on NeuronCore utilization no monitoring in this app publishes",
    "scale_on_neuron_utilization tracks the per-model NeuronCore utilization the NeuronMonitoring daemon publishes "
    "from neuron-monitor on each instance; with no daemon on the capacity the metric has no data, and target "
    "tracking neither scales out nor in",
    "cover the capacity with NeuronMonitoring (NeuronMonitoring(cluster=...) or monitoring.cover(capacity)), or "
    "acknowledge this warning id when a monitor outside this app publishes the metric for the cluster",
    "Application Auto Scaling guide: target tracking scaling policies (metrics with no data)",
    severity="warning",
)
