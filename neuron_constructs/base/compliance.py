"""cdk-nag AwsSolutions findings on resources this library creates, acknowledged with reasons.

Every finding the library cannot fix is acknowledged here, on the one CloudFormation resource that carries it
(the ``AWS::IAM::Policy``, the bucket, the task definition...), with the exact finding id cdk-nag reports (for the
rules with per-finding ids, IAM4 and IAM5, the ``[Policy::...]`` / ``[Resource::...]`` qualifier cdk-nag calls
``appliesTo``) and a reason specific to that resource. Acknowledgements are aws-cdk-lib's own (the
``aws:cdk:acknowledged-rules`` metadata ``Validations.acknowledge`` writes), so the library does not depend on
cdk-nag; cdk-nag 3 and aws-cdk-lib both read them, and both extend an acknowledgement to everything under the
construct it sits on: on a resource it covers that resource only.

A user's ``Resource::*`` grant carries the same finding id as the library's, so the library's own wildcard
statements live in policies of their own (the ECS agent's, an execution role's registry token): what a user adds
with ``role.add_to_policy`` lands in the role's ``DefaultPolicy``, which nothing here acknowledges for ``*``.
"""

from __future__ import annotations

import json

from aws_cdk import AspectPriority, CfnResource
from constructs import IConstruct

from neuron_constructs.base.aspects import once_before_synthesis
from neuron_constructs.base.l1_overrides import containers_as_synthesized
from neuron_constructs.base.tree import construct_path, kept, node_of, stack_of
from neuron_constructs.knowledge import rules

__all__ = [
    "acknowledge_access_log_bucket",
    "acknowledge_auto_scaling_capacity",
    "acknowledge_cache_bucket",
    "acknowledge_daemon_critical",
    "acknowledge_dataset_bucket",
    "acknowledge_default_security_group_restriction",
    "acknowledge_execution_role",
    "acknowledge_library_environment",
    "acknowledge_managed_instances_capacity",
    "acknowledge_monitoring_task",
    "acknowledge_precompile_job",
    "acknowledge_prefix_grant",
    "acknowledge_recovery_groups",
    "acknowledge_recovery_task",
    "acknowledge_rollout_describe",
    "acknowledge_smoke_test_function",
    "acknowledge_training_queue",
    "environment_names",
]

_PACK = "AwsSolutions::AwsSolutions"
_NIST_PACK = "NIST.800.53.R5::NIST.800.53.R5"
_ACKNOWLEDGED_RULES = "aws:cdk:acknowledged-rules"
"""``Validations.ACKNOWLEDGED_RULES_METADATA_KEY`` (a test keeps the two equal)."""


def _as_cdk_nag_renders(scope: IConstruct, value: str) -> str:
    """``value`` as cdk-nag names it in a finding: pseudo parameters as ``<AWS::Name>``, other intrinsics as compact
    JSON, joined."""
    resolved = stack_of(scope).resolve(value)
    parts = resolved["Fn::Join"][1] if isinstance(resolved, dict) and "Fn::Join" in resolved else [resolved]
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and "Ref" in part:
            out.append(f"<{part['Ref']}>")
        else:
            out.append(json.dumps(part, separators=(",", ":")))
    return "".join(out)


def _resource(construct: IConstruct) -> CfnResource:
    """``construct`` if it is a CloudFormation resource, else the resource it declares (its default child)."""
    if isinstance(construct, CfnResource):  # jsii hands every L1 to Python as its CfnResource class
        return construct
    child = node_of(construct).default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{construct_path(construct)} declares no one CloudFormation resource to acknowledge findings")
    return child


def _policy_of(role: IConstruct) -> CfnResource | None:
    """The ``AWS::IAM::Policy`` a role's grants land in (``DefaultPolicy`` of a role of this app, ``Policy`` of an
    imported one), if it has one."""
    for id in ("DefaultPolicy", "Policy"):
        policy = node_of(role).try_find_child(id)
        if policy is not None and node_of(policy).default_child is not None:
            return _resource(policy)
    return None


