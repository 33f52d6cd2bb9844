"""A model's start, measured where it happens: the engine-metrics sidecar of a model's task definition and the
compile-at-start alarm (``NeuronService(..., engine_metrics=...)``).

Why a sidecar that writes embedded metric format (EMF), not the CloudWatch agent's Prometheus support. The agent
scrapes Prometheus targets it is told of in a Prometheus scrape configuration and an EMF processor configuration
(the agent's ``prometheus`` section and its ECS service discovery, which periodically calls
``ec2:DescribeInstances``, ``ecs:ListTasks``, ``ecs:ListServices``, ``ecs:DescribeContainerInstances``,
``ecs:DescribeServices``, ``ecs:DescribeTasks`` and ``ecs:DescribeTaskDefinition``, with ``CloudWatchAgentServerPolicy``
on its task role: CloudWatch user guide, "Install the CloudWatch agent with Prometheus metrics collection on Amazon
ECS clusters" and "Detailed guide for autodiscovery on Amazon ECS clusters"): one more image, one more configuration
surface in two languages, and a role that reads the cluster. The
collector instead is :mod:`neuron_constructs.programs.engine_metrics`, a standard-library program of a few hundred
lines that the library tests like its other programs, the same pattern as the neuron-monitor publisher
(:mod:`neuron_constructs.programs.metric_publisher`): it prints EMF lines, the task's ``awslogs`` driver sends them,
CloudWatch Logs extracts the metrics. So the sidecar has no task role permission at all, nothing to discover (it
reads its own task's engine), and the metric set is a table (:mod:`neuron_constructs.knowledge.engine_metrics`): this
collector is the one every later engine metric uses, each one row.

The sidecar (container ``engine-metrics``) runs in the model's own image, with that image's ``python3``: no image is
added to pull, pin or trust (it is exactly as pinned as the model: pin the model's image by digest and the sidecar
runs that digest), and the instance already holds it. It runs as user ``65534`` (nobody), with a read-only root
file system, every Linux capability dropped, not privileged, 64 MiB of memory at most and 32 reserved, no CPU
reservation, not essential (the task does not stop when it does), logging to the task definition's log group (its
retention). It stops once the start is written.

Where it reads the engine: ``http://127.0.0.1:<port>`` in the awsvpc and host networks (the containers of a task
share the network namespace: ECS guide, "Amazon ECS task networking options"), ``http://engine:<port>`` in the bridge
network, through a link to the model's container (bridge containers do not share ``localhost``; ``links`` let one
reach another by name, "only supported if the network mode of a task definition is bridge": ECS guide, "Amazon ECS
task definition parameters"). ``port``: the model container's container port (NEURON171).

The compile-at-start alarm (``compile_alarm``). A plain alarm, not one of the rollout's deployment alarms: a start
that compiles is slow, not broken, and the copies it slows are the ones a deployment waits for, so rolling back on
it would undo a revision that serves correctly (a precompiled copy that runs cache-hit-only fails at start on a
miss instead, and the deployment circuit breaker rolls that back). It notifies the cluster monitoring's topic when
the cluster has one; to roll back on it anyway, pass it to ``service.add_rollout_alarms``. It exists when the model
should start warm: its Neuron container has a compile cache, or ``expect_warm=True`` (NEURON172 when that has none).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
from neuron_constructs.knowledge import engine_metrics as table
from neuron_constructs.knowledge import image_support, rules
from neuron_constructs.knowledge.engines import ENGINES, Engine
from neuron_constructs.programs import engine_metrics as collector
from neuron_constructs.programs.carrying import program_source
from neuron_constructs.programs.metric_publisher import CLUSTER_DIMENSION, MODEL_DIMENSION, NAMESPACE

__all__ = [
    "CACHE_VARIABLES",
    "CONTAINER_NAME",
    "LINK_ALIAS",
    "PROGRAM_VARIABLE",
    "USER",
    "EngineMetrics",
    "add_engine_metrics",
    "collector_script",
    "collector_source",
    "compiled_at_start_metric",
    "engine_of",
    "measure_start",
    "wanted",
]

CONTAINER_NAME = "engine-metrics"
"""The sidecar's container name."""
PROGRAM_VARIABLE = "ENGINE_METRICS_PROGRAM"
"""The environment variable that holds the collector's source."""
LINK_ALIAS = "engine"
"""The model container's name for the sidecar in the bridge network."""
USER = "65534"
"""nobody: a numeric user every image runs as, without an ``/etc/passwd`` entry."""
CACHE_VARIABLES = ("NEURON_LIBTORCH_REMOTE_CACHE", "VLLM_CACHE_ROOT", "NEURON_COMPILE_CACHE_URL")
"""A Neuron container with one of these has a compile cache (:mod:`neuron_constructs.knowledge.engines`)."""


