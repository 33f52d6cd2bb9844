"""What a deployed stack created, read back through the AWS APIs (boto3), next to what its template asked.

For every ECS cluster, capacity (Auto Scaling group with its launch template, capacity
provider), task definition (with its Neuron settings), service, load balancer, AWS Batch compute
environment, job queue and job definition, FSx file system, placement group and data repository
association in a CloudFormation stack, one line from the live API. Anything the template declares
that the endpoint did not create, or a property it did not keep, is listed as a gap, so a partial
emulator (moto) is never mistaken for AWS: a service's deployment settings (percentages, circuit breaker,
deployment alarms) it did not keep, and an Auto Scaling group's ``UpdatePolicy`` (the instance refresh of an AMI
rollout), which no API reads back, among them. Works against AWS itself too:
``python -m neuron_constructs.tools.deployment_report STACK...`` after ``cdk deploy``.

:func:`format_reports` leads with the result: one line per stack (created or failed, resources created of
declared, services, tasks running of desired and placed, what to look at next) and one line summarising what the
endpoint did not create or keep; ``verbose=True`` (``--verbose``) adds every resource's settings and every gap.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.knowledge.devices import NEURON_DEVICE_PREFIX, device_index, format_device_paths
from neuron_constructs.tools.update_settings import dropped_deployment_settings, update_policy_gaps

__all__ = [
    "Gap",
    "ReportItem",
    "ServiceState",
    "StackReport",
    "describe_stack",
    "describe_stacks",
    "endpoint_label",
    "format_reports",
    "gap_summary",
    "main",
    "result_line",
]

ClientFactory = Callable[[str], Any]
"""``service name -> boto3 client``, e.g. ``boto3.client``."""


@dataclass(frozen=True)
class Gap:
    """Something the template asks for that the endpoint did not create or did not keep.

    ``attribute`` is ``"resource"`` when the whole resource is missing, else the property.
    """

    resource_type: str
    logical_id: str
    attribute: str
    detail: str


@dataclass(frozen=True)
class ReportItem:
    """One created resource: its kind (cluster, capacity, task definition, service), name and settings."""

    kind: str
    name: str
    details: tuple[str, ...]


@dataclass(frozen=True)
class ServiceState:
    """One ECS service as DescribeServices and ListTasks see it: tasks desired, running, and placed (any task ECS
    started for it, running or not yet)."""

    name: str
    cluster: str
    desired: int
    running: int
    placed: int


@dataclass(frozen=True)
class StackReport:
    name: str
    status: str
    resources_declared: int
    resources_created: int
    items: list[ReportItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    services: list[ServiceState] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    """The ECS clusters the stack's services run in (its own or imported ones), by name."""

    @property
    def created(self) -> bool:
        """Whether CloudFormation finished creating or updating the stack."""
        return self.status in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE")


def _template(cloudformation: Any, stack_name: str) -> dict[str, Any]:
    body = cloudformation.get_template(StackName=stack_name, TemplateStage="Processed")["TemplateBody"]
    return json.loads(body) if isinstance(body, str) else dict(body)


def _created_resources(cloudformation: Any, stack_name: str) -> dict[str, dict[str, Any]]:
    created: dict[str, dict[str, Any]] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId") and summary.get("PhysicalResourceId"):
                created[summary["LogicalResourceId"]] = summary
    return created


