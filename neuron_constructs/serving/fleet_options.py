"""``ModelOptions``: what every copy of a fleet model shares, the options of :meth:`NeuronFleet.add_model` (and of
``SlicedNeuronService``) beside the container's."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager

from neuron_constructs.compute.model_sources import CompileCache, ModelArtifacts
from neuron_constructs.compute.options import ContainerOptions, ServiceOptions
from neuron_constructs.compute.startup import Startup
from neuron_constructs.knowledge.vllm_server import VllmServer
from neuron_constructs.monitoring.engine_metrics import EngineMetrics
from neuron_constructs.serving.precompile import Precompile
from neuron_constructs.serving.rollout import Rollout

__all__ = ["ModelOptions"]


class ModelOptions(ContainerOptions, total=False):
    """What every copy of a model shares: the options of ``add_container`` (:class:`ContainerOptions`, the same for
    every copy; ``container_name`` default ``model``), and these.

    Attributes
    ----------
    min_healthy_percent
        Deployment lower bound (copies deploy with a 100 % maximum); default 50, or 0 with one
        instance. ECS rounds it up, so it must let one task stop at every task count the model runs (NEURON040).
    task_role, execution_role
        Shared by every copy; default one new role each (the task role assumable only for
        this account's tasks).
    log_group
        An existing log group every copy logs to; default a new one whose events are kept ``log_retention``
        (default one month), encrypted with ``log_encryption_key`` if given, deleted with the stack unless
        ``log_removal_policy`` says otherwise (default ``RemovalPolicy.DESTROY``).
    vpc_subnets, security_groups
        For the ``AWS_VPC`` network mode.
    service_options
        Passed to every copy's ECS service (:class:`ServiceOptions`).
    compile_cache, model_artifacts, hf_token
        Warm starts for every copy
        (:mod:`~neuron_constructs.compute.model_sources`).
    image_size_gib
        The image's size as its registry reports it (compressed), for the root volume check of a warm pool that
        prefetches it (NEURON091); default unknown.
    neuron_sdk
        The image's Neuron SDK release (``"2.31.1"``), for an image whose tag does not name it (``-sdkX.Y.Z-``), as
        on ``add_neuron_container``: the driver checks read it (NEURON088, NEURON127, NEURON147); refused when the
        release table does not know it or the tag names another (NEURON146). Default: the tag's, else unknown.
    startup
        The start durations you measured (:class:`~neuron_constructs.compute.startup.Startup`), as on
        ``add_neuron_container``: every copy gets them (``neuron-ecs plan --startup``, NEURON167).
    server
        A vLLM server every copy runs (:class:`~neuron_constructs.knowledge.vllm_server.VllmServer`), as on
        ``add_neuron_container``: its tensor-parallel degree defaults to the NeuronCores one copy holds, and the
        served name is the model's name; ``command=`` is refused beside it (NEURON173).
    rollout
        How a new version reaches the copies (:class:`~neuron_constructs.serving.rollout.Rollout`); default
        ``Rollout.rolling()``: two waves, one half serving while the other is replaced. ECS shifts traffic per service,
        through the weights of one listener rule between that service's two target groups, and the copies are
        separate services behind one target group and rule (an Application Load Balancer spreads a request only
        over the target groups of the one rule it matches), so a model rolls out copy by copy, as stages of rolling
        deployments that CloudFormation runs one after another: ``Rollout.canary(percent=)`` deploys the first
        ``ceil(percent % of the copies)`` copies (at least one), then the rest; ``Rollout.linear(step_percent=)``
        deploys ``ceil(step_percent % of the copies)`` copies a stage. Every copy's deployment carries the model's
        deployment alarms (with ``alarms``; :class:`~neuron_constructs.serving.rollout.RolloutAlarms`), and ECS keeps
        a stage's deployment open for a bake time it computes from them, rolling the stage back on an alarm, before
        the next stage starts. Refused on a fleet model (NEURON078): blue/green and a smoke test (the copies register
        straight into the production target group, so there is no test traffic and no single switch), an interval or
        bake time other than the defaults (ECS, not a timer, ends a stage), one stage holding every copy, and a model
        of one copy.
    model_name
        What every copy reports as to neuron-monitor (``NEURON_PROCESS_TAG``) and the ``Model`` dimension of the
        per-model metrics; default the container's ``NEURON_PROCESS_TAG``, else the model's construct path made to fit
        the tag (:func:`~neuron_constructs.checks.inputs.derived_model_name`). A name or tag given is refused when
        neuron-monitor or CloudWatch cannot carry it (NEURON067); a derived one never is.
    precompile
        Compile the model's graphs on CPU before its copies update
        (:class:`~neuron_constructs.serving.precompile.Precompile`): one AWS Batch job running the first copy's Neuron
        container, ordered by a CloudFormation custom resource every copy's service depends on (a fleet deploys with
        rolling deployments, which have no lifecycle hooks; the job's ``timeout`` is held to 55 minutes, NEURON165);
        every copy then serves cache-hit-only. Needs ``compile_cache`` (NEURON164). Default none.
    engine_metrics
        Measure every copy's start in its task, as ``NeuronService(engine_metrics=)`` does
        (:mod:`~neuron_constructs.monitoring.engine_metrics`): each copy's task definition gets the sidecar and each
        copy's service its compile-at-start alarm (all on the model's metric). Default on where the image's engine
        publishes the metrics and the container maps a port; ``False`` turns it off.
    """

    min_healthy_percent: int | None
    task_role: iam.IRole | None
    execution_role: iam.IRole | None
    log_group: logs.ILogGroup | None
    log_retention: logs.RetentionDays
    log_removal_policy: RemovalPolicy
    log_encryption_key: kms.IKey | None
    vpc_subnets: ec2.SubnetSelection | None
    security_groups: Sequence[ec2.ISecurityGroup] | None
    service_options: ServiceOptions | None
    compile_cache: CompileCache | None
    model_artifacts: ModelArtifacts | None
    hf_token: secretsmanager.ISecret | None
    image_size_gib: float | None
    neuron_sdk: str | None
    startup: Startup | None
    server: VllmServer | None
    model_name: str | None
    rollout: Rollout | None
    precompile: Precompile | None
    engine_metrics: bool | EngineMetrics | None
