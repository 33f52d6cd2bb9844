"""Neuron metrics in CloudWatch, a dashboard and alarms, and hardware-problem recovery for a :class:`NeuronCluster`.

:class:`NeuronMonitoring` covers every Neuron capacity of its cluster, added before or after it, and never a
non-Neuron one:

* **Metrics.** neuron-monitor runs on every Neuron instance - an ECS service with the DAEMON strategy on Auto Scaling
  capacity (placed only on the Neuron instance types), an ECS Managed Daemon on Managed Instances capacity (Managed
  Daemons exist for Managed Instances only). Its reports become CloudWatch embedded metric format lines
  (:mod:`neuron_constructs.programs.metric_publisher`) that the ``awslogs`` driver sends to the daemon's log group,
  where CloudWatch Logs extracts the metrics: no code to build, no PutMetricData permission. The image is the Neuron
  team's neuron-monitor image (:data:`~neuron_constructs.monitoring.daemons.MONITOR_IMAGE`), the one the Neuron SDK's
  Kubernetes manifest runs, which ships neuron-monitor (``aws-neuronx-tools``) and Python. The daemon is privileged,
  as that manifest runs it: neuron-monitor reads every device's counters through the Neuron driver, and an instance's
  device count varies by type (no published source runs it with less). Privileged, it can reach the instance role:
  so its image must be pinned by digest (NEURON068; NEURON116 while the library's own runs by tag), and the template
  check NEURON115, which reports every privileged or host-network container, is acknowledged on its task
  definitions only. It maps no device (``linuxParameters.devices``), so ECS's and the inspector's view of which task
  holds which chip stays the workloads' own. It runs in the bridge network: the publisher takes the instance id from
  the instance's DMI identity when neuron-monitor cannot read it from the instance metadata service.
* **Per model.** The services, slices and fleet models of the library tag their Neuron containers with
  ``NEURON_PROCESS_TAG=<model name>``; neuron-monitor reports each application under its tag, and the publisher
  adds each model's NeuronCore utilization, memory, executions, errors and latency under ``ClusterName, Model``
  (and its utilization under ``ClusterName, Model, InstanceId``). ``scale_on_neuron_utilization`` tracks them.
* **Dashboard and alarms.** One dashboard: NeuronCore utilization and accelerator memory per instance, NeuronCore
  utilization and executions per model, execution errors, ECC events and latency, the CPU and memory of every
  service of the cluster, and the response time and 5xx count of every target group of the cluster's load balancers
  made in the monitoring's stack - services and target groups found by metric search on the cluster's and the load
  balancers' names, so that model stacks never have the monitoring's stack depend on them. Alarms on uncorrected ECC
  events and on execution errors notify an SNS topic: yours (``alarm_topic``) or a new one encrypted with a new KMS
  key.
* **Recovery** (``recovery=True``, the default). On Auto Scaling capacity, after AWS's node-problem-detector and
  neuron-node-recovery pattern (aws-neuron-samples ``neuron-problem-detector/ecs-npd-cdk``), a daemon service in
  the bridge network, no container privileged: node-problem-detector watches the kernel log for ``NEURON_HW_ERR=...``
  and reports it, and the recovery container (:func:`~neuron_constructs.monitoring.daemons.recovery_script`, in the
  AWS CLI image) marks the instance unhealthy in its Auto Scaling group, which replaces it. The recovery container
  reads the instance id from the instance's DMI identity, so it needs neither the host network nor the instance
  metadata service (AWS's sample runs it where the metadata service is open to it). On Managed Instances, a
  *critical* managed daemon that stops when the kernel log reports an unrecoverable Neuron error, so ECS drains and
  replaces the instance. ``recovery=False``: metrics and alarms only (on Auto Scaling capacity the detector still
  runs and reports, with ``ENABLE_RECOVERY=false``).

Each part has its module: the daemons on Auto Scaling capacity
(:mod:`~neuron_constructs.monitoring.auto_scaling_daemons`) and on Managed Instances capacity
(:mod:`~neuron_constructs.monitoring.managed_daemons`), what they run (:mod:`~neuron_constructs.monitoring.daemons`),
the alarms (:mod:`~neuron_constructs.monitoring.alarms`) and the dashboard
(:mod:`~neuron_constructs.monitoring.dashboard`).
"""

from __future__ import annotations