def _acknowledge(scope: IConstruct, findings: dict[str, str], pack: str = _PACK) -> None:
    """What ``Validations.of(resource).acknowledge(...)`` records on ``scope``'s CloudFormation resource, as one
    metadata entry (the findings of cdk-nag's ``pack``, AwsSolutions by default): the CDK collects every
    ``aws:cdk:acknowledged-rules`` entry of the tree, and capturing a stack trace per rule (as ``acknowledge`` does) is
    most of a small stack's synth time."""
    node_of(_resource(scope)).add_metadata(
        _ACKNOWLEDGED_RULES,
        {f"{pack}-{finding}": reason for finding, reason in findings.items()},
    )


def acknowledge_managed_instances_capacity(infrastructure_role: IConstruct, agent_policy: IConstruct) -> None:
    """The infrastructure role aws-cdk-lib's ``ManagedInstancesCapacityProvider`` creates, and the ECS agent policy
    of the capacity's instance role (``grant_ecs_agent``'s policy)."""
    infrastructure_policy = "arn:<AWS::Partition>:iam::aws:policy/AmazonECSInfrastructureRolePolicyForManagedInstances"
    _acknowledge(
        infrastructure_role,
        {
            f"IAM4[Policy::{infrastructure_policy}]": (
                "ECS Managed Instances require this AWS managed policy on the infrastructure role; ECS keeps it "
                "current as the service adds the EC2 actions it needs to launch and drain instances."
            ),
        },
    )
    _acknowledge(
        agent_policy,
        {
            "IAM5[Resource::*]": (
                "ECS agent on a Managed Instance: ecs:DiscoverPollEndpoint supports no resource-level permissions, "
                "and ecs:Poll, ecs:StartTelemetrySession and ecs:PutSystemLogEvents act on container instances that "
                "exist only after they register; the ecs:cluster condition holds those three to this cluster."
            ),
        },
    )


def acknowledge_auto_scaling_capacity(auto_scaling_group: IConstruct, agent_policy: IConstruct) -> None:
    """The ECS agent policy of a capacity's instance role (``grant_ecs_agent``'s policy), and ASG notifications."""
    _acknowledge(
        agent_policy,
        {
            "IAM5[Resource::*]": (
                "ECS agent on the instance: ecs:DiscoverPollEndpoint supports no resource-level permissions, and "
                "ecs:Poll and ecs:StartTelemetrySession act on container instances that exist only after they "
                "register; the ecs:cluster condition holds those two to this cluster."
            ),
        },
    )
    _acknowledge(
        auto_scaling_group,
        {
            "AS3": (
                "Scaling is driven by ECS managed scaling; activity is recorded in the Auto Scaling activity "
                "history and ECS service events, so no SNS notification topic is kept."
            ),
        },
    )


def acknowledge_execution_role(token_policy: IConstruct) -> None:
    """The policy of an execution role that holds only ecr:GetAuthorizationToken (``roles.ExecutionRole``): pulling
    images from ECR needs it."""
    _acknowledge(
        token_policy,
        {
            "IAM5[Resource::*]": (
                "Task execution role: ecr:GetAuthorizationToken supports no resource-level permissions; "
                "image pulls themselves are scoped to the task's repositories."
            ),
        },
    )


def acknowledge_warm_up(policy: IConstruct) -> None:
    """The warm-up policy of a warm-pooled capacity's instance role: the ECR registry token for its image pulls."""
    _acknowledge(
        policy,
        {
            "IAM5[Resource::*]": (
                "Warm-up of a warm-pooled instance: ecr:GetAuthorizationToken supports no resource-level permissions; "
                "the image pulls themselves are scoped to the repositories of the services on the capacity."
            ),
        },
    )


def acknowledge_warm_up_hook(policy: IConstruct, group_arn: str) -> None:
    """The policy that lets a warm-pooled instance complete its group's lifecycle action."""
    _acknowledge(
        policy,
        {
            f"IAM5[Resource::{group_arn}]": (
                "Warm-up of a warm-pooled instance: an Auto Scaling group's ARN holds a generated id that only the "
                "group's name stands for; the statement names the group."
            ),
        },
    )


