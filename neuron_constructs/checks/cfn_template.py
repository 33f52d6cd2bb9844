"""What a CloudFormation template says about ECS Neuron workloads, read without the AWS CDK.

:mod:`~neuron_constructs.checks.template_loading` reads the file (JSON or YAML, with every key's line and column);
:class:`EcsTemplate` turns the ``Resources`` into the facts the Neuron rules need: task
definitions (containers, their ``/dev/neuronN`` mappings and ``NeuronDevice`` requests, the
instance type they are pinned to), capacity providers (the instance types they launch), Auto
Scaling groups, launch templates and services (where their tasks can run).

A value the template computes at deploy time (an intrinsic function other than a reference) is
*unknown* here; checks skip what they cannot know rather than guess.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from neuron_constructs.checks.template_loading import LoadedTemplate
from neuron_constructs.checks.template_values import (
    cpu_units,
    memory_mib,
    pinned_instance_types,
    ref_target,
    whole_number,
)
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import (
    VISIBLE_CORES_VARIABLE,
    TaskCores,
    held_cores,
    running_lnc,
    task_cores,
)

__all__ = [
    "ID_SEPARATOR",
    "INTENT_METADATA_KEY",
    "Capacity",
    "Container",
    "EcsTemplate",
    "LaunchTemplate",
    "Service",
    "TaskDefinition",
    "combine_templates",
]

INTENT_METADATA_KEY = "NeuronConstructs"
"""Resource ``Metadata`` key under which the library records what a Neuron task definition declares
(``allocation``, ``neuronContainers``, and for manual mapping ``instanceType`` and ``devices``)."""

NEURON_DEVICE_PATH = re.compile(r"^/dev/neuron(\d+)$")
_RESOLVE_SSM = re.compile(r"^(?:\{\{)?resolve:ssm:([^:}]+)(?::\d+)?(?:\}\})?$")
"""An ``ImageId`` EC2 resolves from SSM at launch (``resolve:ssm:/path``) or CloudFormation at deploy
(``{{resolve:ssm:/path}}``)."""


# --- the ECS model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Container:
    """One container definition, as far as the Neuron rules are concerned."""

    name: str
    index: int
    neuron_devices: tuple[int | None, ...]
    """Indices of the ``/dev/neuronN`` host paths it maps, in order; ``None`` for a malformed ``/dev/neuron*``."""
    neuron_device_paths: tuple[str, ...]
    neuron_device_positions: tuple[int, ...]
    """Where each of those paths sits in ``LinuxParameters.Devices``."""
    wants_all_neuron_devices: bool
    """``resourceRequirements`` holds ``NeuronDevice``."""
    other_accelerators: tuple[str, ...]
    """Other ``resourceRequirements`` types (``GPU``, ``InferenceAccelerator``)."""
    environment: Mapping[str, Any]
    port_mappings: tuple[tuple[int | None, int | None], ...]
    """``(containerPort, hostPort)``, ``None`` where absent or computed."""
    cpu: int | None
    memory: int | None
    memory_reservation: int | None
    managed_instances_rejected: tuple[str, ...]
    """Fields Managed Instances task definitions reject that this container sets."""
    image: str | None = None
    """The image the container names, when it is a literal (not a reference resolved at deploy time)."""

    @property
    def maps_neuron_devices(self) -> bool:
        return bool(self.neuron_device_paths)


@dataclass(frozen=True)
class TaskDefinition:
    logical_id: str
    compatibilities: frozenset[str]
    network_mode: str
    cpu: int | None
    memory: int | None
    containers: tuple[Container, ...]
    pinned_types: frozenset[str] | None
    """Instance types the task-level ``memberOf`` admits; ``None`` when it has no instance-type constraint."""
    pin_expressions: tuple[str, ...]
    ipc_mode: bool
    inference_accelerators: bool
    intent: Mapping[str, Any]
    """What the library declared for it (:data:`INTENT_METADATA_KEY`), empty for other task definitions."""

    @property
    def managed_allocation(self) -> bool:
        return any(c.wants_all_neuron_devices for c in self.containers)

    @property
    def manual_mapping(self) -> bool:
        return any(c.maps_neuron_devices for c in self.containers)

    @property
    def is_neuron(self) -> bool:
        return self.managed_allocation or self.manual_mapping or bool(self.intent)

    @property
    def devices(self) -> frozenset[int]:
        """Every device index its containers map."""
        return frozenset(i for c in self.containers for i in c.neuron_devices if i is not None)

    @functools.cached_property
    def lnc(self) -> int | None:
        """The logical-core setting its containers run with: ``NEURON_LOGICAL_NC_CONFIG`` where one states 1 or 2,
        else the declared one, else its type's default; ``None`` without a catalog type."""
        instance = self.instance_type
        if instance is None:
            return None
        return running_lnc((c.environment for c in self.containers), self.intent.get("lnc"), instance.default_lnc)

    def container_cores(self, container: Container) -> frozenset[int] | None:
        """The NeuronCores ``container`` holds (host numbering): those its ``NEURON_RT_VISIBLE_CORES`` names
        within its devices, else every core of its devices; ``None`` without a catalog type."""
        instance, lnc = self.instance_type, self.lnc
        if instance is None or lnc is None or lnc not in instance.lnc_options:
            return None
        visible = container.environment.get(VISIBLE_CORES_VARIABLE)
        devices = (i for i in container.neuron_devices if i is not None)
        return held_cores(devices, visible if isinstance(visible, str) else None, instance.cores_per_chip(lnc))

    @functools.cached_property
    def held(self) -> TaskCores:
        """What it holds on an instance (:func:`~neuron_constructs.knowledge.cores.task_cores`, as the constructs
        see it at the call)."""
        return task_cores(
            self.instance_type,
            self.intent.get("lnc"),
            [(tuple(i for i in c.neuron_devices if i is not None), c.environment) for c in self.containers],
        )

    @property
    def names_cores(self) -> bool:
        """Whether a container names its cores (``NEURON_RT_VISIBLE_CORES``) rather than taking its devices' all."""
        return self.held.names_cores

    @property
    def cores(self) -> frozenset[int] | None:
        """Every NeuronCore its containers hold (see :meth:`container_cores`); ``None`` without a catalog type."""
        return self.held.cores

    @property
    def on_managed_instances(self) -> bool:
        return "MANAGED_INSTANCES" in self.compatibilities

    @property
    def on_ec2(self) -> bool:
        return "EC2" in self.compatibilities

    @property
    def instance_type(self) -> NeuronInstanceType | None:
        """The catalog type this task is specific to: its one pinned type, else the one it was declared for."""
        names = self.pinned_types if self.pinned_types and len(self.pinned_types) == 1 else None
        name = next(iter(names)) if names else self.intent.get("instanceType")
        return NeuronInstanceType.find(name) if isinstance(name, str) else None