def _short(value: Any) -> str:
    """``value`` as one short line of text."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _ref(value: Any) -> str | None:
    return value.get("Ref") if isinstance(value, dict) else None


class _StackReader:
    """Reads one stack: the template says what to look for, the live APIs say what is there."""

    def __init__(self, clients: ClientFactory, stack_name: str, *, functions_run: bool = True) -> None:
        self.clients = clients
        self.functions_run = functions_run
        cloudformation = clients("cloudformation")
        self.stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
        self.template = _template(cloudformation, stack_name)
        self.declared: dict[str, dict[str, Any]] = self.template.get("Resources", {})
        self.created = _created_resources(cloudformation, stack_name)
        self.parameters = {
            p["ParameterKey"]: p.get("ResolvedValue") or p.get("ParameterValue", "")
            for p in self.stack.get("Parameters", [])
        }
        self.items: list[ReportItem] = []
        self.gaps: list[Gap] = []
        self.services: list[ServiceState] = []
        self.clusters: list[str] = []
        self._exports: dict[str, str] | None = None

    def physical_id(self, logical_id: str) -> str | None:
        summary = self.created.get(logical_id)
        return summary["PhysicalResourceId"] if summary else None

    def value_of(self, value: Any) -> str | None:
        """What a literal name, a ``Ref`` to this stack's resource or parameter, or an ``Fn::ImportValue`` of another
        stack's export, names (an imported cluster is often given by its literal name)."""
        if isinstance(value, str):
            return value or None
        if isinstance(value, dict) and isinstance(value.get("Fn::ImportValue"), str):
            if self._exports is None:
                paginator = self.clients("cloudformation").get_paginator("list_exports")
                self._exports = {e["Name"]: e["Value"] for page in paginator.paginate() for e in page["Exports"]}
            return self._exports.get(value["Fn::ImportValue"])
        logical_id = _ref(value)
        if logical_id and logical_id not in self.declared and logical_id in self.parameters:
            return self.parameters[logical_id] or None
        return self.physical_id(logical_id) if logical_id else None

    def gap(self, logical_id: str, detail: str = "not created", *, attribute: str = "resource") -> None:
        self.gaps.append(Gap(self.declared[logical_id]["Type"], logical_id, attribute, detail))

    def compare(self, logical_id: str, what: str, asked: Any, live: Any) -> None:
        if isinstance(asked, dict):
            return  # an intrinsic function (Ref, Fn::Join...): resolved by CloudFormation, not comparable here
        if asked not in (None, [], "") and asked != live:
            self.gap(logical_id, f"{what}: template asks {asked!r}, the endpoint reports {live!r}", attribute=what)

    def compare_placement(
        self, logical_id: str, what: str, asked: list[dict[str, str]], live: dict[str, Any], detail: str
    ) -> list[str]:
        """Compare the template's ``Type``/``Expression`` (or ``Field``) entries with the API's ``what`` list.

        Returns the live entries as ``"<type> <detail>"`` text.
        """

        def text(entries: list[dict[str, str]], type_key: str, detail_key: str) -> list[str]:
            return [f"{e[type_key]} {e.get(detail_key, '')}".strip() for e in entries]

        live_text = text(live.get(what, []), "type", detail)
        self.compare(logical_id, what, text(asked, "Type", detail.capitalize()), live_text)
        return live_text

    def read(self) -> StackReport:
        readers = {
            "AWS::ECS::Cluster": self.cluster,
            "AWS::AutoScaling::AutoScalingGroup": self.auto_scaling_group,
            "AWS::ECS::CapacityProvider": self.capacity_provider,
            "AWS::ECS::TaskDefinition": self.task_definition,
            "AWS::ECS::Service": self.service,
            "AWS::ElasticLoadBalancingV2::LoadBalancer": self.load_balancer,
            "AWS::ElasticLoadBalancingV2::Listener": self.listener,
            "AWS::ElasticLoadBalancingV2::ListenerRule": self.listener_rule,
            "AWS::ElasticLoadBalancingV2::TargetGroup": self.target_group,
            "AWS::Batch::ComputeEnvironment": self.compute_environment,
            "AWS::Batch::JobQueue": self.job_queue,
            "AWS::Batch::JobDefinition": self.job_definition,
            "AWS::FSx::FileSystem": self.file_system,
            "AWS::EC2::PlacementGroup": self.placement_group,
            "AWS::FSx::DataRepositoryAssociation": self.data_repository_association,
            "AWS::CloudWatch::Alarm": self.alarm,
            "AWS::CloudWatch::Dashboard": self.dashboard,
            "AWS::ECS::Daemon": self.daemon,
        }
        for logical_id, resource in self.declared.items():
            physical_id = self.physical_id(logical_id)
            reader = readers.get(resource["Type"])
            if reader is not None:
                reader(logical_id, resource.get("Properties", {}), physical_id)
            elif physical_id is None:
                self.gap(logical_id)
            elif str(resource["Type"]).startswith("Custom::") and not self.functions_run:
                self.gap(logical_id, "marked created without running its Lambda function (the endpoint runs none)")
        self.items.append(
            ReportItem(
                "iam",
                "created",
                (self.count("AWS::IAM::Role", "role"), self.count("AWS::IAM::InstanceProfile", "instance profile")),
            )
        )
        self.outputs()
        return StackReport(
            name=self.stack["StackName"],
            status=self.stack["StackStatus"],
            resources_declared=len(self.declared),
            resources_created=sum(1 for k in self.declared if k in self.created),
            items=self.items,
            gaps=self.gaps,
            services=self.services,
            clusters=list(dict.fromkeys(self.clusters)),
        )

    def count(self, resource_type: str, noun: str) -> str:
        n = sum(1 for k, r in self.declared.items() if r["Type"] == resource_type and k in self.created)
        return f"{n} {noun}{'' if n == 1 else 's'}"

    def outputs(self) -> None:
        live = {o["OutputKey"]: o.get("OutputValue", "") for o in self.stack.get("Outputs", [])}
        for key in self.template.get("Outputs", {}):
            if key in live:
                self.items.append(ReportItem("output", key, (live[key],)))
            else:
                self.gaps.append(Gap("Output", key, "resource", "not reported by DescribeStacks"))

    def cluster(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        cluster = self.clients("ecs").describe_clusters(clusters=[physical_id], include=["SETTINGS"])["clusters"][0]
        settings = {s["name"]: s["value"] for s in cluster.get("settings", [])}
        asked = {s["Name"]: s["Value"] for s in properties.get("ClusterSettings", [])}
        self.compare(logical_id, "containerInsights", asked.get("containerInsights"), settings.get("containerInsights"))
        insights = settings.get("containerInsights", "not reported")
        self.clusters.append(str(cluster["clusterName"]))
        self.items.append(
            ReportItem("cluster", cluster["clusterName"], (cluster["status"], f"containerInsights {insights}"))
        )

    def auto_scaling_group(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        group = self.clients("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[physical_id])
        group = group["AutoScalingGroups"][0]
        details = [f"{group['MinSize']}..{group['MaxSize']} instances (desired {group['DesiredCapacity']})"]
        template_ref = group.get("LaunchTemplate")
        if template_ref:
            version = self.clients("ec2").describe_launch_template_versions(
                LaunchTemplateId=template_ref["LaunchTemplateId"], Versions=[str(template_ref["Version"])]
            )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
            details += self._launch_template_details(version)
        else:
            details.append("no launch template")
        self.items.append(ReportItem("capacity", f"Auto Scaling group {group['AutoScalingGroupName']}", tuple(details)))
        self._update_policy(logical_id)

    def _update_policy(self, logical_id: str) -> None:
        """The group's ``UpdatePolicy`` that replaces instances (an instance refresh, a rolling or a replacing update
        when a deploy changes its launch template), a gap: CloudFormation acts on it only in a stack update, and no
        API reads it back. ``AutoScalingScheduledAction`` (aws-cdk-lib's default, which keeps the group's sizes)
        replaces nothing and is not listed."""
        for detail in update_policy_gaps(self.declared[logical_id].get("UpdatePolicy")):
            self.gap(logical_id, detail, attribute="UpdatePolicy")

    def _launch_template_details(self, data: dict[str, Any]) -> list[str]:
        image = data.get("ImageId", "?")
        source = self._ami_source(image)
        mappings: list[dict[str, Any]] = data.get("BlockDeviceMappings", [])
        root: dict[str, Any] = mappings[0].get("Ebs", {}) if mappings else {}
        metadata = data.get("MetadataOptions", {})
        tokens = metadata.get("HttpTokens", "optional")
        hops = metadata.get("HttpPutResponseHopLimit", "the AMI's default")
        return [
            data.get("InstanceType", "?"),
            f"AMI {image}" + (f" from SSM {source}" if source else ""),
            ("IMDSv2 required" if tokens == "required" else f"IMDS HttpTokens {tokens}") + f", hop limit {hops}",
            f"root {root.get('VolumeSize', '?')} GiB {root.get('VolumeType', '?')}"
            + (" encrypted" if root.get("Encrypted") else " NOT encrypted"),
        ]

    def _ami_source(self, image_id: str) -> str | None:
        """The SSM parameter path whose resolved value is ``image_id``, if a stack parameter says so."""
        for key, parameter in self.template.get("Parameters", {}).items():
            if "AWS::SSM::Parameter::Value" in parameter.get("Type", "") and self.parameters.get(key) == image_id:
                return str(parameter.get("Default"))
        return None

    def capacity_provider(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if "ManagedInstancesProvider" in properties:
            requirements = properties["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["InstanceRequirements"]
            details = (
                "ECS Managed Instances",
                "accelerators " + ", ".join(requirements.get("AcceleratorNames", [])),
                "instance types " + ", ".join(requirements.get("AllowedInstanceTypes", ["any"])),
            )
        else:
            group = properties.get("AutoScalingGroupProvider", {})
            scaling = group.get("ManagedScaling", {}).get("Status", "DISABLED")
            details = (
                f"Auto Scaling group {_ref(group.get('AutoScalingGroupArn')) or '?'}",
                f"managed scaling {scaling}",
                f"termination protection {group.get('ManagedTerminationProtection', 'DISABLED')}",
            )
        if physical_id is None:
            self.gap(logical_id, "not created (" + "; ".join(details) + ")")
            return
        providers = self._described(
            lambda: self.clients("ecs").describe_capacity_providers(capacityProviders=[physical_id])[
                "capacityProviders"
            ]
        )
        if not providers:
            self.gap(
                logical_id, "not created (DescribeCapacityProviders does not report it; " + "; ".join(details) + ")"
            )
            return
        self.items.append(ReportItem("capacity", f"capacity provider {physical_id}", details))

    def task_definition(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        task = self.clients("ecs").describe_task_definition(taskDefinition=physical_id)["taskDefinition"]
        compatibilities = task.get("requiresCompatibilities") or task.get("compatibilities", [])
        self.compare(logical_id, "requiresCompatibilities", properties.get("RequiresCompatibilities"), compatibilities)
        self.compare(logical_id, "networkMode", properties.get("NetworkMode"), task.get("networkMode"))
        self.compare(logical_id, "cpu", properties.get("Cpu"), task.get("cpu"))
        self.compare(logical_id, "memory", properties.get("Memory"), task.get("memory"))
        constraints = self.compare_placement(
            logical_id, "placementConstraints", properties.get("PlacementConstraints", []), task, "expression"
        )
        details = [
            "/".join(compatibilities) or "no compatibilities",
            f"network {task.get('networkMode', '?')}",
            f"cpu {task.get('cpu') or 'not reported'}, memory {task.get('memory') or 'not reported'} MiB",
        ]
        details += [_container_neuron_settings(c) for c in task["containerDefinitions"]]
        details += [f"placement {c}" for c in constraints]
        name = f"{task['family']}:{task['revision']}"
        self.items.append(ReportItem("task definition", name, tuple(details)))

    def service(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        cluster = self.value_of(properties.get("Cluster"))
        if physical_id is None or cluster is None:
            self.gap(logical_id)
            return
        found = self._described(
            lambda: self.clients("ecs").describe_services(cluster=cluster, services=[physical_id])["services"]
        )
        if not found:
            self.gap(logical_id, f"not created (DescribeServices does not find it in cluster {_name_of(cluster)})")
            return
        service = found[0]
        self.clusters.append(_name_of(cluster))
        self.services.append(
            ServiceState(
                name=str(service["serviceName"]),
                cluster=_name_of(cluster),
                desired=int(service.get("desiredCount") or 0),
                running=int(service.get("runningCount") or 0),
                placed=self._placed_tasks(cluster, str(service["serviceName"])),
            )
        )
        strategy = [
            f"{item['capacityProvider']} (weight {item.get('weight', 0)})"
            for item in service.get("capacityProviderStrategy", [])
        ]
        asked = properties.get("CapacityProviderStrategy", [])
        if asked and not strategy:
            providers = ", ".join(
                _ref(item.get("CapacityProvider")) or self.value_of(item.get("CapacityProvider")) or "?"
                for item in asked
            )
            self.gap(
                logical_id, f"capacityProviderStrategy ({providers}) not kept", attribute="capacityProviderStrategy"
            )
        constraints = self.compare_placement(
            logical_id, "placementConstraints", properties.get("PlacementConstraints", []), service, "expression"
        )
        placement_strategy = self.compare_placement(
            logical_id, "placementStrategy", properties.get("PlacementStrategies", []), service, "field"
        )
        placement = (
            "capacity provider " + ", ".join(strategy) if strategy else f"launch type {service.get('launchType')}"
        )
        task = service["taskDefinition"].rsplit("/", 1)[-1]
        rollout = self.compare_rollout(logical_id, properties, service)
        details = (f"desired {service['desiredCount']}", task, placement, *constraints, *placement_strategy, *rollout)
        self.items.append(ReportItem("service", service["serviceName"], details))

    def _placed_tasks(self, cluster: str, service_name: str) -> int:
        """The tasks ECS placed for the service (running or on their way), as ListTasks counts them."""
        ecs = self.clients("ecs")
        pages = self._described(
            lambda: list(ecs.get_paginator("list_tasks").paginate(cluster=cluster, serviceName=service_name))
        )
        return sum(len(page.get("taskArns", [])) for page in pages)

    def compare_rollout(self, logical_id: str, properties: dict[str, Any], service: dict[str, Any]) -> list[str]:
        """The deployment settings the template asks for (percentages, circuit breaker, deployment alarms: one gap
        naming each one the endpoint did not keep, on every service, rolling ones and a fleet's copies included) and
        the native rollout (strategy, bake time, traffic shift, lifecycle hooks, the alternate target group) next to
        what the endpoint kept: each part it did not keep is a gap, so a rollout the endpoint cannot run is never
        mistaken for one it ran. Returns the kept parts of the native rollout as text."""
        asked = properties.get("DeploymentConfiguration") or {}
        live = service.get("deploymentConfiguration") or {}
        kept: list[str] = []
        dropped = dropped_deployment_settings(asked, live)
        if dropped:
            self.gap(
                logical_id,
                "deploymentConfiguration not kept: " + ", ".join(dropped),
                attribute="deploymentConfiguration",
            )
        strategy = asked.get("Strategy")
        if strategy in (None, "ROLLING") and not asked.get("LifecycleHooks"):
            return kept
        for key in ("Strategy", "BakeTimeInMinutes", "CanaryConfiguration", "LinearConfiguration", "LifecycleHooks"):
            if key not in asked:
                continue
            live_key = key[0].lower() + key[1:]
            if live.get(live_key) in (None, [], {}):
                self.gap(logical_id, f"deploymentConfiguration.{live_key} not kept", attribute=live_key)
            else:
                kept.append(f"{live_key} {_short(live[live_key])}")
        advanced = [b for b in properties.get("LoadBalancers", []) if b.get("AdvancedConfiguration")]
        if advanced and not any(b.get("advancedConfiguration") for b in service.get("loadBalancers", [])):
            self.gap(
                logical_id,
                "loadBalancers.advancedConfiguration (alternate target group, production and test listener rules, "
                "role) not kept",
                attribute="advancedConfiguration",
            )
        return kept

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
        groups = self._described(
            lambda: self.clients("ec2").describe_placement_groups(GroupNames=[physical_id])["PlacementGroups"]
        )
        if not groups:
            self.gap(logical_id, "not created (DescribePlacementGroups does not report it)")
            return
        self.items.append(ReportItem("placement group", str(physical_id), (str(groups[0].get("Strategy")),)))

    def data_repository_association(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        associations = self._described(
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

    def alarm(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        alarms = self._described(
            lambda: self.clients("cloudwatch").describe_alarms(AlarmNames=[str(physical_id)])["MetricAlarms"]
        )
        if not alarms:
            self.gap(logical_id)
            return
        alarm = alarms[0]
        self.compare(logical_id, "MetricName", properties.get("MetricName"), alarm.get("MetricName"))
        if properties.get("Metrics") and not alarm.get("Metrics"):
            self.gap(logical_id, "Metrics: the metric math is not kept", attribute="Metrics")
        actions = len(alarm.get("AlarmActions", []))
        watched = (
            f"{alarm.get('Namespace')} {alarm.get('MetricName')} {alarm.get('Statistic')}"
            if alarm.get("MetricName")
            else f"metric math of {len(alarm.get('Metrics', []))} queries"
        )
        details = (watched, f"{actions} action(s)")
        self.items.append(ReportItem("alarm", alarm["AlarmName"], details))

    def dashboard(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        dashboards = self._described(lambda: [self.clients("cloudwatch").get_dashboard(DashboardName=str(physical_id))])
        if not dashboards:
            self.gap(logical_id)
            return
        widgets = json.loads(dashboards[0].get("DashboardBody") or "{}").get("widgets", [])
        self.items.append(ReportItem("dashboard", str(physical_id), (f"{len(widgets)} widgets",)))

    def daemon(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        daemons = self._described(lambda: [self.clients("ecs").describe_daemon(daemonArn=str(physical_id))["daemon"]])
        if not daemons:
            self.gap(logical_id, "not created (DescribeDaemon does not report it)")
            return
        self.items.append(ReportItem("managed daemon", str(physical_id), (str(daemons[0].get("status")),)))

    @staticmethod
    def _described(call: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """What a Describe call returns; nothing when the endpoint does not know the resource or the call."""
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        try:
            return call()
        except (ClientError, BotoCoreError, ResponseParserError):  # moto answers calls it lacks with an HTML 500
            return []

    def load_balancer(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (balancer,) = self.clients("elbv2").describe_load_balancers(LoadBalancerArns=[physical_id])["LoadBalancers"]
        self.compare(logical_id, "Scheme", properties.get("Scheme"), balancer.get("Scheme"))
        details = (str(balancer.get("Scheme")), str(balancer.get("DNSName")))
        self.items.append(ReportItem("load balancer", balancer["LoadBalancerName"], details))

    def listener(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (listener,) = self.clients("elbv2").describe_listeners(ListenerArns=[physical_id])["Listeners"]
        self.compare(logical_id, "Port", properties.get("Port"), listener.get("Port"))
        actions = ", ".join(_action_text(a) for a in listener.get("DefaultActions", []))
        self.items.append(ReportItem("listener", f"{listener['Protocol']}:{listener['Port']}", (f"default {actions}",)))

    def listener_rule(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (rule,) = self.clients("elbv2").describe_rules(RuleArns=[physical_id])["Rules"]
        conditions = [
            f"{c['Field']} {','.join(c.get('Values') or c.get('PathPatternConfig', {}).get('Values', []))}"
            for c in rule.get("Conditions", [])
        ]
        actions = ", ".join(_action_text(a) for a in rule.get("Actions", []))
        self.items.append(ReportItem("listener rule", f"priority {rule['Priority']}", (*conditions, actions)))

    def target_group(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        if physical_id is None:
            self.gap(logical_id)
            return
        (group,) = self.clients("elbv2").describe_target_groups(TargetGroupArns=[physical_id])["TargetGroups"]
        for key in ("TargetType", "HealthCheckPath", "Port"):
            self.compare(logical_id, key, properties.get(key), group.get(key))
        details = (
            f"{group.get('TargetType')} targets, {group['Protocol']}:{group['Port']}",
            f"health check {group.get('HealthCheckPath', group.get('HealthCheckProtocol'))} every "
            f"{group.get('HealthCheckIntervalSeconds')} s",
        )
        self.items.append(ReportItem("target group", group["TargetGroupName"], details))


def _name_of(cluster: str) -> str:
    """A cluster's name from its name or ARN."""
    return cluster.rsplit("/", 1)[-1]


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


def _action_text(action: dict[str, Any]) -> str:
    """``forward to <target group name>`` or ``fixed-response 404``."""
    if action.get("TargetGroupArn"):
        return f"forward to {str(action['TargetGroupArn']).rsplit('/', 2)[-2]}"
    if action.get("FixedResponseConfig"):
        return f"fixed-response {action['FixedResponseConfig'].get('StatusCode')}"
    return str(action.get("Type"))


def _container_neuron_settings(container: dict[str, Any]) -> str:
    """``name: NeuronDevice=ALL`` (managed), ``name: /dev/neuron0 (read,write)`` (manual), or no devices."""
    name = container["name"]
    managed = [r["value"] for r in container.get("resourceRequirements", []) if r["type"] == "NeuronDevice"]
    linux = container.get("linuxParameters", {})
    devices = [d for d in linux.get("devices", []) if d.get("hostPath", "").startswith(NEURON_DEVICE_PREFIX)]
    capabilities = linux.get("capabilities", {}).get("add", [])
    if managed:
        return f"{name}: NeuronDevice={managed[0]}"
    if devices:
        permissions = sorted({p for d in devices for p in d.get("permissions", [])})
        indices = (device_index(d["hostPath"]) for d in devices)
        paths = format_device_paths(i for i in indices if i is not None)
        return f"{name}: {paths} ({'/'.join(permissions) or 'no permissions'})" + (
            f" + {','.join(capabilities)}" if capabilities else ""
        )
    return f"{name}: no Neuron devices"


def describe_stack(clients: ClientFactory, stack_name: str, *, functions_run: bool = True) -> StackReport:
    """Read one deployed stack through the AWS APIs that ``clients`` returns.

    ``functions_run=False`` (the local endpoint) lists every custom resource as not run: the
    endpoint marks them created without invoking their Lambda functions.
    """
    return _StackReader(clients, stack_name, functions_run=functions_run).read()


def describe_stacks(
    clients: ClientFactory, stack_names: Iterable[str], *, functions_run: bool = True
) -> list[StackReport]:
    return [describe_stack(clients, name, functions_run=functions_run) for name in stack_names]


_ROLLOUT_ATTRIBUTES = frozenset(
    {
        "strategy",
        "bakeTimeInMinutes",
        "canaryConfiguration",
        "linearConfiguration",
        "lifecycleHooks",
        "advancedConfiguration",
    }
)
"""The parts of a native rollout :meth:`_StackReader.compare_rollout` compares."""
_SUMMARY_GROUPS = 4
"""How many kinds of gap the one-line summary names before it counts the rest."""


def endpoint_label(url: str | None, region: str | None = None) -> str:
    """How a report names the endpoint it read: ``AWS (us-east-1)`` for an AWS endpoint, ``the endpoint at URL``
    for any other (a local emulator, a proxy), so a report never says AWS while talking to something else."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "") if url else ""
    if host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws")):
        return f"AWS ({region})" if region else "AWS"
    return f"the endpoint at {url}" if url else "AWS"


def _short_type(resource_type: str) -> str:
    return resource_type.removeprefix("AWS::")


def _gap_groups(gaps: Sequence[Gap]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(resources not created, properties not kept): each kind with its count, most frequent first."""
    missing: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for gap in gaps:
        if gap.attribute == "resource":
            key = _short_type(gap.resource_type)
            missing[key] = missing.get(key, 0) + 1
        else:
            what = "rollout" if gap.attribute in _ROLLOUT_ATTRIBUTES else gap.attribute
            key = f"{_short_type(gap.resource_type)} {what}"
            dropped[key] = dropped.get(key, 0) + 1

    def ordered(counts: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    return ordered(missing), ordered(dropped)


def _counted(groups: list[tuple[str, int]], budget: int) -> str:
    shown = [f"{name} x{n}" if n > 1 else name for name, n in groups[:budget]]
    rest = len(groups) - len(shown)
    return ", ".join(shown) + (f", {_plural(rest, 'more kind')}" if rest > 0 else "")


def gap_summary(report: StackReport, endpoint: str, *, verbose: bool = False) -> str:
    """One line: how many declared resources ``endpoint`` did not create and properties it did not keep, by kind
    (a native rollout's parts counted as ``rollout``)."""
    who = _who(endpoint)
    if not report.gaps:
        return f"nothing declared is missing or dropped on {who}, as far as this report reads"
    missing, dropped = _gap_groups(report.gaps)
    parts = []
    if missing:
        total = sum(n for _, n in missing)
        parts.append(f"{total} not created ({_counted(missing, _SUMMARY_GROUPS)})")
    if dropped:
        total = sum(n for _, n in dropped)
        parts.append(f"{total} properties not kept ({_counted(dropped, max(2, _SUMMARY_GROUPS - len(missing)))})")
    return f"not created or not kept by {who}: " + "; ".join(parts) + ("" if verbose else " (--verbose lists each)")


def _who(endpoint: str) -> str:
    """``AWS``, or ``the endpoint`` (the heading names it) for any other."""
    return "AWS" if endpoint.startswith("AWS") else "the endpoint"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _next_step(report: StackReport, endpoint: str) -> str:
    """What to look at next: the failure's events, the services that do not run, or the cluster."""
    if not report.created:
        return f"next: the stack's events (aws cloudformation describe-stack-events --stack-name {report.name})"
    short = [s for s in report.services if s.running < s.desired]
    cluster = report.clusters[0] if report.clusters else None
    if short and not endpoint.startswith("AWS"):
        return f"next: the endpoint runs no tasks; on AWS, neuron-ecs inspect --cluster {short[0].cluster}"
    if short:
        return f"next: neuron-ecs inspect --cluster {short[0].cluster} ({_plural(len(short), 'service')} short)"
    if cluster:
        return f"next: neuron-ecs inspect --cluster {cluster}"
    queues = [item.name for item in report.items if item.kind == "batch job queue"]
    if queues:
        return f"next: aws batch describe-job-queues --job-queues {queues[0]}"
    return "next: the stack's outputs (aws cloudformation describe-stacks)"


def result_line(report: StackReport, endpoint: str = "AWS") -> str:
    """The stack's result in one line: created or failed, resources created of declared, services with tasks
    running of desired and placed, and what to look at next."""
    outcome = "created" if report.created else "FAILED"
    parts = [
        f"{report.name}: {outcome} ({report.status})",
        f"{report.resources_created} of {report.resources_declared} resources",
    ]
    if report.services:
        desired = sum(s.desired for s in report.services)
        running = sum(s.running for s in report.services)
        placed = sum(s.placed for s in report.services)
        parts.append(
            f"{_plural(len(report.services), 'service')}, {running} of {_plural(desired, 'task')} running, "
            f"{placed} placed"
        )
    parts.append(_next_step(report, endpoint))
    return "; ".join(parts)


def format_reports(reports: Sequence[StackReport], *, endpoint: str = "AWS", verbose: bool = False) -> str:
    """The result first: a heading naming ``endpoint``, then per stack its :func:`result_line` and the
    :func:`gap_summary` line. ``verbose`` adds, per stack, every resource read and every gap."""
    lines = [f"What each stack created, read back from {endpoint}:"]
    for report in reports:
        if verbose:
            lines.append("")
        lines.append(result_line(report, endpoint))
        lines.append("  " + gap_summary(report, endpoint, verbose=verbose))
        if not verbose:
            continue
        for item in report.items:
            lines.append(f"  {item.kind:<16} {item.name}: " + "; ".join(item.details))
        if report.gaps:
            lines.append(f"  declared in the template, but not created or not kept by {endpoint}:")
            lines += [f"    {gap.resource_type} {gap.logical_id}: {gap.detail}" for gap in report.gaps]
    if not verbose and reports:
        lines.append("(--verbose: every resource's settings and every gap)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuron_constructs.tools.deployment_report",
        description="Print what deployed CloudFormation stacks created: ECS clusters, capacity, "
        "task definitions with their Neuron settings, services.",
    )
    parser.add_argument("stacks", nargs="+", help="stack names")
    parser.add_argument("--region", help="AWS region (default: from the environment)")
    parser.add_argument("--verbose", "-v", action="store_true", help="every resource's settings and every gap")
    args = parser.parse_args(argv)

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.Session(region_name=args.region)
    try:
        cloudformation = session.client("cloudformation")
        label = endpoint_label(cloudformation.meta.endpoint_url, cloudformation.meta.region_name)
        reports = describe_stacks(session.client, args.stacks)
        print(format_reports(reports, endpoint=label, verbose=args.verbose))
    except (BotoCoreError, ClientError) as error:
        print(f"could not read the stacks: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