def acknowledge_default_security_group_restriction(provider: IConstruct) -> None:
    """The Lambda function aws-cdk-lib runs to strip the rules of a VPC's default security group."""
    basic_execution = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    _acknowledge(
        node_of(provider).find_child("Role"),
        {
            f"IAM4[Policy::{basic_execution}]": (
                "aws-cdk-lib's custom resource that removes the default security group's rules writes its own "
                "logs; the AWS managed basic execution policy grants exactly CreateLogGroup, CreateLogStream and "
                "PutLogEvents."
            ),
        },
    )


def acknowledge_access_log_bucket(bucket: IConstruct) -> None:
    """The bucket a load balancer writes its access logs to."""
    _acknowledge(
        bucket,
        {
            "S1": (
                "This bucket receives the load balancer's access logs; logging the access to it would need a "
                "second bucket, which would need a third. Elastic Load Balancing is the only writer (bucket policy)."
            ),
        },
    )


def acknowledge_cache_bucket(bucket: IConstruct) -> None:
    """A bucket of compiled Neuron graphs."""
    _acknowledge(
        bucket,
        {
            "S1": (
                "The bucket holds compiled Neuron graphs that tasks re-create by compiling again; only task roles "
                "granted its one prefix read and write it; CloudTrail data events, where the account turns them on, "
                "record those object calls."
            ),
        },
    )


def acknowledge_dataset_bucket(bucket: IConstruct) -> None:
    """A bucket of training datasets and checkpoints, linked to an FSx for Lustre file system."""
    _acknowledge(
        bucket,
        {
            "S1": (
                "Training nodes never call S3: they read datasets and write checkpoints through FSx for Lustre, "
                "whose data repository association imports and exports the objects; CloudTrail data events, where "
                "the account turns them on, record the object calls, and the bucket is versioned, so no second "
                "bucket for access logs is kept."
            ),
        },
    )


def acknowledge_monitoring_task(task_definition: IConstruct) -> None:
    """The neuron-monitor daemon's task definition (a service's, or a Managed Instances daemon's): its environment,
    and its privileged container (NEURON115), which the library runs as the Neuron SDK's own manifest does."""
    _acknowledge(
        task_definition,
        {
            "ECS2": (
                "The neuron-monitor daemon's environment holds the cluster name and the source of the script that "
                "turns its reports into CloudWatch metric lines; neither is secret."
            ),
        },
    )
    _acknowledge_privileged_container(
        task_definition,
        "neuron-monitor reads every Neuron device of the instance through the Neuron driver, whose device count varies "
        "by instance type; the Neuron SDK's Kubernetes manifest runs it privileged and no published source runs it "
        "with less. It runs in the bridge network, its image is pinned by digest or warned about (NEURON068, "
        "NEURON116), and its task role grants nothing.",
    )


def acknowledge_warm_up_container(launch_template: IConstruct) -> None:
    """The launch template of a warm-pooled capacity whose user data runs the warm-up's AWS CLI container in the host
    network (NEURON115), as the library does on purpose: the reason, on the launch template, for the synth-time check,
    and its cfn-lint id in the template, for ``neuron-ecs lint`` and cfn-lint's rule pack."""
    _acknowledge_privileged_container(
        launch_template,
        "The warm-up calls ECR, S3 and Auto Scaling as the instance role, whose credentials only the instance metadata "
        "service gives, and the hop limit of 1 keeps it from a container in any other network; so its AWS CLI "
        "container runs in the host network, not privileged, with no capability, mounting only the models directory "
        "and only to copy the models. Its image is pinned by digest or warned about (NEURON068, NEURON116).",
    )


def _acknowledge_privileged_container(owner: IConstruct, reason: str) -> None:
    """NEURON115 acknowledged on ``owner`` with ``reason``: on the construct, for the synth-time check, and in the
    template too, for ``neuron-ecs lint`` and cfn-lint's rule pack, which read no construct tree (cfn-lint's
    convention: the rule's cfn-lint id in the resource's ``Metadata.cfn-lint.config.ignore_checks``)."""
    resource = owner if isinstance(owner, CfnResource) else node_of(owner).default_child
    if isinstance(resource, CfnResource):
        resource.add_metadata("cfn-lint", {"config": {"ignore_checks": [rules.PRIVILEGED_CONTAINER.cfn_lint_id]}})
    node_of(owner).add_metadata(_ACKNOWLEDGED_RULES, {rules.PRIVILEGED_CONTAINER.warning_id: reason})


