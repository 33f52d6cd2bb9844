"""What a :class:`~neuron_constructs.serving.services.NeuronService`'s rollout (``rollout=``) adds to the service.

A blue/green, canary or linear rollout holds blue and green at once, so the capacity must launch room for both
(:func:`check_rollout_room`, NEURON074); :func:`set_up_rollout` refuses the service's own deployment alarms when they
only fail a deployment the rollout's alarms roll back (NEURON135), adds the validation of its traffic path (NEURON073),
the model's Neuron ``ExecutionErrors`` alarm when a NeuronMonitoring covers the capacity, and the warnings NEURON121
and NEURON122 (:mod:`~neuron_constructs.serving.rollout_checks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import AspectPriority, Aspects, Validations

from neuron_constructs.base.l1_overrides import pause_deployment
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
from neuron_constructs.compute.options import ServiceOptions
from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.rollouts import peak_room
from neuron_constructs.serving.rollout import Approval, RolloutAlarms
from neuron_constructs.serving.rollout_alarms import (
    ENGINE_LATENCIES,
    engine_latency_alarms,
    execution_errors_alarm,
    fail_only_problem,
)
from neuron_constructs.serving.rollout_checks import RolloutTrafficPath, RolloutWarnings

if TYPE_CHECKING:
    from neuron_constructs.serving.services import NeuronService

__all__ = ["check_rollout_room", "set_up_rollout"]


def set_up_rollout(service: NeuronService, service_options: ServiceOptions) -> None:
    """After the ECS service exists: what its rollout adds to it (module docstring)."""
    if service.rollout.alarms is not None:
        fail_only = fail_only_problem(service.service, "deployment_alarms=")
        if fail_only is not None:
            raise rules.DEPLOYMENT_ALARM_BEHAVIOR.error(construct_path(service), fail_only)
    if service.rollout.native:
        service_connect = bool(service_options.get("service_connect_configuration"))
        service.node.add_validation(RolloutTrafficPath(service, service_connect))
        neuron_alarm = None
        if service.rollout.alarms is not None and service.capacity.monitored:
            neuron_alarm = execution_errors_alarm(
                service,
                "RolloutExecutionErrors",
                cluster_name=service.cluster.cluster.cluster_name,
                model_name=service.model_name,
                settings=service.rollout.alarms,
            )
            service.add_rollout_alarms(neuron_alarm)
        if service.rollout.alarms is not None:
            _add_engine_latency_alarms(service, service.rollout.alarms)
        if service.rollout.approval is not None:
            _pause_for_approval(service, service.rollout.approval)
        Aspects.of(service.service.node.find_child("Service")).add(
            RolloutWarnings(
                service,
                service_connect,
                without_neuron_alarm=service.rollout.alarms is not None and neuron_alarm is None,
            ),
            priority=AspectPriority.READONLY,
        )


def _pause_for_approval(service: NeuronService, approval: Approval) -> None:
    """ECS's pause hook on the service's deployments (:class:`~neuron_constructs.serving.rollout.Approval`); NEURON181
    when it goes on unanswered."""
    plan = approval.plan
    pause_deployment(
        service.service, stage=plan.stage, timeout_minutes=int(plan.timeout_minutes), on_timeout=plan.on_timeout
    )
    if plan.on_timeout == "CONTINUE":
        Validations.of(service).add_warning(
            rules.APPROVAL_CONTINUES.warning_id,
            rules.APPROVAL_CONTINUES.message(
                construct_path(service), f"Approval(on_timeout='CONTINUE') after {plan.timeout_minutes:g} minutes"
            ),
        )


def _add_engine_latency_alarms(service: NeuronService, settings: RolloutAlarms) -> None:
    """The alarms on what the model's users feel that ``settings`` states (NEURON178 without the sidecar)."""
    stated = [name for name in ENGINE_LATENCIES if getattr(settings, name) is not None]
    if not stated:
        return
    if service.engine_metrics_container is None:
        raise rules.SCALING_WITHOUT_ENGINE_METRIC.error(
            construct_path(service),
            f"RolloutAlarms({stated[0]}=...) watches a metric only the model's engine-metrics sidecar writes, and the "
            "model has none",
        )
    service.add_rollout_alarms(
        *engine_latency_alarms(
            service,
            "Rollout",
            cluster_name=service.cluster.cluster.cluster_name,
            model_name=service.model_name,
            settings=settings,
        )
    )


def check_rollout_room(service: NeuronService, name: str, tasks: int) -> None:
    """NEURON074: a native rollout of ``tasks`` tasks holds blue and green at once; the Auto Scaling capacity
    must launch enough instances for both (Managed Instances capacities launch what the tasks need)."""
    capacity, task = service.capacity, service.task_definition
    if not service.rollout.native or not isinstance(capacity, AutoScalingCapacity):
        return
    if not isinstance(task, ManualNeuronTaskDefinition):
        return
    whole_chips = len(task.cores) == len(task.devices) * task.instance_type.cores_per_chip(task.lnc)
    room = peak_room(
        service.rollout.plan,
        task.instance_type,
        desired=tasks,
        copies_per_instance=1,
        cpu=task.cpu or 0,
        memory_mib=task.memory_mib or 0,
        chips=len(task.devices) if whole_chips else None,
        cores=None if whole_chips else len(task.cores),
        lnc=task.lnc,
    )
    shortfall = room.shortfall(capacity.max_capacity, construct_path(capacity))
    if shortfall is None:
        return
    problem, _, _ = shortfall.partition("; raise")
    raise rules.ROLLOUT_ROOM.error(
        construct_path(service),
        f"{name}={tasks} rolled out {service.rollout}: {problem}",
        fix=f"raise max_capacity of {construct_path(capacity)} to {room.instances} or more, run fewer tasks, or "
        "roll it out rolling (Rollout.rolling())",
    )