@dataclass(frozen=True)
class EngineMetrics:
    """How the model's start is measured (``NeuronService(engine_metrics=EngineMetrics(...))``).

    ``port``: the container port of the engine's ``/metrics`` and ``/health``; default the model container's first
    port mapping (NEURON171 when it has none, or another is given). ``period``: between two scrapes, 1 s to 5
    minutes; default 15 s. ``compiled_above``: a bucket whose compile time reaches it counts as compiled, not read
    from the cache (vLLM Neuron's compile time "Includes compile cache hits"); default 60 s, assumed: no source gives
    a cache hit's duration, so measure it (the per-bucket ``CompilationTime`` of a warm start) and set it above.
    ``expect_warm``: the copies should start warm, so ``CompiledAtStart`` is 1 when one compiles and the alarm
    exists; default whether the model's Neuron container has a compile cache and its engine reports compiles per
    bucket (vLLM Neuron; vLLM on NxD Inference reports none, so nothing would count them; NEURON179 for
    ``expect_warm=True`` there). ``engine``: the engine of an image the image table does not hold (your image built
    on vLLM Neuron's); default the table's.
    """

    port: int | None = None
    period: Duration | None = None
    compiled_above: Duration | None = None
    expect_warm: bool | None = None
    engine: Engine | None = None


@functools.cache
def collector_source() -> str:
    """The collector's code as the sidecar carries it (without docstrings and comments)."""
    return program_source("neuron_constructs.programs", "engine_metrics.py")


def collector_script() -> str:
    """The sidecar's command (POSIX sh): the image's ``python3`` (or ``python``) runs the collector; an image with
    neither stops the sidecar with one line."""
    return (
        "PY=$(command -v python3 || command -v python) || { echo 'engine-metrics: this image has no python3 for the "
        "collector: pass engine_metrics=False'; exit 1; }\n"
        f'exec "$PY" -u -c "${PROGRAM_VARIABLE}"\n'
    )


def engine_of(container: ecs.ContainerDefinition) -> Engine | None:
    """The engine of ``container``'s image from the image table; ``None`` for an image it does not hold."""
    name = container.image_name
    found = None if not isinstance(name, str) or name.startswith("${Token") else image_support.table_image(name)
    return None if found is None else found[1].engine


def _environment(container: ecs.ContainerDefinition) -> dict[str, Any]:
    rendered = Stack.of(container).resolve(container.render_container_definition()) or {}
    pairs = rendered.get("environment") or [] if isinstance(rendered, dict) else []
    return {str(p.get("name")): p.get("value") for p in pairs if isinstance(p, dict)}


def _ports(container: ecs.ContainerDefinition) -> list[int]:
    return [int(m.container_port) for m in container.port_mappings if isinstance(m.container_port, (int, float))]


def _seconds(path: str, given: Duration | None, default: float, name: str, low: float, high: float) -> float:
    seconds = default if given is None else given.to_seconds()
    if not low <= seconds <= high:
        raise rules.OUT_OF_RANGE.error(
            path, f"{name}={seconds:g} s", name=name, minimum=f"{low:g} s", maximum=f"{high:g} s"
        )
    return seconds