def acknowledge_recovery_task(task_definition: IConstruct, role: IConstruct) -> None:
    """The node-problem-detector and recovery daemon's task definition (its role needs no acknowledgement: it may
    only mark the cluster's Neuron Auto Scaling groups' instances unhealthy, :func:`acknowledge_recovery_groups`)."""
    del role
    _acknowledge(
        task_definition,
        {
            "ECS2": "ENABLE_RECOVERY only switches the recovery container between marking instances unhealthy and "
            "reporting, and AWS_REGION names the Region of the Auto Scaling API; neither is secret.",
        },
    )


def acknowledge_recovery_groups(role: IConstruct, group_arns: list[str]) -> None:
    """The recovery role's ``autoscaling:SetInstanceHealth``, on each Neuron Auto Scaling group's ARN."""
    policy = _policy_of(role)
    assert policy is not None  # the role's statements are made before it is acknowledged
    _acknowledge(
        policy,
        {
            f"IAM5[Resource::{_as_cdk_nag_renders(role, arn)}]": (
                "An Auto Scaling group's ARN holds a generated id (autoScalingGroup:<id>:autoScalingGroupName/<name>) "
                "known only once the group exists; the name scopes SetInstanceHealth to this group."
            )
            for arn in group_arns
        },
    )


def acknowledge_daemon_critical(daemon: IConstruct) -> None:
    """``Critical`` on an ``AWS::ECS::Daemon``: aws-cdk-lib 2.275's ``CfnDaemon`` writes it, the schema of its built-in
    CloudFormation validation predates it."""
    node_of(daemon).add_metadata(
        _ACKNOWLEDGED_RULES,
        {
            "CloudFormation-Validate::F3002": (
                "Critical is a property of AWS::ECS::Daemon (ECS guide: Managed Daemons, automatic repair; "
                "aws-cdk-lib's CfnDaemon.critical); the schema bundled with the built-in validation predates it. It "
                "must be written: the default, true, would replace instances whenever this daemon stops."
            )
        },
    )


def acknowledge_prefix_grant(role: IConstruct, objects: str, what: str) -> None:
    """A task role's access to the objects under one S3 prefix (``objects``: the resource as cdk-nag names it), on
    the policy the grant landed in."""
    policy = _policy_of(role)
    if not objects or policy is None:
        return
    _acknowledge(
        policy,
        {
            f"IAM5[Resource::{objects}]": (
                f"The {what}: the objects under one prefix, whose keys the tasks choose at run time; listing is "
                "limited to the same prefix (s3:prefix condition)."
            ),
        },
    )


LIBRARY_ENVIRONMENT = frozenset(
    {
        "NEURON_PROCESS_TAG",
        "NEURON_RT_VISIBLE_CORES",
        "NEURON_LOGICAL_NC_CONFIG",
        "NEURON_COMPILE_CACHE_URL",
        "MODEL_DIR",
        "NEURON_LIBTORCH_REMOTE_CACHE",
        "VLLM_CACHE_ROOT",
        "VLLM_NEURON_BACKEND",
        "NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND",
        "VLLM_NEURON_DISABLE_WARMUP_COMPILE",
    }
)
"""The environment variables the library sets on Neuron containers (names, core lists, an S3 location, a path);
those of the driver check start with :data:`LIBRARY_ENVIRONMENT_PREFIX`, the engine-metrics collector's are
:data:`ENGINE_METRICS_ENVIRONMENT`. A test keeps these equal to the names the
compute package writes."""
_VLLM_NEURON_CACHE = frozenset({"NEURON_LIBTORCH_REMOTE_CACHE", "VLLM_CACHE_ROOT", "VLLM_NEURON_BACKEND"})
_CACHE_HIT_ONLY = frozenset({"NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND", "VLLM_NEURON_DISABLE_WARMUP_COMPILE"})
"""The cache-hit-only switches of a precompiled model (``serving.service_precompile``), explained where they are set."""
"""The variables of vLLM Neuron's compile cache (``compute.compile_cache_tiers``): their reason is given only where
they are set, so the reason on every other task definition stays as it was."""
LIBRARY_ENVIRONMENT_PREFIX = "NEURON_DRIVER_CHECK_"
"""The driver check's variables (an SDK release's driver range, its runtime, the container's name, AMI dates)."""
ENGINE_METRICS_ENVIRONMENT = frozenset(
    {
        "ENGINE_METRICS_PROGRAM",
        "ENGINE_METRICS_URL",
        "ENGINE_METRICS_MODEL",
        "ENGINE_METRICS_CLUSTER",
        "ENGINE_METRICS_PERIOD",
        "ENGINE_METRICS_TABLE",
        "ENGINE_METRICS_COMPILED_ABOVE",
        "ENGINE_METRICS_EXPECT_WARM",
    }
)
"""The engine-metrics collector's variables (its code, the engine's URL, the model's and cluster's names, its metric
table, a period and a threshold); a test keeps them equal to the names the sidecar writes."""


