"""AWS CDK constructs for AWS Neuron (Inferentia, Trainium) workloads on Amazon ECS.

Constructs
----------
NeuronCluster
    An ECS cluster with Neuron capacity: ``add_managed_instances_capacity`` (returns a
    ManagedInstancesCapacity), ``add_ec2_capacity`` and ``add_non_neuron_capacity`` (return an
    AutoScalingCapacity); CapacityReservation for reserved capacity, WarmPool for a warm pool.
ManagedNeuronTaskDefinition, ManualNeuronTaskDefinition
    The two ways ECS hands a container Neuron devices: ``NeuronDevice = ALL`` on Managed Instances,
    or ``/dev/neuronN`` mapped for one instance type.
NeuronService, SlicedNeuronService
    A service on the capacity that fits its task definition; several models per instance on
    contiguous device slices. Both serve through ``attach_to_listener`` and scale on requests.
NeuronFleet, FleetModel
    Several models on one fleet of a Neuron type, each copy on its own contiguous devices
    (``SlicedNeuronService`` is the one-model case).
Rollout, SmokeTest, RolloutAlarms, Approval
    How a new model version reaches production (``rollout=``): rolling, or ECS's blue/green, canary and linear
    deployments sized to the chips, a real request before production traffic, rollback on the chips' own signals,
    a pause for a person's go-ahead.
Precompile
    A model's graphs compiled on CPU (an AWS Batch job running the service's own container) before a new revision's
    Neuron tasks start (``precompile=``); the copies then serve cache-hit-only.
NeuronLoadBalancer
    An internal, access-logged Application Load Balancer for a cluster's models; ``publish(prefix)`` names the
    platform in Parameter Store for other CDK apps.
PublishedPlatform
    What another CDK app published, imported in one call: its cluster, VPC and load balancer listener.
CompileCache, ModelArtifacts, Startup
    Warm starts: Neuron's compile cache on S3, a model copied from S3 before the server starts, and the durations of
    a start you measured (``neuron-ecs plan --startup`` shows them).
NeuronTrainingQueue, NeuronTrainingJob
    Distributed training on Trainium: an AWS Batch queue with EFA and multi-node parallel jobs.
NeuronMonitoring
    Neuron metrics in CloudWatch, a dashboard, alarms and hardware-problem recovery on every Neuron
    instance of a cluster.
DoctorPolicy
    The least-privilege managed policy ``neuron-ecs doctor`` runs with: read-only, every call it makes and no other.
VllmServer, VllmLora
    vLLM's OpenAI server as typed options (``add_neuron_container(server=...)``): the library writes its command, port
    and health check, with the tensor-parallel degree checked against the NeuronCores the container holds.
EngineMetrics
    How a model's start is measured in its task (``NeuronService(engine_metrics=)``): the engine's own start,
    compile and load metrics and the time to healthy in CloudWatch, and an alarm when a warm start compiled.

Knowledge (no AWS CDK needed)
-----------------------------
NeuronInstanceType (the catalog), RULES and Rule (every rule, with its id, AWS sentence and fix),
NeuronConfigurationError (what a broken rule raises), NeuronImage (a container image with its Neuron SDK
release and source; every image the library and the examples run is a constant of
``neuron_constructs.knowledge.container_images``).

Typed options: ContainerOptions, ServiceOptions, ModelOptions. The template checks at synth:
``neuron_constructs.base.synth_checks.enable_template_checks``; on any template: ``neuron-ecs lint``.

The catalog, the rules and the error type load without the AWS CDK; the constructs load on
first use, so tooling that needs only the catalog never starts the CDK's JavaScript runtime
(``dir()`` and ``help()`` still list every name).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.container_images import NeuronImage
from neuron_constructs.knowledge.errors import NeuronConfigurationError
from neuron_constructs.knowledge.rules import RULES, Rule
from neuron_constructs.knowledge.vllm_server import VllmLora, VllmServer

if TYPE_CHECKING:
    from neuron_constructs.base.doctor_policy import DoctorPolicy
    from neuron_constructs.base.synth_checks import enable_template_checks
    from neuron_constructs.compute.ami_rollout import AmiRollout
    from neuron_constructs.compute.auto_scaling import AutoScalingCapacity
    from neuron_constructs.compute.cluster import NeuronCluster
    from neuron_constructs.compute.managed_instances import ManagedInstancesCapacity
    from neuron_constructs.compute.model_sources import CompileCache, ModelArtifacts
    from neuron_constructs.compute.options import ContainerOptions, ServiceOptions
    from neuron_constructs.compute.reservations import CapacityReservation
    from neuron_constructs.compute.startup import Startup
    from neuron_constructs.compute.task_definitions.managed import ManagedNeuronTaskDefinition
    from neuron_constructs.compute.task_definitions.manual import ManualNeuronTaskDefinition
    from neuron_constructs.compute.task_definitions.shared import NeuronTaskDefinition
    from neuron_constructs.compute.warm_pool import WarmPool
    from neuron_constructs.knowledge.ami import NeuronAmi
    from neuron_constructs.monitoring.engine_metrics import EngineMetrics
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring
    from neuron_constructs.serving.fleet import NeuronFleet
    from neuron_constructs.serving.fleet_model import FleetModel
    from neuron_constructs.serving.fleet_options import ModelOptions
    from neuron_constructs.serving.load_balancer import NeuronLoadBalancer
    from neuron_constructs.serving.precompile import Precompile
    from neuron_constructs.serving.published_platform import PublishedPlatform
    from neuron_constructs.serving.rollout import Approval, Rollout, RolloutAlarms, SmokeTest
    from neuron_constructs.serving.services import NeuronService
    from neuron_constructs.serving.sliced_service import SlicedNeuronService
    from neuron_constructs.training.jobs import NeuronTrainingJob
    from neuron_constructs.training.queue import NeuronTrainingQueue
    from neuron_constructs.training.storage import LustreStorage

__all__ = [
    "RULES",
    "AmiRollout",
    "Approval",
    "AutoScalingCapacity",
    "CapacityReservation",
    "CompileCache",
    "ContainerOptions",
    "DoctorPolicy",
    "EngineMetrics",
    "FleetModel",
    "LustreStorage",
    "ManagedInstancesCapacity",
    "ManagedNeuronTaskDefinition",
    "ManualNeuronTaskDefinition",
    "ModelArtifacts",
    "ModelOptions",
    "NeuronAmi",
    "NeuronCluster",
    "NeuronConfigurationError",
    "NeuronFleet",
    "NeuronImage",
    "NeuronInstanceType",
    "NeuronLoadBalancer",
    "NeuronMonitoring",
    "NeuronService",
    "NeuronTaskDefinition",
    "NeuronTrainingJob",
    "NeuronTrainingQueue",
    "Precompile",
    "PublishedPlatform",
    "Rollout",
    "RolloutAlarms",
    "Rule",
    "ServiceOptions",
    "SlicedNeuronService",
    "SmokeTest",
    "Startup",
    "VllmLora",
    "VllmServer",
    "WarmPool",
    "enable_template_checks",
]

_LAZY = {
    "AmiRollout": "neuron_constructs.compute.ami_rollout",
    "AutoScalingCapacity": "neuron_constructs.compute.auto_scaling",
    "CapacityReservation": "neuron_constructs.compute.reservations",
    "WarmPool": "neuron_constructs.compute.warm_pool",
    "CompileCache": "neuron_constructs.compute.model_sources",
    "ContainerOptions": "neuron_constructs.compute.options",
    "DoctorPolicy": "neuron_constructs.base.doctor_policy",
    "EngineMetrics": "neuron_constructs.monitoring.engine_metrics",
    "FleetModel": "neuron_constructs.serving.fleet_model",
    "LustreStorage": "neuron_constructs.training.storage",
    "ManagedInstancesCapacity": "neuron_constructs.compute.managed_instances",
    "ManagedNeuronTaskDefinition": "neuron_constructs.compute.task_definitions.managed",
    "ManualNeuronTaskDefinition": "neuron_constructs.compute.task_definitions.manual",
    "ModelArtifacts": "neuron_constructs.compute.model_sources",
    "ModelOptions": "neuron_constructs.serving.fleet_options",
    "NeuronAmi": "neuron_constructs.knowledge.ami",
    "NeuronCluster": "neuron_constructs.compute.cluster",
    "NeuronFleet": "neuron_constructs.serving.fleet",
    "NeuronLoadBalancer": "neuron_constructs.serving.load_balancer",
    "NeuronMonitoring": "neuron_constructs.monitoring.monitoring",
    "NeuronService": "neuron_constructs.serving.services",
    "NeuronTaskDefinition": "neuron_constructs.compute.task_definitions.shared",
    "NeuronTrainingJob": "neuron_constructs.training.jobs",
    "NeuronTrainingQueue": "neuron_constructs.training.queue",
    "Precompile": "neuron_constructs.serving.precompile",
    "PublishedPlatform": "neuron_constructs.serving.published_platform",
    "Rollout": "neuron_constructs.serving.rollout",
    "RolloutAlarms": "neuron_constructs.serving.rollout",
    "ServiceOptions": "neuron_constructs.compute.options",
    "SlicedNeuronService": "neuron_constructs.serving.sliced_service",
    "SmokeTest": "neuron_constructs.serving.rollout",
    "Approval": "neuron_constructs.serving.rollout",
    "Startup": "neuron_constructs.compute.startup",
    "enable_template_checks": "neuron_constructs.base.synth_checks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'neuron_constructs' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name, loaded or not (so ``dir()``, ``help()`` and completion see the constructs)."""
    modules = {name for name, value in globals().items() if isinstance(value, ModuleType) and not name.startswith("_")}
    return sorted({*__all__, *modules})
