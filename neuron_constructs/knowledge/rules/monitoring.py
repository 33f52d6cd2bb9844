"""Rules on Neuron monitoring: one per cluster, the model name it publishes metrics under, and scaling on those
metrics.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = ["MODEL_NAME", "MONITORING_TWICE", "UNMONITORED_SCALING"]

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

# -------------------------------------------------------------- warnings ---

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