def library_s_own(name: str) -> bool:
    """Whether the environment variable ``name`` is one the library sets."""
    return (
        name in LIBRARY_ENVIRONMENT or name in ENGINE_METRICS_ENVIRONMENT or name.startswith(LIBRARY_ENVIRONMENT_PREFIX)
    )


def acknowledge_library_environment(task_definition: IConstruct) -> None:
    """cdk-nag's AwsSolutions-ECS2 (environment variables in a task definition) on ``task_definition``, once its tree
    is complete, only when every variable of every container is one the library sets (``LIBRARY_ENVIRONMENT``):
    a variable of the user's own (``environment=``, ``add_environment``) leaves the finding reported to the user, who
    knows whether it is secret. Read from the task definition's ``ContainerDefinitions`` in the aspect phase; called
    again, it checks once."""
    resource = _resource(task_definition)

    def check() -> bool:
        once_before_synthesis(
            task_definition, lambda: _acknowledge_if_the_library_s_alone(resource), priority=AspectPriority.MUTATING
        )
        return True

    kept(task_definition, "_neuron_constructs_environment_check", check)


def environment_names(task_definition: CfnResource) -> list[str]:
    """The names of every container's environment variables in ``task_definition`` (an ``AWS::ECS::TaskDefinition``),
    as it will synthesize."""
    return [
        str(variable.get("name"))
        for container in containers_as_synthesized(task_definition)
        for variable in _list(container.get("environment"))
        if isinstance(variable, dict)
    ]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _acknowledge_if_the_library_s_alone(resource: CfnResource) -> None:
    names = environment_names(resource)
    if not names or not all(library_s_own(name) for name in names):
        return
    _acknowledge(
        resource,
        {
            "ECS2": (
                "Every variable in this task definition's environment is one the library sets: NEURON_PROCESS_TAG "
                "(the model's name, under which neuron-monitor reports it), NEURON_RT_VISIBLE_CORES and "
                "NEURON_LOGICAL_NC_CONFIG (the cores it holds), NEURON_COMPILE_CACHE_URL (an S3 location), MODEL_DIR "
                "(a path) and the driver check's NEURON_DRIVER_CHECK_* (driver versions, dates, the container's "
                "name), the variables the Neuron runtime, frameworks and model servers read; none is secret. A "
                "variable of your own leaves this finding to you."
                + (
                    " ENGINE_METRICS_* are the engine-metrics sidecar's: its code, the engine's local URL, the "
                    "model's and cluster's names, its metric table, a period and a threshold."
                    if ENGINE_METRICS_ENVIRONMENT & set(names)
                    else ""
                )
                + (
                    " NEURON_LIBTORCH_REMOTE_CACHE and VLLM_CACHE_ROOT (paths) and VLLM_NEURON_BACKEND (a backend "
                    "name) are vLLM Neuron's compile cache."
                    if _VLLM_NEURON_CACHE & set(names)
                    else ""
                )
                + (
                    " NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND and VLLM_NEURON_DISABLE_WARMUP_COMPILE (1) make a "
                    "precompiled model's start fail on a compile cache miss."
                    if _CACHE_HIT_ONLY & set(names)
                    else ""
                )
            ),
        },
    )


