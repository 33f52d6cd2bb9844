"""What a deployed stack's ECS resources are, read back: clusters, capacity (Auto Scaling groups with their launch
templates, capacity providers), task definitions with their Neuron settings, services with their deployment
settings and native rollout, managed daemons.
"""

from __future__ import annotations

from typing import Any

from neuron_constructs.knowledge.devices import NEURON_DEVICE_PREFIX, device_index, format_device_paths
from neuron_constructs.tools.deployment_report.model import ReportItem, ServiceState
from neuron_constructs.tools.deployment_report.reader import StackReaderBase, ref
from neuron_constructs.tools.update_settings import dropped_deployment_settings, short_text, update_policy_gaps

__all__ = ["EcsReader"]


def _name_of(cluster: str) -> str:
    """A cluster's name from its name or ARN."""
    return cluster.rsplit("/", 1)[-1]


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


class EcsReader(StackReaderBase):
    """Reads a stack's ECS clusters, capacity, task definitions, services and managed daemons."""

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
                f"Auto Scaling group {ref(group.get('AutoScalingGroupArn')) or '?'}",
                f"managed scaling {scaling}",
                f"termination protection {group.get('ManagedTerminationProtection', 'DISABLED')}",
            )
        if physical_id is None:
            self.gap(logical_id, "not created (" + "; ".join(details) + ")")
            return
        providers = self.described(
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
        found = self.described(
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
                ref(item.get("CapacityProvider")) or self.value_of(item.get("CapacityProvider")) or "?"
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
        pages = self.described(
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
                kept.append(f"{live_key} {short_text(live[live_key])}")
        advanced = [b for b in properties.get("LoadBalancers", []) if b.get("AdvancedConfiguration")]
        if advanced and not any(b.get("advancedConfiguration") for b in service.get("loadBalancers", [])):
            self.gap(
                logical_id,
                "loadBalancers.advancedConfiguration (alternate target group, production and test listener rules, "
                "role) not kept",
                attribute="advancedConfiguration",
            )
        return kept

    def daemon(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        daemons = self.described(lambda: [self.clients("ecs").describe_daemon(daemonArn=str(physical_id))["daemon"]])
        if not daemons:
            self.gap(logical_id, "not created (DescribeDaemon does not report it)")
            return
        self.items.append(ReportItem("managed daemon", str(physical_id), (str(daemons[0].get("status")),)))
