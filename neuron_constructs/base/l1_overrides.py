"""The one place the library writes CloudFormation that aws-cdk-lib's L2s cannot.

* aws-cdk-lib 2.275 renders only ``GPU`` and ``InferenceAccelerator`` container resource
  requirements, so the ``NeuronDevice`` requirement of managed Neuron device allocation is
  written here as a property override on the task definition's ``AWS::ECS::TaskDefinition``.
* aws-cdk-lib's ``FargateService`` - the service class for ECS Managed Instances - takes no
  placement constraints, while Managed Instances honour them: ``distinctInstance`` for a
  manually mapped task on Managed Instances is set on its ``AWS::ECS::Service`` here.
* aws-cdk-lib's custom resource provider that strips a VPC's default security group gives its
  Lambda function a ``DependsOn`` on its role that the ``Fn::GetAtt`` of the role already implies
  (cfn-lint W3005); the redundant ``DependsOn`` is removed here. Likewise an ECS service rolled out blue/green,
  canary or linear depends on the listener rules it attaches through (aws-cdk-lib adds the dependency for every
  load balancer target) while its ``AdvancedConfiguration`` already refers to them: those entries are dropped from its
  ``DependsOn``, the others kept. A Lambda function of the library keeps its ``DependsOn`` on its role (the policies
  must exist before Lambda creates a function in a VPC), marked for cfn-lint instead.
* aws-cdk-lib's ``LaunchTemplate``, ``AutoScalingGroup`` and ``ManagedInstancesCapacityProvider``
  have no property for reserved capacity: an On-Demand Capacity Reservation is set on the Auto
  Scaling group (``CapacityReservationSpecification``), a Capacity Block on the launch template
  (``InstanceMarketOptions.MarketType: capacity-block`` and its reservation), a reservation group on
  a Managed Instances provider (``CapacityOptionType: RESERVED`` and ``CapacityReservations``).
* AWS Batch training (:mod:`neuron_constructs.training.queue`): aws-cdk-lib's ``LaunchTemplate`` has no network
  interfaces, so the EFA interfaces are set on its ``LaunchTemplateData``; the compute environment's security
  groups are removed, as Batch refuses them next to launch template interfaces; and a multi-node job
  definition's node range is left open (``0:``), which ``aws batch submit-job --node-overrides numNodes=N``
  requires and ``MultiNodeJobDefinition`` never writes.
* aws-cdk-lib's ``DeploymentLifecycleHookTargetConfig`` needs a target ARN and renders no ``TargetType`` or
  ``TimeoutConfiguration``, so a rollout's approval, ECS's pause hook (``TargetType: PAUSE``), is appended to the
  service's ``DeploymentConfiguration.LifecycleHooks`` after the Lambda hooks the L2 renders.
* What a Neuron task definition declares (managed or manual allocation, its Neuron containers,
  the instance type and devices of a manual one) is recorded in the resource's ``Metadata``
  under :data:`~neuron_constructs.checks.cfn_template.INTENT_METADATA_KEY`, so the template checks
  (and ``neuron-ecs lint``) can tell when an escape hatch undid it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import AspectPriority, CfnResource, Stack
from aws_cdk import aws_ecs as ecs
from constructs import IConstruct

from neuron_constructs.base.arguments import list_at_synth
from neuron_constructs.base.tree import construct_path, kept, node_of, stack_of
from neuron_constructs.checks.cfn_template import INTENT_METADATA_KEY

__all__ = [
    "NEURON_DEVICE_REQUIREMENT",
    "container_index",
    "distinct_instances_on_managed_instances",
    "drop_compute_environment_security_groups",
    "drop_dependencies_on_referenced_rules",
    "drop_redundant_handler_dependency",
    "efa_network_interfaces",
    "open_node_range",
    "optimize_managed_instances",
    "pause_deployment",
    "record_intent",
    "require_all_neuron_devices",
    "reserve_auto_scaling_capacity",
    "reserve_launch_template_capacity",
    "reserve_managed_instances_capacity",
]

NEURON_DEVICE_REQUIREMENT = {"Type": "NeuronDevice", "Value": "ALL"}
"""ECS managed Neuron device allocation: the container gets every device of its instance."""


def _default_child(task_definition: IConstruct) -> IConstruct | None:
    """The task definition's L1, looked up once per task definition."""
    return kept(task_definition, "_neuron_constructs_resource", lambda: node_of(task_definition).default_child)