def acknowledge_doctor_policy(policy: IConstruct) -> None:
    """The ``neuron-ecs doctor`` policy (:class:`~neuron_constructs.base.doctor_policy.DoctorPolicy`): its wildcards
    are the resources it reads that no narrower ARN names."""
    _acknowledge(
        policy,
        {
            "IAM5[Resource::*]": (
                "ec2:DescribeAvailabilityZones, DescribeInstanceTypeOfferings, DescribeSubnets, "
                "DescribeCapacityReservations, DescribeRouteTables and DescribeVpcEndpoints support no resource-level "
                "permissions (service authorization reference); every action of the policy is a read."
            ),
            "IAM5[Resource::arn:<AWS::Partition>:servicequotas:*:*:ec2/L-1945791B]": _QUOTA_REASON,
            "IAM5[Resource::arn:<AWS::Partition>:servicequotas:*:*:ec2/L-2C3B7624]": _QUOTA_REASON,
            "IAM5[Resource::arn:<AWS::Partition>:servicequotas:*:*:ec2/L-B5D1601B]": _QUOTA_REASON,
            "IAM5[Resource::arn:<AWS::Partition>:servicequotas:*:*:ec2/L-6B0D517C]": _QUOTA_REASON,
            "IAM5[Resource::arn:<AWS::Partition>:ssm:*::parameter/aws/service/*]": (
                "AWS's public parameters (the ECS Neuron AMIs) of the Region doctor checks; read only."
            ),
            "IAM5[Resource::arn:<AWS::Partition>:ssm:*:*:parameter/cdk-bootstrap/*]": (
                "The CDK bootstrap version parameter of any qualifier; read only."
            ),
            "IAM5[Resource::arn:<AWS::Partition>:ecr:*:*:repository/*]": (
                "The repositories the app's task definitions name, known only from the templates doctor reads; "
                "ecr:DescribeImages only."
            ),
            "IAM5[Resource::arn:<AWS::Partition>:iam::*:role/aws-service-role/*]": (
                "Service-linked roles live under this path; iam:GetRole only."
            ),
        },
    )


_QUOTA_REASON = (
    "The Neuron vCPU quota of the account and Region doctor checks, in any Region; servicequotas:GetServiceQuota only."
)


def acknowledge_training_queue(agent_policy: IConstruct, batch_cluster: str) -> None:
    """The ECS agent policy of a training queue's instance role (``grant_ecs_agent``'s policy), scoped to the
    ``batch_cluster`` ARN pattern."""
    _acknowledge(
        agent_policy,
        {
            "IAM5[Resource::*]": (
                "ECS agent on an AWS Batch instance: ecs:DiscoverPollEndpoint supports no resource-level permissions, "
                "and ecs:Poll and ecs:StartTelemetrySession act on container instances that exist only after they "
                "register; the ecs:cluster condition holds those two to the compute environment's cluster."
            ),
            f"IAM5[Resource::{_as_cdk_nag_renders(agent_policy, batch_cluster)}]": (
                "AWS Batch creates the compute environment's ECS cluster and names it AWSBatch-<compute environment "
                "name>-<uuid>; the uuid is known only once the cluster exists, so the agent's calls are scoped to "
                "this compute environment's clusters by name."
            ),
        },
    )


def acknowledge_rollout_describe(role: IConstruct) -> None:
    """A rollout's load balancer role, whose own policies (``Policies`` of the role resource) hold the Elastic Load
    Balancing Describe actions on ``*`` and the modifying ones on the rollout's resources; what is granted to it
    later lands in its ``DefaultPolicy``, not acknowledged."""
    _acknowledge(
        role,
        {
            "IAM5[Resource::*]": (
                "Rollout load balancer role: DescribeListeners, DescribeRules, DescribeTargetGroups and "
                "DescribeTargetHealth support no resource-level permissions; the actions that change the load "
                "balancer (register and deregister targets, modify the listener rules) are scoped to this "
                "rollout's target groups and rules in the role's MoveTraffic policy."
            ),
        },
    )