@dataclass(frozen=True)
class LaunchTemplate:
    logical_id: str
    instance_type: str | None
    image_parameter: str | None
    """The SSM parameter path the ``ImageId`` parameter resolves, when it is one."""
    image_literal: str | None
    metadata_options: Mapping[str, Any] | None
    root_volume_gib: int | None


@dataclass(frozen=True)
class Capacity:
    """An ``AWS::ECS::CapacityProvider``: an Auto Scaling group's, or Managed Instances."""

    logical_id: str
    kind: str
    """``auto-scaling`` or ``managed-instances``."""
    name: str | None
    instance_types: frozenset[str] | None
    """Instance types it launches (Auto Scaling: the launch template's or the overrides'); ``None`` if unknown."""
    admitted: tuple[NeuronInstanceType, ...]
    """Catalog types it may launch."""
    max_size: int | None
    min_size: int | None
    group: str | None
    """Logical id of the Auto Scaling group."""
    accelerators: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    subnets: tuple[Any, ...] = ()

    @property
    def single_type(self) -> str | None:
        return next(iter(self.instance_types)) if self.instance_types and len(self.instance_types) == 1 else None


@dataclass(frozen=True)
class Service:
    logical_id: str
    cluster: str
    """The ``Cluster`` value, serialized (two services with equal values share a cluster)."""
    task_definition: str | None
    capacities: tuple[str, ...] | None
    """Capacity provider logical ids its strategy names; ``None`` when its tasks may land on any EC2 instance of
    the cluster (launch type EC2, or a default strategy the template does not show)."""
    fargate: bool
    launch_type: str | None
    desired_count: int | None
    daemon: bool
    distinct_instance: bool
    pinned_types: frozenset[str] | None
    max_tasks: int | None
    """The most tasks it runs: the larger of its desired count and its Application Auto Scaling maximum."""
    minimum_healthy_percent: int = 100
    """``DeploymentConfiguration.MinimumHealthyPercent`` (ECS's default for a replica service: 100)."""
    maximum_percent: int = 200
    """``DeploymentConfiguration.MaximumPercent`` (ECS's default for a replica service: 200)."""
    min_tasks: int | None = None
    """The fewest tasks it runs: the smaller of its desired count and its Application Auto Scaling minimum."""
    rolling: bool = True
    """Whether ECS deploys it with rolling updates (the ECS deployment controller and strategy, a replica service)."""

    @property
    def task_counts(self) -> range:
        """Every task count it may run (none when either end is unknown)."""
        if self.min_tasks is None or self.max_tasks is None:
            return range(0)
        return range(self.min_tasks, self.max_tasks + 1)


