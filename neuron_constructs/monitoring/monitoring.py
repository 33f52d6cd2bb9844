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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_cdk import (
    Aws,
    Duration,
    IStableListProducer,
    IStableStringProducer,
    Lazy,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct
from jsii import implements

from neuron_constructs.base import compliance
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
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.cluster import NeuronCluster
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import (
    AWS_CLI,
    IMAGES,
    NEURON_MONITOR,
    NODE_PROBLEM_DETECTOR,
    PRIVILEGED_IMAGES,
    NeuronImage,
)
from neuron_constructs.monitoring.daemons import (
    NEURON_HARDWARE_ERRORS,
    PUBLISHER_VARIABLE,
    health_script,
    monitor_script,
    publisher_source,
    recovery_script,
)
from neuron_constructs.programs.metric_publisher import CLUSTER_ENVIRONMENT, METRICS, NAMESPACE

__all__ = ["DEFAULT_DRAIN_PERCENT", "KERNEL_EVENTS_NAMESPACE", "NeuronMonitoring"]

KERNEL_EVENTS_NAMESPACE = f"{NAMESPACE}/KernelHardwareErrors"
"""Where the daemons' log lines with ``NEURON_HW_ERR=`` are counted, one metric per cluster name (a log metric filter
on plain text takes no dimensions)."""
_DAEMON_DEPLOYMENT: dict[str, Any] = {
    "min_healthy_percent": 0,
    "max_healthy_percent": 100,
    "circuit_breaker": ecs.DeploymentCircuitBreaker(rollback=True),
}
"""A daemon runs one task per instance: a deployment stops the old task before it starts the new one, and rolls
back if the new one does not start."""
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
        unpinned_default = _check_pinned(path, monitor_image)
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
        self._rollout = ecs.CfnDaemon.DaemonDeploymentConfigurationProperty(
            drain_percent=float(drain_percent), bake_time_in_minutes=10
        )
        self.log_group: logs.ILogGroup = new_log_group(
            self,
            "Logs",
            retention=log_retention,
            removal_policy=log_removal_policy,
            encryption_key=cluster.log_encryption_key,
        )
        self.alarm_topic: sns.ITopic = alarm_topic or self._topic()
        self.daemon_service: ecs.Ec2Service | None = None
        self.recovery_service: ecs.Ec2Service | None = None
        self.managed_daemons: dict[ManagedInstancesCapacity, ecs.CfnDaemon] = {}
        self._daemon_task_definitions: dict[str, ecs.CfnDaemonTaskDefinition] = {}
        self._auto_scaling: list[AutoScalingCapacity] = []
        hardware = cloudwatch.MathExpression(
            expression="MAX([ecc, execution])",
            using_metrics={
                "ecc": self.metric("HardwareEccUncorrected", "Maximum", Duration.minutes(1)),
                "execution": self.metric("ExecutionHardwareErrors", "Maximum", Duration.minutes(1)),
            },
            label="Uncorrected ECC events or hardware execution errors",
            period=Duration.minutes(1),
        )
        self.hardware_alarm = self._alarm(
            "HardwareErrors",
            hardware,
            1,
            "Uncorrected ECC events or hardware execution errors on a Neuron device of the cluster",
        )
        kernel = logs.MetricFilter(
            self,
            "KernelHardwareErrorEvents",
            log_group=self.log_group,
            # node-problem-detector logs its rules, patterns included, when it starts: not an event.
            filter_pattern=logs.FilterPattern.literal('"NEURON_HW_ERR=" -"Finish parsing"'),
            metric_namespace=KERNEL_EVENTS_NAMESPACE,
            metric_name=self.cluster_name,
            metric_value="1",
        )
        self.kernel_alarm = self._alarm(
            "KernelHardwareErrors",
            kernel.metric(statistic="Sum", period=Duration.minutes(1)),
            1,
            "The kernel log of a Neuron instance reported NEURON_HW_ERR=, as the problem detector or the health "
            "daemon logged it (with recovery on, an unrecoverable one replaces the instance)",
        )
        self.execution_errors_alarm = self._alarm(
            "ExecutionErrors",
            self.metric("ExecutionErrors", "Sum", Duration.minutes(5)),
            execution_errors_threshold,
            f"{execution_errors_threshold} or more Neuron execution errors in 5 minutes on the cluster",
        )
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard")
        once_before_synthesis(self.dashboard, self._complete)
        for capacity in cluster.capacities:
            self.cover(capacity)

    @property
    def cluster_name(self) -> str:
        return str(self.neuron_cluster.cluster.cluster_name)

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
            self._managed_daemons(capacity)
        elif capacity.neuron_instance_type is not None:
            capacity.monitored = True
            self._auto_scaling.append(capacity)
            if self.daemon_service is None:
                self._daemon_services()

    # --- Auto Scaling capacity -----------------------------------------------------------------------

    def _neuron_types(self) -> str:
        types = sorted({str(c.neuron_instance_type.name) for c in self._auto_scaling if c.neuron_instance_type})
        return f"attribute:ecs.instance-type in [{', '.join(types)}]"

    def _daemon_services(self) -> None:
        cluster = self.neuron_cluster.cluster
        only_neuron = ecs.PlacementConstraint.member_of(Lazy.string(_ProduceString(self._neuron_types)))
        monitor = ecs.Ec2TaskDefinition(
            self, "MonitorTask", network_mode=ecs.NetworkMode.BRIDGE, task_role=task_role(self, "MonitorRole")
        )
        monitor.add_container(
            "neuron-monitor",
            image=ecs.ContainerImage.from_registry(self.monitor_image),
            entry_point=["/bin/sh", "-c"],
            command=[monitor_script(self.period)],
            environment={CLUSTER_ENVIRONMENT: self.cluster_name, PUBLISHER_VARIABLE: publisher_source()},
            privileged=True,
            memory_reservation_mib=256,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="neuron-monitor", log_group=self.log_group),
        )
        compliance.acknowledge_monitoring_task(monitor)
        self.daemon_service = ecs.Ec2Service(
            self,
            "MonitorService",
            cluster=cluster,
            task_definition=monitor,
            daemon=True,
            placement_constraints=[only_neuron],
            enable_ecs_managed_tags=True,
            **_DAEMON_DEPLOYMENT,
        )
        if not self.recovery_service:
            self._recovery_service(only_neuron)

    def _recovery_service(self, only_neuron: ecs.PlacementConstraint) -> None:
        cluster = self.neuron_cluster.cluster
        role = task_role(self, "RecoveryRole")
        if self.recovery:
            groups = Lazy.list(
                _ProduceList(lambda: [c.auto_scaling_group.auto_scaling_group_arn for c in self._auto_scaling])
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="MarkNeuronInstancesUnhealthy", actions=["autoscaling:SetInstanceHealth"], resources=groups
                )
            )
        # The bridge network, unlike AWS's sample (awsvpc with the instance metadata open to containers): the
        # instances' hop limit of 1 keeps the metadata service, and the instance role, from bridge-mode containers;
        # the recovery container reads its instance id from the instance's DMI identity instead.
        detector = ecs.Ec2TaskDefinition(self, "RecoveryTask", network_mode=ecs.NetworkMode.BRIDGE, task_role=role)
        rules = [
            {
                "type": "permanent",
                "condition": "NeuronHealth",
                "reason": f"NeuronHasError_{code}",
                "pattern": f".*NEURON_HW_ERR={code}.*",
            }
            for code in NEURON_HARDWARE_ERRORS
        ]
        kernel_monitor = {
            "plugin": "kmsg",
            "logPath": "/dev/kmsg",
            "lookback": "5m",
            "bufferSize": 10,
            "source": "kernel-monitor",
            "conditions": [{"type": "NeuronHealth", "reason": "NeuronHasNoError", "message": "Neuronhasnoerror"}],
            "rules": rules,
        }
        # Not privileged: the kernel log as a read-only device and CAP_SYSLOG, which the kernel asks of a reader of
        # /dev/kmsg when kernel.dmesg_restrict is 1 - what the Managed Instances health daemon reads it with too.
        kernel_log = ecs.LinuxParameters(self, "KernelLog")
        kernel_log.add_devices(
            ecs.Device(host_path="/dev/kmsg", container_path="/dev/kmsg", permissions=[ecs.DevicePermission.READ])
        )
        kernel_log.add_capabilities(ecs.Capability.SYSLOG)
        detector.add_container(
            "npd",
            image=ecs.ContainerImage.from_registry(self.problem_detector_image),
            entry_point=["/bin/sh", "-c"],
            command=[
                "mkdir -p /config && echo '" + json.dumps(kernel_monitor, separators=(",", ":")) + "' > "
                "/config/kernel-monitor.json && /node-problem-detector --v=2 --logtostderr "
                "--enable-k8s-exporter=false --config.system-log-monitor=/config/kernel-monitor.json"
            ],
            linux_parameters=kernel_log,
            memory_reservation_mib=128,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="npd", log_group=self.log_group),
        )
        recovery_log = ecs.LinuxParameters(self, "RecoveryKernelLog")
        recovery_log.add_devices(
            ecs.Device(host_path="/dev/kmsg", container_path="/dev/kmsg", permissions=[ecs.DevicePermission.READ])
        )
        recovery_log.add_capabilities(ecs.Capability.SYSLOG)
        detector.add_container(
            "recovery",
            image=ecs.ContainerImage.from_registry(self.recovery_image),
            entry_point=["/bin/sh", "-c"],
            command=[recovery_script()],
            environment={"ENABLE_RECOVERY": "true" if self.recovery else "false", "AWS_REGION": Aws.REGION},
            linux_parameters=recovery_log,
            readonly_root_filesystem=True,
            memory_reservation_mib=128,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="recovery", log_group=self.log_group),
        )
        compliance.acknowledge_recovery_task(detector, role)
        self.recovery_service = ecs.Ec2Service(
            self,
            "RecoveryService",
            cluster=cluster,
            task_definition=detector,
            daemon=True,
            placement_constraints=[only_neuron],
            enable_ecs_managed_tags=True,
            **_DAEMON_DEPLOYMENT,
        )

    def _acknowledge_recovery_groups(self) -> None:
        role = self.node.try_find_child("RecoveryRole")
        if role is not None:
            arns = [c.auto_scaling_group.auto_scaling_group_arn for c in self._auto_scaling]
            compliance.acknowledge_recovery_groups(role, arns)

    # --- Managed Instances capacity ------------------------------------------------------------------

    def _managed_daemons(self, capacity: ManagedInstancesCapacity) -> None:
        stack = Stack.of(self)
        provider = stack.format_arn(
            service="ecs", resource="capacity-provider", resource_name=capacity.capacity_provider.capacity_provider_name
        )
        self.managed_daemons[capacity] = self._daemon(f"{capacity.node.id}MonitorDaemon", provider, critical=False)
        if self.recovery:
            self._daemon(f"{capacity.node.id}HealthDaemon", provider, critical=True)

    def _daemon(self, id: str, provider: str, *, critical: bool) -> ecs.CfnDaemon:
        """The managed daemon of the health (critical) or monitor task definition on one capacity provider."""
        definition = self._daemon_task_definition(
            "HealthDaemonTask" if critical else "MonitorDaemonTask", critical=critical
        )
        daemon = ecs.CfnDaemon(
            self,
            id,
            cluster_arn=self.neuron_cluster.cluster.cluster_arn,
            capacity_provider_arns=[provider],
            daemon_task_definition_arn=definition.attr_daemon_task_definition_arn,
            critical=critical,
            enable_ecs_managed_tags=True,
            deployment_configuration=self._rollout,
        )
        compliance.acknowledge_daemon_critical(daemon)
        return daemon

    def _complete(self) -> None:
        """Once the tree is complete, before synthesis: the dashboard (services and load balancers added after the
        monitoring are on it too), the recovery groups' acknowledgements and the daemons' wait for the cluster's
        capacity provider associations."""
        self._fill_dashboard()
        self._acknowledge_recovery_groups()
        self._after_association()

    def _after_association(self) -> None:
        """Managed daemons name capacity providers the cluster must already hold: they wait for the association
        (aws-cdk-lib creates it at synthesis)."""
        associations = self.neuron_cluster.capacity_associations
        for child in self.node.find_all():
            if isinstance(child, ecs.CfnDaemon):
                for association in associations:
                    child.node.add_dependency(association)

    def _daemon_task_definition(self, id: str, *, critical: bool) -> ecs.CfnDaemonTaskDefinition:
        existing = self._daemon_task_definitions.get(id)
        if existing is not None:
            return existing
        execution = self._daemon_execution_role()
        log_options = {
            "awslogs-group": self.log_group.log_group_name,
            "awslogs-region": Aws.REGION,
            "awslogs-stream-prefix": "neuron-health" if critical else "neuron-monitor",
        }
        logging = ecs.CfnDaemonTaskDefinition.LogConfigurationProperty(log_driver="awslogs", options=log_options)
        if critical:
            container = ecs.CfnDaemonTaskDefinition.DaemonContainerDefinitionProperty(
                name="neuron-health",
                image=self.recovery_image,
                entry_point=["/bin/sh", "-c"],
                command=[health_script()],
                essential=True,
                memory_reservation=64,
                linux_parameters=ecs.CfnDaemonTaskDefinition.LinuxParametersProperty(
                    devices=[
                        ecs.CfnDaemonTaskDefinition.DeviceProperty(
                            host_path="/dev/kmsg", container_path="/dev/kmsg", permissions=["read"]
                        )
                    ],
                    capabilities=ecs.CfnDaemonTaskDefinition.KernelCapabilitiesProperty(add=["SYSLOG"]),
                ),
                log_configuration=logging,
            )
        else:
            container = ecs.CfnDaemonTaskDefinition.DaemonContainerDefinitionProperty(
                name="neuron-monitor",
                image=self.monitor_image,
                entry_point=["/bin/sh", "-c"],
                command=[monitor_script(self.period)],
                environment=[
                    ecs.CfnDaemonTaskDefinition.KeyValuePairProperty(name=CLUSTER_ENVIRONMENT, value=self.cluster_name),
                    ecs.CfnDaemonTaskDefinition.KeyValuePairProperty(name=PUBLISHER_VARIABLE, value=publisher_source()),
                ],
                essential=True,
                privileged=True,
                memory_reservation=256,
                log_configuration=logging,
            )
        definition = ecs.CfnDaemonTaskDefinition(
            self, id, container_definitions=[container], execution_role_arn=execution.role_arn
        )
        if not critical:
            compliance.acknowledge_monitoring_task(definition)
        self._daemon_task_definitions[id] = definition
        return definition

    def _daemon_execution_role(self) -> iam.Role:
        existing = self.node.try_find_child("DaemonExecutionRole")
        if isinstance(existing, iam.Role):
            return existing
        role = iam.Role(
            self,
            "DaemonExecutionRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="Writes the Neuron daemons' logs",
        )
        self.log_group.grant_write(role)
        return role

    # --- dashboard and alarms --------------------------------------------------------------------------

    def _topic(self) -> sns.Topic:
        key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, description="Neuron alarm notifications")
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccount",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        return sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True, display_name="Neuron alarms")

    def _alarm(self, id: str, metric: cloudwatch.IMetric, threshold: int, description: str) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            f"{id}Alarm",
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.alarm_topic))
        return alarm

    def _per_instance(self, metric: str, statistic: str, label: str) -> cloudwatch.MathExpression:
        search = (
            f'SEARCH(\'{{{NAMESPACE},ClusterName,InstanceId}} MetricName="{metric}" '
            f"ClusterName=\"{self.cluster_name}\"', '{statistic}', {int(self.period.to_seconds())})"
        )
        return cloudwatch.MathExpression(expression=search, label=label, period=self.period)

    def _fill_dashboard(self) -> None:
        width = 12
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="NeuronCore utilization per instance (%)",
                left=[self._per_instance("NeuronCoreUtilization", "Average", "")],
                width=width,
            ),
            cloudwatch.GraphWidget(
                title="Accelerator memory used per instance (bytes)",
                left=[self._per_instance("AcceleratorMemoryUsed", "Average", "")],
                width=width,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="NeuronCore utilization per model (%)",
                left=[
                    self._search(NAMESPACE, "ClusterName,Model", "NeuronCoreUtilization", "Average", self.cluster_name)
                ],
                width=width,
            ),
            cloudwatch.GraphWidget(
                title="Executions completed per model",
                left=[self._search(NAMESPACE, "ClusterName,Model", "ExecutionsCompleted", "Sum", self.cluster_name)],
                width=width,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Errors",
                left=[
                    self.metric("ExecutionErrors", "Sum"),
                    self.metric("ExecutionHardwareErrors", "Sum"),
                    self.metric("HardwareEccUncorrected", "Maximum"),
                    self.metric("HardwareEccCorrected", "Sum"),
                ],
                width=width,
            ),
            cloudwatch.GraphWidget(
                title="Execution latency (s)",
                left=[self.metric("ExecutionLatencyP50", "Maximum"), self.metric("ExecutionLatencyP99", "Maximum")],
                width=width,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Service CPU (%)",
                left=[
                    self._search("AWS/ECS", "ClusterName,ServiceName", "CPUUtilization", "Average", self.cluster_name)
                ],
                width=width,
            ),
            cloudwatch.GraphWidget(
                title="Service memory (%)",
                left=[
                    self._search(
                        "AWS/ECS", "ClusterName,ServiceName", "MemoryUtilization", "Average", self.cluster_name
                    )
                ],
                width=width,
            ),
        )
        load_balancers = self._load_balancers()
        if load_balancers:
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title="Load balancer response time (s, p99)",
                    left=[self._target_groups_of(b, "TargetResponseTime", "p99") for b in load_balancers],
                    width=width,
                ),
                cloudwatch.GraphWidget(
                    title="5xx: targets and load balancer",
                    left=[
                        *(self._target_groups_of(b, "HTTPCode_Target_5XX_Count", "Sum") for b in load_balancers),
                        *(
                            b.metrics.http_code_elb(elbv2.HttpCodeElb.ELB_5XX_COUNT, statistic="Sum")
                            for b in load_balancers
                        ),
                    ],
                    width=width,
                ),
            )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms",
                alarms=[self.hardware_alarm, self.kernel_alarm, self.execution_errors_alarm],
                width=2 * width,
            )
        )

    def _search(self, namespace: str, dimensions: str, metric: str, statistic: str, cluster: str) -> cloudwatch.IMetric:
        """Every metric of ``namespace`` with ``dimensions`` whose first dimension is the cluster's name: the services
        of every stack on this cluster, without a reference to any of them."""
        first = dimensions.split(",", 1)[0]
        search = (
            f'SEARCH(\'{{{namespace},{dimensions}}} MetricName="{metric}" {first}="{cluster}"\', '
            f"'{statistic}', {int(self.period.to_seconds())})"
        )
        return cloudwatch.MathExpression(expression=search, label="", period=self.period)

    def _target_groups_of(self, load_balancer: elbv2.ApplicationLoadBalancer, metric: str, statistic: str) -> Any:
        """``metric`` of every target group of ``load_balancer``, whichever stack made the target group."""
        return self._search(
            "AWS/ApplicationELB", "LoadBalancer,TargetGroup", metric, statistic, load_balancer.load_balancer_full_name
        )

    def _load_balancers(self) -> list[elbv2.ApplicationLoadBalancer]:
        """The cluster's load balancers made in this stack (the dashboard never refers to another stack)."""
        here = Stack.of(self)
        return [b for b in self.neuron_cluster.load_balancers if Stack.of(b) is here]


def _check_pinned(path: str, image: NeuronImage) -> NeuronImage | None:
    """Refuse a privileged daemon image without a digest (NEURON068); the library's own unpinned one, which no source
    gives a digest for yet, is returned for the NEURON116 warning."""
    if image.digest is not None:
        return None
    if any(image == known for known in PRIVILEGED_IMAGES.values()):
        return image
    constant = next((name for name, known in IMAGES.items() if known.uri == image.uri), "your_image")
    raise rules.UNPINNED_PRIVILEGED_IMAGE.error(
        path,
        f"monitor_image {image.uri} has no digest, and neuron-monitor runs privileged",
        argument="monitor_image",
        constant=constant,
        uri=image.uri,
    )


@implements(IStableStringProducer)
class _ProduceString:
    """A string computed at synthesis, once every capacity is known."""

    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()


@implements(IStableListProducer)
class _ProduceList:
    """A list computed at synthesis, once every capacity is known."""

    def __init__(self, produce: Callable[[], list[str]]) -> None:
        self._produce = produce

    def produce(self) -> list[str]:
        return self._produce()
