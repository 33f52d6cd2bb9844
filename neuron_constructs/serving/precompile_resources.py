"""The AWS resources of a :class:`~neuron_constructs.serving.precompile.Precompile`: the AWS Batch job that compiles a
model on CPU, the function that runs it for a deployment, and what orders it before the service's new tasks.

:class:`PrecompileJob`, under the service (or fleet model) it compiles for, in that stack:

* ``SecurityGroup``: the job's, outbound HTTPS (the image registry, the model hub, CloudWatch Logs) and NFS to the
  compile cache, nothing inbound; the compile cache's mount targets admit NFS from it, a rule made from the job's side
  so that it lands in the job's stack when the file system is in another (``connections.allow_to_default_port``);
* ``ComputeEnvironment`` and ``Queue``: AWS Batch on Fargate (``FargateComputeEnvironment``) or a managed EC2 compute
  environment of CPU instance types with minimum 0 vCPUs (:meth:`Precompile.on_ec2
  <neuron_constructs.serving.precompile.Precompile.on_ec2>`; its instances' role, ``InstanceRole``, holds the ECS
  agent's calls to the cluster AWS Batch makes for it and the job's log writes, no AWS managed policy), in the
  capacity's subnets, and one job queue on it;
* ``JobDefinition``: a container job (``AWS::Batch::JobDefinition``, the L1, since aws-cdk-lib's L2 takes a container
  only as given at construction) whose image, command, environment and secrets are read from the service's Neuron
  container when the app is synthesized, so a change to the container is a new job definition revision; plus the CPU
  compile variables, the model's Amazon EFS access point mounted where the service mounts it (transit encryption,
  IAM authorization), ``timeout.attemptDurationSeconds`` = ``Precompile.timeout``, one attempt, Fargate's ``LATEST``
  platform with no public IP. Its execution role is the task definition's own (it pulls the same image and reads the
  same secrets); its job role (``JobRole``, ECS-trusted for this account's tasks) may mount and write the model's
  access point only, or read and write the model's S3 prefix only;
* ``Logs``: the job's log group;
* ``Function``: the program of :mod:`neuron_constructs.programs.precompile_hook` (``python3.14``, handler
  ``index.handler``, inline code), with the environment ``PRECOMPILE_JOB_QUEUE`` (the queue's ARN),
  ``PRECOMPILE_JOB_DEFINITION`` (the job definition's ARN with its revision), ``PRECOMPILE_MODEL`` (the model's
  construct path), ``PRECOMPILE_CACHE`` (the cache, described), ``PRECOMPILE_CALLBACK_DELAY_SECONDS`` and
  ``PRECOMPILE_JOB_TIMEOUT_SECONDS``. Its role (``FunctionRole``) may write its log group, call ``batch:SubmitJob``
  on this queue and this job definition (the ARN with its revision, which the function submits) and
  ``batch:DescribeJobs`` on ``*`` (Batch supports no resource-level permission for it); nothing else.

:meth:`PrecompileJob.hook`: the ``DeploymentLifecycleLambdaTarget`` at ``PRE_SCALE_UP`` with a role only ECS of this
account assumes, which may invoke this function only; :func:`time_out_hook` sets the hook's ``TimeoutConfiguration``
(``timeoutInMinutes`` = ``hook_timeout``, action ``ROLLBACK``), which aws-cdk-lib's L2 does not render.
:meth:`PrecompileJob.order_before`: ``Run``, a ``Custom::NeuronPrecompile`` custom resource served by the same
function (``ServiceTimeout`` 3,600 s) whose properties name the job queue and job definition, the EventBridge rule
``JobEnded`` sending this queue's "Batch Job State Change" events of ended jobs (``SUCCEEDED``, ``FAILED``) to the
function, and a dependency of each service on ``Run``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jsii
from aws_cdk import (
    ArnFormat,
    AspectPriority,
    CfnResource,
    CustomResource,
    Duration,
    IStableAnyProducer,
    IStableListProducer,
    Lazy,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from neuron_constructs.base import compliance, l1_overrides
from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.log_groups import DEFAULT_LOG_RETENTION, OPERATIONAL_REMOVAL, log_group
from neuron_constructs.base.tree import kept
from neuron_constructs.compute import compile_cache_tiers
from neuron_constructs.compute.container_instances import grant_ecs_agent
from neuron_constructs.compute.model_sources import CompileCache
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.knowledge import cpu_compile
from neuron_constructs.programs.carrying import program_source
from neuron_constructs.serving.precompile import Precompile
from neuron_constructs.serving.rollout_resources import RUNTIME

__all__ = [
    "CUSTOM_RESOURCE_QUEUE_ALLOWANCE_SECONDS",
    "HOOK_RUNTIME",
    "JOB_ENDED_STATUSES",
    "PrecompileJob",
    "hook_source",
    "time_out_hook",
]

HOOK_RUNTIME = RUNTIME
"""The smoke test's runtime, the newest Python runtime aws-cdk-lib knows (cdk-nag's AwsSolutions-L1): the hook program
is standard-library Python 3.11 and later."""
CUSTOM_RESOURCE_QUEUE_ALLOWANCE_SECONDS = 300
"""Of a custom resource's 3,600 seconds, what is kept for the job's time in its queue and the image pull: a job
``timeout`` may take the rest (3,300 s, 55 minutes; NEURON165)."""
JOB_ENDED_STATUSES = ("SUCCEEDED", "FAILED")
FUNCTION_TIMEOUT = Duration.seconds(60)
"""One SubmitJob or DescribeJobs call and, for the custom resource, one answer to CloudFormation's presigned URL."""