def wanted(engine_metrics: bool | EngineMetrics | None, container: ecs.ContainerDefinition) -> EngineMetrics | None:
    """The options to measure with, ``None`` when the model is not measured: ``None`` (the default) measures a model
    whose image's engine publishes metrics the table reads and whose container maps a port (where the engine serves
    them), ``True`` or an :class:`EngineMetrics` always (refused where there is none to read, NEURON170, or no port
    to read them on, NEURON171), ``False`` never."""
    if engine_metrics is False:
        return None
    if engine_metrics is None:
        measured = table.publishes_metrics(engine_of(container)) and bool(_ports(container))
        return EngineMetrics() if measured else None
    return EngineMetrics() if engine_metrics is True else engine_metrics


def measure_start(
    owner: Construct,
    engine_metrics: bool | EngineMetrics | None,
    *,
    task_definition: NeuronTaskDefinition,
    model_name: str,
    cluster: NeuronCluster,
) -> tuple[ecs.ContainerDefinition | None, cloudwatch.Alarm | None]:
    """The sidecar and the alarm of ``owner``'s model as ``engine_metrics`` asks (:func:`wanted`): ``(None, None)``
    when it is not measured."""
    neuron = task_definition.neuron_containers[0] if task_definition.neuron_containers else None
    if neuron is None and not engine_metrics:
        return None, None
    options = wanted(engine_metrics, neuron) if neuron is not None else EngineMetrics()
    if options is None:
        return None, None
    topic = getattr(cluster.monitoring, "alarm_topic", None)
    return add_engine_metrics(
        owner,
        task_definition=task_definition,
        options=options,
        model_name=model_name,
        cluster_name=str(cluster.cluster.cluster_name),
        alarm_topic=topic,
    )


def add_engine_metrics(
    owner: Construct,
    *,
    task_definition: NeuronTaskDefinition,
    options: EngineMetrics,
    model_name: str,
    cluster_name: str,
    alarm_topic: sns.ITopic | None,
) -> tuple[ecs.ContainerDefinition, cloudwatch.Alarm | None]:
    """Add the collector sidecar to ``task_definition`` (once: a second service of it reuses the first's) and, when
    the model should start warm, the compile-at-start alarm in ``owner``."""
    path = construct_path(owner)
    if not task_definition.neuron_containers:
        raise rules.ENGINE_WITHOUT_METRICS.error(
            path, f"{construct_path(task_definition)} has no Neuron container to read", engines=_engines()
        )
    model = task_definition.neuron_containers[0]
    engine = options.engine or engine_of(model)
    if not table.publishes_metrics(engine):
        shown = "an image the image table does not hold" if engine is None else f"engine {engine.name}"
        raise rules.ENGINE_WITHOUT_METRICS.error(
            path, f"engine_metrics asked for {model.image_name}, {shown}, which publishes none", engines=_engines()
        )
    ports = _ports(model)
    served = task_definition.servers.get(model.container_name)
    default = served.port if served is not None else (ports[0] if ports else None)
    port = options.port if options.port is not None else default
    if port is None or port not in ports:
        raise rules.ENGINE_METRICS_PORT.error(
            path,
            f"container {model.container_name!r} maps no port"
            if not ports
            else f"EngineMetrics(port={port}) is not a container port of {model.container_name!r}",
            ports=", ".join(map(str, ports)) or "none",
        )
    period = _seconds(path, options.period, collector.DEFAULT_PERIOD, "period", 1, 300)
    compiled_above = _seconds(
        path, options.compiled_above, collector.DEFAULT_COMPILED_ABOVE, "compiled_above", 1, 86_400
    )
    reports_compiles = table.reports_compiles(engine)
    # Rendering the container to read its variables is about fifty round trips to the CDK's runtime: only where
    # the answer decides something (the default of an engine that reports compiles, or a warm start asked for).
    asks_cache = options.expect_warm if options.expect_warm is not None else reports_compiles
    has_cache = asks_cache and any(_environment(model).get(v) for v in CACHE_VARIABLES)
    expect_warm = has_cache if options.expect_warm is None else options.expect_warm
    if options.expect_warm and not reports_compiles:
        raise rules.COMPILE_ALARM_WITHOUT_COMPILE_METRIC.error(
            path, f"EngineMetrics(expect_warm=True) for engine {engine.name if engine else 'unknown'}"
        )
    if options.expect_warm and not has_cache:
        Validations.of(owner).add_warning(
            rules.COMPILE_ALARM_WITHOUT_CACHE.warning_id,
            rules.COMPILE_ALARM_WITHOUT_CACHE.message(
                path, f"expect_warm=True, and container {model.container_name!r} has no compile cache"
            ),
        )
    existing = task_definition.task_definition.find_container(CONTAINER_NAME)
    sidecar = existing or _sidecar(
        task_definition, model, engine, port, period, compiled_above, expect_warm, model_name, cluster_name
    )
    alarm = _compile_alarm(owner, cluster_name, model_name, alarm_topic) if expect_warm else None
    return sidecar, alarm