def acknowledge_smoke_test_function(
    function: IConstruct, interfaces_policy: IConstruct, interface_arns: dict[str, str]
) -> None:
    """A rollout's smoke test function: its network interface policy (AwsSolutions; ``interface_arns`` the
    ``network-interface``, ``subnet`` and ``security-group`` ARN patterns it grants on), and the NIST 800-53 rev 5
    findings on the function that do not apply to a lifecycle hook ECS invokes once per deployment."""
    ids = {
        "network-interface": "the network interfaces Lambda creates for the function, whose IDs exist only once it "
        "has created them",
        "subnet": "the subnets CreateNetworkInterface names, the function's own",
        "security-group": "the security groups CreateNetworkInterface names, the function's own",
    }
    _acknowledge(
        interfaces_policy,
        {
            "IAM5[Resource::*]": (
                "Smoke test function in a VPC: ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets support no "
                "resource-level permissions and no condition but ec2:Region (Service Authorization Reference, Amazon "
                "EC2), and Lambda's VPC access needs both; they are the only actions on *."
            ),
            **{
                f"IAM5[Resource::{_as_cdk_nag_renders(interfaces_policy, arn)}]": (
                    f"Smoke test function in a VPC: {ids[kind]}; every action on it is held to the function's VPC "
                    "by an ec2:Vpc condition, in this Region and account."
                )
                for kind, arn in interface_arns.items()
            },
        },
    )
    _acknowledge(
        function,
        {
            "LambdaConcurrency": (
                "ECS invokes the smoke test once per deployment at POST_TEST_TRAFFIC_SHIFT, through a role only ECS "
                "of this account assumes, and nothing else may invoke it; reserved concurrency would set account "
                "concurrency aside for an idle function, and Lambda reserves only what an account has above 100 "
                "unreserved, so in an account still at a new account's limit the function could not be deployed."
            ),
            "LambdaDLQ": (
                "ECS reads the hookStatus the smoke test returns, which only a synchronous invocation gives, and a "
                "failed invocation rolls the deployment back; a dead-letter queue receives only the events of "
                "asynchronous invocations, so it would never hold anything."
            ),
        },
        _NIST_PACK,
    )


def acknowledge_precompile_job(function: IConstruct, function_role: IConstruct) -> None:
    """A precompile job's function: ``batch:DescribeJobs`` on ``*`` in its role's own ``RunJob`` policy, and the NIST
    800-53 rev 5 findings that do not apply to a function ECS and CloudFormation call once per deployment."""
    _acknowledge(
        function,
        {
            "LambdaConcurrency": (
                "ECS invokes the precompile function at PRE_SCALE_UP of a deployment and CloudFormation once per "
                "stack update, EventBridge once per ended job of its own queue; reserved concurrency would set "
                "account concurrency aside for an idle function."
            ),
            "LambdaDLQ": (
                "ECS and CloudFormation read the answer of a synchronous invocation; EventBridge retries its "
                "asynchronous ones twice, and a lost one leaves the custom resource to time out, which fails the "
                "stack update: a dead-letter queue would add nothing to act on."
            ),
            "LambdaInsideVPC": (
                "The precompile function calls only the AWS Batch API and CloudFormation's presigned S3 URL; it "
                "reaches no resource inside the VPC."
            ),
        },
        _NIST_PACK,
    )
    _acknowledge(
        function_role,
        {
            "IAM5[Resource::*]": (
                "Precompile function: batch:DescribeJobs supports no resource-level permissions (Service Authorization "
                "Reference, AWS Batch); batch:SubmitJob, the action that runs anything, is held to this model's job "
                "queue and job definition revision in the same policy."
            ),
        },
    )


def acknowledge_rollout_alarm(alarm: IConstruct) -> None:
    """A deployment alarm of a native rollout: its action is ECS's rollback, not a notification."""
    _acknowledge(
        alarm,
        {
            "CloudWatchAlarmAction": (
                "A rollout alarm: ECS reads its state while a deployment runs and rolls the deployment back when it "
                "is in ALARM (the service's deploymentConfiguration.alarms); that rollback is its action. The "
                "model's Neuron errors notify through NeuronMonitoring's own alarms."
            ),
        },
        _NIST_PACK,
    )


def acknowledge_compile_cache_file_system(file_system: IConstruct) -> None:
    """An Amazon EFS file system of compiled Neuron graphs."""
    _acknowledge(
        file_system,
        {
            "EFSInBackupPlan": (
                "The file system holds compiled Neuron graphs that the compiler re-creates (a precompile job or a "
                "copy's first start); a backup would keep what costs a compile to make again."
            ),
        },
        _NIST_PACK,
    )