def hook_source() -> str:
    """The function's code: :mod:`neuron_constructs.programs.precompile_hook` without docstrings and comments."""
    return program_source("neuron_constructs.programs", "precompile_hook.py")


@jsii.implements(IStableAnyProducer)
class _Produce:
    """A value known once the app is synthesized: what ``value`` returns then."""

    def __init__(self, value: Callable[[], Any]) -> None:
        self._value = value

    def produce(self) -> Any:
        return self._value()


def _described(cache: CompileCache, directory: str) -> str:
    """The cache as the function's log lines name it."""
    if cache.file_system is not None:
        return f"Amazon EFS {cache.file_system.node.path}, access point {directory}"
    return cache.url or directory


class PrecompileJob(Construct):
    """The job that compiles ``container``'s model on CPU for ``target``, its queue and its function (module
    docstring). Made by ``NeuronService(precompile=)`` and ``NeuronFleet.add_model(precompile=)``. The job runs the
    container's command, without its first ``command_skipped`` words (the image's own entry point, which the driver
    start check's wrapper names there and the image runs by itself), under the script that stops the server once it
    answers ``/health`` (:func:`~neuron_constructs.knowledge.cpu_compile.job_command`): the server does not exit by
    itself after a CPU compile.

    Attributes: ``job_queue``, ``job_definition`` (the ``AWS::Batch::JobDefinition``), ``function``,
    ``security_group``, ``job_role``, ``log_group``, ``target``, ``precompile``, ``model`` (the construct path the
    function's log lines name)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        container: ecs.ContainerDefinition,
        cache: CompileCache,
        cache_model: str,
        precompile: Precompile,
        target: str,
        vpc: ec2.IVpc,
        subnets: ec2.SubnetSelection,
        model: str,
        command_skipped: int = 0,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        log_removal_policy: RemovalPolicy = OPERATIONAL_REMOVAL,
    ) -> None:
        super().__init__(scope, id)
        self.precompile = precompile
        self.target = target
        self.model = model
        self.container = container
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            allow_all_outbound=False,
            description="Neuron precompile job: out to the registry, the model hub and the compile cache",
        )
        self.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: the image registry, the model hub, CloudWatch Logs"
        )
        directory = cache.model_directory(cache_model) if cache.bucket is None else cache.model_prefix(cache_model)
        self.log_group = log_group(self, "Logs", retention=log_retention, removal_policy=log_removal_policy)
        self.job_role = task_role(self, "JobRole")
        execution_role = container.task_definition.obtain_execution_role()
        self.log_group.grant_write(execution_role)
        volumes: list[Any] = []
        mount_points: list[Any] = []
        if cache.file_system is not None:
            self.security_group.connections.allow_to_default_port(
                cache.file_system, "NFS from the precompile job to the compile cache"
            )
            access_point = compile_cache_tiers.model_access_point(
                cache.file_system, directory, container.task_definition
            )
            compile_cache_tiers.mount_through_access_point(self.job_role, cache.file_system, access_point)
            volumes.append(
                batch.CfnJobDefinition.VolumesProperty(
                    name="compile-cache",
                    efs_volume_configuration=batch.CfnJobDefinition.EfsVolumeConfigurationProperty(
                        file_system_id=cache.file_system.file_system_id,
                        transit_encryption="ENABLED",
                        authorization_config=batch.CfnJobDefinition.AuthorizationConfigProperty(
                            access_point_id=access_point.access_point_id, iam="ENABLED"
                        ),
                    ),
                )
            )
            mount_points.append(
                batch.CfnJobDefinition.MountPointsProperty(
                    container_path=compile_cache_tiers.REMOTE_CACHE_PATH, source_volume="compile-cache", read_only=False
                )
            )
        else:
            cache.grant(self.job_role, cache_model)
        compute_environment = self._compute_environment(vpc, subnets)
        self.job_queue = batch.JobQueue(
            self,
            "Queue",
            compute_environments=[batch.OrderedComputeEnvironment(compute_environment=compute_environment, order=1)],
        )
        stack = Stack.of(self)
        fargate = precompile.on_fargate
        self.job_definition = batch.CfnJobDefinition(
            self,
            "JobDefinition",
            type="container",
            platform_capabilities=["FARGATE" if precompile.on_fargate else "EC2"],
            propagate_tags=True,
            retry_strategy=batch.CfnJobDefinition.RetryStrategyProperty(attempts=1),
            timeout=batch.CfnJobDefinition.TimeoutProperty(attempt_duration_seconds=precompile.timeout_seconds),
            container_properties=batch.CfnJobDefinition.ContainerPropertiesProperty(
                image=container.image_name,
                command=Lazy.list(_ListProducer(lambda: self._job_command(command_skipped))),
                environment=Lazy.any(_Produce(self._environment)),
                secrets=Lazy.any(_Produce(self._secrets), omit_empty_array=True),
                resource_requirements=[
                    batch.CfnJobDefinition.ResourceRequirementProperty(type="VCPU", value=f"{precompile.vcpus:g}"),
                    batch.CfnJobDefinition.ResourceRequirementProperty(type="MEMORY", value=str(precompile.memory_mib)),
                ],
                execution_role_arn=execution_role.role_arn,
                job_role_arn=self.job_role.role_arn,
                log_configuration=batch.CfnJobDefinition.LogConfigurationProperty(
                    log_driver="awslogs",
                    options={
                        "awslogs-group": self.log_group.log_group_name,
                        "awslogs-region": stack.region,
                        "awslogs-stream-prefix": "precompile",
                    },
                ),
                volumes=volumes or None,
                mount_points=mount_points or None,
                fargate_platform_configuration=batch.CfnJobDefinition.FargatePlatformConfigurationProperty(
                    platform_version="LATEST"
                )
                if fargate
                else None,
                network_configuration=batch.CfnJobDefinition.NetworkConfigurationProperty(assign_public_ip="DISABLED")
                if fargate
                else None,
                ephemeral_storage=batch.CfnJobDefinition.EphemeralStorageProperty(
                    size_in_gib=precompile.ephemeral_storage_gib
                )
                if fargate
                else None,
            ),
        )
        self.job_definition_arn: str = self.job_definition.ref
        """The job definition's ARN with its revision (``Ref``)."""
        self.function = self._function(_described(cache, directory), log_retention, log_removal_policy)
        compliance.acknowledge_precompile_job(self.function, self._function_role)

    def _compute_environment(self, vpc: ec2.IVpc, subnets: ec2.SubnetSelection) -> batch.IComputeEnvironment:
        precompile = self.precompile
        # Room for two jobs at once (a deployment that starts while the last one's job still runs).
        most = max(1, math.ceil(precompile.vcpus)) * 2
        if precompile.on_fargate:
            return batch.FargateComputeEnvironment(
                self,
                "ComputeEnvironment",
                vpc=vpc,
                vpc_subnets=subnets,
                security_groups=[self.security_group],
                maxv_cpus=most,
            )
        # The instances' own role: the ECS agent's calls held to the cluster AWS Batch makes for this environment (as
        # a training queue's), and the job's logs (awslogs on EC2 sends with the instance's credentials); no AWS
        # managed policy.
        instance_role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"AWS Batch container instances of the precompile of {self.model}"[:1000],
        )
        self.log_group.grant_write(instance_role)
        environment = batch.ManagedEc2EcsComputeEnvironment(
            self,
            "ComputeEnvironment",
            instance_role=instance_role,
            vpc=vpc,
            vpc_subnets=subnets,
            security_groups=[self.security_group],
            instance_types=[ec2.InstanceType(name) for name in precompile.instance_types],
            use_optimal_instance_classes=False,
            minv_cpus=0,
            maxv_cpus=most,
        )
        stack = Stack.of(self)
        name = stack.split_arn(environment.compute_environment_arn, ArnFormat.SLASH_RESOURCE_NAME).resource_name
        batch_cluster = stack.format_arn(service="ecs", resource="cluster", resource_name=f"AWSBatch-{name}-*")
        compliance.acknowledge_training_queue(
            grant_ecs_agent(instance_role, batch_cluster, pattern=True), batch_cluster
        )
        return environment

    def _rendered(self, field: str) -> Any:
        """``field`` of the service's Neuron container as its task definition renders it as the job is made (rendered
        once for every field: each rendering is a round trip to the CDK's runtime per property)."""
        rendered = kept(self, "_neuron_constructs_container", self.container.render_container_definition)
        return getattr(rendered, field, None)

    def _job_command(self, skipped: int) -> list[str]:
        """The serving command (without its first ``skipped`` words) under the compile-then-stop script
        (:data:`~neuron_constructs.knowledge.cpu_compile.COMPILE_THEN_STOP`), on the port the server listens on."""
        command = [str(word) for word in (self._rendered("command") or [])[skipped:]]
        mapped = [m.container_port for m in self.container.port_mappings if isinstance(m.container_port, int)]
        return cpu_compile.job_command(command, cpu_compile.server_port(command, mapped))

    def _environment(self) -> list[dict[str, Any]]:
        """The container's environment without the cache-hit-only variables (a production copy's), with the CPU
        compile variables."""
        given = {pair.name: pair.value for pair in self._rendered("environment") or []}
        for name in cpu_compile.CACHE_HIT_ONLY:
            given.pop(name, None)
        given[cpu_compile.CPU_COMPILE_VARIABLE] = "1"
        given[cpu_compile.TARGET_VARIABLE] = self.target
        given[cpu_compile.PARALLEL_WORKERS_VARIABLE] = str(self.precompile.parallel_workers)
        return [{"name": name, "value": value} for name, value in sorted(given.items())]

    def _secrets(self) -> list[dict[str, Any]]:
        return [{"name": s.name, "valueFrom": s.value_from} for s in self._rendered("secrets") or []]

    def _function(
        self, cache: str, log_retention: logs.RetentionDays, log_removal_policy: RemovalPolicy
    ) -> lambda_.Function:
        precompile = self.precompile
        function_logs = log_group(self, "FunctionLogs", retention=log_retention, removal_policy=log_removal_policy)
        role = iam.Role(
            self,
            "FunctionRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="The precompile function: submits and watches its model's compile job",
            inline_policies={
                "RunJob": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            sid="SubmitJob",
                            actions=["batch:SubmitJob"],
                            resources=[self.job_queue.job_queue_arn, self.job_definition_arn],
                        ),
                        iam.PolicyStatement(sid="DescribeJobs", actions=["batch:DescribeJobs"], resources=["*"]),
                    ]
                )
            },
        )
        function_logs.grant_write(role)
        self._function_role = role
        function = lambda_.Function(
            self,
            "Function",
            runtime=HOOK_RUNTIME,
            handler="index.handler",
            code=lambda_.Code.from_inline(hook_source()),
            description=f"Precompile of {self.model}"[:256],
            role=role,
            timeout=FUNCTION_TIMEOUT,
            memory_size=128,
            log_group=function_logs,
            environment={
                "PRECOMPILE_JOB_QUEUE": self.job_queue.job_queue_arn,
                "PRECOMPILE_JOB_DEFINITION": self.job_definition_arn,
                "PRECOMPILE_MODEL": self.model,
                "PRECOMPILE_CACHE": cache[:1024],
                "PRECOMPILE_CALLBACK_DELAY_SECONDS": str(precompile.callback_delay_seconds),
                "PRECOMPILE_JOB_TIMEOUT_SECONDS": str(precompile.timeout_seconds),
            },
        )
        l1_overrides.keep_role_dependency_of_function(function)
        return function

    def hook(self) -> ecs.DeploymentLifecycleLambdaTarget:
        """The lifecycle hook ECS runs at ``PRE_SCALE_UP``: this function, invoked through a role only ECS of this
        account assumes, which may invoke it and nothing else."""
        invoke_role = iam.Role(
            self,
            "InvokeRole",
            assumed_by=iam.ServicePrincipal(
                "ecs.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}
            ),
            description="ECS invokes the precompile function before a deployment's new tasks start",
            inline_policies={
                "InvokePrecompile": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            sid="InvokePrecompile",
                            actions=["lambda:InvokeFunction"],
                            resources=[self.function.function_arn],
                        )
                    ]
                )
            },
        )
        return ecs.DeploymentLifecycleLambdaTarget(
            self.function,
            "Hook",
            lifecycle_stages=[ecs.DeploymentLifecycleStage.PRE_SCALE_UP],
            role=invoke_role,
        )

    def order_before(self, *services: ecs.BaseService, every_revision: bool = True) -> CustomResource:
        """Run the job as CloudFormation creates or updates this stack, before ``services`` update (module
        docstring); the custom resource. ``every_revision=False``: only as CloudFormation creates it (its properties
        then leave the job definition's revision out, so a new revision does not run it again): before a native
        rollout's service is created, whose later revisions the ``PRE_SCALE_UP`` hook compiles."""
        properties = {"JobQueue": self.job_queue.job_queue_arn, "Model": self.model}
        if every_revision:
            properties["JobDefinition"] = self.job_definition_arn
        run = CustomResource(
            self,
            "Run",
            service_token=self.function.function_arn,
            resource_type="Custom::NeuronPrecompile",
            service_timeout=Duration.seconds(cpu_compile.CUSTOM_RESOURCE_LIMIT_SECONDS),
            properties=properties,
        )
        events.Rule(
            self,
            "JobEnded",
            description=f"Precompile of {self.model}: its job ended"[:512],
            event_pattern=events.EventPattern(
                source=["aws.batch"],
                detail_type=["Batch Job State Change"],
                detail={"jobQueue": [self.job_queue.job_queue_arn], "status": list(JOB_ENDED_STATUSES)},
            ),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
        for service in services:
            service.node.add_dependency(run)
        return run


@jsii.implements(IStableListProducer)
class _ListProducer:
    """A list known once the app is synthesized."""

    def __init__(self, value: Callable[[], list[str]]) -> None:
        self._value = value

    def produce(self) -> list[str]:
        return self._value()


def time_out_hook(service: ecs.BaseService, function: lambda_.IFunction, minutes: int) -> None:
    """Give the service's lifecycle hook that invokes ``function`` ``TimeoutConfiguration``: ``timeoutInMinutes`` =
    ``minutes``, action ``ROLLBACK`` (ECS API reference, ``DeploymentLifecycleHookTimeoutConfiguration``), which
    aws-cdk-lib's ``DeploymentLifecycleLambdaTarget`` does not render. The hook is found by its target in the aspect
    phase, once every hook (a smoke test's, added later by ``attach_to_listener``) is in place."""
    resource = service.node.default_child
    assert isinstance(resource, CfnResource)

    def set_timeout() -> None:
        stack = Stack.of(resource)
        rendered = stack.resolve(resource._cfn_properties.get("deploymentConfiguration")) or {}
        hooks = rendered.get("lifecycleHooks") or []
        target = stack.resolve(function.function_arn)
        for index, hook in enumerate(hooks):
            if isinstance(hook, dict) and hook.get("hookTargetArn") == target:
                resource.add_property_override(
                    f"DeploymentConfiguration.LifecycleHooks.{index}.TimeoutConfiguration",
                    {"TimeoutInMinutes": minutes, "Action": "ROLLBACK"},
                )

    once_before_synthesis(service, set_timeout, priority=AspectPriority.MUTATING)
