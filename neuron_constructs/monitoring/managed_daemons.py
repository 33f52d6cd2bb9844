"""The daemons of a :class:`~neuron_constructs.monitoring.monitoring.NeuronMonitoring` on Managed Instances
capacity: ECS Managed Daemons (which exist for Managed Instances only) on each capacity provider - neuron-monitor with
the metric publisher, and with recovery a *critical* health daemon that stops at an unrecoverable Neuron error in the
kernel log, so that ECS drains and replaces the instance. A daemon rollout drains a share of the instances at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Aws, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam

from neuron_constructs.base import compliance
from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
from neuron_constructs.monitoring.daemons import PUBLISHER_VARIABLE, health_script, monitor_script, publisher_source
from neuron_constructs.programs.metric_publisher import CLUSTER_ENVIRONMENT

if TYPE_CHECKING:
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring

__all__ = ["ManagedDaemons"]


class ManagedDaemons:
    """The managed daemons of ``monitoring`` on its Managed Instances capacity, rolled out ``drain_percent`` of the
    instances at a time, ten minutes apart."""

    def __init__(self, monitoring: NeuronMonitoring, drain_percent: float) -> None:
        self._monitoring = monitoring
        self._rollout = ecs.CfnDaemon.DaemonDeploymentConfigurationProperty(
            drain_percent=float(drain_percent), bake_time_in_minutes=10
        )
        self._task_definitions: dict[str, ecs.CfnDaemonTaskDefinition] = {}

    def cover(self, capacity: ManagedInstancesCapacity) -> None:
        """The monitor daemon on ``capacity`` (``monitoring.managed_daemons[capacity]``) and, with recovery, the
        health daemon."""
        stack = Stack.of(self._monitoring)
        provider = stack.format_arn(
            service="ecs", resource="capacity-provider", resource_name=capacity.capacity_provider.capacity_provider_name
        )
        self._monitoring.managed_daemons[capacity] = self._daemon(
            f"{capacity.node.id}MonitorDaemon", provider, critical=False
        )
        if self._monitoring.recovery:
            self._daemon(f"{capacity.node.id}HealthDaemon", provider, critical=True)

    def _daemon(self, id: str, provider: str, *, critical: bool) -> ecs.CfnDaemon:
        """The managed daemon of the health (critical) or monitor task definition on one capacity provider."""
        definition = self._daemon_task_definition(
            "HealthDaemonTask" if critical else "MonitorDaemonTask", critical=critical
        )
        daemon = ecs.CfnDaemon(
            self._monitoring,
            id,
            cluster_arn=self._monitoring.neuron_cluster.cluster.cluster_arn,
            capacity_provider_arns=[provider],
            daemon_task_definition_arn=definition.attr_daemon_task_definition_arn,
            critical=critical,
            enable_ecs_managed_tags=True,
            deployment_configuration=self._rollout,
        )
        compliance.acknowledge_daemon_critical(daemon)
        return daemon

    def after_association(self) -> None:
        """Managed daemons name capacity providers the cluster must already hold: they wait for the association
        (aws-cdk-lib creates it at synthesis)."""
        associations = self._monitoring.neuron_cluster.capacity_associations
        for child in self._monitoring.node.find_all():
            if isinstance(child, ecs.CfnDaemon):
                for association in associations:
                    child.node.add_dependency(association)

    def _daemon_task_definition(self, id: str, *, critical: bool) -> ecs.CfnDaemonTaskDefinition:
        existing = self._task_definitions.get(id)
        if existing is not None:
            return existing
        execution = self._daemon_execution_role()
        log_options = {
            "awslogs-group": self._monitoring.log_group.log_group_name,
            "awslogs-region": Aws.REGION,
            "awslogs-stream-prefix": "neuron-health" if critical else "neuron-monitor",
        }
        logging = ecs.CfnDaemonTaskDefinition.LogConfigurationProperty(log_driver="awslogs", options=log_options)
        if critical:
            container = ecs.CfnDaemonTaskDefinition.DaemonContainerDefinitionProperty(
                name="neuron-health",
                image=self._monitoring.recovery_image,
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
                image=self._monitoring.monitor_image,
                entry_point=["/bin/sh", "-c"],
                command=[monitor_script(self._monitoring.period)],
                environment=[
                    ecs.CfnDaemonTaskDefinition.KeyValuePairProperty(
                        name=CLUSTER_ENVIRONMENT, value=self._monitoring.cluster_name
                    ),
                    ecs.CfnDaemonTaskDefinition.KeyValuePairProperty(name=PUBLISHER_VARIABLE, value=publisher_source()),
                ],
                essential=True,
                privileged=True,
                memory_reservation=256,
                log_configuration=logging,
            )
        definition = ecs.CfnDaemonTaskDefinition(
            self._monitoring, id, container_definitions=[container], execution_role_arn=execution.role_arn
        )
        if not critical:
            compliance.acknowledge_monitoring_task(definition)
        self._task_definitions[id] = definition
        return definition

    def _daemon_execution_role(self) -> iam.Role:
        existing = self._monitoring.node.try_find_child("DaemonExecutionRole")
        if isinstance(existing, iam.Role):
            return existing
        role = iam.Role(
            self._monitoring,
            "DaemonExecutionRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="Writes the Neuron daemons' logs",
        )
        self._monitoring.log_group.grant_write(role)
        return role
