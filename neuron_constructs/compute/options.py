"""Typed keyword options: what a container and a service take beyond what the constructs set themselves.

:class:`ContainerOptions` are the options of ``ecs.TaskDefinition.add_container`` other than the
image (which every method that adds a container takes as its own keyword argument);
:class:`ServiceOptions` are the options of an ECS service the library passes through unchanged.
Methods take them as ``**options: Unpack[ContainerOptions]``, so an IDE completes the names and
mypy checks the types; at run time the same annotations are checked
(:func:`neuron_constructs.base.arguments.checked`) and an unknown name is a ``TypeError`` that lists the
valid ones. Numbers CloudFormation keeps as integers are ``int`` here (aws-cdk-lib accepts floats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_ecs as ecs
from typing_extensions import TypedDict

__all__ = ["CONTAINER_WHOLE_NUMBERS", "ContainerOptions", "ServiceOptions"]


class ContainerOptions(TypedDict, total=False):
    """``ecs.ContainerDefinitionOptions`` without ``image``; every field optional, as there.

    ``logging`` defaults to awslogs into the task definition's log group.
    """

    command: Sequence[str]
    container_name: str
    cpu: int
    credential_specs: Sequence[ecs.CredentialSpec]
    disable_networking: bool
    dns_search_domains: Sequence[str]
    dns_servers: Sequence[str]
    docker_labels: Mapping[str, str]
    docker_security_options: Sequence[str]
    enable_restart_policy: bool
    entry_point: Sequence[str]
    environment: Mapping[str, str]
    environment_files: Sequence[ecs.EnvironmentFile]
    essential: bool
    extra_hosts: Mapping[str, str]
    gpu_count: int
    health_check: ecs.HealthCheck | dict[str, Any]
    hostname: str
    inference_accelerator_resources: Sequence[str]
    interactive: bool
    linux_parameters: ecs.LinuxParameters
    logging: ecs.LogDriver
    memory_limit_mib: int
    memory_reservation_mib: int
    port_mappings: Sequence[ecs.PortMapping | dict[str, Any]]
    privileged: bool
    pseudo_terminal: bool
    readonly_root_filesystem: bool
    restart_attempt_period: Duration
    restart_ignored_exit_codes: Sequence[int]
    secrets: Mapping[str, ecs.Secret]
    start_timeout: Duration
    stop_timeout: Duration
    system_controls: Sequence[ecs.SystemControl | dict[str, Any]]
    ulimits: Sequence[ecs.Ulimit | dict[str, Any]]
    user: str
    version_consistency: ecs.VersionConsistency
    working_directory: str


CONTAINER_WHOLE_NUMBERS = ("cpu", "memory_limit_mib", "memory_reservation_mib", "gpu_count")
"""Container options CloudFormation keeps as integers, and the Neuron rules compare: literals only."""


class ServiceOptions(TypedDict, total=False):
    """Options of the ECS service passed through as given (``ecs.Ec2ServiceProps`` / ``FargateServiceProps``).

    The library sets the cluster, task definition, capacity provider strategy, placement and networking
    itself; the deployment bounds are :class:`~neuron_constructs.serving.services.NeuronService` parameters.
    ``circuit_breaker`` defaults to enabled with rollback.
    """

    circuit_breaker: ecs.DeploymentCircuitBreaker
    cloud_map_options: ecs.CloudMapOptions
    deployment_alarms: ecs.DeploymentAlarmConfig
    enable_ecs_managed_tags: bool
    enable_execute_command: bool
    health_check_grace_period: Duration
    propagate_tags: ecs.PropagatedTagSource
    service_connect_configuration: ecs.ServiceConnectProps
    task_definition_revision: ecs.TaskDefinitionRevision
    volume_configurations: Sequence[ecs.ServiceManagedVolume]