def _resource(task_definition: ecs.TaskDefinition) -> CfnResource:
    resource = _default_child(task_definition)
    assert isinstance(resource, CfnResource)
    return resource


def containers_as_synthesized(task_definition: IConstruct) -> list[dict[str, object]]:
    """The container definitions of ``task_definition`` (an ``ecs.TaskDefinition`` or its ``AWS::ECS::TaskDefinition``)
    as they will synthesize: plain values, deploy-time values as their intrinsic functions. aws-cdk-lib renders them
    once, at the first resolution, and keeps that rendering, so this is read in the aspect phase only, when every
    container and variable is in place: one resolution for every container, where asking each container to render
    itself is a round trip to the CDK's runtime per property (about sixty). The rendering kept, every later call
    reads it again from here: one resolution per task definition, whichever check asks first."""
    resource = task_definition if isinstance(task_definition, CfnResource) else _default_child(task_definition)
    if not isinstance(resource, CfnResource):
        return []
    return kept(resource, "_neuron_constructs_containers", lambda: _resolved_containers(resource))


def _resolved_containers(resource: CfnResource) -> list[dict[str, object]]:
    rendered = stack_of(resource).resolve(resource._cfn_properties.get("containerDefinitions")) or []
    return [c for c in rendered if isinstance(c, dict)] if isinstance(rendered, list) else []


def container_index(task_definition: ecs.TaskDefinition, container: ecs.ContainerDefinition) -> int:
    """Position of ``container`` in the rendered ``ContainerDefinitions``.

    The L2 renders containers in the order they were created, which is their
    order among the task definition's children.
    """
    containers = [c for c in node_of(task_definition).children if isinstance(c, ecs.ContainerDefinition)]
    paths = [construct_path(c) for c in containers]
    return paths.index(construct_path(container))


def require_all_neuron_devices(task_definition: ecs.TaskDefinition, container: ecs.ContainerDefinition) -> None:
    """Give ``container`` ``resourceRequirements: [{type: NeuronDevice, value: ALL}]``."""
    index = container_index(task_definition, container)
    _resource(task_definition).add_property_override(
        f"ContainerDefinitions.{index}.ResourceRequirements", [NEURON_DEVICE_REQUIREMENT]
    )


def record_intent(task_definition: ecs.TaskDefinition, intent: Mapping[str, object]) -> None:
    """Write (or rewrite) what this Neuron task definition declares into its resource metadata."""
    _resource(task_definition).add_metadata(INTENT_METADATA_KEY, dict(intent))


def distinct_instances_on_managed_instances(service: ecs.FargateService) -> None:
    """``distinctInstance`` on a Managed Instances service (aws-cdk-lib's ``FargateService`` has no API for it)."""
    resource = service.node.default_child
    assert isinstance(resource, ecs.CfnService)
    resource.placement_constraints = [ecs.CfnService.PlacementConstraintProperty(type="distinctInstance")]


def host_network_on_managed_instances(service: ecs.FargateService) -> None:
    """No ``NetworkConfiguration`` on a Managed Instances service of a host-mode task: aws-cdk-lib's ``FargateService``
    always writes an awsvpc one, which ECS refuses for any other network mode."""
    resource = service.node.default_child
    assert isinstance(resource, ecs.CfnService)
    resource.add_property_deletion_override("NetworkConfiguration")