class EcsTemplate:
    """The ECS and EC2 resources of one template, parsed once for every check."""

    def __init__(
        self,
        loaded: LoadedTemplate,
        *,
        name: str = "template",
        construct_paths: Any = None,
        origin: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self.loaded = loaded
        self.name = name
        self.origin = dict(origin or {})
        """For a combined template: each logical id's template name and logical id there."""
        self.resources: dict[str, dict[str, Any]] = {
            k: v for k, v in _dict(loaded.template.get("Resources")).items() if isinstance(v, dict)
        }
        self._construct_paths = construct_paths
        self._service_types: dict[str, frozenset[str] | None] = {}
        self.parameters: dict[str, Any] = _dict(loaded.template.get("Parameters"))
        self.launch_templates = {lid: self._launch_template(lid, r) for lid, r in self._of("AWS::EC2::LaunchTemplate")}
        self.groups = dict(self._of("AWS::AutoScaling::AutoScalingGroup"))
        self.capacities = {lid: self._capacity(lid, r) for lid, r in self._of("AWS::ECS::CapacityProvider")}
        self.task_definitions = {lid: self._task_definition(lid, r) for lid, r in self._of("AWS::ECS::TaskDefinition")}
        self._default_strategies = self._cluster_defaults()
        scaling = self._scaling_ranges()
        self.services = {lid: self._service(lid, r, scaling.get(lid)) for lid, r in self._of("AWS::ECS::Service")}

    # -- paths and locations

    def path_of(self, logical_id: str) -> str:
        """The construct path of a resource: its ``aws:cdk:path`` metadata (less ``/Resource``), else the path the
        synth-time check found for it, else its logical id."""
        metadata = self.resources.get(logical_id, {}).get("Metadata")
        path = metadata.get("aws:cdk:path") if isinstance(metadata, dict) else None
        if isinstance(path, str):
            return path.removesuffix("/Resource")
        if self._construct_paths is not None:
            found = self._construct_paths(logical_id)
            if found:
                return str(found).removesuffix("/Resource")
        return self.origin.get(logical_id, ("", logical_id))[1]

    def ignored_checks(self, logical_id: str) -> tuple[str, ...]:
        """Rule ids a resource's ``Metadata.cfn-lint.config.ignore_checks`` lists (cfn-lint's convention)."""
        metadata = self.resources.get(logical_id, {}).get("Metadata")
        config = _dict(_dict(_dict(metadata).get("cfn-lint")).get("config"))
        ignored = config.get("ignore_checks", [])
        return tuple(str(i) for i in ignored) if isinstance(ignored, list) else ()

    # -- parsing

    def _of(self, resource_type: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for logical_id, resource in self.resources.items():
            if resource.get("Type") == resource_type:
                yield logical_id, resource

    @staticmethod
    def properties(resource: Mapping[str, Any]) -> dict[str, Any]:
        """A resource's ``Properties``, empty when absent or malformed."""
        properties = resource.get("Properties")
        return properties if isinstance(properties, dict) else {}

    def _launch_template(self, logical_id: str, resource: dict[str, Any]) -> LaunchTemplate:
        data = self.properties(resource).get("LaunchTemplateData")
        data = data if isinstance(data, dict) else {}
        image = data.get("ImageId")
        parameter = None
        target = ref_target(image)
        if target and isinstance(self.parameters.get(target), dict):
            default = self.parameters[target].get("Default")
            parameter = default if isinstance(default, str) else None
        resolved = _RESOLVE_SSM.match(image) if isinstance(image, str) else None
        if resolved:
            parameter, image = resolved.group(1), None
        root = None
        for mapping in _list(data.get("BlockDeviceMappings")):
            if isinstance(mapping, dict) and mapping.get("DeviceName") in ("/dev/xvda", "/dev/sda1"):
                ebs = mapping.get("Ebs")
                root = whole_number(ebs.get("VolumeSize")) if isinstance(ebs, dict) else None
        instance_type = data.get("InstanceType")
        options = data.get("MetadataOptions")
        return LaunchTemplate(
            logical_id=logical_id,
            instance_type=instance_type if isinstance(instance_type, str) else None,
            image_parameter=parameter,
            image_literal=image if isinstance(image, str) else None,
            metadata_options=options if isinstance(options, dict) else None,
            root_volume_gib=root,
        )

    def group_launch_template(self, group: Mapping[str, Any]) -> LaunchTemplate | None:
        properties = self.properties(group)
        specification = properties.get("LaunchTemplate")
        if not isinstance(specification, dict):
            policy = properties.get("MixedInstancesPolicy")
            launch = policy.get("LaunchTemplate") if isinstance(policy, dict) else None
            specification = launch.get("LaunchTemplateSpecification") if isinstance(launch, dict) else None
        if isinstance(specification, dict):
            target = ref_target(specification.get("LaunchTemplateId")) or ref_target(
                specification.get("LaunchTemplateName")
            )
            if target in self.launch_templates:
                return self.launch_templates[target]
        return None

    def group_instance_types(self, group: Mapping[str, Any]) -> frozenset[str] | None:
        properties = self.properties(group)
        policy = properties.get("MixedInstancesPolicy")
        launch = policy.get("LaunchTemplate") if isinstance(policy, dict) else None
        overrides = launch.get("Overrides") if isinstance(launch, dict) else None
        if isinstance(overrides, list) and overrides:
            names = [o.get("InstanceType") for o in overrides if isinstance(o, dict)]
            return frozenset(str(n) for n in names) if all(isinstance(n, str) for n in names) else None
        template = self.group_launch_template(group)
        return frozenset({template.instance_type}) if template and template.instance_type else None

    def _capacity(self, logical_id: str, resource: dict[str, Any]) -> Capacity:
        properties = self.properties(resource)
        name = properties.get("Name") if isinstance(properties.get("Name"), str) else None
        asg_provider = properties.get("AutoScalingGroupProvider")
        if isinstance(asg_provider, dict):
            group_id = ref_target(asg_provider.get("AutoScalingGroupArn"))
            group = self.groups.get(group_id or "")
            types = self.group_instance_types(group) if group else None
            group_properties = self.properties(group) if group else {}
            subnets = group_properties.get("VPCZoneIdentifier")
            return Capacity(
                logical_id=logical_id,
                kind="auto-scaling",
                name=name,
                instance_types=types,
                admitted=tuple(t for t in (NeuronInstanceType.find(n) for n in types or ()) if t is not None),
                max_size=whole_number(group_properties.get("MaxSize")),
                min_size=whole_number(group_properties.get("MinSize")),
                group=group_id if group else None,
                subnets=tuple(subnets) if isinstance(subnets, list) else (),
            )
        managed = properties.get("ManagedInstancesProvider")
        launch = managed.get("InstanceLaunchTemplate") if isinstance(managed, dict) else None
        launch = launch if isinstance(launch, dict) else {}
        requirements = launch.get("InstanceRequirements")
        requirements = requirements if isinstance(requirements, dict) else {}
        accelerators = tuple(str(a) for a in _list(requirements.get("AcceleratorNames")) if isinstance(a, str))
        patterns = tuple(str(p) for p in _list(requirements.get("AllowedInstanceTypes")) if isinstance(p, str))
        admitted = tuple(
            t
            for t in NeuronInstanceType.all()
            if (not patterns or any(_pattern_matches(p, t.name) for p in patterns))
            and (not accelerators or t.accelerator in accelerators)
            and (accelerators or patterns)
        )
        network = launch.get("NetworkConfiguration")
        subnets = network.get("Subnets") if isinstance(network, dict) else None
        exact = frozenset(patterns) if patterns and all("*" not in p and "?" not in p for p in patterns) else None
        return Capacity(
            logical_id=logical_id,
            kind="managed-instances",
            name=name,
            instance_types=exact,
            admitted=admitted,
            max_size=None,
            min_size=None,
            group=None,
            accelerators=accelerators,
            patterns=patterns,
            subnets=tuple(subnets) if isinstance(subnets, list) else (),
        )

    def _task_definition(self, logical_id: str, resource: dict[str, Any]) -> TaskDefinition:
        properties = self.properties(resource)
        compatibilities = frozenset(
            str(c) for c in (_list(properties.get("RequiresCompatibilities")) or ["EC2"]) if isinstance(c, str)
        )
        network_mode = properties.get("NetworkMode")
        pins: list[frozenset[str] | None] = []
        expressions: list[str] = []
        for constraint in _list(properties.get("PlacementConstraints")):
            if isinstance(constraint, dict) and constraint.get("Type") == "memberOf":
                expression = constraint.get("Expression")
                if isinstance(expression, str) and "ecs.instance-type" in expression:
                    expressions.append(expression)
                    pins.append(pinned_instance_types(expression))
        pinned: frozenset[str] | None = None
        for pin in pins:
            pinned = (pin or frozenset()) if pinned is None else pinned & (pin or frozenset())
        metadata = resource.get("Metadata")
        intent = metadata.get(INTENT_METADATA_KEY) if isinstance(metadata, dict) else None
        containers = properties.get("ContainerDefinitions")
        return TaskDefinition(
            logical_id=logical_id,
            compatibilities=compatibilities,
            network_mode=network_mode.lower() if isinstance(network_mode, str) else "bridge",
            cpu=cpu_units(properties.get("Cpu")),
            memory=memory_mib(properties.get("Memory")),
            containers=tuple(_container(index, c) for index, c in enumerate(_list(containers)) if isinstance(c, dict)),
            pinned_types=pinned,
            pin_expressions=tuple(expressions),
            ipc_mode=properties.get("IpcMode") is not None,
            inference_accelerators=bool(properties.get("InferenceAccelerators")),
            intent=intent if isinstance(intent, dict) else {},
        )

    def _cluster_defaults(self) -> dict[str, tuple[str, ...] | None]:
        defaults: dict[str, tuple[str, ...] | None] = {}
        for _, resource in self._of("AWS::ECS::ClusterCapacityProviderAssociations"):
            properties = self.properties(resource)
            strategy = properties.get("DefaultCapacityProviderStrategy")
            providers = self._strategy_capacities(strategy) if isinstance(strategy, list) else None
            defaults[_key(properties.get("Cluster"))] = providers[0] if providers else None
        return defaults

    def _strategy_capacities(self, strategy: list[Any]) -> tuple[tuple[str, ...], bool] | None:
        """Capacity logical ids a strategy names, and whether it names Fargate; ``None`` if one is unknown."""
        found: list[str] = []
        fargate = False
        for item in strategy:
            provider = item.get("CapacityProvider") if isinstance(item, dict) else None
            target = ref_target(provider)
            if target in self.capacities:
                found.append(target)
            elif provider in ("FARGATE", "FARGATE_SPOT"):
                fargate = True
            elif isinstance(provider, str):
                named = [c.logical_id for c in self.capacities.values() if c.name == provider]
                if not named:
                    return None
                found.extend(named)
            else:
                return None
        return tuple(found), fargate

    def _scaling_ranges(self) -> dict[str, tuple[int | None, int]]:
        """Service logical id -> (lowest MinCapacity, highest MaxCapacity) of its DesiredCount scalable targets;
        ``None`` for a minimum that is not a number."""
        ranges: dict[str, tuple[int | None, int]] = {}
        for _, resource in self._of("AWS::ApplicationAutoScaling::ScalableTarget"):
            properties = self.properties(resource)
            if properties.get("ScalableDimension") != "ecs:service:DesiredCount":
                continue
            resource_id = properties.get("ResourceId")
            parts = resource_id.get("Fn::Join") if isinstance(resource_id, dict) else None
            targets = [ref_target(p) for p in _list(parts[1])] if isinstance(parts, list) and len(parts) == 2 else []
            maximum = whole_number(properties.get("MaxCapacity"))
            minimum = whole_number(properties.get("MinCapacity"))
            for target in targets:
                if not target or maximum is None or self.resources.get(target, {}).get("Type") != "AWS::ECS::Service":
                    continue
                low, high = ranges.get(target, (minimum, maximum))
                ranges[target] = (None if low is None or minimum is None else min(low, minimum), max(high, maximum))
        return ranges

    def _service(self, logical_id: str, resource: dict[str, Any], scaling: tuple[int | None, int] | None) -> Service:
        properties = self.properties(resource)
        cluster = _key(properties.get("Cluster"))
        strategy = properties.get("CapacityProviderStrategy")
        launch_type = properties.get("LaunchType") if isinstance(properties.get("LaunchType"), str) else None
        capacities: tuple[str, ...] | None
        fargate = launch_type == "FARGATE"
        if isinstance(strategy, list) and strategy:
            named = self._strategy_capacities(strategy)
            capacities, fargate = named if named else (None, False)
        elif launch_type is None:
            capacities = self._default_strategies.get(cluster)
        else:
            capacities = None
        constraints = [c for c in _list(properties.get("PlacementConstraints")) if isinstance(c, dict)]
        pinned: frozenset[str] | None = None
        for constraint in constraints:
            if constraint.get("Type") == "memberOf":
                pin = pinned_instance_types(constraint.get("Expression"))
                if pin is not None:
                    pinned = pin if pinned is None else pinned & pin
        desired = whole_number(properties.get("DesiredCount"))
        daemon = properties.get("SchedulingStrategy") == "DAEMON"
        if desired is None and not daemon and "DesiredCount" not in properties:
            desired = 1  # CloudFormation's default for a REPLICA service
        deployment = properties.get("DeploymentConfiguration")
        deployment = deployment if isinstance(deployment, dict) else {}
        healthy = whole_number(deployment.get("MinimumHealthyPercent"))
        maximum = whole_number(deployment.get("MaximumPercent"))
        controller = properties.get("DeploymentController")
        controller_type = controller.get("Type", "ECS") if isinstance(controller, dict) else "ECS"
        scaling_min, scaling_max = scaling if scaling is not None else (desired, None)
        counts = [c for c in (desired, scaling_min, scaling_max) if c is not None]
        return Service(
            minimum_healthy_percent=100 if healthy is None else healthy,
            maximum_percent=200 if maximum is None else maximum,
            min_tasks=None if scaling_min is None or desired is None else max(1, min(counts)),
            rolling=not daemon and controller_type == "ECS" and deployment.get("Strategy", "ROLLING") == "ROLLING",
            logical_id=logical_id,
            cluster=cluster,
            task_definition=ref_target(properties.get("TaskDefinition")),
            capacities=capacities,
            fargate=fargate,
            launch_type=launch_type,
            desired_count=desired,
            daemon=daemon,
            distinct_instance=any(c.get("Type") == "distinctInstance" for c in constraints),
            pinned_types=pinned,
            max_tasks=max(filter(None, (desired, scaling_max)), default=None),
        )

    # -- queries

    def services_of(self, task_definition: str) -> list[Service]:
        return [s for s in self.services.values() if s.task_definition == task_definition]

    def service_capacities(self, service: Service) -> list[Capacity] | None:
        """The capacities a service's tasks land on; ``None`` when the template does not say."""
        if service.capacities is None:
            return None
        return [self.capacities[c] for c in service.capacities]

    def lands_on(self, service: Service, capacity: Capacity) -> bool:
        """Whether the service's tasks can land on ``capacity``: its strategy names it, or (no strategy the template
        shows) it is not Fargate and the capacity's one type is among the types the service may run on."""
        if service.capacities is not None:
            return capacity.logical_id in service.capacities
        if service.fargate:
            return False
        types = self.service_types(service)
        return capacity.single_type is None or types is None or capacity.single_type in types

    def could_share_instances(self, first: Service, second: Service) -> bool:
        """Whether tasks of two services can land on one instance (same cluster and capacity, types agree)."""
        if first.cluster != second.cluster or first.fargate or second.fargate:
            return False
        if (
            first.capacities is not None
            and second.capacities is not None
            and not set(first.capacities) & set(second.capacities)
        ):
            return False
        first_types = self.service_types(first)
        second_types = self.service_types(second)
        return first_types is None or second_types is None or bool(first_types & second_types)

    def service_types(self, service: Service) -> frozenset[str] | None:
        """Instance types a service's tasks may run on: its pins, its task's pins and its capacities agree (worked
        out once per service: pairwise checks ask for it again and again)."""
        if getattr(self, "services", {}).get(service.logical_id) is not service:  # not one of this template's: not kept
            return self._worked_out_service_types(service)
        if service.logical_id not in self._service_types:
            self._service_types[service.logical_id] = self._worked_out_service_types(service)
        return self._service_types[service.logical_id]

    def _worked_out_service_types(self, service: Service) -> frozenset[str] | None:
        types: frozenset[str] | None = service.pinned_types
        task = self.task_definitions.get(service.task_definition or "")
        if task is not None and task.pinned_types is not None:
            types = task.pinned_types if types is None else types & task.pinned_types
        capacities = self.service_capacities(service)
        if capacities and all(c.instance_types is not None for c in capacities):
            launched = frozenset().union(*(c.instance_types or frozenset() for c in capacities))
            types = launched if types is None else types & launched
        return types


def _list(value: Any) -> list[Any]:
    """``value`` if the template holds a list there, else nothing (a malformed value is skipped, not fatal)."""
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    """``value`` if the template holds a mapping there, else an empty one."""
    return value if isinstance(value, dict) else {}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)  # YAML can hold dates and bytes


def _pattern_matches(pattern: str, name: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)


def _container(index: int, raw: Mapping[str, Any]) -> Container:
    linux = raw.get("LinuxParameters")
    linux = linux if isinstance(linux, dict) else {}
    paths: list[str] = []
    positions: list[int] = []
    indices: list[int | None] = []
    for position, device in enumerate(_list(linux.get("Devices"))):
        host = device.get("HostPath") if isinstance(device, dict) else None
        if isinstance(host, str) and host.startswith("/dev/neuron"):
            paths.append(host)
            positions.append(position)
            match = NEURON_DEVICE_PATH.match(host)
            indices.append(int(match.group(1)) if match else None)
    requirements = [r for r in _list(raw.get("ResourceRequirements")) if isinstance(r, dict)]
    environment = {
        str(e.get("Name")): e.get("Value")
        for e in _list(raw.get("Environment"))
        if isinstance(e, dict) and isinstance(e.get("Name"), str)
    }
    ports = tuple(
        (whole_number(p.get("ContainerPort")), whole_number(p.get("HostPort")))
        for p in _list(raw.get("PortMappings"))
        if isinstance(p, dict)
    )
    rejected = [f"linuxParameters.{f}" for f in ("SharedMemorySize", "Tmpfs") if linux.get(f)]
    if raw.get("DockerLabels"):
        rejected.append("dockerLabels")
    name = raw.get("Name")
    image = raw.get("Image")
    return Container(
        image=image[:1000] if isinstance(image, str) else None,
        name=name if isinstance(name, str) else f"container {index}",
        index=index,
        neuron_devices=tuple(indices),
        neuron_device_paths=tuple(paths),
        neuron_device_positions=tuple(positions),
        wants_all_neuron_devices=any(r.get("Type") == "NeuronDevice" for r in requirements),
        other_accelerators=tuple(
            str(r.get("Type")) for r in requirements if r.get("Type") in ("GPU", "InferenceAccelerator")
        ),
        environment=environment,
        port_mappings=ports,
        cpu=whole_number(raw.get("Cpu")),
        memory=whole_number(raw.get("Memory")),
        memory_reservation=whole_number(raw.get("MemoryReservation")),
        managed_instances_rejected=tuple(rejected),
    )


# --- several templates as one ---------------------------------------------------------------------

ID_SEPARATOR = "|"
"""Joins a template's name and a logical id in a combined template (no logical id contains it)."""


def combine_templates(templates: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """One template holding every resource of ``templates`` (by name), and where each came from.

    Logical ids become ``<name>|<id>`` and every ``Ref``/``Fn::GetAtt`` is renamed with them; an
    ``Fn::ImportValue`` of an export another template declares becomes that output's value, so a
    service in one stack and the capacity or task definition it names in another are checked
    together, as one app deploys them.
    """
    exports: dict[str, Any] = {}
    for name, template in templates.items():
        for output in _dict(template.get("Outputs")).values():
            export = output.get("Export") if isinstance(output, Mapping) else None
            export_name = export.get("Name") if isinstance(export, Mapping) else None
            if isinstance(export_name, str):
                exports[export_name] = _renamed(output.get("Value"), name, _local_ids(template), {})
    combined: dict[str, Any] = {"Resources": {}, "Parameters": {}}
    origin: dict[str, tuple[str, str]] = {}
    for name, template in templates.items():
        local = _local_ids(template)
        for section in ("Resources", "Parameters"):
            for logical_id, body in _dict(template.get(section)).items():
                combined_id = f"{name}{ID_SEPARATOR}{logical_id}"
                combined[section][combined_id] = _renamed(body, name, local, exports)
                origin[combined_id] = (name, logical_id)
    return combined, origin


def _local_ids(template: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(_dict(template.get("Resources"))) | frozenset(_dict(template.get("Parameters")))


def _renamed(value: Any, name: str, local: frozenset[str], exports: Mapping[str, Any]) -> Any:
    if isinstance(value, list):
        return [_renamed(v, name, local, exports) for v in value]
    if not isinstance(value, Mapping):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "Ref" and isinstance(inner, str) and inner in local:
            return {"Ref": f"{name}{ID_SEPARATOR}{inner}"}
        if key == "Fn::GetAtt":
            parts = inner.split(".", 1) if isinstance(inner, str) else inner
            if isinstance(parts, list) and parts and parts[0] in local:
                return {"Fn::GetAtt": [f"{name}{ID_SEPARATOR}{parts[0]}", *parts[1:]]}
        if key == "Fn::ImportValue" and isinstance(inner, str) and inner in exports:
            return exports[inner]
    return {k: _renamed(v, name, local, exports) for k, v in value.items()}
