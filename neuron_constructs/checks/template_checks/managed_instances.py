"""What ECS Managed Instances accept: no Inf1, the task definition fields it takes, and NeuronDevice only there."""

from __future__ import annotations

from neuron_constructs.checks.cfn_template import (
    EcsTemplate,
)
from neuron_constructs.checks.template_checks.report import (
    Check,
    TemplateReport,
    in_container,
    in_properties,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.rules import Rule


def _check_inf1_on_managed_instances(t: EcsTemplate, out: TemplateReport) -> None:
    for capacity in t.capacities.values():
        if capacity.kind != "managed-instances":
            continue
        location = in_properties("ManagedInstancesProvider", "InstanceLaunchTemplate", "InstanceRequirements")
        if "inferentia" in capacity.accelerators:
            out.add(r.INF1_ON_MANAGED_INSTANCES, capacity.logical_id, location, "accelerator 'inferentia' (Inf1)")
        for pattern in capacity.patterns:
            matches = NeuronInstanceType.matching(pattern)
            if matches and all(m.accelerator == "inferentia" for m in matches):
                out.add(
                    r.INF1_ON_MANAGED_INSTANCES,
                    capacity.logical_id,
                    location,
                    f"instance type {pattern!r} selects Inf1",
                )


def _check_managed_instances_fields(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.on_managed_instances:
            continue
        if task.network_mode not in ("awsvpc", "host"):
            out.add(
                r.MANAGED_INSTANCES_FIELD,
                task.logical_id,
                in_properties("NetworkMode"),
                f"network mode {task.network_mode} on a Managed Instances task definition",
                field="NetworkMode",
            )
        for present, field in ((task.ipc_mode, "IpcMode"), (task.inference_accelerators, "InferenceAccelerators")):
            if present:
                out.add(
                    r.MANAGED_INSTANCES_FIELD, task.logical_id, in_properties(field), f"{field} is set", field=field
                )
        for container in task.containers:
            for field in container.managed_instances_rejected:
                out.add(
                    r.MANAGED_INSTANCES_FIELD,
                    task.logical_id,
                    in_container(container),
                    f"{field} is set",
                    container=container,
                    field=field,
                )


def _check_managed_allocation_capacity(t: EcsTemplate, out: TemplateReport) -> None:
    for task in t.task_definitions.values():
        if not task.managed_allocation:
            continue
        if not task.on_managed_instances:
            out.add(
                r.MANAGED_ALLOCATION_CAPACITY,
                task.logical_id,
                in_properties("RequiresCompatibilities"),
                f"NeuronDevice in a task definition compatible with {sorted(task.compatibilities)} only",
            )
        for service in t.services_of(task.logical_id):
            capacities = t.service_capacities(service)
            wrong = (
                service.fargate
                or service.launch_type in ("EC2", "EXTERNAL")
                or any(c.kind != "managed-instances" for c in capacities or ())
            )
            if wrong:
                out.add(
                    r.MANAGED_ALLOCATION_CAPACITY,
                    service.logical_id,
                    in_properties(),
                    "the service runs a NeuronDevice task on "
                    + (
                        f"launch type {service.launch_type}"
                        if service.launch_type
                        else "capacity that is not Managed Instances"
                    ),
                )


CHECKS: dict[Rule, Check] = {
    r.INF1_ON_MANAGED_INSTANCES: _check_inf1_on_managed_instances,
    r.MANAGED_INSTANCES_FIELD: _check_managed_instances_fields,
    r.MANAGED_ALLOCATION_CAPACITY: _check_managed_allocation_capacity,
}
"""This area's check of each rule."""
