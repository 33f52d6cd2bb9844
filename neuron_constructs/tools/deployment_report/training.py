"""What a deployed training stack's resources are, read back: AWS Batch compute environments, job queues and job
definitions (with the devices each node range maps), FSx file systems and data repository associations, and EC2
placement groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neuron_constructs.knowledge.devices import NEURON_DEVICE_PREFIX
from neuron_constructs.tools.deployment_report.model import ReportItem
from neuron_constructs.tools.deployment_report.reader import StackReaderBase

__all__ = ["EFA_DEVICE_PREFIX", "TrainingReader"]

EFA_DEVICE_PREFIX = "/dev/infiniband/uverbs"
"""The host path of an EFA device (one per EFA interface) mapped into a container."""


def _device_counts(paths: Sequence[str]) -> str:
    """What the mapped devices are: ``16 Neuron + 8 EFA devices`` (a trn1.32xlarge node: 16 chips, 8 EFA
    interfaces), ``1 Neuron device``, ``no devices``."""
    neuron = sum(1 for p in paths if p.startswith(NEURON_DEVICE_PREFIX))
    efa = sum(1 for p in paths if p.startswith(EFA_DEVICE_PREFIX))
    kinds = [(neuron, "Neuron"), (efa, "EFA"), (len(paths) - neuron - efa, "other")]
    counted = [f"{n} {kind}" for n, kind in kinds if n]
    if not counted:
        return "no devices"
    return " + ".join(counted) + (" device" if len(paths) == 1 else " devices")


class TrainingReader(StackReaderBase):
    """Reads a stack's Batch compute environments, job queues and job definitions, FSx file systems and data
    repository associations, and placement groups."""

    def compute_environment(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (environment,) = self.clients("batch").describe_compute_environments(computeEnvironments=[physical_id])[
            "computeEnvironments"
        ]
        live = environment.get("computeResources", {})
        asked = properties.get("ComputeResources", {})
        for key in ("InstanceTypes", "MinvCpus", "MaxvCpus"):
            self.compare(logical_id, key, asked.get(key), live.get(key[0].lower() + key[1:]))
        details = (
            f"{'/'.join(live.get('instanceTypes', []))}, {live.get('minvCpus')}..{live.get('maxvCpus')} vCPUs",
            f"ECS cluster {str(environment.get('ecsClusterArn', 'not reported')).rsplit('/', 1)[-1]}",
        )
        self.items.append(ReportItem("batch compute environment", environment["computeEnvironmentName"], details))

    def job_queue(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (queue,) = self.clients("batch").describe_job_queues(jobQueues=[physical_id])["jobQueues"]
        order = [str(e["computeEnvironment"]).rsplit("/", 1)[-1] for e in queue.get("computeEnvironmentOrder", [])]
        details = (str(queue.get("state")), "compute environments " + ", ".join(order))
        self.items.append(ReportItem("batch job queue", queue["jobQueueName"], details))

    def job_definition(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (definition,) = self.clients("batch").describe_job_definitions(jobDefinitions=[physical_id])["jobDefinitions"]
        self.compare(logical_id, "Type", properties.get("Type"), definition.get("type"))
        nodes = definition.get("nodeProperties") or {}
        asked_nodes = properties.get("NodeProperties") or {}
        self.compare(logical_id, "NumNodes", asked_nodes.get("NumNodes"), nodes.get("numNodes"))
        ranges = nodes.get("nodeRangeProperties") or [
            {"targetNodes": "0", "container": definition.get("containerProperties", {})}
        ]
        details = [f"{definition.get('type')}, {nodes.get('numNodes', 1)} node(s)"]
        for node_range in ranges:
            container = node_range.get("container") or {}
            devices = [d.get("hostPath", "") for d in (container.get("linuxParameters") or {}).get("devices", [])]
            details.append(f"nodes {node_range.get('targetNodes')}: {_device_counts(devices)}")
        self.items.append(ReportItem("batch job definition", definition["jobDefinitionName"], tuple(details)))

    def file_system(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (system,) = self.clients("fsx").describe_file_systems(FileSystemIds=[physical_id])["FileSystems"]
        self.compare(logical_id, "StorageCapacity", properties.get("StorageCapacity"), system.get("StorageCapacity"))
        lustre = system.get("LustreConfiguration") or {}
        self.compare(
            logical_id,
            "DeploymentType",
            (properties.get("LustreConfiguration") or {}).get("DeploymentType"),
            lustre.get("DeploymentType"),
        )
        details = (
            f"{system['FileSystemType']} {lustre.get('DeploymentType', '?')}",
            f"{system['StorageCapacity']} GiB",
        )
        self.items.append(ReportItem("file system", system["FileSystemId"], details))

    def placement_group(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        groups = self.described(
            lambda: self.clients("ec2").describe_placement_groups(GroupNames=[physical_id])["PlacementGroups"]
        )
        if not groups:
            self.gap(logical_id, "not created (DescribePlacementGroups does not report it)")
            return
        self.items.append(ReportItem("placement group", str(physical_id), (str(groups[0].get("Strategy")),)))

    def data_repository_association(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        associations = self.described(
            lambda: self.clients("fsx").describe_data_repository_associations(AssociationIds=[physical_id])[
                "Associations"
            ]
        )
        if not associations:
            self.gap(logical_id, "not created (DescribeDataRepositoryAssociations does not report it)")
            return
        association = associations[0]
        details = (f"{association.get('FileSystemPath')} <-> {association.get('DataRepositoryPath')}",)
        self.items.append(ReportItem("data repository association", str(physical_id), details))
