"""The monitoring's dashboard, filled once the tree is complete: NeuronCore utilization and accelerator memory per
instance, utilization and executions per model, each model's start (time to healthy, the engine's start, load and
compile, as the engine-metrics collector measures them), errors and latency, the CPU and memory of the cluster's
services, the response time and 5xx count of its load balancers' target groups, and the alarms. Services and target
groups are found by metric search on the cluster's and the load balancers' names, so that model stacks never have the
monitoring's stack depend on them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_elasticloadbalancingv2 as elbv2

from neuron_constructs.base.arguments import to_seconds
from neuron_constructs.programs.metric_publisher import NAMESPACE

if TYPE_CHECKING:
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring

__all__ = [
    "COMPILE_METRICS",
    "COMPILE_TITLE",
    "LATENCY_METRICS",
    "LATENCY_TITLE",
    "QUEUE_METRICS",
    "QUEUE_TITLE",
    "START_METRICS",
    "START_TITLE",
    "fill_dashboard",
]

START_TITLE = "Start per model (s): time to healthy, engine start, weight load"
START_METRICS = ("TimeToHealthy", "StartupTime", "ModelLoadTime")
"""Each model's start as the engine-metrics collector measures it
(:mod:`~neuron_constructs.monitoring.engine_metrics`), a line per model and metric."""
COMPILE_TITLE = "Compilation at start per model: seconds, buckets compiled, compiled when warm"
COMPILE_METRICS = ("CompilationTime", "BucketsCompiled", "CompiledAtStart")
"""Each model's compile at start: the seconds over its buckets, the buckets that compiled rather than hit the cache,
and 1 when a copy that should start warm compiled."""
QUEUE_TITLE = "Requests per copy of each model: waiting, running; KV cache used (%)"
QUEUE_METRICS = ("WaitingRequests", "RunningRequests", "KvCacheUsage")
"""What a model's users wait on, per copy (each copy writes under the model's name: ``Average`` is per copy)."""
LATENCY_TITLE = "What each model's users feel (s): time to first token, between tokens, whole request"
LATENCY_METRICS = ("TimeToFirstToken", "InterTokenLatency", "RequestLatency")
"""The means between two scrapes of the engine, over the copies."""


def _per_instance(monitoring: NeuronMonitoring, metric: str, statistic: str, label: str) -> cloudwatch.MathExpression:
    search = (
        f'SEARCH(\'{{{NAMESPACE},ClusterName,InstanceId}} MetricName="{metric}" '
        f"ClusterName=\"{monitoring.cluster_name}\"', '{statistic}', {int(to_seconds(monitoring.period))})"
    )
    return cloudwatch.MathExpression(expression=search, label=label, period=monitoring.period)


def fill_dashboard(monitoring: NeuronMonitoring) -> None:
    """The dashboard's widgets, once the tree is complete (services and load balancers added after the monitoring
    are on it too)."""
    width = 12
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="NeuronCore utilization per instance (%)",
            left=[_per_instance(monitoring, "NeuronCoreUtilization", "Average", "")],
            width=width,
        ),
        cloudwatch.GraphWidget(
            title="Accelerator memory used per instance (bytes)",
            left=[_per_instance(monitoring, "AcceleratorMemoryUsed", "Average", "")],
            width=width,
        ),
    )
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="NeuronCore utilization per model (%)",
            left=[
                _search(
                    monitoring,
                    NAMESPACE,
                    "ClusterName,Model",
                    "NeuronCoreUtilization",
                    "Average",
                    monitoring.cluster_name,
                )
            ],
            width=width,
        ),
        cloudwatch.GraphWidget(
            title="Executions completed per model",
            left=[
                _search(
                    monitoring, NAMESPACE, "ClusterName,Model", "ExecutionsCompleted", "Sum", monitoring.cluster_name
                )
            ],
            width=width,
        ),
    )
    start = [
        _search(monitoring, NAMESPACE, "ClusterName,Model", name, "Maximum", monitoring.cluster_name)
        for name in START_METRICS
    ]
    compile_ = [
        _search(monitoring, NAMESPACE, "ClusterName,Model", name, "Maximum", monitoring.cluster_name)
        for name in COMPILE_METRICS
    ]
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(title=START_TITLE, left=start, width=width),
        cloudwatch.GraphWidget(title=COMPILE_TITLE, left=compile_, width=width),
    )
    queue, latency = (
        [
            _search(monitoring, NAMESPACE, "ClusterName,Model", name, "Average", monitoring.cluster_name)
            for name in names
        ]
        for names in (QUEUE_METRICS, LATENCY_METRICS)
    )
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(title=QUEUE_TITLE, left=queue, width=width),
        cloudwatch.GraphWidget(title=LATENCY_TITLE, left=latency, width=width),
    )
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Errors",
            left=[
                monitoring.metric("ExecutionErrors", "Sum"),
                monitoring.metric("ExecutionHardwareErrors", "Sum"),
                monitoring.metric("HardwareEccUncorrected", "Maximum"),
                monitoring.metric("HardwareEccCorrected", "Sum"),
            ],
            width=width,
        ),
        cloudwatch.GraphWidget(
            title="Execution latency (s)",
            left=[
                monitoring.metric("ExecutionLatencyP50", "Maximum"),
                monitoring.metric("ExecutionLatencyP99", "Maximum"),
            ],
            width=width,
        ),
    )
    monitoring.dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Service CPU (%)",
            left=[
                _search(
                    monitoring,
                    "AWS/ECS",
                    "ClusterName,ServiceName",
                    "CPUUtilization",
                    "Average",
                    monitoring.cluster_name,
                )
            ],
            width=width,
        ),
        cloudwatch.GraphWidget(
            title="Service memory (%)",
            left=[
                _search(
                    monitoring,
                    "AWS/ECS",
                    "ClusterName,ServiceName",
                    "MemoryUtilization",
                    "Average",
                    monitoring.cluster_name,
                )
            ],
            width=width,
        ),
    )
    load_balancers = _load_balancers(monitoring)
    if load_balancers:
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Load balancer response time (s, p99)",
                left=[_target_groups_of(monitoring, b, "TargetResponseTime", "p99") for b in load_balancers],
                width=width,
            ),
            cloudwatch.GraphWidget(
                title="5xx: targets and load balancer",
                left=[
                    *(_target_groups_of(monitoring, b, "HTTPCode_Target_5XX_Count", "Sum") for b in load_balancers),
                    *(
                        b.metrics.http_code_elb(elbv2.HttpCodeElb.ELB_5XX_COUNT, statistic="Sum")
                        for b in load_balancers
                    ),
                ],
                width=width,
            ),
        )
    monitoring.dashboard.add_widgets(
        cloudwatch.AlarmStatusWidget(
            title="Alarms",
            alarms=[monitoring.hardware_alarm, monitoring.kernel_alarm, monitoring.execution_errors_alarm],
            width=2 * width,
        )
    )


def _search(
    monitoring: NeuronMonitoring, namespace: str, dimensions: str, metric: str, statistic: str, cluster: str
) -> cloudwatch.IMetric:
    """Every metric of ``namespace`` with ``dimensions`` whose first dimension is the cluster's name: the services
    of every stack on this cluster, without a reference to any of them."""
    first = dimensions.split(",", 1)[0]
    search = (
        f'SEARCH(\'{{{namespace},{dimensions}}} MetricName="{metric}" {first}="{cluster}"\', '
        f"'{statistic}', {int(to_seconds(monitoring.period))})"
    )
    return cloudwatch.MathExpression(expression=search, label="", period=monitoring.period)


def _target_groups_of(
    monitoring: NeuronMonitoring, load_balancer: elbv2.ApplicationLoadBalancer, metric: str, statistic: str
) -> Any:
    """``metric`` of every target group of ``load_balancer``, whichever stack made the target group."""
    return _search(
        monitoring,
        "AWS/ApplicationELB",
        "LoadBalancer,TargetGroup",
        metric,
        statistic,
        load_balancer.load_balancer_full_name,
    )


def _load_balancers(monitoring: NeuronMonitoring) -> list[elbv2.ApplicationLoadBalancer]:
    """The cluster's load balancers made in this stack (the dashboard never refers to another stack)."""
    here = Stack.of(monitoring)
    return [b for b in monitoring.neuron_cluster.load_balancers if Stack.of(b) is here]