def drop_dependencies_on_referenced_rules(service: ecs.BaseService, rules: Sequence[IConstruct]) -> None:
    """Keep ``service``'s ``DependsOn`` but for the listener ``rules`` its ``AdvancedConfiguration`` refers to (the
    list is read at synth, once aws-cdk-lib turned construct dependencies into resource ones)."""
    resource = service.node.default_child
    assert isinstance(resource, CfnResource)
    referenced = {(r if isinstance(r, CfnResource) else r.node.default_child).node.path for r in rules}  # type: ignore[union-attr]
    stack = Stack.of(resource)

    def remaining() -> list[str]:
        return sorted(
            stack.get_logical_id(d)
            for d in resource.obtain_dependencies()
            if isinstance(d, CfnResource) and d.stack.node.path == stack.node.path and d.node.path not in referenced
        )

    resource.add_override("DependsOn", list_at_synth(remaining))


def drop_redundant_handler_dependency(provider: IConstruct) -> None:
    """Remove the ``DependsOn`` of a custom resource provider's handler on the role its ``Role`` already names."""
    handler = node_of(provider).try_find_child("Handler")
    if isinstance(handler, CfnResource):
        handler.add_deletion_override("DependsOn")


def keep_role_dependency_of_function(function: IConstruct) -> None:
    """Keep the ``DependsOn`` of a Lambda function on its role (aws-cdk-lib's ``Function`` adds it, with the role's
    policies, which Lambda checks when it creates a function in a VPC) and mark it for cfn-lint, which reports it as
    redundant next to the ``Role`` property (W3005): ignored on this resource only, cfn-lint's ``Metadata``
    convention."""
    resource = node_of(function).default_child
    assert isinstance(resource, CfnResource)
    resource.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})


def reserve_auto_scaling_capacity(
    group: IConstruct,
    launch_template: IConstruct,
    *,
    kind: str,
    target: str,
    fallback_to_on_demand: bool,
) -> None:
    """Launch the group into a Capacity Block (``kind`` capacity-block, on the launch template) or an
    On-Demand Capacity Reservation or reservation group (``on-demand``/``on-demand-group``, on the group)."""
    if kind == "capacity-block":
        template = launch_template.node.default_child
        assert isinstance(template, CfnResource)
        template.add_property_override("LaunchTemplateData.InstanceMarketOptions", {"MarketType": "capacity-block"})
        template.add_property_override(
            "LaunchTemplateData.CapacityReservationSpecification",
            {"CapacityReservationTarget": {"CapacityReservationId": target}},
        )
        return
    resource = group.node.default_child
    assert isinstance(resource, CfnResource)
    key = "CapacityReservationIds" if kind == "on-demand" else "CapacityReservationResourceGroupArns"
    resource.add_property_override(
        "CapacityReservationSpecification",
        {
            "CapacityReservationPreference": (
                "capacity-reservations-first" if fallback_to_on_demand else "capacity-reservations-only"
            ),
            "CapacityReservationTarget": {key: [target]},
        },
    )


def reserve_managed_instances_capacity(provider: IConstruct, *, group_arn: str, fallback_to_on_demand: bool) -> None:
    """Launch Managed Instances into the Capacity Reservations of a resource group (capacity option RESERVED)."""
    resource = provider.node.default_child
    assert isinstance(resource, CfnResource)
    base = "ManagedInstancesProvider.InstanceLaunchTemplate"
    resource.add_property_override(f"{base}.CapacityOptionType", "RESERVED")
    resource.add_property_override(
        f"{base}.CapacityReservations",
        {
            "ReservationGroupArn": group_arn,
            "ReservationPreference": "RESERVATIONS_FIRST" if fallback_to_on_demand else "RESERVATIONS_ONLY",
        },
    )


def efa_network_interfaces(launch_template: IConstruct, security_group_id: str, count: int) -> None:
    """One EFA interface per network card: card 0 at device index 0 (the primary), cards 1..count-1 at device index 1,
    each with the security group, as AWS's Trainium launch templates attach them (aws-cdk-lib's ``LaunchTemplate`` has
    no network interface API)."""
    template = launch_template.node.default_child
    assert isinstance(template, CfnResource)
    template.add_property_override(
        "LaunchTemplateData.NetworkInterfaces",
        [
            {
                "NetworkCardIndex": card,
                "DeviceIndex": 0 if card == 0 else 1,
                "InterfaceType": "efa",
                "Groups": [security_group_id],
                "DeleteOnTermination": True,
            }
            for card in range(count)
        ],
    )


