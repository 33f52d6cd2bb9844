"""The daemons of a :class:`~neuron_constructs.monitoring.monitoring.NeuronMonitoring` on Auto Scaling capacity: ECS
services with the DAEMON strategy, placed only on the Neuron instance types of the cluster's Auto Scaling capacity -
neuron-monitor with the metric publisher, and the recovery (node-problem-detector and the recovery container, after
aws-neuron-samples ``neuron-problem-detector/ecs-npd-cdk``), in the bridge network."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, IStableListProducer, IStableStringProducer, Lazy
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct
from jsii import implements

from neuron_constructs.base import compliance
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.monitoring.daemons import (
    NEURON_HARDWARE_ERRORS,
    PUBLISHER_VARIABLE,
    monitor_script,
    publisher_source,
    recovery_script,
)
from neuron_constructs.programs.metric_publisher import CLUSTER_ENVIRONMENT

if TYPE_CHECKING:
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring

__all__ = ["AutoScalingDaemons"]

_DAEMON_DEPLOYMENT: dict[str, Any] = {
    "min_healthy_percent": 0,
    "max_healthy_percent": 100,
    "circuit_breaker": ecs.DeploymentCircuitBreaker(rollback=True),
}
"""A daemon runs one task per instance: a deployment stops the old task before it starts the new one, and rolls
back if the new one does not start."""


class AutoScalingDaemons:
    """The DAEMON services of ``monitoring`` on its Auto Scaling capacity: made with the first Neuron capacity it
    covers, placed on the Neuron instance types of every one (``monitoring.daemon_service`` and
    ``monitoring.recovery_service``)."""

    def __init__(self, monitoring: NeuronMonitoring) -> None:
        self._monitoring = monitoring
        self.capacities: list[AutoScalingCapacity] = []
        """The Neuron Auto Scaling capacity covered, in order."""

    def cover(self, capacity: AutoScalingCapacity) -> None:
        """Run the daemons on ``capacity`` too (a Neuron Auto Scaling capacity of the cluster)."""
        self.capacities.append(capacity)
        if self._monitoring.daemon_service is None:
            self._daemon_services()

    def _neuron_types(self) -> str:
        types = sorted({str(c.neuron_instance_type.name) for c in self.capacities if c.neuron_instance_type})
        return f"attribute:ecs.instance-type in [{', '.join(types)}]"

    def _daemon_services(self) -> None:
        cluster = self._monitoring.neuron_cluster.cluster
        only_neuron = ecs.PlacementConstraint.member_of(Lazy.string(_ProduceString(self._neuron_types)))
        monitor = ecs.Ec2TaskDefinition(
            self._monitoring,
            "MonitorTask",
            network_mode=ecs.NetworkMode.BRIDGE,
            task_role=task_role(self._monitoring, "MonitorRole"),
        )
        monitor.add_container(
            "neuron-monitor",
            image=ecs.ContainerImage.from_registry(self._monitoring.monitor_image),
            entry_point=["/bin/sh", "-c"],
            command=[monitor_script(self._monitoring.period)],
            environment={CLUSTER_ENVIRONMENT: self._monitoring.cluster_name, PUBLISHER_VARIABLE: publisher_source()},
            privileged=True,
            memory_reservation_mib=256,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="neuron-monitor", log_group=self._monitoring.log_group),
        )
        compliance.acknowledge_monitoring_task(monitor)
        self._monitoring.daemon_service = self._daemon("MonitorService", cluster, monitor, only_neuron)
        if not self._monitoring.recovery_service:
            self._recovery_service(only_neuron)

    def _recovery_service(self, only_neuron: ecs.PlacementConstraint) -> None:
        cluster = self._monitoring.neuron_cluster.cluster
        role = task_role(self._monitoring, "RecoveryRole")
        if self._monitoring.recovery:
            groups = Lazy.list(
                _ProduceList(lambda: [c.auto_scaling_group.auto_scaling_group_arn for c in self.capacities])
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="MarkNeuronInstancesUnhealthy", actions=["autoscaling:SetInstanceHealth"], resources=groups
                )
            )
        # The bridge network, unlike AWS's sample (awsvpc with the instance metadata open to containers): the
        # instances' hop limit of 1 keeps the metadata service, and the instance role, from bridge-mode containers;
        # the recovery container reads its instance id from the instance's DMI identity instead.
        detector = ecs.Ec2TaskDefinition(
            self._monitoring, "RecoveryTask", network_mode=ecs.NetworkMode.BRIDGE, task_role=role
        )
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
        kernel_log = _kernel_log_reader(self._monitoring, "KernelLog")
        detector.add_container(
            "npd",
            image=ecs.ContainerImage.from_registry(self._monitoring.problem_detector_image),
            entry_point=["/bin/sh", "-c"],
            command=[
                "mkdir -p /config && echo '" + json.dumps(kernel_monitor, separators=(",", ":")) + "' > "
                "/config/kernel-monitor.json && /node-problem-detector --v=2 --logtostderr "
                "--enable-k8s-exporter=false --config.system-log-monitor=/config/kernel-monitor.json"
            ],
            linux_parameters=kernel_log,
            memory_reservation_mib=128,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="npd", log_group=self._monitoring.log_group),
        )
        recovery_log = _kernel_log_reader(self._monitoring, "RecoveryKernelLog")
        detector.add_container(
            "recovery",
            image=ecs.ContainerImage.from_registry(self._monitoring.recovery_image),
            entry_point=["/bin/sh", "-c"],
            command=[recovery_script()],
            environment={"ENABLE_RECOVERY": "true" if self._monitoring.recovery else "false", "AWS_REGION": Aws.REGION},
            linux_parameters=recovery_log,
            readonly_root_filesystem=True,
            memory_reservation_mib=128,
            logging=ecs.LogDrivers.aws_logs(stream_prefix="recovery", log_group=self._monitoring.log_group),
        )
        compliance.acknowledge_recovery_task(detector, role)
        self._monitoring.recovery_service = self._daemon("RecoveryService", cluster, detector, only_neuron)

    def _daemon(
        self, id: str, cluster: ecs.ICluster, task_definition: ecs.TaskDefinition, only_neuron: ecs.PlacementConstraint
    ) -> ecs.Ec2Service:
        """A DAEMON service of ``task_definition`` on the cluster's Neuron instances only."""
        return ecs.Ec2Service(
            self._monitoring,
            id,
            cluster=cluster,
            task_definition=task_definition,
            daemon=True,
            placement_constraints=[only_neuron],
            enable_ecs_managed_tags=True,
            **_DAEMON_DEPLOYMENT,
        )

    def acknowledge_recovery_groups(self) -> None:
        """The recovery role's acknowledgement of the Auto Scaling groups it may mark (once the tree is complete)."""
        role = self._monitoring.node.try_find_child("RecoveryRole")
        if role is not None:
            arns = [c.auto_scaling_group.auto_scaling_group_arn for c in self.capacities]
            compliance.acknowledge_recovery_groups(role, arns)

    # --- Managed Instances capacity ------------------------------------------------------------------


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


def _kernel_log_reader(scope: Construct, id: str) -> ecs.LinuxParameters:
    """Not privileged: the kernel log as a read-only device and CAP_SYSLOG, which the kernel asks of a reader of
    /dev/kmsg when kernel.dmesg_restrict is 1 - what the Managed Instances health daemon reads it with too."""
    reader = ecs.LinuxParameters(scope, id)
    reader.add_devices(
        ecs.Device(host_path="/dev/kmsg", container_path="/dev/kmsg", permissions=[ecs.DevicePermission.READ])
    )
    reader.add_capabilities(ecs.Capability.SYSLOG)
    return reader