def _engines() -> str:
    return ", ".join(e.name for e in ENGINES.values() if table.publishes_metrics(e))


def _sidecar(
    task_definition: NeuronTaskDefinition,
    model: ecs.ContainerDefinition,
    engine: Engine | None,
    port: int,
    period: float,
    compiled_above: float,
    expect_warm: bool,
    model_name: str,
    cluster_name: str,
) -> ecs.ContainerDefinition:
    bridge = task_definition.task_definition.network_mode == ecs.NetworkMode.BRIDGE
    host = LINK_ALIAS if bridge else "127.0.0.1"
    no_capabilities = ecs.LinuxParameters(task_definition, "EngineMetricsLinuxParameters")
    no_capabilities.drop_capabilities(ecs.Capability.ALL)
    sidecar = task_definition.add_container(
        CONTAINER_NAME,
        image=ecs.ContainerImage.from_registry(model.image_name),
        essential=False,
        entry_point=["/bin/sh", "-c"],
        command=[collector_script()],
        user=USER,
        readonly_root_filesystem=True,
        privileged=False,
        linux_parameters=no_capabilities,
        memory_limit_mib=64,
        memory_reservation_mib=32,
        environment={
            PROGRAM_VARIABLE: collector_source(),
            collector.URL_VARIABLE: f"http://{host}:{port}",
            collector.MODEL_VARIABLE: model_name,
            collector.CLUSTER_VARIABLE: cluster_name,
            collector.PERIOD_VARIABLE: f"{period:g}",
            collector.COMPILED_ABOVE_VARIABLE: f"{compiled_above:g}",
            collector.EXPECT_WARM_VARIABLE: "1" if expect_warm else "0",
            collector.TABLE_VARIABLE: table.table_json(engine, NAMESPACE),
        },
    )
    if bridge:
        sidecar.add_link(model, LINK_ALIAS)
    return sidecar


def compiled_at_start_metric(cluster_name: str, model_name: str, statistic: str = "Maximum") -> cloudwatch.Metric:
    """The model's ``CompiledAtStart`` (1 when a copy that should start warm compiled), each minute."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name="CompiledAtStart",
        dimensions_map={CLUSTER_DIMENSION: cluster_name, MODEL_DIMENSION: model_name},
        statistic=statistic,
        period=Duration.minutes(1),
    )


def _compile_alarm(
    owner: Construct, cluster_name: str, model_name: str, alarm_topic: sns.ITopic | None
) -> cloudwatch.Alarm:
    alarm = cloudwatch.Alarm(
        owner,
        "CompiledAtStartAlarm",
        metric=compiled_at_start_metric(cluster_name, model_name),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=(
            "A copy of the model that should start warm compiled at start: its compile cache missed (a new model "
            "revision, engine release or compiler flag, or an empty cache); see its BucketsCompiled and the "
            "per-bucket CompilationTime"
        ),
    )
    if alarm_topic is not None:
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(alarm_topic))
    return alarm