def reserve_launch_template_capacity(launch_template: IConstruct, *, kind: str, target: str) -> None:
    """Launch instances of ``launch_template`` into a Capacity Block (market type capacity-block), an On-Demand
    Capacity Reservation or a reservation group (for AWS Batch, which takes capacity from the launch template; EC2
    takes a target or a preference, not both)."""
    template = launch_template.node.default_child
    assert isinstance(template, CfnResource)
    if kind == "capacity-block":
        template.add_property_override("LaunchTemplateData.InstanceMarketOptions", {"MarketType": "capacity-block"})
    key = "CapacityReservationResourceGroupArn" if kind == "on-demand-group" else "CapacityReservationId"
    template.add_property_override(
        "LaunchTemplateData.CapacityReservationSpecification", {"CapacityReservationTarget": {key: target}}
    )


def drop_compute_environment_security_groups(compute_environment: IConstruct) -> None:
    """No ``SecurityGroupIds`` on a Batch compute environment whose launch template defines network interfaces: Batch
    accepts one or the other (aws/aws-cdk#21577), and aws-cdk-lib always writes them."""
    resource = compute_environment.node.default_child
    assert isinstance(resource, CfnResource)
    resource.add_property_deletion_override("ComputeResources.SecurityGroupIds")


def open_node_range(job_definition: IConstruct) -> None:
    """Make the one node range of a multi-node job definition open-ended (``0:``, from node 0 to the last): AWS Batch
    overrides a job's node count at submission (``nodeOverrides.numNodes``) only when a range has no upper bound."""
    resource = job_definition.node.default_child
    assert isinstance(resource, CfnResource)
    resource.add_property_override("NodeProperties.NodeRangeProperties.0.TargetNodes", "0:")


def optimize_managed_instances(provider: IConstruct, *, scale_in_after: int | None, auto_repair: bool | None) -> None:
    """``ManagedInstancesProvider.InfrastructureOptimization.ScaleInAfter`` and ``.AutoRepairConfiguration``
    (``ActionsStatus`` ENABLED or DISABLED), which aws-cdk-lib's ``ManagedInstancesCapacityProvider`` does not take;
    ``None`` leaves a setting to ECS."""
    resource = provider.node.default_child
    assert isinstance(resource, CfnResource)
    if scale_in_after is not None:
        resource.add_property_override(
            "ManagedInstancesProvider.InfrastructureOptimization", {"ScaleInAfter": scale_in_after}
        )
    if auto_repair is not None:
        resource.add_property_override(
            "ManagedInstancesProvider.AutoRepairConfiguration",
            {"ActionsStatus": "ENABLED" if auto_repair else "DISABLED"},
        )


def pause_deployment(service: ecs.BaseService, *, stage: str, timeout_minutes: int, on_timeout: str) -> None:
    """Append ECS's pause hook at ``stage`` (waiting ``timeout_minutes``, then ``on_timeout``) to ``service``'s
    lifecycle hooks, in the aspect phase: after every Lambda hook the L2 renders, counted then."""
    from neuron_constructs.base.aspects import once_before_synthesis

    resource = node_of(service).default_child
    assert isinstance(resource, CfnResource)
    hook = {
        "TargetType": "PAUSE",
        "LifecycleStages": [stage],
        "TimeoutConfiguration": {"TimeoutInMinutes": timeout_minutes, "Action": on_timeout},
    }

    def append() -> None:
        rendered = stack_of(resource).resolve(resource._cfn_properties.get("deploymentConfiguration")) or {}
        hooks = rendered.get("lifecycleHooks") if isinstance(rendered, dict) else None
        count = len(hooks) if isinstance(hooks, list) else 0
        if count:
            resource.add_property_override(f"DeploymentConfiguration.LifecycleHooks.{count}", hook)
        else:
            resource.add_property_override("DeploymentConfiguration.LifecycleHooks", [hook])

    once_before_synthesis(service, append, priority=AspectPriority.MUTATING)