from aws_cdk import (
    Duration,
    RemovalPolicy,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs.base.arguments import Range, checked
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.environments import (
    IMPORT_TOPIC,
    check_same_app,
    check_same_environment,
    check_same_region,
)
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL
from neuron_constructs.base.log_groups import log_group as new_log_group
from neuron_constructs.base.tree import construct_path, kept, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import (
    AWS_CLI,
    NEURON_MONITOR,
    NODE_PROBLEM_DETECTOR,
    PRIVILEGED_IMAGES,
    NeuronImage,
)
from neuron_constructs.monitoring.alarms import KERNEL_EVENTS_NAMESPACE as KERNEL_EVENTS_NAMESPACE
from neuron_constructs.monitoring.alarms import alarm_topic as new_alarm_topic
from neuron_constructs.monitoring.alarms import neuron_alarms
from neuron_constructs.monitoring.auto_scaling_daemons import AutoScalingDaemons
from neuron_constructs.monitoring.dashboard import fill_dashboard
from neuron_constructs.monitoring.managed_daemons import ManagedDaemons
from neuron_constructs.programs.metric_publisher import METRICS, NAMESPACE

__all__ = ["DEFAULT_DRAIN_PERCENT", "NeuronMonitoring"]

DEFAULT_DRAIN_PERCENT = 10.0
"""Creating a managed daemon on running capacity, or changing its task definition, drains and replaces the instances
(ECS guide: Managed Daemons deployments): by default a tenth of them at a time, ten minutes apart."""


class NeuronMonitoring(Construct):
    """Neuron metrics, a dashboard, alarms and recovery for one cluster (module docstring).

    Made once per cluster, usually in the cluster's scope (``NeuronMonitoring(cluster, "Monitoring",
    cluster=cluster)``); it registers itself as ``cluster.monitoring`` and covers the capacity added before and
    after it. A second one for the same cluster is refused (NEURON054).

    Parameters
    ----------
    cluster
        The :class:`NeuronCluster` to monitor.
    alarm_topic
        The SNS topic the alarms notify; default a new one encrypted with a new KMS key.
    recovery
        Replace instances whose Neuron devices report unrecoverable errors; default True.
    period
        How often neuron-monitor reports, in whole minutes from 1 to 60; default 1 minute.
    execution_errors_threshold
        Execution errors in 5 minutes that raise the alarm; default 1.
    drain_percent
        On Managed Instances, the share of instances a daemon rollout (making the monitoring, or a
        change of a daemon) drains and replaces at once, ten minutes apart; default 10.
    monitor_image, recovery_image, problem_detector_image
        The images the daemons run (:mod:`~neuron_constructs.knowledge.container_images`); default
        ``NEURON_MONITOR`` (neuron-monitor, privileged), ``AWS_CLI`` (the recovery container and the health
        daemon, which need ``sh``, ``grep`` and ``aws``) and ``NODE_PROBLEM_DETECTOR``, each by digest where its
        source gives one. Pass ``image.pinned("sha256:...")`` to run a digest you resolved. The monitor image runs
        privileged: one without a digest is refused (NEURON068), except the library's own ``NEURON_MONITOR``, which
        runs by its tag with a warning (NEURON116) until a source gives its digest.
    log_retention, log_removal_policy
        How long the daemons' log group keeps its events (default one month) and what ``cdk destroy`` does with it
        (default ``RemovalPolicy.DESTROY``: the daemons' logs describe instances that are gone with the stack).

    Attributes
    ----------
    log_group
        The daemons' log group (the metrics are extracted from it), events kept ``log_retention``.
    alarm_topic
        The SNS topic the alarms notify.
    dashboard
        The ``cloudwatch.Dashboard``.
    hardware_alarm
        Uncorrected ECC events or hardware execution errors; execution_errors_alarm: execution errors;
    kernel_alarm
        A kernel ``NEURON_HW_ERR=`` event the problem detector or health daemon logged.
    daemon_service
        The neuron-monitor DAEMON service of the Auto Scaling capacity (``None`` until there is one).
    recovery_service
        The node-problem-detector DAEMON service (``None`` without recovery or Auto Scaling capacity).
    managed_daemons
        The ``CfnDaemon`` s of the Managed Instances capacity, by capacity.
    """

    @checked(
        ranges={
            "execution_errors_threshold": Range(1),
            "drain_percent": Range(1, 100, "ECS Managed Daemons: the share of instances drained at once"),
        }
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: NeuronCluster,
        alarm_topic: sns.ITopic | None = None,
        recovery: bool = True,
        period: Duration | None = None,
        execution_errors_threshold: int = 1,
        drain_percent: float = DEFAULT_DRAIN_PERCENT,
        monitor_image: NeuronImage = NEURON_MONITOR,
        recovery_image: NeuronImage = AWS_CLI,
        problem_detector_image: NeuronImage = NODE_PROBLEM_DETECTOR,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        unpinned_default = inputs.check_root_image(
            path,
            monitor_image,
            shown="monitor_image",
            argument="monitor_image",
            how="neuron-monitor runs privileged",
            library_images=PRIVILEGED_IMAGES.values(),
        )
        self.monitor_image, self.recovery_image = monitor_image.reference, recovery_image.reference
        self.problem_detector_image = problem_detector_image.reference
        check_same_environment(path, scope, cluster, what="the monitoring", other_name=construct_path(cluster))
        if alarm_topic is not None:
            check_same_app(
                path, scope, alarm_topic, what="the alarms", other_name=construct_path(alarm_topic), how=IMPORT_TOPIC
            )
            check_same_region(
                path,
                alarm_topic.env.region,
                scope,
                what=f"alarm_topic {construct_path(alarm_topic)}",
                other_name="the alarms",
                fix="alarm_topic (a topic of that stack, or imported by an ARN of its Region)",
            )
        if cluster.monitoring is not None:
            raise rules.MONITORING_TWICE.error(
                path, f"{construct_path(cluster)} already has its monitoring (cluster.monitoring)"
            )
        self.period = period or Duration.minutes(1)
        milliseconds = self.period.to_milliseconds()
        if milliseconds % 60_000 or not 60_000 <= milliseconds <= 3_600_000:
            raise rules.OUT_OF_RANGE.error(
                path,
                f"period={self.period.to_human_string()}",
                name="period",
                minimum="1 minute",
                maximum="60 minutes, in whole minutes (the metrics are stored at one-minute resolution)",
            )
        super().__init__(scope, id)
        remember_path(self, scope, id)
        if unpinned_default is not None:
            Validations.of(self).add_warning(
                rules.UNPINNED_LIBRARY_DAEMON.warning_id,
                rules.UNPINNED_LIBRARY_DAEMON.message(
                    path,
                    f"neuron-monitor runs privileged from {unpinned_default.uri}, by its tag",
                    argument="monitor_image",
                    constant=unpinned_default.repository.upper().replace("-", "_"),
                    uri=unpinned_default.uri,
                ),
            )
        cluster.monitoring = self
        self.neuron_cluster = cluster
        self.recovery = recovery
        self._managed = ManagedDaemons(self, drain_percent)
        self.log_group: logs.ILogGroup = new_log_group(
            self,
            "Logs",
            retention=log_retention,
            removal_policy=log_removal_policy,
            encryption_key=cluster.log_encryption_key,
        )
        self.alarm_topic: sns.ITopic = alarm_topic or new_alarm_topic(self)
        self.daemon_service: ecs.Ec2Service | None = None
        self.recovery_service: ecs.Ec2Service | None = None
        self.managed_daemons: dict[ManagedInstancesCapacity, ecs.CfnDaemon] = {}
        self._auto_scaling = AutoScalingDaemons(self)
        self.hardware_alarm, self.kernel_alarm, self.execution_errors_alarm = neuron_alarms(
            self, execution_errors_threshold
        )
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard")
        once_before_synthesis(self.dashboard, self._complete)
        for capacity in cluster.capacities:
            self.cover(capacity)

    @property
    def cluster_name(self) -> str:
        """The cluster's name (a token for a cluster the stack makes), asked of the CDK's runtime once: every metric,
        alarm and widget of the monitoring names it."""
        return kept(self, "_neuron_constructs_cluster_name", lambda: str(self.neuron_cluster.cluster.cluster_name))

    def metric(self, name: str, statistic: str, period: Duration | None = None) -> cloudwatch.Metric:
        """One of :data:`~neuron_constructs.programs.metric_publisher.METRICS` for the whole cluster."""
        if name not in METRICS:
            raise KeyError(f"{name} is not a metric the monitoring daemon publishes: {', '.join(METRICS)}")
        return cloudwatch.Metric(
            namespace=NAMESPACE,
            metric_name=name,
            dimensions_map={"ClusterName": self.cluster_name},
            statistic=statistic,
            period=period or self.period,
        )

    def cover(self, capacity: AutoScalingCapacity | ManagedInstancesCapacity) -> None:
        """Run the daemons on ``capacity`` if it is Neuron capacity (the cluster calls this for each capacity)."""
        if isinstance(capacity, ManagedInstancesCapacity):
            capacity.monitored = True
            self._managed.cover(capacity)
        elif capacity.neuron_instance_type is not None:
            capacity.monitored = True
            self._auto_scaling.cover(capacity)

    def _complete(self) -> None:
        """Once the tree is complete, before synthesis: the dashboard (services and load balancers added after the
        monitoring are on it too), the recovery groups' acknowledgements and the daemons' wait for the cluster's
        capacity provider associations."""
        fill_dashboard(self)
        self._auto_scaling.acknowledge_recovery_groups()
        self._managed.after_association()
